//! `SPV_KHR_shader_ballot`'s instructions (SG0611): `OpSubgroupBallotKHR`'s Predicate is a
//! Boolean, and the Value of `OpSubgroupFirstInvocationKHR` and `OpSubgroupReadInvocationKHR`
//! has the Result Type. spirv-val 2023.1 checks neither; our lowering reads both (a ballot of a
//! `uint` became a core ballot breaking SG0603, issue 21's N9).

use spirv::Op;

use crate::module::{Cx, Scalar};
use crate::rules::common::{describe, opname};
use crate::rules::Rule;
use crate::sink::Sink;

/// Checks one KHR ballot instruction; returns at once for any other opcode.
pub(crate) fn check(cx: &Cx<'_>, i: usize, op: Op, out: &mut Sink) {
    if !matches!(
        op,
        Op::SubgroupBallotKHR | Op::SubgroupFirstInvocationKHR | Op::SubgroupReadInvocationKHR
    ) {
        return;
    }
    let m = &cx.m;
    let (Some(result_type), Some(value)) = (m.word(i, 1), m.word(i, 3)) else {
        return;
    };
    // SG0001/SG0003 report operands that are no values.
    let Some(value_type) = m.type_of(value) else {
        return;
    };
    let (wrong, want) = match op {
        Op::SubgroupBallotKHR => (
            m.scalar(value_type) != Some(Scalar::Bool),
            "Predicate must be a Boolean type.",
        ),
        Op::SubgroupFirstInvocationKHR | Op::SubgroupReadInvocationKHR => (
            value_type != result_type,
            "The type of Value must be the same as Result Type.",
        ),
        _ => return,
    };
    if wrong {
        out.emit(
            cx,
            Rule::KhrBallotOperandType,
            i,
            format!(
                "`Op{}`: {}, found {}",
                opname(op as u32),
                if op == Op::SubgroupBallotKHR {
                    "Predicate must be a Boolean scalar".to_owned()
                } else {
                    format!(
                        "Value must be of the Result Type {}",
                        describe(cx, result_type)
                    )
                },
                describe(cx, value_type)
            ),
            vec![format!("SPV_KHR_shader_ballot: \"{want}\"")],
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect};

    const BALLOT: &str = "OpCapability SubgroupBallotKHR\nOpExtension \"SPV_KHR_shader_ballot\"";

    #[test]
    fn predicate_and_value_types() {
        for (body, expect) in [
            ("%b = OpSubgroupBallotKHR %v4uint %true", Expect::Clean),
            (
                "%b = OpSubgroupBallotKHR %v4uint %uint_1",
                Expect::Has("SG0611"),
            ),
            (
                "%f = OpSubgroupFirstInvocationKHR %uint %uint_1",
                Expect::Clean,
            ),
            (
                "%f = OpSubgroupFirstInvocationKHR %uint %float_1",
                Expect::Has("SG0611"),
            ),
            (
                "%r = OpSubgroupReadInvocationKHR %float %float_1 %uint_0",
                Expect::Clean,
            ),
            (
                "%r = OpSubgroupReadInvocationKHR %float %int_3 %uint_0",
                Expect::Has("SG0611"),
            ),
        ] {
            check(&shader(BALLOT, body), "spv1.0", expect);
        }
    }
}
