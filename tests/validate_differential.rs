//! Differential test against `spirv-val` (SPIRV-Tools 2023.1): on every validator fixture both
//! tools give a verdict (valid = no error-level finding / exit 0). Where they disagree the
//! disagreement must be listed in [`DOCUMENTED`] with the spec sentence that decides it; an
//! undocumented disagreement, or a documented one that no longer happens, fails the test.
//!
//! Issue 13 (a CI step never fails a valid module): every fixture, validator and lowering alike,
//! that spirv-val and the spec both call valid gets no error from us, and a grid of valid
//! modules (opcode x type x group operation x ClusterSize, 0 and 3 included) gets none either.

#[path = "validate_common.rs"]
mod common;

use spv_subgroup_tests::tools;
use spv_subgroup_validate::{render_human, validate, ValidateOptions};

/// Fixtures where we and spirv-val 2023.1 differ, and why (the spec text).
const DOCUMENTED: &[(&str, &str)] = &[
    (
        "spvasm/ray_builtin_not_volatile.spvasm",
        "VUID-StandaloneSpirv-VulkanMemoryModel-04678: \"If the VulkanMemoryModel capability is not declared, the Volatile decoration must be used on any variable declaration that includes one of the [...] SubgroupLocalInvocationId [...] BuiltIn decorations when used in the ray generation [...] shaders\". spirv-val 2023.1 does not check it.",
    ),
    (
        "spvasm/ray_builtin_vmm_load.spvasm",
        "VUID-StandaloneSpirv-VulkanMemoryModel-04679: with VulkanMemoryModel, \"the OpLoad instruction must use the Volatile memory semantics when it accesses into any variable\" with those built-ins in a ray-tracing stage. spirv-val 2023.1 does not check it.",
    ),
    (
        "spvasm/vote_result_vector.spvasm",
        "SPV_KHR_subgroup_vote, OpSubgroupAllKHR: \"Result Type must be a Boolean type.\" spirv-val does not type-check the KHR vote ops.",
    ),
    (
        "spvasm/vote_alleq_uint_predicate.spvasm",
        "SPV_KHR_subgroup_vote, OpSubgroupAllEqualKHR: \"Predicate must be a Boolean type.\" spirv-val does not type-check the KHR vote ops.",
    ),
    (
        "spvasm/partition_ext_spelling.spvasm",
        "GroupNonUniformPartitionedNV/EXT (5297) is enabled by SPV_NV_shader_subgroup_partitioned or SPV_EXT_shader_subgroup_partitioned; spirv-val 2023.1 predates the EXT extension and knows only the NV string.",
    ),
    (
        "spvasm/partition_spirv10.spvasm",
        "The partition op extends the SPIR-V 1.3 non-uniform instructions (SPV_NV_shader_subgroup_partitioned requires SPIR-V 1.3); spirv-val does not check the version for OpGroupNonUniformPartitionNV.",
    ),
    (
        "spvasm/partition_result_v3uint.spvasm",
        "SPV_NV/EXT_shader_subgroup_partitioned, OpGroupNonUniformPartitionNV: \"'Result Type' must be a 4 component vector of 32 bit integer types.\" spirv-val does not check the partition op's types.",
    ),
    (
        "spvasm/partition_value_array.spvasm",
        "SPV_NV/EXT_shader_subgroup_partitioned, OpGroupNonUniformPartitionNV: \"'Value' must be a scalar or vector type.\" spirv-val does not check the partition op's types.",
    ),
    (
        "spvasm/partitioned_ballot_64bit.spvasm",
        "SPV_EXT_shader_subgroup_partitioned: \"ballot must be a 4 component vector of 32 bit integer types.\" spirv-val 2023.1 does not check the ballot operand of partitioned group operations.",
    ),
    (
        "spvasm/partitioned_workgroup_scope.spvasm",
        "SPIR-V 1.6 revision 6, 3.3.24, the non-uniform arithmetic instructions: \"It must be Subgroup.\" (and the ballot \"must form a valid partition of the active invocations in the subgroup\"). spirv-val 2023.1 allows Workgroup outside Vulkan for every non-uniform op.",
    ),
    (
        "spvasm/partitioned_bitcount.spvasm",
        "SPV_EXT_shader_subgroup_partitioned, Validation Rules: \"The Partitioned Group Operations can only be used with the OpGroupNonUniformIAdd, ... and OpGroupNonUniformLogicalXor instructions.\" spirv-val 2023.1 accepts any group operation the capability enables.",
    ),
    (
        "spvasm/partitioned_result_family.spvasm",
        "SPIR-V 3.56.24, OpGroupNonUniformIAdd: \"Result Type must be a scalar or vector of integer type.\" spirv-val 2023.1 skips the arithmetic type checks for partitioned group operations.",
    ),
    (
        "spvasm/partitioned_umin_signed.spvasm",
        "SPIR-V 3.56.24, OpGroupNonUniformUMin: \"Result Type must be a scalar or vector of integer type, whose Signedness operand is 0.\" A partitioned group operation does not lift it; spirv-val 2023.1 skips the arithmetic type checks for partitioned group operations.",
    ),
    (
        "spvasm/partitioned_value_type.spvasm",
        "SPIR-V 3.56.24: \"The type of Value must be the same as Result Type.\" spirv-val 2023.1 skips the arithmetic type checks for partitioned group operations.",
    ),
    (
        "spvasm/partitioned_no_ballot.spvasm",
        "SPV_NV_shader_subgroup_partitioned: \"If Operation is PartitionedReduceNV, PartitionedInclusiveScanNV, or PartitionedExclusiveScanNV, ballot must be specified.\" spirv-val 2023.1 does not require it.",
    ),
    (
        "spvasm/partitioned_ballot_vec2.spvasm",
        "SPV_EXT_shader_subgroup_partitioned: \"ballot must be a 4 component vector of 32 bit integer types.\" spirv-val 2023.1 does not check the ballot operand of partitioned group operations.",
    ),
    (
        "spvasm/core_ballot_signed.spvasm",
        "SPIR-V 3.56.24, OpGroupNonUniformBallot: \"Result Type must be a vector of four components of integer type scalar, whose Width operand is 32 and whose Signedness operand is 0.\" spirv-val 2023.1 accepts a signed vector.",
    ),
    (
        "spvasm/core_clustered_no_size.spvasm",
        "SPIR-V 3.56.24: ClusterSize is the size of the cluster ClusteredReduce works on; without it the operation is incomplete. spirv-val 2023.1 does not check that it is present.",
    ),
    (
        "spvasm/core_broadcast_dynamic_id.spvasm",
        "SPIR-V 3.56.24, OpGroupNonUniformBroadcast: \"Before version 1.5, Id must come from a constant instruction.\" spirv-val 2023.1 does not check this.",
    ),
    (
        "spvasm/core_scope_workgroup_spv13.spvasm",
        "SPIR-V 1.6 revision 6, 3.3.24, every non-uniform instruction: \"It must be Subgroup.\" (no version or environment qualifier; SPIRV-Tools rejects Workgroup outside Vulkan since 2023). spirv-val 2023.1 follows the older \"Workgroup or Subgroup\".",
    ),
    (
        "spvasm/barrier_subgroup_scope_vulkan11.spvasm",
        "Vulkan, VUID-StandaloneSpirv-SubgroupVoteKHR-07951: \"If none of the SubgroupVoteKHR, GroupNonUniform, or SubgroupBallotKHR capabilities are declared, Scope for memory must not be Subgroup\" (no Vulkan version qualifier). spirv-val (2023.1 and SPIRV-Tools HEAD) checks it in a Vulkan 1.0 environment only.",
    ),
    (
        "spvasm/core_cluster_size_operand.spvasm",
        "SPIR-V 3.3.24: \"ClusterSize must be a scalar of integer type, whose Signedness operand is 0. ClusterSize must come from a constant instruction.\" spirv-val 2023.1 predates these checks (SPIRV-Tools HEAD rejects the module too).",
    ),
    (
        "spvasm/target_lavapipe_partition.spvasm",
        "Target fit is ours alone: the target (lavapipe) lacks VK_NV_shader_subgroup_partitioned, which spirv-val cannot know.",
    ),
    (
        "spvasm/target_vulkan11_vote.spvasm",
        "Target fit is ours alone: plain Vulkan 1.1 lacks VK_EXT_shader_subgroup_vote, which spirv-val cannot know.",
    ),
    (
        "spvasm/target_vulkan11_rotate.spvasm",
        "Target fit is ours alone: plain Vulkan 1.1 lacks VK_KHR_shader_subgroup_rotate (shaderSubgroupRotate), which spirv-val cannot know.",
    ),
    (
        "spvasm/target_lavapipe_rotate_clustered.spvasm",
        "Target fit is ours alone: the lavapipe target lacks VK_KHR_shader_subgroup_rotate, which spirv-val cannot know.",
    ),
    (
        "spvasm/target_vulkan11_groups.spvasm",
        "Target fit is ours alone: plain Vulkan 1.1 lacks VK_AMD_shader_ballot, the only source of the Groups capability in Vulkan, which spirv-val cannot know.",
    ),
    (
        "spvasm/target_vulkan11_amd_ballot_ext.spvasm",
        "Target fit is ours alone: plain Vulkan 1.1 lacks VK_AMD_shader_ballot, the device extension of SPV_AMD_shader_ballot's instructions, which spirv-val cannot know.",
    ),
    (
        "spvasm/khr_ballot_predicate_uint.spvasm",
        "SPV_KHR_shader_ballot, OpSubgroupBallotKHR: \"Predicate must be a Boolean type.\" spirv-val 2023.1 does not check the operand types of the KHR ballot instructions (SG0611).",
    ),
    (
        "spvasm/target_version_above.spvasm",
        "Target fit is ours alone: the khr-ballot target consumes SPIR-V 1.0 and has no KHR vote; spirv-val is run with the module's own env.",
    ),
    (
        "spvasm/target_naga_elect.spvasm",
        "Target fit is ours alone: naga's SPIR-V front end has no OpGroupNonUniformElect.",
    ),
    (
        "spvasm/target_extended_types.spvasm",
        "Target fit is ours alone: the vulkan1.1 target has no shaderSubgroupExtendedTypes, which spirv-val cannot know.",
    ),
    (
        "glsl/partitioned_on_lavapipe.comp",
        "Target fit is ours alone: lavapipe lacks partitioned ops.",
    ),
    (
        "glsl/arb_vote_on_vulkan11.frag",
        "Target fit is ours alone: plain Vulkan 1.1 lacks VK_EXT_shader_subgroup_vote.",
    ),
];

