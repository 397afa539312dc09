//! What a target lacks for one subgroup instruction: the one table that both the validator's
//! target-fit rules (SG0701, SG0703, SG0704) and the lowering's rewrite dispatch read.
//!
//! Callers describe the instruction plainly ([`InstFit`]: opcode, group operation, the value
//! operand's and the result's scalar kind, width and component count) so the table needs no
//! module; the validator describes it from words, the lowering from its own type index.
//! [`missing`] returns every missing feature, in the order the validator reports them.

use spirv::{BuiltIn, Capability, GroupOperation, Op};

use crate::target::{Target, PRESETS};

/// The component kind of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `OpTypeBool`.
    Bool,
    /// `OpTypeInt` with its signedness.
    Int {
        /// Whether the type is signed.
        signed: bool,
    },
    /// `OpTypeFloat`.
    Float,
}

/// A scalar or vector type as the table needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueType {
    /// Component kind.
    pub kind: Kind,
    /// Component width in bits (bool counts as 32: it crosses lanes as a word).
    pub width: u32,
    /// Component count (1 for a scalar).
    pub components: u32,
}

/// One instruction as the table sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstFit {
    /// The opcode.
    pub opcode: Op,
    /// The raw group-operation operand, for the ops that take one (reduce 0, scans 1/2,
    /// clustered 3, partitioned 6-8); for `OpGroupNonUniformRotateKHR`, which takes none,
    /// `Some(3)` (clustered) when it has a `ClusterSize` operand, the feature that adds.
    pub group_op: Option<u32>,
    /// The type of the value that crosses lanes (`None` for ops whose operand is a predicate,
    /// a ballot or nothing).
    pub value: Option<ValueType>,
    /// The result type, if the instruction has a scalar or vector result.
    pub result: Option<ValueType>,
}

/// A consumer restriction (naga's front end) that rejects part of core SPIR-V.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Restriction {
    /// Ballot bit ops and `OpGroupNonUniformInverseBallot`.
    BallotBitOps,
    /// `OpGroupNonUniformElect`.
    Elect,
    /// Shuffles and broadcasts of bool values.
    BoolShuffle,
    /// `OpGroupNonUniformAllEqual`.
    AllEqual,
    /// Inclusive and exclusive scans other than of Add and Mul.
    ScanOp,
    /// Bitwise group operations on values narrower than 32 bits.
    NarrowBitwise,
    /// The mask built-ins (`SubgroupEqMask`..`SubgroupLtMask`).
    MaskBuiltin(BuiltIn),
    /// `OpGroupNonUniformLogicalAnd/Or/Xor` (naga's validator takes bool operands only in `All`
    /// and `Any`).
    LogicalOp,
}

impl Restriction {
    /// What the consumer does not accept, as a phrase ("ballot bit operations").
    pub fn what(self) -> String {
        match self {
            Restriction::BallotBitOps => "ballot bit operations".into(),
            Restriction::Elect => "OpGroupNonUniformElect".into(),
            Restriction::BoolShuffle => "shuffles and broadcasts of bool values".into(),
            Restriction::AllEqual => "OpGroupNonUniformAllEqual".into(),
            Restriction::ScanOp => "inclusive or exclusive scans other than of Add and Mul".into(),
            Restriction::NarrowBitwise => {
                "bitwise group operations on values narrower than 32 bits".into()
            }
            Restriction::MaskBuiltin(b) => format!("the built-in `{b:?}`"),
            Restriction::LogicalOp => {
                "group operations on bool values other than All and Any".into()
            }
        }
    }
}

