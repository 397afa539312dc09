//! Runs the lowering fixtures that opt in (a `// exec: GROUPS` line) on lavapipe, natively and
//! lowered for `vulkan1.1`, `lavapipe` and `naga`, at subgroup sizes 4, 8 and 16, and requires
//! every lowered output to equal the native one word for word.
//!
//! An opted-in fixture is a compute shader with one storage buffer at binding 0 of one `uint`
//! per invocation (`data[gl_GlobalInvocationID.x]`, read then written): the harness fills it
//! with seeded pseudo-random words and dispatches `GROUPS` workgroups. The native module is the
//! reference (lavapipe runs every core subgroup op but clustered and partitioned ones natively,
//! and the spec's semantics are its own). A module with partitioned ops or `Groups`
//! instructions, which lavapipe lacks, takes as reference its lowering for the `lavapipe` preset
//! (which rewrites only those; the conformance suite checks the partitioned rewrite against a
//! host model of the spec, `lower_sim` both against the simulator's native ops), and is compared
//! with the other presets; any other native failure fails the fixture.
//! Use a local size that is not a multiple of 16 (e.g. 37) so subgroups are partial at every size.
//! A fixture's test targets (`// test-targets: A B`, see `lower_common::test_target`) run too.
//!
//! `lavapipe_sizes` re-runs this binary (`child`) with `LP_NATIVE_VECTOR_WIDTH` = 128/256/512
//! and Mesa's shader disk cache off (its key ignores the width); `child` is `#[ignore]`d and
//! fails outside such a child.

#![allow(clippy::print_stdout, reason = "a test harness")]

mod lower_common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::{lavapipe, tools};
use spv_subgroup_vk::{PipelineOptions, Runner};

/// The presets whose outputs run.
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];
/// Seeds per fixture and variant.
const SEEDS: [u32; 3] = [1, 2, 3];

/// The opted-in fixtures and their workgroup counts.
fn fixtures() -> Vec<(PathBuf, u32)> {
    let mut out = Vec::new();
    let root = tools::workspace_root().join("fixtures/lower");
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&d)
            .expect("fixtures/lower is readable")
            .map(|e| e.expect("a directory entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "comp") {
                let text = std::fs::read_to_string(&p).expect("fixture is readable");
                if let Some(n) = text.lines().find_map(|l| l.strip_prefix("// exec: ")) {
                    let groups = n.trim().parse().expect("`// exec: GROUPS` takes a number");
                    out.push((p, groups));
                }
            }
        }
    }
    out.sort();
    out
}

/// The input word of global invocation `i` for `seed`.
fn input_word(i: usize, seed: u32) -> u32 {
    let mut h = (i as u32).wrapping_mul(0x9e37_79b9) ^ seed.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^ (h >> 12)
}

/// The local size x the module declares (`OpExecutionMode LocalSize`).
fn local_size(words: &[u32]) -> usize {
    let mut i = 5;
    while i < words.len() {
        let (len, op) = ((words[i] >> 16) as usize, words[i] & 0xffff);
        if len == 0 {
            break;
        }
        // OpExecutionMode (16) with mode LocalSize (17).
        if op == 16 && len >= 4 && words.get(i + 2) == Some(&17) {
            return words[i + 3] as usize;
        }
        i += len;
    }
    panic!("the fixture declares no LocalSize")
}

/// Whether the module declares capability `cap`.
fn declares(words: &[u32], cap: u32) -> bool {
    let mut i = 5;
    while i + 1 < words.len() {
        let (len, op) = ((words[i] >> 16) as usize, words[i] & 0xffff);
        if len == 0 {
            break;
        }
        if op == 17 && words[i + 1] == cap {
            return true;
        }
        i += len;
    }
    false
}

/// Runs `words` for every seed; returns the output buffers.
fn run(runner: &Runner, words: &[u32], n: usize, groups: u32) -> Result<Vec<Vec<u32>>, String> {
    let pipeline = runner
        .pipeline(words, &PipelineOptions::default())
        .map_err(|e| e.to_string())?;
    let mut outs = Vec::new();
    for seed in SEEDS {
        let mut bufs = vec![(0..n).map(|i| input_word(i, seed)).collect::<Vec<u32>>()];
        runner
            .run(
                &pipeline,
                &mut bufs,
                [groups, 1, 1],
                Duration::from_secs(240),
            )
            .map_err(|e| e.to_string())?;
        outs.push(bufs.swap_remove(0));
    }
    Ok(outs)
}

