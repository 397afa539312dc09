//! Inclusive and exclusive scans a target's consumer lacks (naga's front end: scans of
//! `IAdd`/`FAdd`/`IMul`/`FMul` only, `scans_add_mul_only`).
//!
//! A scan over the active lanes is the partitioned scan whose one subset is the active set, so
//! the rewrite is the partitioned arithmetic's own sequence ([`super::partitioned_arith`]) with
//! `Ballot(true)` as the partition: pointer jumping for integers and floats (`Min`/`Max` with
//! the core ops' NaN rule, bitwise ops), one ballot per component for the logical ops, bit slices
//! for 8-bit values. The fast path to the core op is never taken for these scans (the target
//! lacks exactly them); reduces stay native.

use rspirv::dr::{Instruction, Operand};
use spirv::{GroupOperation, Op};

use super::partitioned_arith;
use crate::emit::{Code, Id, Ty};
use crate::{LowerError, Target};

/// Whether `inst` is an inclusive or exclusive scan `target` lacks.
pub(crate) fn needs(inst: &Instruction, target: &Target) -> bool {
    use Op as O;
    let scan = matches!(
        inst.operands.get(1),
        Some(Operand::GroupOperation(
            GroupOperation::InclusiveScan | GroupOperation::ExclusiveScan
        ))
    );
    let outside_set = matches!(
        inst.class.opcode,
        O::GroupNonUniformSMin
            | O::GroupNonUniformUMin
            | O::GroupNonUniformFMin
            | O::GroupNonUniformSMax
            | O::GroupNonUniformUMax
            | O::GroupNonUniformFMax
            | O::GroupNonUniformBitwiseAnd
            | O::GroupNonUniformBitwiseOr
            | O::GroupNonUniformBitwiseXor
            | O::GroupNonUniformLogicalAnd
            | O::GroupNonUniformLogicalOr
            | O::GroupNonUniformLogicalXor
    );
    target.restrictions.scans_add_mul_only && scan && outside_set
}

/// Emits the scan as a partitioned scan over the active set; returns its result id.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let group = match inst.operands.get(1) {
        Some(Operand::GroupOperation(GroupOperation::InclusiveScan)) => {
            GroupOperation::PartitionedInclusiveScanNV
        }
        _ => GroupOperation::PartitionedExclusiveScanNV,
    };
    // The active set as a `uvec4` ballot: the partition's one subset.
    let act = code.active()?;
    let ballot = code.widen_mask(act);
    let mut operands = inst.operands.clone();
    operands[1] = Operand::GroupOperation(group);
    operands.truncate(3);
    operands.push(Operand::IdRef(ballot));
    let partitioned = Instruction::new(
        inst.class.opcode,
        inst.result_type,
        inst.result_id,
        operands,
    );
    debug_assert_eq!(code.em.ty_of_value(ballot), Some(Ty::UVEC4));
    partitioned_arith::lower(code, &partitioned)
}
