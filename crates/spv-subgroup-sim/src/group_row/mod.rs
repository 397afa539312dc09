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

use crate::exec::{Machine, Sg};
use crate::group::{combine, equal, float_op, identity};
use crate::num::{fget, lanes, mask as wmask, sext};
use crate::opclass::arith;
use crate::translate::{GroupRow, Inst, Program, Src};
use crate::types::{Scalar, TypeInfo};

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

/// A binary operation of subgroup arithmetic, monomorphised so its fold loops inline it.
trait Comb: Copy {
    /// `a op b`, exactly `group::combine`.
    fn comb(self, a: u64, b: u64) -> u64;

    /// The ascending fold of a non-empty slice, the same bits as folding it with `comb`.
    #[inline(always)]
    fn fold_slice(self, s: &[u64]) -> u64 {
        s[1..].iter().fold(s[0], |a, &x| self.comb(a, x))
    }
}

/// Any operation through a closure (floats, signed min and max, and the rare scalars): the
/// fold stays sequential, in ascending lane order.
#[derive(Clone, Copy)]
struct Seq<F>(F);

impl<F: Fn(u64, u64) -> u64 + Copy> Comb for Seq<F> {
    #[inline(always)]
    fn comb(self, a: u64, b: u64) -> u64 {
        (self.0)(a, b)
    }
}

/// Wrapping addition at a width: associative and commutative, so a slice folds in any order
/// (the one lane of a single-lane slice is kept as it is, as `combine` never masks it).
#[derive(Clone, Copy)]
struct Add(u64);

impl Comb for Add {
    #[inline(always)]
    fn comb(self, a: u64, b: u64) -> u64 {
        a.wrapping_add(b) & self.0
    }

    #[inline(always)]
    fn fold_slice(self, s: &[u64]) -> u64 {
        if s.len() == 1 {
            return s[0];
        }
        s.iter().fold(0u64, |a, &x| a.wrapping_add(x)) & self.0
    }
}

/// Wrapping multiplication at a width (as [`Add`]).
#[derive(Clone, Copy)]
struct Mul(u64);

impl Comb for Mul {
    #[inline(always)]
    fn comb(self, a: u64, b: u64) -> u64 {
        a.wrapping_mul(b) & self.0
    }

    #[inline(always)]
    fn fold_slice(self, s: &[u64]) -> u64 {
        if s.len() == 1 {
            return s[0];
        }
        s.iter().fold(1u64, |a, &x| a.wrapping_mul(x)) & self.0
    }
}

/// The bitwise operations and unsigned min and max: no masking, any order.
#[derive(Clone, Copy)]
enum Bits {
    And,
    Or,
    Xor,
    UMin,
    UMax,
}

/// One of [`Bits`] as its own type (so each loop is compiled for its operation).
#[derive(Clone, Copy)]
struct BitOp<const K: u8>;

impl<const K: u8> Comb for BitOp<K> {
    #[inline(always)]
    fn comb(self, a: u64, b: u64) -> u64 {
        match K {
            0 => a & b,
            1 => a | b,
            2 => a ^ b,
            3 => a.min(b),
            _ => a.max(b),
        }
    }

    #[inline(always)]
    fn fold_slice(self, s: &[u64]) -> u64 {
        let init = match K {
            0 | 3 => u64::MAX,
            _ => 0,
        };
        s.iter().fold(init, |a, &x| self.comb(a, x))
    }
}

