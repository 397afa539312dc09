//! Elementwise operations compiled once per (opcode, operand widths) into plain functions over
//! whole rows: the row form's inner loops (`crate::fast`) with no opcode, width or lane-mask
//! test inside them, so the compiler unrolls and vectorises each one.
//!
//! A kernel computes every lane of its row, active or not. That is only done for operations
//! that are total (defined for any input bits, with no side effect): the caller keeps the
//! inactive lanes' old values by computing into a scratch row and blending the active lanes in.
//! Shifts and unsigned division and remainder are total here too (a shift by the width or more
//! wraps, a division by zero gives 0), because the caller first checks the active lanes
//! ([`Check`]) and takes the exact per-lane path, which reports the undefined results, when one
//! is out of range; an inactive lane's result is never seen. Every kernel computes for each lane
//! exactly what `crate::vector::row` and `crate::alu::eval` compute, with the same helpers, so
//! results are bit for bit the same (`kernels_match_the_general_rows` checks every kernel).

use crate::num::{fget, fput, mask, sext};
use crate::types::Scalar;

/// A compiled elementwise operation: `out[l] = op(a[l], b[l])` for every lane (`b` is ignored
/// by unary operations). The three rows have the same length.
pub type Kernel = fn(&[u64], &[u64], &mut [u64]);

/// What must hold of the active lanes' second operand before a kernel's results are defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Nothing: the operation is defined for every input.
    None,
    /// A shift amount below this width.
    ShiftBelow(u32),
    /// A non-zero divisor.
    NonZero,
}

impl Check {
    /// Whether the operand value `y` passes.
    #[inline]
    pub fn passes(self, y: u64) -> bool {
        match self {
            Check::None => true,
            Check::ShiftBelow(w) => y < u64::from(w),
            Check::NonZero => y != 0,
        }
    }

    /// Whether every lane of `mask` in `b` passes (lanes outside `b` fail).
    #[inline]
    pub fn holds(self, b: &[u64], mask: u128, full: u128) -> bool {
        let ok = |y: u64| self.passes(y);
        if self == Check::None {
            return true;
        }
        if mask == full {
            // No early exit: the whole row in one loop the compiler vectorises.
            b.iter().fold(true, |all, &y| all & ok(y))
        } else {
            crate::num::lanes(mask).all(|l| b.get(l as usize).is_some_and(|&y| ok(y)))
        }
    }
}

#[inline(always)]
fn map2(a: &[u64], b: &[u64], out: &mut [u64], f: impl Fn(u64, u64) -> u64) {
    for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
        *o = f(x, y);
    }
}

#[inline(always)]
fn map1(a: &[u64], out: &mut [u64], f: impl Fn(u64) -> u64) {
    for (o, &x) in out.iter_mut().zip(a) {
        *o = f(x);
    }
}

/// The divisor of a row division where it is the same non-zero value in every lane (an
/// array's length, a constant) and it and every dividend fit 32 bits: then [`div_by`] and
/// [`rem_by`] divide by multiplying, where a 64-bit `div` per lane costs tens of cycles.
#[inline]
fn uniform_divisor(a: &[u64], b: &[u64]) -> Option<u64> {
    let d = *b.first()?;
    let differ = b.iter().fold(0, |acc, &y| acc | (y ^ d));
    let high = a.iter().fold(d, |acc, &x| acc | x) >> 32;
    (d != 0 && differ == 0 && high == 0).then_some(d)
}

/// `m = ceil(2^64 / d)` for a 32-bit divisor `d > 0` (wrapping to 0 for `d = 1`), the
/// reciprocal with which [`div_by`] and [`rem_by`] divide any 32-bit dividend exactly: for
/// `x, d < 2^32` the error of `m / 2^64` against `1 / d` is under `1 / 2^64`, too small to
/// carry `x * m` across a multiple of `2^64` (Lemire, Kaser and Kurz, "Faster remainder by
/// direct computation", 2019).
#[inline]
fn reciprocal(d: u64) -> u64 {
    (u64::MAX / d).wrapping_add(1)
}

/// `x / d` for 32-bit `x` and a divisor `d > 1` with reciprocal `m`: the high word of `x * m`.
#[inline]
fn div_by(x: u64, m: u64) -> u64 {
    ((u128::from(x) * u128::from(m)) >> 64) as u64
}

