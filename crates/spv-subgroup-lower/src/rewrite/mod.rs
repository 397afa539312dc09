//! The rewrite table: which instructions the target needs rewritten, and the function for each.
//!
//! | instruction | rewritten when the target lacks | by |
//! |---|---|---|
//! | `OpSubgroupAllKHR`/`AnyKHR`/`AllEqualKHR` (4428-4430) | `SubgroupVoteKHR` | [`vote`] |
//! | `OpGroupNonUniformPartitionNV/EXT` (5296) | partitioned ops | [`partition`] |
//! | any op with group operation `Partitioned*` (6/7/8) | partitioned ops | `partitioned_arith` |
//! | ballot bit ops, `InverseBallot`, `Elect` | them (naga) | `ballot_bits` |
//! | `OpGroupNonUniformAllEqual` | it (naga), or extended types for an 8/16/64-bit value | [`vote`] |
//! | `OpGroupNonUniformQuadAllKHR`/`QuadAnyKHR` | `QuadControlKHR` | `quad_vote` |
//! | `Groups` and uniform-group instructions at Subgroup scope | `Groups`, `GroupUniformArithmeticKHR` | `groups` (then the core op's family) |
//! | inclusive/exclusive scans other than Add/Mul | them (naga) | `scan` |
//! | shuffles and broadcasts of bools | them (naga) | `bool_move` |
//! | loads of the mask built-ins | them (naga) | `masks` |
//! | `SPV_AMD_shader_ballot`'s `MbcntAMD`, `WriteInvocationAMD`, `SwizzleInvocations(Masked)AMD` | `VK_AMD_shader_ballot` (`ops.groups`) | `amd_ballot` |
//! | `OpSubgroupBallotKHR`/`FirstInvocationKHR`/`ReadInvocationKHR` | `SPV_KHR_shader_ballot` | `khr_ballot` |
//! | quad ops, `ShuffleUp/Down`, `Shuffle/Xor`, `Broadcast`, `RotateKHR` (any type) | their own capability (clustered rotates too) | `lane_read` |
//! | broadcasts, shuffles, quad ops, rotates, KHR reads of 8/16/64-bit values | extended types | `wide_move` |
//! | reduce/scans of 8/16/64-bit values, clustered reduce | extended types, `clustered` | `wide_arith` |
//! | `LogicalAnd/Or/Xor` reduce and clustered reduce | logical ops (naga) | `wide_arith` (scans: `scan`) |
//! | `OpIsNan`, `OpIsInf` (not subgroup ops) | naga's WGSL writer (`naga_module`) | `float_class` |
//!
//! What the target lacks for an instruction comes from one table, [`fit::missing`], which the
//! validator's target-fit rules read too: an instruction needs a rewrite exactly when the
//! validator would report it on the target. Every such instruction goes to [`lower_inst`];
//! one no family rewrites fails with [`LowerError::Unsupported`] naming the missing feature and a
//! preset that would take it as it is.

use std::collections::BTreeSet;

use rspirv::dr::{Instruction, Operand};
use spirv::{GroupOperation, Op};

use rspirv::dr::Module;
use spv_subgroup_validate::fit::{self, InstFit, Kind, Missing, ValueType};

use crate::emit::{Code, Emitter, Id, Scalar, Ty};
use crate::{LowerError, Target};

mod amd_ballot;
mod ballot_bits;
mod bool_move;
mod float_class;
mod groups;
mod khr_ballot;
mod lane_read;
pub(crate) mod masks;
mod partition;
mod partitioned_arith;
mod quad_vote;
mod scan;
mod vote;
mod wide_arith;
mod wide_move;

/// The partitioned group operation of `inst`, if it has one.
pub(crate) fn partitioned_group_op(inst: &Instruction) -> Option<GroupOperation> {
    inst.operands.iter().find_map(|o| match o {
        Operand::GroupOperation(
            g @ (GroupOperation::PartitionedReduceEXT
            | GroupOperation::PartitionedInclusiveScanEXT
            | GroupOperation::PartitionedExclusiveScanEXT),
        ) => Some(*g),
        _ => None,
    })
}

/// Whether `inst` is one of the KHR vote instructions.
pub(crate) fn is_khr_vote(op: Op) -> bool {
    matches!(
        op,
        Op::SubgroupAllKHR | Op::SubgroupAnyKHR | Op::SubgroupAllEqualKHR
    )
}

/// Whether `inst` uses the partitioned extension (the partition op or a partitioned group op).
pub(crate) fn is_partitioned(inst: &Instruction) -> bool {
    inst.class.opcode == Op::GroupNonUniformPartitionEXT || partitioned_group_op(inst).is_some()
}

