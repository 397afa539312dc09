//! Target fit for naga 30 (SG0704, with `restrictions.naga_module`): the module-level
//! instructions naga's SPIR-V front end refuses before it reads any code.
//!
//! naga 30's front end (`naga::front::spv`, with its default `strict_capabilities`) stops at the
//! first of these, whatever the functions hold:
//!
//! - a capability outside its list (`Tessellation`, `StorageImageWriteWithoutFormat`,
//!   `DrawParameters`, `ImageGatherExtended`, ...), an extension outside its list, an extended
//!   instruction set other than `GLSL.std.450` and `NonSemantic.Shader.DebugInfo.100`;
//! - an execution mode other than `LocalSize`, `OriginUpperLeft`, `EarlyFragmentTests` and the
//!   depth modes (so `LocalSizeId`, `OpExecutionModeId` itself, and the mesh and geometry
//!   output modes);
//! - any other instruction before the first function: `OpSpecConstantOp`, `OpDecorateString`,
//!   `OpLine` and `OpNoLine` outside a function, `OpTypeForwardPointer`, an `OpExtInst` of a set
//!   other than the non-semantic debug one, ...
//!
//! - and one refusal of its validator a module can only carry in its constants: a composite
//!   constant without `SpecId` one of whose constituents has one (the front end makes the
//!   constituent an override and the composite a constant, and the validator requires a
//!   constant's initializer to be a const-expression: "Initializer must be a const-expression").
//!   glslang writes it for `gl_WorkGroupSize` under `local_size_x_id`.
//!
//! The subgroup capabilities and extensions the target lacks are left out: `lower --target naga`
//! rewrites their instructions and removes them, and the per-instruction rules report what it
//! cannot rewrite. So is `SPV_AMD_shader_ballot`'s instruction set on a target without `Groups`
//! (rewritten and its import removed).
//!
//! The lists are naga 30.0's (`SUPPORTED_CAPABILITIES`, `SUPPORTED_EXTENSIONS`,
//! `parse_ext_inst_import`, `parse_execution_mode` and the module-level match of `Frontend::parse`
//! in `src/front/spv/mod.rs`); `lower`'s verification runs naga itself on every naga output, so
//! a list that falls behind a newer naga makes `validate` stricter than naga, never `lower`
//! wrong.

use spirv::{Capability, Decoration, ExecutionMode, Op};

use crate::fit;

use crate::module::Cx;
use crate::rules::Rule;
use crate::sink::Sink;

/// The capabilities naga 30's front end reads.
const CAPABILITIES: [Capability; 35] = [
    Capability::Shader,
    Capability::VulkanMemoryModel,
    Capability::ClipDistance,
    Capability::CullDistance,
    Capability::SampleRateShading,
    Capability::DerivativeControl,
    Capability::Matrix,
    Capability::ImageQuery,
    Capability::Sampled1D,
    Capability::Image1D,
    Capability::SampledCubeArray,
    Capability::ImageCubeArray,
    Capability::StorageImageExtendedFormats,
    Capability::Int8,
    Capability::Int16,
    Capability::Int64,
    Capability::Int64Atomics,
    Capability::Float16,
    Capability::AtomicFloat32AddEXT,
    Capability::Float64,
    Capability::Geometry,
    Capability::MultiView,
    Capability::StorageBuffer16BitAccess,
    Capability::UniformAndStorageBuffer16BitAccess,
    Capability::GroupNonUniform,
    Capability::GroupNonUniformVote,
    Capability::GroupNonUniformArithmetic,
    Capability::GroupNonUniformBallot,
    Capability::GroupNonUniformShuffle,
    Capability::GroupNonUniformShuffleRelative,
    Capability::RuntimeDescriptorArray,
    Capability::StorageImageMultisample,
    Capability::FragmentBarycentricKHR,
    Capability::UniformBufferArrayDynamicIndexing,
    Capability::StorageBufferArrayDynamicIndexing,
];

/// The extensions naga 30's front end reads.
const EXTENSIONS: [&str; 8] = [
    "SPV_KHR_storage_buffer_storage_class",
    "SPV_KHR_vulkan_memory_model",
    "SPV_KHR_multiview",
    "SPV_EXT_descriptor_indexing",
    "SPV_EXT_shader_atomic_float_add",
    "SPV_KHR_16bit_storage",
    "SPV_KHR_non_semantic_info",
    "SPV_KHR_fragment_shader_barycentric",
];

/// The extended instruction sets naga 30's front end imports.
const EXT_INST_SETS: [&str; 2] = ["GLSL.std.450", "NonSemantic.Shader.DebugInfo.100"];

/// The execution modes naga 30's front end reads.
const EXECUTION_MODES: [ExecutionMode; 7] = [
    ExecutionMode::EarlyFragmentTests,
    ExecutionMode::DepthUnchanged,
    ExecutionMode::DepthGreater,
    ExecutionMode::DepthLess,
    ExecutionMode::DepthReplacing,
    ExecutionMode::OriginUpperLeft,
    ExecutionMode::LocalSize,
];

