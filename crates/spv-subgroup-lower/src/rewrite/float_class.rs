//! `OpIsNan` and `OpIsInf` for a naga-like consumer (`restrictions.naga_module`): naga 30's
//! front end reads them, but its WGSL writer cannot spell them ("Unsupported relational function:
//! IsNan"), so `lower --target naga` would refuse every shader that calls `isnan()`/`isinf()`.
//!
//! Both are tests on the float's bits, exact for every NaN payload and both infinities, and
//! immune to fast-math folding: with `a` the magnitude bits (the sign cleared), a NaN has
//! `a > inf` and an infinity `a == inf`, `inf` being the all-ones exponent with a zero mantissa
//! (`0x7c00` for 16 bits, `0x7f80_0000` for 32). A 64-bit value is compared as its two words:
//! `hi & 0x7fff_ffff` against `0x7ff0_0000`, the low word deciding when they are equal
//! (NaN: some mantissa bit set). Vectors are tested per component. The words come from
//! [`Code::to_words`], the moves every other rewrite uses (a 64-bit value through `Int64` on
//! naga, a half through a 16-bit integer).

use rspirv::dr::Instruction;
use spirv::Op;

use super::{id_operand, invalid};
use crate::emit::{Code, Id, Scalar, Ty};
use crate::{LowerError, Target};

/// Whether `inst` is an `OpIsNan`/`OpIsInf` the target's consumer cannot take.
pub(crate) fn needs(inst: &Instruction, target: &Target) -> bool {
    target.restrictions.naga_module && matches!(inst.class.opcode, Op::IsNan | Op::IsInf)
}

/// Emits the bit test; returns the id of its bool (vector) result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let value = id_operand(inst, 0, "x")?;
    let ty = code
        .em
        .ty_of_value(value)
        .ok_or_else(|| invalid(inst, "the operand is not a float scalar or vector"))?;
    let Scalar::Float { width } = ty.scalar else {
        return Err(invalid(inst, "the operand is not a float scalar or vector"));
    };
    let nan = inst.class.opcode == Op::IsNan;
    let words = code.to_words(ty, value);
    let per = if width == 64 { 2 } else { 1 };
    let mut comps = Vec::with_capacity(usize::from(ty.n));
    for c in 0..usize::from(ty.n) {
        let w = &words[c * per..c * per + per];
        comps.push(if width == 64 {
            let (lo, hi) = (w[0], w[1]);
            let abs = code.em.u32(0x7fff_ffff);
            let inf = code.em.u32(0x7ff0_0000);
            let zero = code.em.u32(0);
            let a = code.op(Op::BitwiseAnd, Ty::U32, &[hi, abs]);
            let at = code.op(Op::IEqual, Ty::BOOL, &[a, inf]);
            if nan {
                let above = code.op(Op::UGreaterThan, Ty::BOOL, &[a, inf]);
                let lo_set = code.op(Op::INotEqual, Ty::BOOL, &[lo, zero]);
                let at_nan = code.and(at, lo_set);
                code.or(above, at_nan)
            } else {
                let lo_clear = code.op(Op::IEqual, Ty::BOOL, &[lo, zero]);
                code.and(at, lo_clear)
            }
        } else {
            let (abs, inf) = if width == 16 {
                (0x7fff, 0x7c00)
            } else {
                (0x7fff_ffff, 0x7f80_0000)
            };
            let abs = code.em.u32(abs);
            let inf = code.em.u32(inf);
            let a = code.op(Op::BitwiseAnd, Ty::U32, &[w[0], abs]);
            let test = if nan { Op::UGreaterThan } else { Op::IEqual };
            code.op(test, Ty::BOOL, &[a, inf])
        });
    }
    Ok(if comps.len() == 1 {
        comps[0]
    } else {
        code.op(Op::CompositeConstruct, Ty::BOOL.with_n(ty.n), &comps)
    })
}