/// Calls `$f` with the [`Comb`] of `$bop` at scalar `$s` (the general `combine` for what has
/// no specialised form).
macro_rules! with_comb {
    ($bop:expr, $s:expr, $f:ident ( $($arg:expr),* )) => {{
        use spirv::Op as O;
        let s: Scalar = $s;
        let m = wmask(s.width());
        match ($bop, s) {
            (O::IAdd, Scalar::Int { .. }) => $f(Add(m), $($arg),*),
            (O::IMul, Scalar::Int { .. }) => $f(Mul(m), $($arg),*),
            (O::BitwiseAnd, _) => $f(BitOp::<{ Bits::And as u8 }>, $($arg),*),
            (O::BitwiseOr, _) => $f(BitOp::<{ Bits::Or as u8 }>, $($arg),*),
            (O::BitwiseXor, _) => $f(BitOp::<{ Bits::Xor as u8 }>, $($arg),*),
            (O::ULessThan, _) => $f(BitOp::<{ Bits::UMin as u8 }>, $($arg),*),
            (O::UGreaterThan, _) => $f(BitOp::<{ Bits::UMax as u8 }>, $($arg),*),
            (O::SLessThan, Scalar::Int { width: 32, .. }) => {
                $f(Seq(|a: u64, b: u64| if sext(32, b) < sext(32, a) { b } else { a }), $($arg),*)
            }
            (O::SGreaterThan, Scalar::Int { width: 32, .. }) => {
                $f(Seq(|a: u64, b: u64| if sext(32, b) > sext(32, a) { b } else { a }), $($arg),*)
            }
            (O::FAdd, Scalar::Float { width: 32 }) => {
                $f(Seq(|a: u64, b: u64| float_op(32, a, b, false)), $($arg),*)
            }
            (O::FMul, Scalar::Float { width: 32 }) => {
                $f(Seq(|a: u64, b: u64| float_op(32, a, b, true)), $($arg),*)
            }
            (O::FAdd, Scalar::Float { width: 64 }) => {
                $f(Seq(|a: u64, b: u64| float_op(64, a, b, false)), $($arg),*)
            }
            (O::FMul, Scalar::Float { width: 64 }) => {
                $f(Seq(|a: u64, b: u64| float_op(64, a, b, true)), $($arg),*)
            }
            (op, s) => $f(Seq(move |a: u64, b: u64| combine(op, s, a, b)), $($arg),*),
        }
    }};
}

/// The ascending fold of the lanes of a non-empty `set` of `row`.
#[inline(always)]
fn fold_set<C: Comb>(c: C, row: &[u64], set: u128) -> u64 {
    let mut it = lanes(set);
    let first = it.next().map_or(0, |l| l as usize);
    let mut acc = row[first];
    for k in it {
        acc = c.comb(acc, row[k as usize]);
    }
    acc
}

/// The lanes below `k` (all for 128).
#[inline(always)]
fn below(k: u32) -> u128 {
    if k >= 128 {
        u128::MAX
    } else {
        (1u128 << k) - 1
    }
}

/// Reduce, scans and clustered operations of one leaf: `out` gets the result at every lane of
/// `mask` (the general path's folds, `full` the subgroup's every lane).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn arith_leaf<C: Comb>(
    c: C,
    ident: u64,
    gop: u8,
    cluster: u32,
    row: &[u64],
    out: &mut [u64],
    mask: u128,
    full: u128,
) {
    let n = row.len();
    match gop {
        0 => {
            if mask == full {
                out.fill(c.fold_slice(row));
            } else {
                let r = fold_set(c, row, mask);
                for l in lanes(mask) {
                    out[l as usize] = r;
                }
            }
        }
        1 | 2 => {
            let incl = gop == 1;
            if mask == full {
                let mut acc = row[0];
                out[0] = if incl { acc } else { ident };
                for (o, &x) in out[1..].iter_mut().zip(&row[1..]) {
                    let next = c.comb(acc, x);
                    *o = if incl { next } else { acc };
                    acc = next;
                }
            } else {
                let mut it = lanes(mask);
                let Some(first) = it.next() else {
                    return;
                };
                let mut acc = row[first as usize];
                out[first as usize] = if incl { acc } else { ident };
                for l in it {
                    let next = c.comb(acc, row[l as usize]);
                    out[l as usize] = if incl { next } else { acc };
                    acc = next;
                }
            }
        }
        _ => {
            let mut base = 0u32;
            while (base as usize) < n {
                let cm = if cluster >= 128 {
                    u128::MAX
                } else {
                    below(cluster) << base
                };
                let set = mask & cm;
                let (b, e) = (base as usize, base as usize + cluster as usize);
                if set == cm && e <= n {
                    out[b..e].fill(c.fold_slice(&row[b..e]));
                } else if set != 0 {
                    let r = fold_set(c, row, set);
                    for l in lanes(set) {
                        out[l as usize] = r;
                    }
                }
                base += cluster.max(1);
            }
        }
    }
}

