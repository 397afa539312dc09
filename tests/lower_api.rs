//! The lowering library's contract beyond the fixtures: unchanged modules come back word for
//! word, errors name the instruction and the missing feature, hygiene (capabilities, extensions,
//! version, generator word), the options (subgroup size, float comparison, partition form), the
//! stages that get the `SubgroupSize` branch for naga, the same output from `lower_words` and
//! from `lower` on a loaded module (where `lower_words` streams the functions and writes copied
//! functions from its own output's words; also with an emulated subgroup size, where
//! `lower_words` emulates one function at a time and keeps what stands between functions in
//! place), quad-control execution modes and Workgroup-scope group ops refused, and no panic on
//! malformed input.

use std::collections::BTreeMap;

use spv_subgroup_lower::{
    assemble, load, lower, lower_words, FloatPartition, LowerError, LowerOptions, PartitionForm,
    Target,
};
use spv_subgroup_tests::tools;

mod lower_common;

const VOTE_1_0: &str = r#"
OpCapability Shader
OpCapability SubgroupVoteKHR
OpExtension "SPV_KHR_subgroup_vote"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 32 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%ptr = OpTypePointer Function %bool
%main = OpFunction %void None %fn
%entry = OpLabel
%var = OpVariable %ptr Function
%p = OpLoad %bool %var
%any = OpSubgroupAnyKHR %bool %p
OpStore %var %any
OpReturn
OpFunctionEnd
"#;

const PARTITION_1_3: &str = r#"
OpCapability Shader
OpCapability GroupNonUniform
OpCapability GroupNonUniformPartitionedNV
OpExtension "SPV_NV_shader_subgroup_partitioned"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 32 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%float = OpTypeFloat 32
%uint = OpTypeInt 32 0
%v4uint = OpTypeVector %uint 4
%ptr = OpTypePointer Function %float
%mptr = OpTypePointer Function %v4uint
%main = OpFunction %void None %fn
%entry = OpLabel
%var = OpVariable %ptr Function
%out = OpVariable %mptr Function
%v = OpLoad %float %var
%p = OpGroupNonUniformPartitionNV %v4uint %v
OpStore %out %p
OpReturn
OpFunctionEnd
"#;

fn opts(target: &str) -> LowerOptions {
    LowerOptions::new(Target::preset(target).expect("preset"))
}

fn dis(words: &[u32]) -> String {
    tools::disassemble(words)
}

#[test]
fn nothing_to_lower_gives_the_same_words() {
    let words = tools::assemble(VOTE_1_0, "spv1.0").unwrap();
    let (out, report) = lower_words(&words, &opts("lavapipe")).unwrap();
    assert!(!report.changed);
    assert!(report.rewrites.is_empty());
    assert_eq!(out, words);
}

#[test]
fn vote_on_a_1_0_module_raises_the_version_only_for_core_code() {
    let words = tools::assemble(VOTE_1_0, "spv1.0").unwrap();
    // Core target: the core vote op needs SPIR-V 1.3.
    let (out, report) = lower_words(&words, &opts("vulkan1.1")).unwrap();
    assert_eq!(report.rewrites, vec![("OpSubgroupAnyKHR".to_owned(), 1)]);
    assert_eq!(out[1], 0x0001_0300, "version raised to 1.3");
    assert_eq!(out[2], words[2], "generator word kept");
    let text = dis(&out);
    assert!(text.contains("OpGroupNonUniformAny"), "{text}");
    assert!(
        !text.contains("SubgroupVoteKHR") && !text.contains("SPV_KHR_subgroup_vote"),
        "{text}"
    );
    tools::spirv_val(&out, "vulkan1.1").unwrap();
    // SPIR-V 1.0 target: a KHR ballot, version untouched.
    let (out, _) = lower_words(&words, &opts("khr-ballot")).unwrap();
    assert_eq!(out[1], 0x0001_0000);
    let text = dis(&out);
    assert!(
        text.contains("OpSubgroupBallotKHR") && text.contains("SPV_KHR_shader_ballot"),
        "{text}"
    );
    tools::spirv_val(&out, "vulkan1.0").unwrap();
}

#[test]
fn unused_capability_the_target_lacks_is_removed() {
    let text = VOTE_1_0.replace(
        "%any = OpSubgroupAnyKHR %bool %p\nOpStore %var %any",
        "OpStore %var %p",
    );
    let words = tools::assemble(&text, "spv1.0").unwrap();
    let (out, report) = lower_words(&words, &opts("vulkan1.1")).unwrap();
    assert!(report.changed && report.rewrites.is_empty());
    let text = dis(&out);
    assert!(
        !text.contains("SubgroupVoteKHR") && !text.contains("SPV_KHR_subgroup_vote"),
        "{text}"
    );
    assert_eq!(out[1], 0x0001_0000, "no core code added: version unchanged");
    let (again, report) = lower_words(&out, &opts("vulkan1.1")).unwrap();
    assert!(!report.changed);
    assert_eq!(again, out);
}

#[test]
fn a_target_without_ballots_names_the_instruction_and_the_missing_feature() {
    let words = tools::assemble(VOTE_1_0, "spv1.0").unwrap();
    let mut target = Target::preset("khr-ballot").unwrap();
    target.name = "bare".into();
    target.ops.khr_ballot = false;
    let err = lower_words(&words, &LowerOptions::new(target)).unwrap_err();
    let LowerError::Unsupported {
        result_id,
        opcode,
        word_offset,
        target,
        missing,
    } = &err
    else {
        panic!("expected Unsupported, got {err:?}");
    };
    assert_eq!(opcode, "OpSubgroupAnyKHR");
    assert!(*result_id > 0 && *word_offset > 5, "{err}");
    assert_eq!(
        words[*word_offset] & 0xffff,
        4429,
        "the offset points at the instruction"
    );
    assert_eq!(target, "bare");
    assert!(missing.contains("ballot"), "{err}");
}