/// Lowering fixtures (paths under `fixtures/lower`) that spirv-val 2023.1 accepts but the spec
/// makes invalid: the lowering takes them as input on purpose (it repairs them).
const LOWER_SPEC_INVALID: &[(&str, &str)] = &[
    (
        "partition/khr_ballot_spv10.spvasm",
        "SPV_NV_shader_subgroup_partitioned: \"This extension requires SPIR-V 1.3.\" A SPIR-V 1.0 module with partitioned ops, which the lowering rewrites for the khr-ballot target (SG0203).",
    ),
    (
        "partitioned_arith/exec_spv10.spvasm",
        "SPV_NV_shader_subgroup_partitioned: \"This extension requires SPIR-V 1.3.\" (SG0203), as above.",
    ),
    (
        "partitioned_arith/khr_ballot_spv10.spvasm",
        "SPV_NV_shader_subgroup_partitioned: \"This extension requires SPIR-V 1.3.\" (SG0203), as above.",
    ),
];

#[test]
fn verdicts_agree_with_spirv_val_or_the_difference_is_documented() {
    tools::require("spirv-val");
    let mut undocumented = Vec::new();
    let mut stale = Vec::new();
    let mut seen = 0;
    for path in common::all_paths() {
        let f = common::load(&path);
        let ours_valid = !common::run(&f).has_errors();
        let theirs = tools::spirv_val(&f.words, &f.env);
        let theirs_valid = theirs.is_ok();
        let documented = DOCUMENTED.iter().find(|d| d.0 == f.name);
        seen += 1;
        match (ours_valid == theirs_valid, documented) {
            (true, None) => {}
            (false, Some(_)) => {}
            (false, None) => undocumented.push(format!(
                "{}: ours {}, spirv-val {} ({})",
                f.name,
                verdict(ours_valid),
                verdict(theirs_valid),
                theirs.err().unwrap_or_default().trim()
            )),
            (true, Some(_)) => stale.push(f.name.clone()),
        }
    }
    assert!(seen > 30, "only {seen} fixtures found");
    assert!(
        undocumented.is_empty(),
        "undocumented disagreements with spirv-val:\n{}",
        undocumented.join("\n")
    );
    assert!(
        stale.is_empty(),
        "documented disagreements that no longer happen (remove them): {stale:?}"
    );
    for (name, _) in DOCUMENTED {
        assert!(
            common::all_paths().iter().any(|p| p.ends_with(name)),
            "documented fixture {name} does not exist"
        );
    }
}

