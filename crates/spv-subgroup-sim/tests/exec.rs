//! Executes GLSL compute shaders (compiled by glslangValidator at test time) in the simulator at
//! every subgroup size, with partial subgroups, and checks each output word against a model
//! written here from the GLSL semantics; plus step limit, undefined reports and hostile input.

use std::collections::BTreeMap;

use spv_subgroup_sim::{Dispatch, ErrorKind, Module};
use spv_subgroup_tests::tools;

fn compile(glsl: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.comp");
    std::fs::write(&path, glsl).expect("write shader");
    tools::compile_glsl(&path, "vulkan1.1").expect("glslangValidator compiles the shader")
}

const LOCAL: u32 = 37;
const GROUPS: u32 = 2;
const WORDS: u32 = 8;

const SHADER: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_NV_shader_subgroup_partitioned : require
layout(local_size_x = 37) in;
layout(set = 0, binding = 0) buffer In { uint vin[]; };
layout(set = 0, binding = 1) buffer Out { uint vout[]; };
shared uint sh[37];
uint twice(uint v) { if (v > 100u) { return v; } return subgroupAdd(v) * 2u; }
void main() {
    uint i = gl_LocalInvocationIndex;
    uint g = gl_GlobalInvocationID.x;
    uint x = vin[g];
    uint base = g * 8u;
    vout[base + 0u] = subgroupAdd(x);
    vout[base + 1u] = subgroupInclusiveAdd(x);
    uint r = 0u;
    if ((x & 1u) == 0u) { r = subgroupAdd(x); } else { r = subgroupMax(x); }
    vout[base + 2u] = r;
    uvec4 p = subgroupPartitionNV(x % 3u);
    vout[base + 3u] = subgroupPartitionedAddNV(x, p);
    uint n = 0u;
    for (uint k = 0u; k < x % 5u; k++) { n += subgroupBallotBitCount(subgroupBallot(true)); }
    vout[base + 4u] = n;
    sh[i] = x;
    barrier();
    vout[base + 5u] = sh[36u - i] + twice(x);
    vout[base + 6u] = subgroupShuffleXor(x, 1u);
    vout[base + 7u] = gl_SubgroupInvocationID + 1000u * gl_SubgroupID;
}
"#;

fn input() -> Vec<u32> {
    (0..LOCAL * GROUPS)
        .map(|k| (k * 7919 + 13) % 97 + 1)
        .collect()
}

fn bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The expected words of invocation `i` of workgroup `wg`, or None where undefined (word 6).
fn model(x: &[u32], size: u32, wg: u32, i: u32) -> [Option<u32>; 8] {
    let at = |k: u32| x[(wg * LOCAL + k) as usize];
    let sgid = i / size;
    let members: Vec<u32> = (sgid * size..((sgid + 1) * size).min(LOCAL)).collect();
    let me = at(i);
    let sum = |f: &dyn Fn(u32) -> bool| {
        members
            .iter()
            .filter(|k| f(**k))
            .map(|k| at(*k))
            .fold(0u32, u32::wrapping_add)
    };
    let w0 = sum(&|_| true);
    let w1 = sum(&|k| k <= i);
    let w2 = if me % 2 == 0 {
        sum(&|k| at(k) % 2 == 0)
    } else {
        members
            .iter()
            .map(|k| at(*k))
            .filter(|v| v % 2 == 1)
            .max()
            .unwrap_or(0)
    };
    let w3 = sum(&|k| at(k) % 3 == me % 3);
    let w4 = (0..me % 5)
        .map(|k| members.iter().filter(|m| at(**m) % 5 > k).count() as u32)
        .sum();
    let twice = if me > 100 {
        me
    } else {
        sum(&|k| at(k) <= 100).wrapping_mul(2)
    };
    let w5 = at(36 - i).wrapping_add(twice);
    let partner = i ^ 1;
    let w6 = members.contains(&partner).then(|| at(partner));
    let w7 = i % size + 1000 * sgid;
    [
        Some(w0),
        Some(w1),
        Some(w2),
        Some(w3),
        Some(w4),
        Some(w5),
        w6,
        Some(w7),
    ]
}

#[test]
fn every_subgroup_size_matches_the_model() {
    let module = Module::new(&compile(SHADER)).expect("translates");
    let x = input();
    for size in [1u32, 2, 4, 8, 16, 32, 64, 128] {
        let mut buffers = BTreeMap::new();
        buffers.insert((0, 0), bytes(&x));
        buffers.insert((0, 1), vec![0u8; (LOCAL * GROUPS * WORDS * 4) as usize]);
        let d = Dispatch::default()
            .with_subgroup_size(size)
            .with_workgroups([GROUPS, 1, 1])
            .with_buffers(buffers)
            .with_report_undefined(true)
            .with_seed(7);
        let out = module
            .run(&d)
            .unwrap_or_else(|e| panic!("size {size}: {e}"));
        let words: Vec<u32> = out.buffers[&(0, 1)]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut undefined = 0;
        for wg in 0..GROUPS {
            for i in 0..LOCAL {
                let want = model(&x, size, wg, i);
                let g = wg * LOCAL + i;
                for (k, w) in want.iter().enumerate() {
                    match w {
                        Some(w) => assert_eq!(
                            words[(g * WORDS) as usize + k],
                            *w,
                            "size {size}, invocation {g}, word {k}"
                        ),
                        None => undefined += 1,
                    }
                }
            }
        }
        assert_eq!(
            out.undefined_total, undefined,
            "size {size}: one undefined read per shuffle from a missing lane"
        );
        assert!(
            out.undefined.iter().all(|u| u.what.contains("ShuffleXor")),
            "size {size}: {:?}",
            out.undefined
        );
    }
}

#[test]
fn an_endless_loop_stops_at_the_step_limit_naming_the_instruction() {
    let module = Module::new(&compile(
        "#version 450\nlayout(local_size_x = 4) in;\nlayout(binding = 0) buffer B { uint v[]; };\nvoid main() { uint i = 0u; while (v[0] == 0u) { i++; } v[1] = i; }\n",
    ))
    .expect("translates");
    let mut buffers = BTreeMap::new();
    buffers.insert((0, 0), vec![0u8; 8]);
    let d = Dispatch::default()
        .with_subgroup_size(4)
        .with_buffers(buffers)
        .with_step_limit(10_000);
    let e = module.run(&d).expect_err("must stop");
    assert_eq!(e.kind, ErrorKind::StepLimit(10_000));
    assert!(e.location.opcode.is_some(), "{e}");
}

