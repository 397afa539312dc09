//! `cargo xtask gpu [--out DIR]`: prepares a run of the conformance suite and the native-vs-lowered
//! benchmark on the GPU machine (the `device` tool), and prints the command to give it.
//!
//! The GPU machine has an NVIDIA driver but no Rust toolchain, no `glslangValidator`, no `spirv-val`
//! and no Vulkan loader. So this task, here:
//!
//! 1. builds the `conformance`, `lower_exec` and `lower_fragment_exec` test binaries in release
//!    (`cargo test --release --no-run`);
//! 2. copies them, `glslangValidator`, `spirv-val` and `spirv-as` (which only need libstdc++) into `DIR/bin`
//!    (default `.gpu/` in the workspace root, which must be git-ignored: it is added to
//!    `.git/info/exclude`), with debug info stripped to stay under the tool's 64 MiB;
//! 3. downloads the Vulkan loader and glvnd packages into `.gl/` (the device README's recipe; the
//!    NVIDIA Vulkan driver lives in its GLX library, which needs glvnd) when missing;
//! 4. writes `DIR/run.sh`, which on the GPU machine unpacks the loader, finds the NVIDIA ICD and runs
//!    `conformance --exact child_suite --include-ignored` with `SPV_CONFORMANCE_CHILD=1 SPV_CONFORMANCE_BENCH=1
//!    SPV_CONFORMANCE_KNOWN_SIZE=1` (the whole suite natively and lowered for `vulkan1.1` and
//!    `naga`, each with the subgroup size unknown and known (32), and emulated at 8 and 16, checked
//!    against the host model, against each other and (emulated) against the simulator's original
//!    at 8 and 16, then the timings, emulated ones included), writing reports into `$OUT`, then `lower_exec`'s
//!    `child` on the GPU (every `exec` fixture and the quad votes, natively where the driver has
//!    the ops, against each preset's lowering; `SPV_SUBGROUP_ROOT` points the binary at the
//!    carried checkout's fixtures), then `lower_fragment_exec`'s `child_suite` (the fragment
//!    shaders drawn natively and lowered, against the host model); `SPV_GPU_RUN=conformance`,
//!    `lower_exec` or `lower_fragment_exec` runs one of them;
//!    `SPV_GPU_RUN=layer` (also part of `all`) runs the Vulkan layer's test application
//!    (`crates/spv-subgroup-layer/tests/app.rs`, built with `cargo test --release -p
//!    spv-subgroup-layer --no-run`, carried as `bin/layer_app`) through the release layer,
//!    installed in `DIR/layer` (`lib/` and `share/vulkan/explicit_layer.d/`, as `cargo xtask
//!    install` lays it out), on the NVIDIA device at its subgroup size 32: its
//!    `device_through_layer` runs the application once as the driver has it (the driver has the
//!    extensions natively: the layer must emulate and lower nothing) and once with
//!    `SPV_SUBGROUP_LAYER_FORCE=1` (everything lowered by the layer), both checked against the
//!    host model, and prints a `layer run:` line per mode (report `layer.txt`);
//!    `SPV_GPU_RUN=layer-bench` (not part of `all`) runs `xtask bench layer` there (this program,
//!    carried as `bin/xtask`, which compiles the conformance shaders with the carried
//!    `glslangValidator` and generates the big module there) through the installed layer, once
//!    as the driver has it and once with `--force` (tables `layer-bench.md` and
//!    `layer-bench--force.md`);
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
rc=0
# SPV_GPU_RUN: `all` (default), `conformance`, `lower_exec`, `lower_fragment_exec`, `layer` or `layer-bench`.
case "${SPV_GPU_RUN:-all}" in all|conformance)
SPV_CONFORMANCE_CHILD=1 SPV_CONFORMANCE_BENCH=1 SPV_CONFORMANCE_KNOWN_SIZE=1 SPV_CONFORMANCE_OUT="$OUTDIR" \
  .gpu/bin/conformance --exact child_suite --include-ignored --nocapture --test-threads 1 "$@" >"$OUTDIR/log.txt" 2>&1
rc=$?
grep -E '^(device|subgroup|extensions)|runs passed|note:|^FAIL|^BENCH|^\||suite time|test result' "$OUTDIR/log.txt" | cut -c1-400
esac
case "${SPV_GPU_RUN:-all}" in all|lower_exec)
LOWER_EXEC_CHILD=1 SPV_SUBGROUP_VK_DEVICE=NVIDIA SPV_SUBGROUP_ROOT="$PWD" \
  .gpu/bin/lower_exec --exact child --include-ignored --nocapture --test-threads 1 >"$OUTDIR/lower_exec.txt" 2>&1
rc2=$?
grep -E '^(device|subgroup|features)|reference|not run|failures|differ|words equal|test result' "$OUTDIR/lower_exec.txt" | cut -c1-400
[ $rc -eq 0 ] && rc=$rc2
esac
case "${SPV_GPU_RUN:-all}" in all|lower_fragment_exec)
SPV_LAVAPIPE_CHILD=1 SPV_SUBGROUP_VK_DEVICE=NVIDIA SPV_SUBGROUP_ROOT="$PWD" \
  .gpu/bin/lower_fragment_exec --exact child_suite --include-ignored --nocapture --test-threads 1 >"$OUTDIR/lower_fragment_exec.txt" 2>&1
