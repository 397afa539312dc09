//! Subgroup instructions resolved once at translation (operands as register rows or constants,
//! the operation and its scalar width decoded) and run straight over rows: the common cases of
//! [`crate::group`] without an id, type or layout lookup per step, nor a per-lane `match`
//! or closure call. Every result is what `group.rs`'s general path computes, bit for bit: floats
//! fold in the same ascending lane order through the same helpers; integer folds that are
//! associative and commutative (wrapping add and multiply, bitwise, unsigned min and max) give
//! the same bits in any order. A case that would draw undefined bits (an inactive or
//! out-of-range lane read, an empty ballot, a bit beyond the subgroup size) is detected before
//! anything is written and left to the general path, which draws them in its order; the one
//! exception, a partitioned operation whose ballot lacks the lane's own bit, draws them here in
//! the general path's order (leaf outer, lane inner).
//!
//! This module resolves the row forms at translation; `fold.rs` has the folds (reduce, scans,
//! clusters, partitions), specialised by operation and width, and `run.rs` runs a row form.

use crate::opclass::arith;
use crate::translate::{GroupRow, Inst, Program, Src};
use crate::types::{Scalar, TypeInfo};

mod fold;
mod run;

/// Most lanes of a subgroup.
const MAX_LANES: usize = 128;

/// Most leaves of a value a broadcast's row form takes (its leaves are read into an array).
const MAX_ROW_LEAVES: u32 = 16;

/// Resolves the subgroup instructions of every function into their row form where they have one.
pub fn prepare(p: &mut Program) {
    let mut funcs = std::mem::take(&mut p.funcs);
    for f in &mut funcs {
        for inst in &mut f.insts {
            if inst.group {
                inst.grp = resolve(p, inst).map(Box::new);
            }
        }
    }
    p.funcs = funcs;
}

/// Removes every row form (the general path only): for tests that compare the two.
pub fn unprepare(p: &mut Program) {
    for f in &mut p.funcs {
        for inst in &mut f.insts {
            inst.grp = None;
        }
    }
}

/// How many instructions have a row form.
pub fn count(p: &Program) -> usize {
    p.funcs
        .iter()
        .flat_map(|f| &f.insts)
        .filter(|i| i.grp.is_some())
        .count()
}

/// A register or constant operand with `leaves` leaves in range, never `OpUndef`.
fn operand(p: &Program, id: u32, leaves: u32) -> Option<(Src, &TypeInfo)> {
    let (src, t) = p.val(id).ok()?;
    if t.leaves != leaves || t.layout.len() != leaves as usize {
        return None;
    }
    match src {
        Src::Reg(r) if u64::from(r) + u64::from(leaves) <= u64::from(p.nregs) => Some((src, t)),
        Src::Const(k) if k as usize + leaves as usize <= p.consts.len() => Some((src, t)),
        _ => None,
    }
}

/// Whether `src`'s rows overlap the result's (never in SSA; checked so a row is never both read
/// and written).
fn disjoint(src: Src, leaves: u32, res: u32, rleaves: u32) -> bool {
    match src {
        Src::Reg(r) => {
            u64::from(r) + u64::from(leaves) <= u64::from(res)
                || u64::from(res) + u64::from(rleaves) <= u64::from(r)
        }
        _ => true,
    }
}

/// Every leaf of `t` has the same scalar.
fn uniform_scalar(t: &TypeInfo) -> Option<Scalar> {
    let s = t.layout.first()?.1;
    t.layout.iter().all(|x| x.1 == s).then_some(s)
}

/// A ballot-typed result's leaf widths (at most four leaves).
fn widths_of(t: &TypeInfo) -> Option<([u8; 4], u8)> {
    if t.layout.len() > 4 || t.layout.len() != t.leaves as usize || t.leaves == 0 {
        return None;
    }
    let mut w = [0u8; 4];
    for (slot, (_, s)) in w.iter_mut().zip(&t.layout) {
        *slot = u8::try_from(s.width()).ok()?;
    }
    Some((w, t.leaves as u8))
}

/// A ballot operand: (source, leaves, their common width).
fn ballot_operand(p: &Program, id: u32) -> Option<(Src, u32, u32)> {
    let (_, t) = p.val(id).ok()?;
    let (src, t) = operand(p, id, t.leaves)?;
    let w = uniform_scalar(t)?.width();
    (t.leaves >= 1 && w >= 1).then_some((src, t.leaves, w))
}