#[test]
fn a_module_newer_than_the_target_is_refused() {
    let words = tools::assemble(PARTITION_1_3, "spv1.3").unwrap();
    let err = lower_words(&words, &opts("khr-ballot")).unwrap_err();
    assert!(
        err.to_string()
            .contains("SPIR-V 1.3 (the target consumes up to 1.0)"),
        "{err}"
    );
}

#[test]
fn subgroup_size_32_gives_single_word_masks() {
    // A vec4 key (128 bits) takes the waterfall, whose leader search shows the mask width.
    let vec4_key = PARTITION_1_3
        .replace(
            "%ptr = OpTypePointer Function %float",
            "%ptr = OpTypePointer Function %v4uint",
        )
        .replace("%v = OpLoad %float %var", "%v = OpLoad %v4uint %var");
    let words = tools::assemble(&vec4_key, "spv1.3").unwrap();
    let mut o = opts("vulkan1.1");
    let (wide, _) = lower_words(&words, &o).unwrap();
    o.subgroup_size = Some(32);
    let (narrow, _) = lower_words(&words, &o).unwrap();
    let (wide, narrow) = (dis(&wide), dis(&narrow));
    assert!(wide.contains("OpGroupNonUniformBallotFindLSB"), "{wide}");
    assert!(
        !narrow.contains("OpGroupNonUniformBallotFindLSB") && narrow.contains("FindILsb"),
        "{narrow}"
    );
}

#[test]
fn bitwise_float_partition_skips_the_normalisation() {
    let words = tools::assemble(PARTITION_1_3, "spv1.3").unwrap();
    let mut o = opts("vulkan1.1");
    let (spec, _) = lower_words(&words, &o).unwrap();
    o.float_partition = FloatPartition::Bitwise;
    let (bits, _) = lower_words(&words, &o).unwrap();
    // The spec form tests the magnitude bits against 0x7f800000 (NaN); the bitwise form does not.
    assert!(dis(&spec).contains("2139095040"), "{}", dis(&spec));
    assert!(!dis(&bits).contains("2139095040"));
    assert!(bits.len() < spec.len());
}

#[test]
fn malformed_input_is_an_error_never_a_panic() {
    let words = tools::assemble(PARTITION_1_3, "spv1.3").unwrap();
    for cut in 0..words.len() {
        let _ = lower_words(&words[..cut], &opts("vulkan1.1"));
    }
    for i in 5..words.len() {
        for flip in [0x0000_0001u32, 0x0001_0000, 0xffff_ffff, 0x8000_0000] {
            let mut w = words.clone();
            w[i] ^= flip;
            let _ = lower_words(&w, &opts("vulkan1.1"));
            let _ = lower_words(&w, &opts("naga"));
        }
    }
    assert!(matches!(
        lower_words(&[], &opts("vulkan1.1")),
        Err(LowerError::Parse(_))
    ));
}

#[test]
fn votes_from_core_ballots_where_the_target_lacks_core_vote() {
    let text = VOTE_1_0.replace(
        "%any = OpSubgroupAnyKHR %bool %p\nOpStore %var %any",
        "%any = OpSubgroupAnyKHR %bool %p\n%all = OpSubgroupAllKHR %bool %any\n%eq = OpSubgroupAllEqualKHR %bool %all\nOpStore %var %eq",
    );
    let words = tools::assemble(&text, "spv1.0").unwrap();
    let mut target = Target::preset("vulkan1.1").unwrap();
    target.ops.vote = false;
    let (out, report) = lower_words(&words, &LowerOptions::new(target)).unwrap();
    assert_eq!(report.rewrites.len(), 3);
    let text = dis(&out);
    assert_eq!(
        text.matches("OpGroupNonUniformBallot ").count(),
        4,
        "1 + 1 + 2 ballots:\n{text}"
    );
    assert!(
        !text.contains("GroupNonUniformVote") && !text.contains("OpGroupNonUniformAll"),
        "{text}"
    );
    tools::spirv_val(&out, "vulkan1.1").unwrap();
}

#[test]
fn partition_from_ballots_alone_where_the_target_cannot_read_lanes() {
    let words = tools::assemble(PARTITION_1_3, "spv1.3").unwrap();
    let mut target = Target::preset("vulkan1.1").unwrap();
    target.ops.shuffle = false;
    let o = LowerOptions::new(target).with_subgroup_size(Some(32));
    let (out, _) = lower_words(&words, &o).unwrap();
    let text = dis(&out);
    assert!(
        !text.contains("Shuffle") && !text.contains("OpLoopMerge"),
        "{text}"
    );
    assert_eq!(
        text.matches("OpGroupNonUniformBallot ").count(),
        33,
        "one per key bit and the active mask"
    );
    tools::spirv_val(&out, "vulkan1.1").unwrap();
}

/// A quad swap of a `uint`: core `GroupNonUniformQuad`, nothing else.
const QUAD_SWAP_1_3: &str = r#"
OpCapability Shader
OpCapability GroupNonUniform
OpCapability GroupNonUniformQuad
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 32 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%uint_0 = OpConstant %uint 0
%uint_3 = OpConstant %uint 3
%ptr = OpTypePointer Function %uint
%main = OpFunction %void None %fn
%entry = OpLabel
%var = OpVariable %ptr Function
%v = OpLoad %uint %var
%s = OpGroupNonUniformQuadSwap %uint %uint_3 %v %uint_0
OpStore %var %s
OpReturn
OpFunctionEnd
"#;

