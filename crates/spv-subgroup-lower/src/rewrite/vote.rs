//! `OpSubgroupAllKHR`/`AnyKHR`/`AllEqualKHR` (SPV_KHR_subgroup_vote).
//!
//! With core `GroupNonUniformVote` each becomes one `OpGroupNonUniformAll/Any/AllEqual`
//! (AllEqual on a bool predicate is legal); a consumer without AllEqual (naga's front end)
//! gets `Any(p) != Any(!p)`, two core vote ops. On a non-empty active set that is the spec's
//! AllEqual (exactly one of the two holds iff the lanes agree), as `All(p) || !Any(p)` is; the
//! two forms differ only on an empty set, which lavapipe 22.3 produces (a loop whose only exit
//! is a divergent `break`, in a partial subgroup, runs on with no lane active): there its
//! native AllEqual answers false, and so does this form (docs/lowering.md, "Driver facts").
//!
//! The core `OpGroupNonUniformAllEqual` (any type) on a consumer without it (naga), and of an
//! 8-, 16- or 64-bit value on a target without subgroup extended types, is rewritten too
//! ([`lower_core_all_equal`]): bools per component as above; integers
//! `All(w == BroadcastFirst(w))` over their 32-bit words (bitwise equality is integer
//! equality); floats `All(x == BroadcastFirst(x))` with `FOrdEqual` per component, the words
//! moved as 32-bit words and put back together, so +0.0 equals -0.0 and a NaN equals nothing.
//! The first active lane is active, so `BroadcastFirst` reads a defined value.
//!
//! Otherwise ballots, over the active lanes only
//! (inactive lanes and lanes beyond the subgroup contribute zero bits):
//!
//! - `Any(p)      = Ballot(p) != 0` (1 ballot);
//! - `All(p)      = Ballot(!p) == 0` (1 ballot);
//! - `AllEqual(p) = (b == Ballot(true)) != (b == 0)` with `b = Ballot(p)` (2 ballots).
//!
//! The ballot is `OpGroupNonUniformBallot`, or `OpSubgroupBallotKHR` on a SPIR-V 1.0 target
//! (chosen by [`Code::ballot`]). Every sequence is valid in non-uniform control flow and has no
//! loop, so helper invocations and partial subgroups need nothing special.

use rspirv::dr::Instruction;
use spirv::{Capability, Op};
use spv_subgroup_validate::fit::Missing;

use super::{id_operand, invalid};
use crate::emit::{Code, Id, Scalar, Ty};
use crate::{LowerError, Target};

/// Emits the vote sequence for `inst`.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let pred = id_operand(inst, 0, "Predicate")?;
    if code.em.ty_of_value(pred) != Some(Ty::BOOL) {
        return Err(invalid(inst, "the vote predicate must be a bool scalar"));
    }
    if inst.result_type.and_then(|t| code.em.ty_of_id(t)) != Some(Ty::BOOL) {
        return Err(invalid(inst, "the vote result type must be a bool scalar"));
    }
    let op = inst.class.opcode;
    if has_core_vote(code) && op == Op::SubgroupAllEqualKHR && !core_all_equal(code) {
        // Any(p) != Any(!p): two core vote ops, for consumers without AllEqual (naga).
        code.em.need(Capability::GroupNonUniformVote);
        let scope = code.em.subgroup_scope();
        let any = code.op(Op::GroupNonUniformAny, Ty::BOOL, &[scope, pred]);
        let np = code.not(pred);
        let any_not = code.op(Op::GroupNonUniformAny, Ty::BOOL, &[scope, np]);
        return Ok(code.op(Op::LogicalNotEqual, Ty::BOOL, &[any, any_not]));
    }
    if has_core_vote(code) {
        code.em.need(Capability::GroupNonUniform);
        code.em.need(Capability::GroupNonUniformVote);
        let scope = code.em.subgroup_scope();
        let core = match op {
            Op::SubgroupAllKHR => Op::GroupNonUniformAll,
            Op::SubgroupAnyKHR => Op::GroupNonUniformAny,
            _ => Op::GroupNonUniformAllEqual,
        };
        return Ok(code.op(core, Ty::BOOL, &[scope, pred]));
    }
    Ok(match op {
        Op::SubgroupAnyKHR => {
            let b = code.ballot(pred)?;
            code.mask_nonzero(b)
        }
        Op::SubgroupAllKHR => {
            let np = code.not(pred);
            let b = code.ballot(np)?;
            code.mask_is_zero(b)
        }
        _ => {
            // (b == act) != (b == 0): on a non-empty active set exactly one holds iff the lanes
            // agree; on lavapipe's empty one both hold, giving false like its native AllEqual.
            let b = code.ballot(pred)?;
            let act = code.active()?;
            let none = code.mask_is_zero(b);
            let all = code.mask_eq(b, act);
            code.op(Op::LogicalNotEqual, Ty::BOOL, &[all, none])
        }
    })
}

