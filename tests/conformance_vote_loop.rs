//! The `vote-loop-spirv1.0` case of the conformance suite: issue 7's lavapipe 22.3 hazard.
//!
//! A SPIR-V 1.0 compute shader (only `GL_ARB_shader_group_vote`, so `OpSubgroupAllKHR`,
//! `OpSubgroupAnyKHR`, `OpSubgroupAllEqualKHR`) votes before a loop, inside a divergent `if`, and
//! in every iteration of a loop whose only exit is a divergent `break`; each lane folds the
//! iterations' votes into a value that leaves the loop through that `break`.
//!
//! What lavapipe 22.3 does with that loop (measured here, docs/lowering.md, "Driver facts"):
//! the votes themselves are right (the records stored inside the loop match the model), but
//! the value leaving through the `break` is built from the *last* execution of the vote in the
//! loop, by whichever lanes ran it last; and in a partial subgroup the loop goes on with an
//! empty execution mask after the last real lane left, so that last execution sees no lane at
//! all. There the native `OpSubgroupAllEqualKHR` answers false while `All(p) || !Any(p)` (the
//! old naga-target form) answers true, so native and lowered differed at sizes 4, 8 and 16.
//! The naga-target form is now `Any(p) != Any(!p)`, and the ballot form (`khr-ballot`)
//! `(b == act) != (b == 0)`: both false on an empty set, like the native op.
//!
//! Checks, per variant (native, lowered for each preset, and on a device of 16 lanes or more
//! emulated at a quarter and a half of its size, whose model is the one of that size):
//! - the records written inside the loop, before the loop and inside the `if` equal the host
//!   model of the spec (lavapipe compiles these right);
//! - the value that left the loop is bit-identical between native and every lowered variant
//!   (this is what failed before); against the model it must be right on every other device,
//!   and on lavapipe the wrong lanes are counted in a note (the driver's bug, not ours); an
//!   emulated variant's exit value (another size's program) is checked against the model only,
//!   and on lavapipe, where the driver gets it wrong, the emulated module's run in the simulator
//!   at the device's size is checked against the model instead.
//!
//! The shader has no subgroup id or lane index (SPIR-V 1.0 without `GL_ARB_shader_ballot`), so
//! the model takes the usual layout: subgroup `k` of a workgroup is local invocations
//! `k * size .. (k + 1) * size`. A driver with another layout fails the in-loop checks loudly.

use std::time::Duration;

use super::{lower_checked, lower_checked_opts, native_blocker, FloatPartition, Runner, Summary};
use spv_subgroup_lower::{LowerOptions, Target};
use spv_subgroup_vk::PipelineOptions;

/// The case's name in the summary.
const NAME: &str = "vote-loop-spirv1.0";
/// Words per invocation in the output: 7 loop iterations, the loop's exit value, the votes
/// before the loop and in the `if`.
const STRIDE: usize = 9;
/// Workgroups per dispatch; workgroup `w` takes predicate pattern `w % 4`.
const GROUPS: usize = 8;
/// Iterations at most (the `i >= 6` exit).
const MAX_TRIPS: usize = 7;

/// The shader (compiled with `--target-env vulkan1.0`: SPIR-V 1.0).
const GLSL: &str = r#"#version 450
#extension GL_ARB_shader_group_vote : require
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In { uint inp[]; };
layout(std430, binding = 1) buffer Out { uint outp[]; };
uint vote(bool p) {
    return (allInvocationsARB(p) ? 1u : 0u) | (anyInvocationARB(p) ? 2u : 0u)
        | (allInvocationsEqualARB(p) ? 4u : 0u);
}
void main() {
    uint g = gl_GlobalInvocationID.x;
    uint c = inp[g];
    uint pattern = gl_WorkGroupID.x % 4u;
    bool p = pattern == 0u ? true : (pattern == 1u ? false
        : (pattern == 2u ? (c & 0x100u) != 0u : (c & 0xf00u) != 0u));
    uint o = g * 9u;
    uint outside = vote(p);
    if ((c & 0x1000u) != 0u) {
        outside |= vote(p) << 3u;
    }
    outp[o + 8u] = outside;
    uint r = 0u;
    uint i = 0u;
    while (true) {
        uint v = vote(p);
        outp[o + i] = v;
        r = r * 8u + v;
        if (((c >> i) & 1u) != 0u || i >= 6u) {
            break;
        }
        i++;
        p = !p;
    }
    outp[o + 7u] = r;
}
"#;

/// The input word of invocation `i` for `seed` (a fixed pseudo-random pattern).
fn input_word(i: usize, seed: u32) -> u32 {
    let mut h = (i as u32).wrapping_mul(0x9e37_79b9) ^ seed.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^ (h >> 12)
}

/// The vote bits (All 1, Any 2, AllEqual 4) of predicates over a non-empty active set.
fn votes(ps: &[bool]) -> u32 {
    let all = ps.iter().all(|&p| p);
    let any = ps.iter().any(|&p| p);
    u32::from(all) | (u32::from(any) << 1) | (u32::from(all || !any) << 2)
}