#[test]
fn ballots_stand_in_for_a_quad_swap_without_quad_ops_or_shuffles() {
    let words = tools::assemble(QUAD_SWAP_1_3, "spv1.3").unwrap();
    let mut target = Target::preset("vulkan1.1").unwrap();
    target.name = "ballot-only".into();
    target.ops.quad = false;
    target.ops.shuffle = false;
    target.ops.shuffle_relative = false;
    let (out, report) = lower_words(&words, &LowerOptions::new(target)).unwrap();
    assert!(report.changed);
    let text = tools::disassemble(&out);
    assert!(!text.contains("OpGroupNonUniformQuadSwap"), "{text}");
    assert!(!text.contains("OpGroupNonUniformShuffle"), "{text}");
    assert_eq!(
        text.matches("OpGroupNonUniformBallot ").count(),
        32,
        "one ballot per bit of the uint"
    );
    tools::spirv_val(&out, "vulkan1.1").unwrap();
}

#[test]
fn a_core_op_no_rewrite_provides_is_refused_naming_a_target_that_takes_it() {
    let words = tools::assemble(QUAD_SWAP_1_3, "spv1.3").unwrap();
    // Neither quad ops nor shuffles nor ballots: no lane read can stand in for the swap.
    let mut target = Target::preset("vulkan1.1").unwrap();
    target.name = "no-quad".into();
    target.ops.quad = false;
    target.ops.shuffle = false;
    target.ops.ballot = false;
    let err = lower_words(&words, &LowerOptions::new(target)).unwrap_err();
    let LowerError::Unsupported {
        opcode,
        word_offset,
        missing,
        ..
    } = &err
    else {
        panic!("expected Unsupported, got {err:?}");
    };
    assert_eq!(opcode, "OpGroupNonUniformQuadSwap");
    assert_eq!(words[*word_offset] & 0xffff, 366, "the offset points at it");
    assert!(missing.contains("GroupNonUniformQuad"), "{err}");
    assert!(missing.contains("target `vulkan1.1` takes it"), "{err}");
    // The same module fits the preset: nothing to do, the words come back as they were.
    let (out, report) = lower_words(&words, &opts("vulkan1.1")).unwrap();
    assert!(!report.changed);
    assert_eq!(out, words);
}

#[test]
fn partition_form_forces_each_form_and_auto_picks_by_key_words() {
    let words = tools::assemble(PARTITION_1_3, "spv1.3").unwrap();
    let lowered = |form: PartitionForm| {
        let mut o = opts("vulkan1.1");
        o.subgroup_size = Some(32);
        o.partition_form = form;
        dis(&lower_words(&words, &o).unwrap().0)
    };
    let reduction = "OpGroupNonUniformBitwiseOr";
    let shuffle = "OpGroupNonUniformShuffle";
    let sliced = lowered(PartitionForm::BitSliced);
    assert!(
        !sliced.contains(shuffle) && !sliced.contains(reduction),
        "{sliced}"
    );
    let round = lowered(PartitionForm::FirstRound);
    assert!(
        round.contains(shuffle) && !round.contains(reduction),
        "{round}"
    );
    let differing = lowered(PartitionForm::DifferingBits);
    assert!(differing.contains(reduction), "{differing}");
    let waterfall = lowered(PartitionForm::Waterfall);
    assert!(waterfall.contains("OpLoopMerge") && !waterfall.contains(reduction));
    // A float key is one word over 16 bits: the first round, then the slices.
    assert_eq!(lowered(PartitionForm::Auto), round);
    // A two-word key takes the differing bits.
    let double_key = PARTITION_1_3
        .replace(
            "OpCapability Shader",
            "OpCapability Shader\nOpCapability Float64",
        )
        .replace("%float = OpTypeFloat 32", "%float = OpTypeFloat 64");
    let words = tools::assemble(&double_key, "spv1.3").unwrap();
    let mut o = opts("vulkan1.1");
    o.subgroup_size = Some(32);
    assert!(dis(&lower_words(&words, &o).unwrap().0).contains(reduction));
}

#[test]
fn naga_gets_the_size_branch_only_where_it_takes_subgroup_size() {
    let size = "BuiltIn SubgroupSize";
    let compute = tools::assemble(PARTITION_1_3, "spv1.3").unwrap();
    let out = dis(&lower_words(&compute, &opts("naga")).unwrap().0);
    assert!(out.contains(size), "{out}");
    // naga's validator refuses `SubgroupSize` in a vertex shader.
    let vertex = PARTITION_1_3
        .replace(
            "OpEntryPoint GLCompute %main \"main\"",
            "OpEntryPoint Vertex %main \"main\"",
        )
        .replace("OpExecutionMode %main LocalSize 32 1 1\n", "");
    let words = tools::assemble(&vertex, "spv1.3").unwrap();
    // Nor the lane id, which this partition's rewrite reads: naga refuses the module rather
    // than take an output naga's validator rejects (before naga judged the naga target, it was
    // written without `SubgroupSize` but with `SubgroupLocalInvocationId`).
    let refused = lower_words(&words, &opts("naga")).map(|_| ()).unwrap_err();
    assert!(
        refused.to_string().contains("a vertex entry point reaches"),
        "{refused}"
    );
    // Other consumers take it in every stage.
    let out = dis(&lower_words(&words, &opts("vulkan1.1")).unwrap().0);
    assert!(out.contains(size), "{out}");
}

