//! The cost table of `docs/lowering.md`, recomputed from the emitted code so it cannot drift.
//!
//! Each case is a one-instruction module; it is lowered for a target at a fixed subgroup size and
//! the subgroup operations of the output are counted: outside any loop the rewrite emitted, and
//! per round of such a loop. The test renders the table and compares it with the section between
//! `<!-- costs:begin -->` and `<!-- costs:end -->` of `docs/lowering.md`; run with
//! `UPDATE_COSTS=1` to rewrite that section after an intended change. It also checks the goals of
//! issue 3: a vote costs at most 2 ballots (1 op where the target has core vote).

mod lower_common;

use rspirv::dr::{Module, Operand};
use spirv::Op;
use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::tools;

/// A type: its SPIR-V declaration(s) (the last line declares `%T`), the capability it needs, and
/// its name in the table.
struct KeyType {
    name: &'static str,
    decl: &'static str,
    cap: &'static str,
}

const TYPES: &[KeyType] = &[
    KeyType {
        name: "bool",
        decl: "%T = OpTypeBool",
        cap: "",
    },
    KeyType {
        name: "bvec3",
        decl: "%T = OpTypeVector %bool 3",
        cap: "",
    },
    KeyType {
        name: "uint8",
        decl: "%T = OpTypeInt 8 0",
        cap: "Int8",
    },
    KeyType {
        name: "int16",
        decl: "%T = OpTypeInt 16 1",
        cap: "Int16",
    },
    KeyType {
        name: "half",
        decl: "%T = OpTypeFloat 16",
        cap: "Float16",
    },
    KeyType {
        name: "u8vec4",
        decl: "%u8 = OpTypeInt 8 0\n%T = OpTypeVector %u8 4",
        cap: "Int8",
    },
    KeyType {
        name: "f16vec3",
        decl: "%h = OpTypeFloat 16\n%T = OpTypeVector %h 3",
        cap: "Float16",
    },
    KeyType {
        name: "uint",
        decl: "%T = OpTypeInt 32 0",
        cap: "",
    },
    KeyType {
        name: "float",
        decl: "%T = OpTypeFloat 32",
        cap: "",
    },
    KeyType {
        name: "uvec2",
        decl: "%T = OpTypeVector %uint 2",
        cap: "",
    },
    KeyType {
        name: "vec4",
        decl: "%f = OpTypeFloat 32\n%T = OpTypeVector %f 4",
        cap: "",
    },
    KeyType {
        name: "int64",
        decl: "%T = OpTypeInt 64 1",
        cap: "Int64",
    },
    KeyType {
        name: "double",
        decl: "%T = OpTypeFloat 64",
        cap: "Float64",
    },
];