/// Checks one fixture; pushes a line per failure.
fn check(runner: &Runner, path: &Path, groups: u32, failures: &mut Vec<String>) -> usize {
    let rel = path
        .strip_prefix(tools::workspace_root())
        .unwrap_or(path)
        .display()
        .to_string();
    let native = tools::compile_glsl(path, "vulkan1.1").unwrap_or_else(|e| panic!("{rel}: {e}"));
    let n = local_size(&native) * groups as usize;
    // What lavapipe cannot run natively: the partitioned ops (where the driver lacks them) and
    // the `Groups` instructions (`SPV_AMD_shader_ballot`, capability 18).
    let partitioned = !runner.info().has_subgroup_op("partitioned_nv") && declares(&native, 5297);
    let (reference, presets): (_, &[&str]) = if partitioned || declares(&native, 18) {
        let opts = LowerOptions {
            target: Target::preset("lavapipe").expect("preset"),
            ..Default::default()
        };
        let words = match lower_words(&native, &opts) {
            Ok((w, _)) => w,
            Err(e) => {
                failures.push(format!(
                    "{rel} for lavapipe (the reference): lowering fails: {e}"
                ));
                return 0;
            }
        };
        (run(runner, &words, n, groups), &["vulkan1.1", "naga"])
    } else {
        (run(runner, &native, n, groups), &PRESETS)
    };
    let reference = match reference {
        Ok(o) => o,
        Err(e) => {
            failures.push(format!("{rel}: the reference does not run: {e}"));
            return 0;
        }
    };
    let mut compared = 0;
    let targets = presets
        .iter()
        .map(|p| Target::preset(p).expect("preset"))
        .chain(lower_common::test_targets(path));
    for target in targets {
        let preset = target.name.clone();
        let opts = LowerOptions {
            target,
            ..Default::default()
        };
        let words = match lower_words(&native, &opts) {
            Ok((w, _)) => w,
            Err(e) => {
                failures.push(format!("{rel} for {preset}: lowering fails: {e}"));
                continue;
            }
        };
        match run(runner, &words, n, groups) {
            Err(e) => failures.push(format!("{rel} for {preset}: {e}")),
            Ok(outs) => {
                for (seed, (got, want)) in SEEDS.iter().zip(outs.iter().zip(&reference)) {
                    compared += got.len();
                    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
                        let wrong = (0..got.len()).filter(|&i| got[i] != want[i]).count();
                        failures.push(format!(
                            "{rel} for {preset}, seed {seed}: {wrong} invocations differ from native; first {i}: {:#x} against {:#x}",
                            got[i], want[i]
                        ));
                    }
                }
            }
        }
    }
    compared
}

/// The suite at one lavapipe subgroup size: `lavapipe_sizes` runs it in a child process.
#[test]
#[ignore = "the suite of a child process: lavapipe_sizes runs it at each size"]
fn child() {
    assert!(
        std::env::var_os("LOWER_EXEC_CHILD").is_some(),
        "`child` runs inside lavapipe_sizes (which sets LOWER_EXEC_CHILD and the subgroup size)"
    );
    let runner = Runner::with_device(Some("llvmpipe"))
        .expect("lavapipe (apt-get install mesa-vulkan-drivers)");
    let size = runner.info().subgroup_size;
    println!("subgroup size: {size}");
    let expect: u32 = std::env::var("SPV_CHILD_EXPECT_SIZE")
        .ok()
        .and_then(|s| s.parse().ok())
        .expect("the parent sets SPV_CHILD_EXPECT_SIZE");
    assert_eq!(
        size, expect,
        "the driver runs another subgroup size than asked"
    );
    let list = fixtures();
    assert!(
        !list.is_empty(),
        "no fixture opts in with `// exec: GROUPS`"
    );
    let mut failures = Vec::new();
    let mut compared = 0;
    for (path, groups) in &list {
        compared += check(&runner, path, *groups, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "subgroup size {size}: {} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!(
        "subgroup size {size}: {} fixtures x {} presets: {compared} words equal to native",
        list.len(),
        PRESETS.len()
    );
}

#[test]
fn lavapipe_sizes() {
    for size in [4, 8, 16] {
        let text = lavapipe::run_child(
            "child",
            size,
            &[("LOWER_EXEC_CHILD", "1")],
            Duration::from_secs(600),
        );
        assert!(
            text.contains("words equal to native"),
            "the child did not run at size {size}:\n{text}"
        );
    }
}
