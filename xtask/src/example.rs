//! `cargo xtask example`: the README's main job, end to end.
//!
//! Compiles `fixtures/examples/partitioned_vote.comp` (GLSL with `GL_NV_shader_subgroup_partitioned`
//! and `GL_ARB_shader_group_vote`) with glslangValidator, validates it, lowers it with
//! `spv-subgroup lower` for the default target (Vulkan 1.1 core subgroup features), and checks the
//! result with `spirv-val --target-env vulkan1.1` and `spv-subgroup validate --target vulkan1.1`.
//! With `--run`, the lowered module also runs on lavapipe (which lacks partitioned ops and KHR vote)
//! and its results are compared with a host model (`crates/spv-subgroup/tests/cli_lavapipe.rs`).
//! Everything is written under `target/example/`.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};

use crate::process::{cargo, step};

/// Runs the example; `--run` also runs the lowered shader on lavapipe (through the test
/// `cli_lavapipe`); other `args` are passed to `spv-subgroup lower` (e.g. `--subgroup-size 8`).
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let on_lavapipe = args.iter().any(|a| a == "--run");
    let args: Vec<&String> = args.iter().filter(|a| *a != "--run").collect();
    let root = crate::workspace_root();
    let src = root.join("fixtures/examples/partitioned_vote.comp");
    let out_dir = root.join("target/example");
    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let spv = out_dir.join("partitioned_vote.spv");
    let lowered = out_dir.join("partitioned_vote.lowered.spv");

    step(
        "build spv-subgroup",
        cargo()
            .current_dir(&root)
            .args(["build", "--release", "--quiet", "-p", "spv-subgroup"]),
    )?;
    let exe = root.join("target/release/spv-subgroup");
    let exe = std::env::var_os("CARGO_TARGET_DIR")
        .map(|d| Path::new(&d).join("release/spv-subgroup"))
        .filter(|p| p.exists())
        .unwrap_or(exe);

    step(
        "compile with glslangValidator",
        Command::new("glslangValidator")
            .args(["--target-env", "vulkan1.1", "-o"])
            .arg(&spv)
            .arg(&src),
    )
    .context("is glslang-tools installed? run `cargo xtask install-deps`")?;
    step(
        "validate the input",
        Command::new(&exe).arg("validate").arg(&spv),
    )?;
    let misfit = Command::new(&exe)
        .args(["validate", "--format", "json", "--target", "vulkan1.1"])
        .arg(&spv)
        .output()
        .context("cannot run spv-subgroup")?;
    let findings = String::from_utf8_lossy(&misfit.stdout)
        .matches("\"code\"")
        .count();
    if misfit.status.code() != Some(1) || findings == 0 {
        bail!("expected `validate --target vulkan1.1` to report the input's vote and partitioned ops, got {}", misfit.status);
    }
    eprintln!(
        "example: `spv-subgroup validate --target vulkan1.1` reports {findings} ops or capabilities \
         Vulkan 1.1 core lacks (exit 1), as expected; lowering them:"
    );
    step(
        "lower",
        Command::new(&exe)
            .arg("lower")
            .arg(&spv)
            .arg("-o")
            .arg(&lowered)
            .args(args),
    )?;
    step(
        "spirv-val",
        Command::new("spirv-val")
            .args(["--target-env", "vulkan1.1"])
            .arg(&lowered),
    )?;
    step(
        "validate the output",
        Command::new(&exe)
            .args(["validate", "--target", "vulkan1.1"])
            .arg(&lowered),
    )?;
    let dis = Command::new("spirv-dis")
        .arg(&lowered)
        .output()
        .context("cannot run spirv-dis")?;
    let text = String::from_utf8_lossy(&dis.stdout);
    let left: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.contains("OpCapability")
                && (l.contains("Partitioned") || l.contains("SubgroupVoteKHR"))
        })
        .collect();
    if !left.is_empty() {
        bail!("the lowered module still declares: {}", left.join("; "));
    }
    if on_lavapipe {
        step(
            "run the lowered shader on lavapipe",
            cargo().current_dir(&root).args([
                "test",
                "-q",
                "-p",
                "spv-subgroup",
                "--test",
                "cli_lavapipe",
            ]),
        )?;
    } else {
        eprintln!("example: `cargo xtask example --run` also runs the lowered shader on lavapipe and checks its results");
    }
    eprintln!(
        "example: ok: {} -> {} (valid for vulkan1.1, no partitioned or KHR vote capability left)",
        spv.display(),
        lowered.display()
    );
    Ok(())
}
