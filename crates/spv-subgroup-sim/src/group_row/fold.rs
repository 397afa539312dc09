//! The folds of the row forms: reduce, inclusive and exclusive scans, clustered and
//! partitioned operations over a row, each compiled for its operation and scalar width (the
//! [`Comb`] types), in the general path's lane order where the order matters.

use crate::group::{combine, float_op, identity};
use crate::num::{lanes, mask as wmask, sext};
use crate::types::Scalar;

use super::MAX_LANES;

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
pub(super) fn below(k: u32) -> u128 {
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
pub(super) fn arith_row(
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
pub(super) fn partitioned(
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
