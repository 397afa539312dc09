//! Elementwise instructions over a whole row of lanes in one loop: the instruction's opcode and
//! operand types are matched once per component, not once per lane, and the loop body is the
//! operation alone. Only operations whose result is defined in every active lane are done here:
//! shifts and unsigned division and remainder are, once every active lane's shift is in range
//! and divisor non-zero (checked first; otherwise nothing is written and the per-lane path
//! reports the undefined lanes); signed division and float-to-integer conversion stay in
//! [`crate::alu::eval`]; each arm computes exactly what `alu::eval` computes, with
//! the same helpers, so results are bit-for-bit the same.

use crate::num::lanes;
use crate::num::{fget, fput, mask, sext};
use crate::types::Scalar;

/// Most lanes of a subgroup (the row length).
pub const MAX_LANES: usize = 128;

/// Runs `$body` for each active lane: over the whole row when every lane is active (a loop
/// the compiler can unroll and vectorise), else over the active lanes only. Inactive lanes'
/// results are never written: their registers keep the values they had.
macro_rules! each_lane {
    ($out:expr, $a:expr, $b:expr, $mask:expr, $full:expr, |$x:ident, $y:ident| $body:expr) => {{
        if $mask == $full {
            for ((o, &$x), &$y) in $out.iter_mut().zip($a.iter()).zip($b.iter()) {
                *o = $body;
            }
        } else {
            for l in lanes($mask) {
                let l = l as usize;
                if let (Some(o), Some(&$x), Some(&$y)) = ($out.get_mut(l), $a.get(l), $b.get(l)) {
                    *o = $body;
                }
            }
        }
    }};
}

fn fw(s: Scalar) -> u32 {
    match s {
        Scalar::Float { width } => width,
        _ => 32,
    }
}

