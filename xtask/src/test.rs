//! `cargo xtask test [ARGS...]`: what CI runs.
//!
//! 1. install the missing system packages ([`crate::deps`]);
//! 2. lint first, to fail fast: `cargo fmt --all --check`, `cargo xtask codegen --check`,
//!    `cargo clippy --workspace --all-targets -- -D warnings`, `cargo doc --no-deps` of the
//!    library crates with warnings denied;
//! 3. the whole test suite: `cargo nextest run --workspace --no-fail-fast ARGS` when cargo-nextest
//!    is installed (after the doctests, which nextest does not run), else `cargo test --workspace --no-fail-fast ARGS`;
//! 4. every fuzz target for [`FUZZ_SECONDS`] seconds after building them instrumented
//!    (`cargo xtask fuzz --quick`: the dev build with only our crates instrumented, sharing every
//!    dependency with step 3's build; about 50 s of CPU time and the budget: docs/fuzzing.md).
//!    With nextest, its build goes between the doctests and the tests' build
//!    (`cargo nextest run --no-run`), and its run beside the tests.
//!
//! `--no-lint` skips step 2 and `--no-fuzz` step 4 (for a quick local run); `--fuzz-seconds N`
//! sets step 4's budget (0 skips it); every other argument goes to the test runner.

use anyhow::Context;

use crate::process::{cargo, step};

/// Runs the steps above; `args` go to the test runner.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let lint = !args.iter().any(|a| a == "--no-lint");
    let fuzz_seconds = match args.iter().position(|a| a == "--fuzz-seconds") {
        Some(i) => args
            .get(i + 1)
            .and_then(|n| n.parse::<u64>().ok())
            .context("--fuzz-seconds needs a number of seconds")?,
        None if args.iter().any(|a| a == "--no-fuzz") => 0,
        None => FUZZ_SECONDS,
    };
    let mut skip_next = false;
    let args: Vec<&String> = args
        .iter()
        .filter(|a| {
            let skip =
                skip_next || *a == "--no-lint" || *a == "--no-fuzz" || *a == "--fuzz-seconds";
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
        // The published libraries' API docs (docs.rs) build without a warning: broken or private
        // links, missing docs (`missing_docs` is warned on in the workspace).
        step(
            "doc",
            cargo()
                .current_dir(&root)
                .env("RUSTDOCFLAGS", "-D warnings")
                .args(["doc", "--no-deps", "-p", "spv-subgroup-validate"])
                .args(["-p", "spv-subgroup-lower", "-p", "spv-subgroup-sim"])
                .args(["-p", "spv-subgroup-capi"]),
        )?;
    }
    let nextest = cargo()
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if nextest {
        // Every step runs even when an earlier one fails (no fail-fast across the suite). The
        // doctests go first so that nextest's summary of the whole suite comes near the end.
        let doctests = step(
            "doctests",
            cargo()
                .current_dir(&root)
                .args(["test", "--workspace", "--doc"]),
        );
        // The fuzz step's build, then the tests' build, then the fuzz run beside the tests: the
        // run needs no cargo (so no build lock) and is niced, so it takes the cores nextest
        // leaves idle (it waits on its longest tests at the end: docs/fuzzing.md).
        let fuzz_build = fuzz_build(fuzz_seconds);
        let tests_build = step(
            "tests build (nextest --no-run)",
            cargo()
                .current_dir(&root)
                .args(["nextest", "run", "--workspace", "--no-run"])
                .args(&args),
        );
        let fuzz_run = match &fuzz_build {
            Ok(true) => Some(std::thread::spawn(move || fuzz_run(fuzz_seconds))),
            _ => None,
        };
        let tests = tests_build.and_then(|()| {
            step(
                "tests (nextest)",
                cargo()
                    .current_dir(&root)
                    .args(["nextest", "run", "--workspace", "--no-fail-fast"])
                    .args(&args),
            )
        });
        let fuzz = match (fuzz_build, fuzz_run) {
            (Err(e), _) => Err(e),
            (Ok(_), Some(run)) => run
                .join()
                .map_err(|_| anyhow::anyhow!("the fuzz step panicked"))
                .and_then(|r| r),
            (Ok(_), None) => Ok(()),
        };
        // Every failure is shown; the first one is the error.
        let results = [doctests, tests, fuzz];
        let mut failures = results.into_iter().filter_map(Result::err);
        if let Some(first) = failures.next() {
            for e in failures {
                eprintln!("xtask: error: {e:#}");
            }
            return Err(first);
        }
    } else {
        eprintln!("xtask test: cargo-nextest not found, using cargo test");
        let tests = step(
            "tests",
            cargo()
                .current_dir(&root)
                .args(["test", "--workspace", "--no-fail-fast"])
                .args(&args),
        );
        let fuzz = fuzz_step(fuzz_seconds);
        if let (Err(e), Err(_)) = (&tests, &fuzz) {
            eprintln!("xtask: error: {e:#}");
        }
        tests.and(fuzz)?;
    }
    eprintln!("xtask test: all green");
    Ok(())
}

/// The fuzz step's budget per target, all targets at once: long enough for every target to
/// load the committed corpus (50 inputs each) and mutate a little, short enough for CI's 20
/// minutes (docs/fuzzing.md, "Cost, and what CI runs").
pub const FUZZ_SECONDS: u64 = 30;

/// Step 4 without the tests beside it: `cargo xtask fuzz --quick --seconds N`, unless `seconds` is 0.
fn fuzz_step(seconds: u64) -> anyhow::Result<()> {
    if fuzz_build(seconds)? {
        fuzz_run(seconds)?;
    }
    Ok(())
}

/// Step 4's build (`cargo xtask fuzz --quick --build-only`); `false` when the step is skipped.
fn fuzz_build(seconds: u64) -> anyhow::Result<bool> {
    if seconds == 0 {
        eprintln!("xtask test: fuzz step skipped");
        return Ok(false);
    }
    crate::fuzz::run(&["--quick".to_owned(), "--build-only".to_owned()])
        .context("step `fuzz` (build) failed")?;
    Ok(true)
}

/// Step 4's run, after its build: `cargo xtask fuzz --quick --seconds N` (the build in it is a
/// no-op by then).
fn fuzz_run(seconds: u64) -> anyhow::Result<()> {
    crate::fuzz::run(&[
        "--seconds".to_owned(),
        seconds.to_string(),
        "--quick".to_owned(),
    ])
    .context("step `fuzz` failed")
}