/// One thing a target lacks for an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Missing {
    /// A capability (a group of subgroup ops or an extension's) the target does not have.
    Capability(Capability),
    /// Subgroup operations on values of this width (no `shaderSubgroupExtendedTypes`).
    ExtendedTypes {
        /// The component width of the value.
        width: u32,
    },
    /// A consumer restriction.
    Restriction(Restriction),
    /// `OpGroupNonUniformRotateKHR` with a `ClusterSize`, on a target with rotate but without
    /// `shaderSubgroupRotateClustered` (a feature, not a capability: both need
    /// `GroupNonUniformRotateKHR`).
    RotateClustered,
    /// An instruction of an extended instruction set that declares no capability but needs a
    /// device extension: `SPV_AMD_shader_ballot`'s, which need `VK_AMD_shader_ballot` (the
    /// target's `ops.groups`).
    DeviceExtension(&'static str),
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Capability(c) => write!(f, "capability `{c:?}`"),
            Missing::ExtendedTypes { width } => {
                write!(
                    f,
                    "subgroup operations on {width}-bit values (extended types)"
                )
            }
            Missing::Restriction(r) => write!(f, "{}", r.what()),
            Missing::RotateClustered => {
                write!(f, "clustered rotates (`shaderSubgroupRotateClustered`)")
            }
            Missing::DeviceExtension(e) => write!(f, "the device extension `{e}` (`ops.groups`)"),
        }
    }
}

/// Whether `op` is one of the subgroup instructions the table knows.
pub fn is_subgroup_op(op: Op) -> bool {
    required_capability(op, None).is_some()
}

/// The capability an instruction needs, as the target sees it (the partitioned group
/// operations need the partitioned capability, clustered reduce the clustered one).
///
/// Every core and KHR instruction that takes a subgroup scope or works on a subgroup is here
/// (checked against the SPIR-V grammar's instructions whose capabilities are subgroup ones; see
/// `docs/targets.md`, "Which instructions a target is asked about"): the core non-uniform
/// groups, rotate (`SPV_KHR_subgroup_rotate`), quad control (`SPV_KHR_quad_control`), the
/// KHR vote and ballot extensions, the partitioned extension, and the `Groups` instructions
/// (core, kernel-era, with any scope; Vulkan exposes them only through `VK_AMD_shader_ballot`)
/// with `SPV_KHR_uniform_group_instructions`. Vendor instructions (Intel's) are not.
pub fn required_capability(op: Op, group_op: Option<u32>) -> Option<Capability> {
    use Capability as C;
    use Op as O;
    Some(match op {
        O::SubgroupAllKHR | O::SubgroupAnyKHR | O::SubgroupAllEqualKHR => C::SubgroupVoteKHR,
        O::GroupNonUniformPartitionEXT => C::GroupNonUniformPartitionedEXT,
        O::SubgroupBallotKHR | O::SubgroupFirstInvocationKHR | O::SubgroupReadInvocationKHR => {
            C::SubgroupBallotKHR
        }
        O::GroupNonUniformElect => C::GroupNonUniform,
        O::GroupNonUniformAll | O::GroupNonUniformAny | O::GroupNonUniformAllEqual => {
            C::GroupNonUniformVote
        }
        O::GroupNonUniformBroadcast
        | O::GroupNonUniformBroadcastFirst
        | O::GroupNonUniformBallot
        | O::GroupNonUniformInverseBallot
        | O::GroupNonUniformBallotBitExtract
        | O::GroupNonUniformBallotBitCount
        | O::GroupNonUniformBallotFindLSB
        | O::GroupNonUniformBallotFindMSB => C::GroupNonUniformBallot,
        O::GroupNonUniformShuffle | O::GroupNonUniformShuffleXor => C::GroupNonUniformShuffle,
        O::GroupNonUniformShuffleUp | O::GroupNonUniformShuffleDown => {
            C::GroupNonUniformShuffleRelative
        }
        O::GroupNonUniformQuadBroadcast | O::GroupNonUniformQuadSwap => C::GroupNonUniformQuad,
        O::GroupNonUniformRotateKHR => C::GroupNonUniformRotateKHR,
        O::GroupNonUniformQuadAllKHR | O::GroupNonUniformQuadAnyKHR => C::QuadControlKHR,
        O::GroupAll
        | O::GroupAny
        | O::GroupBroadcast
        | O::GroupIAdd
        | O::GroupFAdd
        | O::GroupFMin
        | O::GroupUMin
        | O::GroupSMin
        | O::GroupFMax
        | O::GroupUMax
        | O::GroupSMax
        | O::GroupIAddNonUniformAMD
        | O::GroupFAddNonUniformAMD
        | O::GroupFMinNonUniformAMD
        | O::GroupUMinNonUniformAMD
        | O::GroupSMinNonUniformAMD
        | O::GroupFMaxNonUniformAMD
        | O::GroupUMaxNonUniformAMD
        | O::GroupSMaxNonUniformAMD => C::Groups,
        O::GroupIMulKHR
        | O::GroupFMulKHR
        | O::GroupBitwiseAndKHR
        | O::GroupBitwiseOrKHR
        | O::GroupBitwiseXorKHR
        | O::GroupLogicalAndKHR
        | O::GroupLogicalOrKHR
        | O::GroupLogicalXorKHR => C::GroupUniformArithmeticKHR,
        op if is_arithmetic(op) => match group_op {
            Some(g) if g == GroupOperation::ClusteredReduce as u32 => C::GroupNonUniformClustered,
            Some(6..=8) => C::GroupNonUniformPartitionedEXT,
            _ => C::GroupNonUniformArithmetic,
        },
        _ => return None,
    })
}