/// Whether the module has a declaration (not an instruction) the target lacks and the pass
/// removes: a mask built-in variable, or the `SubgroupBallotKHR` capability.
pub(crate) fn has_removable_globals(module: &Module, target: &Target) -> bool {
    masks::declared(module, target)
        || khr_ballot::declared(module, target)
        || amd_ballot::declared(module, target)
}

/// Module-level clean-up after every function is rewritten: mask built-in variables nothing
/// reads any more go, and `SubgroupBallotKHR` where the target lacks it and nothing needs it.
/// The functions' instructions are read through what the pass recorded of them:
/// `khr_ballot_left` says whether one of them is an instruction [`leaves_khr_ballot`], and
/// `masks` are the mask variables step 3 of `masks` may remove with those the functions use.
/// Returns whether anything was removed.
pub(crate) fn finish(
    module: &mut Module,
    target: &Target,
    khr_ballot_left: bool,
    masks: Option<(&BTreeSet<Id>, &BTreeSet<Id>)>,
) -> bool {
    let masks = masks.is_some_and(|(vars, used)| masks::remove_unused(module, vars, used));
    let amd = amd_ballot::finish(module, target);
    khr_ballot::finish(module, target, khr_ballot_left) || masks || amd
}

/// Whether `inst` is a KHR ballot instruction (it keeps `SubgroupBallotKHR` declared).
pub(crate) fn leaves_khr_ballot(inst: &Instruction) -> bool {
    khr_ballot::is_khr_ballot(inst.class.opcode)
}

/// A scalar or vector type as the fit table sees it.
fn value_type(ty: Ty) -> ValueType {
    let (kind, width) = match ty.scalar {
        Scalar::Bool => (Kind::Bool, 32),
        Scalar::Int { width, signed } => (Kind::Int { signed }, u32::from(width)),
        Scalar::Float { width } => (Kind::Float, u32::from(width)),
    };
    ValueType {
        kind,
        width,
        components: u32::from(ty.n),
    }
}

/// `inst` described for the fit table, with the emitter's types; `None` for an instruction
/// that is no subgroup op (the common case, answered from the opcode alone).
pub(crate) fn describe(inst: &Instruction, em: &Emitter) -> Option<InstFit> {
    let opcode = inst.class.opcode;
    if !fit::is_subgroup_op(opcode) {
        return None;
    }
    let group_op = inst.operands.iter().find_map(|o| match o {
        Operand::GroupOperation(g) => Some(*g as u32),
        _ => None,
    });
    // A rotate with a `ClusterSize` (its fourth operand) is clustered, as `InstFit` spells it.
    let group_op = match opcode {
        Op::GroupNonUniformRotateKHR => {
            (inst.operands.len() > 3).then_some(GroupOperation::ClusteredReduce as u32)
        }
        _ => group_op,
    };
    // The value crossing lanes, as the validator's target fit reads it.
    let value_at = fit::value_operand(opcode);
    let value = value_at.and_then(|k| match inst.operands.get(k) {
        Some(Operand::IdRef(v)) => em.ty_of_value(*v).map(value_type),
        _ => None,
    });
    Some(InstFit {
        opcode,
        group_op,
        value,
        result: inst
            .result_type
            .and_then(|t| em.ty_of_id(t))
            .map(value_type),
    })
}

/// What the target lacks for `inst` (empty for every instruction that fits or is no subgroup op).
pub(crate) fn missing(inst: &Instruction, em: &Emitter) -> Vec<Missing> {
    describe(inst, em).map_or_else(Vec::new, |d| fit::missing(em.target, &d))
}

/// Whether `inst` uses something the target of `em` lacks (then [`lower_inst`] rewrites or
/// refuses it): a subgroup op with an entry in the fit table, a load of a mask built-in, or an
/// `OpIsNan`/`OpIsInf` naga cannot write out.
pub(crate) fn needs_rewrite(inst: &Instruction, em: &Emitter) -> bool {
    masks::needs(inst, em)
        || float_class::needs(inst, em.target)
        || (fit::is_subgroup_op(inst.class.opcode) && !missing(inst, em).is_empty())
        || amd_ballot::needs(inst, em)
}