/// One instruction to lower: a table label and the instruction text (`%v` is the value of type
/// `%T`, `%p` a bool, `%ballot` a uvec4 ballot, `%r` the result).
struct Case {
    label: String,
    ty: &'static KeyType,
    inst: String,
    vote: bool,
    /// The targets of its rows.
    targets: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let bool_ty = &TYPES[0];
    let mut out = Vec::new();
    for (label, op) in [
        ("Any", "OpSubgroupAnyKHR"),
        ("All", "OpSubgroupAllKHR"),
        ("AllEqual", "OpSubgroupAllEqualKHR"),
    ] {
        out.push(Case {
            label: format!("vote {label}"),
            ty: bool_ty,
            inst: format!("%r = {op} %bool %p"),
            vote: true,
            targets: &TARGETS,
        });
    }
    for ty in TYPES {
        out.push(Case {
            label: format!("partition {}", ty.name),
            ty,
            inst: "%r = OpGroupNonUniformPartitionNV %v4uint %v".into(),
            vote: false,
            targets: &TARGETS,
        });
    }
    let uint = TYPES.iter().find(|t| t.name == "uint").expect("uint case");
    for (label, g) in [
        ("IAdd reduce", "PartitionedReduceNV"),
        ("IAdd inclusive", "PartitionedInclusiveScanNV"),
        ("IAdd exclusive", "PartitionedExclusiveScanNV"),
    ] {
        out.push(Case {
            label: format!("partitioned {label} uint"),
            ty: uint,
            inst: format!("%r = OpGroupNonUniformIAdd %T %scope {g} %v %ballot"),
            vote: false,
            targets: &TARGETS,
        });
    }
    // Core instructions a target's consumer lacks (naga's front end; `SPV_KHR_shader_ballot`
    // on core targets). On `khr-ballot` a SPIR-V 1.0 module cannot hold core ops: refused.
    let bool_ty = &TYPES[0];
    let vec4 = TYPES.iter().find(|t| t.name == "vec4").expect("vec4 case");
    for (label, ty, inst) in [
        (
            "BallotBitCount reduce",
            uint,
            "%r = OpGroupNonUniformBallotBitCount %uint %scope Reduce %ballot",
        ),
        (
            "BallotBitCount inclusive",
            uint,
            "%r = OpGroupNonUniformBallotBitCount %uint %scope InclusiveScan %ballot",
        ),
        (
            "BallotFindMSB",
            uint,
            "%r = OpGroupNonUniformBallotFindMSB %uint %scope %ballot",
        ),
        (
            "BallotBitExtract",
            uint,
            "%r = OpGroupNonUniformBallotBitExtract %bool %scope %ballot %v",
        ),
        (
            "InverseBallot",
            bool_ty,
            "%r = OpGroupNonUniformInverseBallot %bool %scope %ballot",
        ),
        ("Elect", bool_ty, "%r = OpGroupNonUniformElect %bool %scope"),
        (
            "AllEqual uint",
            uint,
            "%r = OpGroupNonUniformAllEqual %bool %scope %v",
        ),
        (
            "AllEqual vec4",
            vec4,
            "%r = OpGroupNonUniformAllEqual %bool %scope %v",
        ),
        (
            "UMin inclusive uint",
            uint,
            "%r = OpGroupNonUniformUMin %T %scope InclusiveScan %v",
        ),
        (
            "Shuffle bool",
            bool_ty,
            "%r = OpGroupNonUniformShuffle %T %scope %v %scope",
        ),
        (
            "ReadInvocationKHR uint",
            uint,
            "%r = OpSubgroupReadInvocationKHR %T %v %scope",
        ),
    ] {
        out.push(Case {
            label: label.to_owned(),
            ty,
            inst: inst.to_owned(),
            vote: false,
            targets: &TARGETS,
        });
    }
    // Lane moves and arithmetic on 8/16/64-bit values without extended types (`wide_move`,
    // `wide_arith`), and clustered reduce without `clustered`.
    let ty = |name: &str| {
        TYPES
            .iter()
            .find(|t| t.name == name)
            .expect("a type of the table")
    };
    for (label, t, inst) in [
        (
            "Shuffle int64",
            "int64",
            "%r = OpGroupNonUniformShuffle %T %scope %v %scope",
        ),
        (
            "BroadcastFirst f16vec3",
            "f16vec3",
            "%r = OpGroupNonUniformBroadcastFirst %T %scope %v",
        ),
        (
            "IAdd reduce int64",
            "int64",
            "%r = OpGroupNonUniformIAdd %T %scope Reduce %v",
        ),
        (
            "FAdd inclusive double",
            "double",
            "%r = OpGroupNonUniformFAdd %T %scope InclusiveScan %v",
        ),
        (
            "IMul exclusive int16",
            "int16",
            "%r = OpGroupNonUniformIMul %T %scope ExclusiveScan %v",
        ),
        (
            "BitwiseXor reduce uint8",
            "uint8",
            "%r = OpGroupNonUniformBitwiseXor %T %scope Reduce %v",
        ),
        (
            "UMax clustered 4 uint",
            "uint",
            "%r = OpGroupNonUniformUMax %T %scope ClusteredReduce %v %c4",
        ),
        (
            "FMin clustered 8 vec4",
            "vec4",
            "%r = OpGroupNonUniformFMin %T %scope ClusteredReduce %v %c8",
        ),
    ] {
        out.push(Case {
            label: label.to_owned(),
            ty: ty(t),
            inst: inst.to_owned(),
            vote: false,
            targets: &TARGETS,
        });
    }
    // Lane moves whose own capability the target lacks (`lane_read`): quad ops on `naga`, and
    // on the test targets without quad and shuffle relative, or without any shuffle.
    for (label, t, inst) in [
        (
            "QuadBroadcast uint",
            "uint",
            "%r = OpGroupNonUniformQuadBroadcast %T %scope %v %c1",
        ),
        (
            "QuadSwap double",
            "double",
            "%r = OpGroupNonUniformQuadSwap %T %scope %v %c1",
        ),
        (
            "QuadSwap bool",
            "bool",
            "%r = OpGroupNonUniformQuadSwap %T %scope %v %c1",
        ),
        (
            "ShuffleUp uint",
            "uint",
            "%r = OpGroupNonUniformShuffleUp %T %scope %v %c1",
        ),
        (
            "ShuffleDown vec4",
            "vec4",
            "%r = OpGroupNonUniformShuffleDown %T %scope %v %c1",
        ),
        (
            "ShuffleXor uint8",
            "uint8",
            "%r = OpGroupNonUniformShuffleXor %T %scope %v %c1",
        ),
        (
            "Shuffle uint",
            "uint",
            "%r = OpGroupNonUniformShuffle %T %scope %v %scope",
        ),
    ] {
        out.push(Case {
            label: label.to_owned(),
            ty: ty(t),
            inst: inst.to_owned(),
            vote: false,
            targets: &LANE_TARGETS,
        });
    }
    out
}

