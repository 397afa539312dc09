//! `OpGroupNonUniformQuadAllKHR`/`QuadAnyKHR` (`SPV_KHR_quad_control`) where the target lacks
//! `QuadControlKHR`: a ballot, then the quad's four bits of it.
//!
//! A quad is the four invocations whose `SubgroupLocalInvocationId / 4` is the same, so its bits
//! in a ballot are one nibble of one 32-bit word: word `lane >> 5`, bits from `lane & 28`.
//! `QuadAny(p)` is whether the nibble of `ballot(p)` has a bit set; `QuadAll(p)` whether the
//! nibble of `ballot(!p)` has none. A ballot has bits only for active invocations, so both look
//! at the active invocations of the quad alone, as the spec asks.
//! Cost: one ballot, a shift and two bitwise ops (a dynamic extract too with 4-word masks).
//!
//! The extension's execution modes (`QuadDerivativesKHR`, `RequireFullQuadsKHR`) are guarantees
//! of the device that no rewrite gives: the driver refuses a module declaring one
//! (`pipeline::check_execution_modes`).

use rspirv::dr::Instruction;
use spirv::Op;

use super::id_operand;
use crate::emit::{Code, Id, Ty};
use crate::LowerError;

/// Whether `op` is one of the quad votes.
pub(crate) fn is_quad_vote(op: Op) -> bool {
    matches!(
        op,
        Op::GroupNonUniformQuadAllKHR | Op::GroupNonUniformQuadAnyKHR
    )
}

/// Emits the ballot form of a quad vote; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let pred = id_operand(inst, 0, "Predicate")?;
    let all = inst.class.opcode == Op::GroupNonUniformQuadAllKHR;
    // All: no active lane of the quad has the predicate false.
    let asked = if all { code.not(pred) } else { pred };
    let votes = code.ballot(asked)?;
    let lane = code.lane_id()?;
    let word = if code.em.single_word() {
        votes
    } else {
        let five = code.em.u32(5);
        let w = code.op(Op::ShiftRightLogical, Ty::U32, &[lane, five]);
        code.op(Op::VectorExtractDynamic, Ty::U32, &[votes, w])
    };
    let twenty_eight = code.em.u32(28);
    let shift = code.op(Op::BitwiseAnd, Ty::U32, &[lane, twenty_eight]);
    let shifted = code.op(Op::ShiftRightLogical, Ty::U32, &[word, shift]);
    let fifteen = code.em.u32(15);
    let nibble = code.op(Op::BitwiseAnd, Ty::U32, &[shifted, fifteen]);
    let zero = code.em.u32(0);
    let test = if all { Op::IEqual } else { Op::INotEqual };
    Ok(code.op(test, Ty::BOOL, &[nibble, zero]))
}
