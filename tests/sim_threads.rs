//! The simulator's workgroups on several threads (`Dispatch::with_threads`, issue 25): every
//! dispatch here runs at 1, 2, 3 and 8 threads and the outcomes must be identical (buffers,
//! undefined values reported and counted, steps, lane-steps, memory objects, size reads, or the
//! error's text). The modules: the conformance shaders (native, every local size, two subgroup
//! sizes), random programs (`sim_random_gen.rs`), the three `cargo xtask bench sim` kernels, and
//! shaders written to race: workgroups writing the same words, an atomic counter handing out
//! slots, a chain where each workgroup reads what the one before wrote, atomics whose results
//! are unused next to a read of the same word (and a 64-bit one read by its high word),
//! uninitialised memory, and errors in a middle workgroup (an endless loop, a barrier in
//! divergent control flow, an out-of-bounds write, the step limit passed by the running total). The racy shaders' results are also checked against
//! what running the workgroups in order gives, computed here.

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

#[path = "sim_random_gen.rs"]
#[allow(dead_code)]
mod gen;
#[path = "conformance_inputs.rs"]
mod inputs;
#[path = "conformance_model.rs"]
#[allow(dead_code)] // Shared with the lavapipe harness, which uses all of it.
mod model;
#[path = "conformance_shaders.rs"]
#[allow(dead_code)]
mod shaders;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use spv_subgroup_sim::{Dispatch, Module, SizeRead, Undefined};
use spv_subgroup_tests::tools;

/// The thread counts compared; the first is the sequential reference.
const THREADS: [usize; 4] = [1, 2, 3, 8];

/// Everything a dispatch's caller can see.
#[derive(Debug, PartialEq)]
enum Seen {
    Ran {
        buffers: BTreeMap<(u32, u32), Vec<u8>>,
        undefined: Vec<Undefined>,
        undefined_total: u64,
        steps: u64,
        lane_steps: u64,
        memory_objects: usize,
        size_reads: Vec<SizeRead>,
    },
    Failed(String),
}

impl Seen {
    fn buffer(&self, b: (u32, u32)) -> Vec<u32> {
        match self {
            Seen::Ran { buffers, .. } => buffers[&b]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            Seen::Failed(e) => panic!("the dispatch failed: {e}"),
        }
    }
}

fn see(module: &Module, d: &Dispatch) -> Seen {
    match module.run(d) {
        Ok(o) => Seen::Ran {
            buffers: o.buffers,
            undefined: o.undefined,
            undefined_total: o.undefined_total,
            steps: o.steps,
            lane_steps: o.lane_steps,
            memory_objects: o.memory_objects,
            size_reads: o.size_reads,
        },
        Err(e) => Seen::Failed(e.to_string()),
    }
}

/// What differs between two outcomes, briefly.
fn difference(a: &Seen, b: &Seen) -> String {
    match (a, b) {
        (
            Seen::Ran {
                buffers: ba,
                undefined: ua,
                undefined_total: ta,
                steps: sa,
                lane_steps: la,
                memory_objects: ma,
                size_reads: ra,
            },
            Seen::Ran {
                buffers: bb,
                undefined: ub,
                undefined_total: tb,
                steps: sb,
                lane_steps: lb,
                memory_objects: mb,
                size_reads: rb,
            },
        ) => {
            for (k, va) in ba {
                let vb = &bb[k];
                if let Some(i) = (0..va.len()).find(|&i| va.get(i) != vb.get(i)) {
                    return format!("buffer {k:?} byte {i}: {:?} vs {:?}", va[i], vb.get(i));
                }
            }
            format!(
                "undefined {} vs {} ({ta} vs {tb}), steps {sa} vs {sb}, lane steps {la} vs {lb}, \
                 memory objects {ma} vs {mb}, size reads {} vs {}, first undefined {:?} vs {:?}",
                ua.len(),
                ub.len(),
                ra.len(),
                rb.len(),
                ua.first(),
                ub.first()
            )
        }
        _ => format!("{a:?}\n  vs\n{b:?}").chars().take(2000).collect(),
    }
}