/// `x % d` for 32-bit `x` and `d` with reciprocal `m`: the fraction `x * m mod 2^64` (which
/// is `(x mod d) / d` in 64-bit fixed point) times `d`, its high word.
#[inline]
fn rem_by(x: u64, m: u64, d: u64) -> u64 {
    ((u128::from(x.wrapping_mul(m)) * u128::from(d)) >> 64) as u64
}

/// Integer operations of one width `W` (operands and result).
mod int {
    use super::*;

    pub fn iadd<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x.wrapping_add(y) & mask(W))
    }
    pub fn isub<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x.wrapping_sub(y) & mask(W))
    }
    pub fn imul<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x.wrapping_mul(y) & mask(W))
    }
    pub fn snegate<const W: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| x.wrapping_neg() & mask(W))
    }
    pub fn not<const W: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| !x & mask(W))
    }
    pub fn shl<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x.wrapping_shl(y as u32) & mask(W))
    }
    pub fn shr<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x.wrapping_shr(y as u32))
    }
    pub fn sar<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| {
            (sext(W, x).wrapping_shr(y as u32) as u64) & mask(W)
        })
    }
    /// [`shl`] by the amount in `b`'s first lane, the same in every lane (a constant's row):
    /// one vector shift, where per-lane amounts have none before AVX2.
    pub fn shl_by<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        let y = b.first().copied().unwrap_or(0) as u32;
        map1(a, o, |x| x.wrapping_shl(y) & mask(W))
    }
    /// [`shr`] by the amount in `b`'s first lane (see [`shl_by`]).
    pub fn shr_by<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        let y = b.first().copied().unwrap_or(0) as u32;
        map1(a, o, |x| x.wrapping_shr(y))
    }
    /// [`sar`] by the amount in `b`'s first lane (see [`shl_by`]).
    pub fn sar_by<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        let y = b.first().copied().unwrap_or(0) as u32;
        map1(a, o, |x| (sext(W, x).wrapping_shr(y) as u64) & mask(W))
    }
    pub fn udiv<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        match super::uniform_divisor(a, b) {
            Some(1) => o.copy_from_slice(&a[..o.len()]),
            Some(d) => {
                let m = super::reciprocal(d);
                map1(a, o, |x| super::div_by(x, m))
            }
            None => map2(a, b, o, |x, y| x.checked_div(y).unwrap_or(0)),
        }
    }
    pub fn umod<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        match super::uniform_divisor(a, b) {
            Some(d) => {
                let m = super::reciprocal(d);
                map1(a, o, |x| super::rem_by(x, m, d))
            }
            None => map2(a, b, o, |x, y| x.checked_rem(y).unwrap_or(0)),
        }
    }
    pub fn sgt<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(sext(W, x) > sext(W, y)))
    }
    pub fn sge<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(sext(W, x) >= sext(W, y)))
    }
    pub fn slt<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(sext(W, x) < sext(W, y)))
    }
    pub fn sle<const W: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(sext(W, x) <= sext(W, y)))
    }
    /// `SConvert` from `A` bits to `W` bits.
    pub fn sconvert<const A: u32, const W: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| (sext(A, x) as u64) & mask(W))
    }
    pub fn uconvert<const W: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| x & mask(W))
    }
}

/// Operations whose result does not depend on a width (operands already hold their bits).
mod any {
    use super::*;

    pub fn and(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x & y)
    }
    pub fn or(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x | y)
    }
    pub fn xor(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| x ^ y)
    }
    pub fn copy(a: &[u64], _: &[u64], o: &mut [u64]) {
        o.copy_from_slice(&a[..o.len()]);
    }
    pub fn popcount(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| u64::from(x.count_ones()))
    }
    pub fn eq(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x == y))
    }
    pub fn ne(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x != y))
    }
    pub fn ugt(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x > y))
    }
    pub fn uge(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x >= y))
    }
    pub fn ult(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x < y))
    }
    pub fn ule(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x <= y))
    }
    pub fn land(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x != 0 && y != 0))
    }
    pub fn lor(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(x != 0 || y != 0))
    }
    pub fn lnot(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| u64::from(x == 0))
    }
}

/// Float operations with operands of `A` bits and results of `R` bits (the same `f64`
/// arithmetic and rounding as `alu::eval`).
mod float {
    use super::*;