/// The module text of a case for a SPIR-V version (1.0 modules declare no core capability).
fn module_text(case: &Case, spv10: bool) -> String {
    let mut caps = String::from("OpCapability Shader\n");
    if !case.ty.cap.is_empty() {
        caps += &format!("OpCapability {}\n", case.ty.cap);
    }
    if !spv10 {
        caps += "OpCapability GroupNonUniform\n";
    }
    let exts = if case.vote {
        caps += "OpCapability SubgroupVoteKHR\n";
        "OpExtension \"SPV_KHR_subgroup_vote\"\n"
    } else {
        caps += "OpCapability GroupNonUniformPartitionedNV\n";
        if case.inst.contains("%scope") && !spv10 {
            caps += "OpCapability GroupNonUniformArithmetic\n";
        }
        "OpExtension \"SPV_NV_shader_subgroup_partitioned\"\n"
    };
    // %uint and %bool always exist; the case type is one of them or declared after them.
    let (t, decl) = match case.ty.name {
        "uint" => ("%uint", ""),
        "bool" => ("%bool", ""),
        _ => ("%T", case.ty.decl),
    };
    let inst = case.inst.replace("%T", t);
    format!(
        "{caps}{exts}OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main \"main\"
OpExecutionMode %main LocalSize 128 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%bool = OpTypeBool
{decl}
%v4uint = OpTypeVector %uint 4
%ptr_t = OpTypePointer Function {t}
%ptr_b = OpTypePointer Function %bool
%ptr_m = OpTypePointer Function %v4uint
%scope = OpConstant %uint 3
%c1 = OpConstant %uint 1
%c4 = OpConstant %uint 4
%c8 = OpConstant %uint 8
%main = OpFunction %void None %fn
%entry = OpLabel
%vv = OpVariable %ptr_t Function
%pv = OpVariable %ptr_b Function
%bv = OpVariable %ptr_m Function
%v = OpLoad {t} %vv
%p = OpLoad %bool %pv
%ballot = OpLoad %v4uint %bv
{inst}
OpReturn
OpFunctionEnd
"
    )
}

/// Subgroup operations counted in the emitted code.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
struct Counts {
    ballots: u32,
    shuffles: u32,
    other: u32,
}

impl Counts {
    fn add(&mut self, op: Op) {
        match op {
            Op::GroupNonUniformBallot | Op::SubgroupBallotKHR => self.ballots += 1,
            Op::GroupNonUniformShuffle
            | Op::GroupNonUniformShuffleXor
            | Op::GroupNonUniformShuffleUp
            | Op::GroupNonUniformShuffleDown
            | Op::GroupNonUniformBroadcast
            | Op::GroupNonUniformBroadcastFirst
            | Op::GroupNonUniformQuadBroadcast
            | Op::GroupNonUniformQuadSwap
            | Op::SubgroupReadInvocationKHR
            | Op::SubgroupFirstInvocationKHR => self.shuffles += 1,
            // The 16 arithmetic ops, as the validator lists them.
            op if spv_subgroup_validate::fit::is_arithmetic(op) => self.other += 1,
            Op::GroupNonUniformAll
            | Op::GroupNonUniformAny
            | Op::GroupNonUniformAllEqual
            | Op::GroupNonUniformElect
            | Op::GroupNonUniformBallotBitCount
            | Op::GroupNonUniformBallotFindLSB
            | Op::GroupNonUniformBallotFindMSB
            | Op::GroupNonUniformBallotBitExtract
            | Op::GroupNonUniformInverseBallot => self.other += 1,
            _ => {}
        }
    }
}