/// The function each entry point's own function calls first (by entry point name).
fn first_callee(words: &[u32], entry: &str) -> Option<u32> {
    use rspirv::dr::Operand;
    let module = load(words).ok()?.module;
    let root = module
        .entry_points
        .iter()
        .find_map(|ep| match ep.operands.as_slice() {
            [_, Operand::IdRef(f), Operand::LiteralString(n), ..] if n == entry => Some(*f),
            _ => None,
        })?;
    let f = module
        .functions
        .iter()
        .find(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(root))?;
    f.blocks
        .iter()
        .flat_map(|b| &b.instructions)
        .find(|i| i.class.opcode == spirv::Op::FunctionCall)
        .and_then(|i| match i.operands.first() {
            Some(Operand::IdRef(c)) => Some(*c),
            _ => None,
        })
}

#[test]
fn lower_words_writes_copied_functions_as_lower_holds_them() {
    // A function shared by a vertex and a fragment entry point is copied for the vertex stage
    // (`Flat` built-ins only in the fragment interface): `lower` holds the copy in the module,
    // `lower_words` reads it back from the words it wrote for the original, renaming its ids
    // (those of the instructions it never loaded as rspirv instructions too), with, in the
    // second fixture, the parents of the phis of a loop header the rewrite splits, and in the
    // third a 64-bit `OpSwitch` whose literals only the selector's type tells apart from the
    // labels. Same words either way.
    for fixture in [
        "vertex_fragment_shared.spvasm",
        "vertex_fragment_shared_loop.spvasm",
        "vertex_fragment_shared_switch64.spvasm",
    ] {
        let path = tools::workspace_root()
            .join("fixtures/reliability")
            .join(fixture);
        let text = std::fs::read_to_string(&path).expect("fixture");
        let words = tools::assemble(&text, "vulkan1.1").unwrap();
        for target in ["vulkan1.1", "naga", "lavapipe"] {
            let what = format!("{fixture} --target {target}");
            let o = opts(target);
            if let (Err(sparse), "naga") = (lower_words(&words, &o), target) {
                // A shared function whose rewrite reads the lane id, which naga refuses in a
                // vertex shader: both forms refuse it, alike.
                let mut loaded = load(&words).unwrap();
                let held = lower(&mut loaded.module, &o).map(|_| ()).unwrap_err();
                assert!(
                    sparse.to_string().contains("a vertex entry point reaches"),
                    "{what}: {sparse}"
                );
                // (`lower_words` fills in the word offset, `lower` on a loaded module cannot.)
                assert!(
                    held.to_string().contains("a vertex entry point reaches"),
                    "{what}: {held}"
                );
                continue;
            }
            let (sparse, report) = lower_words(&words, &o).unwrap();
            assert!(report.changed, "{what}");
            let mut loaded = load(&words).unwrap();
            lower(&mut loaded.module, &o).unwrap();
            let held = assemble(loaded.module, &loaded.between_functions);
            assert_eq!(dis(&sparse), dis(&held), "{what}");
            // Version and bound alike (`lower_words` keeps the input's generator word, rspirv's
            // `assemble` writes its own), then every word.
            assert_eq!((sparse[1], sparse[3]), (held[1], held[3]), "{what}");
            assert!(sparse[5..] == held[5..], "{what}: the words differ");
            // The copy is there: the vertex stage calls another function than the fragment.
            if target == "vulkan1.1" {
                let (vs, fs) = (first_callee(&sparse, "vs"), first_callee(&sparse, "fs"));
                assert!(vs.is_some() && vs != fs, "{what}: {vs:?} {fs:?}");
            }
        }
    }
}

/// A fragment shader with a quad vote, and `RequireFullQuadsKHR` when `full_quads`; built with
/// rspirv, since spirv-as 2023.1 does not know `SPV_KHR_quad_control`.
fn quad_control_module(full_quads: bool) -> Vec<u32> {
    use rspirv::binary::Assemble;
    use spirv::{
        AddressingModel, Capability, ExecutionMode, ExecutionModel, FunctionControl, MemoryModel,
    };
    let mut b = rspirv::dr::Builder::new();
    b.set_version(1, 3);
    b.capability(Capability::Shader);
    b.capability(Capability::QuadControlKHR);
    b.extension("SPV_KHR_quad_control");
    b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
    let void = b.type_void();
    let fn_ty = b.type_function(void, vec![]);
    let boolean = b.type_bool();
    let t = b.constant_true(boolean);
    let main = b
        .begin_function(void, None, FunctionControl::NONE, fn_ty)
        .unwrap();
    b.begin_block(None).unwrap();
    b.group_non_uniform_quad_all_khr(boolean, None, t).unwrap();
    b.ret().unwrap();
    b.end_function().unwrap();
    b.entry_point(ExecutionModel::Fragment, main, "main", vec![]);
    b.execution_mode(main, ExecutionMode::OriginUpperLeft, []);
    if full_quads {
        b.execution_mode(main, ExecutionMode::RequireFullQuadsKHR, []);
    }
    b.module().assemble()
}