/// The spec's results: per invocation the `STRIDE` output words (unwritten iterations 0).
fn model(inp: &[u32], local: usize, size: usize) -> Vec<[u32; STRIDE]> {
    let mut out = vec![[0u32; STRIDE]; inp.len()];
    for wg in 0..inp.len() / local {
        let pattern = wg % 4;
        for first in (0..local).step_by(size) {
            let lanes: Vec<usize> = (first..(first + size).min(local))
                .map(|l| wg * local + l)
                .collect();
            let c = |j: usize| inp[j];
            let mut p: Vec<bool> = lanes
                .iter()
                .map(|&j| match pattern {
                    0 => true,
                    1 => false,
                    2 => c(j) & 0x100 != 0,
                    _ => c(j) & 0xf00 != 0,
                })
                .collect();
            let outside = votes(&p);
            let in_if: Vec<bool> = lanes
                .iter()
                .zip(&p)
                .filter(|(&j, _)| c(j) & 0x1000 != 0)
                .map(|(_, &q)| q)
                .collect();
            for &j in &lanes {
                out[j][8] = outside;
                if c(j) & 0x1000 != 0 {
                    out[j][8] |= votes(&in_if) << 3;
                }
            }
            let mut alive = vec![true; lanes.len()];
            for i in 0..MAX_TRIPS {
                let ps: Vec<bool> = (0..lanes.len())
                    .filter(|&k| alive[k])
                    .map(|k| p[k])
                    .collect();
                if ps.is_empty() {
                    break;
                }
                let v = votes(&ps);
                for (k, &j) in lanes.iter().enumerate() {
                    if !alive[k] {
                        continue;
                    }
                    out[j][i] = v;
                    out[j][7] = out[j][7].wrapping_mul(8).wrapping_add(v);
                    if (c(j) >> i) & 1 != 0 || i >= 6 {
                        alive[k] = false;
                    } else {
                        p[k] = !p[k];
                    }
                }
            }
        }
    }
    out
}

/// Runs the case for every variant; records runs, failures and the lavapipe note in `summary`.
pub(super) fn run(runner: &Runner, presets: &[String], summary: &mut Summary) {
    let native = match super::compile(GLSL, "vulkan1.0") {
        Ok(w) => w,
        Err(e) => return summary.fail(NAME, "compile", e),
    };
    let size = runner.info().subgroup_size as usize;
    let lavapipe =
        runner.info().driver.contains("llvmpipe") || runner.info().name.contains("llvmpipe");
    // (name, words, the subgroup size of its model: the device's, or the emulated one)
    let mut variants: Vec<(String, Vec<u32>, usize)> = Vec::new();
    match native_blocker(&native, runner) {
        None => variants.push(("native".to_owned(), native.clone(), size)),
        Some(why) => summary
            .notes
            .push(format!("{NAME}: not run natively ({why})")),
    }
    // `khr-ballot` too: its AllEqual is made of ballots, which see the same empty set.
    let mut all_presets: Vec<&str> = presets.iter().map(String::as_str).collect();
    all_presets.push("khr-ballot");
    for p in all_presets {
        match lower_checked(&native, p, FloatPartition::Spec) {
            Ok(w) => match native_blocker(&w, runner) {
                None => variants.push((format!("lowered:{p}"), w, size)),
                Some(why) => summary
                    .notes
                    .push(format!("{NAME}: lowered:{p} not run ({why})")),
            },
            Err(e) => summary.fail(NAME, &format!("lowered:{p}"), e),
        }
    }
    // Emulated at a quarter and a half of the device's size, as the suite's other cases
    // (`run_case`), lowered for the device's first preset.
    if let (true, Some(p)) = (size >= 16, presets.iter().find(|p| !p.contains('@'))) {
        for n in [size / 4, size / 2] {
            let vname = format!("emulated:{p}@{n}");
            let emulated = Target::preset(p)
                .ok_or_else(|| format!("no preset `{p}`"))
                .and_then(|target| {
                    lower_checked_opts(
                        &native,
                        LowerOptions::new(target).with_emulated_subgroup_size(Some(n as u32)),
                    )
                });
            match emulated {
                Ok(w) => variants.push((vname, w, n)),
                Err(e) => summary.fail(NAME, &vname, e),
            }
        }
    }
    let mut exit_wrong = 0usize;
    let mut exit_total = 0usize;
    let (mut emulated_exit_wrong, mut emulated_exit_total) = (0usize, 0usize);
    for local in [64usize, 37, 5] {
        for seed in 1..=2u32 {
            let inp: Vec<u32> = (0..GROUPS * local).map(|i| input_word(i, seed)).collect();
            let mut exits: Vec<(String, Vec<u32>)> = Vec::new();
            for (vname, words, model_size) in &variants {
                let want = model(&inp, local, *model_size);
                let emulated = *model_size != size;
                let out = match run_once(runner, words, &inp, local) {
                    Ok(o) => o,
                    Err(e) => {
                        summary.fail(NAME, vname, format!("local {local} seed {seed}: {e}"));
                        continue;
                    }
                };
                let mut wrong = Vec::new();
                for (j, w) in want.iter().enumerate() {
                    let got = &out[j * STRIDE..(j + 1) * STRIDE];
                    for k in (0..MAX_TRIPS).chain([8]) {
                        if got[k] != w[k] {
                            wrong.push(format!(
                                "invocation {j} word {k}: got {:#o}, want {:#o}",
                                got[k], w[k]
                            ));
                        }
                    }
                    exit_total += usize::from(!emulated);
                    emulated_exit_total += usize::from(emulated);
                    if got[7] != w[7] {
                        if lavapipe && emulated {
                            emulated_exit_wrong += 1;
                        } else if lavapipe {
                            exit_wrong += 1;
                        } else {
                            wrong.push(format!(
                                "invocation {j}, value leaving the loop: got {:#o}, want {:#o}",
                                got[7], w[7]
                            ));
                        }
                    }
                }
                if emulated && lavapipe {
                    if let Err(e) = sim_exits(words, &inp, local, size, &want) {
                        wrong.insert(0, e);
                    }
                }
                if wrong.is_empty() {
                    summary.record(NAME, vname, true, want.len() * STRIDE);
                } else {
                    let n = wrong.len();
                    wrong.truncate(4);
                    summary.fail(
                        NAME,
                        vname,
                        format!("local {local} seed {seed}: {n} wrong words, first {wrong:?}"),
                    );
                }
                if !emulated {
                    exits.push((
                        vname.clone(),
                        out.iter().skip(7).step_by(STRIDE).copied().collect(),
                    ));
                }
            }
            // Native and lowered must agree bit for bit on the value leaving the loop, even
            // where the driver gets it wrong for both.
            if let Some((first, base)) = exits.first() {
                for (vname, e) in &exits[1..] {
                    if let Some(j) = (0..e.len()).find(|&j| e[j] != base[j]) {
                        summary.fail(
                            NAME,
                            vname,
                            format!(
                                "local {local} seed {seed}: the value leaving the loop differs from {first} at invocation {j}: {:#o} against {:#o}",
                                e[j], base[j]
                            ),
                        );
                    }
                }
            }
        }
    }
    if exit_wrong > 0 {
        summary.notes.push(format!(
            "{NAME}: lavapipe's value leaving a loop through a divergent break is wrong for {exit_wrong} of {exit_total} invocations, natively and lowered alike (docs/lowering.md, Driver facts)"
        ));
    }
    if emulated_exit_wrong > 0 {
        summary.notes.push(format!(
            "{NAME}: emulated, the value leaving the loop is wrong for {emulated_exit_wrong} of {emulated_exit_total} invocations on lavapipe (its loop-exit fault above), right in the simulator's run of the emulated module at {size}"
        ));
    }
}