/// The 16 arithmetic group operations (the only ones a partitioned group operation may take).
pub fn is_arithmetic(op: Op) -> bool {
    matches!(
        op,
        Op::GroupNonUniformIAdd
            | Op::GroupNonUniformFAdd
            | Op::GroupNonUniformIMul
            | Op::GroupNonUniformFMul
            | Op::GroupNonUniformSMin
            | Op::GroupNonUniformUMin
            | Op::GroupNonUniformFMin
            | Op::GroupNonUniformSMax
            | Op::GroupNonUniformUMax
            | Op::GroupNonUniformFMax
            | Op::GroupNonUniformBitwiseAnd
            | Op::GroupNonUniformBitwiseOr
            | Op::GroupNonUniformBitwiseXor
            | Op::GroupNonUniformLogicalAnd
            | Op::GroupNonUniformLogicalOr
            | Op::GroupNonUniformLogicalXor
    )
}

/// The word holding the Memory scope of a barrier or atomic instruction, if `op` is one (the
/// opcode's word is 0). The validator's scope rules and the lowering (which keeps these
/// instructions in view, and reads the scope) both use it.
pub fn memory_scope_word(op: Op) -> Option<usize> {
    Some(match op {
        // OpControlBarrier Execution Memory Semantics; OpMemoryBarrier Memory Semantics.
        Op::ControlBarrier => 2,
        Op::MemoryBarrier => 1,
        // OpAtomicStore Pointer Memory Semantics Value.
        Op::AtomicStore => 2,
        // Result Type, Result, Pointer, Memory, Semantics...
        Op::AtomicLoad
        | Op::AtomicExchange
        | Op::AtomicCompareExchange
        | Op::AtomicCompareExchangeWeak
        | Op::AtomicIIncrement
        | Op::AtomicIDecrement
        | Op::AtomicIAdd
        | Op::AtomicISub
        | Op::AtomicSMin
        | Op::AtomicUMin
        | Op::AtomicSMax
        | Op::AtomicUMax
        | Op::AtomicAnd
        | Op::AtomicOr
        | Op::AtomicXor
        | Op::AtomicFAddEXT
        | Op::AtomicFMinEXT
        | Op::AtomicFMaxEXT => 4,
        _ => return None,
    })
}

/// Which operand of a subgroup instruction is the value that crosses lanes (the one whose width
/// extended types govern), counted among the operands after the result type and result id:
/// the operand after the scope (after the group operation for arithmetic), or the first operand
/// of the ops that take no scope (the partition op, the KHR reads). `None` for the ops whose
/// operand is a predicate, a ballot or nothing, and for every instruction that is no subgroup op.
/// Both the validator's target fit and the lowering read it, so they describe an instruction
/// alike.
pub fn value_operand(op: Op) -> Option<usize> {
    use Op as O;
    match op {
        O::SubgroupAllKHR
        | O::SubgroupAnyKHR
        | O::SubgroupAllEqualKHR
        | O::SubgroupBallotKHR
        | O::GroupNonUniformElect
        | O::GroupNonUniformAll
        | O::GroupNonUniformAny
        | O::GroupNonUniformBallot
        | O::GroupNonUniformInverseBallot
        | O::GroupNonUniformBallotBitExtract
        | O::GroupNonUniformBallotBitCount
        | O::GroupNonUniformBallotFindLSB
        | O::GroupNonUniformBallotFindMSB
        | O::GroupNonUniformQuadAllKHR
        | O::GroupNonUniformQuadAnyKHR
        | O::GroupAll
        | O::GroupAny => None,
        O::GroupNonUniformPartitionEXT
        | O::SubgroupFirstInvocationKHR
        | O::SubgroupReadInvocationKHR => Some(0),
        op if is_arithmetic(op) => Some(2),
        // Scope, Operation, X.
        op if required_capability(op, None).is_some_and(|c| {
            matches!(
                c,
                Capability::Groups | Capability::GroupUniformArithmeticKHR
            )
        }) && op != O::GroupBroadcast =>
        {
            Some(2)
        }
        op if is_subgroup_op(op) => Some(1),
        _ => None,
    }
}

