//! Partitioned reduce/scan lowerings executed in the simulator (`spv-subgroup-sim`) at 32, 64
//! and 128 lanes, sizes no driver here has.
//!
//! lavapipe runs 4 to 16 lanes and the GPU 32, so no device run ever has a subset spanning ballot
//! words (lanes 32 to 127): FindMSB/FindLSB across words, lane-mask built-ins above 32, the
//! per-word fallbacks of the naga target. Here one instruction (`IAdd`, `SMax`, 64-bit `IAdd`,
//! `UMin` on a `uvec2`, 8-bit `IAdd` and `BitwiseAnd` by bit slices) is lowered for `vulkan1.1`
//! (with and without core arithmetic), `naga` and `khr-ballot`, and the output runs in one
//! subgroup of 32, 64 or 128 lanes, some of them inactive (they branch around the instruction),
//! with ballots that carry bits of inactive lanes and of lanes beyond the subgroup, and keys whose
//! subsets span every ballot word. Every active lane's result must equal the model. The simulator
//! gives random bits for undefined values (reads of inactive lanes); each case runs with two
//! seeds, so a sequence that consumed one unguarded would show.

use std::collections::BTreeMap;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_sim::{Dispatch, Module};
use spv_subgroup_tests::tools;

/// The operation as the model computes it.
#[derive(Clone, Copy, Debug)]
enum Fold {
    Add,
    SMax,
    UMin,
    And,
}

/// A test case: the op, the value type's declaration, its width, component count and signedness.
struct Case {
    op: &'static str,
    fold: Fold,
    decl: &'static str,
    caps: &'static str,
    width: u32,
    components: usize,
    signed: bool,
}

impl Case {
    fn mask(&self, v: u64) -> u64 {
        if self.width >= 64 {
            v
        } else {
            v & ((1u64 << self.width) - 1)
        }
    }

    fn signed(&self, v: u64) -> i64 {
        let w = self.width;
        ((v << (64 - w)) as i64) >> (64 - w)
    }

    fn identity(&self) -> u64 {
        match self.fold {
            Fold::Add => 0,
            Fold::SMax => self.mask(1u64 << (self.width - 1)),
            Fold::UMin | Fold::And => self.mask(u64::MAX),
        }
    }

    fn combine(&self, a: u64, b: u64) -> u64 {
        match self.fold {
            Fold::Add => self.mask(a.wrapping_add(b)),
            Fold::SMax => {
                if self.signed(a) >= self.signed(b) {
                    a
                } else {
                    b
                }
            }
            Fold::UMin => a.min(b),
            Fold::And => a & b,
        }
    }

    /// Buffer words per component.
    fn words_per_component(&self) -> usize {
        if self.width == 64 {
            2
        } else {
            1
        }
    }

    /// Buffer words per lane: the active flag, the ballot, the value and the result.
    fn stride(&self) -> usize {
        5 + 2 * self.components * self.words_per_component()
    }

    /// SPIR-V that loads component `c` (`%v{c}`) from buffer word `%w{c}_0` (and `_1`).
    fn load_component(&self, c: usize) -> String {
        match (self.width, self.signed) {
            (64, _) => format!(
                "%lo{c} = OpUConvert %T %w{c}_0\n%hi{c} = OpUConvert %T %w{c}_1\n\
                 %sh{c} = OpShiftLeftLogical %T %hi{c} %c32\n%v{c} = OpBitwiseOr %T %sh{c} %lo{c}\n"
            ),
            (8, _) => format!("%v{c} = OpUConvert %S %w{c}_0\n"),
            (32, true) => format!("%v{c} = OpBitcast %S %w{c}_0\n"),
            _ => format!("%v{c} = OpCopyObject %uint %w{c}_0\n"),
        }
    }

