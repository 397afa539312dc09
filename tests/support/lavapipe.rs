//! Running part of a test binary again under lavapipe at a chosen subgroup size.
//!
//! lavapipe's subgroup size follows `LP_NATIVE_VECTOR_WIDTH` (128 bits: 4 lanes, 256: 8,
//! 512: 16), which it reads when the driver loads, so each size needs a process of its own:
//! [`run_child`] re-runs one test of the current binary with that variable set.
//!
//! Most harnesses have the same shape, which [`lavapipe_size_tests!`](crate::lavapipe_size_tests)
//! writes for them: an ignored test `child_suite` that does the work in a child ([`assert_child`]), and
//! three parent tests `lavapipe_subgroup_size_{4,8,16}` that each start one child ([`run_suite`]).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The `LP_NATIVE_VECTOR_WIDTH` that gives subgroup `size`, for the sizes lavapipe really runs.
pub fn vector_width(size: u32) -> u32 {
    match size {
        4 => 128,
        8 => 256,
        16 => 512,
        _ => panic!("lavapipe runs subgroups of 4, 8 or 16 lanes, not {size}"),
    }
}

/// Re-runs the test `child_test` of this binary on lavapipe with subgroup `size`, with
/// `SPV_CHILD_EXPECT_SIZE=size` and the extra variables `env`, waits at most `limit`, and returns
/// what it printed; panics when it fails or runs too long. The child should print
/// `subgroup size: N` (the driver's report), which is checked against `size`.
pub fn run_child(child_test: &str, size: u32, env: &[(&str, &str)], limit: Duration) -> String {
    // `/proc/self/exe` still runs this binary if a concurrent `cargo test` has replaced the file.
    let proc_exe = std::path::Path::new("/proc/self/exe");
    let exe = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe().expect("the test binary's path")
    };
    let mut child = Command::new(exe)
        // `--include-ignored`: a `child_suite` is `#[ignore]`d, so that a plain run of the harness
        // lists it as skipped rather than as a test that passed without doing anything.
        .args(["--exact", child_test, "--include-ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env("SPV_CHILD_EXPECT_SIZE", size.to_string())
        .env("LP_NATIVE_VECTOR_WIDTH", vector_width(size).to_string())
        // Mesa's shader cache key ignores LP_NATIVE_VECTOR_WIDTH: a shader cached at one width
        // must not run at another.
        .env("MESA_SHADER_CACHE_DISABLE", "true")
        // LLVM's optimisation passes are most of lavapipe's pipeline compile time, and these
        // dispatches are tiny: without them the children take about a third less CPU time
        // (docs/fuzzing.md). The SPIR-V and its meaning are the same; the GPU run
        // (`cargo xtask gpu`) and `SPV_LAVAPIPE_LLVM_OPT=1` run optimised code.
        .envs(
            std::env::var_os("SPV_LAVAPIPE_LLVM_OPT")
                .is_none()
                .then_some(("GALLIVM_PERF", "nopt")),
        )
        // The caller's variables come last, so a child that asks for `GALLIVM_PERF` gets it.
        .envs(env.iter().copied())
        .env("SPV_SUBGROUP_VK_DEVICE", "llvmpipe")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("re-running the test binary");
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                panic!(
                    "`{child_test}` at subgroup size {size} ran past {limit:?} (a hung shader?)"
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(100)),
            Err(e) => panic!("waiting for the child: {e}"),
        }
    }
    let out = child.wait_with_output().expect("child output");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("subgroup size: {size}\n")),
        "`{child_test}` did not report subgroup size {size}:\n{text}"
    );
    assert!(
        out.status.success(),
        "`{child_test}` failed at subgroup size {size}:\n{text}"
    );
    text
}

/// The variable [`run_suite`] sets in the child, so that `child_suite` knows it is one.
pub const CHILD_VAR: &str = "SPV_LAVAPIPE_CHILD";

/// Panics unless this process is a child started by [`run_suite`]: a `child_suite` is `#[ignore]`d
/// and only means something at the size its parent chose, so one run by hand (`--ignored`) says so
/// instead of checking nothing.
pub fn assert_child() {
    assert!(
        std::env::var_os(CHILD_VAR).is_some(),
        "child_suite runs inside lavapipe_subgroup_size_* (which set {CHILD_VAR} and the subgroup size)"
    );
}

/// Re-runs the test `child_suite` of this binary on lavapipe with subgroup `size` and the extra
/// variables `env` (see [`run_child`]), and returns what it printed.
pub fn run_suite(size: u32, env: &[(&str, &str)], limit: Duration) -> String {
    let mut all = vec![(CHILD_VAR, "1")];
    all.extend_from_slice(env);
    run_child("child_suite", size, &all, limit)
}

/// Defines the parent tests `lavapipe_subgroup_size_4`, `_8` and `_16` of a harness: each runs
/// the harness's `child_suite` in a child at that size (at most `$limit_secs` seconds) and prints
/// what it printed. `$env`, when given, is a `fn(u32) -> &'static [(&'static str, &'static str)]`
/// naming the extra variables of the child at a size. `child_suite` must be `#[ignore]`d, call
/// [`assert_child`], and print `subgroup size: N`.
#[macro_export]
macro_rules! lavapipe_size_tests {
    ($limit_secs:expr) => {
        $crate::lavapipe_size_tests!($limit_secs, |_| &[]);
    };
    ($limit_secs:expr, $env:expr) => {
        #[test]
        fn lavapipe_subgroup_size_4() {
            $crate::lavapipe_size_tests!(@run 4, $limit_secs, $env);
        }

        #[test]
        fn lavapipe_subgroup_size_8() {
            $crate::lavapipe_size_tests!(@run 8, $limit_secs, $env);
        }

        #[test]
        fn lavapipe_subgroup_size_16() {
            $crate::lavapipe_size_tests!(@run 16, $limit_secs, $env);
        }
    };
    (@run $size:literal, $limit_secs:expr, $env:expr) => {{
        let env: fn(u32) -> &'static [(&'static str, &'static str)] = $env;
        let limit = ::std::time::Duration::from_secs($limit_secs);
        println!("{}", $crate::lavapipe::run_suite($size, env($size), limit));
    }};
}
