//! Subgroup instructions with the SPIR-V spec's semantics over the active mask: basic, vote
//! (core, KHR, and the quad votes of `SPV_KHR_quad_control`), ballot and its bit operations,
//! broadcasts, shuffles, rotate, arithmetic (reduce, scans, clustered, partitioned), quad and
//! partition.
//! Reads from inactive or out-of-range lanes, and bit queries of empty ballots, are undefined:
//! seeded random bits, reported.

use crate::error::{malformed, unsupported, Result};
use crate::exec::{split_wide, Machine, Sg};
use crate::num::lanes;
use crate::num::{fget, fput, mask as wmask, sext};
use crate::opclass::arith;
use crate::translate::{Inst, Src};
use crate::types::{Scalar, TypeInfo};

/// `a op b` for subgroup arithmetic.
pub(crate) fn combine(op: spirv::Op, s: Scalar, a: u64, b: u64) -> u64 {
    use spirv::Op as O;
    let w = s.width();
    let m = wmask(w);
    match (op, s) {
        (O::IAdd, _) => a.wrapping_add(b) & m,
        (O::IMul, _) => a.wrapping_mul(b) & m,
        (O::FAdd, _) => float_op(w, a, b, false),
        (O::FMul, _) => float_op(w, a, b, true),
        (O::BitwiseAnd, _) => a & b,
        (O::BitwiseOr, _) => a | b,
        (O::BitwiseXor, _) => a ^ b,
        (O::SLessThan, _) => {
            if sext(w, b) < sext(w, a) {
                b
            } else {
                a
            }
        }
        (O::SGreaterThan, _) => {
            if sext(w, b) > sext(w, a) {
                b
            } else {
                a
            }
        }
        (O::ULessThan, _) => a.min(b),
        (O::UGreaterThan, _) => a.max(b),
        (O::FOrdLessThan | O::FOrdGreaterThan, _) => {
            let (x, y) = (fget(w, a), fget(w, b));
            if x.is_nan() {
                b
            } else if y.is_nan() {
                a
            } else if (op == O::FOrdLessThan && y < x) || (op == O::FOrdGreaterThan && y > x) {
                b
            } else {
                a
            }
        }
        _ => a,
    }
}

/// `a + b` (or `a * b` with `mul`) of floats of `width` bits, computed in `f64` and rounded to
/// the width. A NaN operand gives itself, quieted (the first one where both are NaN): what x86
/// gives for `a op b`, written out because Rust leaves a NaN result's payload to the compiler,
/// which may swap the operands of a commutative operation (it did, once inlined into a fold), so
/// the bits would depend on where the operation is compiled.
#[inline(always)]
pub(crate) fn float_op(width: u32, a: u64, b: u64, mul: bool) -> u64 {
    let (x, y) = (fget(width, a), fget(width, b));
    if x.is_nan() {
        return quiet_nan(width, a);
    }
    if y.is_nan() {
        return quiet_nan(width, b);
    }
    fput(width, if mul { x * y } else { x + y })
}

/// A NaN of `width` bits with its quiet bit set (the bits the trip through `f64` gives).
#[inline(always)]
fn quiet_nan(width: u32, a: u64) -> u64 {
    match width {
        16 => (a | 0x200) & 0xffff,
        32 => (a | 0x40_0000) & 0xffff_ffff,
        _ => a | 1 << 51,
    }
}

/// `split_wide` of one 128-bit value into `out` without allocating (at most four leaves: a
/// ballot is a uvec4, uvec2 or u64); returns the leaves written.
fn split_wide_into(v: u128, t: &TypeInfo, out: &mut [u64; 4]) -> usize {
    if t.leaves == 1 {
        out[0] = v as u64;
        return 1;
    }
    let mut rest = v;
    let mut n = 0;
    for (slot, (_, s)) in out.iter_mut().zip(&t.layout) {
        let w = s.width();
        *slot = (rest as u64) & wmask(w);
        rest = if w >= 128 { 0 } else { rest >> w };
        n += 1;
    }
    n
}

/// The identity of `op` for `s` (SPIR-V's table), for empty exclusive scans.
pub(crate) fn identity(op: spirv::Op, s: Scalar) -> u64 {
    use spirv::Op as O;
    let w = s.width();
    let m = wmask(w);
    match op {
        O::IMul => 1,
        O::FMul => fput(w, 1.0),
        O::BitwiseAnd => m,
        O::SLessThan => m >> 1,
        O::SGreaterThan => (m >> 1) + 1,
        O::ULessThan => m,
        O::FOrdLessThan => fput(w, f64::INFINITY),
        O::FOrdGreaterThan => fput(w, f64::NEG_INFINITY),
        _ => 0,
    }
}