/// Counts outside loops, per loop round, and the number of loops.
fn count(words: &[u32]) -> (Counts, Counts, u32) {
    let m: Module = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("output loads");
    let (mut outside, mut inside, mut loops) = (Counts::default(), Counts::default(), 0);
    let mut open: Vec<u32> = Vec::new();
    for block in m.functions.iter().flat_map(|f| &f.blocks) {
        let label = block.label.as_ref().and_then(|l| l.result_id).unwrap_or(0);
        open.retain(|&merge| merge != label);
        for inst in &block.instructions {
            if inst.class.opcode == Op::LoopMerge {
                loops += 1;
                if let Some(Operand::IdRef(merge)) = inst.operands.first() {
                    open.push(*merge);
                }
            }
            if open.is_empty() {
                outside.add(inst.class.opcode);
            } else {
                inside.add(inst.class.opcode);
            }
        }
    }
    (outside, inside, loops)
}

/// The targets of the table: core subgroups, naga's front end, SPIR-V 1.0 with KHR ballot.
const TARGETS: [&str; 3] = ["vulkan1.1", "naga", "khr-ballot"];
/// The targets of the lane-move rows: two test targets (`lower_common::test_target`) beside
/// the presets that rewrite them.
const LANE_TARGETS: [&str; 4] = ["vulkan1.1", "naga", "no-quad-relative", "ballot-only"];
/// The subgroup sizes of the table, each capped at the target's largest.
const SIZES: [u32; 2] = [32, 128];

fn table() -> (String, Vec<String>) {
    let mut md = String::from(
        "| rewrite | target | fixed, 32 lanes | per round, 32 lanes | fixed, 128 lanes | per round, 128 lanes |\n|---|---|---|---|---|---|\n",
    );
    let mut goals = Vec::new();
    for case in cases() {
        for &target_name in case.targets {
            let target = Target::preset(target_name)
                .or_else(|| lower_common::test_target(target_name))
                .expect("a preset or a test target");
            let spv10 = target.spirv_version < (1, 3);
            let mut row = format!("| {} | {target_name} |", case.label);
            for size in SIZES {
                // A size above the target's largest is shown at that largest size.
                let size = size.min(target.max_subgroup_size);
                let text = module_text(&case, spv10);
                let words = tools::assemble(&text, if spv10 { "spv1.0" } else { "spv1.3" })
                    .unwrap_or_else(|e| panic!("{}: {e}\n{text}", case.label));
                let opts = LowerOptions::new(target.clone()).with_subgroup_size(Some(size));
                let lanes = if size == SIZES[0] || size == SIZES[1] {
                    String::new()
                } else {
                    format!(" (at {size} lanes)")
                };
                match lower_words(&words, &opts) {
                    Err(e) => row += &format!(" not lowered: {} | |", short(&e.to_string())),
                    Ok((out, _)) => {
                        let (o, i, loops) = count(&out);
                        if case.vote {
                            let ok = if target.ops.vote && !spv10 {
                                o.other <= 2 && o.ballots == 0
                            } else {
                                o.ballots <= 2
                            };
                            if !ok {
                                goals.push(format!("{} on {target_name}: {o:?}", case.label));
                            }
                        }
                        let per_round = if loops == 0 {
                            "-".to_owned()
                        } else {
                            format!("{}, ≤ {size} rounds", fmt(i))
                        };
                        row += &format!(" {}{lanes} | {per_round} |", fmt(o));
                    }
                }
            }
            md += &row;
            md.push('\n');
        }
    }
    (md, goals)
}

/// `ballots / shuffles / other` as a table cell.
fn fmt(c: Counts) -> String {
    format!("{} / {} / {}", c.ballots, c.shuffles, c.other)
}

fn short(s: &str) -> String {
    s.split(": ").last().unwrap_or(s).to_owned()
}

#[test]
fn cost_table_matches_the_docs() {
    let (md, goals) = table();
    assert!(goals.is_empty(), "cost goals missed: {goals:#?}");
    let path = tools::workspace_root().join("docs/lowering.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (begin, end) = ("<!-- costs:begin -->\n", "<!-- costs:end -->");
    let a = doc.find(begin).expect("costs:begin marker") + begin.len();
    let b = doc.find(end).expect("costs:end marker");
    if doc[a..b] != md {
        if std::env::var_os("UPDATE_COSTS").is_some() {
            std::fs::write(&path, format!("{}{md}{}", &doc[..a], &doc[b..])).expect("write docs");
        } else {
            panic!("the cost table in docs/lowering.md is out of date; run with UPDATE_COSTS=1. Expected:\n{md}");
        }
    }
}
