//! `SPV_KHR_shader_ballot` instructions (`GL_ARB_shader_ballot`) on targets without the
//! extension but with core subgroup ops (`vulkan1.1`, `naga`):
//!
//! | instruction | rewrite |
//! |---|---|
//! | `OpSubgroupBallotKHR(p)` | `OpGroupNonUniformBallot(Subgroup, p)` (the same `uvec4`) |
//! | `OpSubgroupFirstInvocationKHR(x)` | `OpGroupNonUniformBroadcastFirst(Subgroup, x)`, by 32-bit words where the target lacks extended types |
//! | `OpSubgroupReadInvocationKHR(x, i)` | `OpGroupNonUniformShuffle(Subgroup, x, i)` (by words likewise) |
//!
//! `ReadInvocationKHR` requires a dynamically uniform index, which `Shuffle` takes as well, and
//! reads the same lane. Once no KHR ballot instruction is left, [`finish`] removes the
//! `SubgroupBallotKHR` capability and the extension; the `SubgroupSize` and
//! `SubgroupLocalInvocationId` built-ins (`gl_SubGroupSizeARB`, `gl_SubGroupInvocationARB`) then
//! rest on `GroupNonUniform`, which it declares. The `uint64_t` mask built-ins of
//! `GL_ARB_shader_ballot` (`gl_SubGroupEqMaskARB`...) have no core form of that type: a module
//! using them keeps the extension, and the validator reports it.

use rspirv::dr::{Instruction, Module, Operand};
use spirv::{BuiltIn, Capability, Decoration, Op};

use super::{id_operand, invalid};
use crate::emit::{Code, Id, Scalar};
use crate::{LowerError, Target};

/// Whether `op` is one of the `SPV_KHR_shader_ballot` instructions.
pub(crate) fn is_khr_ballot(op: Op) -> bool {
    matches!(
        op,
        Op::SubgroupBallotKHR | Op::SubgroupFirstInvocationKHR | Op::SubgroupReadInvocationKHR
    )
}

/// Whether `inst` is a KHR ballot instruction `target` lacks.
pub(crate) fn needs(inst: &Instruction, target: &Target) -> bool {
    is_khr_ballot(inst.class.opcode) && !target.ops.khr_ballot
}

/// Emits the core form of `inst`; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    if !code.em.has_core_ballot() {
        return Err(code
            .missing("core ballots (GroupNonUniformBallot, SPIR-V 1.3) or SPV_KHR_shader_ballot"));
    }
    let value = id_operand(inst, 0, "Value")?;
    let scope = code.em.subgroup_scope();
    let ty = inst
        .result_type
        .and_then(|t| code.em.ty_of_id(t))
        .ok_or_else(|| invalid(inst, "the result type must be a scalar or vector"))?;
    // The rewrite must not turn an invalid input into another error of the output (issue 21,
    // N9: a ballot of a `uint` became a core ballot breaking SG0603, blamed on the pass).
    let value_ty = code.em.ty_of_value(value);
    match inst.class.opcode {
        Op::SubgroupBallotKHR if value_ty.map(|t| (t.scalar, t.n)) != Some((Scalar::Bool, 1)) => {
            Err(invalid(
                inst,
                "OpSubgroupBallotKHR: \"Predicate must be a Boolean type.\" (SPV_KHR_shader_ballot)",
            ))
        }
        Op::SubgroupFirstInvocationKHR | Op::SubgroupReadInvocationKHR if value_ty != Some(ty) => {
            Err(invalid(
                inst,
                format!(
                    "Op{:?}: the type of Value must be the same as Result Type",
                    inst.class.opcode
                ),
            ))
        }
        Op::SubgroupBallotKHR => {
            code.em.need(Capability::GroupNonUniformBallot);
            Ok(code.op(Op::GroupNonUniformBallot, ty, &[scope, value]))
        }
        Op::SubgroupReadInvocationKHR => {
            let index = id_operand(inst, 1, "Index")?;
            code.shuffle(ty, value, index)
        }
        _ => {
            code.em.need(Capability::GroupNonUniformBallot);
            let direct = match ty.scalar {
                Scalar::Bool => !code.em.target.restrictions.no_bool_shuffle,
                s => s.width() == 32 || code.em.target.extended_types,
            };
            if direct {
                return Ok(code.op(Op::GroupNonUniformBroadcastFirst, ty, &[scope, value]));
            }
            let words = code.to_words(ty, value);
            let mut moved = Vec::with_capacity(words.len());
            for w in words {
                moved.push(code.op(
                    Op::GroupNonUniformBroadcastFirst,
                    crate::emit::Ty::U32,
                    &[scope, w],
                ));
            }
            Ok(code.from_words(ty, &moved))
        }
    }
}