#[test]
fn out_of_bounds_is_an_error_naming_the_instruction() {
    let module = Module::new(&compile(
        "#version 450\nlayout(local_size_x = 4) in;\nlayout(binding = 0) buffer B { uint v[]; };\nvoid main() { v[gl_LocalInvocationIndex + 1u] = 1u; }\n",
    ))
    .expect("translates");
    let mut buffers = BTreeMap::new();
    buffers.insert((0, 0), vec![0u8; 8]);
    let e = module
        .run(
            &Dispatch::default()
                .with_subgroup_size(4)
                .with_buffers(buffers),
        )
        .expect_err("out of bounds");
    assert!(matches!(e.kind, ErrorKind::OutOfBounds(_)), "{e}");
    assert_eq!(e.location.opcode.as_deref(), Some("OpStore"), "{e}");
}

#[test]
fn hostile_bytes_give_errors_not_panics() {
    let words = compile(SHADER);
    let mut seed = 1u64;
    for round in 0..300 {
        let mut w = words.clone();
        for _ in 0..1 + round % 4 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = 5 + (seed >> 33) as usize % (w.len() - 5);
            w[at] ^= 1 << ((seed >> 20) % 32);
        }
        if round % 7 == 0 {
            w.truncate(5 + round % (words.len() - 5));
        }
        if let Ok(m) = Module::new(&w) {
            let mut buffers = BTreeMap::new();
            buffers.insert((0, 0), vec![1u8; 64]);
            buffers.insert((0, 1), vec![0u8; 64]);
            let _ = m.run(
                &Dispatch::default()
                    .with_subgroup_size(8)
                    .with_buffers(buffers)
                    .with_step_limit(100_000),
            );
        }
    }
}

#[test]
fn function_variables_are_freed_when_the_call_returns() {
    // A function with a local variable, called 20,000 times by 64 lanes: before, every call
    // allocated a memory object per lane and kept it to the end of the workgroup (1.28 million
    // objects; the probe's 2 million calls reached 3 GB).
    let module = Module::new(&compile(
        "#version 450\nlayout(local_size_x = 64) in;\nlayout(binding = 0) buffer O { uint o[]; };\nuint h(uint x) { uint t = x * 3u; return t + 1u; }\nvoid main() { uint acc = 0u; for (uint k = 0u; k < 20000u; k++) { acc = h(acc); } o[gl_LocalInvocationIndex] = acc; }\n",
    ))
    .expect("translates");
    let mut buffers = BTreeMap::new();
    buffers.insert((0, 0), vec![0u8; 256]);
    let out = module
        .run(
            &Dispatch::default()
                .with_subgroup_size(64)
                .with_buffers(buffers),
        )
        .expect("runs");
    let mut acc = 0u32;
    for _ in 0..20000 {
        acc = acc.wrapping_mul(3).wrapping_add(1);
    }
    let words: Vec<u32> = out.buffers[&(0, 0)]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert!(words.iter().all(|w| *w == acc), "{words:?}");
    // The buffer, the push constants, and per lane: the input builtin, the entry's variables
    // (acc, k, glslang's copy of the argument) and one call's (t); before, 20,000 calls' worth.
    assert!(
        out.memory_objects <= 2 + 5 * 64,
        "{} memory objects",
        out.memory_objects
    );
}

#[test]
fn a_partitioned_op_whose_ballot_lacks_the_own_bit_is_undefined() {
    let module = Module::new(&compile(
        "#version 450\n#extension GL_NV_shader_subgroup_partitioned : require\n#extension GL_KHR_shader_subgroup_basic : require\nlayout(local_size_x = 8) in;\nlayout(binding = 0) buffer O { uint o[]; };\nvoid main() { uint i = gl_LocalInvocationIndex; uint l = gl_SubgroupInvocationID; uvec4 b = l == 3u ? uvec4(0x1u, 0u, 0u, 0u) : uvec4(1u << l, 0u, 0u, 0u); o[i] = subgroupPartitionedAddNV(i + 1u, b); }\n",
    ))
    .expect("translates");
    for size in [4, 8] {
        let mut buffers = BTreeMap::new();
        buffers.insert((0, 0), vec![0u8; 32]);
        let out = module
            .run(
                &Dispatch::default()
                    .with_subgroup_size(size)
                    .with_buffers(buffers)
                    .with_report_undefined(true),
            )
            .expect("runs");
        // Lane 3's ballot names lane 0 only: one undefined result per subgroup; every other
        // lane's ballot is itself alone.
        assert_eq!(
            out.undefined_total,
            u64::from(8 / size),
            "size {size}: {:?}",
            out.undefined
        );
        assert!(
            out.undefined[0].what.contains("own bit"),
            "{:?}",
            out.undefined
        );
        let words: Vec<u32> = out.buffers[&(0, 0)]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        for (i, w) in words.iter().enumerate() {
            if i as u32 % size != 3 {
                assert_eq!(*w, i as u32 + 1, "size {size} lane {i}");
            }
        }
    }
}

#[test]
fn a_workgroup_barrier_in_non_uniform_control_flow_is_an_error() {
    // Divergent within a subgroup, and a subgroup that finishes without reaching the barrier.
    let within = "#version 450\nlayout(local_size_x = 16) in;\nlayout(binding = 0) buffer O { uint o[]; };\nvoid main() { uint i = gl_LocalInvocationIndex; if (i < 5u) { barrier(); o[i] = 1u; } }\n";
    let across = "#version 450\n#extension GL_KHR_shader_subgroup_basic : require\nlayout(local_size_x = 16) in;\nlayout(binding = 0) buffer O { uint o[]; };\nvoid main() { if (gl_SubgroupID == 0u) { barrier(); } o[gl_LocalInvocationIndex] = 1u; }\n";
    for (glsl, size, says) in [
        (within, 8, "lanes 0x1f of this subgroup are here"),
        (across, 8, "finished without reaching it"),
    ] {
        let module = Module::new(&compile(glsl)).expect("translates");
        let mut buffers = BTreeMap::new();
        buffers.insert((0, 0), vec![0u8; 64]);
        let e = module
            .run(
                &Dispatch::default()
                    .with_subgroup_size(size)
                    .with_buffers(buffers),
            )
            .expect_err("undefined behaviour is reported");
        assert!(matches!(e.kind, ErrorKind::Unsupported(_)), "{e}");
        assert!(e.to_string().contains(says), "{e}");
        assert_eq!(
            e.location.opcode.as_deref(),
            Some("OpControlBarrier"),
            "{e}"
        );
    }
    // The same barrier reached by every invocation runs.
    let uniform = "#version 450\nlayout(local_size_x = 16) in;\nlayout(binding = 0) buffer O { uint o[]; };\nshared uint s[16];\nvoid main() { uint i = gl_LocalInvocationIndex; s[i] = i; barrier(); o[i] = s[15u - i]; }\n";
    let module = Module::new(&compile(uniform)).expect("translates");
    let mut buffers = BTreeMap::new();
    buffers.insert((0, 0), vec![0u8; 64]);
    let out = module
        .run(
            &Dispatch::default()
                .with_subgroup_size(4)
                .with_buffers(buffers),
        )
        .expect("runs");
    assert_eq!(out.buffers[&(0, 0)][0], 15);
}