/// Whether the target accepts a module declaring `cap` (every core non-uniform group also
/// needs the basic group).
pub fn target_has(t: &Target, cap: Capability) -> bool {
    use Capability as C;
    let basic = matches!(
        cap,
        C::GroupNonUniformVote
            | C::GroupNonUniformArithmetic
            | C::GroupNonUniformBallot
            | C::GroupNonUniformShuffle
            | C::GroupNonUniformShuffleRelative
            | C::GroupNonUniformClustered
            | C::GroupNonUniformQuad
            | C::GroupNonUniformRotateKHR
    );
    t.has_capability(cap) && (!basic || t.has_capability(C::GroupNonUniform))
}

/// Everything `t` lacks for `inst`: the capability first, then a restriction, then the
/// extended types (empty when it fits, or when it is no subgroup instruction).
pub fn missing(t: &Target, inst: &InstFit) -> Vec<Missing> {
    let mut out = Vec::new();
    let Some(cap) = required_capability(inst.opcode, inst.group_op) else {
        return out;
    };
    if !target_has(t, cap) {
        out.push(Missing::Capability(cap));
    } else if inst.opcode == Op::GroupNonUniformRotateKHR
        && inst.group_op == Some(GroupOperation::ClusteredReduce as u32)
        && !t.ops.rotate_clustered
    {
        out.push(Missing::RotateClustered);
    }
    if let Some(r) = restriction(t, inst) {
        out.push(Missing::Restriction(r));
    }
    if !t.extended_types {
        if let Some(v) = inst.value.filter(|v| v.width != 32) {
            out.push(Missing::ExtendedTypes { width: v.width });
        }
    }
    out
}