/// Runs `d` at every thread count; the sequential outcome, or what differed.
fn same_at_every_thread_count(module: &Module, d: &Dispatch, what: &str) -> Result<Seen, String> {
    let want = see(module, &d.clone().with_threads(THREADS[0]));
    for t in &THREADS[1..] {
        let got = see(module, &d.clone().with_threads(*t));
        if got != want {
            return Err(format!(
                "{what}: {t} threads differ from 1: {}",
                difference(&want, &got)
            ));
        }
    }
    Ok(want)
}

fn compile(glsl: &str, env: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("case.comp");
    std::fs::write(&path, glsl).expect("write");
    tools::compile_glsl(&path, env).unwrap_or_else(|e| panic!("glslang: {e}\n{glsl}"))
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn report(fails: &[String], runs: usize, what: &str) {
    for f in fails.iter().take(10) {
        println!("FAIL {f}");
    }
    assert!(fails.is_empty(), "{} of {runs} {what} differ", fails.len());
    assert!(runs > 0, "no {what} ran");
    println!("{runs} {what}: identical at {THREADS:?} threads");
}

#[test]
fn conformance_shaders_are_the_same_at_every_thread_count() {
    const GROUPS: u32 = 6;
    let (mut runs, mut fails) = (0, Vec::new());
    for case in shaders::all_cases() {
        let words = compile(&case.glsl, case.env);
        for &local in &case.local_sizes {
            let spec = BTreeMap::from([(0u32, u64::from(local))]);
            let module = Module::with_spec_constants(&words, &spec)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            let input = bytes(&inputs::gen_inputs(&case, local, 1, GROUPS));
            let out_words = case.layout.out_words((GROUPS * local) as usize);
            for size in [4, 32] {
                let d = Dispatch::default()
                    .with_subgroup_size(size)
                    .with_workgroups([GROUPS, 1, 1])
                    .with_buffer((0, 0), input.clone())
                    .with_buffer((0, 1), vec![0u8; out_words * 4])
                    .with_seed(u64::from(size))
                    .with_report_undefined(true)
                    .with_trace_size(true);
                let what = format!("{} local {local} size {size}", case.name);
                if let Err(e) = same_at_every_thread_count(&module, &d, &what) {
                    fails.push(e);
                }
                runs += 1;
            }
        }
    }
    report(&fails, runs, "conformance dispatches");
}

#[test]
fn random_programs_are_the_same_at_every_thread_count() {
    const GROUPS: u32 = 5;
    let (mut runs, mut fails) = (0, Vec::new());
    for seed in 0..16u64 {
        let program = gen::generate(seed);
        let words = compile(&program.glsl, "vulkan1.1");
        let mut r = gen::Rng::new(seed ^ 0x7417);
        let size = *r.pick(&[1u32, 4, 16, 32, 64]);
        let local = (r.below(128) + 1) as u32;
        let spec = BTreeMap::from([(0u32, u64::from(local))]);
        let module = Module::with_spec_constants(&words, &spec)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let n = (GROUPS * local) as usize;
        let input: Vec<u32> = (0..n).map(|_| r.next() as u32 % 97).collect();
        let d = Dispatch::default()
            .with_subgroup_size(size)
            .with_workgroups([GROUPS, 1, 1])
            .with_buffer((0, 0), bytes(&input))
            .with_buffer((0, 1), vec![0u8; n * gen::SLOTS as usize * 4])
            .with_seed(seed)
            .with_report_undefined(true)
            .with_trace_size(true);
        let what = format!("random program {seed} size {size} local {local}");
        if let Err(e) = same_at_every_thread_count(&module, &d, &what) {
            fails.push(e);
        }
        runs += 1;
    }
    report(&fails, runs, "random programs");
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn bench_kernels_are_the_same_at_every_thread_count() {
    // The kernels of `cargo xtask bench sim` at 24 workgroups of 256 (the benchmark runs 256).
    const GROUPS: u32 = 24;
    let n = (GROUPS * 256) as usize;
    let input = |len: usize, salt: u32| -> Vec<u8> {
        bytes(
            &(0..len as u32)
                .map(|i| i.wrapping_mul(2_654_435_761) ^ salt)
                .collect::<Vec<_>>(),
        )
    };
    let kernels = [
        ("loop.comp", input(n, 1), n),
        ("reduce.comp", input(n * 16, 2), 1 + GROUPS as usize),
        ("histogram.comp", input(n, 3), 256),
    ];
    let (mut runs, mut fails) = (0, Vec::new());
    for (file, inp, out_words) in kernels {
        let path = workspace().join("xtask/bench_sim").join(file);
        let words = tools::compile_glsl(&path, "vulkan1.1")
            .unwrap_or_else(|e| panic!("glslang {file}: {e}"));
        let module = Module::new(&words).unwrap_or_else(|e| panic!("{file}: {e}"));
        for size in [16, 64] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_workgroups([GROUPS, 1, 1])
                .with_buffer((0, 0), inp.clone())
                .with_buffer((0, 1), vec![0u8; out_words * 4])
                .with_report_undefined(true);
            match same_at_every_thread_count(&module, &d, &format!("{file} size {size}")) {
                Ok(Seen::Failed(e)) => fails.push(format!("{file} size {size} failed: {e}")),
                Ok(_) => {}
                Err(e) => fails.push(e),
            }
            runs += 1;
        }
    }
    report(&fails, runs, "bench kernel dispatches");
}

/// Workgroups of the racy shaders: enough to run ahead of the commit at every thread count.
const RACY_GROUPS: u32 = 40;

/// Runs a racy shader at every thread count with a zeroed output buffer of `out_words`.
fn racy(glsl: &str, out_words: usize, limit: Option<u64>) -> Seen {
    let module = Module::new(&compile(glsl, "vulkan1.1")).expect("translates");
    let mut d = Dispatch::default()
        .with_subgroup_size(16)
        .with_workgroups([RACY_GROUPS, 1, 1])
        .with_buffer((0, 0), vec![0u8; out_words * 4])
        .with_report_undefined(true);
    if let Some(limit) = limit {
        d = d.with_step_limit(limit);
    }
    same_at_every_thread_count(&module, &d, "racy shader").unwrap_or_else(|e| panic!("{e}"))
}

const SAME_WORDS: &str = r#"#version 450
layout(local_size_x = 48) in;
layout(std430, binding = 0) buffer Out { uint last; uint words[]; };
void main() {
    uint wg = gl_WorkGroupID.x, l = gl_LocalInvocationIndex;
    words[l] = wg * 1000u + l;
    if (l == 0u) { last = wg; }
}
"#;

#[test]
fn workgroups_writing_the_same_words_leave_the_last_ones_values() {
    let out = racy(SAME_WORDS, 49, None).buffer((0, 0));
    let last = RACY_GROUPS - 1;
    let want: Vec<u32> = std::iter::once(last)
        .chain((0..48).map(|l| last * 1000 + l))
        .collect();
    assert_eq!(out, want);
}

const SLOT_COUNTER: &str = r#"#version 450
layout(local_size_x = 24) in;
layout(std430, binding = 0) buffer Out { uint counter; uint slots[]; };
void main() {
    uint s = atomicAdd(counter, 1u);
    slots[s] = gl_GlobalInvocationID.x;
}
"#;

#[test]
fn an_atomic_counter_hands_out_slots_in_workgroup_order() {
    let n = RACY_GROUPS * 24;
    let out = racy(SLOT_COUNTER, 1 + n as usize, None).buffer((0, 0));
    // In order: workgroup by workgroup, lane by lane, slot k goes to invocation k.
    let want: Vec<u32> = std::iter::once(n).chain(0..n).collect();
    assert_eq!(out, want);
}

const CHAIN: &str = r#"#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer Out { uint chain[]; };
void main() {
    uint wg = gl_WorkGroupID.x;
    if (gl_LocalInvocationIndex == 3u) { chain[wg + 1u] = chain[wg] + wg + 1u; }
}
"#;

#[test]
fn each_workgroup_reads_what_the_one_before_wrote() {
    let out = racy(CHAIN, RACY_GROUPS as usize + 1, None).buffer((0, 0));
    let want: Vec<u32> = (0..=RACY_GROUPS).map(|k| k * (k + 1) / 2).collect();
    assert_eq!(out, want);
}

const UNUSED_ATOMICS: &str = r#"#version 450
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Out { uint total; uint maxv; uint bits; uint seen[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    atomicAdd(total, g);
    atomicMax(maxv, g * 7u % 101u);
    if (gl_WorkGroupID.x % 9u == 4u) {
        // Two kinds on one word: the second turns the first into a read and a write.
        atomicOr(bits, 1u << (g % 32u));
        atomicAnd(bits, ~(1u << ((g + 5u) % 32u)));
    }
    if (gl_LocalInvocationIndex == 0u && gl_WorkGroupID.x % 7u == 6u) {
        seen[gl_WorkGroupID.x] = total;
    }
}
"#;

#[test]
fn unused_atomics_beside_reads_of_their_words() {
    let out = racy(UNUSED_ATOMICS, 3 + RACY_GROUPS as usize, None).buffer((0, 0));
    let n = RACY_GROUPS * 32;
    let (mut total, mut maxv, mut bits) = (0u32, 0u32, 0u32);
    let mut seen = Vec::new();
    // Subgroups of 16 run one after another (no barrier), their lanes in lock step: each
    // atomic for the 16 lanes, then lane 0's read in the first subgroup of every seventh
    // workgroup (the others' deltas are not turned into reads and writes).
    for sg in 0..RACY_GROUPS * 2 {
        let gs = sg * 16..sg * 16 + 16;
        total = gs.clone().fold(total, u32::wrapping_add);
        maxv = gs.clone().map(|g| g * 7 % 101).fold(maxv, u32::max);
        let wg = sg / 2;
        if wg % 9 == 4 {
            bits = gs.clone().fold(bits, |b, g| b | 1 << (g % 32));
            bits = gs.fold(bits, |b, g| b & !(1 << ((g + 5) % 32)));
        }
        seen.push(match (sg % 2, wg % 7) {
            (0, 6) => total,
            (0, _) => 0,
            _ => continue,
        });
    }
    assert_eq!(total, (0..n).sum::<u32>());
    let want: Vec<u32> = [total, maxv, bits].into_iter().chain(seen).collect();
    assert_eq!(out, want);
}

const LOOK_BACK: &str = r#"#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer Out { uint flags[41]; uint sums[40]; };
void main() {
    uint wg = gl_WorkGroupID.x;
    if (gl_LocalInvocationIndex == 0u) {
        // Wait for the workgroup before (a decoupled look-back): in order it has always finished.
        while (wg > 0u && flags[wg] == 0u) {}
        sums[wg] = (wg > 0u ? sums[wg - 1u] : 0u) + wg;
        flags[wg + 1u] = 1u;
    }
}
"#;

#[test]
fn a_workgroup_waiting_for_the_one_before_finishes_without_a_step_limit() {
    // No step limit: a workgroup that spun on a flag of a stale snapshot would never stop, so it
    // is given up after its step budget and the commit runs it again. A hang fails here.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(racy(LOOK_BACK, 81, Some(u64::MAX)));
    });
    let out = rx
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("the dispatch finishes within 5 minutes")
        .buffer((0, 0));
    let sums: Vec<u32> = (0..RACY_GROUPS).map(|k| k * (k + 1) / 2).collect();
    assert_eq!(out[41..], sums[..]);
}

