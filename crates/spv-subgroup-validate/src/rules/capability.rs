//! Capabilities and extensions (SG0102, SG0202, SG05xx): the capability each extension enables,
//! capabilities and extensions declared but unused, and extension strings that are near misses.

use spirv::Capability;

use crate::module::Cx;
use crate::rules::common::cap_name;
use crate::rules::Rule;
use crate::sink::Sink;

const VOTE_EXT: &str = "SPV_KHR_subgroup_vote";
const NV_EXT: &str = "SPV_NV_shader_subgroup_partitioned";
const EXT_EXT: &str = "SPV_EXT_shader_subgroup_partitioned";
const OURS: [&str; 3] = [VOTE_EXT, NV_EXT, EXT_EXT];

/// Real extensions whose names are close to ours (never reported as typos).
const KNOWN_NEIGHBOURS: &[&str] = &[
    "SPV_KHR_shader_ballot",
    "SPV_KHR_subgroup_rotate",
    "SPV_KHR_subgroup_uniform_control_flow",
    "SPV_AMD_shader_ballot",
    "SPV_NV_shader_subgroup_partitioned",
    "SPV_EXT_shader_subgroup_partitioned",
    "SPV_KHR_subgroup_vote",
    "SPV_INTEL_subgroups",
    "SPV_INTEL_subgroup_buffer_prefetch",
    "SPV_INTEL_subgroup_requirements",
    "SPV_NV_shader_sm_builtins",
    "SPV_KHR_shader_clock",
];

pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    let m = &cx.m;
    let vote_cap = m
        .caps
        .iter()
        .find(|c| c.0 == Capability::SubgroupVoteKHR as u32)
        .map(|c| c.1);
    let part_cap = m
        .caps
        .iter()
        .find(|c| c.0 == Capability::GroupNonUniformPartitionedEXT as u32)
        .map(|c| c.1);
    if let Some(at) = vote_cap {
        if !m.has_ext(VOTE_EXT) {
            out.emit(
                cx,
                Rule::VoteMissingExtension,
                at,
                "`SubgroupVoteKHR` is declared without `OpExtension \"SPV_KHR_subgroup_vote\"`".into(),
                vec!["SPV_KHR_subgroup_vote: \"the following OpExtension must be present in the module: OpExtension \"SPV_KHR_subgroup_vote\"\"".into()],
            );
        }
        // In Vulkan a Subgroup memory scope needs SubgroupVoteKHR when neither GroupNonUniform
        // nor SubgroupBallotKHR is declared (VUID-StandaloneSpirv-SubgroupVoteKHR-07951):
        // removing it, as SG0501 advises, would break the module.
        let keeps_scope_legal = out.subgroup_memory_scope
            && !m.has_cap(Capability::GroupNonUniform)
            && !m.has_cap(Capability::SubgroupBallotKHR);
        if !out.used_vote && !keeps_scope_legal {
            out.emit(
                cx,
                Rule::UnusedCapability,
                at,
                "`SubgroupVoteKHR` is declared but no OpSubgroupAllKHR/AnyKHR/AllEqualKHR uses it".into(),
                vec!["remove the OpCapability (and its OpExtension): devices without the capability reject the module".into()],
            );
        }
    }
    if let Some(at) = part_cap {
        if !m.has_ext(NV_EXT) && !m.has_ext(EXT_EXT) {
            out.emit(
                cx,
                Rule::PartitionMissingExtension,
                at,
                format!(
                    "`{}` is declared without `OpExtension \"{NV_EXT}\"` or `\"{EXT_EXT}\"`",
                    cap_name(cx)
                ),
                vec![
                    "the capability is enabled by either spelling of the partitioned extension"
                        .into(),
                ],
            );
        }
        if !out.used_partition {
            out.emit(
                cx,
                Rule::UnusedCapability,
                at,
                format!("`{}` is declared but no partition op or partitioned group operation uses it", cap_name(cx)),
                vec!["remove the OpCapability (and its OpExtension): devices without the capability reject the module".into()],
            );
        }
    }
    for (name, at) in &m.exts {
        let at = *at;
        let unused = match name.as_str() {
            VOTE_EXT => vote_cap.is_none().then_some("SubgroupVoteKHR"),
            NV_EXT | EXT_EXT => part_cap
                .is_none()
                .then_some("GroupNonUniformPartitionedNV/EXT"),
            _ => None,
        };
        if let Some(cap) = unused {
            out.emit(
                cx,
                Rule::UnusedExtension,
                at,
                format!("`OpExtension \"{name}\"` is declared but the capability it enables (`{cap}`) is not"),
                vec!["remove the OpExtension, or declare the capability if the instructions are meant to be used".into()],
            );
            continue;
        }
        if KNOWN_NEIGHBOURS.contains(&name.as_str()) {
            continue;
        }
        if let Some(meant) = near_miss(name) {
            out.emit(
                cx,
                Rule::ExtensionNearMiss,
                at,
                format!("unknown extension `\"{name}\"`: did you mean `\"{meant}\"`?"),
                vec![
                    "extension names are compared exactly; this one enables nothing we know of"
                        .into(),
                ],
            );
        }
    }
}

