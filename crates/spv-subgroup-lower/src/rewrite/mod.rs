//! The rewrite table: which instructions the target needs rewritten, and the function for each.
//!
//! | instruction | rewritten when the target lacks | by |
//! |---|---|---|
//! | `OpSubgroupAllKHR`/`AnyKHR`/`AllEqualKHR` (4428-4430) | `SubgroupVoteKHR` | [`vote`] |
//! | `OpGroupNonUniformPartitionNV/EXT` (5296) | partitioned ops | [`partition`] |
//! | any op with group operation `Partitioned*` (6/7/8) | partitioned ops | `partitioned_arith` |
//! | ballot bit ops, `InverseBallot`, `Elect` | them (naga) | `ballot_bits` |
//! | `OpGroupNonUniformAllEqual` | it (naga) | [`vote`] |
//! | inclusive/exclusive scans other than Add/Mul | them (naga) | `scan` |
//! | shuffles and broadcasts of bools | them (naga) | `bool_move` |
//! | loads of the mask built-ins | them (naga) | `masks` |
//! | `OpSubgroupBallotKHR`/`FirstInvocationKHR`/`ReadInvocationKHR` | `SPV_KHR_shader_ballot` | `khr_ballot` |
//!
//! Core instructions are never rewritten: a module using a core op the target lacks, or a
//! rewrite whose sequence needs one, fails with [`LowerError::Unsupported`] naming what is missing.

use rspirv::dr::{Instruction, Operand};
use spirv::{GroupOperation, Op};

use rspirv::dr::Module;

use crate::emit::{Code, Emitter, Id};
use crate::{LowerError, Target};

mod ballot_bits;
mod bool_move;
mod khr_ballot;
mod masks;
mod partition;
mod partitioned_arith;
mod scan;
mod vote;

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

/// Module-level preparation before any rewrite: reads of mask built-ins through access chains
/// become whole loads (see `masks`).
pub(crate) fn prepare(module: &mut Module, target: &Target) {
    masks::normalize(module, target);
}

/// Whether the module has a declaration (not an instruction) the target lacks and the pass
/// removes: a mask built-in variable, or the `SubgroupBallotKHR` capability.
pub(crate) fn has_removable_globals(module: &Module, target: &Target) -> bool {
    masks::declared(module, target) || khr_ballot::declared(module, target)
}

/// Module-level clean-up after every function is rewritten: mask built-in variables nothing
/// reads any more go, and `SubgroupBallotKHR` where the target lacks it and nothing needs it.
/// Returns whether anything was removed.
pub(crate) fn finish(module: &mut Module, target: &Target) -> bool {
    let masks = masks::remove_unused(module, target);
    khr_ballot::finish(module, target) || masks
}

/// Whether `inst` uses something the target of `em` lacks that this pass rewrites.
pub(crate) fn needs_rewrite(inst: &Instruction, em: &Emitter) -> bool {
    let target = em.target;
    if masks::needs(inst, em) {
        return true;
    }
    if bool_move::is_move(inst.class.opcode) {
        let result = inst.result_type.and_then(|t| em.ty_of_id(t));
        return bool_move::needs(inst, result, target);
    }
    if is_khr_vote(inst.class.opcode) {
        return !target.ops.khr_vote;
    }
    if khr_ballot::needs(inst, target) {
        return true;
    }
    if ballot_bits::needs(inst, target)
        || vote::needs_core_all_equal(inst, target)
        || scan::needs(inst, target)
    {
        return true;
    }
    !target.ops.partitioned && is_partitioned(inst)
}

/// Emits the replacement of `inst` into `code`; returns the id holding its result.
pub(crate) fn lower_inst(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    match inst.class.opcode {
        op if is_khr_vote(op) => vote::lower(code, inst),
        _ if masks::needs(inst, code.em) => masks::lower(code, inst),
        op if khr_ballot::is_khr_ballot(op) => khr_ballot::lower(code, inst),
        op if bool_move::is_move(op) => bool_move::lower(code, inst),
        _ if ballot_bits::needs(inst, code.em.target) => ballot_bits::lower(code, inst),
        _ if vote::needs_core_all_equal(inst, code.em.target) => {
            vote::lower_core_all_equal(code, inst)
        }
        _ if scan::needs(inst, code.em.target) => scan::lower(code, inst),
        Op::GroupNonUniformPartitionEXT => partition::lower(code, inst),
        _ if partitioned_arith::is_partitioned_arith(inst) => partitioned_arith::lower(code, inst),
        op => Err(invalid(
            inst,
            format!("Op{op:?} has a partitioned group operation but is not one of the 16 arithmetic ops that take one"),
        )),
    }
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