/// The restriction of `t` that rejects `inst`, if any.
fn restriction(t: &Target, inst: &InstFit) -> Option<Restriction> {
    use Op as O;
    let r = t.restrictions;
    match inst.opcode {
        O::GroupNonUniformBallotBitExtract
        | O::GroupNonUniformBallotBitCount
        | O::GroupNonUniformBallotFindLSB
        | O::GroupNonUniformBallotFindMSB
        | O::GroupNonUniformInverseBallot => {
            r.no_ballot_bit_ops.then_some(Restriction::BallotBitOps)
        }
        O::GroupNonUniformElect => r.no_elect.then_some(Restriction::Elect),
        O::GroupNonUniformShuffle
        | O::GroupNonUniformShuffleXor
        | O::GroupNonUniformShuffleUp
        | O::GroupNonUniformShuffleDown
        | O::GroupNonUniformBroadcast
        | O::GroupNonUniformBroadcastFirst
        | O::GroupNonUniformQuadBroadcast
        | O::GroupNonUniformQuadSwap => (r.no_bool_shuffle
            && inst.result.is_some_and(|v| v.kind == Kind::Bool))
        .then_some(Restriction::BoolShuffle),
        O::GroupNonUniformAllEqual => r.no_all_equal.then_some(Restriction::AllEqual),
        op if is_arithmetic(op) => {
            let scan = matches!(inst.group_op, Some(1 | 2));
            let add_mul = matches!(
                op,
                O::GroupNonUniformIAdd
                    | O::GroupNonUniformFAdd
                    | O::GroupNonUniformIMul
                    | O::GroupNonUniformFMul
            );
            let bitwise = matches!(
                op,
                O::GroupNonUniformBitwiseAnd
                    | O::GroupNonUniformBitwiseOr
                    | O::GroupNonUniformBitwiseXor
            );
            let narrow = inst
                .result
                .is_some_and(|v| matches!(v.kind, Kind::Int { .. }) && v.width < 32);
            let logical = matches!(
                op,
                O::GroupNonUniformLogicalAnd
                    | O::GroupNonUniformLogicalOr
                    | O::GroupNonUniformLogicalXor
            );
            if r.no_logical_ops && logical {
                Some(Restriction::LogicalOp)
            } else if r.scans_add_mul_only && scan && !add_mul {
                Some(Restriction::ScanOp)
            } else if r.bitwise_32_bit_only && bitwise && narrow {
                Some(Restriction::NarrowBitwise)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// The execution models naga 30's SPIR-V front end reads: vertex, fragment, compute and EXT
/// task/mesh shaders (the validator's `naga` rules and the lowering's refusal both read it).
pub const NAGA_STAGES: [spirv::ExecutionModel; 5] = [
    spirv::ExecutionModel::Vertex,
    spirv::ExecutionModel::Fragment,
    spirv::ExecutionModel::GLCompute,
    spirv::ExecutionModel::TaskEXT,
    spirv::ExecutionModel::MeshEXT,
];

/// Whether execution model number `model` is one of [`NAGA_STAGES`].
pub fn naga_reads_stage(model: u32) -> bool {
    NAGA_STAGES.iter().any(|&m| m as u32 == model)
}

/// The extensions whose only purpose is a subgroup capability the lowering can make unneeded:
/// each goes with its capability (Vulkan refuses a module declaring an extension the device
/// lacks, VUID-VkShaderModuleCreateInfo-pCode-08742, and naga refuses ones it does not know).
pub const CAPABILITY_EXTENSIONS: [(&str, Capability); 7] = [
    ("SPV_KHR_subgroup_vote", Capability::SubgroupVoteKHR),
    (
        "SPV_NV_shader_subgroup_partitioned",
        Capability::GroupNonUniformPartitionedEXT,
    ),
    (
        "SPV_EXT_shader_subgroup_partitioned",
        Capability::GroupNonUniformPartitionedEXT,
    ),
    (
        "SPV_KHR_subgroup_rotate",
        Capability::GroupNonUniformRotateKHR,
    ),
    ("SPV_KHR_quad_control", Capability::QuadControlKHR),
    // Also the name of an extended instruction set; kept while the module imports it.
    (AMD_SHADER_BALLOT, Capability::Groups),
    (
        "SPV_KHR_uniform_group_instructions",
        Capability::GroupUniformArithmeticKHR,
    ),
];

/// The capability extension `name` exists for, if it is one of [`CAPABILITY_EXTENSIONS`].
pub fn extension_capability(name: &str) -> Option<Capability> {
    CAPABILITY_EXTENSIONS
        .iter()
        .find_map(|&(e, c)| (e == name).then_some(c))
}

/// The name of `SPV_AMD_shader_ballot`'s extended instruction set (and of the extension).
pub const AMD_SHADER_BALLOT: &str = "SPV_AMD_shader_ballot";

/// The instructions of `SPV_AMD_shader_ballot`'s extended instruction set, by number.
pub fn amd_ballot_instruction(number: u32) -> Option<&'static str> {
    Some(match number {
        1 => "SwizzleInvocationsAMD",
        2 => "SwizzleInvocationsMaskedAMD",
        3 => "WriteInvocationAMD",
        4 => "MbcntAMD",
        _ => return None,
    })
}

/// What `t` lacks for instruction `number` of the extended instruction set imported as `set`
/// (an `OpExtInst`): `SPV_AMD_shader_ballot`'s four need `VK_AMD_shader_ballot`, the target's
/// `ops.groups` (docs/targets.md); no other set's instruction is a subgroup one.
pub fn missing_ext_inst(t: &Target, set: &str, number: u32) -> Option<Missing> {
    (set == AMD_SHADER_BALLOT && amd_ballot_instruction(number).is_some() && !t.ops.groups)
        .then_some(Missing::DeviceExtension("VK_AMD_shader_ballot"))
}

/// What `t` lacks for a variable decorated with built-in `b` (a raw `BuiltIn` number).
pub fn missing_builtin(t: &Target, b: u32) -> Option<Missing> {
    let builtin = BuiltIn::from_u32(b)?;
    let mask = matches!(
        builtin,
        BuiltIn::SubgroupEqMask
            | BuiltIn::SubgroupGeMask
            | BuiltIn::SubgroupGtMask
            | BuiltIn::SubgroupLeMask
            | BuiltIn::SubgroupLtMask
    );
    (mask && t.restrictions.no_mask_builtins)
        .then_some(Missing::Restriction(Restriction::MaskBuiltin(builtin)))
}

/// The first preset that takes `inst` as it is, for "what target would take it" in a refusal.
pub fn preset_taking(inst: &InstFit) -> Option<&'static str> {
    PRESETS
        .iter()
        .map(|p| p.0)
        .find(|name| Target::preset(name).is_some_and(|t| missing(&t, inst).is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn preset(name: &str) -> Target {
        Target::preset(name).expect("preset exists")
    }

    const U64: ValueType = ValueType {
        kind: Kind::Int { signed: false },
        width: 64,
        components: 1,
    };

    #[test]
    fn shuffle_of_64_bit_values() {
        let inst = InstFit {
            opcode: Op::GroupNonUniformShuffle,
            group_op: None,
            value: Some(U64),
            result: Some(U64),
        };
        assert_eq!(
            missing(&preset("vulkan1.1"), &inst),
            vec![Missing::ExtendedTypes { width: 64 }]
        );
        assert!(missing(&preset("lavapipe"), &inst).is_empty());
        // Vulkan 1.2 requires extended types: its preset is the first that takes it.
        assert_eq!(preset_taking(&inst), Some("vulkan1.2"));
    }

    #[test]
    fn clustered_and_partitioned_group_operations() {
        let mut inst = InstFit {
            opcode: Op::GroupNonUniformIAdd,
            group_op: Some(3),
            value: None,
            result: None,
        };
        assert_eq!(
            missing(&preset("lavapipe"), &inst),
            vec![Missing::Capability(Capability::GroupNonUniformClustered)]
        );
        assert!(missing(&preset("vulkan1.1"), &inst).is_empty());
        inst.group_op = Some(7);
        assert_eq!(
            missing(&preset("vulkan1.1"), &inst),
            vec![Missing::Capability(
                Capability::GroupNonUniformPartitionedEXT
            )]
        );
        assert_eq!(preset_taking(&inst), Some("nvidia"));
    }

    #[test]
    fn restrictions_and_builtins() {
        let inst = InstFit {
            opcode: Op::GroupNonUniformUMin,
            group_op: Some(1),
            value: None,
            result: None,
        };
        assert_eq!(
            missing(&preset("naga"), &inst),
            vec![Missing::Restriction(Restriction::ScanOp)]
        );
        assert!(missing(&preset("vulkan1.1"), &inst).is_empty());
        // Logical ops on bools: naga's validator takes bool operands in All and Any only, so
        // every group operation of LogicalAnd/Or/Xor, reduces included, is refused.
        for (opcode, group_op) in [
            (Op::GroupNonUniformLogicalAnd, 0),
            (Op::GroupNonUniformLogicalOr, 0),
            (Op::GroupNonUniformLogicalXor, 1),
        ] {
            let inst = InstFit {
                opcode,
                group_op: Some(group_op),
                value: None,
                result: None,
            };
            assert_eq!(
                missing(&preset("naga"), &inst),
                vec![Missing::Restriction(Restriction::LogicalOp)],
                "{opcode:?}"
            );
            assert!(missing(&preset("vulkan1.1"), &inst).is_empty());
        }
        assert!(missing_builtin(&preset("naga"), BuiltIn::SubgroupLtMask as u32).is_some());
        assert!(missing_builtin(&preset("naga"), BuiltIn::SubgroupSize as u32).is_none());
        assert!(missing_builtin(&preset("vulkan1.1"), BuiltIn::SubgroupLtMask as u32).is_none());
    }

    #[test]
    fn value_operands() {
        assert_eq!(value_operand(Op::GroupNonUniformShuffle), Some(1));
        assert_eq!(value_operand(Op::GroupNonUniformQuadSwap), Some(1));
        assert_eq!(value_operand(Op::GroupNonUniformFAdd), Some(2));
        assert_eq!(value_operand(Op::GroupNonUniformPartitionEXT), Some(0));
        assert_eq!(value_operand(Op::SubgroupReadInvocationKHR), Some(0));
        assert_eq!(value_operand(Op::GroupNonUniformBallotBitCount), None);
        assert_eq!(value_operand(Op::SubgroupAllKHR), None);
        assert_eq!(value_operand(Op::IAdd), None);
    }

    #[test]
    fn rotate_quad_control_and_groups() {
        let rotate = |group_op| InstFit {
            opcode: Op::GroupNonUniformRotateKHR,
            group_op,
            value: None,
            result: None,
        };
        let cap = |c| vec![Missing::Capability(c)];
        for t in ["vulkan1.1", "lavapipe", "khr-ballot", "naga"] {
            assert_eq!(
                missing(&preset(t), &rotate(None)),
                cap(Capability::GroupNonUniformRotateKHR),
                "{t}"
            );
        }
        assert!(missing(&preset("nvidia"), &rotate(Some(3))).is_empty());
        let mut no_clusters = preset("nvidia");
        no_clusters.ops.rotate_clustered = false;
        assert!(missing(&no_clusters, &rotate(None)).is_empty());
        assert_eq!(
            missing(&no_clusters, &rotate(Some(3))),
            vec![Missing::RotateClustered]
        );
        // Vulkan 1.4 requires the clustered rotate: its preset is the first that takes it.
        assert_eq!(preset_taking(&rotate(Some(3))), Some("vulkan1.4"));
        let quad_all = InstFit {
            opcode: Op::GroupNonUniformQuadAllKHR,
            ..rotate(None)
        };
        assert_eq!(
            missing(&preset("lavapipe"), &quad_all),
            cap(Capability::QuadControlKHR)
        );
        assert!(missing(&preset("nvidia"), &quad_all).is_empty());
        for op in [Op::GroupIAdd, Op::GroupAny, Op::GroupSMaxNonUniformAMD] {
            let inst = InstFit {
                opcode: op,
                ..rotate(None)
            };
            assert_eq!(
                missing(&preset("nvidia"), &inst),
                cap(Capability::Groups),
                "{op:?}"
            );
            let mut amd = preset("vulkan1.1");
            amd.ops.groups = true;
            assert!(missing(&amd, &inst).is_empty(), "{op:?}");
        }
        let uniform = InstFit {
            opcode: Op::GroupIMulKHR,
            ..rotate(None)
        };
        assert_eq!(preset_taking(&uniform), None);
        assert_eq!(value_operand(Op::GroupNonUniformRotateKHR), Some(1));
        assert_eq!(value_operand(Op::GroupIAdd), Some(2));
        assert_eq!(value_operand(Op::GroupBroadcast), Some(1));
        assert_eq!(value_operand(Op::GroupIMulKHR), Some(2));
        assert_eq!(value_operand(Op::GroupAll), None);
        assert_eq!(value_operand(Op::GroupNonUniformQuadAnyKHR), None);
    }

    #[test]
    fn amd_ballot_instructions_need_the_groups_flag() {
        for n in 1..=4 {
            for p in ["vulkan1.1", "lavapipe", "nvidia", "khr-ballot", "naga"] {
                assert_eq!(
                    missing_ext_inst(&preset(p), AMD_SHADER_BALLOT, n),
                    Some(Missing::DeviceExtension("VK_AMD_shader_ballot")),
                    "{p} {n}"
                );
            }
            let mut amd = preset("vulkan1.1");
            amd.ops.groups = true;
            assert_eq!(missing_ext_inst(&amd, AMD_SHADER_BALLOT, n), None);
        }
        assert_eq!(missing_ext_inst(&preset("naga"), "GLSL.std.450", 4), None);
        assert_eq!(
            missing_ext_inst(&preset("naga"), AMD_SHADER_BALLOT, 5),
            None
        );
        assert_eq!(amd_ballot_instruction(4), Some("MbcntAMD"));
    }

    #[test]
    fn non_subgroup_ops_lack_nothing() {
        let inst = InstFit {
            opcode: Op::IAdd,
            group_op: None,
            value: Some(U64),
            result: Some(U64),
        };
        assert!(missing(&preset("khr-ballot"), &inst).is_empty());
        assert!(!is_subgroup_op(Op::IAdd));
    }
}