/// The extension of ours that `name` is a near miss of (small edit distance, or equal ignoring case).
pub(crate) fn near_miss(name: &str) -> Option<&'static str> {
    if name.len() > 80 {
        return None;
    }
    OURS.iter().copied().find(|ours| {
        let d = edit_distance(&name.to_ascii_lowercase(), &ours.to_ascii_lowercase());
        *ours != name && (d <= 3)
    })
}

/// Levenshtein distance over bytes.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::testutil::{check, shader, Expect, PART, VOTE};

    #[test]
    fn vote_capability_needs_its_extension() {
        let body = "%r = OpSubgroupAnyKHR %bool %true";
        check(
            &shader("OpCapability SubgroupVoteKHR", body),
            "spv1.0",
            Expect::Has("SG0102"),
        );
        check(&shader(VOTE, body), "spv1.0", Expect::Clean);
    }

    #[test]
    fn partition_capability_needs_nv_or_ext() {
        let body = "%p = OpGroupNonUniformPartitionNV %v4uint %uint_1";
        check(
            &shader("OpCapability GroupNonUniformPartitionedNV", body),
            "spv1.3",
            Expect::Has("SG0202"),
        );
        for ext in [NV_EXT, EXT_EXT] {
            let header =
                format!("OpCapability GroupNonUniformPartitionedNV\nOpExtension \"{ext}\"");
            check(&shader(&header, body), "spv1.3", Expect::Clean);
        }
    }

    #[test]
    fn unused_capabilities_and_extensions() {
        check(&shader(VOTE, ""), "spv1.3", Expect::Has("SG0501"));
        check(&shader(PART, ""), "spv1.3", Expect::Has("SG0501"));
        for ext in OURS {
            check(
                &shader(&format!("OpExtension \"{ext}\""), ""),
                "spv1.3",
                Expect::Has("SG0502"),
            );
        }
        // Used: no warning (covered by the vote and partition tests' Clean expectations too).
        check(
            &shader(VOTE, "%r = OpSubgroupAllKHR %bool %true"),
            "spv1.3",
            Expect::Lacks(&["SG0501", "SG0502"]),
        );
        // A partitioned reduce alone uses the capability.
        check(
            &shader(
                PART,
                "%r = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %ballot_c",
            ),
            "spv1.3",
            Expect::Lacks(&["SG0501"]),
        );
    }

    #[test]
    fn near_misses_warn() {
        for typo in [
            "SPV_KHR_subgroup_votes",
            "SPV_KHR_subgroups_vote",
            "spv_khr_subgroup_vote",
            "SPV_NV_shader_subgroup_partitioned_",
            "SPV_NV_shader_subgroup_partitoned",
            "SPV_EXT_shader_subgrup_partitioned",
        ] {
            check(
                &shader(&format!("OpExtension \"{typo}\""), ""),
                "spv1.3",
                Expect::Has("SG0503"),
            );
        }
        for other in [
            "SPV_KHR_shader_ballot",
            "SPV_KHR_subgroup_rotate",
            "SPV_KHR_storage_buffer_storage_class",
            "SPV_KHR_16bit_storage",
        ] {
            check(
                &shader(&format!("OpExtension \"{other}\""), ""),
                "spv1.3",
                Expect::Clean,
            );
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(near_miss(VOTE_EXT), None);
    }
}
