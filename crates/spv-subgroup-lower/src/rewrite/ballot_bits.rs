//! Ballot bit operations, `OpGroupNonUniformInverseBallot` and `OpGroupNonUniformElect` on
//! targets without them (naga's front end: `no_ballot_bit_ops`, `no_elect`).
//!
//! The ballot operand is a `uvec4` of the user's; the rewrite works on it as a mask (a `uint`
//! when every subgroup has at most 32 lanes) with per-word arithmetic and the lane id:
//!
//! | instruction | rewrite |
//! |---|---|
//! | `BallotBitExtract(v, i)` | `(v[i >> 5] >> (i & 31)) & 1` |
//! | `BallotBitCount(Reduce, v)` | `bitCount(v & size)` summed over the words |
//! | `BallotBitCount(InclusiveScan, v)` | `bitCount(v & le)`, `le` computed from the lane id |
//! | `BallotBitCount(ExclusiveScan, v)` | `bitCount(v & lt)` |
//! | `BallotFindLSB(v)` / `FindMSB(v)` | `FindILsb`/`FindUMsb` per word of `v & size`, a select chain over the words |
//! | `InverseBallot(v)` | bit `lane` of `v` |
//! | `Elect()` | `lane == FindLSB(Ballot(true))` |
//!
//! `size` is the mask of lanes below `SubgroupSize`: the spec considers only the bits that
//! stand for the group's invocations, so bits of a user's ballot beyond the subgroup never count.
//! Shifts are by `i & 31` and the word is picked by `i >> 5`, so no shift reaches 32.
//! `FindLSB/MSB` of no bit is undefined in the spec; the rewrite gives `0xffffffff` (no fault).
//! `Ballot(true)` holds the executing lane, so `Elect`'s `FindLSB` never sees zero.

use rspirv::dr::{Instruction, Operand};
use spirv::{GroupOperation, Op};

use super::{id_operand, invalid};
use crate::emit::{Code, Id, Ty};
use crate::{LowerError, Target};

/// Whether `inst` is one of this family's instructions and `target` needs it rewritten.
pub(crate) fn needs(inst: &Instruction, target: &Target) -> bool {
    let r = target.restrictions;
    match inst.class.opcode {
        Op::GroupNonUniformBallotBitExtract
        | Op::GroupNonUniformBallotBitCount
        | Op::GroupNonUniformBallotFindLSB
        | Op::GroupNonUniformBallotFindMSB
        | Op::GroupNonUniformInverseBallot => r.no_ballot_bit_ops,
        Op::GroupNonUniformElect => r.no_elect,
        _ => false,
    }
}

/// Emits the rewrite of `inst`; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let op = inst.class.opcode;
    if op == Op::GroupNonUniformElect {
        let act = code.active()?;
        let first = code.find_lsb(act)?;
        let lane = code.lane_id()?;
        return Ok(code.op(Op::IEqual, Ty::BOOL, &[lane, first]));
    }
    // Every other op's ballot operand follows the scope (and BitCount's group operation).
    let value_at = if op == Op::GroupNonUniformBallotBitCount {
        2
    } else {
        1
    };
    let value = id_operand(inst, value_at, "Value")?;
    if code.em.ty_of_value(value) != Some(Ty::UVEC4) {
        return Err(invalid(inst, "the ballot operand must be a uvec4"));
    }
    let v = code.narrow_mask(value);
    Ok(match op {
        Op::GroupNonUniformBallotBitExtract => {
            let index = id_operand(inst, 2, "Index")?;
            code.bit_test(v, index)?
        }
        Op::GroupNonUniformInverseBallot => {
            let lane = code.lane_id()?;
            code.bit_test(v, lane)?
        }
        Op::GroupNonUniformBallotBitCount => {
            let sel = match inst.operands.get(1) {
                Some(Operand::GroupOperation(GroupOperation::Reduce)) => code.size_mask()?,
                Some(Operand::GroupOperation(GroupOperation::InclusiveScan)) => code.le_mask()?,
                Some(Operand::GroupOperation(GroupOperation::ExclusiveScan)) => code.lt_mask()?,
                _ => return Err(invalid(
                    inst,
                    "OpGroupNonUniformBallotBitCount takes Reduce, InclusiveScan or ExclusiveScan",
                )),
            };
            let m = code.mask_and(v, sel);
            code.bit_count(m)?
        }
        Op::GroupNonUniformBallotFindLSB | Op::GroupNonUniformBallotFindMSB => {
            let size = code.size_mask()?;
            let m = code.mask_and(v, size);
            if op == Op::GroupNonUniformBallotFindLSB {
                code.find_lsb(m)?
            } else {
                code.find_msb(m)?
            }
        }
        _ => return Err(invalid(inst, "not a ballot bit operation")),
    })
}