/// Runs `words` (an emulated module) in the simulator at the hardware size `size` with the
/// dispatch of [`run_once`], and checks every value leaving the loop against `want` (the model
/// at the emulated size).
fn sim_exits(
    words: &[u32],
    inp: &[u32],
    local: usize,
    size: usize,
    want: &[[u32; STRIDE]],
) -> Result<(), String> {
    let spec = std::collections::BTreeMap::from([(0u32, local as u64)]);
    let module = spv_subgroup_sim::Module::with_spec_constants(words, &spec)
        .map_err(|e| format!("simulator: {e}"))?;
    let bytes = |w: &[u32]| w.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let d = spv_subgroup_sim::Dispatch::default()
        .with_subgroup_size(size as u32)
        .with_workgroups([GROUPS as u32, 1, 1])
        .with_buffer((0, 0), bytes(inp))
        .with_buffer((0, 1), vec![0u8; inp.len() * STRIDE * 4])
        .with_seed(1);
    let out = module.run(&d).map_err(|e| format!("simulator: {e}"))?;
    let words: Vec<u32> = out.buffers[&(0, 1)]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    match (0..want.len()).find(|&j| words[j * STRIDE + 7] != want[j][7]) {
        None => Ok(()),
        Some(j) => Err(format!(
            "in the simulator at {size}, the value leaving the loop at invocation {j}: got {:#o}, want {:#o}",
            words[j * STRIDE + 7],
            want[j][7]
        )),
    }
}

/// One dispatch of `words` with local size `local`; returns the output buffer.
fn run_once(runner: &Runner, words: &[u32], inp: &[u32], local: usize) -> Result<Vec<u32>, String> {
    let pipeline = runner
        .pipeline(
            words,
            &PipelineOptions {
                buffers: 2,
                spec_constants: vec![(0, local as u32)],
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())?;
    let mut bufs = vec![inp.to_vec(), vec![0u32; inp.len() * STRIDE]];
    runner
        .run(
            &pipeline,
            &mut bufs,
            [GROUPS as u32, 1, 1],
            Duration::from_secs(240),
        )
        .map_err(|e| e.to_string())?;
    Ok(bufs.swap_remove(1))
}