const ADD_THEN_READ: &str = r#"#version 450
layout(local_size_x = 8) in;
layout(std430, binding = 0) buffer Out { uint total; uint other; uint seen[]; };
void main() {
    uint acc = 0u;
    for (uint k = 0u; k < 100u; k++) {
        atomicAdd(total, 1u);
        acc += total;
        atomicAdd(other, 2u);
    }
    seen[gl_GlobalInvocationID.x] = acc;
}
"#;

#[test]
fn a_deferred_atomic_read_back_again_and_again() {
    // The first add is deferred and the read turns it into a read and a write; later adds to
    // the word are the workgroup's own writes, while the adds to `other` stay deferred.
    let out = racy(ADD_THEN_READ, 2 + 8 * RACY_GROUPS as usize, None).buffer((0, 0));
    assert_eq!(out[..2], [RACY_GROUPS * 800, RACY_GROUPS * 1600]);
    for g in 0..8 * RACY_GROUPS {
        let wg = g / 8;
        let want = (0..100).map(|k| wg * 800 + 8 * (k + 1)).sum::<u32>();
        assert_eq!(out[2 + g as usize], want, "invocation {g}");
    }
}

const WIDE_ADDS: &str = r#"#version 450
#extension GL_EXT_shader_atomic_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer Acc { uint64_t acc[4]; uint seen[]; };
layout(std430, binding = 0) buffer Words { uint words[]; };
void main() {
    uint g = gl_GlobalInvocationID.x, wg = gl_WorkGroupID.x;
    // Deferred (the result unused), carrying into the high word.
    atomicAdd(acc[g % 4u], uint64_t(g + 1u) << 28);
    if (gl_LocalInvocationIndex == 0u && wg % 3u == 1u) {
        // The high word of a 64-bit delta that starts a word before it.
        seen[wg] = words[2u * (wg % 4u) + 1u];
    }
}
"#;

