//! The extended instructions of `SPV_AMD_shader_ballot` (`GL_AMD_shader_ballot`) on targets
//! without `VK_AMD_shader_ballot` (every preset: the target's `ops.groups`). Each is exact in
//! core operations, as the extension defines it (SPIR-V registry, `SPV_AMD_shader_ballot`):
//!
//! | instruction | definition | rewrite |
//! |---|---|---|
//! | `WriteInvocationAMD(in, w, k)` | `out[i] = (i == k) ? w : in` | a select on the lane id |
//! | `MbcntAMD(mask)` | the bit count of `SubgroupLtMaskARB & mask` (64-bit) | the low two words of the lane's less-than mask, ANDed with the mask's words, `BitCount`, summed |
//! | `SwizzleInvocationsAMD(x, offset)` | `out[i] = isActive[j] ? x[j] : 0`, `j = (i & ~3) + offset[i & 3]` | a shuffle from lane `j`, kept where `j`'s bit of a ballot of the active lanes is set, else 0 |
//! | `SwizzleInvocationsMaskedAMD(x, mask)` | the same with `j = (((i & 31) & mask.x) \| mask.y) ^ mask.z \| (i & 32)` | likewise |
//!
//! A swizzle's shuffle reads an inactive or missing lane only where the ballot test discards the
//! value; the lane read is the target's (`Code::read_lane`: a shuffle, or ballots per bit where
//! there is none). `MbcntAMD`'s mask may be a `uint64_t` (as the extension says, glslang's form)
//! or a `uvec2` of its two words; its result a 32- or 64-bit unsigned integer. Once every such
//! instruction is rewritten, [`finish`] removes the import; the extension goes with the `Groups`
//! capability when nothing needs it (`hygiene.rs`).

use rspirv::dr::{Instruction, Module, Operand};
use spirv::Op;
use spv_subgroup_validate::fit::{amd_ballot_instruction, AMD_SHADER_BALLOT};

use super::{id_operand, invalid};
use crate::emit::{Code, Emitter, Id, Scalar, Ty};
use crate::{LowerError, Target};

/// The instruction number of `inst` if it is one of the AMD ballot set's.
fn number(inst: &Instruction, em: &Emitter) -> Option<u32> {
    let set = em.amd_ballot?;
    match inst.operands.as_slice() {
        [Operand::IdRef(s), Operand::LiteralExtInstInteger(n), ..]
            if inst.class.opcode == Op::ExtInst && *s == set =>
        {
            Some(*n)
        }
        _ => None,
    }
}

/// Whether `inst` is an instruction of the AMD ballot set the target lacks.
pub(crate) fn needs(inst: &Instruction, em: &Emitter) -> bool {
    !em.target.ops.groups && number(inst, em).is_some()
}

/// The `n`th argument of the ext-inst `inst` (after the set and the instruction number).
fn arg(inst: &Instruction, n: usize, what: &str) -> Result<Id, LowerError> {
    id_operand(inst, n + 2, what)
}