#[test]
fn function_variables_in_registers_give_exactly_what_memory_gives() {
    // Locals written in divergent control flow only, a struct with leaves never written, a bool
    // member, a whole-struct copy, a loop-carried local, an OpUndef, variables passed to functions
    // (inout, and out read before written in the callee): outputs, undefined reports (what, where, in order),
    // steps and lane-instructions must be the same with and without the register form.
    let module = Module::new(&compile(
        "#version 450\n#extension GL_KHR_shader_subgroup_arithmetic : require\nlayout(local_size_x = 23) in;\nlayout(binding = 0) buffer O { uint o[]; };\nstruct S { uint a; uvec2 b; bool c; float f; };\nuint bump(inout uint v) { v += 7u; return v; }\nvoid twiddle(out uint v, uint i) { if ((i & 1u) == 0u) { v = i; } v = v + 1u; }\nvoid main() {\n  uint i = gl_LocalInvocationIndex;\n  S s; uint u; uint k; uint acc = 0u; uint m = i;\n  if ((i & 1u) == 0u) { u = i * 3u; s.b.y = i; } else { s.f = float(i) * 0.5; }\n  s.c = (i & 2u) != 0u;\n  for (k = 0u; k < (i % 4u); k++) { acc += subgroupAdd(k) + u; }\n  S t = s;\n  bump(m);\n  uint w; twiddle(w, i);\n  o[i * 7u + 0u] = u;\n  o[i * 7u + 1u] = s.b.y + s.a;\n  o[i * 7u + 2u] = t.c ? 1u : 0u;\n  o[i * 7u + 3u] = t.b.x + floatBitsToUint(t.f);\n  o[i * 7u + 4u] = acc;\n  o[i * 7u + 5u] = m;\n  o[i * 7u + 6u] = w;\n}\n",
    ))
    .expect("translates");
    let in_memory = module.clone().with_variables_in_memory();
    for size in [1, 4, 8, 32, 64] {
        for seed in [1, 2] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_workgroups([2, 1, 1])
                .with_buffers(BTreeMap::from([((0, 0), vec![0u8; 2 * 23 * 7 * 4])]))
                .with_seed(seed)
                .with_report_undefined(true);
            let (a, b) = (
                module.run(&d).expect("runs"),
                in_memory.run(&d).expect("runs"),
            );
            assert_eq!(a.buffers, b.buffers, "size {size} seed {seed}");
            assert_eq!(a.undefined, b.undefined, "size {size} seed {seed}");
            assert_eq!(a.undefined_total, b.undefined_total);
            assert_eq!((a.steps, a.lane_steps), (b.steps, b.lane_steps));
            // The test means something: undefined values were read, and the register form
            // needed fewer memory objects.
            assert!(
                a.undefined_total > 0,
                "size {size}: nothing undefined was read"
            );
            assert!(
                a.undefined
                    .iter()
                    .any(|u| u.what.contains("function variable")),
                "{:?}",
                a.undefined
            );
            assert!(
                a.memory_objects < b.memory_objects,
                "{} vs {} memory objects",
                a.memory_objects,
                b.memory_objects
            );
        }
    }
}

#[test]
fn promotion_stays_within_its_register_budget() {
    // Forty local arrays of 256 words, each reached by constant indices only: promoting all of
    // them would take 20,480 register rows; the budget (8,192) promotes the first sixteen and
    // leaves the rest in memory, with the same results and reports as all in memory.
    let mut body = String::new();
    for k in 0..40 {
        body += &format!(
            "uint a{k}[256]; a{k}[{}] = i + {k}u; acc += a{k}[{}] + a{k}[7];\n",
            k % 7,
            k % 7
        );
    }
    let glsl = format!(
        "#version 450\nlayout(local_size_x = 8) in;\nlayout(binding = 0) buffer O {{ uint o[]; }};\nvoid main() {{\nuint i = gl_LocalInvocationIndex; uint acc = 0u;\n{body}o[i] = acc;\n}}\n"
    );
    let module = Module::new(&compile(&glsl)).expect("translates");
    let in_memory = module.clone().with_variables_in_memory();
    let d = Dispatch::default()
        .with_subgroup_size(8)
        .with_buffers(BTreeMap::from([((0, 0), vec![0u8; 32])]))
        .with_report_undefined(true);
    let (a, b) = (
        module.run(&d).expect("runs"),
        in_memory.run(&d).expect("runs"),
    );
    assert_eq!(a.buffers, b.buffers);
    assert_eq!(a.undefined, b.undefined);
    assert_eq!((a.steps, a.lane_steps), (b.steps, b.lane_steps));
    // No a{k}[7] is ever written (k % 7 < 7): its reads are undefined, reported alike.
    assert!(a.undefined_total > 0);
    // Some arrays were promoted (fewer objects), not all (the budget).
    let per_lane_objects = |o: &spv_subgroup_sim::Outcome| (o.memory_objects - 2) / 8;
    assert!(
        per_lane_objects(&a) < per_lane_objects(&b) && per_lane_objects(&a) >= 40 - 16,
        "{} and {} memory objects",
        a.memory_objects,
        b.memory_objects
    );
}