/// Whether the module declares `SubgroupBallotKHR` and `target` lacks it.
pub(crate) fn declared(module: &Module, target: &Target) -> bool {
    !target.ops.khr_ballot
        && module.capabilities.iter().any(|c| {
            matches!(
                c.operands.first(),
                Some(Operand::Capability(Capability::SubgroupBallotKHR))
            )
        })
}

/// After every function: drops `SubgroupBallotKHR` and `SPV_KHR_shader_ballot` where `target`
/// lacks them and nothing needs them any more. Returns whether it removed anything.
/// `left`: whether an instruction of the module's functions is still a KHR ballot one.
pub(crate) fn finish(module: &mut Module, target: &Target, left: bool) -> bool {
    if !declared(module, target) {
        return false;
    }
    let mut basic_builtins = false;
    let mut mask_vars = Vec::new();
    for a in &module.annotations {
        if let [Operand::IdRef(v), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)] =
            a.operands.as_slice()
        {
            match b {
                BuiltIn::SubgroupSize | BuiltIn::SubgroupLocalInvocationId => basic_builtins = true,
                BuiltIn::SubgroupEqMask
                | BuiltIn::SubgroupGeMask
                | BuiltIn::SubgroupGtMask
                | BuiltIn::SubgroupLeMask
                | BuiltIn::SubgroupLtMask => mask_vars.push(*v),
                _ => {}
            }
        }
    }
    if left || mask_vars.iter().any(|&v| is_64_bit_var(module, v)) {
        return false;
    }
    module.capabilities.retain(|c| {
        !matches!(
            c.operands.first(),
            Some(Operand::Capability(Capability::SubgroupBallotKHR))
        )
    });
    module.extensions.retain(|e| {
        !matches!(e.operands.first(), Some(Operand::LiteralString(s)) if s == "SPV_KHR_shader_ballot")
    });
    let has_basic = module.capabilities.iter().any(|c| {
        matches!(
            c.operands.first(),
            Some(Operand::Capability(Capability::GroupNonUniform))
        )
    });
    if basic_builtins && !has_basic {
        module.capabilities.push(Instruction::new(
            Op::Capability,
            None,
            None,
            vec![Operand::Capability(Capability::GroupNonUniform)],
        ));
    }
    true
}

/// Whether variable `var` holds a 64-bit integer (the `GL_ARB_shader_ballot` form of a mask
/// built-in; the core form is a `uvec4`).
fn is_64_bit_var(module: &Module, var: Id) -> bool {
    let find = |id: Id| {
        module
            .types_global_values
            .iter()
            .find(|i| i.result_id == Some(id))
    };
    let pointee = find(var)
        .and_then(|v| v.result_type)
        .and_then(find)
        .and_then(|p| match p.operands.get(1) {
            Some(Operand::IdRef(t)) => find(*t),
            _ => None,
        });
    pointee.is_some_and(|t| {
        t.class.opcode == Op::TypeInt && t.operands.first() == Some(&Operand::LiteralBit32(64))
    })
}