    pub fn fadd<const A: u32, const R: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| fput(R, fget(A, x) + fget(A, y)))
    }
    pub fn fsub<const A: u32, const R: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| fput(R, fget(A, x) - fget(A, y)))
    }
    pub fn fmul<const A: u32, const R: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| fput(R, fget(A, x) * fget(A, y)))
    }
    pub fn fdiv<const A: u32, const R: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| fput(R, fget(A, x) / fget(A, y)))
    }
    pub fn fneg<const A: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| x ^ (1u64 << (A - 1)))
    }
    pub fn feq<const A: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(fget(A, x) == fget(A, y)))
    }
    pub fn flt<const A: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(fget(A, x) < fget(A, y)))
    }
    pub fn fgt<const A: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(fget(A, x) > fget(A, y)))
    }
    pub fn fle<const A: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(fget(A, x) <= fget(A, y)))
    }
    pub fn fge<const A: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(fget(A, x) >= fget(A, y)))
    }
    pub fn fune<const A: u32>(a: &[u64], b: &[u64], o: &mut [u64]) {
        map2(a, b, o, |x, y| u64::from(fget(A, x) != fget(A, y)))
    }
    /// `ConvertUToF` from `A`-bit integers.
    pub fn utof<const A: u32, const R: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| fput(R, x as f64))
    }
    /// `ConvertSToF` from `A`-bit integers.
    pub fn stof<const A: u32, const R: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| fput(R, sext(A, x) as f64))
    }
    pub fn fconvert<const A: u32, const R: u32>(a: &[u64], _: &[u64], o: &mut [u64]) {
        map1(a, o, |x| fput(R, fget(A, x)))
    }
}

/// Integer widths and float widths the kernels are compiled for.
fn int_width(s: Scalar) -> Option<u32> {
    match s {
        Scalar::Int { width, .. } if matches!(width, 8 | 16 | 32 | 64) => Some(width),
        _ => None,
    }
}

fn float_width(s: Scalar) -> Option<u32> {
    match s {
        Scalar::Float { width } if matches!(width, 16 | 32 | 64) => Some(width),
        _ => None,
    }
}

/// Picks the instance of a generic kernel for an integer width.
macro_rules! by_int {
    ($w:expr, $f:ident) => {
        match $w {
            8 => int::$f::<8> as Kernel,
            16 => int::$f::<16>,
            32 => int::$f::<32>,
            _ => int::$f::<64>,
        }
    };
}

/// Picks the instance of a generic float kernel for (operand width, result width).
macro_rules! by_float {
    ($a:expr, $r:expr, $f:ident) => {
        match ($a, $r) {
            (16, 16) => float::$f::<16, 16> as Kernel,
            (32, 32) => float::$f::<32, 32>,
            (64, 64) => float::$f::<64, 64>,
            (16, 32) => float::$f::<16, 32>,
            (16, 64) => float::$f::<16, 64>,
            (32, 16) => float::$f::<32, 16>,
            (32, 64) => float::$f::<32, 64>,
            (64, 16) => float::$f::<64, 16>,
            _ => float::$f::<64, 32>,
        }
    };
}

macro_rules! by_float1 {
    ($a:expr, $f:ident) => {
        match $a {
            16 => float::$f::<16> as Kernel,
            32 => float::$f::<32>,
            _ => float::$f::<64>,
        }
    };
}