/// Emits the core form of `inst`; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let n = number(inst, code.em).ok_or_else(|| invalid(inst, "not an AMD ballot instruction"))?;
    let name = amd_ballot_instruction(n)
        .ok_or_else(|| invalid(inst, format!("no instruction {n} in {AMD_SHADER_BALLOT}")))?;
    let ty = inst
        .result_type
        .and_then(|t| code.em.ty_of_id(t))
        .ok_or_else(|| {
            invalid(
                inst,
                format!("{name}: the result type is not a scalar or vector"),
            )
        })?;
    let same_type = |code: &Code, v: Id| code.em.ty_of_value(v) == Some(ty);
    match n {
        // WriteInvocationAMD(inputValue, writeValue, invocationIndex).
        3 => {
            let input = arg(inst, 0, "inputValue")?;
            let write = arg(inst, 1, "writeValue")?;
            let index = arg(inst, 2, "invocationIndex")?;
            if !same_type(code, input) || !same_type(code, write) {
                return Err(invalid(
                    inst,
                    "WriteInvocationAMD: \"The type of inputValue and writeValue must be the same as Result Type.\"",
                ));
            }
            if code.em.ty_of_value(index) != Some(Ty::U32) {
                return Err(invalid(
                    inst,
                    "WriteInvocationAMD: \"invocationIndex must be a 32-bit unsigned integer\"",
                ));
            }
            let lane = code.lane_id()?;
            let here = code.op(Op::IEqual, Ty::BOOL, &[lane, index]);
            Ok(code.select(ty, here, write, input))
        }
        // MbcntAMD(mask).
        4 => mbcnt(code, inst, ty),
        // SwizzleInvocationsAMD(data, offset), SwizzleInvocationsMaskedAMD(data, mask).
        _ => {
            let data = arg(inst, 0, "data")?;
            let pattern = arg(inst, 1, if n == 1 { "offset" } else { "mask" })?;
            if !same_type(code, data) {
                return Err(invalid(
                    inst,
                    format!("{name}: \"Result Type and the type of operand <data> must be the same type.\""),
                ));
            }
            let components = if n == 1 { 4 } else { 3 };
            if code.em.ty_of_value(pattern) != Some(Ty::U32.with_n(components)) {
                return Err(invalid(
                    inst,
                    format!(
                        "{name}: the {} must be an unsigned integer vector with {components} components",
                        if n == 1 { "offset" } else { "mask" }
                    ),
                ));
            }
            let lane = code.lane_id()?;
            let source = if n == 1 {
                swizzle_source(code, lane, pattern)
            } else {
                masked_source(code, lane, pattern)
            };
            let active = code.active()?;
            let there = source_active(code, active, source);
            let moved = code.read_lane(ty, data, source)?;
            let zero = code.em.splat(ty, 0);
            Ok(code.select(ty, there, moved, zero))
        }
    }
}

/// `(lane & ~3) + offset[lane & 3]`: the lane a `SwizzleInvocationsAMD` reads.
fn swizzle_source(code: &mut Code, lane: Id, offset: Id) -> Id {
    let three = code.em.u32(3);
    let not_three = code.em.u32(!3);
    let quad = code.op(Op::BitwiseAnd, Ty::U32, &[lane, not_three]);
    let within = code.op(Op::BitwiseAnd, Ty::U32, &[lane, three]);
    let off = code.op(Op::VectorExtractDynamic, Ty::U32, &[offset, within]);
    code.op(Op::IAdd, Ty::U32, &[quad, off])
}

/// `(((lane & 31) & mask.x) | mask.y) ^ mask.z | (lane & 32)`: the lane a
/// `SwizzleInvocationsMaskedAMD` reads.
fn masked_source(code: &mut Code, lane: Id, mask: Id) -> Id {
    let x = code.extract(Ty::U32, mask, 0);
    let y = code.extract(Ty::U32, mask, 1);
    let z = code.extract(Ty::U32, mask, 2);
    let low = code.em.u32(31);
    let group = code.em.u32(32);
    let j = code.op(Op::BitwiseAnd, Ty::U32, &[lane, low]);
    let j = code.op(Op::BitwiseAnd, Ty::U32, &[j, x]);
    let j = code.op(Op::BitwiseOr, Ty::U32, &[j, y]);
    let j = code.op(Op::BitwiseXor, Ty::U32, &[j, z]);
    let high = code.op(Op::BitwiseAnd, Ty::U32, &[lane, group]);
    code.op(Op::BitwiseOr, Ty::U32, &[j, high])
}

