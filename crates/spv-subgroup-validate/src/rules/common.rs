//! Helpers shared by several rule families: opcode, capability, scope and group-operation names,
//! and type predicates. Every rule file takes what it shares from here; no rule file imports from
//! another rule file (issue 9, item 6).

use spirv::{Capability, Op};

use crate::binary::op_table;
use crate::module::{Cx, Scalar, Ty};
use crate::rules::Rule;
use crate::sink::Sink;

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
    match opcode {
        5296 => "GroupNonUniformPartitionNV",
        _ => op_table()
            .get(opcode as usize)
            .and_then(|o| o.grammar)
            .map_or("?", |g| g.opname),
    }
}

/// A short spirv-dis-like type description: `bool`, `uint`, `v4uint`, `float16`, `struct`...
pub(crate) fn describe(cx: &Cx<'_>, t: u32) -> String {
    let m = &cx.m;
    match m.ty(t) {
        Ty::Bool => "`bool`".into(),
        Ty::Int { width, signed } => {
            format!("`{}{}`", if signed { "int" } else { "uint" }, suffix(width))
        }
        Ty::Float { width } => format!("`float{}`", suffix(width)),
        // Components are described one level deep only: a malformed module may make a vector
        // its own component.
        Ty::Vector { comp, n } => match m.ty(comp) {
            Ty::Bool | Ty::Int { .. } | Ty::Float { .. } => {
                let c = describe(cx, comp);
                format!("`v{n}{}`", c.trim_matches('`'))
            }
            _ => format!("a vector of {n} %{comp}"),
        },
        Ty::Pointer { .. } => format!("a pointer (%{t})"),
        Ty::Other => format!("`Op{}` %{t}", m.def_op(t).map_or("?", opname)),
        Ty::Missing => format!("%{t} (not a type)"),
    }
}

/// The capability, as the module spells its extension.
pub(crate) fn cap_name(cx: &Cx<'_>) -> &'static str {
    if !cx.m.has_ext("SPV_NV_shader_subgroup_partitioned")
        && cx.m.has_ext("SPV_EXT_shader_subgroup_partitioned")
    {
        "GroupNonUniformPartitionedEXT"
    } else {
        "GroupNonUniformPartitionedNV"
    }
}

/// A capability's name as the module spells it: the partitioned one in the spelling of the
/// extension the module declares ([`cap_name`]), every other by its grammar name.
pub(crate) fn cap_text(cx: &Cx<'_>, c: Capability) -> String {
    match c {
        Capability::GroupNonUniformPartitionedEXT => cap_name(cx).to_owned(),
        c => format!("{c:?}"),
    }
}

/// Whether `id` is defined by a constant instruction (OpConstant*, OpSpecConstant*).
pub(crate) fn is_constant(cx: &Cx<'_>, id: u32) -> bool {
    cx.m.def_op(id)
        .is_some_and(|o| (Op::ConstantTrue as u32..=Op::SpecConstantOp as u32).contains(&o))
}

/// SG0201 for instruction `i`, which needs the partitioned capability.
pub(crate) fn require_capability(cx: &Cx<'_>, i: usize, what: &str, out: &mut Sink) {
    if !cx.m.has_cap(Capability::GroupNonUniformPartitionedEXT) {
        out.emit(
            cx,
            Rule::PartitionMissingCapability,
            i,
            format!("{what} needs `OpCapability {}`, which the module does not declare", cap_name(cx)),
            vec![
                "declare the capability with `OpExtension \"SPV_NV_shader_subgroup_partitioned\"` (or the EXT spelling), or run `spv-subgroup lower` to rewrite it for a target without partitioned ops".into(),
            ],
        );
    }
}

/// The partitioned group operations.
pub(crate) const PARTITIONED_OPS: [u32; 3] = [6, 7, 8];

/// Whether instruction `i` (a group instruction with a group operation in word 4) is partitioned.
pub(crate) fn is_partitioned(cx: &Cx<'_>, i: usize) -> bool {
    cx.m.word(i, 4)
        .is_some_and(|g| PARTITIONED_OPS.contains(&g))
}

/// The name of a group operation.
pub(crate) fn group_op_name(g: u32) -> &'static str {
    match g {
        0 => "Reduce",
        1 => "InclusiveScan",
        2 => "ExclusiveScan",
        3 => "ClusteredReduce",
        6 => "PartitionedReduceNV",
        7 => "PartitionedInclusiveScanNV",
        8 => "PartitionedExclusiveScanNV",
        _ => "an unknown group operation",
    }
}