rc3=$?
grep -E '^(device|subgroup)|lowered|unchanged|match the model|failures|differ|test result' "$OUTDIR/lower_fragment_exec.txt" | cut -c1-400
[ $rc -eq 0 ] && rc=$rc3
esac
case "${SPV_GPU_RUN:-all}" in all|layer)
SPV_SUBGROUP_ROOT="$PWD" LAYER_APP_DEVICE=NVIDIA LAYER_APP_NV_ONLY=1 LAYER_APP_EXPECT_SIZE=32 \
  LAYER_APP_EXPECT_NATIVE=1 LAYER_APP_LAYER_PATH="$PWD/.gpu/layer/share/vulkan/explicit_layer.d" \
  .gpu/bin/layer_app --exact device_through_layer --include-ignored --nocapture --test-threads 1 >"$OUTDIR/layer.txt" 2>&1
rc4=$?
grep -E '^layer run:|^FAIL|panicked|test result' "$OUTDIR/layer.txt" | cut -c1-400
[ $rc -eq 0 ] && rc=$rc4
esac
# Not part of `all`: the layer's cost (cargo xtask bench layer), as the driver has it and forced.
case "${SPV_GPU_RUN:-all}" in layer-bench)
for mode in "" --force; do
  .gpu/bin/xtask bench layer --device NVIDIA --runs 5 --big-runs 3 $mode --work /tmp/layer-bench \
    --layer-path "$PWD/.gpu/layer/share/vulkan/explicit_layer.d" --table "$OUTDIR/layer-bench$mode.md" \
    >"$OUTDIR/layer-bench$mode.txt" 2>&1
  rc5=$?
  if [ $rc5 -eq 0 ]; then cat "$OUTDIR/layer-bench$mode.md"; else tail -30 "$OUTDIR/layer-bench$mode.txt" | cut -c1-600; fi
  [ $rc -eq 0 ] && rc=$rc5
done
esac
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
    let bin = out.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("creating {}", bin.display()))?;
    for (harness, exe) in build_test_binaries(&root, "spv-subgroup-tests", &HARNESSES)? {
        copy_stripped(&exe, &bin.join(harness))?;
    }
    for (_, exe) in build_test_binaries(&root, "spv-subgroup-layer", &["app"])? {
        copy_stripped(&exe, &bin.join("layer_app"))?;
    }
    install_layer(&root, &out.join("layer"))?;
    // `SPV_GPU_RUN=layer-bench`: this program runs `bench layer` there.
    let xtask = std::env::current_exe().context("finding this program")?;
    copy_stripped(&xtask, &bin.join("xtask"))?;
    for tool in ["glslangValidator", "spirv-val", "spirv-as"] {
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
    eprintln!(
        "reports come back as conformance-32.txt, bench.md, log.txt, lower_exec.txt, lower_fragment_exec.txt and layer.txt under $OUT \
         (SPV_GPU_RUN=layer-bench sh .gpu/run.sh: layer-bench.md and layer-bench--force.md)"
    );
    Ok(())
}

/// The harnesses the GPU machine runs.
const HARNESSES: [&str; 3] = ["conformance", "lower_exec", "lower_fragment_exec"];

/// Builds the release layer library and installs it with its manifest under `prefix` (the
/// layout of `cargo xtask install`: `lib/` and `share/vulkan/explicit_layer.d/`, the manifest
/// naming the library by its relative path).
fn install_layer(root: &Path, prefix: &Path) -> anyhow::Result<()> {
    use xtask::install::layer_layout as layout;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let o = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--release", "-p", "spv-subgroup-layer", "--lib"])
        .output()
        .context("running cargo")?;
    if !o.status.success() {
        bail!(
            "building the layer failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let lib_dir = prefix.join(layout::LIBRARY_DIR);
    let manifest_dir = prefix.join(layout::MANIFEST_DIR);
    for dir in [&lib_dir, &manifest_dir] {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    copy_stripped(
        &target.join("release").join(layout::LIBRARY_FILE),
        &lib_dir.join(layout::LIBRARY_FILE),
    )?;
    std::fs::write(
        manifest_dir.join(layout::MANIFEST_FILE),
        layout::manifest_json(layout::INSTALLED_LIBRARY_PATH),
    )
    .context("writing the layer's manifest")?;
    Ok(())
}

/// Builds the test `harnesses` of `package` in release; returns each with its executable.
fn build_test_binaries<'a>(
    root: &Path,
    package: &str,
    harnesses: &[&'a str],
) -> anyhow::Result<Vec<(&'a str, PathBuf)>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .args(["test", "--release", "-p", package, "--no-run"]);
    for h in harnesses {
        cmd.args(["--test", h]);
    }
    let o = cmd.output().context("running cargo")?;
    let text = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() {
        bail!("building the test harnesses failed:\n{text}");
    }
    // "  Executable tests/conformance.rs (target/release/deps/conformance-0123abcd)"
    let mut out = Vec::new();
    for &h in harnesses {
        let path = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Executable "))
            .filter_map(|l| l.rsplit_once('(').map(|(_, p)| p.trim_end_matches(')')))
            .find(|p| {
                Path::new(p)
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&format!("{h}-")))
            })
            .with_context(|| format!("cargo did not name the {h} test executable"))?;
        let p = PathBuf::from(path);
        out.push((h, if p.is_absolute() { p } else { root.join(p) }));
    }
    Ok(out)
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
