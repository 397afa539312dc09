//! The conformance suite in the simulator (`spv-subgroup-sim`): every case's native module, and
//! its lowered forms for each preset whose subgroup-size range includes the size, at subgroup
//! sizes 1 to 128 (`SPV_SIM_SIZES`, comma-separated; default all eight: 1, 2, 4, 8, 16, 32, 64,
//! 128), every local size of the case (full and partial subgroups), two input seeds and two seeds
//! of undefined values; each run is checked against the host model (`conformance_model.rs`).
//! The cases are dealt round-robin into [`PARTS`] tests (`part_0`, ...), so nextest (and the
//! libtest threads) run the parts in parallel; each case is compiled, lowered and translated once
//! per local size, then run at every size.
//! Lowered modules must never read an undefined value (`report_undefined` finds none).
//! `SPV_CONFORMANCE_FILTER` selects cases by substring, as in `conformance.rs`; `SPV_SIM_THREADS`
//! sets the threads of each dispatch of the `part_*` tests (default: the simulator's own).
//!
//! The `emulated_*` tests prove `LowerOptions::emulate_subgroup_size` (issue 26): every case and
//! the README example, emulated at N in [`EMULATED`] (and lowered for `vulkan1.1`), run at
//! every hardware size from N to 128 ([`hardware_sizes`]), must write what the original writes at
//! size N: every output word the original defines (the same under two seeds of undefined
//! values) equal, no undefined value read where the original reads none, and the model's check
//! clean.

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

#[path = "conformance_inputs.rs"]
mod inputs;
#[path = "conformance_model.rs"]
#[allow(dead_code)] // Shared with the lavapipe harness, which uses all of it.
mod model;
#[path = "conformance_shaders.rs"]
#[allow(dead_code)]
mod shaders;

use std::collections::BTreeMap;

use model::KeyEq;
use shaders::{Case, Family};
use spv_subgroup_lower::{lower_words, FloatPartition, LowerOptions, PartitionForm, Target};
use spv_subgroup_sim::{Dispatch, Module};
use spv_subgroup_tests::{example, tools};

/// Workgroups per dispatch.
const GROUPS: u32 = 4;
/// Input seeds per (case, variant, local size, subgroup size).
const SEEDS: [u64; 2] = [1, 2];
/// Presets the lowered modules are made for (a case may name its own list).
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];

fn compile(glsl: &str, env: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("case.comp");
    std::fs::write(&path, glsl).expect("write");
    tools::compile_glsl(&path, env).unwrap_or_else(|e| panic!("glslang: {e}"))
}

fn sizes() -> Vec<u32> {
    match std::env::var("SPV_SIM_SIZES") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![1, 2, 4, 8, 16, 32, 64, 128],
    }
}

/// Threads each dispatch runs on (`SPV_SIM_THREADS`; default 0, the simulator's own default:
/// one per core, a dispatch's first millisecond on the calling thread). `cargo xtask bench sim`
/// sets 1 to measure one core.
fn threads() -> usize {
    std::env::var("SPV_SIM_THREADS")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Simulator work done: lane-instructions and the time spent in `Module::run`.
#[derive(Default)]
struct Work {
    lane_steps: u64,
    time: std::time::Duration,
    /// The same runs in this thread's CPU time (fairer than wall time on a loaded machine).
    cpu: std::time::Duration,
}

/// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, to the nanosecond: `/proc`'s schedstat
/// advances only at scheduler ticks, 4 ms here, longer than most runs).
fn thread_cpu() -> std::time::Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    std::time::Duration::new(
        t.tv_sec.try_into().unwrap_or(0),
        t.tv_nsec.try_into().unwrap_or(0),
    )
}