#[test]
fn a_quad_control_execution_mode_the_target_lacks_is_refused_naming_it() {
    // The quad vote alone is rewritten (its runs are in lower_sim.rs).
    let (out, report) = lower_words(&quad_control_module(false), &opts("vulkan1.1")).unwrap();
    assert!(report.changed);
    tools::spirv_val(&out, "vulkan1.1").unwrap();
    let text = dis(&out);
    assert!(!text.contains("QuadControlKHR"), "{text}");
    assert!(!text.contains("SPV_KHR_quad_control"), "{text}");
    // Full quads are the device's promise: refused, naming the mode, at its word offset.
    let words = quad_control_module(true);
    let err = lower_words(&words, &opts("vulkan1.1")).unwrap_err();
    let LowerError::Unsupported {
        opcode,
        word_offset,
        missing,
        ..
    } = &err
    else {
        panic!("expected Unsupported, got {err:?}");
    };
    assert_eq!(opcode, "OpExecutionMode");
    assert_eq!(
        words[*word_offset] & 0xffff,
        16,
        "the offset points at an OpExecutionMode"
    );
    assert_eq!(
        words[*word_offset + 2],
        5089,
        "the one with RequireFullQuadsKHR"
    );
    assert!(missing.contains("RequireFullQuadsKHR"), "{err}");
    // A target with quad control takes the module as it is.
    let (out, report) = lower_words(&words, &opts("nvidia")).unwrap();
    assert!(!report.changed);
    assert_eq!(out, words);
}

#[test]
fn a_workgroup_scope_group_op_is_refused_and_a_subgroup_one_lowered() {
    let module = |scope: u32| {
        format!(
            r#"
OpCapability Shader
OpCapability Groups
OpExtension "SPV_AMD_shader_ballot"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 32 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%scope = OpConstant %uint {scope}
%one = OpConstant %uint 1
%main = OpFunction %void None %fn
%entry = OpLabel
%sum = OpGroupIAdd %uint %scope Reduce %one
OpReturn
OpFunctionEnd
"#
        )
    };
    let words = tools::assemble(&module(2), "vulkan1.1").unwrap();
    let err = lower_words(&words, &opts("vulkan1.1")).unwrap_err();
    let LowerError::Unsupported {
        opcode, missing, ..
    } = &err
    else {
        panic!("expected Unsupported, got {err:?}");
    };
    assert_eq!(opcode, "OpGroupIAdd");
    assert!(missing.contains("Workgroup-scope"), "{err}");
    let words = tools::assemble(&module(3), "vulkan1.1").unwrap();
    let (out, report) = lower_words(&words, &opts("vulkan1.1")).unwrap();
    assert!(report.changed);
    let text = dis(&out);
    assert!(
        text.contains("OpGroupNonUniformIAdd %4 %5 Reduce %6"),
        "{text}"
    );
    assert!(
        !text.contains("Groups") && !text.contains("SPV_AMD_shader_ballot"),
        "{text}"
    );
    tools::spirv_val(&out, "vulkan1.1").unwrap();
}

#[test]
fn halves_move_as_16_bit_integers_only_for_a_consumer_without_resizing_bitcasts() {
    let half_keys = PARTITION_1_3
        .replace(
            "OpCapability Shader\n",
            "OpCapability Shader\nOpCapability Float16\n",
        )
        .replace("%float = OpTypeFloat 32", "%float = OpTypeFloat 16");
    let words = tools::assemble(&half_keys, "vulkan1.1").unwrap();
    let declares_int16 = |target: Target| {
        let (out, _) = lower_words(&words, &LowerOptions::new(target)).unwrap();
        tools::spirv_val(&out, "vulkan1.1").unwrap();
        dis(&out).contains("OpCapability Int16")
    };
    // Another restriction of the consumer does not ask for 16-bit integers.
    let mut no_masks = Target::preset("vulkan1.1").unwrap();
    no_masks.restrictions.no_mask_builtins = true;
    assert!(!declares_int16(no_masks.clone()));
    let mut no_resizing = no_masks;
    no_resizing.restrictions.no_resizing_bitcast = true;
    assert!(declares_int16(no_resizing));
    assert!(declares_int16(Target::preset("naga").unwrap()));
}

/// Every file under `dir` with one of the fixture extensions, sorted.
fn fixture_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("fixture folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            fixture_files(&p, out);
        } else if lower_common::is_fixture(&p) {
            out.push(p);
        }
    }
}

/// Whether `lower_words` and `lower` on a loaded module give the same module for `words`
/// (`what` names the case): `Some(true)` when both lowered it to the same words, `Some(false)`
/// when both left it unchanged or refused it alike; a panic otherwise.
fn words_and_held_agree(words: &[u32], o: &LowerOptions, what: &str) -> bool {
    let sparse = lower_words(words, o);
    let mut loaded = load(words).unwrap_or_else(|e| panic!("{what}: {e}"));
    let held = lower(&mut loaded.module, o);
    match (sparse, held) {
        (Ok((sparse, report)), Ok(_)) if report.changed => {
            let held = assemble(loaded.module, &loaded.between_functions);
            assert_eq!((sparse[1], sparse[3]), (held[1], held[3]), "{what}");
            if sparse[5..] != held[5..] {
                assert_eq!(dis(&sparse), dis(&held), "{what}");
                panic!("{what}: the words differ");
            }
            true
        }
        (Ok(_), Ok(report)) => {
            assert!(!report.changed, "{what}");
            false
        }
        // Refused alike (a loaded module has no word offsets to name).
        (Err(a), Err(b)) => {
            assert_eq!(
                std::mem::discriminant(&a),
                std::mem::discriminant(&b),
                "{what}: {a} / {b}"
            );
            false
        }
        (a, b) => panic!(
            "{what}: lower_words gave {:?}, lower {:?}",
            a.map(|r| r.1),
            b
        ),
    }
}

