//! Differential test against `spirv-val` (SPIRV-Tools 2023.1): on every validator fixture both
//! tools give a verdict (valid = no error-level finding / exit 0). Where they disagree the
//! disagreement must be listed in [`DOCUMENTED`] with the spec sentence that decides it; an
//! undocumented disagreement, or a documented one that no longer happens, fails the test.

#[path = "validate_common.rs"]
mod common;

use spv_subgroup_tests::tools;

/// Fixtures where we and spirv-val 2023.1 differ, and why (the spec text).
const DOCUMENTED: &[(&str, &str)] = &[
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
        "spvasm/partition_result_ivec4.spvasm",
        "OpGroupNonUniformPartitionNV: \"Result Type must be a vector of four components of integer type scalar, whose Width operand is 32 and whose Signedness operand is 0.\" spirv-val does not check the partition op's types.",
    ),
    (
        "spvasm/partition_value_array.spvasm",
        "OpGroupNonUniformPartitionNV: \"Value must be a scalar or vector of floating-point type, integer type, or Boolean type.\" spirv-val does not check the partition op's types.",
    ),
    (
        "spvasm/partitioned_ballot_64bit.spvasm",
        "The partitioned functions take a `uvec4` ballot (GL_NV_shader_subgroup_partitioned: `subgroupPartitioned<op>NV(genType value, uvec4 ballot)`): four 32-bit components. spirv-val 2023.1 does not check the ballot operand of partitioned group operations.",
    ),
    (
        "spvasm/partitioned_workgroup_scope.spvasm",
        "GL_NV_shader_subgroup_partitioned: the ballot \"must form a valid partition of the active invocations in the subgroup\": a partitioned operation is a subgroup operation. spirv-val allows Workgroup outside Vulkan for every non-uniform op.",
    ),
    (
        "spvasm/partitioned_bitcount.spvasm",
        "GL_NV_shader_subgroup_partitioned maps only subgroupPartitioned{,Inclusive,Exclusive}<op>NV (Add, Mul, Min, Max, And, Or, Xor) to the partitioned group operations; OpGroupNonUniformBallotBitCount takes Reduce, InclusiveScan or ExclusiveScan. spirv-val 2023.1 accepts any group operation the capability enables.",
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
        "GL_NV_shader_subgroup_partitioned, Mapping to SPIR-V: \"When using GroupOperationPartitioned*, the <ballot> parameter is the last operand\". spirv-val 2023.1 does not require it.",
    ),
    (
        "spvasm/partitioned_ballot_vec2.spvasm",
        "The partitioned functions take a `uvec4` ballot (GL_NV_shader_subgroup_partitioned: `subgroupPartitioned<op>NV(genType value, uvec4 ballot)`). spirv-val 2023.1 does not check the ballot operand of partitioned group operations.",
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
        "spvasm/target_lavapipe_partition.spvasm",
        "Target fit is ours alone: the target (lavapipe) lacks VK_NV_shader_subgroup_partitioned, which spirv-val cannot know.",
    ),
    (
        "spvasm/target_vulkan11_vote.spvasm",
        "Target fit is ours alone: plain Vulkan 1.1 lacks VK_EXT_shader_subgroup_vote, which spirv-val cannot know.",
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
