//! What the module uses needs its capability (SG0504): every 8-, 16- and 64-bit scalar type it
//! declares and computes with, and every subgroup instruction whose capability no other rule
//! checks (the KHR ballot reads, rotate, quad control, `Groups`, uniform group arithmetic).
//!
//! A 8- or 16-bit type declared under a storage capability only (`StorageBuffer16BitAccess`,
//! `StoragePushConstant8`, ...) may be loaded, stored, copied and converted by width, nothing
//! else (SPV_KHR_16bit_storage and SPV_KHR_8bit_storage, "Validation Rules" and the capability
//! texts): any other instruction producing or reading such a value needs `Int8`, `Int16` or
//! `Float16`. The width part runs only when the module declares such a type, so a module of
//! 32-bit types pays one look at its type declarations.

use spirv::{Capability as C, Op};

use crate::binary::{id_operand_words, op_of};
use crate::fit;
use crate::module::{Cx, Ty};
use crate::rules::common::{cap_text, describe, opname};
use crate::rules::Rule;
use crate::sink::Sink;

/// The capabilities of the 8-bit storage extension.
const STORAGE_8: [C; 3] = [
    C::StorageBuffer8BitAccess,
    C::UniformAndStorageBuffer8BitAccess,
    C::StoragePushConstant8,
];

/// The capabilities of the 16-bit storage extension.
const STORAGE_16: [C; 4] = [
    C::StorageBuffer16BitAccess,
    C::UniformAndStorageBuffer16BitAccess,
    C::StoragePushConstant16,
    C::StorageInputOutput16,
];

/// The instructions that may produce a value of a storage-only type: a load, a copy, a
/// width-only conversion (and a constant or undefined value, which spirv-val lets through and
/// whose every use is checked).
fn may_produce(op: Op) -> bool {
    matches!(
        op,
        Op::Load | Op::CopyObject | Op::FConvert | Op::SConvert | Op::UConvert | Op::Undef
    )
}

/// The instructions that may read a value of a storage-only type: a store (as its object), a
/// copy, a width-only conversion.
fn may_read(op: Op) -> bool {
    matches!(
        op,
        Op::Store | Op::CopyObject | Op::FConvert | Op::SConvert | Op::UConvert
    )
}

/// The capability that computing with scalars of this kind and width needs, and whether a
/// storage capability may declare the type without it.
fn width_capability(float: bool, width: u32) -> Option<(C, &'static [C])> {
    Some(match (float, width) {
        (false, 8) => (C::Int8, &STORAGE_8),
        (false, 16) => (C::Int16, &STORAGE_16),
        (false, 64) => (C::Int64, &[]),
        (true, 16) => (C::Float16, &STORAGE_16),
        (true, 64) => (C::Float64, &[]),
        _ => return None,
    })
}

/// Whether the module may compute with scalars of this capability: it declares it, one that
/// implicitly declares it, or an extension that enables the width without one (AMD's int16 and
/// half float extensions, which predate the capabilities in Vulkan).
fn computes_with(cx: &Cx<'_>, cap: C) -> bool {
    let m = &cx.m;
    m.has_cap(cap)
        || match cap {
            C::Int64 => m.has_cap(C::Int64Atomics),
            C::Int16 => m.has_ext("SPV_AMD_gpu_shader_int16"),
            C::Float16 => m.has_ext("SPV_AMD_gpu_shader_half_float"),
            _ => false,
        }
}

/// The storage-only scalar types of the module: (type id, the capability computing needs).
fn storage_only_types(cx: &Cx<'_>, out: &mut Sink) -> Vec<(u32, C)> {
    let m = &cx.m;
    let mut limited = Vec::new();
    for i in 0..m.insts.len() {
        let op = op_of(m.opcode(i));
        let float = match op {
            Some(Op::TypeInt) => false,
            Some(Op::TypeFloat) => true,
            Some(Op::Function) => break,
            _ => continue,
        };
        let (Some(id), Some(width)) = (m.word(i, 1), m.word(i, 2)) else {
            continue;
        };
        // A float with an encoding operand (bfloat16, ...) belongs to another extension.
        if float && m.wc(i) > 3 {
            continue;
        }
        let Some((cap, storage)) = width_capability(float, width) else {
            continue;
        };
        if computes_with(cx, cap) {
            continue;
        }
        if storage.iter().any(|&s| m.has_cap(s)) {
            limited.push((id, cap));
            continue;
        }
        let kind = if float { "floating-point" } else { "integer" };
        out.emit(
            cx,
            Rule::MissingCapability,
            i,
            format!("a {width}-bit {kind} type is declared without `OpCapability {cap:?}`"),
            vec![if storage.is_empty() {
                format!("declare `OpCapability {cap:?}` (the device must have the feature), or use 32-bit types")
            } else {
                format!(
                    "declare `OpCapability {cap:?}`, or a storage capability ({}) if the type is only loaded, stored and converted",
                    storage.iter().map(|s| format!("`{s:?}`")).collect::<Vec<_>>().join(", ")
                )
            }],
        );
    }
    limited
}

