//! Shuffles and broadcasts of bool values on consumers without them (naga's front end:
//! `no_bool_shuffle`): `OpGroupNonUniformShuffle`, `ShuffleXor`, `ShuffleUp`, `ShuffleDown`,
//! `Broadcast`, `BroadcastFirst`, `QuadBroadcast` and `QuadSwap` of a bool scalar or vector.
//!
//! The value becomes a `uint` (vector) by `OpSelect(v, 1, 0)`, the same instruction moves it
//! with the other operands unchanged (so a constant `Broadcast` id or quad index stays constant),
//! and `!= 0` turns it back into bools. The move reads the same lane the original would, so an
//! undefined source lane stays exactly as undefined as before: a 32-bit word whose value is
//! undefined compares to an undefined bool.

use rspirv::dr::{Instruction, Operand};
use spirv::Op;

use super::invalid;
use crate::emit::{Code, Id, Scalar, Ty};
use crate::{LowerError, Target};

/// Whether `op` moves a value between lanes (the ops this family rewrites for bools).
pub(crate) fn is_move(op: Op) -> bool {
    matches!(
        op,
        Op::GroupNonUniformShuffle
            | Op::GroupNonUniformShuffleXor
            | Op::GroupNonUniformShuffleUp
            | Op::GroupNonUniformShuffleDown
            | Op::GroupNonUniformBroadcast
            | Op::GroupNonUniformBroadcastFirst
            | Op::GroupNonUniformQuadBroadcast
            | Op::GroupNonUniformQuadSwap
    )
}

/// Whether `inst`, whose result type is `result`, is a bool move `target` lacks.
pub(crate) fn needs(inst: &Instruction, result: Option<Ty>, target: &Target) -> bool {
    target.restrictions.no_bool_shuffle
        && is_move(inst.class.opcode)
        && result.is_some_and(|t| t.scalar == Scalar::Bool)
}

/// Emits the move of `inst` through `uint` words; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let ty = inst
        .result_type
        .and_then(|t| code.em.ty_of_id(t))
        .filter(|t| t.scalar == Scalar::Bool)
        .ok_or_else(|| invalid(inst, "the result type must be a bool scalar or vector"))?;
    let value = match inst.operands.get(1) {
        Some(Operand::IdRef(v)) => *v,
        _ => return Err(invalid(inst, "the value operand is missing")),
    };
    // Core: "The type of Value must be the same as Result Type." A move of anything else (a
    // pointer, issue 21's N5) is refused here: the rewrite below would hide the error (the
    // `OpSelect` of a pointer is a new, different one) where every other target keeps the op and
    // verification blames the input (SG0603).
    if code.em.ty_of_value(value) != Some(ty) {
        return Err(invalid(
            inst,
            format!(
                "Op{:?}: the type of Value must be the same as Result Type (SG0603)",
                inst.class.opcode
            ),
        ));
    }
    let uty = Ty::U32.with_n(ty.n);
    let one = code.em.splat(uty, 1);
    let zero = code.em.splat(uty, 0);
    let word = code.op(Op::Select, uty, &[value, one, zero]);
    let mut operands = inst.operands.clone();
    operands[1] = Operand::IdRef(word);
    // As in `wide_move`: a ShuffleUp past lane 0 reads the own lane (lavapipe 22.3 crashes on a
    // 32-bit shuffle of lane -2 at subgroup size 16).
    if inst.class.opcode == Op::GroupNonUniformShuffleUp {
        if let Some(Operand::IdRef(delta)) = operands.get(2).cloned() {
            if code.em.ty_of_value(delta) == Some(Ty::U32) {
                operands[2] = Operand::IdRef(super::lane_read::safe_delta(code, delta)?);
            }
        }
    }
    let t = code.em.ty(uty);
    let moved = code.emit(inst.class.opcode, t, operands);
    Ok(code.op(Op::INotEqual, ty, &[moved, zero]))
}
