//! Lowering fixtures that opt in (a `// sim` line) in the simulator (`spv-subgroup-sim`) at
//! subgroup sizes 1 to 128: the native module against its lowered forms for every preset whose
//! size range includes the size and for the fixture's test targets (`// test-targets: A B`).
//!
//! The fixture shape is that of `lower_exec.rs` (one `uint` per invocation at binding 0, read then
//! written; `// exec: GROUPS` gives the workgroup count). Assembly fixtures (`.spvasm`, for ops
//! glslang 12 cannot write, such as rotates) opt in with `; sim` and `; exec: GROUPS`. The simulator runs every subgroup op
//! natively, so the native module is the reference at every size, where lavapipe has only 4, 8
//! and 16. Undefined values (reads of inactive lanes) are seeded random bits: the native module
//! runs with two undefined-value seeds and must give the same words both times (so the fixture
//! consumes no undefined value), and each lowered module must give those words too.

#![allow(clippy::print_stdout, reason = "a test harness")]

mod lower_common;

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::PathBuf;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_sim::{Dispatch, Module};
use spv_subgroup_tests::tools;

/// Subgroup sizes.
const SIZES: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
/// Presets whose outputs run (where their size range includes the size).
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];

/// The fixtures with a `// sim` line and their workgroup counts.
fn fixtures() -> Vec<(PathBuf, u32)> {
    let root = tools::workspace_root().join("fixtures");
    let mut out = Vec::new();
    for entry in glob_sources(&root.join("lower")) {
        let text = std::fs::read_to_string(&entry).expect("fixture is readable");
        if text.lines().any(|l| matches!(l.trim(), "// sim" | "; sim")) {
            let groups = text
                .lines()
                .find_map(|l| l.strip_prefix("// exec: ").or(l.strip_prefix("; exec: ")))
                .map_or(1, |n| {
                    n.trim().parse().expect("`// exec: GROUPS` takes a number")
                });
            out.push((entry, groups));
        }
    }
    out.sort();
    out
}

fn glob_sources(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("directory is readable") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            out.extend(glob_sources(&p));
        } else if p.extension().is_some_and(|e| e == "comp" || e == "spvasm") {
            out.push(p);
        }
    }
    out
}

/// The input word of global invocation `i` for `seed` (the same as `lower_exec.rs`).
fn input_word(i: usize, seed: u32) -> u32 {
    let mut h = (i as u32).wrapping_mul(0x9e37_79b9) ^ seed.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^ (h >> 12)
}

