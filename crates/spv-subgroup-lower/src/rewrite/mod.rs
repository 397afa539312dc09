//! The rewrite table: which instructions the target needs rewritten, and the function for each.
//! (Scaffolding by the lead; the LOWER helper owns and completes it.)

use rspirv::dr::Instruction;

use crate::emit::{Code, Id};
use crate::{LowerError, Target};

mod partitioned_arith;

/// Whether `inst` uses something `target` lacks that this pass rewrites.
pub(crate) fn needs_rewrite(_inst: &Instruction, _target: &Target) -> bool {
    false
}

/// Emits the replacement of `inst` into `code`; returns the id holding its result.
pub(crate) fn lower_inst(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    partitioned_arith::lower(code, inst)
}

/// The report's name for the kind of rewrite `inst` gets.
pub(crate) fn kind_name(inst: &Instruction) -> String {
    format!("Op{:?}", inst.class.opcode)
}
