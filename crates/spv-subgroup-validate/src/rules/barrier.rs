//! Barriers and atomics in a Vulkan environment (SG0609): a Subgroup memory scope needs one of the
//! capabilities that bring subgroups in (VUID-StandaloneSpirv-SubgroupVoteKHR-07951).

use spirv::{Capability as C, Op};

use crate::module::Cx;
use crate::rules::common::{memory_scope_word, opname, scope_value};
use crate::rules::Rule;
use crate::sink::Sink;

/// SG0609 on one barrier or atomic instruction.
pub(crate) fn check(cx: &Cx<'_>, i: usize, op: Op, out: &mut Sink) {
    if !cx.vulkan {
        return;
    }
    let Some(k) = memory_scope_word(op) else {
        return;
    };
    let m = &cx.m;
    let Some(scope) = m.word(i, k) else { return };
    if scope_value(cx, scope) != Some(3) {
        return;
    }
    out.subgroup_memory_scope = true;
    if [C::SubgroupVoteKHR, C::GroupNonUniform, C::SubgroupBallotKHR]
        .into_iter()
        .any(|c| m.has_cap(c))
    {
        return;
    }
    out.emit(
        cx,
        Rule::SubgroupMemoryScope,
        i,
        format!(
            "`Op{}`: the Memory scope is Subgroup, but none of SubgroupVoteKHR, GroupNonUniform or SubgroupBallotKHR is declared",
            opname(m.opcode(i))
        ),
        vec![],
    );
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect, VOTE};

    #[test]
    fn subgroup_memory_scope_needs_a_subgroup_capability_in_vulkan() {
        // Execution and Memory scope Subgroup (3), semantics None.
        let body = "OpControlBarrier %uint_3 %uint_3 %uint_0";
        let mem = "OpMemoryBarrier %uint_3 %uint_0";
        for b in [body, mem] {
            check(&shader("", b), "vulkan1.0", Expect::Has("SG0609"));
            check(&shader("", b), "vulkan1.1", Expect::Has("SG0609"));
            // Outside Vulkan the VUID does not apply.
            check(&shader("", b), "spv1.0", Expect::Lacks(&["SG0609"]));
            // Any of the three capabilities lifts it.
            check(&shader(VOTE, b), "vulkan1.0", Expect::Lacks(&["SG0609"]));
            check(
                &shader(
                    "OpCapability SubgroupBallotKHR\nOpExtension \"SPV_KHR_shader_ballot\"",
                    b,
                ),
                "vulkan1.0",
                Expect::Lacks(&["SG0609"]),
            );
            check(
                &shader("OpCapability GroupNonUniform", b),
                "vulkan1.1",
                Expect::Clean,
            );
            // Workgroup memory scope is not concerned.
            let wg = b.replacen("%uint_3", "%uint_2", 2);
            check(&shader("", &wg), "vulkan1.0", Expect::Lacks(&["SG0609"]));
        }
    }

    #[test]
    fn atomics_count_too() {
        let body = "%v = OpVariable %ptr_uint Function\n%r = OpAtomicIAdd %uint %v %uint_3 %uint_0 %uint_1";
        check(&shader("", body), "vulkan1.1", Expect::Has("SG0609"));
        check(
            &shader("OpCapability GroupNonUniform", body),
            "vulkan1.1",
            Expect::Lacks(&["SG0609"]),
        );
    }

    /// SPIRV-Tools' OpControlBarrierVulkanMemoryScopeSubgroupVoteKHR: SubgroupVoteKHR declared
    /// only to make the Subgroup memory scope legal is used, so SG0501 stays quiet (its advice,
    /// removing the capability, would make the module invalid).
    #[test]
    fn vote_capability_that_legalises_the_scope_is_not_unused() {
        let body = "OpControlBarrier %uint_3 %uint_3 %uint_0";
        check(&shader(VOTE, body), "vulkan1.0", Expect::Clean);
        // Outside Vulkan the scope needs nothing, so the capability is unused there.
        check(&shader(VOTE, body), "spv1.0", Expect::Has("SG0501"));
        // With GroupNonUniform declared as well, SubgroupVoteKHR is not what makes it legal.
        let both = format!("{VOTE}\nOpCapability GroupNonUniform");
        check(&shader(&both, body), "vulkan1.1", Expect::Has("SG0501"));
    }
}