/// Runs `module` once; returns the output words.
fn run(
    module: &Module,
    size: u32,
    n: usize,
    groups: u32,
    input: u32,
    undef: u64,
) -> Result<Vec<u32>, String> {
    let data: Vec<u8> = (0..n)
        .flat_map(|i| input_word(i, input).to_le_bytes())
        .collect();
    let d = Dispatch::default()
        .with_subgroup_size(size)
        .with_workgroups([groups, 1, 1])
        .with_buffers(BTreeMap::from([((0, 0), data)]))
        .with_seed(undef);
    let out = module.run(&d).map_err(|e| e.to_string())?;
    Ok(out.buffers[&(0, 0)]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Runs `native` and each of `lowered` (name, sizes it runs at, module) at every size of
/// [`SIZES`] in its range with two inputs, `groups` workgroups of 37; pushes a line per difference
/// (and per native output that depends on undefined values) and returns how many lowered runs
/// there were.
fn against_native(
    rel: &str,
    native: &Module,
    lowered: &[(String, RangeInclusive<u32>, Module)],
    groups: u32,
    failures: &mut Vec<String>,
) -> usize {
    let n = 37 * groups as usize;
    let mut runs = 0;
    for size in SIZES {
        for input in [1u32, 2] {
            let want = match run(native, size, n, groups, input, 11) {
                Ok(w) => w,
                Err(e) => {
                    failures.push(format!("{rel} native, size {size}: {e}"));
                    continue;
                }
            };
            assert_eq!(want.len(), n, "{rel}: the local size is not 37");
            match run(native, size, n, groups, input, 12) {
                Ok(w) if w == want => {}
                Ok(_) => failures.push(format!(
                    "{rel} native, size {size}, input {input}: the output depends on undefined values"
                )),
                Err(e) => failures.push(format!("{rel} native, size {size}: {e}")),
            }
            for (name, range, m) in lowered {
                if !range.contains(&size) {
                    continue;
                }
                runs += 1;
                match run(m, size, n, groups, input, 13) {
                    Ok(got) => {
                        if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                            failures.push(format!(
                                "{rel} for {name}, size {size}, input {input}: invocation {i}: {:#x} against native {:#x}",
                                got[i], want[i]
                            ));
                        }
                    }
                    Err(e) => failures.push(format!("{rel} for {name}, size {size}: {e}")),
                }
            }
        }
    }
    runs
}

#[test]
fn lowered_fixtures_in_the_simulator() {
    let list = fixtures();
    assert!(!list.is_empty(), "no fixture opts in with `// sim`");
    let mut failures = Vec::new();
    let mut runs = 0;
    for (path, groups) in &list {
        let rel = path
            .strip_prefix(tools::workspace_root())
            .unwrap_or(path)
            .display()
            .to_string();
        let native_words = lower_common::build(path, &Target::preset("vulkan1.1").expect("preset"));
        let native = Module::new(&native_words).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let mut lowered = Vec::new();
        let targets = PRESETS
            .iter()
            .map(|p| Target::preset(p).expect("preset"))
            .chain(lower_common::test_targets(path));
        for target in targets {
            let name = target.name.clone();
            let range = target.min_subgroup_size..=target.max_subgroup_size;
            let opts = LowerOptions::new(target);
            match lower_words(&native_words, &opts) {
                Ok((w, _)) => match Module::new(&w) {
                    Ok(m) => lowered.push((name, range, m)),
                    Err(e) => failures.push(format!("{rel} for {name}: translation: {e}")),
                },
                Err(e) => failures.push(format!("{rel} for {name}: lowering fails: {e}")),
            }
        }
        runs += against_native(&rel, &native, &lowered, *groups, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!(
        "{} fixtures: {runs} lowered runs at sizes {SIZES:?} equal to native",
        list.len()
    );
}

/// The quad votes lowered for every preset that runs them (all but `nvidia`, which has them, and
/// `khr-ballot`, a SPIR-V 1.0 consumer) and for a target without shuffles, against the
/// simulator's native quad votes at every size; every output passes `spirv-val` and has nothing
/// the target lacks.
#[test]
fn quad_votes_in_the_simulator() {
    let native_words = lower_common::quad_vote_module();
    let native = Module::new(&native_words).expect("the simulator loads the quad votes");
    let targets = PRESETS
        .iter()
        .map(|p| Target::preset(p).expect("preset"))
        .chain(lower_common::test_target("ballot-only"));
    let mut lowered = Vec::new();
    for target in targets {
        let name = target.name.clone();
        let range = target.min_subgroup_size..=target.max_subgroup_size;
        let (words, report) = lower_common::lower(&native_words, &target)
            .unwrap_or_else(|e| panic!("quad votes for {name}: lowering fails: {e}"));
        assert!(report.changed, "quad votes for {name}: nothing lowered");
        tools::spirv_val(&words, "vulkan1.1")
            .unwrap_or_else(|e| panic!("quad votes for {name}: spirv-val: {e}"));
        let misfits = lower_common::misfits(&words, &target);
        assert!(misfits.is_empty(), "quad votes for {name}: {misfits:?}");
        let m = Module::new(&words).expect("the simulator loads the output");
        lowered.push((name, range, m));
    }
    let mut failures = Vec::new();
    let runs = against_native("quad votes", &native, &lowered, 3, &mut failures);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("quad votes: {runs} lowered runs equal to native");
}
