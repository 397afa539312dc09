//! A row form run over a subgroup's rows: the one `match` on the resolved instruction, each
//! case reading its operand rows, deciding before anything is written whether a lane needs the
//! general path, and writing the result rows.

use crate::exec::{Machine, Sg};
use crate::group::equal;
use crate::num::{fget, lanes, mask as wmask};
use crate::translate::{GroupRow, Inst, Src};
use crate::types::Scalar;

use super::fold::{arith_row, below, partitioned};
use super::{MAX_LANES, MAX_ROW_LEAVES};

/// A 128-bit mask over result leaves of `widths` (as `exec::split_wide`: one leaf takes the
/// low 64 bits as they are, several each take their width's bits, low first).
#[inline(always)]
fn spread(b: u128, widths: [u8; 4], count: u8) -> [u64; 4] {
    let mut r = [0u64; 4];
    if count == 1 {
        r[0] = b as u64;
        return r;
    }
    let mut rest = b;
    for (slot, &w) in r.iter_mut().zip(&widths[..count as usize]) {
        let w = u32::from(w);
        *slot = (rest as u64) & wmask(w);
        rest = if w >= 128 { 0 } else { rest >> w };
    }
    r
}

/// Row `n` lanes long at `from` to read and at `to` to write, in one register file (the two
/// never overlap: checked at translation).
#[inline(always)]
fn src_dst(regs: &mut [u64], from: usize, to: usize, n: usize) -> (&[u64], &mut [u64]) {
    if from < to {
        let (a, b) = regs.split_at_mut(to);
        (&a[from..from + n], &mut b[..n])
    } else {
        let (a, b) = regs.split_at_mut(from);
        (&b[..n], &mut a[to..to + n])
    }
}

/// Which lane lane `l` reads for a shuffle-like `op` with operand `k`.
#[inline(always)]
fn source_lane(op: spirv::Op, l: u64, k: u64) -> u64 {
    use spirv::Op as O;
    match op {
        O::GroupNonUniformShuffleXor => l ^ k,
        O::GroupNonUniformShuffleUp => l.checked_sub(k).unwrap_or(u64::MAX),
        O::GroupNonUniformShuffleDown => l.saturating_add(k),
        O::GroupNonUniformQuadBroadcast => (l & !3).saturating_add(k),
        O::GroupNonUniformQuadSwap => l ^ k.saturating_add(1),
        _ => k,
    }
}

