//! Vote rules (SG01xx): `OpSubgroupAllKHR`, `OpSubgroupAnyKHR`, `OpSubgroupAllEqualKHR`
//! (`SPV_KHR_subgroup_vote`). Allowed from SPIR-V 1.0 and in Kernel modules.

use spirv::Capability;

use crate::module::{Cx, Ty};
use crate::rules::common::{describe, opname};
use crate::rules::Rule;
use crate::sink::Sink;

/// Checks one vote instruction: `%r = OpSubgroup*KHR %type %predicate`.
pub(crate) fn check(cx: &Cx<'_>, i: usize, out: &mut Sink) {
    let m = &cx.m;
    out.used_vote = true;
    let name = opname(m.opcode(i));
    if !m.has_cap(Capability::SubgroupVoteKHR) {
        out.emit(
            cx,
            Rule::VoteMissingCapability,
            i,
            format!("`Op{name}` needs `OpCapability SubgroupVoteKHR`, which the module does not declare"),
            vec![
                "SPV_KHR_subgroup_vote: \"The SubgroupVoteKHR capability must be declared in any module where these instructions are used.\"".into(),
                "add `OpCapability SubgroupVoteKHR` and `OpExtension \"SPV_KHR_subgroup_vote\"`, or run `spv-subgroup lower` to use core vote ops".into(),
            ],
        );
    }
    if let Some(t) = m.word(i, 1) {
        let ty = m.ty(t);
        if ty != Ty::Missing && ty != Ty::Bool {
            out.emit(
                cx,
                Rule::VoteResultType,
                i,
                format!(
                    "`Op{name}`: Result Type must be a Boolean scalar, found {}",
                    describe(cx, t)
                ),
                vec!["SPV_KHR_subgroup_vote: \"Result Type must be a Boolean type.\"".into()],
            );
        }
    }
    if let Some(p) = m.word(i, 3) {
        if let Some(pt) = m.type_of(p) {
            let ty = m.ty(pt);
            if ty != Ty::Missing && ty != Ty::Bool {
                let mut notes =
                    vec!["SPV_KHR_subgroup_vote: \"Predicate must be a Boolean type.\"".to_owned()];
                if name == "SubgroupAllEqualKHR" {
                    notes.push("to compare non-Boolean values across the subgroup use the core `OpGroupNonUniformAllEqual`".into());
                }
                out.emit(
                    cx,
                    Rule::VotePredicateType,
                    i,
                    format!(
                        "`Op{name}`: Predicate %{p} must be a Boolean scalar, found {}",
                        describe(cx, pt)
                    ),
                    notes,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect, VOTE};

    const OPS: [&str; 3] = [
        "OpSubgroupAllKHR",
        "OpSubgroupAnyKHR",
        "OpSubgroupAllEqualKHR",
    ];

    #[test]
    fn capability_is_required() {
        for op in OPS {
            let body = format!("%r = {op} %bool %true");
            check(
                &shader("OpExtension \"SPV_KHR_subgroup_vote\"", &body),
                "spv1.0",
                Expect::Has("SG0101"),
            );
            check(&shader(VOTE, &body), "spv1.0", Expect::Clean);
        }
    }

    #[test]
    fn result_and_predicate_must_be_bool_scalars() {
        let non_bool = [
            ("%uint", "%uint_1"),
            ("%float", "%float_1"),
            ("%v4bool", "%v4bool_c"),
            ("%v4uint", "%ballot_c"),
        ];
        for op in OPS {
            for (ty, val) in non_bool {
                let decl = "%v4bool_c = OpConstantComposite %v4bool %true %true %true %true";
                let header = VOTE;
                // Result type wrong, predicate fine.
                let body = format!("%r = {op} {ty} %true");
                check(&shader(header, &body), "spv1.3", Expect::Has("SG0103"));
                check(&shader(header, &body), "spv1.3", Expect::Lacks(&["SG0104"]));
                // Predicate wrong, result fine.
                let src = shader(header, &format!("%r = {op} %bool {val}"))
                    .replace("%main = OpFunction", &format!("{decl}\n%main = OpFunction"));
                check(&src, "spv1.3", Expect::Has("SG0104"));
                check(&src, "spv1.3", Expect::Lacks(&["SG0103"]));
            }
            // Neighbour: both bool, from a comparison, in SPIR-V 1.0.
            let body = format!("%c = OpIEqual %bool %uint_1 %uint_0\n%r = {op} %bool %c");
            check(&shader(VOTE, &body), "spv1.0", Expect::Clean);
        }
    }

    #[test]
    fn kernel_modules_may_vote() {
        let src = "OpCapability Addresses\nOpCapability Kernel\nOpCapability SubgroupVoteKHR\n\
OpExtension \"SPV_KHR_subgroup_vote\"\nOpMemoryModel Physical64 OpenCL\nOpEntryPoint Kernel %k \"k\"\n\
%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%bool = OpTypeBool\n%true = OpConstantTrue %bool\n\
%k = OpFunction %void None %fn\n%l = OpLabel\n%r = OpSubgroupAllEqualKHR %bool %true\nOpReturn\nOpFunctionEnd\n";
        check(src, "spv1.0", Expect::Clean);
    }
}