/// [`arith_leaf`] with `bop`'s operation at scalar `s`.
#[allow(clippy::too_many_arguments)]
fn arith_row(
    bop: spirv::Op,
    s: Scalar,
    gop: u8,
    cluster: u32,
    row: &[u64],
    out: &mut [u64],
    mask: u128,
    full: u128,
) {
    let ident = identity(bop, s);
    with_comb!(
        bop,
        s,
        arith_leaf(ident, gop, cluster, row, out, mask, full)
    );
}

/// [`partitioned_leaf`] with `bop`'s operation at scalar `s`.
#[allow(clippy::too_many_arguments)]
fn partitioned(
    bop: spirv::Op,
    s: Scalar,
    gop: u8,
    row: &[u64],
    out: &mut [u64],
    mask: u128,
    subsets: &[u128],
    undef: &mut dyn FnMut(u32) -> u64,
) {
    let ident = identity(bop, s);
    with_comb!(
        bop,
        s,
        partitioned_leaf(ident, gop, row, out, mask, subsets, undef)
    );
}

/// Partitioned reduce and scans of one leaf. Each lane's result is the fold of its subset (the
/// lanes of its ballot, all or those up to or below it), computed once per distinct ballot:
/// lanes come in ascending order, so the fold of one ballot's lanes below a lane extends the
/// fold below the previous such lane, in the same order. A lane whose ballot lacks its own bit
/// gets `undef(lane)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn partitioned_leaf<C: Comb>(
    c: C,
    ident: u64,
    gop: u8,
    row: &[u64],
    out: &mut [u64],
    mask: u128,
    subsets: &[u128],
    undef: &mut dyn FnMut(u32) -> u64,
) {
    // Per distinct ballot: the ballot, the fold of its lanes below `pos`, and `pos`.
    let mut seen: [(u128, Option<u64>, u32); MAX_LANES] = [(0, None, 0); MAX_LANES];
    let mut nseen = 0usize;
    for l in lanes(mask) {
        let b = subsets[l as usize];
        if b >> l & 1 == 0 {
            out[l as usize] = undef(l);
            continue;
        }
        let k = match seen[..nseen].iter().position(|e| e.0 == b) {
            Some(k) => k,
            None => {
                seen[nseen] = (b, None, 0);
                nseen += 1;
                nseen - 1
            }
        };
        let e = &mut seen[k];
        if gop == 6 {
            let r = *e.1.get_or_insert_with(|| fold_set(c, row, b));
            out[l as usize] = r;
            continue;
        }
        // Extend the fold over the ballot's lanes in [pos, l), then take lane l.
        let mut acc = e.1;
        for j in lanes(b & below(l) & !below(e.2)) {
            let x = row[j as usize];
            acc = Some(acc.map_or(x, |a| c.comb(a, x)));
        }
        let x = row[l as usize];
        let incl = acc.map_or(x, |a| c.comb(a, x));
        out[l as usize] = if gop == 7 { incl } else { acc.unwrap_or(ident) };
        *e = (b, Some(incl), l + 1);
    }
}

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