    /// SPIR-V that turns component `c` of the result (`%r{c}`) into words `%o{c}_0` (and `_1`).
    fn store_component(&self, c: usize) -> String {
        match (self.width, self.signed) {
            (64, _) => format!(
                "%o{c}_0 = OpUConvert %uint %r{c}\n%rs{c} = OpShiftRightLogical %T %r{c} %c32\n\
                 %o{c}_1 = OpUConvert %uint %rs{c}\n"
            ),
            (8, _) => format!("%o{c}_0 = OpUConvert %uint %r{c}\n"),
            (32, true) => format!("%o{c}_0 = OpBitcast %uint %r{c}\n"),
            _ => format!("%o{c}_0 = OpCopyObject %uint %r{c}\n"),
        }
    }
}

/// The module: lane `i` of one workgroup of `size` reads its words at `i * stride`, and, where its
/// active flag is set, runs the operation and writes the result after its value.
fn module_text(case: &Case, scan: &str, spv10: bool, size: usize) -> String {
    let core = if spv10 {
        "OpExtension \"SPV_KHR_storage_buffer_storage_class\"\n"
    } else {
        "OpCapability GroupNonUniform\n"
    };
    let wpc = case.words_per_component();
    let n = case.components;
    let mut body = String::new();
    let word = |body: &mut String, name: &str, offset: usize| {
        body.push_str(&format!(
            "%i_{name} = OpIAdd %uint %base %c{offset}\n\
             %p_{name} = OpAccessChain %ptr_u %buf %c0 %i_{name}\n"
        ));
    };
    for b in 0..4 {
        word(&mut body, &format!("b{b}"), 1 + b);
        body.push_str(&format!("%b{b} = OpLoad %uint %p_b{b}\n"));
    }
    body.push_str("%ballot = OpCompositeConstruct %v4uint %b0 %b1 %b2 %b3\n");
    for c in 0..n {
        for k in 0..wpc {
            word(&mut body, &format!("w{c}_{k}"), 5 + c * wpc + k);
            body.push_str(&format!("%w{c}_{k} = OpLoad %uint %p_w{c}_{k}\n"));
        }
        body.push_str(&case.load_component(c));
    }
    let value = if n == 1 {
        "%v0".to_owned()
    } else {
        let parts: Vec<String> = (0..n).map(|c| format!("%v{c}")).collect();
        body.push_str(&format!(
            "%v = OpCompositeConstruct %T {}\n",
            parts.join(" ")
        ));
        "%v".to_owned()
    };
    body.push_str(&format!(
        "%r = OpGroupNonUniform{op} %T %scope {scan} {value} %ballot\n",
        op = case.op
    ));
    for c in 0..n {
        if n == 1 {
            body.push_str(&format!("%r{c} = OpCopyObject %T %r\n"));
        } else {
            body.push_str(&format!("%r{c} = OpCompositeExtract %uint %r {c}\n"));
        }
        body.push_str(&case.store_component(c));
        for k in 0..wpc {
            word(&mut body, &format!("o{c}_{k}"), 5 + (n + c) * wpc + k);
            body.push_str(&format!("OpStore %p_o{c}_{k} %o{c}_{k}\n"));
        }
    }
    let constants: String = (0..=5 + 2 * n * wpc)
        .map(|k| format!("%c{k} = OpConstant %uint {k}\n"))
        .collect();
    let stride = case.stride();
    format!(
        "OpCapability Shader
{caps}{core}OpCapability GroupNonUniformPartitionedNV
OpExtension \"SPV_NV_shader_subgroup_partitioned\"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main \"main\" %lid
OpExecutionMode %main LocalSize {size} 1 1
OpDecorate %lid BuiltIn LocalInvocationIndex
OpDecorate %words ArrayStride 4
OpMemberDecorate %block 0 Offset 0
OpDecorate %block Block
OpDecorate %buf DescriptorSet 0
OpDecorate %buf Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
{decl}
%v4uint = OpTypeVector %uint 4
%words = OpTypeRuntimeArray %uint
%block = OpTypeStruct %words
%ptr_buf = OpTypePointer StorageBuffer %block
%ptr_u = OpTypePointer StorageBuffer %uint
%ptr_in = OpTypePointer Input %uint
%buf = OpVariable %ptr_buf StorageBuffer
%lid = OpVariable %ptr_in Input
%scope = OpConstant %uint 3
%c32 = OpConstant %uint 32
%cstride = OpConstant %uint {stride}
{constants}%main = OpFunction %void None %fn
%entry = OpLabel
%idx = OpLoad %uint %lid
%base = OpIMul %uint %idx %cstride
%p_active = OpAccessChain %ptr_u %buf %c0 %base
%active = OpLoad %uint %p_active
%is_active = OpINotEqual %bool %active %c0
OpSelectionMerge %end None
OpBranchConditional %is_active %body %end
%body = OpLabel
{body}OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
",
        caps = case.caps,
        decl = case.decl,
    )
}

