//! Helpers shared by several rule families: opcode, capability, scope and group-operation names,
//! and type predicates. Every rule file takes what it shares from here; no rule file imports from
//! another rule file (issue 9, item 6).

use spirv::Op;

use crate::module::{Cx, Scalar};

/// UMin and UMax: "Result Type must be a scalar or vector of integer type, whose Signedness
/// operand is 0" (SPIR-V 3.56.24), under every group operation, partitioned ones included.
pub(crate) fn needs_unsigned(op: Op) -> bool {
    matches!(op, Op::GroupNonUniformUMin | Op::GroupNonUniformUMax)
}

/// Whether `t` is a scalar or vector of unsigned integers.
pub(crate) fn is_unsigned(cx: &Cx<'_>, t: u32) -> bool {
    matches!(
        cx.m.scalar_or_vector(t),
        Some((Scalar::Int { signed: false, .. }, _))
    )
}

/// The grammar name of an opcode (without `Op`).
pub(crate) fn opname(opcode: u32) -> &'static str {
    crate::rules::wellformed::opname(opcode)
}
