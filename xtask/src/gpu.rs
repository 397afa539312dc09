//! `cargo xtask gpu [--out DIR]`: prepares a run of the conformance suite and the native-vs-lowered
//! benchmark on the GPU machine (the `device` tool), and prints the command to give it.
//!
//! The GPU machine has an NVIDIA driver but no Rust toolchain, no `glslangValidator`, no `spirv-val`
//! and no Vulkan loader. So this task, here:
//!
//! 1. builds the `conformance` test binary in release (`cargo test --release --no-run`);
//! 2. copies it, `glslangValidator` and `spirv-val` (both only need libstdc++) into `DIR/bin`
//!    (default `.gpu/` in the workspace root, which must be git-ignored: it is added to
//!    `.git/info/exclude`), with debug info stripped to stay under the tool's 64 MiB;
//! 3. downloads the Vulkan loader and glvnd packages into `.gl/` (the device README's recipe; the
//!    NVIDIA Vulkan driver lives in its GLX library, which needs glvnd) when missing;
//! 4. writes `DIR/run.sh`, which on the GPU machine unpacks the loader, finds the NVIDIA ICD and runs
//!    `conformance --exact child_suite --include-ignored` with `SPV_CONFORMANCE_CHILD=1 SPV_CONFORMANCE_BENCH=1
//!    SPV_CONFORMANCE_KNOWN_SIZE=1` (the whole suite natively and lowered for `vulkan1.1` and
//!    `naga`, each with the subgroup size unknown and known (32), checked against the host model
//!    and against each other, then the timings), writing reports into `$OUT`;
//! 5. prints the `run` call to make: command `sh .gpu/run.sh`, carry `.gpu` and `.gl`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// The script the GPU machine runs (from the repository root).
const RUN_SH: &str = r#"#!/bin/sh
# Written by `cargo xtask gpu`; runs on the GPU machine from the repository root.
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
export PATH="$PWD/.gpu/bin:$PATH"
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
nvidia-smi -L
OUTDIR="${OUT:-/tmp/out}"
mkdir -p "$OUTDIR"
SPV_CONFORMANCE_CHILD=1 SPV_CONFORMANCE_BENCH=1 SPV_CONFORMANCE_KNOWN_SIZE=1 SPV_CONFORMANCE_OUT="$OUTDIR" \
  .gpu/bin/conformance --exact child_suite --include-ignored --nocapture --test-threads 1 "$@" >"$OUTDIR/log.txt" 2>&1
rc=$?
grep -E '^(device|subgroup|extensions)|runs passed|note:|^FAIL|^BENCH|^\||suite time|test result' "$OUTDIR/log.txt" | cut -c1-400
exit $rc
"#;

/// Runs the steps above.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let root = crate::workspace_root();
    let mut out = root.join(".gpu");
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--out" => out = PathBuf::from(it.next().context("--out needs a folder")?),
            other => bail!("unknown argument `{other}` (usage: cargo xtask gpu [--out DIR])"),
        }
    }
    let exe = build_test_binary(&root)?;
    let bin = out.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    copy_stripped(&exe, &bin.join("conformance"))?;
    for tool in ["glslangValidator", "spirv-val"] {
        let path = which(tool)
            .with_context(|| format!("`{tool}` is not installed (cargo xtask install-deps)"))?;
        copy_stripped(&path, &bin.join(tool))?;
    }
    std::fs::write(out.join("run.sh"), RUN_SH)?;
    // The repository that travels is the folder holding `out` (the workspace root by default).
    let repo = out.parent().map_or_else(|| root.clone(), Path::to_path_buf);
    exclude(&repo, &out);
    let gl = repo.join(".gl");
    if !gl.join("done").exists() {
        fetch_loader(&repo)?;
    }
    let size: u64 = walk_size(&out) + walk_size(&gl);
    eprintln!(
        "prepared {} and {} ({:.1} MiB together)",
        out.display(),
        gl.display(),
        size as f64 / 1048576.0
    );
    eprintln!("now call the device tool's `run` with:");
    eprintln!("  command: sh .gpu/run.sh");
    eprintln!("  carry:   [\".gpu\", \".gl\"]");
    eprintln!("  kind:    nvidia-h100-x1 (or nvidia-h200), timeout_s: 600");
    eprintln!("reports come back as conformance-32.txt, bench.md and log.txt under $OUT");
    Ok(())
}

fn build_test_binary(root: &Path) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let o = Command::new(cargo)
        .current_dir(root)
        .args([
            "test",
            "--release",
            "-p",
            "spv-subgroup-tests",
            "--test",
            "conformance",
            "--no-run",
        ])
        .output()
        .context("running cargo")?;
    let text = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() {
        bail!("building the conformance tests failed:\n{text}");
    }
    // "  Executable conformance.rs (target/release/deps/conformance-0123abcd)"
    let path = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Executable "))
        .filter_map(|l| l.rsplit_once('(').map(|(_, p)| p.trim_end_matches(')')))
        .find(|p| p.contains("conformance-"))
        .context("cargo did not name the conformance test executable")?;
    let p = PathBuf::from(path);
    Ok(if p.is_absolute() { p } else { root.join(p) })
}

fn which(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn copy_stripped(from: &Path, to: &Path) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    // Debug info only makes the carried files larger; a missing `strip` just leaves them.
    let _ = Command::new("strip").arg("--strip-debug").arg(to).status();
    Ok(())
}

/// Adds the folder to `.git/info/exclude` so it never gets committed.
fn exclude(root: &Path, dir: &Path) {
    let Ok(rel) = dir.strip_prefix(root) else {
        return;
    };
    let line = format!("/{}/", rel.display());
    let info = root.join(".git/info");
    let file = info.join("exclude");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    if !text.lines().any(|l| l == line) && std::fs::create_dir_all(&info).is_ok() {
        let _ = std::fs::write(&file, format!("{text}{line}\n"));
    }
}

/// The device README's recipe: the x86-64 Vulkan loader (and GL) packages, unpacked there.
fn fetch_loader(root: &Path) -> anyhow::Result<()> {
    let gl = root.join(".gl");
    std::fs::create_dir_all(&gl)?;
    std::fs::create_dir_all("/tmp/amd64/partial")?;
    let o = [
        "-oAPT::Architecture=amd64",
        "-oAPT::Architectures=amd64",
        "-oDir::State::Lists=/tmp/amd64",
    ];
    let ok = Command::new("apt-get")
        .args(o)
        .arg("update")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        bail!("apt-get update failed: cannot fetch the Vulkan loader for the GPU machine");
    }
    let ok = Command::new("apt-get")
        .current_dir(&gl)
        .args(o)
        .args([
            "download",
            "libvulkan1",
            "libegl1",
            "libglvnd0",
            "libopengl0",
            "libgl1",
            "libglx0",
            "libgles2",
        ])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        bail!("apt-get download of the loader packages failed");
    }
    std::fs::write(gl.join("done"), "")?;
    Ok(())
}

fn walk_size(dir: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                walk_size(&p)
            } else {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            }
        })
        .sum()
}