fn hash(x: u64) -> u64 {
    let mut h = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    h.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (h >> 32)
}

const CASES: [Case; 6] = [
    Case {
        op: "IAdd",
        fold: Fold::Add,
        decl: "%T = OpTypeInt 32 0",
        caps: "",
        width: 32,
        components: 1,
        signed: false,
    },
    Case {
        op: "SMax",
        fold: Fold::SMax,
        decl: "%S = OpTypeInt 32 1\n%T = OpTypeInt 32 1",
        caps: "",
        width: 32,
        components: 1,
        signed: true,
    },
    Case {
        op: "IAdd",
        fold: Fold::Add,
        decl: "%T = OpTypeInt 64 0",
        caps: "OpCapability Int64\n",
        width: 64,
        components: 1,
        signed: false,
    },
    Case {
        op: "UMin",
        fold: Fold::UMin,
        decl: "%T = OpTypeVector %uint 2",
        caps: "",
        width: 32,
        components: 2,
        signed: false,
    },
    Case {
        op: "IAdd",
        fold: Fold::Add,
        decl: "%S = OpTypeInt 8 0\n%T = OpTypeInt 8 0",
        caps: "OpCapability Int8\n",
        width: 8,
        components: 1,
        signed: false,
    },
    Case {
        op: "BitwiseAnd",
        fold: Fold::And,
        decl: "%S = OpTypeInt 8 0\n%T = OpTypeInt 8 0",
        caps: "OpCapability Int8\n",
        width: 8,
        components: 1,
        signed: false,
    },
];

/// One case's buffer for `size` lanes and `seed`, and each lane's expected result (`None` for an
/// inactive lane).
fn inputs(case: &Case, kind: usize, size: usize, seed: u64) -> (Vec<u32>, Vec<Option<Vec<u64>>>) {
    // Lanes inactive by a pattern; keys that spread subsets over every word.
    let active: Vec<bool> = (0..size)
        .map(|l| seed == 0 || !hash(l as u64 + 97 * seed).is_multiple_of(5))
        .collect();
    let key = |l: usize| hash(l as u64 * 7 + seed) % (2 + seed);
    let value = |l: usize, c: usize| case.mask(hash((l * 4 + c) as u64 + 1000 * seed));
    let stride = case.stride();
    let wpc = case.words_per_component();
    let mut words = vec![0u32; size * stride];
    for l in 0..size {
        let lane = &mut words[l * stride..(l + 1) * stride];
        lane[0] = u32::from(active[l]);
        // Every lane of the key, active or not, plus junk beyond the subgroup.
        for j in (0..size).filter(|&j| key(j) == key(l)) {
            lane[1 + j / 32] |= 1 << (j % 32);
        }
        for j in size..128 {
            if hash(j as u64 + seed).is_multiple_of(3) {
                lane[1 + j / 32] |= 1 << (j % 32);
            }
        }
        for c in 0..case.components {
            let v = value(l, c);
            lane[5 + c * wpc] = v as u32;
            if wpc == 2 {
                lane[5 + c * wpc + 1] = (v >> 32) as u32;
            }
        }
    }
    let lanes: Vec<usize> = (0..size).filter(|&l| active[l]).collect();
    let want = (0..size)
        .map(|l| {
            active[l].then(|| {
                let take: Vec<usize> = lanes
                    .iter()
                    .copied()
                    .filter(|&j| key(j) == key(l))
                    .filter(|&j| kind == 0 || (kind == 1 && j <= l) || (kind == 2 && j < l))
                    .collect();
                (0..case.components)
                    .map(|c| {
                        take.iter()
                            .fold(case.identity(), |a, &j| case.combine(a, value(j, c)))
                    })
                    .collect()
            })
        })
        .collect();
    (words, want)
}

