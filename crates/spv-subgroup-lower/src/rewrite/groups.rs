//! The `Groups` instructions (`OpGroupAll`, `OpGroupIAdd`, ..., AMD's `Op*NonUniformAMD` of
//! `SPV_AMD_shader_ballot`) and those of `SPV_KHR_uniform_group_instructions` (`OpGroupIMulKHR`,
//! ...) at Subgroup scope, where the target lacks their capability: each is its core non-uniform
//! counterpart with the same operands, which the dispatch rewrites in turn when the target lacks
//! that too (a scan naga lacks, a 64-bit value without extended types, ...).
//!
//! | instruction | core counterpart |
//! |---|---|
//! | `GroupAll`, `GroupAny` | `GroupNonUniformAll`, `GroupNonUniformAny` |
//! | `GroupBroadcast(x, id)` | `GroupNonUniformShuffle(x, id)` (the id need not be a constant) |
//! | `GroupIAdd`, `FAdd`, `S/U/FMin`, `S/U/FMax` and their `NonUniformAMD` forms | `GroupNonUniformIAdd`, ... with the same group operation |
//! | `GroupIMulKHR`, `FMulKHR`, `Bitwise*KHR`, `Logical*KHR` | `GroupNonUniformIMul`, ... |
//!
//! The uniform forms need every invocation of the subgroup to execute them, so the core op over
//! the active invocations gives their result; AMD's non-uniform forms are defined over the active
//! invocations, as the core ops are. At Workgroup scope no subgroup op can stand in (it would
//! take shared memory and barriers): the instruction is refused, named.

use rspirv::dr::{Instruction, Operand};
use spirv::{Op, Scope};
use spv_subgroup_validate::fit::Missing;

use super::invalid;
use crate::emit::{Code, Id};
use crate::LowerError;

/// The core non-uniform counterpart of a `Groups` or uniform-group instruction.
fn counterpart(op: Op) -> Option<Op> {
    Some(match op {
        Op::GroupAll => Op::GroupNonUniformAll,
        Op::GroupAny => Op::GroupNonUniformAny,
        Op::GroupBroadcast => Op::GroupNonUniformShuffle,
        Op::GroupIAdd | Op::GroupIAddNonUniformAMD => Op::GroupNonUniformIAdd,
        Op::GroupFAdd | Op::GroupFAddNonUniformAMD => Op::GroupNonUniformFAdd,
        Op::GroupSMin | Op::GroupSMinNonUniformAMD => Op::GroupNonUniformSMin,
        Op::GroupUMin | Op::GroupUMinNonUniformAMD => Op::GroupNonUniformUMin,
        Op::GroupFMin | Op::GroupFMinNonUniformAMD => Op::GroupNonUniformFMin,
        Op::GroupSMax | Op::GroupSMaxNonUniformAMD => Op::GroupNonUniformSMax,
        Op::GroupUMax | Op::GroupUMaxNonUniformAMD => Op::GroupNonUniformUMax,
        Op::GroupFMax | Op::GroupFMaxNonUniformAMD => Op::GroupNonUniformFMax,
        Op::GroupIMulKHR => Op::GroupNonUniformIMul,
        Op::GroupFMulKHR => Op::GroupNonUniformFMul,
        Op::GroupBitwiseAndKHR => Op::GroupNonUniformBitwiseAnd,
        Op::GroupBitwiseOrKHR => Op::GroupNonUniformBitwiseOr,
        Op::GroupBitwiseXorKHR => Op::GroupNonUniformBitwiseXor,
        Op::GroupLogicalAndKHR => Op::GroupNonUniformLogicalAnd,
        Op::GroupLogicalOrKHR => Op::GroupNonUniformLogicalOr,
        Op::GroupLogicalXorKHR => Op::GroupNonUniformLogicalXor,
        _ => return None,
    })
}

/// Whether `inst` is a `Groups` or uniform-group instruction whose capability the target lacks.
pub(crate) fn needs(inst: &Instruction, missing: &[Missing]) -> bool {
    counterpart(inst.class.opcode).is_some()
        && missing.iter().any(|m| {
            matches!(
                m,
                Missing::Capability(
                    spirv::Capability::Groups | spirv::Capability::GroupUniformArithmeticKHR
                )
            )
        })
}

/// Emits the core counterpart of `inst` (rewritten again where the target lacks it); returns the
/// id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let op = inst.class.opcode;
    let core = counterpart(op).ok_or_else(|| invalid(inst, "not a Groups instruction"))?;
    let scope = match inst.operands.first() {
        Some(Operand::IdScope(id) | Operand::IdRef(id)) => *id,
        _ => return Err(invalid(inst, "no Execution scope operand")),
    };
    if code.em.scope_value(scope) != Some(Scope::Subgroup as u32) {
        return Err(code.missing(&format!(
            "a Workgroup-scope Op{op:?}: only a Subgroup-scope one has a subgroup op to stand in \
             (a workgroup needs shared memory and barriers)"
        )));
    }
    if op == Op::GroupBroadcast {
        // For a subgroup the local id is one integer; a 2- or 3-vector names a workgroup's.
        let id = super::id_operand(inst, 2, "LocalId")?;
        if code.em.ty_of_value(id).is_none_or(|t| t.n != 1) {
            return Err(invalid(
                inst,
                "a Subgroup-scope OpGroupBroadcast takes a scalar LocalId",
            ));
        }
    }
    let type_id = inst
        .result_type
        .ok_or_else(|| invalid(inst, "no result type"))?;
    let operands: Vec<Operand> = inst.operands.clone();
    let counterpart = Instruction::new(core, Some(type_id), inst.result_id, operands);
    if super::missing(&counterpart, code.em).is_empty() {
        code.em.need(required(core));
        return Ok(code.emit(core, type_id, counterpart.operands));
    }
    super::lower_inst(code, &counterpart).map_err(|mut e| {
        if let LowerError::Unsupported { missing, .. } = &mut e {
            *missing = format!("its core counterpart Op{core:?} needs {missing}");
        }
        e
    })
}

/// The capability a core counterpart needs.
fn required(core: Op) -> spirv::Capability {
    use spirv::Capability as C;
    match core {
        Op::GroupNonUniformAll | Op::GroupNonUniformAny => C::GroupNonUniformVote,
        Op::GroupNonUniformShuffle => C::GroupNonUniformShuffle,
        _ => C::GroupNonUniformArithmetic,
    }
}
