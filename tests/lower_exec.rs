//! Runs the lowering fixtures that opt in (a `// exec: GROUPS` line, `; exec: GROUPS` in
//! assembly) and the quad votes of `lower_common::quad_vote_module` on a Vulkan device, natively
//! and lowered for `vulkan1.1`, `lavapipe` and `naga`, and requires every lowered output to equal
//! the reference word for word: on lavapipe at subgroup sizes 4, 8 and 16, and on the GPU machine
//! at its size (`cargo xtask gpu`, `SPV_SUBGROUP_VK_DEVICE` naming the device).
//!
//! An opted-in fixture is a compute shader with one storage buffer at binding 0 of one `uint`
//! per invocation (`data[gl_GlobalInvocationID.x]`, read then written): the harness fills it
//! with seeded pseudo-random words and dispatches `GROUPS` workgroups. The native module is the
//! reference where the device runs every subgroup op it declares ([`runs_natively`]; the spec's
//! semantics are the driver's own). Else the reference is its lowering for the `lavapipe` preset,
//! which rewrites exactly what lavapipe lacks (the partitioned ops, `Groups`, rotates, quad
//! votes; the conformance suite and `lower_sim` check those rewrites against a host model and the
//! simulator's native ops), compared with the other presets. A test target's output that keeps an
//! op the device lacks is not run here (said in the output; the simulator runs it).
//! Use a local size that is not a multiple of 16 (e.g. 37) so subgroups are partial at every size.
//! A fixture's test targets (`// test-targets: A B`, see `lower_common::test_target`) run too.
//!
//! `lavapipe_sizes` re-runs this binary (`child`) with `LP_NATIVE_VECTOR_WIDTH` = 128/256/512
//! and Mesa's shader disk cache off (its key ignores the width); `child` is `#[ignore]`d and
//! fails outside such a child.

#![allow(clippy::print_stdout, reason = "a test harness")]

mod lower_common;

use std::time::Duration;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::{lavapipe, tools};
use spv_subgroup_vk::{PipelineOptions, Runner};

/// The presets whose outputs run.
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];
/// Seeds per fixture and variant.
const SEEDS: [u32; 3] = [1, 2, 3];

/// An opted-in case: its name, module, workgroup count and test targets.
struct Case {
    name: String,
    words: Vec<u32>,
    groups: u32,
    test_targets: Vec<Target>,
}

/// The fixtures that opt in (`// exec: GROUPS` in GLSL, `; exec: GROUPS` in assembly), and the
/// quad votes of `lower_common::quad_vote_module` (which no tool here can write as a fixture).
fn cases() -> Vec<Case> {
    let mut paths = Vec::new();
    let root = tools::workspace_root().join("fixtures/lower");
    let mut dirs = vec![root];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("fixtures/lower is readable") {
            let p = e.expect("a directory entry").path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "comp" || e == "spvasm") {
                paths.push(p);
            }
        }
    }
    paths.sort();
    let vulkan11 = Target::preset("vulkan1.1").expect("preset");
    let mut out = Vec::new();
    for p in paths {
        let text = std::fs::read_to_string(&p).expect("fixture is readable");
        let Some(n) = text
            .lines()
            .find_map(|l| l.strip_prefix("// exec: ").or(l.strip_prefix("; exec: ")))
        else {
            continue;
        };
        out.push(Case {
            name: p
                .strip_prefix(tools::workspace_root())
                .unwrap_or(&p)
                .display()
                .to_string(),
            words: lower_common::build(&p, &vulkan11),
            groups: n.trim().parse().expect("`exec: GROUPS` takes a number"),
            test_targets: lower_common::test_targets(&p),
        });
    }
    out.push(Case {
        name: "quad votes (lower_common::quad_vote_module)".to_owned(),
        words: lower_common::quad_vote_module(),
        groups: 3,
        test_targets: lower_common::test_target("ballot-only")
            .into_iter()
            .collect(),
    });
    out
}

/// Whether the device runs every subgroup op `words` declares natively: else the reference is
/// the module lowered for `lavapipe`, which rewrites exactly those (lavapipe 22.3 has neither the
/// partitioned ops, nor `Groups`, rotates or quad control; an NVIDIA driver has all but `Groups`).
fn runs_natively(runner: &Runner, words: &[u32]) -> bool {
    let info = runner.info();
    let f = &info.features;
    // (capability, whether the device has it)
    let needs = [
        (5297, info.has_subgroup_op("partitioned_nv")),
        (18, false),
        (6026, f.subgroup_rotate && f.subgroup_rotate_clustered),
        (5087, f.quad_control),
    ];
    needs.iter().all(|&(cap, has)| has || !declares(words, cap))
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

/// Checks one case; pushes a line per failure. Returns the words compared.
fn check(runner: &Runner, case: &Case, failures: &mut Vec<String>) -> usize {
    let (rel, native, groups) = (&case.name, &case.words, case.groups);
    let n = local_size(native) * groups as usize;
    let natively = runs_natively(runner, native);
    println!(
        "{rel}: reference {}",
        if natively {
            "native"
        } else {
            "lowered for lavapipe"
        }
    );
    let (reference, presets): (_, &[&str]) = if natively {
        (run(runner, native, n, groups), &PRESETS)
    } else {
        let opts = LowerOptions::new(Target::preset("lavapipe").expect("preset"));
        let words = match lower_words(native, &opts) {
            Ok((w, _)) => w,
            Err(e) => {
                failures.push(format!(
                    "{rel} for lavapipe (the reference): lowering fails: {e}"
                ));
                return 0;
            }
        };
        (run(runner, &words, n, groups), &["vulkan1.1", "naga"])
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
        .chain(case.test_targets.iter().cloned());
    for target in targets {
        let preset = target.name.clone();
        let opts = LowerOptions::new(target);
        let words = match lower_words(native, &opts) {
            Ok((w, _)) => w,
            Err(e) => {
                failures.push(format!("{rel} for {preset}: lowering fails: {e}"));
                continue;
            }
        };
        if !runs_natively(runner, &words) {
            // A test target that keeps an op this device lacks (rotates on lavapipe): the
            // simulator runs it (lower_sim), a device with the op runs it here.
            println!("{rel} for {preset}: not run, it keeps an op this device lacks");
            continue;
        }
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
    // lavapipe, unless `SPV_SUBGROUP_VK_DEVICE` names another device (the GPU run).
    let device = std::env::var(spv_subgroup_vk::DEVICE_ENV).unwrap_or_else(|_| "llvmpipe".into());
    let runner = Runner::with_device(Some(&device))
        .unwrap_or_else(|e| panic!("{e} (lavapipe: apt-get install mesa-vulkan-drivers)"));
    let size = runner.info().subgroup_size;
    println!("{}", runner.info().summary());
    println!("subgroup size: {size}");
    if let Some(expect) = std::env::var("SPV_CHILD_EXPECT_SIZE")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
    {
        assert_eq!(
            size, expect,
            "the driver runs another subgroup size than asked"
        );
    }
    let list = cases();
    let mut failures = Vec::new();
    let mut compared = 0;
    for case in &list {
        compared += check(&runner, case, &mut failures);
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
