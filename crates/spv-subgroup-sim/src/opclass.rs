//! Which opcodes the simulator's subgroup semantics ([`crate::group`]) handle, and which are
//! the memory atomics: read when a module is translated (to mark each instruction once), by the
//! executor and by the size trace, so that none needs the semantics themselves.

/// Whether the subgroup instruction `op` has no execution-scope operand (the KHR and EXT
/// forms: their operands start at the value).
pub fn without_scope(op: spirv::Op) -> bool {
    use spirv::Op as O;
    matches!(
        op,
        O::SubgroupBallotKHR
            | O::SubgroupFirstInvocationKHR
            | O::SubgroupAllKHR
            | O::SubgroupAnyKHR
            | O::SubgroupAllEqualKHR
            | O::SubgroupReadInvocationKHR
            | O::GroupNonUniformPartitionEXT
            | O::GroupNonUniformQuadAllKHR
            | O::GroupNonUniformQuadAnyKHR
    )
}

/// Whether `op` is a subgroup instruction handled by `crate::group`.
pub fn is_group(op: spirv::Op) -> bool {
    use spirv::Op as O;
    matches!(
        op,
        O::GroupNonUniformElect
            | O::GroupNonUniformAll
            | O::GroupNonUniformAny
            | O::GroupNonUniformAllEqual
            | O::GroupNonUniformBroadcast
            | O::GroupAll
            | O::GroupAny
            | O::GroupBroadcast
            | O::GroupNonUniformBroadcastFirst
            | O::GroupNonUniformBallot
            | O::GroupNonUniformInverseBallot
            | O::GroupNonUniformBallotBitExtract
            | O::GroupNonUniformBallotBitCount
            | O::GroupNonUniformBallotFindLSB
            | O::GroupNonUniformBallotFindMSB
            | O::GroupNonUniformShuffle
            | O::GroupNonUniformShuffleXor
            | O::GroupNonUniformShuffleUp
            | O::GroupNonUniformShuffleDown
            | O::GroupNonUniformRotateKHR
            | O::GroupNonUniformQuadBroadcast
            | O::GroupNonUniformQuadSwap
            | O::GroupNonUniformQuadAllKHR
            | O::GroupNonUniformQuadAnyKHR
            | O::GroupNonUniformPartitionEXT
            | O::SubgroupBallotKHR
            | O::SubgroupFirstInvocationKHR
            | O::SubgroupAllKHR
            | O::SubgroupAnyKHR
            | O::SubgroupAllEqualKHR
            | O::SubgroupReadInvocationKHR
    ) || arith(op).is_some()
}

/// The binary operation of a subgroup arithmetic opcode (min/max named by their comparison).
pub(crate) fn arith(op: spirv::Op) -> Option<spirv::Op> {
    use spirv::Op as O;
    Some(match op {
        O::GroupNonUniformIAdd => O::IAdd,
        O::GroupNonUniformFAdd => O::FAdd,
        O::GroupNonUniformIMul => O::IMul,
        O::GroupNonUniformFMul => O::FMul,
        O::GroupNonUniformSMin => O::SLessThan,
        O::GroupNonUniformUMin => O::ULessThan,
        O::GroupNonUniformFMin => O::FOrdLessThan,
        O::GroupNonUniformSMax => O::SGreaterThan,
        O::GroupNonUniformUMax => O::UGreaterThan,
        O::GroupNonUniformFMax => O::FOrdGreaterThan,
        O::GroupNonUniformBitwiseAnd | O::GroupNonUniformLogicalAnd => O::BitwiseAnd,
        O::GroupNonUniformBitwiseOr | O::GroupNonUniformLogicalOr => O::BitwiseOr,
        O::GroupNonUniformBitwiseXor | O::GroupNonUniformLogicalXor => O::BitwiseXor,
        // The `Groups` instructions (uniform, and AMD's non-uniform) and those of
        // `SPV_KHR_uniform_group_instructions`, at Subgroup scope.
        O::GroupIAdd | O::GroupIAddNonUniformAMD => O::IAdd,
        O::GroupFAdd | O::GroupFAddNonUniformAMD => O::FAdd,
        O::GroupIMulKHR => O::IMul,
        O::GroupFMulKHR => O::FMul,
        O::GroupSMin | O::GroupSMinNonUniformAMD => O::SLessThan,
        O::GroupUMin | O::GroupUMinNonUniformAMD => O::ULessThan,
        O::GroupFMin | O::GroupFMinNonUniformAMD => O::FOrdLessThan,
        O::GroupSMax | O::GroupSMaxNonUniformAMD => O::SGreaterThan,
        O::GroupUMax | O::GroupUMaxNonUniformAMD => O::UGreaterThan,
        O::GroupFMax | O::GroupFMaxNonUniformAMD => O::FOrdGreaterThan,
        O::GroupBitwiseAndKHR | O::GroupLogicalAndKHR => O::BitwiseAnd,
        O::GroupBitwiseOrKHR | O::GroupLogicalOrKHR => O::BitwiseOr,
        O::GroupBitwiseXorKHR | O::GroupLogicalXorKHR => O::BitwiseXor,
        _ => return None,
    })
}

/// Whether `op` is one of the atomic instructions on memory the simulator runs (`crate::ops`,
/// `crate::memrow`).
pub fn is_atomic(op: spirv::Op) -> bool {
    use spirv::Op as O;
    matches!(
        op,
        O::AtomicLoad
            | O::AtomicStore
            | O::AtomicExchange
            | O::AtomicCompareExchange
            | O::AtomicIIncrement
            | O::AtomicIDecrement
            | O::AtomicIAdd
            | O::AtomicISub
            | O::AtomicSMin
            | O::AtomicUMin
            | O::AtomicSMax
            | O::AtomicUMax
            | O::AtomicAnd
            | O::AtomicOr
            | O::AtomicXor
    )
}