/// The kernel of `op` with result scalar `rs` and operand scalars `sa`, `sb` (as
/// `crate::vector::row` takes them), and what its active lanes must satisfy; None where there is
/// none (the general row path then runs).
pub fn kernel(op: spirv::Op, rs: Scalar, sa: Scalar, sb: Scalar) -> Option<(Kernel, Check)> {
    use spirv::Op as O;
    let ints = || {
        let w = int_width(rs)?;
        (int_width(sa)? == w && int_width(sb)? == w).then_some(w)
    };
    let floats = || {
        let w = float_width(sa)?;
        (float_width(sb)? == w).then_some(w)
    };
    let k: Kernel = match op {
        O::IAdd => by_int!(ints()?, iadd),
        O::ISub => by_int!(ints()?, isub),
        O::IMul => by_int!(ints()?, imul),
        O::SNegate => by_int!(ints()?, snegate),
        O::Not => by_int!(ints()?, not),
        O::ShiftLeftLogical | O::ShiftRightLogical | O::ShiftRightArithmetic => {
            // The shift's width is the result's; the shift amount may have another width.
            let w = int_width(rs)?;
            if int_width(sa)? != w {
                return None;
            }
            int_width(sb)?;
            let k = match op {
                O::ShiftLeftLogical => by_int!(w, shl),
                O::ShiftRightLogical => by_int!(w, shr),
                _ => by_int!(w, sar),
            };
            return Some((k, Check::ShiftBelow(w)));
        }
        O::UDiv | O::UMod => {
            let w = ints()?;
            let k = if op == O::UDiv {
                by_int!(w, udiv)
            } else {
                by_int!(w, umod)
            };
            return Some((k, Check::NonZero));
        }
        O::BitwiseAnd => any::and,
        O::BitwiseOr => any::or,
        O::BitwiseXor => any::xor,
        O::BitCount => any::popcount,
        O::CopyObject => any::copy,
        O::IEqual | O::LogicalEqual => any::eq,
        O::INotEqual | O::LogicalNotEqual => any::ne,
        O::UGreaterThan => any::ugt,
        O::UGreaterThanEqual => any::uge,
        O::ULessThan => any::ult,
        O::ULessThanEqual => any::ule,
        O::SGreaterThan | O::SGreaterThanEqual | O::SLessThan | O::SLessThanEqual => {
            let w = int_width(sa)?;
            if int_width(sb)? != w {
                return None;
            }
            match op {
                O::SGreaterThan => by_int!(w, sgt),
                O::SGreaterThanEqual => by_int!(w, sge),
                O::SLessThan => by_int!(w, slt),
                _ => by_int!(w, sle),
            }
        }
        O::LogicalAnd => any::land,
        O::LogicalOr => any::lor,
        O::LogicalNot => any::lnot,
        O::UConvert => by_int!(int_width(rs)?, uconvert),
        O::SConvert => {
            let (a, r) = (int_width(sa)?, int_width(rs)?);
            match (a, r) {
                (8, 16) => int::sconvert::<8, 16> as Kernel,
                (8, 32) => int::sconvert::<8, 32>,
                (8, 64) => int::sconvert::<8, 64>,
                (16, 32) => int::sconvert::<16, 32>,
                (16, 64) => int::sconvert::<16, 64>,
                (32, 64) => int::sconvert::<32, 64>,
                (16, 8) => int::sconvert::<16, 8>,
                (32, 8) => int::sconvert::<32, 8>,
                (32, 16) => int::sconvert::<32, 16>,
                (64, 8) => int::sconvert::<64, 8>,
                (64, 16) => int::sconvert::<64, 16>,
                (64, 32) => int::sconvert::<64, 32>,
                _ => return None,
            }
        }
        O::FAdd | O::FSub | O::FMul | O::FDiv => {
            let (a, r) = (floats()?, float_width(rs)?);
            match op {
                O::FAdd => by_float!(a, r, fadd),
                O::FSub => by_float!(a, r, fsub),
                O::FMul => by_float!(a, r, fmul),
                _ => by_float!(a, r, fdiv),
            }
        }
        O::FNegate => by_float1!(float_width(sa)?, fneg),
        O::FOrdEqual => by_float1!(floats()?, feq),
        O::FOrdLessThan => by_float1!(floats()?, flt),
        O::FOrdGreaterThan => by_float1!(floats()?, fgt),
        O::FOrdLessThanEqual => by_float1!(floats()?, fle),
        O::FOrdGreaterThanEqual => by_float1!(floats()?, fge),
        O::FUnordNotEqual => by_float1!(floats()?, fune),
        O::ConvertUToF | O::ConvertSToF => {
            let (a, r) = (int_width(sa)?, float_width(rs)?);
            let pick = |u: bool| -> Option<Kernel> {
                Some(match (a, r, u) {
                    (32, 32, true) => float::utof::<32, 32>,
                    (32, 64, true) => float::utof::<32, 64>,
                    (64, 32, true) => float::utof::<64, 32>,
                    (64, 64, true) => float::utof::<64, 64>,
                    (32, 32, false) => float::stof::<32, 32>,
                    (32, 64, false) => float::stof::<32, 64>,
                    (64, 32, false) => float::stof::<64, 32>,
                    (64, 64, false) => float::stof::<64, 64>,
                    _ => return None,
                })
            };
            pick(op == O::ConvertUToF)?
        }
        O::FConvert => by_float!(float_width(sa)?, float_width(rs)?, fconvert),
        _ => return None,
    };
    Some((k, Check::None))
}

/// [`kernel`] for a second operand that is the same in every lane (a constant's row): where
/// that lets the loop vectorise, a kernel that reads it once (shifts by one amount); else the
/// same kernel as [`kernel`]'s.
pub fn kernel_uniform_b(
    op: spirv::Op,
    rs: Scalar,
    sa: Scalar,
    sb: Scalar,
) -> Option<(Kernel, Check)> {
    use spirv::Op as O;
    let (k, check) = kernel(op, rs, sa, sb)?;
    let w = int_width(rs);
    let k = match (op, w) {
        (O::ShiftLeftLogical, Some(w)) => by_int!(w, shl_by),
        (O::ShiftRightLogical, Some(w)) => by_int!(w, shr_by),
        (O::ShiftRightArithmetic, Some(w)) => by_int!(w, sar_by),
        _ => k,
    };
    Some((k, check))
}

