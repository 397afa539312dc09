//! Lane-moving ops whose own capability the target lacks, as a read of a computed lane:
//!
//! | instruction | lane read | rewritten when the target lacks |
//! |---|---|---|
//! | `QuadBroadcast(x, i)` | `(lane & ~3) \| i` | `GroupNonUniformQuad` (`naga`) |
//! | `QuadSwap(x, d)` | `lane ^ (d + 1)` (horizontal 1, vertical 2, diagonal 3) | `GroupNonUniformQuad` (`naga`) |
//! | `ShuffleUp(x, delta)` | `lane - delta` | `GroupNonUniformShuffleRelative` |
//! | `ShuffleDown(x, delta)` | `lane + delta` | `GroupNonUniformShuffleRelative` |
//! | `ShuffleXor(x, m)` | `lane ^ m` | `GroupNonUniformShuffle` |
//! | `Shuffle(x, id)`, `Broadcast(x, id)` | `id` | `GroupNonUniformShuffle`, `GroupNonUniformBallot` |
//! | `RotateKHR(x, delta[, n])` | `((lane + delta) & (n - 1)) + (lane & ~(n - 1))`, `n` the cluster size or `SubgroupSize` | `GroupNonUniformRotateKHR`, or clustered rotates |
//!
//! The read is [`Code::read_lane`]: `OpGroupNonUniformShuffle` where the target has it (by
//! 32-bit words where it lacks extended types, through `uint` where it moves no bools), else one
//! ballot per bit of the value. Every rewrite reads exactly the lane the original reads, so a
//! result is undefined only where the original's is: a source lane that is inactive, beyond the
//! subgroup, or outside the quad (an index of 4 or more). A `ShuffleUp` with `delta > lane`
//! (undefined) reads its own lane ([`safe_delta`]), never a wrapped id below lane 0, which
//! crashes lavapipe 22.3 at subgroup size 16.
//! `ShuffleDown` with `lane + delta` of 2^32 or more (undefined in the original) may wrap to a
//! lane below this one; its value is then some lane's value, which undefined allows.
//! The ballot form reads zeros from an inactive lane (a ballot has no bit for it).
//! A rotate's lane is the spec's (`SPV_KHR_subgroup_rotate`: the rotation group is the cluster,
//! or the subgroup without one; both are powers of two), so it needs `SubgroupSize` where it has
//! no cluster: a naga-like consumer's vertex shaders cannot load it, and there the rotate is refused.

use rspirv::dr::Instruction;
use spirv::{Capability, Op};
use spv_subgroup_validate::fit::Missing;

use super::{id_operand, invalid};
use crate::emit::{Code, Emitter, Id, Scalar, Ty};
use crate::LowerError;

/// The capability of the ops this family rewrites: the one whose absence it stands in for.
fn own_capability(op: Op) -> Option<Capability> {
    Some(match op {
        Op::GroupNonUniformQuadBroadcast | Op::GroupNonUniformQuadSwap => {
            Capability::GroupNonUniformQuad
        }
        Op::GroupNonUniformShuffleUp | Op::GroupNonUniformShuffleDown => {
            Capability::GroupNonUniformShuffleRelative
        }
        Op::GroupNonUniformShuffle | Op::GroupNonUniformShuffleXor => {
            Capability::GroupNonUniformShuffle
        }
        Op::GroupNonUniformBroadcast => Capability::GroupNonUniformBallot,
        Op::GroupNonUniformRotateKHR => Capability::GroupNonUniformRotateKHR,
        _ => return None,
    })
}

/// Whether `inst` is a lane move the target lacks the capability of, or a clustered rotate the
/// target lacks clusters for (what else it lacks, the width or bool moves, the read handles as
/// well), and the target can read a lane: a shuffle, or ballots. Without either the dispatch
/// refuses the instruction, naming what it lacks.
pub(crate) fn needs(inst: &Instruction, missing: &[Missing], em: &Emitter) -> bool {
    let readable = em.has_shuffle() || em.has_core_ballot() || em.target.ops.khr_ballot;
    readable
        && (own_capability(inst.class.opcode)
            .is_some_and(|c| missing.contains(&Missing::Capability(c)))
            || missing.contains(&Missing::RotateClustered))
}