/// Computes `op` for the lanes of `active` into `out` from the operand rows `a` and `b` (`b` is
/// ignored by unary operations), with result scalar `rs` and operand scalars `sa` and `sb`.
/// Returns false, writing nothing, when `op` is not one of the operations handled here.
#[allow(clippy::too_many_arguments)]
pub fn row(
    op: spirv::Op,
    rs: Scalar,
    sa: Scalar,
    sb: Scalar,
    a: &[u64],
    b: &[u64],
    out: &mut [u64],
    active: u128,
    full: u128,
) -> bool {
    use spirv::Op as O;
    let rm = mask(rs.width());
    let (aw, bw) = (sa.width(), sb.width());
    let (faw, fbw, frw) = (fw(sa), fw(sb), fw(rs));
    let bool_ = u64::from;
    // Shifts are undefined per lane when the shift is the width or more: those instructions go
    // to the per-lane path whenever any active lane's shift is out of range.
    // Whether any active lane's `b` fails `ok` (a whole-row scan when every lane is active).
    let any_bad = |ok: &dyn Fn(u64) -> bool| {
        if active == full && b.len() == out.len() {
            !b.iter().all(|&y| ok(y))
        } else {
            lanes(active).any(|l| b.get(l as usize).is_none_or(|&y| !ok(y)))
        }
    };
    if matches!(
        op,
        O::ShiftLeftLogical | O::ShiftRightLogical | O::ShiftRightArithmetic
    ) && any_bad(&|y| y < u64::from(rs.width()))
    {
        return false;
    }
    // Division and remainder by zero are undefined per lane too.
    if matches!(op, O::UDiv | O::UMod) && any_bad(&|y| y != 0) {
        return false;
    }
    match op {
        O::UDiv => each_lane!(out, a, b, active, full, |x, y| x / y),
        O::UMod => each_lane!(out, a, b, active, full, |x, y| x % y),
        O::ShiftLeftLogical => each_lane!(out, a, b, active, full, |x, y| (x << y) & rm),
        O::ShiftRightLogical => each_lane!(out, a, b, active, full, |x, y| x >> y),
        O::ShiftRightArithmetic => {
            each_lane!(out, a, b, active, full, |x, y| ((sext(aw, x) >> y) as u64)
                & rm)
        }
        O::IAdd => each_lane!(out, a, b, active, full, |x, y| x.wrapping_add(y) & rm),
        O::ISub => each_lane!(out, a, b, active, full, |x, y| x.wrapping_sub(y) & rm),
        O::IMul => each_lane!(out, a, b, active, full, |x, y| x.wrapping_mul(y) & rm),
        O::SNegate => each_lane!(out, a, a, active, full, |x, _y| x.wrapping_neg() & rm),
        O::Not => each_lane!(out, a, a, active, full, |x, _y| !x & rm),
        O::BitwiseAnd => each_lane!(out, a, b, active, full, |x, y| x & y),
        O::BitwiseOr => each_lane!(out, a, b, active, full, |x, y| x | y),
        O::BitwiseXor => each_lane!(out, a, b, active, full, |x, y| x ^ y),
        O::BitCount => each_lane!(out, a, a, active, full, |x, _y| u64::from(x.count_ones())),
        O::IEqual | O::LogicalEqual => each_lane!(out, a, b, active, full, |x, y| bool_(x == y)),
        O::INotEqual | O::LogicalNotEqual => {
            each_lane!(out, a, b, active, full, |x, y| bool_(x != y))
        }
        O::UGreaterThan => each_lane!(out, a, b, active, full, |x, y| bool_(x > y)),
        O::UGreaterThanEqual => each_lane!(out, a, b, active, full, |x, y| bool_(x >= y)),
        O::ULessThan => each_lane!(out, a, b, active, full, |x, y| bool_(x < y)),
        O::ULessThanEqual => each_lane!(out, a, b, active, full, |x, y| bool_(x <= y)),
        O::SGreaterThan => {
            each_lane!(out, a, b, active, full, |x, y| bool_(
                sext(aw, x) > sext(bw, y)
            ))
        }
        O::SGreaterThanEqual => {
            each_lane!(out, a, b, active, full, |x, y| bool_(
                sext(aw, x) >= sext(bw, y)
            ))
        }
        O::SLessThan => {
            each_lane!(out, a, b, active, full, |x, y| bool_(
                sext(aw, x) < sext(bw, y)
            ))
        }
        O::SLessThanEqual => {
            each_lane!(out, a, b, active, full, |x, y| bool_(
                sext(aw, x) <= sext(bw, y)
            ))
        }
        O::LogicalAnd => each_lane!(out, a, b, active, full, |x, y| bool_(x != 0 && y != 0)),
        O::LogicalOr => each_lane!(out, a, b, active, full, |x, y| bool_(x != 0 || y != 0)),
        O::LogicalNot => each_lane!(out, a, a, active, full, |x, _y| bool_(x == 0)),
        O::UConvert => each_lane!(out, a, a, active, full, |x, _y| x & rm),
        O::SConvert => each_lane!(out, a, a, active, full, |x, _y| (sext(aw, x) as u64) & rm),
        O::CopyObject => each_lane!(out, a, a, active, full, |x, _y| x),
        // Floats: the same f64 arithmetic and rounding as `alu::eval`.
        O::FAdd => each_lane!(out, a, b, active, full, |x, y| fput(
            frw,
            fget(faw, x) + fget(fbw, y)
        )),
        O::FSub => each_lane!(out, a, b, active, full, |x, y| fput(
            frw,
            fget(faw, x) - fget(fbw, y)
        )),
        O::FMul => each_lane!(out, a, b, active, full, |x, y| fput(
            frw,
            fget(faw, x) * fget(fbw, y)
        )),
        O::FDiv => each_lane!(out, a, b, active, full, |x, y| fput(
            frw,
            fget(faw, x) / fget(fbw, y)
        )),
        O::FNegate => each_lane!(out, a, a, active, full, |x, _y| x ^ (1u64 << (faw - 1))),
        O::FOrdEqual => each_lane!(out, a, b, active, full, |x, y| bool_(
            fget(faw, x) == fget(fbw, y)
        )),
        O::FOrdLessThan => each_lane!(out, a, b, active, full, |x, y| bool_(
            fget(faw, x) < fget(fbw, y)
        )),
        O::FOrdGreaterThan => each_lane!(out, a, b, active, full, |x, y| bool_(
            fget(faw, x) > fget(fbw, y)
        )),
        O::FOrdLessThanEqual => each_lane!(out, a, b, active, full, |x, y| bool_(
            fget(faw, x) <= fget(fbw, y)
        )),
        O::FOrdGreaterThanEqual => each_lane!(out, a, b, active, full, |x, y| bool_(
            fget(faw, x) >= fget(fbw, y)
        )),
        O::FUnordNotEqual => each_lane!(out, a, b, active, full, |x, y| bool_(
            fget(faw, x) != fget(fbw, y)
        )),
        O::ConvertUToF => each_lane!(out, a, a, active, full, |x, _y| fput(frw, x as f64)),
        O::ConvertSToF => each_lane!(out, a, a, active, full, |x, _y| fput(
            frw,
            sext(aw, x) as f64
        )),
        O::FConvert => each_lane!(out, a, a, active, full, |x, _y| fput(frw, fget(faw, x))),
        _ => return false,
    }
    true
}

/// Splits the register file into the result's row (`n` slots from `out`, mutable) and the rows
/// of the operands that are registers (`ins`, read-only). SSA results never share a row with
/// their operands; `None` where one does (an ill-formed module) or a row is out of range.
#[allow(clippy::type_complexity)]
pub fn split_rows(
    regs: &mut [u64],
    out: usize,
    ins: [Option<usize>; 2],
    n: usize,
) -> Option<(&mut [u64], [Option<&[u64]>; 2])> {
    let (lo, hi) = regs.split_at_mut_checked(out)?;
    let (dst, rest) = hi.split_at_mut_checked(n)?;
    let (lo, rest) = (&*lo, &*rest);
    let get = |x: Option<usize>| -> Option<Option<&[u64]>> {
        match x {
            None => Some(None),
            Some(x) if x + n <= out => lo.get(x..x + n).map(Some),
            Some(x) if x >= out + n => rest.get(x - out - n..x - out).map(Some),
            Some(_) => None,
        }
    };
    let (a, b) = (get(ins[0])?, get(ins[1])?);
    Some((dst, [a, b]))
}