#[test]
fn fast_forms_give_exactly_what_the_general_paths_give() {
    // The compiled kernels, the straight-line form and forwarded loads against the general
    // paths: divergent arithmetic of every width, shifts past the width (by a register in some
    // active and some inactive lanes, by a constant in all) and divisions by zero in some active
    // and some inactive lanes, a local read twice while unwritten in half the lanes
    // (each read draws its own bits), loop-carried locals; plus this file's shader of subgroup
    // operations. Outputs, undefined reports (what, where, in order), steps and
    // lane-instructions must all be the same.
    const ARITH: &str = "#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 29) in;
layout(binding = 0) buffer O { uint o[]; };
void main() {
    uint i = gl_LocalInvocationIndex + 29u * gl_WorkGroupID.x;
    uint u;
    if ((i & 1u) == 0u) { u = i * 2654435761u; }
    uint a = u;
    uint b = u;
    uint s = i % 37u;
    uint r = 0u;
    if (i % 3u != 0u) { r = (a << s) + (b >> (s & 31u)) + i / (i % 5u) + i % (i % 4u); }
    int si = int(i) - 14;
    int64_t w = int64_t(si) * 78187493520l;
    uint16_t h = uint16_t(i * 977u);
    int8_t c = int8_t(si);
    float16_t f16 = float16_t(float(i) * 0.37);
    double d = double(si) / 3.0;
    float f = float(si) * 1.5 - float(i >> 1);
    uint acc = 0u;
    for (uint k = 0u; k < i % 6u; k++) { acc = acc * 31u + (k ^ i); f = f * 0.5 + float(k); }
    o[i * 8u + 0u] = (a ^ b) + (u ^ (u << 1u)) + (i >> 33u);
    o[i * 8u + 1u] = r;
    o[i * 8u + 2u] = uint(w >> 7) ^ uint(w >> 40) ^ uint(w < int64_t(-3));
    o[i * 8u + 3u] = uint(h * uint16_t(3)) + uint(int(c) * -3) + uint(c >> int8_t(2));
    o[i * 8u + 4u] = floatBitsToUint(float(f16 * f16 + float16_t(1.0)));
    o[i * 8u + 5u] = uint(int(d * 7.0)) ^ uint(d > 1.5);
    o[i * 8u + 6u] = floatBitsToUint(f) ^ uint(f < 3.0) ^ (uint(si < -3) << 1) ^ (uint(si >= int(i & 7u)) << 2);
    uvec3 v = uvec3(i, i * 3u, u);
    uvec3 m3 = mix(v, v.zxy, bvec3(i & 1u, i & 2u, i & 4u));
    o[i * 8u + 7u] = uint(int(i) >> (i & 7u)) ^ uint(-si) ^ acc ^ (m3.x + m3.y * 5u + m3.z * 7u);
}
";
    for (glsl, words, with_undefined) in [(ARITH, 29 * 2 * 8, true), (SHADER, 0, false)] {
        let module = Module::new(&compile(glsl)).expect("translates");
        let general = module.clone().with_general_paths_only();
        for size in [1, 2, 4, 8, 16, 32, 64, 128] {
            for seed in [3, 4] {
                let buffers = if words == 0 {
                    BTreeMap::from([
                        (
                            (0, 0),
                            input().iter().flat_map(|w| w.to_le_bytes()).collect(),
                        ),
                        ((0, 1), vec![0u8; (LOCAL * GROUPS * WORDS * 4) as usize]),
                    ])
                } else {
                    BTreeMap::from([((0, 0), vec![0u8; words * 4])])
                };
                let d = Dispatch::default()
                    .with_subgroup_size(size)
                    .with_workgroups([GROUPS, 1, 1])
                    .with_buffers(buffers)
                    .with_seed(seed)
                    .with_report_undefined(true);
                let (a, b) = (
                    module.run(&d).expect("runs"),
                    general.run(&d).expect("runs"),
                );
                assert_eq!(a.buffers, b.buffers, "size {size} seed {seed}");
                assert_eq!(a.undefined, b.undefined, "size {size} seed {seed}");
                assert_eq!(a.undefined_total, b.undefined_total);
                assert_eq!((a.steps, a.lane_steps), (b.steps, b.lane_steps));
                if with_undefined {
                    // The shader reads what it means to: shifts past the width, divisions by
                    // zero and the unwritten local, each reported.
                    for what in ["shift", "division", "function variable"] {
                        assert!(
                            a.undefined.iter().any(|u| u.what.contains(what)),
                            "size {size}: no {what} reported: {:?}",
                            a.undefined
                        );
                    }
                }
            }
        }
    }
}

/// Every kind of subgroup instruction with a row form, in uniform and in divergent control flow
/// (partial masks), on values that include NaNs and signed zeros, with reads that are undefined
/// (inactive and out-of-range lanes, empty ballots, ballots without the lane's own bit).
const GROUP_OPS: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#extension GL_KHR_shader_subgroup_clustered : require
#extension GL_KHR_shader_subgroup_quad : require
#extension GL_NV_shader_subgroup_partitioned : require
layout(local_size_x = 37) in;
layout(binding = 0) buffer In { uint vin[]; };
layout(binding = 1) buffer Out { uint vout[]; };
#define P(e) vout[o] = (e); o++;
void ops(uint x, float f, uint o) {
    int sx = int(x) - 50;
    P(subgroupAdd(x)) P(subgroupMul(x | 1u)) P(subgroupMin(x)) P(subgroupMax(x))
    P(subgroupAnd(x)) P(subgroupOr(x)) P(subgroupXor(x))
    P(uint(subgroupMin(sx))) P(uint(subgroupMax(sx))) P(uint(subgroupAdd(sx)))
    P(floatBitsToUint(subgroupAdd(f))) P(floatBitsToUint(subgroupMul(f)))
    P(floatBitsToUint(subgroupMin(f))) P(floatBitsToUint(subgroupMax(f)))
    P(uint(subgroupAnd(x > 20u))) P(uint(subgroupOr(x > 90u))) P(uint(subgroupXor(x > 50u)))
    P(subgroupInclusiveAdd(x)) P(subgroupExclusiveAdd(x)) P(subgroupInclusiveMul(x | 1u))
    P(subgroupExclusiveMin(x)) P(subgroupExclusiveMax(x)) P(uint(subgroupInclusiveMin(sx)))
    P(uint(subgroupExclusiveMax(sx))) P(subgroupInclusiveXor(x))
    P(floatBitsToUint(subgroupInclusiveAdd(f))) P(floatBitsToUint(subgroupExclusiveAdd(f)))
    P(floatBitsToUint(subgroupExclusiveMin(f))) P(floatBitsToUint(subgroupInclusiveMul(f)))
    P(subgroupClusteredAdd(x, 1u)) P(subgroupClusteredAdd(x, 2u)) P(subgroupClusteredMin(x, 4u))
    P(subgroupClusteredAdd(x, 8u)) P(subgroupClusteredMax(x, 16u)) P(subgroupClusteredXor(x, 32u))
    P(subgroupClusteredOr(x, 64u)) P(subgroupClusteredAdd(x, 128u))
    P(floatBitsToUint(subgroupClusteredAdd(f, 4u))) P(uint(subgroupClusteredMin(sx, 8u)))
    uvec4 part = subgroupPartitionNV(x % 3u);
    P(part.x) P(part.y) P(part.z) P(part.w)
    P(subgroupPartitionedAddNV(x, part)) P(subgroupPartitionedInclusiveAddNV(x, part))
    P(subgroupPartitionedExclusiveAddNV(x, part)) P(subgroupPartitionedExclusiveMinNV(x, part))
    P(floatBitsToUint(subgroupPartitionedInclusiveAddNV(f, part)))
    P(floatBitsToUint(subgroupPartitionedMulNV(f, part)))
    uvec4 pf = subgroupPartitionNV(f);
    P(pf.x) P(pf.y) P(pf.z) P(pf.w)
    uvec4 odd = subgroupBallot((x & 1u) == 0u);
    P(subgroupPartitionedAddNV(x, odd)) P(subgroupPartitionedInclusiveMaxNV(x, odd))
    uvec4 b = subgroupBallot((x & 1u) != 0u);
    P(b.x) P(b.y) P(b.z) P(b.w)
    P(subgroupBallotBitCount(b)) P(subgroupBallotInclusiveBitCount(b))
    P(subgroupBallotExclusiveBitCount(b)) P(subgroupBallotFindLSB(b)) P(subgroupBallotFindMSB(b))
    P(uint(subgroupInverseBallot(b))) P(uint(subgroupBallotBitExtract(b, x % 40u)))
    P(uint(subgroupElect())) P(uint(subgroupAll(x > 10u))) P(uint(subgroupAny(x > 90u)))
    P(uint(subgroupAllEqual(x % 2u))) P(uint(subgroupAll(true))) P(subgroupBallot(true).x)
    P(uint(subgroupAllEqual(f))) P(uint(subgroupAllEqual(uvec2(x & 1u, 1u))))
    P(uint(subgroupAllEqual(abs(f) * 0.0))) P(uint(subgroupAllEqual(7u)))
    P(subgroupBroadcastFirst(x)) P(subgroupBroadcast(x, 0u)) P(subgroupBroadcast(x, 3u))
    P(floatBitsToUint(subgroupBroadcastFirst(f)))
    P(subgroupShuffle(x, x % 8u)) P(subgroupShuffleXor(x, 1u)) P(subgroupShuffleUp(x, 1u))
    P(subgroupShuffleDown(x, 2u)) P(subgroupQuadBroadcast(x, 1u))
    P(subgroupQuadSwapHorizontal(x)) P(subgroupQuadSwapDiagonal(x)) P(subgroupQuadSwapVertical(x))
    uvec2 v2 = uvec2(x, x * 3u);
    uvec2 r2 = subgroupAdd(v2); P(r2.x) P(r2.y)
    r2 = subgroupExclusiveMax(v2); P(r2.x) P(r2.y)
    r2 = subgroupShuffle(v2, (x + 1u) % 4u); P(r2.x) P(r2.y)
    r2 = subgroupBroadcastFirst(v2); P(r2.x) P(r2.y)
    P(subgroupAdd(5u)) P(subgroupInclusiveAdd(5u)) P(subgroupBroadcastFirst(7u))
    P(subgroupShuffle(9u, x % 4u)) P(subgroupShuffleXor(x, x % 4u))
}
void main() {
    uint g = gl_GlobalInvocationID.x;
    uint x = vin[g];
    float f = uintBitsToFloat(vin[g + 74u]);
    ops(x, f, g * 256u);
    if ((x & 3u) != 0u) {
        ops(x, f, g * 256u + 128u);
    }
}
"#;