/// [`group_op_name`] in the spelling of the partitioned extension the module declares.
pub(crate) fn group_op_text(cx: &Cx<'_>, g: u32) -> String {
    let name = group_op_name(g);
    match name.strip_suffix("NV") {
        Some(base) if cap_name(cx).ends_with("EXT") => {
            format!("{base}EXT")
        }
        _ => name.to_owned(),
    }
}

/// What component type an arithmetic opcode works on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Family {
    Int,
    Float,
    Bool,
}

pub(crate) fn family(op: u32) -> Option<Family> {
    use Op as O;
    let op = crate::binary::op_of(op)?;
    Some(match op {
        O::GroupNonUniformIAdd
        | O::GroupNonUniformIMul
        | O::GroupNonUniformSMin
        | O::GroupNonUniformUMin
        | O::GroupNonUniformSMax
        | O::GroupNonUniformUMax
        | O::GroupNonUniformBitwiseAnd
        | O::GroupNonUniformBitwiseOr
        | O::GroupNonUniformBitwiseXor => Family::Int,
        O::GroupNonUniformFAdd
        | O::GroupNonUniformFMul
        | O::GroupNonUniformFMin
        | O::GroupNonUniformFMax => Family::Float,
        O::GroupNonUniformLogicalAnd
        | O::GroupNonUniformLogicalOr
        | O::GroupNonUniformLogicalXor => Family::Bool,
        _ => return None,
    })
}

/// Whether a scalar/vector type's component kind fits the family.
pub(crate) fn fits(cx: &Cx<'_>, fam: Family, t: u32) -> bool {
    matches!(
        (fam, cx.m.scalar_or_vector(t)),
        (Family::Int, Some((Scalar::Int { .. }, _)))
            | (Family::Float, Some((Scalar::Float { .. }, _)))
            | (Family::Bool, Some((Scalar::Bool, _)))
    )
}

pub(crate) fn family_text(f: Family) -> &'static str {
    match f {
        Family::Int => "a scalar or vector of integer type",
        Family::Float => "a scalar or vector of floating-point type",
        Family::Bool => "a scalar or vector of Boolean type",
    }
}

/// A scope value's name.
pub(crate) fn scope_name(v: u32) -> String {
    match v {
        0 => "CrossDevice (0)".into(),
        1 => "Device (1)".into(),
        2 => "Workgroup (2)".into(),
        3 => "Subgroup (3)".into(),
        4 => "Invocation (4)".into(),
        5 => "QueueFamily (5)".into(),
        6 => "ShaderCallKHR (6)".into(),
        v => format!("{v}"),
    }
}

/// The core non-uniform instructions other than the arithmetic ones and `BallotBitCount`:
/// `Elect`, the votes, broadcasts, ballots and their bit queries, shuffles and quad moves
/// (the `core` family checks them; their operands after the scope are values).
pub(crate) fn is_core_lane_op(op: Op) -> bool {
    matches!(
        op,
        Op::GroupNonUniformElect
            | Op::GroupNonUniformAll
            | Op::GroupNonUniformAny
            | Op::GroupNonUniformAllEqual
            | Op::GroupNonUniformBroadcast
            | Op::GroupNonUniformBroadcastFirst
            | Op::GroupNonUniformBallot
            | Op::GroupNonUniformInverseBallot
            | Op::GroupNonUniformBallotBitExtract
            | Op::GroupNonUniformBallotFindLSB
            | Op::GroupNonUniformBallotFindMSB
            | Op::GroupNonUniformShuffle
            | Op::GroupNonUniformShuffleXor
            | Op::GroupNonUniformShuffleUp
            | Op::GroupNonUniformShuffleDown
            | Op::GroupNonUniformQuadBroadcast
            | Op::GroupNonUniformQuadSwap
    )
}

/// The bit width as a type-name suffix (`int16`), empty for 32 bits.
fn suffix(width: u32) -> String {
    if width == 32 {
        String::new()
    } else {
        width.to_string()
    }
}

/// The value of a Scope <id> operand when it is an `OpConstant` of 32-bit integer type, as
/// scopes must be (spirv-val: "expected scope to be a 32-bit int"; "Scope ids must be OpConstant
/// when Shader capability is present"); `None` otherwise.
pub(crate) fn scope_value(cx: &Cx<'_>, id: u32) -> Option<u32> {
    let t = cx.m.type_of(id)?;
    match cx.m.scalar(t)? {
        Scalar::Int { width: 32, .. } => cx.m.const_u32(id),
        _ => None,
    }
}

pub(crate) use crate::fit::{is_arithmetic, memory_scope_word};
