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
//! Checks, per variant (native, and lowered for each preset):
//! - the records written inside the loop, before the loop and inside the `if` equal the host
//!   model of the spec (lavapipe compiles these right);
//! - the value that left the loop is bit-identical between native and every lowered variant
//!   (this is what failed before); against the model it must be right on every other device,
//!   and on lavapipe the wrong lanes are counted in a note (the driver's bug, not ours).
//!
//! The shader has no subgroup id or lane index (SPIR-V 1.0 without `GL_ARB_shader_ballot`), so
//! the model takes the usual layout: subgroup `k` of a workgroup is local invocations
//! `k * size .. (k + 1) * size`. A driver with another layout fails the in-loop checks loudly.

use std::time::Duration;

use super::{lower_checked, native_blocker, FloatPartition, Runner, Summary};
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
    let mut variants: Vec<(String, Vec<u32>)> = Vec::new();
    match native_blocker(&native, runner) {
        None => variants.push(("native".to_owned(), native.clone())),
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
                None => variants.push((format!("lowered:{p}"), w)),
                Some(why) => summary
                    .notes
                    .push(format!("{NAME}: lowered:{p} not run ({why})")),
            },
            Err(e) => summary.fail(NAME, &format!("lowered:{p}"), e),
        }
    }
    let mut exit_wrong = 0usize;
    let mut exit_total = 0usize;
    for local in [64usize, 37, 5] {
        for seed in 1..=2u32 {
            let inp: Vec<u32> = (0..GROUPS * local).map(|i| input_word(i, seed)).collect();
            let want = model(&inp, local, size);
            let mut exits: Vec<(String, Vec<u32>)> = Vec::new();
            for (vname, words) in &variants {
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
                    exit_total += 1;
                    if got[7] != w[7] {
                        if lavapipe {
                            exit_wrong += 1;
                        } else {
                            wrong.push(format!(
                                "invocation {j}, value leaving the loop: got {:#o}, want {:#o}",
                                got[7], w[7]
                            ));
                        }
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
                exits.push((
                    vname.clone(),
                    out.iter().skip(7).step_by(STRIDE).copied().collect(),
                ));
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