fn verdict(valid: bool) -> &'static str {
    if valid {
        "valid"
    } else {
        "invalid"
    }
}

/// Issue 13: no valid module gets an error. Every fixture (validator and lowering fixtures) that
/// spirv-val accepts for the environment it names, and whose spec verdict does not differ (the
/// spec-backed differences are in [`DOCUMENTED`]), validates without an error-level finding.
/// Target fit is left out: a target (`--target`) is a device, not the spec.
#[test]
fn no_error_on_modules_spirv_val_and_the_spec_call_valid() {
    tools::require("spirv-val");
    let spec_invalid = |name: &str| {
        DOCUMENTED
            .iter()
            .chain(LOWER_SPEC_INVALID)
            .any(|d| d.0 == name && !d.1.starts_with("Target fit"))
    };
    let mut checked = 0;
    let mut errors = Vec::new();
    let mut judge = |name: String, words: &[u32], env: &str| {
        if tools::spirv_val(words, env).is_err() {
            return;
        }
        checked += 1;
        let opts = ValidateOptions::default().with_target_env(env.to_owned());
        match validate(words, &opts) {
            Ok(r) if r.has_errors() => {
                errors.push(format!("{name} ({env}):\n{}", render_human(&r, &name)))
            }
            Ok(_) => {}
            Err(e) => errors.push(format!("{name} ({env}): parse error {e}")),
        }
    };
    for path in common::all_paths() {
        let f = common::load(&path);
        if !spec_invalid(&f.name) {
            judge(f.name.clone(), &f.words, &f.env);
        }
    }
    let lower_root = common::fixture_root().join("../lower");
    let mut lower_paths = Vec::new();
    for family in std::fs::read_dir(&lower_root)
        .expect("fixtures/lower")
        .flatten()
    {
        for e in std::fs::read_dir(family.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            lower_paths.push(e.path());
        }
    }
    lower_paths.sort();
    for path in lower_paths {
        let name = path
            .strip_prefix(&lower_root)
            .unwrap_or(&path)
            .display()
            .to_string();
        if spec_invalid(&name) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        match path.extension().and_then(|e| e.to_str()) {
            Some("spvasm") => {
                let env = text
                    .lines()
                    .find_map(|l| l.strip_prefix("; target-env: "))
                    .map_or("vulkan1.1", str::trim)
                    .to_owned();
                let words = tools::assemble(&text, &env).unwrap_or_else(|e| panic!("{name}: {e}"));
                judge(name, &words, &env);
            }
            Some(
                "comp" | "frag" | "vert" | "tesc" | "tese" | "geom" | "mesh" | "task" | "rgen"
                | "rchit" | "rmiss" | "rint" | "rahit" | "rcall",
            ) => {
                // The environment the fixture names (ray-tracing and mesh stages), else every
                // environment glslang builds the shader for.
                let named = text
                    .lines()
                    .find_map(|l| l.strip_prefix("// target-env: "))
                    .map(str::trim);
                let envs = named.map_or(vec!["vulkan1.0", "vulkan1.1"], |e| vec![e]);
                for env in envs {
                    if let Ok(words) = tools::compile_glsl(&path, env) {
                        judge(name.clone(), &words, env);
                    }
                }
            }
            _ => {}
        }
    }
    assert!(checked > 60, "only {checked} valid modules checked");
    // The spec-invalid lowering inputs exist and we still call them invalid (no stale entries).
    for (name, _) in LOWER_SPEC_INVALID {
        let path = lower_root.join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let words = tools::assemble(&text, "spv1.0").unwrap_or_else(|e| panic!("{name}: {e}"));
        let opts = ValidateOptions::default().with_target_env("spv1.0");
        assert!(
            validate(&words, &opts).unwrap().has_errors(),
            "{name} is listed as spec-invalid but validates"
        );
    }
    assert!(
        errors.is_empty(),
        "{} valid module(s) get errors:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

/// Issue 13: a corpus of valid modules in the style of SPIRV-Tools' non-uniform validation
/// tests (our own modules): per value type, every arithmetic opcode of its family with Reduce,
/// the scans, ClusteredReduce with ClusterSize 0, 1, 2, 3, 4 and 64 (0 and 3 are undefined
/// behaviour, not invalid), the partitioned group operations, and the other non-uniform ops.
/// spirv-val accepts each module (so the corpus is valid) and our validator reports no error.
#[test]
fn grid_of_valid_modules_has_no_errors() {
    tools::require("spirv-val");
    // (name, declaration of %T, family, unsigned).
    let types = [
        ("uint", "%T = OpTypeInt 32 0", "int", true),
        ("int", "%T = OpTypeInt 32 1", "int", false),
        ("v4uint", "%T = OpTypeVector %uint 4", "int", true),
        ("v3int", "%T = OpTypeVector %int 3", "int", false),
        ("float", "%T = OpTypeFloat 32", "float", false),
        ("v2float", "%T = OpTypeVector %float 2", "float", false),
        ("bool", "%T = OpTypeBool", "bool", false),
        ("v3bool", "%T = OpTypeVector %bool 3", "bool", false),
    ];
    let ops = |family: &str, unsigned: bool| -> Vec<&'static str> {
        let all: &[&str] = match family {
            "int" => &[
                "IAdd",
                "IMul",
                "SMin",
                "UMin",
                "SMax",
                "UMax",
                "BitwiseAnd",
                "BitwiseOr",
                "BitwiseXor",
            ],
            "float" => &["FAdd", "FMul", "FMin", "FMax"],
            _ => &["LogicalAnd", "LogicalOr", "LogicalXor"],
        };
        all.iter()
            .copied()
            .filter(|o| unsigned || !matches!(*o, "UMin" | "UMax"))
            .collect()
    };
    let mut checked = 0;
    for (name, decl, family, unsigned) in types {
        let mut body = String::from("%v = OpUndef %T\n");
        let mut n = 0;
        let mut push = |line: String| {
            n += 1;
            body.push_str(&format!("%r{n} = {line}\n"));
        };
        for op in ops(family, unsigned) {
            let i = format!("OpGroupNonUniform{op} %T %subgroup");
            for g in ["Reduce", "InclusiveScan", "ExclusiveScan"] {
                push(format!("{i} {g} %v"));
            }
            for size in ["%c0", "%c1", "%c2", "%c3", "%c4", "%c64"] {
                push(format!("{i} ClusteredReduce %v {size}"));
            }
            for g in [
                "PartitionedReduceNV",
                "PartitionedInclusiveScanNV",
                "PartitionedExclusiveScanNV",
            ] {
                push(format!("{i} {g} %v %ballot"));
            }
        }
        push("OpGroupNonUniformBroadcastFirst %T %subgroup %v".into());
        push("OpGroupNonUniformBroadcast %T %subgroup %v %c2".into());
        push("OpGroupNonUniformShuffle %T %subgroup %v %c1".into());
        push("OpGroupNonUniformShuffleXor %T %subgroup %v %c1".into());
        push("OpGroupNonUniformShuffleUp %T %subgroup %v %c1".into());
        push("OpGroupNonUniformShuffleDown %T %subgroup %v %c1".into());
        push("OpGroupNonUniformQuadBroadcast %T %subgroup %v %c3".into());
        push("OpGroupNonUniformQuadSwap %T %subgroup %v %c0".into());
        push("OpGroupNonUniformAllEqual %bool %subgroup %v".into());
        push("OpGroupNonUniformPartitionNV %v4uint %v".into());
        let src = format!(
            "OpCapability Shader\nOpCapability GroupNonUniformArithmetic\nOpCapability GroupNonUniformClustered\n\
OpCapability GroupNonUniformBallot\nOpCapability GroupNonUniformShuffle\nOpCapability GroupNonUniformShuffleRelative\n\
OpCapability GroupNonUniformQuad\nOpCapability GroupNonUniformVote\nOpCapability GroupNonUniformPartitionedNV\n\
OpExtension \"SPV_NV_shader_subgroup_partitioned\"\nOpMemoryModel Logical GLSL450\n\
OpEntryPoint GLCompute %main \"main\"\nOpExecutionMode %main LocalSize 64 1 1\n\
%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%bool = OpTypeBool\n%uint = OpTypeInt 32 0\n\
%int = OpTypeInt 32 1\n%float = OpTypeFloat 32\n%v4uint = OpTypeVector %uint 4\n{decl}\n\
%subgroup = OpConstant %uint 3\n%c0 = OpConstant %uint 0\n%c1 = OpConstant %uint 1\n%c2 = OpConstant %uint 2\n\
%c3 = OpConstant %uint 3\n%c4 = OpConstant %uint 4\n%c64 = OpConstant %uint 64\n\
%main = OpFunction %void None %fn\n%entry = OpLabel\n\
%ballot = OpGroupNonUniformBallot %v4uint %subgroup %true\n{body}OpReturn\nOpFunctionEnd\n"
        )
        .replace("%bool = OpTypeBool\n", "%bool = OpTypeBool\n%true = OpConstantTrue %bool\n");
        // A duplicate declaration of the value type (bool, uint...) would be a second type.
        let src = match name {
            "uint" | "int" | "float" | "bool" | "v4uint" => src
                .replace(&format!("{decl}\n"), "")
                .replace("%T", &format!("%{name}")),
            _ => src,
        };
        for env in ["spv1.3", "vulkan1.1"] {
            let words = tools::assemble(&src, env).unwrap_or_else(|e| panic!("{name}: {e}\n{src}"));
            if let Err(e) = tools::spirv_val(&words, env) {
                panic!("{name} ({env}): the corpus module is not valid for spirv-val: {e}\n{src}");
            }
            let opts = ValidateOptions::default().with_target_env(env.to_owned());
            let r = validate(&words, &opts).expect("parses");
            assert!(
                !r.has_errors(),
                "{name} ({env}):\n{}",
                render_human(&r, name)
            );
            // The undefined ClusterSizes (0 and 3) are still shown, as warnings.
            let undefined = r
                .diagnostics
                .iter()
                .filter(|d| d.rule.code() == "SG0606")
                .count();
            assert_eq!(undefined, 2 * ops(family, unsigned).len(), "{name} ({env})");
            checked += 1;
        }
    }
    assert_eq!(checked, 16);
}