/// Writes the lanes of `mask` of `from` into `to`, leaving the others as they are: lane by
/// lane over the active lanes when they are few, else a branch-free select over the whole row,
/// 64 lanes at a time (a 64-bit mask shifts in one instruction; a 128-bit one does not).
#[inline]
pub fn blend(to: &mut [u64], from: &[u64], mask: u128) {
    let n = to.len().min(from.len());
    if (mask.count_ones() as usize) * 4 < n {
        for l in crate::num::lanes(mask) {
            if let (Some(t), Some(&f)) = (to.get_mut(l as usize), from.get(l as usize)) {
                *t = f;
            }
        }
        return;
    }
    let half = n.min(64);
    let (to_lo, to_hi) = to[..n].split_at_mut(half);
    let (from_lo, from_hi) = from[..n].split_at(half);
    select64(to_lo, from_lo, mask as u64);
    select64(to_hi, from_hi, (mask >> 64) as u64);
}

/// [`blend`] of at most 64 lanes.
#[inline]
fn select64(to: &mut [u64], from: &[u64], m: u64) {
    if m == u64::MAX && to.len() == 64 {
        to.copy_from_slice(from);
        return;
    }
    for (l, (t, &f)) in to.iter_mut().zip(from).enumerate() {
        let keep = ((m >> l) & 1).wrapping_neg();
        *t = (f & keep) | (*t & !keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests' deterministic random numbers (xorshift64 from `seed`, not zero).
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// Every kernel, for every operand and result scalar it accepts, at several row lengths and
    /// masks, gives in the active lanes exactly what `vector::row` gives, leaves the inactive
    /// lanes alone, and refuses (by its check) exactly where `vector::row` refuses.
    /// Division by a reciprocal is exact for every 32-bit dividend and divisor: the edges
    /// (0, 1, powers of two and their neighbours, 2^32 - 1) against each other, and random
    /// pairs.
    #[test]
    fn division_by_a_reciprocal_is_exact() {
        let mut edges = vec![
            0u64, 1, 2, 3, 5, 7, 10, 641, 65_535, 65_536, 65_537, 6_700_417,
        ];
        for k in 1..32 {
            edges.extend([(1u64 << k) - 1, 1 << k, (1 << k) + 1]);
        }
        edges.push(u64::from(u32::MAX));
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        // 32-bit values of every magnitude (the top bits pick how many low bits are kept).
        let mut random = move || {
            let r = next();
            r & 0xffff_ffff >> (r >> 59)
        };
        let mut pairs: Vec<(u64, u64)> = Vec::new();
        for &x in &edges {
            for &d in &edges {
                pairs.push((x, d));
            }
        }
        pairs.extend((0..200_000).map(|_| (random(), random())));
        for (x, d) in pairs {
            if d == 0 {
                continue;
            }
            let m = reciprocal(d);
            assert_eq!(rem_by(x, m, d), x % d, "{x} % {d}");
            if d > 1 {
                assert_eq!(div_by(x, m), x / d, "{x} / {d}");
            }
        }
    }

    #[test]
    fn kernels_match_the_general_rows() {
        use spirv::Op as O;
        let scalars = [
            Scalar::Bool,
            Scalar::Int {
                width: 8,
                signed: false,
            },
            Scalar::Int {
                width: 16,
                signed: true,
            },
            Scalar::Int {
                width: 32,
                signed: false,
            },
            Scalar::Int {
                width: 64,
                signed: true,
            },
            Scalar::Float { width: 16 },
            Scalar::Float { width: 32 },
            Scalar::Float { width: 64 },
        ];
        let ops = [
            O::IAdd,
            O::ISub,
            O::IMul,
            O::SNegate,
            O::Not,
            O::ShiftLeftLogical,
            O::ShiftRightLogical,
            O::ShiftRightArithmetic,
            O::UDiv,
            O::UMod,
            O::BitwiseAnd,
            O::BitwiseOr,
            O::BitwiseXor,
            O::BitCount,
            O::CopyObject,
            O::IEqual,
            O::LogicalEqual,
            O::INotEqual,
            O::LogicalNotEqual,
            O::UGreaterThan,
            O::UGreaterThanEqual,
            O::ULessThan,
            O::ULessThanEqual,
            O::SGreaterThan,
            O::SGreaterThanEqual,
            O::SLessThan,
            O::SLessThanEqual,
            O::LogicalAnd,
            O::LogicalOr,
            O::LogicalNot,
            O::UConvert,
            O::SConvert,
            O::FAdd,
            O::FSub,
            O::FMul,
            O::FDiv,
            O::FNegate,
            O::FOrdEqual,
            O::FOrdLessThan,
            O::FOrdGreaterThan,
            O::FOrdLessThanEqual,
            O::FOrdGreaterThanEqual,
            O::FUnordNotEqual,
            O::ConvertUToF,
            O::ConvertSToF,
            O::FConvert,
        ];
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        // A value of scalar `s`: small numbers (shift amounts around the width, zero divisors)
        // as often as wide ones, floats with special values.
        let value = |s: Scalar, r: u64| -> u64 {
            let w = s.width();
            match (s, r % 4) {
                (Scalar::Bool, _) => r >> 8 & 1,
                (Scalar::Float { .. }, 0) => {
                    let specials = match w {
                        16 => [0x7c00u64, 0xfc00, 0x7e01, 0x8000],
                        32 => [0x7f80_0000, 0xff80_0000, 0x7fc0_0001, 0x8000_0000],
                        _ => [
                            0x7ff0_0000_0000_0000,
                            0xfff0_0000_0000_0000,
                            0x7ff8_0000_0000_0001,
                            0x8000_0000_0000_0000,
                        ],
                    };
                    specials[(r >> 8) as usize % 4]
                }
                (_, 1) => (r >> 8) % (u64::from(w) + 8),
                _ => (r >> 3) & crate::num::mask(w),
            }
        };
        let mut checked = 0;
        for op in ops {
            for rs in scalars {
                for sa in scalars {
                    for sb in scalars {
                        let Some((general_kernel, check)) = kernel(op, rs, sa, sb) else {
                            continue;
                        };
                        // The uniform-operand kernel too, on rows whose second operand is the
                        // same in every lane (rounds 3 to 5).
                        let uniform = kernel_uniform_b(op, rs, sa, sb).map(|k| k.0);
                        for n in [1usize, 5, 32, 64, 100, 128] {
                            let full = if n == 128 {
                                u128::MAX
                            } else {
                                (1u128 << n) - 1
                            };
                            for round in 0..6 {
                                let a: Vec<u64> = (0..n).map(|_| value(sa, next())).collect();
                                let mut b: Vec<u64> = (0..n).map(|_| value(sb, next())).collect();
                                let kernel = if round >= 3 {
                                    let y = b[0];
                                    b.fill(y);
                                    uniform.unwrap_or(general_kernel)
                                } else {
                                    general_kernel
                                };
                                let mask = match round {
                                    0 => full,
                                    _ => (u128::from(next()) << 64 | u128::from(next())) & full,
                                };
                                let before: Vec<u64> = (0..n).map(|_| next()).collect();
                                let mut want = before.clone();
                                let general = crate::vector::row(
                                    op, rs, sa, sb, &a, &b, &mut want, mask, full,
                                );
                                let holds = check.holds(&b, mask, full);
                                assert_eq!(
                                    general, holds,
                                    "{op:?} {rs:?} {sa:?} {sb:?}: refusals differ"
                                );
                                if !holds {
                                    continue;
                                }
                                let mut all = vec![0; n];
                                kernel(&a, &b, &mut all);
                                let mut got = before.clone();
                                blend(&mut got, &all, mask);
                                // A NaN's payload is the one thing left open: Rust does not fix
                                // which operand's payload an operation returns (and the compiler
                                // may swap commutative operands), nor does SPIR-V.
                                let nan = |x: u64| {
                                    matches!(rs, Scalar::Float { .. })
                                        && crate::num::fget(rs.width(), x).is_nan()
                                };
                                for l in 0..n {
                                    let same = got[l] == want[l] || (nan(got[l]) && nan(want[l]));
                                    assert!(
                                        same,
                                        "{op:?} {rs:?} {sa:?} {sb:?} n {n} lane {l} mask {mask:#x}: {:#x} against {:#x}",
                                        got[l], want[l]
                                    );
                                }
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        // Every kernel family was reached (the test is not vacuous).
        assert!(checked > 10_000, "only {checked} rows compared");
    }
}