/// Whether two leaves are equal: floats by value (+0 == -0, NaN never), others by bits.
pub(crate) fn equal(s: Scalar, a: u64, b: u64) -> bool {
    match s {
        Scalar::Float { width } => fget(width, a) == fget(width, b),
        _ => a == b,
    }
}

impl Machine<'_> {
    fn size_mask(&self) -> u128 {
        if self.lanes == 128 {
            u128::MAX
        } else {
            (1u128 << self.lanes) - 1
        }
    }

    /// Leaf `c` of `v` at lane `src`, undefined unless `src` is an active lane.
    fn read_lane(
        &mut self,
        sg: &Sg,
        v: (Src, &TypeInfo),
        c: u32,
        src: u64,
        active: u128,
        op: u32,
    ) -> u64 {
        if src < u64::from(self.lanes) && active & (1u128 << src) != 0 {
            self.get(sg, v, c, src as u32)
        } else {
            let s = v.1.layout.get(c as usize).map_or(
                Scalar::Int {
                    width: 32,
                    signed: false,
                },
                |x| x.1,
            );
            let why = if src < u64::from(self.lanes) {
                "inactive"
            } else {
                "out-of-range"
            };
            let what = crate::error::op_name(op);
            self.undefined(&format!("{what} from {why} lane {src}"), s)
        }
    }

    /// A 128-bit ballot value at `lane` (uvec4, uvec2 or u64 leaves, low first).
    fn ballot_of(&mut self, sg: &Sg, v: (Src, &TypeInfo), lane: u32) -> u128 {
        let mut m = 0u128;
        let mut at = 0;
        for c in 0..v.1.leaves {
            let w = v.1.layout.get(c as usize).map_or(32, |x| x.1.width());
            if at < 128 {
                m |= u128::from(self.get(sg, v, c, lane)) << at;
            }
            at += w;
        }
        m
    }

    /// Writes `vals` (one per leaf) into the result for every lane of `mask`.
    fn fill_result(&self, sg: &mut Sg, inst: &Inst, vals: &[u64], mask: u128) {
        if inst.res == u32::MAX {
            return;
        }
        let n = self.lanes as usize;
        let full = self.full_mask();
        for (c, &v) in vals.iter().enumerate() {
            let to = (inst.res as usize + c) * n;
            let Some(row) = sg.regs.get_mut(to..to + n) else {
                continue;
            };
            if mask == full {
                row.fill(v);
            } else {
                for l in lanes(mask) {
                    row[l as usize] = v;
                }
            }
        }
    }

    fn put_all(&self, sg: &mut Sg, inst: &Inst, lane: u32, vals: &[u64]) {
        for (c, v) in vals.iter().enumerate() {
            self.put(sg, inst, c as u32, lane, *v);
        }
    }

    /// Executes a subgroup instruction.
    pub fn group(&mut self, sg: &mut Sg, inst: &Inst, op: spirv::Op, mask: u128) -> Result<()> {
        use spirv::Op as O;
        // The row form resolved at translation, unless this run draws undefined bits.
        if let Some(g) = &inst.grp {
            if self.group_row(sg, inst, g, mask) {
                return Ok(());
            }
        }
        let args: &[u32] = if crate::opclass::without_scope(op) {
            &inst.args
        } else {
            let scope = self.constant(
                *inst
                    .args
                    .first()
                    .ok_or_else(|| malformed("missing scope"))?,
            )?;
            if scope != spirv::Scope::Subgroup as u64 {
                return Err(unsupported(format!(
                    "subgroup instruction with execution scope {scope} (only Subgroup)"
                )));
            }
            inst.args.get(1..).unwrap_or(&[])
        };
        let a = |k: usize| {
            args.get(k)
                .copied()
                .ok_or_else(|| malformed("missing operand"))
        };
        let rt = self.ty(inst.ty)?;
        let first = mask.trailing_zeros();
        match op {
            O::GroupNonUniformElect => {
                for l in lanes(mask) {
                    self.put(sg, inst, 0, l, u64::from(l == first));
                }
            }
            O::GroupNonUniformAll
            | O::GroupNonUniformAny
            | O::GroupAll
            | O::GroupAny
            | O::SubgroupAllKHR
            | O::SubgroupAnyKHR
            | O::GroupNonUniformBallot
            | O::SubgroupBallotKHR => {
                let p = self.val(a(0)?)?;
                let mut b = 0u128;
                for l in lanes(mask) {
                    if self.get(sg, p, 0, l) != 0 {
                        b |= 1 << l;
                    }
                }
                // The same value in every active lane: each result leaf written as a row.
                let mut r = [0u64; 4];
                let count = match op {
                    O::GroupNonUniformAll | O::GroupAll | O::SubgroupAllKHR => {
                        r[0] = u64::from(b == mask);
                        1
                    }
                    O::GroupNonUniformAny | O::GroupAny | O::SubgroupAnyKHR => {
                        r[0] = u64::from(b != 0);
                        1
                    }
                    _ if rt.layout.len() > r.len() => {
                        // Not a ballot type SPIR-V allows; spread as before.
                        let vals = split_wide(&[b], rt);
                        for l in lanes(mask) {
                            self.put_all(sg, inst, l, &vals);
                        }
                        return Ok(());
                    }
                    _ => split_wide_into(b, rt, &mut r),
                };
                self.fill_result(sg, inst, &r[..count], mask);
            }
            O::GroupNonUniformQuadAllKHR | O::GroupNonUniformQuadAnyKHR => {
                // The quad: the lanes whose id / 4 is this lane's; only its active ones vote.
                let p = self.val(a(0)?)?;
                for l in lanes(mask) {
                    let quad = (l & !3)..(l & !3) + 4;
                    let mut votes = quad
                        .filter(|&q| q < 128 && mask & (1u128 << q) != 0)
                        .map(|q| self.get(sg, p, 0, q) != 0);
                    let r = if op == O::GroupNonUniformQuadAllKHR {
                        votes.all(|v| v)
                    } else {
                        votes.any(|v| v)
                    };
                    self.put(sg, inst, 0, l, u64::from(r));
                }
            }
            O::GroupNonUniformAllEqual | O::SubgroupAllEqualKHR => {
                let v = self.val(a(0)?)?;
                let mut same = true;
                for c in 0..v.1.leaves {
                    let s = v.1.layout.get(c as usize).map_or(Scalar::Bool, |x| x.1);
                    let x0 = self.get(sg, v, c, first);
                    for l in lanes(mask) {
                        let x = self.get(sg, v, c, l);
                        same &= equal(s, x0, x);
                    }
                }
                for l in lanes(mask) {
                    self.put(sg, inst, 0, l, u64::from(same));
                }
            }
            O::GroupNonUniformBroadcastFirst | O::SubgroupFirstInvocationKHR => {
                let v = self.val(a(0)?)?;
                let vals: Vec<u64> = (0..v.1.leaves).map(|c| self.get(sg, v, c, first)).collect();
                for l in lanes(mask) {
                    self.put_all(sg, inst, l, &vals);
                }
            }
            O::GroupNonUniformBroadcast
            | O::GroupBroadcast
            | O::SubgroupReadInvocationKHR
            | O::GroupNonUniformShuffle
            | O::GroupNonUniformShuffleXor
            | O::GroupNonUniformShuffleUp
            | O::GroupNonUniformShuffleDown
            | O::GroupNonUniformQuadBroadcast
            | O::GroupNonUniformQuadSwap
            | O::GroupNonUniformRotateKHR => {
                let v = self.val(a(0)?)?;
                let x = self.val(a(1)?)?;
                let cluster = match (op, args.get(2)) {
                    (O::GroupNonUniformRotateKHR, Some(id)) => self.constant(*id)?,
                    _ => u64::from(self.lanes),
                };
                let n = self.lanes as usize;
                let len = sg.regs.len();
                // Register rows read directly (no `OpUndef`, rows in range, a result to write):
                // the reads and undefined draws happen in the same order as through `get`.
                let direct = v.0 != Src::Undef
                    && x.0 != Src::Undef
                    && inst.res != u32::MAX
                    && (inst.res as usize + v.1.leaves as usize) * n <= len
                    && match v.0 {
                        Src::Reg(r) => (r as usize + v.1.leaves as usize) * n <= len,
                        _ => true,
                    }
                    && match x.0 {
                        Src::Reg(r) => (r as usize + 1) * n <= len,
                        _ => true,
                    };
                for l in lanes(mask) {
                    let k = match (direct, x.0) {
                        (true, Src::Reg(r)) => sg.regs[r as usize * n + l as usize],
                        _ => self.get(sg, x, 0, l),
                    };
                    let ll = u64::from(l);
                    let src = match op {
                        O::GroupNonUniformShuffleXor => ll ^ k,
                        O::GroupNonUniformShuffleUp => ll.checked_sub(k).unwrap_or(u64::MAX),
                        O::GroupNonUniformShuffleDown => ll.saturating_add(k),
                        O::GroupNonUniformQuadBroadcast => (ll & !3).saturating_add(k),
                        O::GroupNonUniformQuadSwap => ll ^ k.saturating_add(1),
                        O::GroupNonUniformRotateKHR => {
                            let c = cluster.max(1);
                            ll / c * c + (ll % c + k % c) % c
                        }
                        _ => k,
                    };
                    // Results go to the instruction's own rows, never an operand's (SSA), so
                    // each lane's is written as soon as it is read.
                    let readable = src < u64::from(self.lanes) && mask & (1u128 << src) != 0;
                    if let (true, true, Src::Reg(r)) = (direct, readable, v.0) {
                        for c in 0..v.1.leaves as usize {
                            let x = sg.regs[(r as usize + c) * n + src as usize];
                            sg.regs[(inst.res as usize + c) * n + l as usize] = x;
                        }
                        continue;
                    }
                    for c in 0..v.1.leaves {
                        let r = self.read_lane(sg, v, c, src, mask, inst.op);
                        self.put(sg, inst, c, l, r);
                    }
                }
            }
            O::GroupNonUniformInverseBallot
            | O::GroupNonUniformBallotBitExtract
            | O::GroupNonUniformBallotBitCount
            | O::GroupNonUniformBallotFindLSB
            | O::GroupNonUniformBallotFindMSB => {
                let (vi, gop) = if op == O::GroupNonUniformBallotBitCount {
                    (1, a(0)?)
                } else {
                    (0, 0)
                };
                let v = self.val(a(vi)?)?;
                let idx = if op == O::GroupNonUniformBallotBitExtract {
                    Some(self.val(a(1)?)?)
                } else {
                    None
                };
                let size = self.size_mask();
                let rs = rt.scalar_of().unwrap_or(Scalar::Bool);
                for l in lanes(mask) {
                    let b = self.ballot_of(sg, v, l) & size;
                    let r = match op {
                        O::GroupNonUniformInverseBallot => u64::from(b >> l & 1 != 0),
                        O::GroupNonUniformBallotBitExtract => {
                            let i = idx.map_or(0, |x| self.get(sg, x, 0, l));
                            if i < u64::from(self.lanes) {
                                u64::from(b >> i & 1 != 0)
                            } else {
                                self.undefined("OpGroupNonUniformBallotBitExtract of a bit beyond the subgroup size", rs)
                            }
                        }
                        O::GroupNonUniformBallotBitCount => {
                            let below = (1u128 << l) - 1;
                            match gop {
                                0 => u64::from(b.count_ones()),
                                1 => u64::from((b & (below | 1 << l)).count_ones()),
                                2 => u64::from((b & below).count_ones()),
                                g => {
                                    return Err(unsupported(format!(
                                        "OpGroupNonUniformBallotBitCount with group operation {g}"
                                    )))
                                }
                            }
                        }
                        _ if b == 0 => self.undefined(
                            &format!("{} of an empty ballot", crate::error::op_name(inst.op)),
                            rs,
                        ),
                        O::GroupNonUniformBallotFindLSB => u64::from(b.trailing_zeros()),
                        _ => u64::from(127 - b.leading_zeros()),
                    };
                    self.put(sg, inst, 0, l, r);
                }
            }
            O::GroupNonUniformPartitionEXT => {
                let v = self.val(a(0)?)?;
                let n = v.1.leaves;
                let vals: Vec<Vec<u64>> = (0..self.lanes)
                    .map(|l| {
                        if mask >> l & 1 != 0 {
                            (0..n).map(|c| self.get(sg, v, c, l)).collect()
                        } else {
                            Vec::new()
                        }
                    })
                    .collect();
                for l in lanes(mask) {
                    let mut b = 1u128 << l;
                    for k in lanes(mask) {
                        if (0..n).all(|c| {
                            equal(
                                v.1.layout[c as usize].1,
                                vals[l as usize][c as usize],
                                vals[k as usize][c as usize],
                            )
                        }) {
                            b |= 1 << k;
                        }
                    }
                    let r = split_wide(&[b], rt);
                    self.put_all(sg, inst, l, &r);
                }
            }
            _ => {
                let bop = arith(op).ok_or_else(|| unsupported("this subgroup instruction"))?;
                let gop = a(0)?;
                let v = self.val(a(1)?)?;
                let extra = args.get(2).copied();
                let cluster = if gop == 3 {
                    let c = self.constant(
                        extra.ok_or_else(|| malformed("ClusteredReduce without a cluster size"))?,
                    )?;
                    if c == 0 || !c.is_power_of_two() {
                        return Err(malformed(format!("cluster size {c} is not a power of two")));
                    }
                    c.min(128) as u32
                } else {
                    0
                };
                let ballot =
                    if (6..=8).contains(&gop) {
                        Some(self.val(
                            extra.ok_or_else(|| malformed("partitioned op without a ballot"))?,
                        )?)
                    } else {
                        None
                    };
                if !matches!(gop, 0..=3 | 6..=8) {
                    return Err(unsupported(format!("group operation {gop}")));
                }
                // Partitioned operations: each lane's subset, from its ballot operand. A ballot
                // without the lane's own bit is no partition: the result is undefined.
                let nl = self.lanes as usize;
                let mut subsets = Vec::new();
                if let Some(b) = ballot {
                    subsets.resize(nl, 0u128);
                    for l in lanes(mask) {
                        subsets[l as usize] = self.ballot_of(sg, b, l) & mask;
                    }
                }
                let n = v.1.leaves;
                // The operand's and the result's rows (scratch: only active lanes are written,
                // and only they are read, so nothing is cleared per instruction).
                let mut buf = std::mem::take(&mut self.scratch);
                if buf.len() < 2 * nl {
                    buf.resize(2 * nl, 0);
                }
                let (row, res) = buf.split_at_mut(nl);
                for c in 0..n {
                    let s = v.1.layout.get(c as usize).map_or(Scalar::Bool, |x| x.1);
                    for l in lanes(mask) {
                        row[l as usize] = self.get(sg, v, c, l);
                    }
                    // Folds the lanes of `set` in ascending order (the order every lane of a
                    // real subgroup would see is unspecified; this one is fixed).
                    let fold = |set: u128| {
                        let mut acc: Option<u64> = None;
                        for k in lanes(set) {
                            let x = row[k as usize];
                            acc = Some(match acc {
                                None => x,
                                Some(a) => combine(bop, s, a, x),
                            });
                        }
                        acc.unwrap_or_else(|| identity(bop, s))
                    };
                    match gop {
                        // Reduce: one fold, shared by every lane.
                        0 => {
                            let r = fold(mask);
                            for l in lanes(mask) {
                                res[l as usize] = r;
                            }
                        }
                        // Inclusive and exclusive scans: one pass over the active lanes in
                        // order, the same fold as each lane's own prefix.
                        1 | 2 => {
                            let mut acc: Option<u64> = None;
                            for l in lanes(mask) {
                                let x = row[l as usize];
                                let before = acc;
                                acc = Some(match acc {
                                    None => x,
                                    Some(a) => combine(bop, s, a, x),
                                });
                                let r = if gop == 1 { acc } else { before };
                                res[l as usize] = r.unwrap_or_else(|| identity(bop, s));
                            }
                        }
                        // Clustered: one fold per cluster.
                        3 => {
                            let mut base = 0;
                            while base < self.lanes {
                                let cm = if cluster >= 128 {
                                    u128::MAX
                                } else {
                                    ((1u128 << cluster) - 1) << base
                                };
                                let set = mask & cm;
                                if set != 0 {
                                    let r = fold(set);
                                    for l in lanes(set) {
                                        res[l as usize] = r;
                                    }
                                }
                                base += cluster.max(1);
                            }
                        }
                        _ => {
                            for l in lanes(mask) {
                                let b = subsets[l as usize];
                                let upto = if l == 127 {
                                    u128::MAX
                                } else {
                                    (1u128 << (l + 1)) - 1
                                };
                                let set = match gop {
                                    6 => b,
                                    7 => b & upto,
                                    _ => b & ((1u128 << l) - 1),
                                };
                                res[l as usize] = if b >> l & 1 == 0 {
                                    self.undefined(
                                        &format!(
                                            "{} of a ballot without the invocation's own bit (lane {l})",
                                            crate::error::op_name(inst.op)
                                        ),
                                        s,
                                    )
                                } else {
                                    fold(set)
                                };
                            }
                        }
                    }
                    for l in lanes(mask) {
                        self.put(sg, inst, c, l, res[l as usize]);
                    }
                }
                self.scratch = buf;
            }
        }
        Ok(())
    }
}
