//! Reduce, scans and clustered reduce the target lacks: on 8-, 16- and 64-bit values without
//! subgroup extended types (`vulkan1.1`, `naga`), clustered reduce without
//! `GroupNonUniformClustered` (`lavapipe`, `naga`), bitwise ops on 8/16-bit values where
//! the consumer takes only 32 bits (`naga`), and every `LogicalAnd/Or/Xor` where the consumer
//! takes bool operands only in `All` and `Any` (`naga`: its validator refuses the rest, "Subgroup
//! operand type Bool"; the partitioned logical op is one ballot per component, no shuffle).
//!
//! Each is the partitioned operation ([`super::partitioned_arith`]) over one subset:
//! the active set for reduce and scans (`Ballot(true)`), and for a clustered reduce the active
//! lanes of this lane's cluster (`Ballot(true) & cluster`, with `cluster` the lanes
//! `[base, base + size)`, `base = lane & ~(size - 1)`, computed per mask word from the lane id,
//! so every size from 1 to 128 and every subgroup size work).
//! The partitioned sequences compute in the value's own type (`IAdd` on a `uint8_t` wraps at
//! 8 bits, `FAdd` on a `float16_t` rounds to half at every step, as the native op does; no
//! widening, so no double rounding), move values between lanes word by word (the shuffles split
//! 8/16/64-bit values into 32-bit words), carry 64-bit adds and order signed min/max and floats
//! exactly as the core ops (`NMin`/`NMax` for the NaN rule).
//! Float sums may group differently from a native tree (as any two native devices do).
//! When the target has the core op for the type (the clustered case on `lavapipe`), a uniform
//! branch takes the core reduce when the cluster holds every active lane.

use rspirv::dr::{Instruction, Operand};
use spirv::{GroupOperation, Op};
use spv_subgroup_validate::fit::{Missing, Restriction};

use super::partitioned_arith;
use crate::emit::{Code, Id, Ty};
use crate::LowerError;

/// Whether `inst` is a reduce, scan or clustered reduce that this family rewrites: it lacks the
/// clustered capability, extended types or naga's bitwise width, scan set or logical ops, and
/// nothing else.
pub(crate) fn needs(inst: &Instruction, missing: &[Missing]) -> bool {
    let group = matches!(
        inst.operands.get(1),
        Some(Operand::GroupOperation(
            GroupOperation::Reduce
                | GroupOperation::InclusiveScan
                | GroupOperation::ExclusiveScan
                | GroupOperation::ClusteredReduce
        ))
    );
    group
        && partitioned_arith::is_arith_op(inst.class.opcode)
        && !missing.is_empty()
        && missing.iter().all(|m| {
            matches!(
                m,
                Missing::ExtendedTypes { .. }
                    | Missing::Capability(spirv::Capability::GroupNonUniformClustered)
                    | Missing::Restriction(
                        Restriction::NarrowBitwise | Restriction::ScanOp | Restriction::LogicalOp
                    )
            )
        })
}

/// Emits `inst` as a partitioned op over the active set (or cluster); returns its result id.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let (group, cluster) = match inst.operands.as_slice() {
        [_, Operand::GroupOperation(GroupOperation::Reduce), _] => {
            (GroupOperation::PartitionedReduceNV, None)
        }
        [_, Operand::GroupOperation(GroupOperation::InclusiveScan), _] => {
            (GroupOperation::PartitionedInclusiveScanNV, None)
        }
        [_, Operand::GroupOperation(GroupOperation::ExclusiveScan), _] => {
            (GroupOperation::PartitionedExclusiveScanNV, None)
        }
        [_, Operand::GroupOperation(GroupOperation::ClusteredReduce), _, Operand::IdRef(size)] => {
            (GroupOperation::PartitionedReduceNV, Some(*size))
        }
        _ => {
            return Err(super::invalid(
                inst,
                "expected operands: scope, group operation, value (and a cluster size)",
            ))
        }
    };
    let act = code.active()?;
    let subset = match cluster {
        None => act,
        Some(size) => {
            let lanes = cluster_lanes(code, size)?;
            code.mask_and(lanes, act)
        }
    };
    let ballot = code.widen_mask(subset);
    let mut operands = inst.operands.clone();
    operands[1] = Operand::GroupOperation(group);
    operands.truncate(3);
    operands.push(Operand::IdRef(ballot));
    let partitioned = Instruction::new(
        inst.class.opcode,
        inst.result_type,
        inst.result_id,
        operands,
    );
    partitioned_arith::lower(code, &partitioned)
}

/// The mask of the lanes in this lane's cluster of `size` lanes (a power of two).
fn cluster_lanes(code: &mut Code, size: Id) -> Result<Id, LowerError> {
    // The size as a uint (a signed constant has the same bits; sizes are at most 128).
    let size = match code.em.ty_of_value(size) {
        Some(Ty::U32) => size,
        _ => code.op(Op::Bitcast, Ty::U32, &[size]),
    };
    let lane = code.lane_id()?;
    let one = code.em.u32(1);
    let low = code.op(Op::ISub, Ty::U32, &[size, one]);
    let keep = code.op(Op::Not, Ty::U32, &[low]);
    let base = code.op(Op::BitwiseAnd, Ty::U32, &[lane, keep]);
    let end = code.op(Op::IAdd, Ty::U32, &[base, size]);
    let words = if code.em.single_word() { 1 } else { 4 };
    let mut out = Vec::with_capacity(words);
    for w in 0..words as u32 {
        let below_end = code.low_bits_word(end, w)?;
        let below_base = code.low_bits_word(base, w)?;
        let not_base = code.op(Op::Not, Ty::U32, &[below_base]);
        out.push(code.op(Op::BitwiseAnd, Ty::U32, &[below_end, not_base]));
    }
    Ok(if out.len() == 1 {
        out[0]
    } else {
        code.op(Op::CompositeConstruct, Ty::UVEC4, &out)
    })
}