#[test]
fn subgroup_row_forms_give_exactly_what_the_general_path_gives() {
    let fast = Module::new(&compile(GROUP_OPS)).expect("translates");
    let general = fast.clone().with_general_subgroup_ops();
    assert!(
        fast.subgroup_row_forms() > 80,
        "{} row forms",
        fast.subgroup_row_forms()
    );
    assert_eq!(general.subgroup_row_forms(), 0);
    // Integers, then floats: mostly ordinary, with NaNs (quiet, signalling, negative), signed
    // zeros and infinities among them.
    let specials = [
        0x7fc0_0001u32,
        0xffc0_0003,
        0x7f80_0002,
        0x8000_0000,
        0,
        0x7f80_0000,
        0xff80_0000,
    ];
    let words: Vec<u32> = (0..74u32)
        .map(|k| (k * 7919 + 13) % 97 + 1)
        .chain((0..74u32).map(|k| match k % 9 {
            0..=6 if k % 2 == 0 => specials[(k % 7) as usize],
            _ => (k as f32 * 0.75 - 20.0).to_bits(),
        }))
        .collect();
    let mut undefined_seen = 0;
    for size in 1..=128u32 {
        for seed in [3, 4] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_workgroups([2, 1, 1])
                .with_buffers(BTreeMap::from([
                    ((0, 0), bytes(&words)),
                    ((0, 1), vec![0u8; 74 * 256 * 4]),
                ]))
                .with_seed(seed)
                .with_report_undefined(true);
            let (a, b) = (fast.run(&d).expect("runs"), general.run(&d).expect("runs"));
            assert_eq!(a.buffers, b.buffers, "size {size} seed {seed}");
            assert_eq!(a.undefined, b.undefined, "size {size} seed {seed}");
            assert_eq!(a.undefined_total, b.undefined_total);
            assert_eq!((a.steps, a.lane_steps), (b.steps, b.lane_steps));
            undefined_seen += a.undefined_total;
        }
    }
    // The test means something: the undefined cases (which the row forms leave to the general
    // path, or draw in its order) happened.
    assert!(undefined_seen > 1000, "{undefined_seen} undefined values");
}

/// A shader whose buffer, push-constant and Workgroup accesses exercise the row forms'
/// fallbacks: partial masks, lanes of one row on the same word (stores and atomics, lane order
/// decides), Workgroup words some lanes never write (read by every lane: undefined reports in
/// order), bools and floats in shared memory, a runtime array's length, compare-exchange.
const MEMORY_ROWS: &str = r#"#version 450
layout(local_size_x = 37) in;
layout(set = 0, binding = 0) buffer In { uint vin[]; };
layout(set = 0, binding = 1) buffer Out { uint o[]; };
layout(push_constant) uniform P { uint bias; };
shared uint sh[37];
shared uint counters[3];
shared bool flags[37];
shared float fs[37];
void main() {
    uint i = gl_LocalInvocationIndex;
    uint g = gl_GlobalInvocationID.x;
    uint base = g * 12u;
    uint x = vin[g % uint(vin.length())] + bias;
    if (i < 3u) { counters[i] = 0u; }
    if ((x & 1u) == 0u) { sh[i] = x; flags[i] = (x & 2u) != 0u; }
    fs[i] = float(x) * 0.25;
    barrier();
    uint a = atomicAdd(counters[i % 3u], x);
    uint b = atomicMax(counters[(i + 1u) % 3u], i);
    uint c = atomicCompSwap(counters[2], i, x);
    uint d = atomicExchange(counters[1], i);
    // Some lanes of this row add to words no lane wrote: the row form must give up before it
    // changes anything (an atomic done twice is not done once).
    uint e = atomicAdd(sh[(i * 3u) % 37u], 1u);
    barrier();
    o[base + 0u] = a;
    o[base + 1u] = b;
    o[base + 2u] = c;
    o[base + 3u] = d;
    o[base + 4u] = sh[36u - i];
    o[base + 5u] = flags[(i * 5u) % 37u] ? 1u : 0u;
    o[base + 6u] = floatBitsToUint(fs[(i + 3u) % 37u]);
    o[base + 7u] = counters[i % 3u];
    if (i % 3u != 0u) { o[base + 8u] = vin[(g * 7u) % uint(vin.length())]; }
    o[i % 5u] = g;
    o[base + 9u] = uint(vin.length());
    o[base + 10u] = atomicOr(o[base + 11u], x) + e + sh[i];
}
"#;