#[test]
fn lower_words_and_lower_agree_on_every_fixture() {
    // `lower_words` holds only what the pass reads, one function at a time (the rest stays in
    // the input's words behind placeholders, copied back as each function is written); `lower`
    // on a loaded module holds everything.
    // Both must write the same module: a placeholder in the wrong block, or an id left
    // unrenamed, shows up here.
    let mut files = Vec::new();
    fixture_files(&tools::workspace_root().join("fixtures/lower"), &mut files);
    assert!(files.len() > 40, "{} fixtures", files.len());
    let mut compared = 0;
    for path in &files {
        for target in lower_common::presets()
            .into_iter()
            .chain(lower_common::test_targets(path))
        {
            if !lower_common::wants(path, &target) {
                continue;
            }
            let words = lower_common::build(path, &target);
            let o = LowerOptions::new(target.clone());
            let what = format!("{} for {}", path.display(), target.name);
            compared += usize::from(words_and_held_agree(&words, &o, &what));
        }
    }
    assert!(compared > 100, "{compared} lowered modules compared");
}

#[test]
fn emulated_lower_words_and_lower_agree_on_every_fixture() {
    // With an emulated subgroup size `lower_words` emulates one function at a time as the
    // sparse load hands it over (`emulate_stream.rs`), `lower` emulates the loaded module
    // whole; both then lower as usual and must write the same module.
    let mut files = Vec::new();
    fixture_files(&tools::workspace_root().join("fixtures/lower"), &mut files);
    let mut compared = BTreeMap::new();
    for path in &files {
        for target in lower_common::presets() {
            if !lower_common::wants(path, &target) {
                continue;
            }
            let words = lower_common::build(path, &target);
            for n in [4, 16] {
                let o = LowerOptions::new(target.clone()).with_emulated_subgroup_size(Some(n));
                let what = format!("{} for {} emulating {n}", path.display(), target.name);
                *compared.entry(n).or_insert(0) +=
                    usize::from(words_and_held_agree(&words, &o, &what));
            }
        }
    }
    // Every size, many modules (each preset with core ballots takes most fixtures).
    for n in [4, 16] {
        let c = compared.get(&n).copied().unwrap_or(0);
        assert!(c > 100, "{c} modules emulated at {n} compared");
    }
}

/// Two functions that read `SubgroupLocalInvocationId`, with a non-semantic `OpExtInst` after
/// each (they stand between functions, where no `dr::Function` holds them).
const BETWEEN_FUNCTIONS: &str = r#"
OpCapability Shader
OpCapability GroupNonUniform
OpExtension "SPV_KHR_non_semantic_info"
%ns = OpExtInstImport "NonSemantic.Marks"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %sid
OpExecutionMode %main LocalSize 64 1 1
OpDecorate %sid BuiltIn SubgroupLocalInvocationId
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%ptr_in = OpTypePointer Input %uint
%sid = OpVariable %ptr_in Input
%ptr_priv = OpTypePointer Private %uint
%g = OpVariable %ptr_priv Private
%helper = OpFunction %void None %fn
%h0 = OpLabel
%x = OpLoad %uint %sid
OpStore %g %x
OpReturn
OpFunctionEnd
%mark1 = OpExtInst %void %ns 1
%main = OpFunction %void None %fn
%m0 = OpLabel
%c = OpFunctionCall %void %helper
%y = OpLoad %uint %sid
OpStore %g %y
OpReturn
OpFunctionEnd
%mark2 = OpExtInst %void %ns 2
"#;

#[test]
fn emulation_keeps_instructions_between_functions_in_their_places() {
    // The streaming emulation writes what stands between functions as it comes; the whole
    // module's emulation puts it back from the loader's list. Both must agree, and the marks
    // must follow the function they followed.
    let words = tools::assemble(BETWEEN_FUNCTIONS, "vulkan1.1").expect("assembles");
    let o = opts("vulkan1.1").with_emulated_subgroup_size(Some(4));
    assert!(words_and_held_agree(&words, &o, "between functions"));
    let (out, report) = lower_words(&words, &o).expect("emulated");
    assert!(
        report.rewrites.iter().any(|(k, _)| k.contains("emulated")),
        "{:?}",
        report.rewrites
    );
    tools::spirv_val(&out, "vulkan1.1").expect("spirv-val");
    // The opcodes after the header, in order: each mark right after an OpFunctionEnd.
    let mut ops = Vec::new();
    let mut at = 5;
    while let Some(&w) = out.get(at) {
        ops.push((w & 0xffff, out.get(at + 4).copied()));
        at += (w >> 16).max(1) as usize;
    }
    let (ext_inst, function_end) = (12, 56);
    let marks: Vec<u32> = ops
        .windows(2)
        .filter(|p| p[0].0 == function_end && p[1].0 == ext_inst)
        .filter_map(|p| p[1].1)
        .collect();
    assert_eq!(marks, vec![1, 2], "{}", dis(&out));
}