#[test]
fn a_wide_deferred_atomic_read_by_its_high_word() {
    let groups = RACY_GROUPS as usize;
    let out = racy(WIDE_ADDS, 8 + groups, None).buffer((0, 0));
    // In order: subgroups of 16 one after another, each lane's add, then lane 0's read.
    let mut acc = [0u64; 4];
    let mut seen = vec![0u32; groups];
    for sg in 0..2 * RACY_GROUPS {
        for g in sg * 16..sg * 16 + 16 {
            acc[(g % 4) as usize] += u64::from(g + 1) << 28;
        }
        let wg = sg / 2;
        if sg % 2 == 0 && wg % 3 == 1 {
            seen[wg as usize] = (acc[(wg % 4) as usize] >> 32) as u32;
        }
    }
    let want: Vec<u32> = acc
        .iter()
        .flat_map(|&a| [a as u32, (a >> 32) as u32])
        .chain(seen)
        .collect();
    assert_eq!(out, want);
}

const UNINITIALISED: &str = r#"#version 450
layout(local_size_x = 20) in;
layout(std430, binding = 0) buffer Out { uint words[]; };
shared uint scratch[20];
void main() {
    uint l = gl_LocalInvocationIndex;
    words[gl_GlobalInvocationID.x] = scratch[19u - l];
}
"#;