#[test]
fn memory_rows_give_exactly_what_lane_by_lane_memory_gives() {
    let module = Module::new(&compile(MEMORY_ROWS)).expect("translates");
    let lane_by_lane = module.clone().with_memory_lane_by_lane();
    let vin: Vec<u32> = (1..62u32)
        .map(|k| k.wrapping_mul(2_654_435_761) >> 7)
        .collect();
    for size in [1, 4, 8, 32, 64] {
        for threads in [1, 2] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_workgroups([3, 1, 1])
                .with_buffers(BTreeMap::from([
                    ((0, 0), bytes(&vin)),
                    ((0, 1), vec![0u8; 3 * 37 * 12 * 4]),
                ]))
                .with_push_constants(5u32.to_le_bytes().to_vec())
                .with_seed(3)
                .with_threads(threads)
                .with_report_undefined(true);
            let (a, b) = (
                module.run(&d).expect("runs"),
                lane_by_lane.run(&d).expect("runs"),
            );
            let at = format!("size {size}, {threads} threads");
            assert_eq!(a.buffers, b.buffers, "{at}");
            assert_eq!(a.undefined, b.undefined, "{at}");
            assert_eq!(a.undefined_total, b.undefined_total, "{at}");
            assert_eq!((a.steps, a.lane_steps), (b.steps, b.lane_steps), "{at}");
            // The test means something: unwritten Workgroup words were read and reported.
            assert!(
                a.undefined.iter().any(|u| u
                    .what
                    .contains("uninitialised memory of workgroup variable")),
                "{at}: {:?}",
                a.undefined
            );
        }
    }
}

#[test]
fn an_out_of_bounds_lane_in_a_row_keeps_the_lane_by_lane_error() {
    // One lane in the middle of the row out of bounds, on each kind of access; every lane
    // before it in bounds (the row form must not report, or have changed, anything else).
    let accesses = [
        "o[0] = vin[i == 5u ? 100u : i];",
        "vin[i == 6u ? 100u : i] = 1u;",
        "o[0] = atomicAdd(vin[i == 7u ? 100u : i], 1u);",
        "o[0] = sh[i == 5u ? 1000u : i];",
        "sh[i == 6u ? 1000u : i] = 2u;",
        "o[0] = atomicAdd(sh[i == 7u ? 1000u : i], 1u);",
        "o[0] = vin[int(i) - 3];",
    ];
    for (k, access) in accesses.iter().enumerate() {
        let glsl = format!(
            "#version 450\nlayout(local_size_x = 16) in;\nlayout(binding = 0) buffer I {{ uint vin[]; }};\nlayout(binding = 1) buffer O {{ uint o[]; }};\nshared uint sh[16];\nvoid main() {{ uint i = gl_LocalInvocationIndex; sh[i] = i; barrier(); {access} }}\n"
        );
        let module = Module::new(&compile(&glsl)).expect("translates");
        let lane_by_lane = module.clone().with_memory_lane_by_lane();
        for size in [4, 16] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_buffers(BTreeMap::from([
                    ((0, 0), vec![0u8; 64]),
                    ((0, 1), vec![0u8; 4]),
                ]))
                .with_threads(1);
            let (a, b) = (
                module.run(&d).expect_err("out of bounds"),
                lane_by_lane.run(&d).expect_err("out of bounds"),
            );
            assert!(matches!(a.kind, ErrorKind::OutOfBounds(_)), "{k}: {a}");
            assert_eq!(a, b, "access {k} ({access}) at size {size}");
            assert_eq!(a.to_string(), b.to_string());
        }
    }
}

/// Runs `module`, whose workgroup `w` writes `v[w + 1] = v[w] + 3` in buffer 0 (after reading
/// `v[w]`), on 24 workgroups from `v[0] = 7`, at each of `sizes` on 1, 2 and 3 threads, and
/// requires the chain 7, 10, 13, ... that running them in order gives.
fn expect_a_chain_of_adds(module: &Module, sizes: &[u32]) {
    let groups = 24u32;
    let mut first = vec![0u8; (groups as usize + 1) * 4];
    first[..4].copy_from_slice(&7u32.to_le_bytes());
    for &size in sizes {
        for threads in [1, 2, 3] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_workgroups([groups, 1, 1])
                .with_buffers(BTreeMap::from([((0, 0), first.clone())]))
                .with_threads(threads);
            let out = module.run(&d).expect("runs");
            let words: Vec<u32> = out.buffers[&(0, 0)]
                .chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let expected: Vec<u32> = (0..=groups).map(|k| 7 + 3 * k).collect();
            assert_eq!(words, expected, "size {size}, {threads} threads");
        }
    }
}

#[test]
fn a_row_load_from_a_shared_buffer_marks_its_words_read_in_a_parallel_run() {
    // Each workgroup reads, with every lane of a row, the word the previous workgroup writes:
    // on several threads the words a row load reads must be marked read, so a workgroup that
    // ran against a batch's stale base runs again and the chain comes out as on one thread.
    let module = Module::new(&compile(
        "#version 450\nlayout(local_size_x = 64) in;\nlayout(binding = 0) buffer B { uint v[]; };\nvoid main() { uint w = gl_WorkGroupID.x; uint x = v[w]; barrier(); if (gl_LocalInvocationIndex == 63u) { v[w + 1u] = x + 3u; } }\n",
    ))
    .expect("translates");
    expect_a_chain_of_adds(&module, &[8, 32, 64]);
}

/// Each workgroup reads `v[w]` by the buffer's name and writes `v[w + 1] = v[w] + 3` only
/// through a function's pointer parameter (variable pointers): a buffer written nowhere by its
/// name.
const WRITE_THROUGH_PARAMETER: &str = r#"
               OpCapability Shader
               OpCapability VariablePointers
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %wgid
               OpExecutionMode %main LocalSize 64 1 1
               OpDecorate %wgid BuiltIn WorkgroupId
               OpDecorate %arr ArrayStride 4
               OpMemberDecorate %B 0 Offset 0
               OpDecorate %B Block
               OpDecorate %v DescriptorSet 0
               OpDecorate %v Binding 0
       %void = OpTypeVoid
       %fnty = OpTypeFunction %void
       %uint = OpTypeInt 32 0
         %v3 = OpTypeVector %uint 3
        %pin = OpTypePointer Input %v3
       %wgid = OpVariable %pin Input
        %arr = OpTypeRuntimeArray %uint
          %B = OpTypeStruct %arr
         %pB = OpTypePointer StorageBuffer %B
         %pu = OpTypePointer StorageBuffer %uint
          %v = OpVariable %pB StorageBuffer
         %c0 = OpConstant %uint 0
         %c1 = OpConstant %uint 1
         %c3 = OpConstant %uint 3
    %storety = OpTypeFunction %void %pu %uint
        %put = OpFunction %void None %storety
          %p = OpFunctionParameter %pu
          %x = OpFunctionParameter %uint
         %pl = OpLabel
               OpStore %p %x
               OpReturn
               OpFunctionEnd
       %main = OpFunction %void None %fnty
         %ml = OpLabel
         %id = OpLoad %v3 %wgid
          %w = OpCompositeExtract %uint %id 0
        %src = OpAccessChain %pu %v %c0 %w
        %val = OpLoad %uint %src
         %w1 = OpIAdd %uint %w %c1
        %dst = OpAccessChain %pu %v %c0 %w1
          %s = OpIAdd %uint %val %c3
       %call = OpFunctionCall %void %put %dst %s
               OpReturn
               OpFunctionEnd