#[test]
fn lowered_sequences_at_32_64_and_128_lanes() {
    let scans = [
        ("PartitionedReduceNV", 0),
        ("PartitionedInclusiveScanNV", 1),
        ("PartitionedExclusiveScanNV", 2),
    ];
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for case in &CASES {
        for (scan, kind) in scans {
            for (target_name, arithmetic) in [
                ("vulkan1.1", true),
                ("vulkan1.1", false),
                ("naga", false),
                ("khr-ballot", false),
            ] {
                let mut target = Target::preset(target_name).expect("preset");
                target.ops.arithmetic = arithmetic && target.ops.arithmetic;
                let spv10 = target.spirv_version < (1, 3);
                for size in [32usize, 64, 128] {
                    if size > target.max_subgroup_size as usize {
                        continue;
                    }
                    let ctx = format!(
                        "{} {} {scan} for {target_name} (core arithmetic {arithmetic}) at {size} lanes",
                        case.op, case.decl
                    );
                    let text = module_text(case, scan, spv10, size);
                    let input = tools::assemble(&text, if spv10 { "spv1.0" } else { "vulkan1.1" })
                        .unwrap_or_else(|e| panic!("{ctx}: the test module: {e}\n{text}"));
                    let opts = LowerOptions::new(target.clone());
                    let (out, _) = lower_words(&input, &opts)
                        .unwrap_or_else(|e| panic!("{ctx}: the lowering fails: {e}"));
                    let module = Module::new(&out)
                        .unwrap_or_else(|e| panic!("{ctx}: the simulator cannot load it: {e}"));
                    for seed in 0..4u64 {
                        let (words, want) = inputs(case, kind, size, seed);
                        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
                        for undefined in [seed * 2 + 1, seed * 2 + 2] {
                            let d = Dispatch::default()
                                .with_subgroup_size(size as u32)
                                .with_buffers(BTreeMap::from([((0, 0), bytes.clone())]))
                                .with_seed(undefined);
                            let got = match module.run(&d) {
                                Ok(outcome) => outcome.buffers[&(0, 0)].clone(),
                                Err(e) => {
                                    failures.push(format!("{ctx}, seed {seed}: {e}"));
                                    continue;
                                }
                            };
                            let word = |i: usize| {
                                u64::from(u32::from_le_bytes(
                                    got[i * 4..i * 4 + 4].try_into().expect("four bytes"),
                                ))
                            };
                            let stride = case.stride();
                            let wpc = case.words_per_component();
                            for (l, want) in want.iter().enumerate() {
                                let Some(want) = want else { continue };
                                let at = l * stride + 5 + case.components * wpc;
                                let got: Vec<u64> = (0..case.components)
                                    .map(|c| {
                                        let lo = word(at + c * wpc);
                                        if wpc == 2 {
                                            lo | word(at + c * wpc + 1) << 32
                                        } else {
                                            lo
                                        }
                                    })
                                    .collect();
                                checked += 1;
                                if &got != want {
                                    failures.push(format!(
                                        "{ctx}, seed {seed}, undefined-value seed {undefined}, lane {l}: got {got:x?}, want {want:x?}"
                                    ));
                                    break;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(checked > 20_000, "only {checked} lanes checked");
}
