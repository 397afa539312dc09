//! `SPV_AMD_shader_ballot`'s extended instructions (`fixtures/lower/groups/amd_ballot_ext.comp`),
//! lowered for every preset and for a target without shuffles, run in the simulator at subgroup
//! sizes 1 to 128 against a host model of the extension's definitions (issue 21, part 3).
//!
//! Neither lavapipe nor the simulator runs the original instructions, so the reference is the
//! model: the extension's pseudo-code (SPIR-V registry, `SPV_AMD_shader_ballot`) evaluated per
//! subgroup from each invocation's input word, its lane (local index modulo the size, as the
//! simulator assigns them) and which lanes are active (those of the workgroup's 37 invocations
//! in the subgroup whose word has one of its two low bits set). Every output passes spirv-val.

#![allow(clippy::print_stdout, reason = "a test harness")]

mod lower_common;

use std::collections::BTreeMap;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_sim::{Dispatch, Module};
use spv_subgroup_tests::tools;

/// Subgroup sizes.
const SIZES: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
/// Invocations per workgroup (the fixture's local size).
const LOCAL: usize = 37;
/// Workgroups: two of each of the four instructions.
const GROUPS: u32 = 8;

/// The input word of global invocation `i` for `seed`.
fn input_word(i: usize, seed: u32) -> u32 {
    let mut h = (i as u32).wrapping_mul(0x9e37_79b9) ^ seed.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^ (h >> 12)
}

/// Whether an invocation with word `v` runs the instruction (the fixture's divergent `if`).
fn runs(v: u32) -> bool {
    v & 3 != 0
}

/// `SwizzleInvocationsAMD`'s source lane: `(i & ~3) + offset[i & 3]`.
fn swizzle_source(lane: u32, offset: [u32; 4]) -> u32 {
    (lane & !3) + offset[(lane & 3) as usize]
}

/// `SwizzleInvocationsMaskedAMD`'s source lane.
fn masked_source(lane: u32, mask: [u32; 3]) -> u32 {
    let j = (((lane & 0x1f) & mask[0]) | mask[1]) ^ mask[2];
    j | (lane & 0x20)
}

/// `MbcntAMD(mask)`: the bit count of `SubgroupLtMaskARB & mask` (64-bit; a lane of 64 or more
/// has all 64 lower bits).
fn mbcnt(lane: u32, mask: u64) -> u32 {
    let lt = if lane >= 64 {
        u64::MAX
    } else {
        (1u64 << lane) - 1
    };
    (mask & lt).count_ones()
}

/// The model: the output word of every invocation of the dispatch at subgroup size `size`.
fn model(input: &[u32], size: u32) -> Vec<u32> {
    let mut out = vec![0; input.len()];
    for (i, &v) in input.iter().enumerate() {
        let group = (i / LOCAL) as u32;
        let local = (i % LOCAL) as u32;
        let lane = local % size;
        if !runs(v) {
            out[i] = !v;
            continue;
        }
        // Lane `j` of this invocation's subgroup: its global index, if it exists and is active.
        let base = i - lane as usize;
        let active = |j: u32| -> Option<u32> {
            if j >= size || local - lane + j >= LOCAL as u32 {
                return None;
            }
            let w = input[base + j as usize];
            runs(w).then_some(w)
        };
        out[i] = match group % 4 {
            0 => mbcnt(lane, (u64::from(v ^ 0xa5a5_a5a5) << 32) | u64::from(v)),
            1 => {
                let a = active(swizzle_source(lane, [1, 0, 3, 2])).unwrap_or(0);
                let b = active(swizzle_source(lane, [3, 3, 0, 1])).map_or(0, |w| w.wrapping_mul(3));
                a ^ b
            }
            2 => active(masked_source(lane, [0x1c, 0x01, 0x05])).unwrap_or(0),
            _ => {
                if lane == group % 5 {
                    group * 7
                } else {
                    v
                }
            }
        };
    }
    out
}

/// Runs `module` at `size` on `input`; returns the output words.
fn run(module: &Module, size: u32, input: &[u32], seed: u64) -> Result<Vec<u32>, String> {
    let data: Vec<u8> = input.iter().flat_map(|w| w.to_le_bytes()).collect();
    let d = Dispatch::default()
        .with_subgroup_size(size)
        .with_workgroups([GROUPS, 1, 1])
        .with_buffers(BTreeMap::from([((0, 0), data)]))
        .with_seed(seed);
    let out = module.run(&d).map_err(|e| e.to_string())?;
    Ok(out.buffers[&(0, 0)]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[test]
fn lowered_amd_ballot_instructions_match_the_extension() {
    let path = tools::workspace_root().join("fixtures/lower/groups/amd_ballot_ext.comp");
    let n = LOCAL * GROUPS as usize;
    // The model must tell the instructions apart from the fixture's `else` (the complement)
    // and from each other: check it is not trivial on the first input.
    let first: Vec<u32> = (0..n).map(|i| input_word(i, 1)).collect();
    let modelled = model(&first, 16);
    assert!(
        modelled
            .iter()
            .zip(&first)
            .any(|(m, v)| runs(*v) && *m != !*v && *m != *v),
        "the model computes something"
    );
    let mut no_shuffle = Target::preset("vulkan1.1").expect("preset");
    no_shuffle.name = "vulkan1.1 without shuffles".into();
    no_shuffle.ops.shuffle = false;
    let targets = ["vulkan1.1", "lavapipe", "naga", "nvidia", "khr-ballot"]
        .iter()
        .map(|p| Target::preset(p).expect("preset"))
        .chain([no_shuffle]);
    let mut failures = Vec::new();
    let mut runs_done = 0;
    for target in targets {
        let name = target.name.clone();
        let input = lower_common::build(&path, &target);
        let range = target.min_subgroup_size..=target.max_subgroup_size;
        let opts = LowerOptions::new(target);
        let (out, report) = lower_words(&input, &opts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let names: Vec<&str> = report.rewrites.iter().map(|(k, _)| k.as_str()).collect();
        for want in [
            "MbcntAMD",
            "SwizzleInvocationsAMD",
            "SwizzleInvocationsMaskedAMD",
            "WriteInvocationAMD",
        ] {
            assert!(
                names.contains(&want),
                "{name}: {want} not rewritten: {names:?}"
            );
        }
        if let Err(e) = tools::spirv_val(&out, "vulkan1.1") {
            panic!("{name}: spirv-val rejects the output:\n{e}");
        }
        assert!(
            !tools::disassemble(&out).contains("SPV_AMD_shader_ballot"),
            "{name}: the extension or its import is left"
        );
        let module = Module::new(&out).unwrap_or_else(|e| panic!("{name}: {e}"));
        for size in SIZES.into_iter().filter(|s| range.contains(s)) {
            for seed in [1u32, 2] {
                let input: Vec<u32> = (0..n).map(|i| input_word(i, seed)).collect();
                let want = model(&input, size);
                runs_done += 1;
                match run(&module, size, &input, u64::from(seed) + 10) {
                    Ok(got) => {
                        if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                            failures.push(format!(
                                "{name}, size {size}, input {seed}: invocation {i} (workgroup {}, instruction {}): {:#x}, the model {:#x}",
                                i / LOCAL,
                                (i / LOCAL) % 4,
                                got[i],
                                want[i]
                            ));
                        }
                    }
                    Err(e) => failures.push(format!("{name}, size {size}: {e}")),
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{runs_done} lowered runs equal to the model of SPV_AMD_shader_ballot");
}