#[test]
fn undefined_values_are_the_same_at_every_thread_count() {
    match racy(UNINITIALISED, (RACY_GROUPS * 20) as usize, None) {
        Seen::Ran {
            undefined,
            undefined_total,
            buffers,
            ..
        } => {
            assert_eq!(undefined_total, u64::from(RACY_GROUPS * 20));
            assert_eq!(undefined.len(), (RACY_GROUPS * 20) as usize);
            // Seeded per workgroup: two workgroups' random words differ.
            let b = &buffers[&(0, 0)];
            assert_ne!(b[..80], b[80..160]);
        }
        Seen::Failed(e) => panic!("{e}"),
    }
}

const MANY_UNDEFINED: &str = r#"#version 450
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer Out { uint words[]; };
shared uint a[256];
shared uint b[256];
shared uint c[256];
void main() {
    uint l = gl_LocalInvocationIndex, wg = gl_WorkGroupID.x, x = 0u;
    for (uint k = 0u; k < 4u; k++) {
        if (wg % 3u == 0u) { x += a[(l + k) % 256u]; }
        else if (wg % 3u == 1u) { x += b[(l + k) % 256u]; }
        else { x += c[(l + k) % 256u]; }
    }
    words[gl_GlobalInvocationID.x] = x;
}
"#;