/// A fixture of `fixtures/reliability/`, assembled for Vulkan 1.1.
fn reliability_fixture(name: &str) -> Vec<u32> {
    let path = tools::workspace_root()
        .join("fixtures/reliability")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture");
    tools::assemble(&text, "vulkan1.1").unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn emulation_refuses_the_inputs_plain_lowering_refuses() {
    // Probe finding Q07: spirv-val 2023.1 accepts both, our validator does not, and plain
    // lowering refuses them with that finding. The emulation rewrote the bad instruction into
    // ALU code first (which our validator does not check) and exited 0; it must judge the input
    // first and refuse it with the same finding, through `lower_words`, `lower` and
    // `lower_and_verify`.
    for (fixture, rule, n) in [
        ("emulate_findlsb_of_pointer.spvasm", "SG0603", 2),
        ("emulate_khr_all_uvec4.spvasm", "SG0103", 1),
    ] {
        let words = reliability_fixture(fixture);
        let plain = opts("vulkan1.1");
        let err = spv_subgroup_lower::lower_and_verify(&words, &plain, None)
            .expect_err("plain lowering refuses the input");
        assert_eq!(
            spv_subgroup_lower::Verdict::of_verification(&err).exit_status(),
            1,
            "{fixture}: {err}"
        );
        // Plain lowering names the finding by verification (SG0603) or by the pass's own
        // refusal, beside which the CLI prints our validator's findings (SG0103).
        let found = spv_subgroup_validate::validate(
            &words,
            &spv_subgroup_validate::ValidateOptions::default().with_target_env("vulkan1.1"),
        )
        .expect("readable");
        assert_eq!(
            found.diagnostics.first().map(|d| d.rule.code()),
            Some(rule),
            "{fixture}"
        );
        let emulated = plain.with_emulated_subgroup_size(Some(n));
        let err = spv_subgroup_lower::lower_and_verify(&words, &emulated, None)
            .expect_err("the emulation refuses the input");
        assert_eq!(
            spv_subgroup_lower::Verdict::of_verification(&err).exit_status(),
            1,
            "{fixture}: {err}"
        );
        assert!(err.to_string().contains(rule), "{fixture}: {err}");
        let err = lower_words(&words, &emulated).expect_err("lower_words refuses it");
        assert!(
            matches!(err, LowerError::Invalid { .. }) && err.to_string().contains(rule),
            "{fixture}: {err}"
        );
        let mut held = load(&words).expect("load").module;
        let err = lower(&mut held, &emulated).expect_err("lower refuses it");
        assert!(err.to_string().contains(rule), "{fixture}: {err}");
    }
}

#[test]
fn emulation_drops_the_names_of_the_pointers_it_removes() {
    // Probe finding Q08: an `OpName` on an access chain into a mask, which the emulation (and
    // the naga target's mask rewrite) replaces by a whole load, stayed and named an undefined
    // id (exit 3, SG0001). The copies of `emulate_copy_object.spvasm` are named too.
    for fixture in [
        "emulate_opname_on_mask_chain.spvasm",
        "emulate_copy_object.spvasm",
    ] {
        let words = reliability_fixture(fixture);
        let mut cases: Vec<LowerOptions> = [1, 4, 8]
            .into_iter()
            .map(|n| opts("vulkan1.1").with_emulated_subgroup_size(Some(n)))
            .collect();
        if fixture == "emulate_opname_on_mask_chain.spvasm" {
            // The naga target's mask rewrite drops the chain too (it reads masks through
            // access chains, not through copies: `emulate_copy_object` is refused there).
            cases.push(opts("naga"));
        }
        for o in cases {
            let what = format!(
                "{fixture} for {} emulating {:?}",
                o.target.name, o.emulate_subgroup_size
            );
            let (out, report) = spv_subgroup_lower::lower_and_verify(&words, &o, None)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(report.changed, "{what}");
            tools::spirv_val(&out, "vulkan1.1").unwrap_or_else(|e| panic!("{what}: {e}"));
            let text = dis(&out);
            assert!(
                !text.contains("OpName %b ")
                    && !text.contains("\"lt_copy\"")
                    && !text.contains("\"q\""),
                "{what}: a dropped pointer keeps its name\n{text}"
            );
            assert!(words_and_held_agree(&words, &o, &what), "{what}");
        }
    }
}

/// A compute shader that reads `SubgroupLocalInvocationId` through `READ` (spliced into its
/// body, which ends by storing `%v` to the output).
fn builtin_read(decorations: &str, globals: &str, functions: &str, read: &str) -> String {
    format!(
        r#"OpCapability Shader
OpCapability GroupNonUniform
OpCapability VariablePointers
OpExtension "SPV_KHR_variable_pointers"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %lane
OpExecutionMode %main LocalSize 64 1 1
{decorations}
OpDecorate %arr ArrayStride 4
OpMemberDecorate %Out 0 Offset 0
OpDecorate %Out Block
OpDecorate %out DescriptorSet 0
OpDecorate %out Binding 0
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%p_in = OpTypePointer Input %uint
%fn_read = OpTypeFunction %uint %p_in
%arr = OpTypeRuntimeArray %uint
%Out = OpTypeStruct %arr
%p_out = OpTypePointer StorageBuffer %Out
%p_word = OpTypePointer StorageBuffer %uint
%uint_0 = OpConstant %uint 0
%uint_4 = OpConstant %uint 4
%true = OpConstantTrue %bool
%lane = OpVariable %p_in Input
%other = OpVariable %p_in Input
%out = OpVariable %p_out StorageBuffer
{globals}
{functions}
%main = OpFunction %void None %fn
%entry = OpLabel
{read}
%o = OpAccessChain %p_word %out %uint_0 %uint_0
OpStore %o %v
OpReturn
OpFunctionEnd
"#
    )
}

#[test]
fn emulation_refuses_a_built_in_read_it_cannot_rewrite() {
    // A pointer to the built-in passed to a function, and a select of it (variable pointers),
    // would read the hardware's lane id in the emulated module: refused, naming the instruction
    // (spirv-val rejects some of these for Vulkan; the emulation must not miss them anyway).
    let lane = "OpDecorate %lane BuiltIn SubgroupLocalInvocationId\nOpDecorate %other BuiltIn SubgroupSize";
    let callee = "%read = OpFunction %uint None %fn_read\n%param = OpFunctionParameter %p_in\n\
                  %rb = OpLabel\n%x = OpLoad %uint %param\nOpReturnValue %x\nOpFunctionEnd";
    for (what, functions, read, expect) in [
        (
            "a pointer passed to a function",
            callee,
            "%v = OpFunctionCall %uint %read %lane",
            "passed to a function",
        ),
        (
            "a select of pointers",
            "",
            "%p = OpSelect %p_in %true %lane %other\n%v = OpLoad %uint %p",
            "OpSelect of a pointer",
        ),
    ] {
        let text = builtin_read(lane, "", functions, read);
        let words = tools::assemble(&text, "spv1.3").unwrap_or_else(|e| panic!("{what}: {e}"));
        let o = opts("vulkan1.1").with_emulated_subgroup_size(Some(4));
        let err = lower_words(&words, &o).expect_err(what);
        let msg = err.to_string();
        assert!(
            matches!(err, LowerError::Unsupported { .. }) && msg.contains(expect),
            "{what}: {msg}"
        );
        let mut held = load(&words).expect("load").module;
        let held = lower(&mut held, &o).expect_err(what).to_string();
        assert!(held.contains(expect), "{what} (lower): {held}");
    }
}

#[test]
fn emulation_refuses_a_size_built_in_as_a_block_member() {
    // A subgroup built-in decorated on a structure's member is read through the block's access
    // chains, which the emulation does not follow: refused, not left to read the hardware's.
    let decorations = "OpDecorate %lane BuiltIn SubgroupLocalInvocationId\n\
                       OpMemberDecorate %blk 0 BuiltIn SubgroupSize\nOpDecorate %blk Block";
    let globals = "%blk = OpTypeStruct %uint\n%p_blk = OpTypePointer Input %blk\n\
                   %bv = OpVariable %p_blk Input";
    let read = "%c = OpAccessChain %p_in %bv %uint_0\n%v = OpLoad %uint %c";
    let text = builtin_read(decorations, globals, "", read);
    let words = tools::assemble(&text, "spv1.3").unwrap_or_else(|e| panic!("{e}"));
    let o = opts("vulkan1.1").with_emulated_subgroup_size(Some(4));
    let err = lower_words(&words, &o)
        .expect_err("a member built-in")
        .to_string();
    assert!(
        err.contains("OpMemberDecorate") && err.contains("SubgroupSize built-in as a member"),
        "{err}"
    );
}

#[test]
fn emulation_finds_a_built_in_decorated_through_a_group() {
    // `OpGroupDecorate` of a decoration group decorated `BuiltIn`: the variable is the lane id
    // as surely as with `OpDecorate`, and its load is emulated.
    let group = "%g = OpDecorationGroup\nOpDecorate %g BuiltIn SubgroupLocalInvocationId\n\
                 OpGroupDecorate %g %lane\nOpDecorate %other BuiltIn SubgroupSize";
    let text = builtin_read(group, "", "", "%v = OpLoad %uint %lane");
    // The decoration group is declared before the decorations it groups.
    let words = tools::assemble(&text, "spv1.3").unwrap_or_else(|e| panic!("{e}"));
    let o = opts("vulkan1.1").with_emulated_subgroup_size(Some(4));
    let (out, report) = lower_words(&words, &o).expect("emulated");
    assert!(
        report
            .rewrites
            .iter()
            .any(|(k, c)| k == "emulated at subgroup size 4" && *c == 1),
        "{:?}\n{}",
        report.rewrites,
        dis(&out)
    );
    assert!(dis(&out).contains("OpBitwiseAnd"), "{}", dis(&out));
}

#[test]
fn subgroup_built_ins_the_lowering_adds_to_a_ray_stage_are_volatile() {
    // A ray generation shader with partitioned ops (lowered for lavapipe, which lacks them: the
    // scan loads SubgroupLocalInvocationId and SubgroupLtMask), without and with the Vulkan
    // memory model (VUID-StandaloneSpirv-VulkanMemoryModel-04678 and 04679; SG0610).
    let dir = tempfile::tempdir().unwrap();
    for vmm in [false, true] {
        let pragma = if vmm {
            "#extension GL_KHR_memory_scope_semantics : require\n#pragma use_vulkan_memory_model\n"
        } else {
            ""
        };
        let src = dir.path().join(format!("scan{}.rgen", u8::from(vmm)));
        std::fs::write(
            &src,
            format!(
                "#version 460\n#extension GL_EXT_ray_tracing : require\n\
                 #extension GL_NV_shader_subgroup_partitioned : require\n{pragma}\
                 layout(binding = 0, std430) buffer B {{ uint d[]; }};\n\
                 void main() {{\n  uint i = gl_LaunchIDEXT.x;\n\
                 uvec4 m = subgroupPartitionNV(d[i] & 3u);\n\
                 d[i] = subgroupPartitionedInclusiveAddNV(d[i], m);\n}}\n"
            ),
        )
        .unwrap();
        let words = tools::compile_glsl(&src, "vulkan1.2").unwrap();
        let (out, report) = lower_words(&words, &opts("lavapipe")).unwrap();
        assert!(report.changed);
        tools::spirv_val(&out, "vulkan1.2").unwrap();
        let text = dis(&out);
        let report = spv_subgroup_validate::validate(
            &out,
            &spv_subgroup_validate::ValidateOptions::default().with_target_env("vulkan1.2"),
        )
        .unwrap();
        assert!(!report.has_errors(), "{:?}\n{text}", report.diagnostics);
        if vmm {
            assert!(text.contains("Volatile\n"), "a volatile load:\n{text}");
            assert!(!text.contains("OpDecorate %SubgroupLtMask"), "{text}");
        } else {
            assert!(text.contains("BuiltIn SubgroupLtMask"), "{text}");
            assert!(text.matches(" Volatile\n").count() >= 2, "{text}");
        }
    }
}