fn resolve(p: &Program, inst: &Inst) -> Option<GroupRow> {
    use spirv::Op as O;
    let op = inst.decoded?;
    let args: &[u32] = if crate::opclass::without_scope(op) {
        &inst.args
    } else {
        // Any other scope is the general path's error.
        if p.constant(*inst.args.first()?).ok()? != spirv::Scope::Subgroup as u64 {
            return None;
        }
        inst.args.get(1..)?
    };
    if inst.res == u32::MAX {
        return None;
    }
    let rt = p.ty(inst.ty).ok()?;
    if u64::from(inst.res) + u64::from(rt.leaves) > u64::from(p.nregs) {
        return None;
    }
    let res_ok = |src: Src, leaves: u32| disjoint(src, leaves, inst.res, rt.leaves);
    match op {
        O::GroupNonUniformElect => (rt.leaves == 1).then_some(GroupRow::Elect),
        O::GroupNonUniformAll
        | O::GroupNonUniformAny
        | O::GroupAll
        | O::GroupAny
        | O::SubgroupAllKHR
        | O::SubgroupAnyKHR
        | O::GroupNonUniformBallot
        | O::SubgroupBallotKHR => {
            let (pred, _) = operand(p, *args.first()?, 1)?;
            let kind = match op {
                O::GroupNonUniformAll | O::GroupAll | O::SubgroupAllKHR => 0,
                O::GroupNonUniformAny | O::GroupAny | O::SubgroupAnyKHR => 1,
                _ => 2,
            };
            let (widths, count) = if kind == 2 {
                widths_of(rt)?
            } else if rt.leaves == 1 {
                ([1, 0, 0, 0], 1)
            } else {
                return None;
            };
            res_ok(pred, 1).then_some(GroupRow::Vote {
                kind,
                pred,
                widths,
                count,
            })
        }
        O::GroupNonUniformAllEqual | O::SubgroupAllEqualKHR => {
            let id = *args.first()?;
            let (v, t) = operand(p, id, p.val(id).ok()?.1.leaves)?;
            let s = uniform_scalar(t)?;
            (rt.leaves == 1 && res_ok(v, t.leaves)).then_some(GroupRow::AllEqual {
                v,
                leaves: t.leaves,
                s,
            })
        }
        O::GroupNonUniformBroadcastFirst | O::SubgroupFirstInvocationKHR => {
            let (v, _) = operand(p, *args.first()?, rt.leaves)?;
            (rt.leaves <= MAX_ROW_LEAVES && res_ok(v, rt.leaves)).then_some(
                GroupRow::BroadcastFirst {
                    v,
                    leaves: rt.leaves,
                },
            )
        }
        O::GroupNonUniformBroadcast
        | O::GroupBroadcast
        | O::SubgroupReadInvocationKHR
        | O::GroupNonUniformShuffle
        | O::GroupNonUniformShuffleXor
        | O::GroupNonUniformShuffleUp
        | O::GroupNonUniformShuffleDown
        | O::GroupNonUniformQuadBroadcast
        | O::GroupNonUniformQuadSwap => {
            let (v, _) = operand(p, *args.first()?, rt.leaves)?;
            let (x, _) = operand(p, *args.get(1)?, 1)?;
            (rt.leaves <= MAX_ROW_LEAVES && res_ok(v, rt.leaves) && res_ok(x, 1)).then_some(
                GroupRow::Shuffle {
                    op,
                    v,
                    leaves: rt.leaves,
                    x,
                },
            )
        }
        O::GroupNonUniformInverseBallot
        | O::GroupNonUniformBallotBitExtract
        | O::GroupNonUniformBallotBitCount
        | O::GroupNonUniformBallotFindLSB
        | O::GroupNonUniformBallotFindMSB => {
            if rt.leaves != 1 {
                return None;
            }
            let (vi, gop) = if op == O::GroupNonUniformBallotBitCount {
                let g = *args.first()?;
                if g > 2 {
                    return None;
                }
                (1, g as u8)
            } else {
                (0, 0)
            };
            let b = ballot_operand(p, *args.get(vi)?)?;
            let x = if op == O::GroupNonUniformBallotBitExtract {
                operand(p, *args.get(1)?, 1)?.0
            } else {
                Src::None
            };
            (res_ok(b.0, b.1) && res_ok(x, 1)).then_some(GroupRow::BallotBits { op, b, gop, x })
        }
        O::GroupNonUniformPartitionEXT => {
            let (v, t) = operand(p, *args.first()?, 1)?;
            let (widths, count) = widths_of(rt)?;
            res_ok(v, 1).then_some(GroupRow::Partition {
                v,
                s: t.layout[0].1,
                widths,
                count,
            })
        }
        _ => {
            let bop = arith(op)?;
            let gop = *args.first()?;
            if !matches!(gop, 0..=3 | 6..=8) {
                return None;
            }
            let (v, t) = operand(p, *args.get(1)?, rt.leaves)?;
            let s = uniform_scalar(t)?;
            let extra = args.get(2).copied();
            let cluster = if gop == 3 {
                let c = p.constant(extra?).ok()?;
                if c == 0 || !c.is_power_of_two() {
                    return None;
                }
                c.min(128) as u32
            } else {
                0
            };
            let ballot = if gop >= 6 {
                let b = ballot_operand(p, extra?)?;
                if !res_ok(b.0, b.1) {
                    return None;
                }
                Some(b)
            } else {
                None
            };
            res_ok(v, rt.leaves).then_some(GroupRow::Arith {
                bop,
                s,
                gop: gop as u8,
                cluster,
                v,
                leaves: rt.leaves,
                ballot,
            })
        }
    }
}