/// The storage-only scalar type `t` is or has as components, with the capability it needs.
fn storage_only_in(cx: &Cx<'_>, limited: &[(u32, C)], t: u32) -> Option<(u32, C)> {
    let scalar = match cx.m.ty(t) {
        Ty::Int { .. } | Ty::Float { .. } => t,
        Ty::Vector { comp, .. } => comp,
        _ => return None,
    };
    limited.iter().copied().find(|&(id, _)| id == scalar)
}

/// SG0504 for the module: scalar widths declared without any capability, and every instruction
/// that computes with a storage-only type.
pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    let m = &cx.m;
    // OpenCL's rules for these widths differ (Float16Buffer, no storage capabilities).
    if m.has_cap(C::Kernel) || !m.has_cap(C::Shader) {
        return;
    }
    let limited = storage_only_types(cx, out);
    if limited.is_empty() {
        return;
    }
    let Some(body) = (0..m.insts.len()).find(|&i| m.opcode(i) == Op::Function as u32) else {
        return;
    };
    for i in body..m.insts.len() {
        let opcode = m.opcode(i);
        let Some(op) = op_of(opcode) else { continue };
        let produced = m
            .result_type(i)
            .filter(|_| !may_produce(op) && op != Op::Function)
            .and_then(|t| storage_only_in(cx, &limited, t))
            .map(|found| (found, "produces"));
        let read = || {
            if may_read(op) {
                return None;
            }
            id_operand_words(opcode, m.wc(i))?
                .into_iter()
                .filter_map(|k| m.word(i, k))
                .filter(|&v| m.def_op(v) != Some(Op::Function as u32))
                .filter_map(|v| m.type_of(v))
                .find_map(|t| storage_only_in(cx, &limited, t))
                .map(|found| (found, "reads"))
        };
        let Some(((ty, cap), how)) = produced.or_else(read) else {
            continue;
        };
        out.emit(
            cx,
            Rule::MissingCapability,
            i,
            format!(
                "`Op{}` {how} a value of {}, which the module declares for storage only: computing with it needs `OpCapability {cap:?}`",
                opname(opcode),
                describe(cx, ty)
            ),
            vec![format!(
                "a storage capability allows such a value only to be loaded, stored, copied (OpCopyObject) and converted by width (OpUConvert, OpSConvert, OpFConvert); declare `OpCapability {cap:?}` or convert it to 32 bits first"
            )],
        );
    }
}

/// The capability of a subgroup instruction no other rule checks the capability of: the KHR
/// ballot reads, rotate, quad control, `Groups` (with AMD's non-uniform forms) and uniform
/// group arithmetic. (The KHR votes are SG0101's, the partitioned ones SG0201's, the core
/// non-uniform ones SG0601's.)
fn checked_here(op: Op) -> Option<C> {
    fit::required_capability(op, None).filter(|c| {
        matches!(
            c,
            C::SubgroupBallotKHR
                | C::GroupNonUniformRotateKHR
                | C::QuadControlKHR
                | C::Groups
                | C::GroupUniformArithmeticKHR
        )
    })
}