/// The instructions naga 30's front end reads before the first function (`OpExtInst` is judged
/// by its set, below).
const MODULE_OPS: [Op; 39] = [
    Op::Capability,
    Op::Extension,
    Op::ExtInstImport,
    Op::MemoryModel,
    Op::EntryPoint,
    Op::ExecutionMode,
    Op::String,
    Op::Source,
    Op::SourceExtension,
    Op::Name,
    Op::MemberName,
    Op::ModuleProcessed,
    Op::Decorate,
    Op::MemberDecorate,
    Op::TypeVoid,
    Op::TypeBool,
    Op::TypeInt,
    Op::TypeFloat,
    Op::TypeVector,
    Op::TypeMatrix,
    Op::TypeFunction,
    Op::TypePointer,
    Op::TypeArray,
    Op::TypeRuntimeArray,
    Op::TypeStruct,
    Op::TypeImage,
    Op::TypeSampledImage,
    Op::TypeSampler,
    Op::Constant,
    Op::SpecConstant,
    Op::ConstantComposite,
    Op::SpecConstantComposite,
    Op::ConstantNull,
    Op::Undef,
    Op::ConstantTrue,
    Op::SpecConstantTrue,
    Op::ConstantFalse,
    Op::SpecConstantFalse,
    Op::Variable,
];

const HINT: &str = "naga 30 refuses the module at this instruction, before reading any code; no \
                    lowering removes it";

pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    let Some(t) = cx.target else { return };
    if !t.restrictions.naga_module {
        return;
    }
    let m = &cx.m;
    // Ids of imported sets naga reads (for `OpExtInst` outside functions).
    let mut non_semantic_sets: Vec<u32> = Vec::new();
    // Ids decorated `SpecId` (naga's overrides), sorted.
    // (Decorations come before the first function; the scan stops there.)
    let mut spec_ids: Vec<u32> = (0..m.insts.len())
        .take_while(|&i| m.opcode(i) != Op::Function as u32)
        .filter(|&i| {
            m.opcode(i) == Op::Decorate as u32 && m.word(i, 2) == Some(Decoration::SpecId as u32)
        })
        .filter_map(|i| m.word(i, 1))
        .collect();
    spec_ids.sort_unstable();
    let is_spec = |id: u32| spec_ids.binary_search(&id).is_ok();
    // Entry points of stages naga does not read: `naga_fit` reports the stage, and their
    // execution modes (a geometry shader's `OutputVertices`, ...) would only repeat it.
    let unread_stage: Vec<u32> = m
        .entry_points
        .iter()
        .filter(|&&i| {
            m.word(i, 1)
                .is_some_and(|model| !fit::naga_reads_stage(model))
        })
        .filter_map(|&i| m.word(i, 2))
        .collect();
    for i in 0..m.insts.len() {
        let opcode = m.opcode(i);
        if opcode == Op::Function as u32 {
            break;
        }
        let what = if opcode == Op::Capability as u32 {
            m.word(i, 1).and_then(|c| {
                let cap = Capability::from_u32(c)?;
                let read = CAPABILITIES.contains(&cap);
                // A subgroup capability the target lacks: rewritten and removed by `lower`.
                let lowered = !fit::target_has(t, cap);
                (!read && !lowered).then(|| format!("capability `{cap:?}`"))
            })
        } else if opcode == Op::Extension as u32 {
            let name = m.string(i, 1);
            let read = EXTENSIONS.contains(&name.as_str());
            let lowered = fit::extension_capability(&name).is_some_and(|c| !fit::target_has(t, c));
            (!read && !lowered).then(|| format!("extension `{name}`"))
        } else if opcode == Op::ExtInstImport as u32 {
            let name = m.string(i, 2);
            if name == "NonSemantic.Shader.DebugInfo.100" {
                non_semantic_sets.extend(m.word(i, 1));
            }
            let read = EXT_INST_SETS.contains(&name.as_str());
            let lowered = name == fit::AMD_SHADER_BALLOT && !fit::target_has(t, Capability::Groups);
            (!read && !lowered).then(|| format!("extended instruction set `{name}`"))
        } else if opcode == Op::ExecutionMode as u32 {
            let of_unread_stage = m.word(i, 1).is_some_and(|f| unread_stage.contains(&f));
            m.word(i, 2).filter(|_| !of_unread_stage).and_then(|mode| {
                let known = ExecutionMode::from_u32(mode);
                let read = known.is_some_and(|k| EXECUTION_MODES.contains(&k));
                (!read).then(|| match known {
                    Some(k) => format!("execution mode `{k:?}`"),
                    None => format!("execution mode {mode}"),
                })
            })
        } else if opcode == Op::ConstantComposite as u32
            || opcode == Op::SpecConstantComposite as u32
        {
            let id = m.word(i, 2);
            let overridden = (3..m.wc(i))
                .filter_map(|k| m.word(i, k))
                .find(|&c| is_spec(c));
            match (id, overridden) {
                (Some(id), Some(c)) if !is_spec(id) => Some(format!(
                    "composite constant %{id} of specialization constant %{c} (naga 30's \
                     validator: \"Initializer must be a const-expression\")"
                )),
                _ => None,
            }
        } else if opcode == Op::ExtInst as u32 {
            let set = m.word(i, 3);
            (!set.is_some_and(|s| non_semantic_sets.contains(&s))).then(|| {
                "`OpExtInst` outside a function (not of the non-semantic debug set)".into()
            })
        } else {
            let read = MODULE_OPS.iter().any(|&op| op as u32 == opcode);
            (!read).then(|| match Op::from_u32(opcode) {
                Some(op) => format!("`Op{op:?}` outside a function"),
                None => format!("opcode {opcode} outside a function"),
            })
        };
        if let Some(what) = what {
            out.emit(
                cx,
                Rule::TargetRestriction,
                i,
                format!("{what}: target `{}` does not accept it", t.name),
                vec![HINT.into()],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::messages;

    /// The SG0704 messages of `src` validated for `target`.
    fn restrictions(src: &str, target: &str) -> Vec<String> {
        messages(src, target, "SG0704")
    }

    /// A compute module with `header` after `OpCapability Shader` and `globals` before the
    /// function.
    fn module(header: &str, mode: &str, globals: &str) -> String {
        format!(
            "OpCapability Shader\n{header}OpMemoryModel Logical GLSL450\n\
OpEntryPoint GLCompute %main \"main\"\n{mode}\n\
%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%uint = OpTypeInt 32 0\n{globals}\
%main = OpFunction %void None %fn\n%entry = OpLabel\nOpReturn\nOpFunctionEnd\n"
        )
    }

    const LOCAL_SIZE: &str = "OpExecutionMode %main LocalSize 64 1 1";

    #[test]
    fn what_naga_reads_is_not_reported() {
        let plain = module(
            "OpCapability GroupNonUniformBallot\nOpExtension \"SPV_KHR_storage_buffer_storage_class\"\n\
%glsl = OpExtInstImport \"GLSL.std.450\"\n",
            LOCAL_SIZE,
            "%one = OpConstant %uint 1\n",
        );
        assert!(restrictions(&plain, "naga").is_empty());
    }

    #[test]
    fn front_end_refusals_are_reported_at_their_instruction() {
        let cases = [
            (
                module("OpCapability DrawParameters\n", LOCAL_SIZE, ""),
                "capability `DrawParameters`",
            ),
            (
                module(
                    "OpExtension \"SPV_KHR_shader_draw_parameters\"\n",
                    LOCAL_SIZE,
                    "",
                ),
                "extension `SPV_KHR_shader_draw_parameters`",
            ),
            (
                module(
                    "%printf = OpExtInstImport \"NonSemantic.DebugPrintf\"\n",
                    LOCAL_SIZE,
                    "",
                ),
                "extended instruction set `NonSemantic.DebugPrintf`",
            ),
            (
                module(
                    "",
                    "OpExecutionModeId %main LocalSizeId %c64 %c1 %c1",
                    "%c64 = OpConstant %uint 64\n%c1 = OpConstant %uint 1\n",
                ),
                "`OpExecutionModeId` outside a function",
            ),
            (
                module(
                    "",
                    LOCAL_SIZE,
                    "%s = OpSpecConstant %uint 1\n%t = OpSpecConstantOp %uint IAdd %s %s\n",
                ),
                "`OpSpecConstantOp` outside a function",
            ),
            (
                module(
                    "",
                    &format!("{LOCAL_SIZE}\nOpExecutionMode %main SubgroupUniformControlFlowKHR"),
                    "",
                ),
                "execution mode `SubgroupUniformControlFlowKHR`",
            ),
            (
                module(
                    "",
                    &format!(
                        "{LOCAL_SIZE}\nOpDecorate %x SpecId 0\nOpDecorate %size BuiltIn WorkgroupSize"
                    ),
                    "%v3 = OpTypeVector %uint 3\n%x = OpSpecConstant %uint 64\n%c1 = OpConstant %uint 1\n\
%size = OpSpecConstantComposite %v3 %x %c1 %c1\n",
                ),
                "composite constant %",
            ),
        ];
        for (src, what) in &cases {
            let found = restrictions(src, "naga");
            assert_eq!(found.len(), 1, "{what}: {found:?}");
            assert!(found[0].starts_with(what), "{what}: {found:?}");
            // Only the naga consumer refuses it.
            assert!(restrictions(src, "vulkan1.1").is_empty(), "{what}");
        }
    }

    #[test]
    fn subgroup_capabilities_the_lowering_removes_are_left_to_their_rules() {
        let vote = module(
            "OpCapability SubgroupVoteKHR\nOpExtension \"SPV_KHR_subgroup_vote\"\n",
            LOCAL_SIZE,
            "",
        );
        assert!(restrictions(&vote, "naga").is_empty());
    }
}
