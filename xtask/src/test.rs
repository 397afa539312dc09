//! `cargo xtask test [ARGS...]`: what CI runs.
//!
//! 1. install the missing system packages ([`crate::deps`]);
//! 2. lint first, to fail fast: `cargo fmt --all --check`, `cargo xtask codegen --check`,
//!    `cargo clippy --workspace --all-targets -- -D warnings`;
//! 3. the whole test suite: `cargo nextest run --workspace --no-fail-fast ARGS` when cargo-nextest
//!    is installed (after the doctests, which nextest does not run), else `cargo test --workspace --no-fail-fast ARGS`.
//!
//! `--no-lint` skips step 2 (for a quick local run); `--fuzz-seconds N` adds step 4, every fuzz
//! target for N seconds after building them instrumented (`cargo xtask fuzz --quick`: the dev
//! build with only our crates instrumented; off by default, because the build and the run add
//! about 3.5 minutes to a CI run already near its 20: see docs/fuzzing.md); every other argument
//! goes to the test runner.

use std::process::Command;

use anyhow::{bail, Context};

/// Runs the steps above; `args` go to the test runner.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let lint = !args.iter().any(|a| a == "--no-lint");
    let fuzz_seconds = args
        .iter()
        .position(|a| a == "--fuzz-seconds")
        .map(|i| args.get(i + 1).cloned().unwrap_or_default());
    let mut skip_next = false;
    let args: Vec<&String> = args
        .iter()
        .filter(|a| {
            let skip = skip_next || *a == "--no-lint" || *a == "--fuzz-seconds";
            skip_next = *a == "--fuzz-seconds";
            !skip
        })
        .collect();
    let root = crate::workspace_root();
    crate::deps::install()?;
    if lint {
        step(
            "format",
            cargo().current_dir(&root).args(["fmt", "--all", "--check"]),
        )?;
        crate::codegen::run(&["--check".to_owned()]).context("step `codegen --check` failed")?;
        step(
            "clippy",
            cargo().current_dir(&root).args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        )?;
    }
    let nextest = cargo()
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if nextest {
        // Both steps run even when the first fails (no fail-fast across the suite). The doctests
        // go first so that the run closes on nextest's summary of the whole suite.
        let doctests = step(
            "doctests",
            cargo()
                .current_dir(&root)
                .args(["test", "--workspace", "--doc"]),
        );
        let tests = step(
            "tests (nextest)",
            cargo()
                .current_dir(&root)
                .args(["nextest", "run", "--workspace", "--no-fail-fast"])
                .args(&args),
        );
        if let (Err(e), Err(_)) = (&doctests, &tests) {
            eprintln!("xtask: error: {e}");
        }
        tests.and(doctests)?;
    } else {
        eprintln!("xtask test: cargo-nextest not found, using cargo test");
        step(
            "tests",
            cargo()
                .current_dir(&root)
                .args(["test", "--workspace", "--no-fail-fast"])
                .args(&args),
        )?;
    }
    if let Some(n) = fuzz_seconds {
        crate::fuzz::run(&["--seconds".to_owned(), n, "--quick".to_owned()])
            .context("step `fuzz` failed")?;
    }
    eprintln!("xtask test: all green");
    Ok(())
}

/// The cargo running us (so `cargo +toolchain xtask` stays on that toolchain).
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Runs one step, announcing it, and fails naming it.
pub fn step(name: &str, cmd: &mut Command) -> anyhow::Result<()> {
    eprintln!("xtask: {name}: {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start step `{name}`"))?;
    if !status.success() {
        bail!("step `{name}` failed ({status})");
    }
    Ok(())
}