/// Runs one module of a case at one size; returns failures.
fn run_variant(
    case: &Case,
    words: &[u32],
    sizes: &[u32],
    lowered: bool,
    variant: &str,
    work: &mut Work,
) -> Vec<String> {
    let mut fails = Vec::new();
    for &local in &case.local_sizes {
        let spec = BTreeMap::from([(0u32, u64::from(local))]);
        // Translated once per local size and shared by every subgroup size and seed.
        let module = match Module::with_spec_constants(words, &spec) {
            Ok(m) => m,
            Err(e) => return vec![format!("{} [{variant}]: translation: {e}", case.name)],
        };
        // The inputs depend on the local size and the seed, not on the subgroup size.
        let inputs: Vec<Vec<u8>> = SEEDS
            .iter()
            .map(|&seed| {
                inputs::gen_inputs(case, local, seed, GROUPS)
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect()
            })
            .collect();
        for (&size, (seed, input)) in sizes
            .iter()
            .flat_map(|s| SEEDS.iter().zip(&inputs).map(move |x| (s, x)))
        {
            let seed = *seed;
            let what = format!("{} [{variant}] size {size}", case.name);
            let n = (GROUPS * local) as usize;
            let out_words = case.layout.out_words(n);
            let mut buffers = BTreeMap::new();
            buffers.insert((0, 0), input.clone());
            buffers.insert((0, 1), vec![0u8; out_words * 4]);
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_workgroups([GROUPS, 1, 1])
                .with_buffers(buffers)
                .with_seed(seed * 7919 + u64::from(size))
                .with_report_undefined(lowered)
                .with_threads(threads());
            let (t, cpu) = (std::time::Instant::now(), thread_cpu());
            let result = module.run(&d);
            work.time += t.elapsed();
            work.cpu += thread_cpu().saturating_sub(cpu);
            let out = match result {
                Ok(o) => {
                    work.lane_steps += o.lane_steps;
                    o
                }
                Err(e) => {
                    fails.push(format!("{what} local {local} seed {seed}: {e}"));
                    continue;
                }
            };
            let bytes = &out.buffers[&(0, 1)];
            let words: Vec<u32> = bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let recs = case.layout.decode(&words);
            let outcome = model::check(&case.layout, &recs, KeyEq::Spec);
            if outcome.mismatches != 0 || outcome.records == 0 {
                fails.push(format!(
                    "{what} local {local} seed {seed}: {} mismatches of {} ({:?}); records {}\n    {}",
                    outcome.mismatches,
                    outcome.checked,
                    outcome.by_result,
                    outcome.records,
                    outcome.details.join("\n    ")
                ));
            }
            if lowered && out.undefined_total != 0 {
                fails.push(format!(
                    "{what} local {local} seed {seed}: the lowered module read {} undefined values, first: {:?}",
                    out.undefined_total,
                    out.undefined.first()
                ));
            }
        }
    }
    fails
}

/// Test parts the cases are dealt into (round-robin by their index in the suite).
const PARTS: usize = 4;

/// Runs the cases of part `part` (of [`PARTS`]) at every size, native and lowered.
fn run_part(part: usize) {
    let filter = std::env::var("SPV_CONFORMANCE_FILTER").unwrap_or_default();
    let sizes = sizes();
    let mut fails = Vec::new();
    let mut runs = 0usize;
    let mut work = Work::default();
    let start = std::time::Instant::now();
    for case in shaders::all_cases()
        .iter()
        .enumerate()
        .filter(|(i, c)| i % PARTS == part && c.name.contains(&filter))
        .map(|x| x.1)
    {
        let native = compile(&case.glsl, case.env);
        let presets: Vec<&str> = case.presets.clone().unwrap_or_else(|| PRESETS.to_vec());
        fails.extend(run_variant(
            case, &native, &sizes, false, "native", &mut work,
        ));
        runs += sizes.len();
        if matches!(case.family, Family::CoreArith | Family::CoreVote) {
            continue;
        }
        for p in presets {
            let Some(target) = Target::preset(p) else {
                fails.push(format!("{}: no preset `{p}`", case.name));
                continue;
            };
            let (min, max) = (target.min_subgroup_size, target.max_subgroup_size);
            let opts = LowerOptions::new(target)
                .with_subgroup_size(None)
                .with_float_partition(FloatPartition::Spec);
            let w = match lower_words(&native, &opts) {
                Ok((w, _)) => w,
                Err(e) => {
                    fails.push(format!("{} [lowered:{p}]: lowering failed: {e}", case.name));
                    continue;
                }
            };
            let in_range: Vec<u32> = sizes
                .iter()
                .copied()
                .filter(|s| (min..=max).contains(s))
                .collect();
            let variant = format!("lowered:{p}");
            fails.extend(run_variant(case, &w, &in_range, true, &variant, &mut work));
            runs += in_range.len();
        }
    }
    println!(
        "simulator conformance part {part}/{PARTS}: {runs} (case, variant, size) runs at sizes {sizes:?} in {:.1?}",
        start.elapsed()
    );
    println!(
        "simulator throughput: {} lane-instructions in {:.4} s of Module::run ({:.4} s of this thread's CPU time) = {:.1} million lane-instructions/s ({:.1} per CPU second)",
        work.lane_steps,
        work.time.as_secs_f64(),
        work.cpu.as_secs_f64(),
        work.lane_steps as f64 / work.time.as_secs_f64().max(1e-9) / 1e6,
        work.lane_steps as f64 / work.cpu.as_secs_f64().max(1e-9) / 1e6
    );
    print_failures(&fails);
    // Every failing (case, variant) with its count, so one run shows the whole picture.
    let mut by_case: BTreeMap<String, usize> = BTreeMap::new();
    for f in &fails {
        let key = f.split(" size ").next().unwrap_or(f).to_owned();
        *by_case.entry(key).or_default() += 1;
    }
    for (k, n) in &by_case {
        println!("FAILING {k}: {n} runs");
    }
    assert!(
        fails.is_empty(),
        "{} failures (first ones above)",
        fails.len()
    );
    assert!(
        runs > 0 || !filter.is_empty(),
        "part {part} has no cases: PARTS is larger than the suite"
    );
}