impl Machine<'_> {
    /// Leaf `c` of a register or constant operand at `lane` (operands of a row form are in range).
    #[inline(always)]
    fn leaf(&self, sg: &Sg, v: Src, c: u32, lane: u32) -> u64 {
        match v {
            Src::Reg(r) => sg.regs[(r as usize + c as usize) * self.lanes as usize + lane as usize],
            Src::Const(k) => self.p.consts[k as usize + c as usize],
            _ => 0,
        }
    }

    /// Lane `l`'s ballot (as `group.rs`'s `ballot_of`: leaf `c` shifted by `c` widths).
    #[inline(always)]
    fn ballot_at(&self, sg: &Sg, b: (Src, u32, u32), l: u32) -> u128 {
        let mut m = 0u128;
        for c in 0..b.1 {
            let at = c * b.2;
            if at < 128 {
                m |= u128::from(self.leaf(sg, b.0, c, l)) << at;
            }
        }
        m
    }

    /// Writes `vals[c]` into leaf row `c` of the result at every lane of `mask`.
    fn fill_rows(&self, sg: &mut Sg, res: u32, vals: &[u64], mask: u128) {
        let n = self.lanes as usize;
        let full = self.full_mask();
        for (c, &v) in vals.iter().enumerate() {
            let row = &mut sg.regs[(res as usize + c) * n..][..n];
            if mask == full {
                row.fill(v);
            } else {
                for l in lanes(mask) {
                    row[l as usize] = v;
                }
            }
        }
    }

    /// Runs a subgroup instruction's row form; false when the general path must run it (a
    /// case that draws undefined bits, or an empty mask), decided before anything is written.
    pub(crate) fn group_row(&mut self, sg: &mut Sg, inst: &Inst, g: &GroupRow, mask: u128) -> bool {
        let n = self.lanes as usize;
        let full = self.full_mask();
        // The rows were checked against the register count at translation; a file or mask
        // that does not fit them (never in a run) takes the general path rather than a panic.
        if mask == 0 || mask & !full != 0 || sg.regs.len() < self.p.nregs as usize * n {
            return false;
        }
        let res = inst.res as usize;
        match *g {
            GroupRow::Arith {
                bop,
                s,
                gop,
                cluster,
                v,
                leaves,
                ballot,
            } => {
                if gop < 6 {
                    for c in 0..leaves as usize {
                        let to = (res + c) * n;
                        match v {
                            Src::Reg(r) => {
                                let (row, out) = src_dst(&mut sg.regs, (r as usize + c) * n, to, n);
                                arith_row(bop, s, gop, cluster, row, out, mask, full);
                            }
                            _ => {
                                let k = self.leaf(sg, v, c as u32, 0);
                                let mut buf = std::mem::take(&mut self.scratch);
                                buf.clear();
                                buf.resize(n, k);
                                let out = &mut sg.regs[to..to + n];
                                arith_row(bop, s, gop, cluster, &buf, out, mask, full);
                                self.scratch = buf;
                            }
                        }
                    }
                    return true;
                }
                let mut subsets = [0u128; MAX_LANES];
                if let Some(b) = ballot {
                    for l in lanes(mask) {
                        subsets[l as usize] = self.ballot_at(sg, b, l) & mask;
                    }
                }
                let mut row = [0u64; MAX_LANES];
                let mut out = [0u64; MAX_LANES];
                for c in 0..leaves as usize {
                    for l in lanes(mask) {
                        row[l as usize] = self.leaf(sg, v, c as u32, l);
                    }
                    let what = crate::error::op_name(inst.op);
                    let mut undef = |l: u32| {
                        self.undefined(
                            &format!(
                                "{what} of a ballot without the invocation's own bit (lane {l})"
                            ),
                            s,
                        )
                    };
                    partitioned(
                        bop,
                        s,
                        gop,
                        &row[..n],
                        &mut out[..n],
                        mask,
                        &subsets[..n],
                        &mut undef,
                    );
                    let dst = &mut sg.regs[(res + c) * n..][..n];
                    for l in lanes(mask) {
                        dst[l as usize] = out[l as usize];
                    }
                }
            }
            GroupRow::Elect => {
                let first = mask.trailing_zeros() as usize;
                let row = &mut sg.regs[res * n..][..n];
                if mask == full {
                    row.fill(0);
                } else {
                    for l in lanes(mask) {
                        row[l as usize] = 0;
                    }
                }
                row[first] = 1;
            }
            GroupRow::Vote {
                kind,
                pred,
                widths,
                count,
            } => {
                let b = match pred {
                    Src::Reg(r) => {
                        let row = &sg.regs[r as usize * n..][..n];
                        if mask == full {
                            let mut b = 0u128;
                            for (l, &x) in row.iter().enumerate() {
                                b |= u128::from(x != 0) << l;
                            }
                            b
                        } else {
                            let mut b = 0u128;
                            for l in lanes(mask) {
                                b |= u128::from(row[l as usize] != 0) << l;
                            }
                            b
                        }
                    }
                    _ => {
                        if self.leaf(sg, pred, 0, 0) != 0 {
                            mask
                        } else {
                            0
                        }
                    }
                };
                let r = match kind {
                    0 => [u64::from(b == mask), 0, 0, 0],
                    1 => [u64::from(b != 0), 0, 0, 0],
                    _ => spread(b, widths, count),
                };
                self.fill_rows(sg, inst.res, &r[..count as usize], mask);
            }
            GroupRow::AllEqual { v, leaves, s } => {
                // Every leaf of every active lane equal to the first active lane's (a NaN
                // equals nothing, not even itself).
                let first = mask.trailing_zeros();
                let mut same = true;
                for c in 0..leaves {
                    let x0 = self.leaf(sg, v, c, first);
                    same &= match v {
                        Src::Reg(r) => {
                            let row = &sg.regs[(r as usize + c as usize) * n..][..n];
                            let eq = |x: u64| equal(s, x0, x);
                            if mask == full {
                                row.iter().all(|&x| eq(x))
                            } else {
                                lanes(mask).all(|l| eq(row[l as usize]))
                            }
                        }
                        _ => equal(s, x0, x0),
                    };
                }
                self.fill_rows(sg, inst.res, &[u64::from(same)], mask);
            }
            GroupRow::BroadcastFirst { v, leaves } => {
                let first = mask.trailing_zeros();
                let mut vals = [0u64; MAX_ROW_LEAVES as usize];
                for (c, x) in vals[..leaves as usize].iter_mut().enumerate() {
                    *x = self.leaf(sg, v, c as u32, first);
                }
                self.fill_rows(sg, inst.res, &vals[..leaves as usize], mask);
            }
            GroupRow::Shuffle { op, v, leaves, x } => {
                // Each lane's source lane first: any unreadable one goes to the general path.
                let mut src = [0u8; MAX_LANES];
                let lanes_n = u64::from(self.lanes);
                match x {
                    Src::Const(_)
                        if !matches!(
                            op,
                            spirv::Op::GroupNonUniformShuffleXor
                                | spirv::Op::GroupNonUniformShuffleUp
                                | spirv::Op::GroupNonUniformShuffleDown
                                | spirv::Op::GroupNonUniformQuadBroadcast
                                | spirv::Op::GroupNonUniformQuadSwap
                        ) =>
                    {
                        // One source lane for all: a broadcast.
                        let k = self.leaf(sg, x, 0, 0);
                        if k >= lanes_n || mask >> k & 1 == 0 {
                            return false;
                        }
                        let mut vals = [0u64; MAX_ROW_LEAVES as usize];
                        for (c, y) in vals[..leaves as usize].iter_mut().enumerate() {
                            *y = self.leaf(sg, v, c as u32, k as u32);
                        }
                        self.fill_rows(sg, inst.res, &vals[..leaves as usize], mask);
                        return true;
                    }
                    _ => {
                        // The operand's row read directly (a constant: the same every lane).
                        let (xs, kc) = match x {
                            Src::Reg(r) => (&sg.regs[r as usize * n..][..n], 0),
                            _ => (&[][..], self.leaf(sg, x, 0, 0)),
                        };
                        for l in lanes(mask) {
                            let k = xs.get(l as usize).copied().unwrap_or(kc);
                            let from = source_lane(op, u64::from(l), k);
                            if from >= lanes_n || mask >> from & 1 == 0 {
                                return false;
                            }
                            src[l as usize] = from as u8;
                        }
                    }
                }
                for c in 0..leaves as usize {
                    match v {
                        Src::Reg(r) => {
                            let (s0, d0) = ((r as usize + c) * n, (res + c) * n);
                            for l in lanes(mask) {
                                sg.regs[d0 + l as usize] = sg.regs[s0 + src[l as usize] as usize];
                            }
                        }
                        _ => {
                            let k = self.leaf(sg, v, c as u32, 0);
                            let dst = &mut sg.regs[(res + c) * n..][..n];
                            for l in lanes(mask) {
                                dst[l as usize] = k;
                            }
                        }
                    }
                }
            }
            GroupRow::BallotBits { op, b, gop, x } => {
                use spirv::Op as O;
                let size = full;
                let mut out = [0u64; MAX_LANES];
                for l in lanes(mask) {
                    let bl = self.ballot_at(sg, b, l) & size;
                    out[l as usize] = match op {
                        O::GroupNonUniformInverseBallot => u64::from(bl >> l & 1 != 0),
                        O::GroupNonUniformBallotBitExtract => {
                            let i = self.leaf(sg, x, 0, l);
                            if i >= u64::from(self.lanes) {
                                return false;
                            }
                            u64::from(bl >> i & 1 != 0)
                        }
                        O::GroupNonUniformBallotBitCount => match gop {
                            0 => u64::from(bl.count_ones()),
                            1 => u64::from((bl & below(l + 1)).count_ones()),
                            _ => u64::from((bl & below(l)).count_ones()),
                        },
                        _ if bl == 0 => return false,
                        O::GroupNonUniformBallotFindLSB => u64::from(bl.trailing_zeros()),
                        _ => u64::from(127 - bl.leading_zeros()),
                    };
                }
                let dst = &mut sg.regs[res * n..][..n];
                for l in lanes(mask) {
                    dst[l as usize] = out[l as usize];
                }
            }
            GroupRow::Partition {
                v,
                s,
                widths,
                count,
            } => {
                // Lanes grouped by value: floats by value (the bits `fget` reads, +0 and -0 one
                // key, a NaN equal to nothing, not even itself), everything else by all bits.
                let key = |x: u64| -> Option<u64> {
                    match s {
                        Scalar::Float { width } => {
                            let f = fget(width, x);
                            if f.is_nan() {
                                None
                            } else if f == 0.0 {
                                Some(0)
                            } else {
                                Some(x & wmask(width))
                            }
                        }
                        _ => Some(x),
                    }
                };
                let mut keys: [(u64, u128); MAX_LANES] = [(0, 0); MAX_LANES];
                let mut nkeys = 0usize;
                let mut part = [0u128; MAX_LANES];
                let mut which = [u8::MAX; MAX_LANES];
                for l in lanes(mask) {
                    match key(self.leaf(sg, v, 0, l)) {
                        None => part[l as usize] = 1u128 << l,
                        Some(kx) => {
                            let k = match keys[..nkeys].iter().position(|e| e.0 == kx) {
                                Some(k) => k,
                                None => {
                                    keys[nkeys] = (kx, 0);
                                    nkeys += 1;
                                    nkeys - 1
                                }
                            };
                            keys[k].1 |= 1u128 << l;
                            which[l as usize] = k as u8;
                        }
                    }
                }
                for l in lanes(mask) {
                    let b = match which[l as usize] {
                        u8::MAX => part[l as usize],
                        k => keys[k as usize].1,
                    };
                    let r = spread(b, widths, count);
                    for (c, &x) in r[..count as usize].iter().enumerate() {
                        sg.regs[(res + c) * n + l as usize] = x;
                    }
                }
            }
        }
        true
    }
}