#[test]
fn the_first_hundred_thousand_undefined_reports_are_kept_in_workgroup_order() {
    // 130 workgroups of 256 invocations, 4 undefined reads each: 133,120, past the 100,000 kept.
    let module = Module::new(&compile(MANY_UNDEFINED, "vulkan1.1")).expect("translates");
    let d = Dispatch::default()
        .with_subgroup_size(32)
        .with_workgroups([130, 1, 1])
        .with_buffer((0, 0), vec![0u8; 130 * 256 * 4])
        .with_report_undefined(true);
    match same_at_every_thread_count(&module, &d, "many undefined")
        .unwrap_or_else(|e| panic!("{e}"))
    {
        Seen::Ran {
            undefined,
            undefined_total,
            ..
        } => {
            assert_eq!(undefined_total, 130 * 256 * 4);
            assert_eq!(undefined.len(), 100_000);
            // Workgroup w reads a, b or c by w % 3: the reports follow the workgroups' order.
            let per_wg = 256 * 4;
            for w in [0, 1, 2, 3, 90] {
                let first = &undefined[w * per_wg].what;
                let other = &undefined[(w + 1) * per_wg].what;
                assert_ne!(first, other, "workgroups {w} and {}", w + 1);
                assert_eq!(first, &undefined[(w + 3) * per_wg].what);
            }
        }
        Seen::Failed(e) => panic!("{e}"),
    }
}

/// A shader that fails in workgroup 5 of 40 in the way `fault` says; the others run normally.
fn faulty(fault: &str) -> String {
    format!(
        r#"#version 450
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer Out {{ uint words[]; }};
void main() {{
    uint wg = gl_WorkGroupID.x, l = gl_LocalInvocationIndex;
    words[wg * 16u + l] = wg + l;
    if (wg == 5u) {{ {fault} }}
}}
"#
    )
}

fn expect_failure(seen: Seen, words: &str) {
    match seen {
        Seen::Failed(e) => assert!(e.contains(words), "{e}"),
        Seen::Ran { .. } => panic!("the dispatch did not fail"),
    }
}

#[test]
fn an_endless_loop_in_a_middle_workgroup_stops_at_the_same_step() {
    let glsl = faulty("for (;;) { if (words[1000] == 7u) { break; } }");
    expect_failure(racy(&glsl, 1001, Some(20_000)), "step limit");
}

#[test]
fn a_divergent_barrier_in_a_middle_workgroup_is_the_same_error() {
    let glsl = faulty("if (l < 5u) { barrier(); }");
    expect_failure(racy(&glsl, 16 * 40, None), "non-uniform control flow");
}

#[test]
fn an_out_of_bounds_write_in_a_middle_workgroup_is_the_same_error() {
    let glsl = faulty("words[100000u + l] = 1u;");
    expect_failure(racy(&glsl, 16 * 40, None), "out-of-bounds access");
}

#[test]
fn the_step_limit_passed_by_the_running_total_fails_in_the_same_workgroup() {
    // The whole dispatch's steps, then a limit that runs out part-way through.
    // Workgroups that write and never read: no re-runs for conflicts.
    let glsl = faulty("");
    let steps = match racy(&glsl, 16 * 40, None) {
        Seen::Ran { steps, .. } => steps,
        Seen::Failed(e) => panic!("{e}"),
    };
    expect_failure(racy(&glsl, 16 * 40, Some(steps * 3 / 5)), "step limit");
}