#[test]
fn part_0() {
    run_part(0);
}

#[test]
fn part_1() {
    run_part(1);
}

#[test]
fn part_2() {
    run_part(2);
}

#[test]
fn part_3() {
    run_part(3);
}

/// The partition cases lowered with every form forced (`LowerOptions::partition_form`), for
/// `vulkan1.1` with the size unknown and known: each form must match the model at every size,
/// not only the form the lowering picks for the case's key type. Two tests of two forms each, so
/// they run in parallel (together they were the suite's longest test).
#[test]
fn partition_forms_bit_sliced_first_round() {
    partition_forms(&[PartitionForm::BitSliced, PartitionForm::FirstRound]);
}

/// See [`partition_forms_bit_sliced_first_round`].
#[test]
fn partition_forms_differing_bits_waterfall() {
    partition_forms(&[PartitionForm::DifferingBits, PartitionForm::Waterfall]);
}

fn partition_forms(forms: &[PartitionForm]) {
    let filter = std::env::var("SPV_CONFORMANCE_FILTER").unwrap_or_default();
    let sizes = sizes();
    let mut fails = Vec::new();
    let mut runs = 0usize;
    let mut work = Work::default();
    for case in shaders::all_cases()
        .iter()
        .filter(|c| c.family == Family::Partition && c.name.contains(&filter))
    {
        let native = compile(&case.glsl, case.env);
        for &form in forms {
            for size in [None, Some(32)] {
                let opts = LowerOptions::new(Target::preset("vulkan1.1").expect("preset"))
                    .with_subgroup_size(size)
                    .with_float_partition(FloatPartition::Spec)
                    .with_partition_form(form);
                let variant = format!("lowered:vulkan1.1:{form:?}:{size:?}");
                let w = match lower_words(&native, &opts) {
                    Ok((w, _)) => w,
                    Err(e) => {
                        fails.push(format!("{} [{variant}]: lowering failed: {e}", case.name));
                        continue;
                    }
                };
                let at: Vec<u32> = sizes
                    .iter()
                    .copied()
                    .filter(|s| size.is_none_or(|n| *s <= n))
                    .collect();
                fails.extend(run_variant(case, &w, &at, true, &variant, &mut work));
                runs += at.len();
            }
        }
    }
    println!(
        "partition forms {forms:?} in the simulator: {runs} (case, form, size) runs at sizes {sizes:?}"
    );
    assert_no_failures(&fails);
    assert!(runs > 0 || !filter.is_empty(), "no partition case ran");
}

/// `native` emulated at `n` and lowered for `target`, checked by our validator for the target
/// and by spirv-val in the target's environment, as every lowered module must be.
fn emulate(native: &[u32], target: Target, n: u32) -> Result<Vec<u32>, String> {
    let env = target.target_env.clone();
    let opts = LowerOptions::default()
        .with_target(target)
        .with_emulated_subgroup_size(Some(n));
    let (words, _) = spv_subgroup_lower::lower_and_verify(native, &opts, None)
        .map_err(|e| format!("lowering or our validator: {e}"))?;
    tools::spirv_val(&words, &env).map_err(|e| format!("spirv-val: {e}"))?;
    Ok(words)
}