"#;

#[test]
fn a_buffer_written_only_through_a_function_parameter_keeps_its_read_marks() {
    // A buffer the module never writes by name is read without read marks in a parallel run
    // (`readonly.rs`): a buffer written through a pointer passed to a function must not be
    // taken for one, or a workgroup run against a stale snapshot would keep what it read.
    let words = tools::assemble(WRITE_THROUGH_PARAMETER, "vulkan1.1").expect("spirv-as");
    let module = Module::new(&words).expect("translates");
    expect_a_chain_of_adds(&module, &[8, 64]);
}

/// `r[g] = v[k]` where `k` (a Function variable kept in registers, its load forwarded: the
/// chain reads the variable's rows) holds `g` when the access chain runs and is set to 0
/// between the chain and its load; then `r[g + 64] = v[g % 7]` and an index past the end in
/// the last lane when `%oob` is 1 (push constant).
const CHAIN_THEN_STORE: &str = r#"
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main" %gid
               OpExecutionMode %main LocalSize 64 1 1
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %arr ArrayStride 4
               OpMemberDecorate %B 0 Offset 0
               OpDecorate %B Block
               OpMemberDecorate %P 0 Offset 0
               OpDecorate %P Block
               OpDecorate %v DescriptorSet 0
               OpDecorate %v Binding 0
               OpDecorate %r DescriptorSet 0
               OpDecorate %r Binding 1
       %void = OpTypeVoid
       %fnty = OpTypeFunction %void
       %uint = OpTypeInt 32 0
       %bool = OpTypeBool
         %v3 = OpTypeVector %uint 3
        %pin = OpTypePointer Input %v3
        %gid = OpVariable %pin Input
        %arr = OpTypeRuntimeArray %uint
          %B = OpTypeStruct %arr
         %pB = OpTypePointer StorageBuffer %B
         %pu = OpTypePointer StorageBuffer %uint
          %P = OpTypeStruct %uint
         %pP = OpTypePointer PushConstant %P
        %ppu = OpTypePointer PushConstant %uint
         %pc = OpVariable %pP PushConstant
          %v = OpVariable %pB StorageBuffer
          %r = OpVariable %pB StorageBuffer
         %pf = OpTypePointer Function %uint
         %c0 = OpConstant %uint 0
         %c7 = OpConstant %uint 7
        %c63 = OpConstant %uint 63
        %c64 = OpConstant %uint 64
      %c1000 = OpConstant %uint 1000
       %main = OpFunction %void None %fnty
         %ml = OpLabel
          %k = OpVariable %pf Function
         %id = OpLoad %v3 %gid
          %g = OpCompositeExtract %uint %id 0
               OpStore %k %g
          %i = OpLoad %uint %k
          %c = OpAccessChain %pu %v %c0 %i
               OpStore %k %c0
          %x = OpLoad %uint %c
         %rc = OpAccessChain %pu %r %c0 %g
               OpStore %rc %x
        %g64 = OpIAdd %uint %g %c64
          %m = OpUMod %uint %g %c7
       %oobp = OpAccessChain %ppu %pc %c0
        %oob = OpLoad %uint %oobp
       %last = OpIEqual %bool %g %c63
      %flag = OpINotEqual %bool %oob %c0
       %both = OpLogicalAnd %bool %last %flag
         %ix = OpSelect %uint %both %c1000 %m
         %c2 = OpAccessChain %pu %v %c0 %ix
         %y = OpLoad %uint %c2
        %rc2 = OpAccessChain %pu %r %c0 %g64
               OpStore %rc2 %y
               OpReturn
               OpFunctionEnd
"#;

#[test]
fn a_load_fused_with_its_access_chain_reads_the_index_the_chain_saw() {
    // The load through an access chain is done with the chain (`memrow::fuse_chain_loads`)
    // only where nothing between them may change what the chain reads: here the variable the
    // chain's index is forwarded from is stored between them, so the load must read v[g].
    let words = tools::assemble(CHAIN_THEN_STORE, "vulkan1.1").expect("spirv-as");
    let module = Module::new(&words).expect("translates");
    let vin: Vec<u32> = (0..64u32).map(|k| k * 10 + 1).collect();
    for (oob, size) in [(0u32, 8), (0, 64), (1, 16), (1, 64)] {
        for m in [module.clone(), module.clone().with_memory_lane_by_lane()] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_buffers(BTreeMap::from([
                    ((0, 0), bytes(&vin)),
                    ((0, 1), vec![0u8; 128 * 4]),
                ]))
                .with_push_constants(oob.to_le_bytes().to_vec())
                .with_threads(1);
            let got = m.run(&d);
            if oob == 1 {
                let e = got.expect_err("index 1000 is past the buffer");
                assert!(matches!(e.kind, ErrorKind::OutOfBounds(_)), "{e}");
                continue;
            }
            let out = got.expect("runs");
            let words: Vec<u32> = out.buffers[&(0, 1)]
                .chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let want: Vec<u32> = (0..64u32)
                .map(|g| vin[g as usize])
                .chain((0..64u32).map(|g| vin[(g % 7) as usize]))
                .collect();
            assert_eq!(words, want, "size {size}");
        }
    }
}