/// Whether lane `source` (below 64) is set in the mask `active`: a lane beyond the subgroup
/// has no bit in a ballot, so it reads as inactive, as the extension's `isActive` does.
fn source_active(code: &mut Code, active: Id, source: Id) -> Id {
    let one = code.em.u32(1);
    let zero = code.em.u32(0);
    let thirty_one = code.em.u32(31);
    let word = if code.em.single_word() {
        // Masks of one word: a source of 32 or more is beyond every subgroup.
        let below = code.em.u32(32);
        let inside = code.op(Op::ULessThan, Ty::BOOL, &[source, below]);
        let k = code.op(Op::BitwiseAnd, Ty::U32, &[source, thirty_one]);
        let shifted = code.op(Op::ShiftRightLogical, Ty::U32, &[active, k]);
        let bit = code.op(Op::BitwiseAnd, Ty::U32, &[shifted, one]);
        let set = code.op(Op::INotEqual, Ty::BOOL, &[bit, zero]);
        return code.and(inside, set);
    } else {
        let five = code.em.u32(5);
        let w = code.op(Op::ShiftRightLogical, Ty::U32, &[source, five]);
        code.op(Op::VectorExtractDynamic, Ty::U32, &[active, w])
    };
    let k = code.op(Op::BitwiseAnd, Ty::U32, &[source, thirty_one]);
    let shifted = code.op(Op::ShiftRightLogical, Ty::U32, &[word, k]);
    let bit = code.op(Op::BitwiseAnd, Ty::U32, &[shifted, one]);
    code.op(Op::INotEqual, Ty::BOOL, &[bit, zero])
}

/// `MbcntAMD(mask)`: `BitCount(SubgroupLtMaskARB & mask)` over 64 bits, word by word.
fn mbcnt(code: &mut Code, inst: &Instruction, ty: Ty) -> Result<Id, LowerError> {
    let mask = arg(inst, 0, "mask")?;
    let mask_ty = code.em.ty_of_value(mask);
    let words = match mask_ty {
        Some(t @ Ty { scalar: Scalar::Int { width: 64, signed: false }, n: 1 }) => {
            code.to_words(t, mask)
        }
        Some(t) if t == Ty::U32.with_n(2) => code.to_words(t, mask),
        _ => {
            return Err(invalid(
                inst,
                "MbcntAMD: \"Result Type and mask must be 64-bit unsigned integers.\" (or a uvec2 of the mask's words)",
            ))
        }
    };
    let wide = match ty {
        Ty {
            scalar:
                Scalar::Int {
                    width: 32,
                    signed: false,
                },
            n: 1,
        } => false,
        Ty {
            scalar:
                Scalar::Int {
                    width: 64,
                    signed: false,
                },
            n: 1,
        } => true,
        _ => {
            return Err(invalid(
                inst,
                "MbcntAMD: the result type must be a 32- or 64-bit unsigned integer",
            ))
        }
    };
    let lane = code.lane_id()?;
    let mut count = None;
    for (w, &word) in words.iter().enumerate() {
        let below = code.low_bits_word(lane, w as u32)?;
        let bits = code.op(Op::BitwiseAnd, Ty::U32, &[word, below]);
        let c = code.op(Op::BitCount, Ty::U32, &[bits]);
        count = Some(match count {
            None => c,
            Some(sum) => code.op(Op::IAdd, Ty::U32, &[sum, c]),
        });
    }
    let count = count.ok_or_else(|| invalid(inst, "MbcntAMD: the mask has no words"))?;
    Ok(if wide {
        code.op(Op::UConvert, ty, &[count])
    } else {
        count
    })
}

/// Whether the module imports the AMD ballot set and `target` lacks it (the import goes).
pub(crate) fn declared(module: &Module, target: &Target) -> bool {
    !target.ops.groups && module.ext_inst_imports.iter().any(is_import)
}

fn is_import(inst: &Instruction) -> bool {
    matches!(inst.operands.first(), Some(Operand::LiteralString(s)) if s == AMD_SHADER_BALLOT)
}

/// After every function: where `target` lacks `VK_AMD_shader_ballot`, every instruction of the
/// set was rewritten (or the pass refused the module), so the import goes. Returns whether it
/// removed anything.
pub(crate) fn finish(module: &mut Module, target: &Target) -> bool {
    if !declared(module, target) {
        return false;
    }
    module.ext_inst_imports.retain(|i| !is_import(i));
    true
}