/// Emits the replacement of `inst` into `code`; returns the id holding its result.
///
/// New rewrite families go here, one file per family under `rewrite/`, each with a `needs`
/// and a `lower`: the first arm whose family takes the instruction wins, so a family must take
/// every feature the instruction lacks. An instruction no arm takes is refused.
pub(crate) fn lower_inst(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let target = code.em.target;
    let result = inst.result_type.and_then(|t| code.em.ty_of_id(t));
    let lacks = missing(inst, code.em);
    match inst.class.opcode {
        _ if float_class::needs(inst, target) => float_class::lower(code, inst),
        op if is_khr_vote(op) => vote::lower(code, inst),
        _ if amd_ballot::needs(inst, code.em) => amd_ballot::lower(code, inst),
        op if quad_vote::is_quad_vote(op) => quad_vote::lower(code, inst),
        _ if groups::needs(inst, &lacks) => groups::lower(code, inst),
        _ if masks::needs(inst, code.em) => masks::lower(code, inst),
        _ if khr_ballot::needs(inst, target) => khr_ballot::lower(code, inst),
        _ if lane_read::needs(inst, &lacks, code.em) => lane_read::lower(code, inst),
        _ if bool_move::needs(inst, result, target) => bool_move::lower(code, inst),
        _ if ballot_bits::needs(inst, target) => ballot_bits::lower(code, inst),
        _ if vote::needs_core_all_equal(inst, target) || vote::needs_wide_all_equal(inst, &lacks) => {
            vote::lower_core_all_equal(code, inst)
        }
        _ if scan::needs(inst, target) => scan::lower(code, inst),
        _ if wide_move::needs(inst, &lacks) => wide_move::lower(code, inst),
        _ if wide_arith::needs(inst, &lacks) => wide_arith::lower(code, inst),
        Op::GroupNonUniformPartitionEXT => partition::lower(code, inst),
        _ if partitioned_arith::is_partitioned_arith(inst) => partitioned_arith::lower(code, inst),
        op if is_partitioned(inst) => Err(invalid(
            inst,
            format!("Op{op:?} has a partitioned group operation but is not one of the 16 arithmetic ops that take one"),
        )),
        _ => Err(unsupported(code, inst)),
    }
}

/// The refusal for an instruction no family rewrites: what the target lacks and a preset that
/// would take the instruction as it is.
fn unsupported(code: &Code, inst: &Instruction) -> LowerError {
    let described = describe(inst, code.em);
    let lacks: Vec<String> = described
        .map(|d| fit::missing(code.em.target, &d))
        .unwrap_or_default()
        .iter()
        .map(Missing::to_string)
        .collect();
    let mut what = if lacks.is_empty() {
        "a feature the target lacks".to_owned()
    } else {
        lacks.join(" and ")
    };
    what.push_str(", and no rewrite provides it");
    match described.and_then(|d| fit::preset_taking(&d)) {
        Some(p) => what.push_str(&format!(" (target `{p}` takes it as it is)")),
        None => what.push_str(" (no preset takes it as it is)"),
    }
    code.missing(&what)
}

/// The report's name for the kind of rewrite `inst` gets, e.g. `OpSubgroupAllKHR`,
/// `OpGroupNonUniformPartitionNV` or `OpGroupNonUniformIAdd PartitionedInclusiveScan`.
pub(crate) fn kind_name(inst: &Instruction) -> String {
    match (inst.class.opcode, partitioned_group_op(inst)) {
        (Op::GroupNonUniformPartitionEXT, _) => "OpGroupNonUniformPartitionNV".to_owned(),
        (op, Some(g)) => {
            let g = match g {
                GroupOperation::PartitionedReduceEXT => "PartitionedReduce",
                GroupOperation::PartitionedInclusiveScanEXT => "PartitionedInclusiveScan",
                _ => "PartitionedExclusiveScan",
            };
            format!("Op{op:?} {g}")
        }
        // The only ext-insts the pass rewrites are AMD's ballot ones.
        (Op::ExtInst, None) => match inst.operands.get(1) {
            Some(Operand::LiteralExtInstInteger(n)) => fit::amd_ballot_instruction(*n)
                .unwrap_or("OpExtInst")
                .to_owned(),
            _ => "OpExtInst".to_owned(),
        },
        (op, None) => format!("Op{op:?}"),
    }
}

/// The id operand at `index`, or an [`LowerError::Invalid`] naming the instruction.
pub(crate) fn id_operand(inst: &Instruction, index: usize, what: &str) -> Result<Id, LowerError> {
    match inst.operands.get(index) {
        Some(Operand::IdRef(id)) => Ok(*id),
        _ => Err(LowerError::Invalid {
            result_id: inst.result_id.unwrap_or(0),
            message: format!("Op{:?} has no {what} operand", inst.class.opcode),
        }),
    }
}

/// An [`LowerError::Invalid`] for `inst`.
pub(crate) fn invalid(inst: &Instruction, message: impl Into<String>) -> LowerError {
    LowerError::Invalid {
        result_id: inst.result_id.unwrap_or(0),
        message: message.into(),
    }
}