#[cfg(test)]
mod tests {
    //! The row kernels against the general path's definition, lane by lane: every lane's
    //! result is the ascending `combine` fold of its own set (the general path's `fold`), on
    //! random rows and masks at every subgroup size, for every operation and scalar.
    use super::*;
    use crate::num::fput;

    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn mask(&mut self) -> u128 {
            u128::from(self.next()) | u128::from(self.next()) << 64
        }
    }

    /// A value of `s`: random bits, or (for floats, one in four) a special value: a signed
    /// zero, an infinity, a NaN with a payload, the smallest subnormal.
    fn value(r: &mut Rng, s: Scalar) -> u64 {
        let x = r.next();
        match s {
            Scalar::Float { width } if x.is_multiple_of(4) => {
                let specials = [
                    0.0,
                    -0.0,
                    f64::INFINITY,
                    f64::NEG_INFINITY,
                    f64::NAN,
                    1.5,
                    -2.0,
                ];
                let v = specials[(x >> 8) as usize % specials.len()];
                if (x >> 16).is_multiple_of(5) {
                    // The smallest subnormal, or a NaN with another payload.
                    return [1, wmask(width) >> 1][(x >> 20) as usize % 2];
                }
                fput(width, v)
            }
            // Small integers too, so min and max see ties and products stay non-zero.
            Scalar::Int { width, .. } if x.is_multiple_of(3) => ((x >> 8) % 5) & wmask(width),
            _ => x & wmask(s.width()),
        }
    }

    /// The general path's fold of `set` (identity when empty).
    fn fold(bop: spirv::Op, s: Scalar, row: &[u64], set: u128) -> u64 {
        let mut acc: Option<u64> = None;
        for k in lanes(set) {
            let x = row[k as usize];
            acc = Some(acc.map_or(x, |a| combine(bop, s, a, x)));
        }
        acc.unwrap_or_else(|| identity(bop, s))
    }

    fn cases() -> Vec<(spirv::Op, Scalar)> {
        use spirv::Op as O;
        let mut v = Vec::new();
        let ints = [8, 16, 32, 64].map(|width| Scalar::Int {
            width,
            signed: width == 32,
        });
        for s in ints {
            for op in [
                O::IAdd,
                O::IMul,
                O::BitwiseAnd,
                O::BitwiseOr,
                O::BitwiseXor,
                O::SLessThan,
                O::SGreaterThan,
                O::ULessThan,
                O::UGreaterThan,
            ] {
                v.push((op, s));
            }
        }
        for width in [16, 32, 64] {
            for op in [O::FAdd, O::FMul, O::FOrdLessThan, O::FOrdGreaterThan] {
                v.push((op, Scalar::Float { width }));
            }
        }
        for op in [O::BitwiseAnd, O::BitwiseOr, O::BitwiseXor] {
            v.push((op, Scalar::Bool));
        }
        v
    }

    /// Masks worth trying at `n` lanes: all, random, one lane, every other, a prefix, none but
    /// the last cluster of four.
    fn masks(r: &mut Rng, n: u32) -> Vec<u128> {
        let full = below(n);
        let mut m = vec![full, r.mask() & full, r.mask() & r.mask() & full];
        m.push(1u128 << (r.next() % u64::from(n)));
        m.push(0x5555_5555_5555_5555_5555_5555_5555_5555 & full);
        m.push(below(n.div_ceil(2)));
        m.push(full & !below(n.saturating_sub(4)));
        m.retain(|&x| x != 0);
        m
    }

    #[test]
    fn reduce_scans_and_clusters_give_the_general_folds_at_every_size() {
        let mut r = Rng(25);
        let mut checked = 0u64;
        for n in 1..=128u32 {
            let full = below(n);
            for (bop, s) in cases() {
                let row: Vec<u64> = (0..n).map(|_| value(&mut r, s)).collect();
                for mask in masks(&mut r, n) {
                    for (gop, cluster) in [
                        (0, 0),
                        (1, 0),
                        (2, 0),
                        (3, 1),
                        (3, 2),
                        (3, 4),
                        (3, 8),
                        (3, 32),
                        (3, 128),
                    ] {
                        let before: Vec<u64> = (0..n).map(|_| r.next()).collect();
                        let mut out = before.clone();
                        arith_row(bop, s, gop, cluster, &row, &mut out, mask, full);
                        for l in 0..n {
                            let set = match gop {
                                0 => mask,
                                1 => mask & below(l + 1),
                                2 => mask & below(l),
                                _ => {
                                    let base = l / cluster * cluster;
                                    mask & (below(cluster) << base)
                                }
                            };
                            let want = if mask >> l & 1 == 0 {
                                before[l as usize]
                            } else {
                                fold(bop, s, &row, set)
                            };
                            assert_eq!(
                                out[l as usize], want,
                                "{bop:?} {s:?} group operation {gop} cluster {cluster} at {n} lanes, lane {l}, mask {mask:#x}, row {row:x?}"
                            );
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert!(checked > 1_000_000, "{checked} lanes checked");
    }

    #[test]
    fn a_nan_operand_gives_itself_quieted_the_first_of_two() {
        use crate::group::float_op;
        // f32: a signalling NaN is quieted; of two NaNs the first wins, whichever the order.
        assert_eq!(float_op(32, 0x7f80_0002, 0xffc0_0003, false), 0x7fc0_0002);
        assert_eq!(float_op(32, 0xffc0_0003, 0x7f80_0002, true), 0xffc0_0003);
        assert_eq!(float_op(32, 0x3f80_0000, 0x7f80_0002, true), 0x7fc0_0002);
        assert_eq!(
            float_op(64, 0x7ff0_0000_0000_0001, 0xfff8_0000_0000_0003, false),
            0x7ff8_0000_0000_0001
        );
        assert_eq!(float_op(16, 0xfc01, 0x7e03, true), 0xfe01);
        // Not a NaN operand: the f64 operation rounded to the width.
        assert_eq!(float_op(32, 0x3f80_0000, 0x4000_0000, false), 0x4040_0000);
    }

    #[test]
    fn partitioned_operations_give_the_general_folds_and_draw_in_its_order() {
        let mut r = Rng(8);
        for n in 1..=128u32 {
            let full = below(n);
            for (bop, s) in cases() {
                let row: Vec<u64> = (0..n).map(|_| value(&mut r, s)).collect();
                for mask in masks(&mut r, n) {
                    // Ballots: a partition by a few keys (most lanes), a random one (some lanes'
                    // lack their own bit) and the whole mask.
                    let keys: Vec<u64> = (0..n).map(|_| r.next() % 3).collect();
                    let mut subsets = vec![0u128; n as usize];
                    for l in 0..n {
                        let b = match r.next() % 8 {
                            0 => r.mask(),
                            1 => full,
                            _ => (0..n)
                                .filter(|&k| keys[k as usize] == keys[l as usize])
                                .fold(0u128, |b, k| b | 1u128 << k),
                        };
                        subsets[l as usize] = b & mask;
                    }
                    for gop in 6..=8u8 {
                        let mut drawn = Vec::new();
                        let mut out = vec![u64::MAX; n as usize];
                        let mut undef = |l: u32| {
                            drawn.push(l);
                            0xdead_0000 + u64::from(l)
                        };
                        partitioned(bop, s, gop, &row, &mut out, mask, &subsets, &mut undef);
                        let mut want_drawn = Vec::new();
                        for l in 0..n {
                            let b = subsets[l as usize];
                            let want = if mask >> l & 1 == 0 {
                                u64::MAX
                            } else if b >> l & 1 == 0 {
                                want_drawn.push(l);
                                0xdead_0000 + u64::from(l)
                            } else {
                                let set = match gop {
                                    6 => b,
                                    7 => b & below(l + 1),
                                    _ => b & below(l),
                                };
                                fold(bop, s, &row, set)
                            };
                            assert_eq!(
                                out[l as usize], want,
                                "{bop:?} {s:?} group operation {gop} at {n} lanes, lane {l}, mask {mask:#x}"
                            );
                        }
                        assert_eq!(drawn, want_drawn, "undefined draws in lane order");
                    }
                }
            }
        }
    }
}