/// SG0504 for instruction `i`: a subgroup instruction of [`checked_here`] without its capability.
pub(crate) fn check(cx: &Cx<'_>, i: usize, op: Op, out: &mut Sink) {
    let Some(cap) = checked_here(op) else { return };
    if cx.m.has_cap(cap) {
        return;
    }
    out.emit(
        cx,
        Rule::MissingCapability,
        i,
        format!(
            "`Op{}` needs `OpCapability {}`, which the module does not declare",
            opname(op as u32),
            cap_text(cx, cap)
        ),
        vec![
            "declare the capability with its extension (`spv-subgroup lower` then rewrites the instruction for a target without it)".into(),
        ],
    );
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect};

    /// A compute shader with a 16-bit storage buffer of `ushort` (and `half`), declared with
    /// `caps`, whose entry point runs `body` after loading `%u` (a `ushort`) and `%h` (a `half`).
    fn storage16(caps: &str, body: &str) -> String {
        format!(
            "OpCapability Shader\n{caps}\nOpExtension \"SPV_KHR_16bit_storage\"\n\
OpMemoryModel Logical GLSL450\nOpEntryPoint GLCompute %main \"main\"\nOpExecutionMode %main LocalSize 1 1 1\n\
OpDecorate %S Block\nOpMemberDecorate %S 0 Offset 0\nOpMemberDecorate %S 1 Offset 2\n\
OpDecorate %buf DescriptorSet 0\nOpDecorate %buf Binding 0\n\
%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%uint = OpTypeInt 32 0\n%float = OpTypeFloat 32\n\
%ushort = OpTypeInt 16 0\n%half = OpTypeFloat 16\n%S = OpTypeStruct %ushort %half\n\
%ptr_S = OpTypePointer StorageBuffer %S\n%ptr_us = OpTypePointer StorageBuffer %ushort\n\
%ptr_h = OpTypePointer StorageBuffer %half\n%buf = OpVariable %ptr_S StorageBuffer\n\
%uint_0 = OpConstant %uint 0\n%uint_1 = OpConstant %uint 1\n\
%main = OpFunction %void None %fn\n%entry = OpLabel\n\
%pu = OpAccessChain %ptr_us %buf %uint_0\n%ph = OpAccessChain %ptr_h %buf %uint_1\n\
%u = OpLoad %ushort %pu\n%h = OpLoad %half %ph\n{body}\nOpReturn\nOpFunctionEnd\n"
        )
    }

    const STORAGE: &str = "OpCapability StorageBuffer16BitAccess";

    #[test]
    fn storage_only_types_are_loaded_stored_and_converted() {
        // Width-only conversions and stores: the storage capability suffices.
        let fine = "%w = OpUConvert %uint %u\n%f = OpFConvert %float %h\n\
%n = OpUConvert %ushort %w\nOpStore %pu %n\n%c = OpCopyObject %half %h\nOpStore %ph %c";
        check(&storage16(STORAGE, fine), "vulkan1.1", Expect::Clean);
        // A bitcast, arithmetic and a bitcast to the type each need Int16 / Float16.
        for body in [
            "%b = OpBitcast %ushort %h",
            "%s = OpIAdd %ushort %u %u",
            "%b = OpBitcast %ushort %uint_0",
            "%f = OpFAdd %half %h %h",
        ] {
            check(
                &storage16(STORAGE, body),
                "vulkan1.1",
                Expect::Has("SG0504"),
            );
        }
        // Declared, the arithmetic capability allows every use.
        let full = format!("{STORAGE}\nOpCapability Int16\nOpCapability Float16");
        check(
            &storage16(
                &full,
                "%b = OpBitcast %ushort %h\n%s = OpIAdd %ushort %b %u",
            ),
            "vulkan1.1",
            Expect::Clean,
        );
    }

    #[test]
    fn types_declared_without_any_capability() {
        check(
            &shader(
                "",
                "%x = OpCopyObject %uint %uint_1\n%l = OpUConvert %ulong %x",
            )
            .replace(
                "%uint = OpTypeInt 32 0\n",
                "%uint = OpTypeInt 32 0\n%ulong = OpTypeInt 64 0\n",
            ),
            "vulkan1.1",
            Expect::Has("SG0504"),
        );
        check(
            &shader(
                "OpCapability Int64",
                "%x = OpCopyObject %uint %uint_1\n%l = OpUConvert %ulong %x",
            )
            .replace(
                "%uint = OpTypeInt 32 0\n",
                "%uint = OpTypeInt 32 0\n%ulong = OpTypeInt 64 0\n",
            ),
            "vulkan1.1",
            Expect::Clean,
        );
    }

    #[test]
    fn khr_ballot_and_groups_need_their_capability() {
        let ballot = "%b = OpSubgroupBallotKHR %v4uint %true";
        check(&shader("", ballot), "spv1.0", Expect::Has("SG0504"));
        check(
            &shader(
                "OpCapability SubgroupBallotKHR\nOpExtension \"SPV_KHR_shader_ballot\"",
                ballot,
            ),
            "spv1.0",
            Expect::Clean,
        );
        let add = "%s = OpGroupIAddNonUniformAMD %uint %uint_3 Reduce %uint_1";
        check(
            &shader("OpExtension \"SPV_AMD_shader_ballot\"", add),
            "spv1.3",
            Expect::Has("SG0504"),
        );
        check(
            &shader(
                "OpCapability Groups\nOpExtension \"SPV_AMD_shader_ballot\"",
                add,
            ),
            "spv1.3",
            Expect::Clean,
        );
    }
}
