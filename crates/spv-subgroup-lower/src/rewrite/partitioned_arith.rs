//! Partitioned reduce and scans (scaffolding; the ARITH helper owns and completes it).

use rspirv::dr::Instruction;

use crate::emit::{Code, Id};
use crate::LowerError;

/// Emits the pointer-jumping sequence for a partitioned arithmetic instruction.
pub(crate) fn lower(_code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    Err(LowerError::Invalid { result_id: inst.result_id.unwrap_or(0), message: "not lowered yet".into() })
}
