//! Per-component semantics of the core arithmetic, logic, comparison and conversion instructions.
//! `None` means the spec leaves the result undefined (division by zero, over-wide shifts).

use crate::num::{fget, fput, mask, sext};
use crate::types::Scalar;

/// An operand component: its bits and scalar type.
pub type Arg = (u64, Scalar);

fn width(s: Scalar) -> u32 {
    s.width()
}

fn fw(s: Scalar) -> u32 {
    match s {
        Scalar::Float { width } => width,
        _ => 32,
    }
}

/// Evaluates `op` on one component; `Err(())` when the opcode is not elementwise here.
#[allow(clippy::result_unit_err)]
pub fn eval(op: spirv::Op, rs: Scalar, x: &[Arg]) -> Result<Option<u64>, ()> {
    use spirv::Op as O;
    let rw = width(rs);
    let rm = mask(rw);
    let a = x.first().copied().ok_or(())?;
    let b = x.get(1).copied().unwrap_or((0, a.1));
    // Signed and float views are computed only by the arms that need them: this runs once per
    // lane and component, and converting every operand to f64 up front cost more than the op.
    let aw = width(a.1);
    let ai = || sext(aw, a.0);
    let bi = || sext(width(b.1), b.0);
    let fa = || fget(fw(a.1), a.0);
    let fb = || fget(fw(b.1), b.0);
    let f = |v: f64| Some(fput(fw(rs), v));
    let bool_ = |v: bool| Some(u64::from(v));
    Ok(match op {
        O::IAdd => Some(a.0.wrapping_add(b.0) & rm),
        O::ISub => Some(a.0.wrapping_sub(b.0) & rm),
        O::IMul => Some(a.0.wrapping_mul(b.0) & rm),
        O::UDiv => a.0.checked_div(b.0),
        O::UMod => a.0.checked_rem(b.0),
        O::SDiv => {
            if bi() == 0 || (ai() == sext(aw, 1 << (aw - 1)) && bi() == -1) {
                None
            } else {
                Some(((ai() / bi()) as u64) & rm)
            }
        }
        O::SRem => {
            if bi() == 0 || (ai() == sext(aw, 1 << (aw - 1)) && bi() == -1) {
                None
            } else {
                Some(((ai() % bi()) as u64) & rm)
            }
        }
        O::SMod => {
            if bi() == 0 || (ai() == sext(aw, 1 << (aw - 1)) && bi() == -1) {
                None
            } else {
                Some(
                    (ai().rem_euclid(bi())
                        + if bi() < 0 && ai().rem_euclid(bi()) != 0 {
                            bi()
                        } else {
                            0
                        }) as u64
                        & rm,
                )
            }
        }
        O::SNegate => Some(a.0.wrapping_neg() & rm),
        O::Not => Some(!a.0 & rm),
        O::BitwiseAnd => Some(a.0 & b.0),
        O::BitwiseOr => Some(a.0 | b.0),
        O::BitwiseXor => Some(a.0 ^ b.0),
        O::ShiftLeftLogical => (b.0 < u64::from(rw)).then(|| (a.0 << b.0) & rm),
        O::ShiftRightLogical => (b.0 < u64::from(rw)).then(|| a.0 >> b.0),
        O::ShiftRightArithmetic => (b.0 < u64::from(rw)).then(|| ((ai() >> b.0) as u64) & rm),
        O::BitCount => Some(u64::from(a.0.count_ones())),
        O::BitReverse => Some(a.0.reverse_bits() >> (64 - aw)),
        O::FAdd => f(fa() + fb()),
        O::FSub => f(fa() - fb()),
        O::FMul => f(fa() * fb()),
        O::FDiv => f(fa() / fb()),
        O::FRem => f(fa() % fb()),
        O::FMod => f(fa() - fb() * (fa() / fb()).floor()),
        O::FNegate => Some(a.0 ^ (1u64 << (fw(a.1) - 1))),
        O::IEqual | O::LogicalEqual => bool_(a.0 == b.0),
        O::INotEqual | O::LogicalNotEqual => bool_(a.0 != b.0),
        O::UGreaterThan => bool_(a.0 > b.0),
        O::UGreaterThanEqual => bool_(a.0 >= b.0),
        O::ULessThan => bool_(a.0 < b.0),
        O::ULessThanEqual => bool_(a.0 <= b.0),
        O::SGreaterThan => bool_(ai() > bi()),
        O::SGreaterThanEqual => bool_(ai() >= bi()),
        O::SLessThan => bool_(ai() < bi()),
        O::SLessThanEqual => bool_(ai() <= bi()),
        O::FOrdEqual => bool_(fa() == fb()),
        O::FOrdNotEqual => bool_(fa() != fb() && !fa().is_nan() && !fb().is_nan()),
        O::FOrdLessThan => bool_(fa() < fb()),
        O::FOrdGreaterThan => bool_(fa() > fb()),
        O::FOrdLessThanEqual => bool_(fa() <= fb()),
        O::FOrdGreaterThanEqual => bool_(fa() >= fb()),
        O::FUnordEqual => bool_(fa() == fb() || fa().is_nan() || fb().is_nan()),
        O::FUnordNotEqual => bool_(fa() != fb()),
        O::FUnordLessThan => bool_(fa() < fb() || fa().is_nan() || fb().is_nan()),
        O::FUnordGreaterThan => bool_(fa() > fb() || fa().is_nan() || fb().is_nan()),
        O::FUnordLessThanEqual => bool_(fa() <= fb() || fa().is_nan() || fb().is_nan()),
        O::FUnordGreaterThanEqual => bool_(fa() >= fb() || fa().is_nan() || fb().is_nan()),
        O::IsNan => bool_(fa().is_nan()),
        O::IsInf => bool_(fa().is_infinite()),
        O::LogicalAnd => bool_(a.0 != 0 && b.0 != 0),
        O::LogicalOr => bool_(a.0 != 0 || b.0 != 0),
        O::LogicalNot => bool_(a.0 == 0),
        O::UConvert => Some(a.0 & rm),
        O::SConvert => Some((ai() as u64) & rm),
        O::FConvert => f(fa()),
        O::ConvertSToF => f(ai() as f64),
        O::ConvertUToF => f(a.0 as f64),
        O::ConvertFToU => {
            // Out of range is undefined; NaN too.
            let t = fa().trunc();
            (t >= 0.0 && t < 2f64.powi(rw as i32)).then_some(t as u64)
        }
        O::ConvertFToS => {
            let t = fa().trunc();
            let lim = 2f64.powi(rw as i32 - 1);
            (t >= -lim && t < lim).then_some((t as i64 as u64) & rm)
        }
        O::CopyObject => Some(a.0),
        _ => return Err(()),
    })
}

/// `BitFieldInsert`, `BitFieldSExtract`, `BitFieldUExtract`; `None` when offset + count exceeds the width.
pub fn bitfield(op: spirv::Op, w: u32, x: &[u64]) -> Option<u64> {
    let get = |k: usize| x.get(k).copied().unwrap_or(0);
    let (base, rest) = (get(0), &x[1.min(x.len())..]);
    let (offset, count) = if op == spirv::Op::BitFieldInsert {
        (
            rest.get(1).copied().unwrap_or(0),
            rest.get(2).copied().unwrap_or(0),
        )
    } else {
        (get(1), get(2))
    };
    if offset + count > u64::from(w) {
        return None;
    }
    let m = if count == 64 {
        u64::MAX
    } else {
        ((1u64 << count) - 1) << offset
    };
    let wm = mask(w);
    Some(
        match op {
            spirv::Op::BitFieldInsert => (base & !m) | ((get(1) << offset) & m),
            spirv::Op::BitFieldUExtract => (base & m) >> offset,
            _ => {
                if count == 0 {
                    0
                } else {
                    let v = (base & m) >> offset;
                    (sext(count as u32, v) as u64) & wm
                }
            }
        } & wm,
    )
}