/// Emits the read of the lane `inst` reads; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let ty = inst
        .result_type
        .and_then(|t| code.em.ty_of_id(t))
        .ok_or_else(|| invalid(inst, "the result type must be a scalar or vector"))?;
    let value = id_operand(inst, 1, "Value")?;
    if code.em.ty_of_value(value) != Some(ty) {
        return Err(invalid(
            inst,
            "the value's type differs from the result type",
        ));
    }
    let arg = id_operand(inst, 2, "lane, delta, index or direction")?;
    let arg = as_u32(code, inst, arg)?;
    let op = inst.class.opcode;
    let source = if matches!(
        op,
        Op::GroupNonUniformShuffle | Op::GroupNonUniformBroadcast
    ) {
        arg
    } else {
        let lane = code.lane_id()?;
        match op {
            Op::GroupNonUniformQuadBroadcast => {
                let not3 = code.em.u32(!3);
                let base = code.op(Op::BitwiseAnd, Ty::U32, &[lane, not3]);
                code.op(Op::BitwiseOr, Ty::U32, &[base, arg])
            }
            Op::GroupNonUniformQuadSwap => {
                let one = code.em.u32(1);
                let m = code.op(Op::IAdd, Ty::U32, &[arg, one]);
                code.op(Op::BitwiseXor, Ty::U32, &[lane, m])
            }
            Op::GroupNonUniformShuffleUp => {
                let delta = safe_delta(code, arg)?;
                code.op(Op::ISub, Ty::U32, &[lane, delta])
            }
            Op::GroupNonUniformShuffleDown => code.op(Op::IAdd, Ty::U32, &[lane, arg]),
            Op::GroupNonUniformRotateKHR => {
                let n = match inst.operands.get(3) {
                    Some(_) => {
                        let cluster = id_operand(inst, 3, "ClusterSize")?;
                        as_u32(code, inst, cluster)?
                    }
                    None => code.subgroup_size()?,
                };
                let one = code.em.u32(1);
                let low = code.op(Op::ISub, Ty::U32, &[n, one]);
                let high = code.op(Op::Not, Ty::U32, &[low]);
                let ahead = code.op(Op::IAdd, Ty::U32, &[lane, arg]);
                let within = code.op(Op::BitwiseAnd, Ty::U32, &[ahead, low]);
                let group = code.op(Op::BitwiseAnd, Ty::U32, &[lane, high]);
                code.op(Op::IAdd, Ty::U32, &[within, group])
            }
            _ => code.op(Op::BitwiseXor, Ty::U32, &[lane, arg]),
        }
    };
    code.read_lane(ty, value, source)
}

/// The delta of a `ShuffleUp` (a `uint`), or 0 where it exceeds this lane's id: there the
/// original's result is undefined, and the lane read becomes this lane's own instead of one below
/// lane 0. Lavapipe 22.3 crashes at subgroup size 16 on a 32-bit shuffle of lane -2
/// (docs/lowering.md, "Driver facts"). Cost: a compare and a select.
pub(crate) fn safe_delta(code: &mut Code, delta: Id) -> Result<Id, LowerError> {
    let lane = code.lane_id()?;
    let zero = code.em.u32(0);
    let over = code.op(Op::UGreaterThan, Ty::BOOL, &[delta, lane]);
    Ok(code.select(Ty::U32, over, zero, delta))
}

/// A lane, delta, index or direction operand as a 32-bit unsigned integer (the spec requires
/// an unsigned integer scalar of any width).
fn as_u32(code: &mut Code, inst: &Instruction, v: Id) -> Result<Id, LowerError> {
    match code.em.ty_of_value(v) {
        Some(t) if t == Ty::U32 => Ok(v),
        Some(Ty {
            scalar: Scalar::Int { width: 32, .. },
            n: 1,
        }) => Ok(code.op(Op::Bitcast, Ty::U32, &[v])),
        Some(Ty {
            scalar: Scalar::Int { .. },
            n: 1,
        }) => Ok(code.op(Op::UConvert, Ty::U32, &[v])),
        _ => Err(invalid(
            inst,
            "the lane, delta, index or direction operand must be an integer scalar",
        )),
    }
}