/// The emulated subgroup sizes the `emulated_*` tests prove.
const EMULATED: [u32; 4] = [4, 8, 16, 32];

/// The hardware sizes an emulation of `n` lanes runs at: every power of two from `n` to 128
/// (translating and lowering the modules take most of the time, so the full range costs about a
/// fifth more than `n`, `2n`, 64 and 128 alone).
fn hardware_sizes(n: u32) -> Vec<u32> {
    (0..8).map(|k| 1u32 << k).filter(|&h| h >= n).collect()
}

/// One dispatch's output words and how many undefined values it read.
struct Ran {
    words: Vec<Vec<u32>>,
    undefined: u64,
    first_undefined: String,
}

/// Runs `module` at `size` with the given buffers (binding -> bytes) and undefined-value seed.
fn dispatch(
    module: &Module,
    buffers: &BTreeMap<(u32, u32), Vec<u8>>,
    groups: u32,
    size: u32,
    seed: u64,
    work: &mut Work,
) -> Result<Ran, String> {
    let d = Dispatch::default()
        .with_subgroup_size(size)
        .with_workgroups([groups, 1, 1])
        .with_buffers(buffers.clone())
        .with_seed(seed)
        .with_report_undefined(true);
    let t = std::time::Instant::now();
    let out = module.run(&d).map_err(|e| e.to_string())?;
    work.time += t.elapsed();
    work.lane_steps += out.lane_steps;
    let words = out
        .buffers
        .values()
        .map(|b| {
            b.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
        .collect();
    Ok(Ran {
        words,
        undefined: out.undefined_total,
        first_undefined: format!("{:?}", out.undefined.first()),
    })
}

/// The emulated module's dispatches at every hardware size up to `max` (the target's largest)
/// against the original's at `n`.
/// `reference` holds the original's output under two undefined-value seeds: a word that differs
/// between them is undefined and not compared. Returns failures; `check` may add its own.
#[allow(clippy::too_many_arguments)] // One comparison's whole context.
fn compare_emulated(
    what: &str,
    emulated: &Module,
    buffers: &BTreeMap<(u32, u32), Vec<u8>>,
    groups: u32,
    (n, max): (u32, u32),
    reference: &[Ran; 2],
    work: &mut Work,
    check: &mut dyn FnMut(&Ran) -> Option<String>,
) -> (usize, Vec<String>) {
    let mut fails = Vec::new();
    let mut runs = 0;
    for h in hardware_sizes(n).into_iter().filter(|&h| h <= max) {
        let what = format!("{what} emulated {n} at hardware size {h}");
        let ran = match dispatch(emulated, buffers, groups, h, 17 + u64::from(h), work) {
            Ok(r) => r,
            Err(e) => {
                fails.push(format!("{what}: {e}"));
                continue;
            }
        };
        runs += 1;
        let mut differ = Vec::new();
        let mut compared = 0usize;
        for (b, ((x, y), got)) in reference[0]
            .words
            .iter()
            .zip(&reference[1].words)
            .zip(&ran.words)
            .enumerate()
        {
            for (i, ((x, y), g)) in x.iter().zip(y).zip(got).enumerate() {
                if x != y {
                    continue;
                }
                compared += 1;
                if g != x {
                    differ.push(format!("buffer {b} word {i}: {g:#x}, at size {n} {x:#x}"));
                }
            }
        }
        if compared == 0 {
            fails.push(format!("{what}: no defined output word to compare"));
        }
        if !differ.is_empty() {
            fails.push(format!(
                "{what}: {} of {compared} words differ from the original at size {n}; first: {}",
                differ.len(),
                differ[..differ.len().min(4)].join("; ")
            ));
        }
        if reference[0].undefined == 0 && ran.undefined != 0 {
            fails.push(format!(
                "{what}: read {} undefined values where the original at {n} reads none; first: {}",
                ran.undefined, ran.first_undefined
            ));
        }
        if let Some(f) = check(&ran) {
            fails.push(format!("{what}: {f}"));
        }
    }
    (runs, fails)
}

/// Emulates the cases of part `part` (of [`PARTS`]) at every size of [`EMULATED`].
fn run_emulated_part(part: usize) {
    let filter = std::env::var("SPV_CONFORMANCE_FILTER").unwrap_or_default();
    let start = std::time::Instant::now();
    let mut fails = Vec::new();
    let mut runs = 0usize;
    let mut work = Work::default();
    for case in shaders::all_cases()
        .iter()
        .enumerate()
        .filter(|(i, c)| i % PARTS == part && c.name.contains(&filter))
        .map(|x| x.1)
    {
        let native = compile(&case.glsl, case.env);
        for n in EMULATED {
            let emulated = match emulate(&native, Target::preset("vulkan1.1").expect("preset"), n) {
                Ok(w) => w,
                Err(e) => {
                    fails.push(format!("{} emulated {n}: {e}", case.name));
                    continue;
                }
            };
            for &local in &case.local_sizes {
                let spec = BTreeMap::from([(0u32, u64::from(local))]);
                let modules = Module::with_spec_constants(&native, &spec)
                    .and_then(|a| Ok((a, Module::with_spec_constants(&emulated, &spec)?)));
                let (original, emulated) = match modules {
                    Ok(m) => m,
                    Err(e) => {
                        fails.push(format!("{} emulated {n}: translation: {e}", case.name));
                        continue;
                    }
                };
                for seed in SEEDS {
                    let inp = inputs::gen_inputs(case, local, seed, GROUPS);
                    let out_words = case.layout.out_words((GROUPS * local) as usize);
                    let buffers = BTreeMap::from([
                        ((0, 0), inp.iter().flat_map(|w| w.to_le_bytes()).collect()),
                        ((0, 1), vec![0u8; out_words * 4]),
                    ]);
                    let what = format!("{} local {local} seed {seed}", case.name);
                    let reference = [1u64, 2].map(|u| {
                        dispatch(&original, &buffers, GROUPS, n, seed * 7919 + u, &mut work)
                    });
                    let reference = match reference {
                        [Ok(a), Ok(b)] => [a, b],
                        [Err(e), _] | [_, Err(e)] => {
                            fails.push(format!("{what}: the original at {n}: {e}"));
                            continue;
                        }
                    };
                    let mut check = |ran: &Ran| {
                        let recs = case.layout.decode(&ran.words[1]);
                        let o = model::check(&case.layout, &recs, KeyEq::Spec);
                        (o.mismatches != 0 || o.records == 0).then(|| {
                            format!(
                                "the model: {} mismatches of {} ({:?}); records {}",
                                o.mismatches, o.checked, o.by_result, o.records
                            )
                        })
                    };
                    let (r, f) = compare_emulated(
                        &what,
                        &emulated,
                        &buffers,
                        GROUPS,
                        (n, 128),
                        &reference,
                        &mut work,
                        &mut check,
                    );
                    runs += r;
                    fails.extend(f);
                }
            }
        }
    }
    println!(
        "emulated part {part}/{PARTS}: {runs} (case, N, local, seed, hardware size) runs in {:.1?} ({:.2?} in Module::run)",
        start.elapsed(),
        work.time
    );
    assert_no_failures(&fails);
    assert!(
        runs > 0 || !filter.is_empty(),
        "emulated part {part} has no cases"
    );
}

#[test]
fn emulated_0() {
    run_emulated_part(0);
}

#[test]
fn emulated_1() {
    run_emulated_part(1);
}

#[test]
fn emulated_2() {
    run_emulated_part(2);
}

#[test]
fn emulated_3() {
    run_emulated_part(3);
}

/// The README example (`fixtures/examples/partitioned_vote.comp`: partition, partitioned add,
/// the KHR votes in divergent control flow), emulated at every size from 1 to 64 for
/// `vulkan1.1`, `lavapipe` and `naga`, through `lower_words` and `lower` (on a loaded module),
/// against the original at N and the example's host model.
#[test]
fn emulated_example() {
    let src = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let native = tools::compile_glsl(&src, "vulkan1.1").unwrap_or_else(|e| panic!("glslang: {e}"));
    let original = Module::new(&native).expect("translate the example");
    let lanes = example::LANES;
    let keys = example::keys();
    let buffers = BTreeMap::from([
        ((0, 0), keys.iter().flat_map(|w| w.to_le_bytes()).collect()),
        ((0, 1), vec![0u8; lanes * 16]),
        ((0, 2), vec![0u8; lanes * 4]),
        ((0, 3), vec![0u8; lanes * 4]),
    ]);
    let mut work = Work::default();
    let mut fails = Vec::new();
    let (mut runs, mut expected) = (0, 0);
    for n in [1, 2, 4, 8, 16, 32, 64] {
        let reference = [1u64, 2]
            .map(|u| dispatch(&original, &buffers, 1, n, u, &mut work).expect("the original"));
        let (masks, sums, flags) = example::model(&keys, n as usize);
        let mut check = |ran: &Ran| {
            let mask_words: Vec<u32> = masks.iter().flatten().copied().collect();
            (ran.words[1] != mask_words || ran.words[2] != sums || ran.words[3] != flags)
                .then(|| format!("differs from the example's model at size {n}"))
        };
        for preset in ["vulkan1.1", "lavapipe", "naga"] {
            let target = Target::preset(preset).expect("preset");
            let max = target.max_subgroup_size;
            let opts = LowerOptions::default()
                .with_target(target)
                .with_emulated_subgroup_size(Some(n));
            if n > max {
                // Refused, not run: the target's subgroups are smaller than N.
                let err = lower_words(&native, &opts).expect_err("N above the target's sizes");
                assert!(err.to_string().contains("at most"), "{err}");
                continue;
            }
            let emulated = emulate(&native, opts.target.clone(), n)
                .unwrap_or_else(|e| panic!("emulating {n} for {preset}: {e}"));
            // The same through `lower` on a loaded module (the Rust API's other entry).
            let mut loaded = spv_subgroup_lower::load(&native).expect("load").module;
            spv_subgroup_lower::lower(&mut loaded, &opts)
                .unwrap_or_else(|e| panic!("lower (dr::Module) {n} for {preset}: {e}"));
            let whole = spv_subgroup_lower::assemble(loaded, &[]);
            tools::spirv_val(&whole, &Target::preset(preset).expect("preset").target_env)
                .unwrap_or_else(|e| panic!("lower (dr::Module) {n} for {preset}: {e}"));
            for (api, words) in [("lower_words", &emulated), ("lower", &whole)] {
                let module = Module::new(words).expect("translate the emulated example");
                expected += hardware_sizes(n).iter().filter(|&&h| h <= max).count();
                let what = format!("README example for {preset} ({api})");
                let (r, f) = compare_emulated(
                    &what,
                    &module,
                    &buffers,
                    1,
                    (n, max),
                    &reference,
                    &mut work,
                    &mut check,
                );
                runs += r;
                fails.extend(f);
            }
        }
    }
    println!(
        "emulated README example: {runs} runs in {:.2?} of Module::run",
        work.time
    );
    assert_no_failures(&fails);
    assert!(expected >= 50, "too few sizes: {expected}");
    assert_eq!(runs, expected, "every (N, preset, size) ran");
}

/// Every built-in and op the emulation rewrites (and those it keeps), in divergent control flow,
/// 40 words per invocation; `emulated_ops` compares them with the original at N.
const ALL_OPS: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#extension GL_KHR_shader_subgroup_clustered : require
#extension GL_KHR_shader_subgroup_quad : require
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { uint inp[]; };
layout(std430, binding = 1) buffer Out { uint o[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint x = inp[i];
    uint k = i * 40u;
    o[k + 0u] = gl_SubgroupSize;
    o[k + 1u] = gl_SubgroupInvocationID;
    o[k + 2u] = gl_SubgroupID;
    o[k + 3u] = gl_NumSubgroups;
    o[k + 4u] = gl_SubgroupEqMask.x ^ (gl_SubgroupEqMask.y << 1);
    o[k + 5u] = gl_SubgroupGeMask.x;
    o[k + 6u] = gl_SubgroupGtMask.y;
    o[k + 7u] = gl_SubgroupLeMask.x;
    o[k + 8u] = gl_SubgroupLtMask.x | gl_SubgroupLtMask.z;
    if ((x & 3u) != 0u) {
        o[k + 9u] = subgroupElect() ? 1u : 0u;
        uvec4 b = subgroupBallot((x & 4u) != 0u);
        o[k + 10u] = b.x;
        o[k + 11u] = b.y | b.z | b.w;
        o[k + 12u] = subgroupInverseBallot(b) ? 1u : 0u;
        o[k + 13u] = subgroupBallotBitCount(b);
        o[k + 14u] = subgroupBallotInclusiveBitCount(b);
        o[k + 15u] = subgroupBallotExclusiveBitCount(b);
        o[k + 16u] = subgroupBallotFindLSB(b | uvec4(0x80000000u));
        o[k + 17u] = subgroupBallotFindMSB(b | uvec4(1u));
        o[k + 18u] = subgroupBallotBitExtract(b, 1u) ? 1u : 0u;
        o[k + 19u] = subgroupBroadcastFirst(x);
        o[k + 20u] = subgroupBroadcast(x, 1u);
        o[k + 21u] = subgroupShuffle(x, (x >> 5) & (gl_SubgroupSize - 1u));
        o[k + 22u] = subgroupShuffleXor(x, 1u);
        o[k + 23u] = subgroupShuffleUp(x, 1u);
        o[k + 24u] = subgroupShuffleDown(x, 2u);
        o[k + 25u] = subgroupAll(x > 50u) ? 1u : 0u;
        o[k + 26u] = subgroupAny(x > 200u) ? 1u : 0u;
        o[k + 27u] = subgroupAllEqual(x & 8u) ? 1u : 0u;
        o[k + 28u] = subgroupAdd(x);
        o[k + 29u] = subgroupInclusiveMax(x);
        o[k + 30u] = subgroupExclusiveAdd(x);
        o[k + 31u] = subgroupClusteredAdd(x, 4u);
        o[k + 32u] = subgroupQuadBroadcast(x, 1u);
        o[k + 33u] = subgroupQuadSwapHorizontal(x);
        o[k + 34u] = floatBitsToUint(subgroupMin(float(x) * 0.5));
        o[k + 35u] = subgroupAnd(x | 1u);
        o[k + 36u] = subgroupInclusiveOr(x);
        o[k + 37u] = subgroupAllEqual(float(x & 16u)) ? 1u : 0u;
        o[k + 38u] = subgroupAny(subgroupElect() && x > 100u) ? 1u : 0u;
        o[k + 39u] = subgroupBroadcastFirst(uvec2(x, k)).y;
    }
}
"#;

/// [`ALL_OPS`] emulated at every size of [`EMULATED`] and 64 for `vulkan1.1` and `naga` (whose
/// lowering rewrites most of what the emulation emits), at local sizes 37 and 128, against
/// the original at N.
#[test]
fn emulated_ops() {
    let native = compile(ALL_OPS, "vulkan1.1");
    let literal_size: BTreeMap<u32, Vec<u32>> = [37u32, 128]
        .into_iter()
        .map(|local| {
            let text = ALL_OPS.replace(
                "layout(local_size_x_id = 0) in;",
                &format!("layout(local_size_x = {local}) in;"),
            );
            assert_ne!(
                text, ALL_OPS,
                "the shader names its size by a specialization constant"
            );
            (local, compile(&text, "vulkan1.1"))
        })
        .collect();
    let groups = 2;
    let mut work = Work::default();
    let mut fails = Vec::new();
    let mut runs = 0;
    for local in [37u32, 128] {
        let spec = BTreeMap::from([(0u32, u64::from(local))]);
        let original = Module::with_spec_constants(&native, &spec).expect("translate");
        let n_inv = (groups * local) as usize;
        let inp: Vec<u32> = (0..n_inv as u32)
            .map(|i| i.wrapping_mul(2_654_435_761).rotate_left(7) % 256)
            .collect();
        let buffers = BTreeMap::from([
            ((0, 0), inp.iter().flat_map(|w| w.to_le_bytes()).collect()),
            ((0, 1), vec![0u8; n_inv * 40 * 4]),
        ]);
        for n in [4, 8, 16, 32, 64] {
            let reference = [1u64, 2].map(|u| {
                dispatch(&original, &buffers, groups, n, u, &mut work).expect("the original")
            });
            for preset in ["vulkan1.1", "naga"] {
                // naga 30's validator refuses specialization constants (a workgroup size by
                // `local_size_x_id`), so `lower --target naga` refuses this shader as the input's
                // (fixtures/lower/naga/spec_workgroup_size.comp): for naga the same shader is
                // compiled with the size as a literal.
                let source = if preset == "naga" {
                    literal_size[&local].clone()
                } else {
                    native.clone()
                };
                let emulated = match emulate(&source, Target::preset(preset).expect("preset"), n) {
                    Ok(w) => w,
                    Err(e) => {
                        fails.push(format!("emulating {n} for {preset}: {e}"));
                        continue;
                    }
                };
                let module = Module::with_spec_constants(&emulated, &spec).expect("translate");
                let what = format!("every op for {preset}, local {local}");
                let (r, f) = compare_emulated(
                    &what,
                    &module,
                    &buffers,
                    groups,
                    (n, 128),
                    &reference,
                    &mut work,
                    &mut |_| None,
                );
                runs += r;
                fails.extend(f);
            }
        }
    }
    println!(
        "emulated ops: {runs} runs in {:.2?} of Module::run",
        work.time
    );
    assert_no_failures(&fails);
    // Per (local, preset): 6 sizes for N = 4, 5 for 8, 4 for 16, 3 for 32, 2 for 64.
    assert_eq!(runs, 2 * 2 * 20, "every (local, preset, N, size) ran");
}

/// Built-ins read other than by a plain `OpLoad` of the variable (`fixtures/reliability/`:
/// through `OpCopyMemory`, through `OpCopyObject`s of the pointer, through access chains into a
/// mask and copies of those), emulated at 1, 4 and 8 for `vulkan1.1` through `lower_words` and
/// `lower`, against the original at N: the emulation must read the virtual lane id, size and
/// masks, not the hardware's (the outputs differ at every hardware size above N otherwise).
#[test]
fn emulated_builtin_reads_through_copies() {
    let mut work = Work::default();
    let mut fails = Vec::new();
    let mut runs = 0;
    for fixture in ["emulate_copy_memory.spvasm", "emulate_copy_object.spvasm"] {
        let path = tools::workspace_root()
            .join("fixtures/reliability")
            .join(fixture);
        let text = std::fs::read_to_string(&path).expect("fixture");
        let native = tools::assemble(&text, "vulkan1.1").unwrap_or_else(|e| panic!("{e}"));
        tools::spirv_val(&native, "vulkan1.1").unwrap_or_else(|e| panic!("{fixture}: {e}"));
        let original = Module::new(&native).expect("translate");
        let buffers = BTreeMap::from([((0, 1), vec![0u8; 64 * 3 * 4])]);
        for n in [1, 4, 8] {
            let reference = [1u64, 2]
                .map(|u| dispatch(&original, &buffers, 1, n, u, &mut work).expect("the original"));
            let target = Target::preset("vulkan1.1").expect("preset");
            let opts = LowerOptions::default()
                .with_target(target.clone())
                .with_emulated_subgroup_size(Some(n));
            let streamed = emulate(&native, target, n)
                .unwrap_or_else(|e| panic!("{fixture} emulating {n}: {e}"));
            let mut loaded = spv_subgroup_lower::load(&native).expect("load").module;
            spv_subgroup_lower::lower(&mut loaded, &opts)
                .unwrap_or_else(|e| panic!("{fixture} lower (dr::Module) {n}: {e}"));
            let whole = spv_subgroup_lower::assemble(loaded, &[]);
            tools::spirv_val(&whole, "vulkan1.1")
                .unwrap_or_else(|e| panic!("{fixture} lower (dr::Module) {n}: {e}"));
            for (api, words) in [("lower_words", &streamed), ("lower", &whole)] {
                let module = Module::new(words).expect("translate the emulated module");
                let (r, f) = compare_emulated(
                    &format!("{fixture} ({api})"),
                    &module,
                    &buffers,
                    1,
                    (n, 128),
                    &reference,
                    &mut work,
                    &mut |_| None,
                );
                runs += r;
                fails.extend(f);
            }
        }
    }
    assert_no_failures(&fails);
    // Per fixture and API: 8 hardware sizes for N = 1, 6 for 4, 5 for 8.
    assert_eq!(runs, 2 * 2 * 19, "every (fixture, API, N, size) ran");
}

/// Prints the first 40 failures (the assertion message then points at them).
fn print_failures(fails: &[String]) {
    for f in fails.iter().take(40) {
        println!("FAIL {f}");
    }
}

/// Fails the test when there are failures, printing the first ones.
fn assert_no_failures(fails: &[String]) {
    print_failures(fails);
    assert!(
        fails.is_empty(),
        "{} failures (first ones above)",
        fails.len()
    );
}