/// Whether the target takes `OpGroupNonUniformAllEqual` (naga's SPIR-V front end has All and
/// Any but no AllEqual).
fn core_all_equal(code: &Code) -> bool {
    !code.em.target.restrictions.no_all_equal
}

/// Whether the target runs the core vote instructions.
fn has_core_vote(code: &Code) -> bool {
    let t = code.em.target;
    t.ops.vote && t.spirv_version >= (1, 3)
}

/// Whether `inst` is a core `OpGroupNonUniformAllEqual` that `target` needs rewritten.
pub(crate) fn needs_core_all_equal(inst: &Instruction, target: &Target) -> bool {
    inst.class.opcode == Op::GroupNonUniformAllEqual && target.restrictions.no_all_equal
}

/// Whether `inst` is a core `OpGroupNonUniformAllEqual` of an 8-, 16- or 64-bit value on a target
/// that lacks only subgroup extended types for it (`vulkan1.1`): [`lower_core_all_equal`] compares
/// the value's 32-bit words, so no subgroup op sees the wide or narrow type.
pub(crate) fn needs_wide_all_equal(inst: &Instruction, missing: &[Missing]) -> bool {
    inst.class.opcode == Op::GroupNonUniformAllEqual
        && !missing.is_empty()
        && missing
            .iter()
            .all(|m| matches!(m, Missing::ExtendedTypes { .. }))
}

/// Emits `OpGroupNonUniformAllEqual` of any type from All, Any and BroadcastFirst.
pub(crate) fn lower_core_all_equal(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let value = id_operand(inst, 1, "Value")?;
    let Some(ty) = code.em.ty_of_value(value) else {
        return Err(invalid(
            inst,
            "the AllEqual value must be a scalar or vector",
        ));
    };
    let t = code.em.target;
    if !(t.ops.vote && t.ops.ballot && t.spirv_version >= (1, 3)) {
        return Err(code.missing(
            "core vote and ballot operations (GroupNonUniformVote, GroupNonUniformBallot)",
        ));
    }
    code.em.need(Capability::GroupNonUniformVote);
    let scope = code.em.subgroup_scope();
    if ty.scalar == Scalar::Bool {
        // Any(c) != Any(!c) per component, and all components must agree.
        let mut result = None;
        for c in 0..ty.n {
            let comp = if ty.n == 1 {
                value
            } else {
                code.extract(Ty::BOOL, value, u32::from(c))
            };
            let any = code.op(Op::GroupNonUniformAny, Ty::BOOL, &[scope, comp]);
            let not = code.not(comp);
            let any_not = code.op(Op::GroupNonUniformAny, Ty::BOOL, &[scope, not]);
            let eq = code.op(Op::LogicalNotEqual, Ty::BOOL, &[any, any_not]);
            result = Some(match result {
                None => eq,
                Some(r) => code.and(r, eq),
            });
        }
        return result.ok_or_else(|| invalid(inst, "an empty vector"));
    }
    code.em.need(Capability::GroupNonUniformBallot);
    let words = code.to_words(ty, value);
    let mut firsts = Vec::with_capacity(words.len());
    for &w in &words {
        firsts.push(code.op(Op::GroupNonUniformBroadcastFirst, Ty::U32, &[scope, w]));
    }
    let same = if let Scalar::Float { .. } = ty.scalar {
        let first = code.from_words(ty, &firsts);
        let eq = code.op(Op::FOrdEqual, Ty::BOOL.with_n(ty.n), &[value, first]);
        if ty.n == 1 {
            eq
        } else {
            code.op(Op::All, Ty::BOOL, &[eq])
        }
    } else {
        let mut same = None;
        for (&w, &f) in words.iter().zip(&firsts) {
            let eq = code.op(Op::IEqual, Ty::BOOL, &[w, f]);
            same = Some(match same {
                None => eq,
                Some(r) => code.and(r, eq),
            });
        }
        same.ok_or_else(|| invalid(inst, "an empty value"))?
    };
    Ok(code.op(Op::GroupNonUniformAll, Ty::BOOL, &[scope, same]))
}