#[test]
fn registers_start_every_workgroup_at_zero() {
    // Each workgroup takes other blocks (a loop, calls with a promoted struct bound in and out,
    // a switch, subgroup operations in divergent code, an early return, a phi): a machine
    // zeroes again only the rows of the blocks its last workgroup entered, and the register
    // check (`Module::with_register_check`) fails the dispatch if any other row is not zero
    // when the next workgroup starts or when a file is taken again by the next dispatch.
    let words = compile(
        "#version 450\n#extension GL_KHR_shader_subgroup_arithmetic : require\n#extension GL_KHR_shader_subgroup_ballot : require\nlayout(local_size_x = 24) in;\nlayout(binding = 0) buffer O { uint o[]; };\nstruct S { uint a; uvec2 b; };\nuint f(inout S s, uint v) { if (v > 3u) { s.b.x += v; return subgroupAdd(v); } s.a = v; return v * 2u; }\nvoid main() {\n  uint i = gl_LocalInvocationIndex; uint w = gl_WorkGroupID.x;\n  S s; s.b = uvec2(i, w); uint acc = 0u;\n  if (w == 0u) { for (uint k = 0u; k < i % 5u; k++) { acc += f(s, k + i); } }\n  else if (w == 1u) { acc = subgroupExclusiveAdd(i) + f(s, w); }\n  else if (w == 2u) { switch (i % 3u) { case 0u: acc = subgroupMax(i); break; case 1u: acc = s.b.x; break; default: acc = f(s, i); } }\n  else { if (i == 5u) { return; } bool c = i >= 7u || o[w * 24u + i] == 0u; acc = subgroupBallot(c).x; }\n  o[w * 24u + i] = acc + s.b.x + s.a;\n}\n",
    );
    let module = Module::new(&words).expect("translates");
    let checked = module.clone().with_register_check();
    for size in [1, 4, 8, 16, 32, 64, 128] {
        for threads in [1, 2] {
            let d = Dispatch::default()
                .with_subgroup_size(size)
                .with_workgroups([9, 1, 1])
                .with_buffers(BTreeMap::from([((0, 0), vec![0u8; 9 * 24 * 4])]))
                .with_seed(3)
                .with_report_undefined(true)
                .with_threads(threads);
            // Twice: the second dispatch takes the files the first gave back.
            for run in 0..2 {
                let a = checked
                    .run(&d)
                    .unwrap_or_else(|e| panic!("size {size}, {threads} threads, run {run}: {e}"));
                let b = module.run(&d).expect("runs");
                assert_eq!(a.buffers, b.buffers, "size {size}");
                assert_eq!(a.undefined, b.undefined, "size {size}");
                assert_eq!((a.steps, a.lane_steps), (b.steps, b.lane_steps));
                // The test means something: the struct's unwritten member was read.
                assert!(a.undefined_total > 0, "size {size}");
            }
        }
    }
    // A dispatch that fails part-way (the buffer is too short for workgroup 3: the `||`'s
    // right side reads out of bounds after the lanes that skip it wrote the phi of the block
    // after it, never entered) still gives its files back all zero to the next dispatch.
    let short = Dispatch::default()
        .with_subgroup_size(8)
        .with_workgroups([9, 1, 1])
        .with_buffers(BTreeMap::from([((0, 0), vec![0u8; 3 * 24 * 4])]))
        .with_threads(1);
    let e = checked.run(&short).expect_err("out of bounds");
    assert!(matches!(e.kind, ErrorKind::OutOfBounds(_)), "{e}");
    let full = short.with_buffers(BTreeMap::from([((0, 0), vec![0u8; 9 * 24 * 4])]));
    checked.run(&full).expect("runs after a failed dispatch");
    // A dropped module's files go to the next module's first dispatch, checked the same way.
    drop((module, checked));
    let next = Module::new(&words)
        .expect("translates")
        .with_register_check();
    next.run(&full)
        .expect("runs on files a dropped module left");
}

#[test]
fn built_in_inputs_in_registers_give_exactly_what_memory_gives() {
    // Built-in Input variables are kept in register rows filled per subgroup (no memory object
    // per invocation): every built-in the simulator knows, vectors and masks, read in the entry
    // point and in a callee, in partial subgroups of a 3-D workgroup, against the same module
    // with every variable in memory. On one thread a machine runs the four workgroups one
    // after another, each subgroup's rows kept from the previous workgroup but those that
    // depend on the workgroup's id (filled again); on two, each thread's first workgroup fills
    // them all.
    let module = Module::new(&compile(
        "#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
layout(local_size_x = 5, local_size_y = 3, local_size_z = 2) in;
layout(binding = 0) buffer O { uint o[]; };
uint from_callee() { return gl_SubgroupInvocationID * 3u + gl_NumSubgroups; }
void main() {
    uint i = gl_LocalInvocationIndex + 30u * (gl_WorkGroupID.x + 2u * gl_WorkGroupID.y);
    uvec3 g = gl_GlobalInvocationID;
    o[i * 4u + 0u] = g.x + 7u * g.y + 31u * g.z + 1000u * gl_NumWorkGroups.y;
    o[i * 4u + 1u] = gl_SubgroupEqMask.x ^ gl_SubgroupGeMask.y ^ gl_SubgroupLtMask.z
        ^ gl_SubgroupLeMask.w ^ gl_SubgroupGtMask.x;
    o[i * 4u + 2u] = gl_SubgroupSize + 100u * gl_SubgroupID + from_callee();
    o[i * 4u + 3u] = gl_LocalInvocationID.x + 10u * gl_LocalInvocationID.z;
}
",
    ))
    .expect("translates");
    let in_memory = module.clone().with_variables_in_memory();
    for (size, threads) in [1, 2, 4, 8, 16, 32, 64, 128]
        .into_iter()
        .flat_map(|size| [(size, 1), (size, 2)])
    {
        let d = Dispatch::default()
            .with_subgroup_size(size)
            .with_threads(threads)
            .with_workgroups([2, 2, 1])
            .with_buffers(BTreeMap::from([((0, 0), vec![0u8; 4 * 30 * 4 * 4])]))
            .with_report_undefined(true);
        let (a, b) = (
            module.run(&d).expect("runs"),
            in_memory.run(&d).expect("runs"),
        );
        assert_eq!(a.buffers, b.buffers, "size {size}");
        assert_eq!(a.undefined, b.undefined, "size {size}");
        assert_eq!((a.steps, a.lane_steps), (b.steps, b.lane_steps));
        assert_eq!(a.undefined_total, 0, "size {size}: {:?}", a.undefined);
        // The test means something: the invocations' built-in objects are gone (at least one
        // per built-in the entry point reads, per invocation of a workgroup).
        assert!(
            a.memory_objects + 30 * 5 <= b.memory_objects,
            "size {size}: {} against {} memory objects",
            a.memory_objects,
            b.memory_objects
        );
        // And the values are the built-ins': invocation 7 of workgroup (1, 0) is local
        // (2, 1, 0), global (7, 1, 0).
        let word = |k: usize| {
            let o = &a.buffers[&(0, 0)];
            u32::from_le_bytes([o[4 * k], o[4 * k + 1], o[4 * k + 2], o[4 * k + 3]])
        };
        assert_eq!(word((30 + 7) * 4), 7 + 7 + 2000, "size {size}");
        assert_eq!(word((30 + 7) * 4 + 3), 2, "size {size}");
    }
}
