//! Lane-moving ops on 8-, 16- and 64-bit values on targets without subgroup extended types
//! (`vulkan1.1`, `naga`, `khr-ballot`): the value is split into 32-bit words
//! ([`Code::to_words`]), the same op moves each word, and the words are joined again
//! ([`Code::from_words`]).
//!
//! Every op here moves bits without looking at them, so moving the words of a value is moving the
//! value: the same source lane is read for every word (the lane operand, delta or quad index is
//! the user's, unchanged), and a word of an inactive or out-of-range lane is as undefined as the
//! whole value would be.
//! A `ShuffleUp` whose delta exceeds the lane id (undefined) reads its own lane instead
//! ([`super::lane_read::safe_delta`]): lavapipe 22.3 crashes at subgroup size 16 on the 32-bit op
//! reading lane -2 (docs/lowering.md, "Driver facts").
//! Cost: per 32-bit word one op of the same kind, plus the split and join (a conversion and a
//! shift per 64-bit word, a conversion per narrow value).

use rspirv::dr::{Instruction, Operand};
use spirv::Op;
use spv_subgroup_validate::fit::Missing;

use crate::emit::{Code, Id, Ty};
use crate::LowerError;

/// Whether `op` moves a value between lanes without computing on it.
pub(crate) fn is_move(op: Op) -> bool {
    matches!(
        op,
        Op::GroupNonUniformBroadcast
            | Op::GroupNonUniformBroadcastFirst
            | Op::GroupNonUniformShuffle
            | Op::GroupNonUniformShuffleXor
            | Op::GroupNonUniformShuffleUp
            | Op::GroupNonUniformShuffleDown
            | Op::GroupNonUniformQuadBroadcast
            | Op::GroupNonUniformQuadSwap
            | Op::SubgroupReadInvocationKHR
            | Op::SubgroupFirstInvocationKHR
            | Op::GroupNonUniformRotateKHR
    )
}

/// Whether `inst` is a move the target lacks only for its width (the op itself it has).
pub(crate) fn needs(inst: &Instruction, missing: &[Missing]) -> bool {
    is_move(inst.class.opcode)
        && !missing.is_empty()
        && missing
            .iter()
            .all(|m| matches!(m, Missing::ExtendedTypes { .. }))
}

/// Emits the word-by-word move of `inst`; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let invalid = |message: &str| super::invalid(inst, message);
    let ty: Ty = inst
        .result_type
        .and_then(|t| code.em.ty_of_id(t))
        .ok_or_else(|| invalid("the result type is not a scalar or vector"))?;
    // The KHR ops take no scope: their value is the first operand.
    let at = match inst.class.opcode {
        Op::SubgroupReadInvocationKHR | Op::SubgroupFirstInvocationKHR => 0,
        _ => 1,
    };
    let value = super::id_operand(inst, at, "Value")?;
    if code.em.ty_of_value(value) != Some(ty) {
        return Err(invalid("the value's type differs from the result type"));
    }
    let u32_id = code.em.ty(Ty::U32);
    let words = code.to_words(ty, value);
    let mut base = inst.operands.clone();
    if inst.class.opcode == Op::GroupNonUniformShuffleUp {
        if let Some(Operand::IdRef(delta)) = base.get(2).cloned() {
            if code.em.ty_of_value(delta) == Some(Ty::U32) {
                base[2] = Operand::IdRef(super::lane_read::safe_delta(code, delta)?);
            }
        }
    }
    let mut moved = Vec::with_capacity(words.len());
    for w in words {
        let mut operands = base.clone();
        operands[at] = Operand::IdRef(w);
        moved.push(code.emit(inst.class.opcode, u32_id, operands));
    }
    Ok(code.from_words(ty, &moved))
}
