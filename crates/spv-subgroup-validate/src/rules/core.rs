//! Core non-uniform rules (SG06xx) for the instructions the lowering emits (and users write):
//! capability, execution scope, result/operand types, group operation, SPIR-V version.
//! Partitioned reduce/scans are checked by `partitioned_arith` instead.

use spirv::{Capability as C, Op};

use crate::module::{Cx, Scalar};
use crate::rules::common::{
    cap_text, describe, family, family_text, fits, group_op_name, is_constant, is_unsigned,
    needs_unsigned, opname, scope_name, scope_value,
};
use crate::rules::Rule;
use crate::sink::Sink;

/// What an operand must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Want {
    Bool,
    /// A vector of four 32-bit unsigned integers.
    Ballot,
    /// A scalar integer (unsigned when the flag is set).
    IntScalar(bool),
    /// Same type as the result.
    SameAsResult,
    /// Any scalar or vector of int, float or bool.
    AnyScalarOrVector,
}

/// (capability, result type, operands after the scope) per opcode; None for ops not handled here.
fn shape(op: Op) -> Option<(C, Want, &'static [Want])> {
    use Want::*;
    Some(match op {
        Op::GroupNonUniformElect => (C::GroupNonUniform, Bool, &[]),
        Op::GroupNonUniformAll | Op::GroupNonUniformAny => (C::GroupNonUniformVote, Bool, &[Bool]),
        Op::GroupNonUniformAllEqual => (C::GroupNonUniformVote, Bool, &[AnyScalarOrVector]),
        Op::GroupNonUniformBroadcast => (
            C::GroupNonUniformBallot,
            AnyScalarOrVector,
            &[SameAsResult, IntScalar(true)],
        ),
        Op::GroupNonUniformBroadcastFirst => {
            (C::GroupNonUniformBallot, AnyScalarOrVector, &[SameAsResult])
        }
        Op::GroupNonUniformBallot => (C::GroupNonUniformBallot, Ballot, &[Bool]),
        Op::GroupNonUniformInverseBallot => (C::GroupNonUniformBallot, Bool, &[Ballot]),
        Op::GroupNonUniformBallotBitExtract => {
            (C::GroupNonUniformBallot, Bool, &[Ballot, IntScalar(true)])
        }
        Op::GroupNonUniformBallotFindLSB | Op::GroupNonUniformBallotFindMSB => {
            (C::GroupNonUniformBallot, IntScalar(true), &[Ballot])
        }
        Op::GroupNonUniformShuffle | Op::GroupNonUniformShuffleXor => (
            C::GroupNonUniformShuffle,
            AnyScalarOrVector,
            &[SameAsResult, IntScalar(true)],
        ),
        Op::GroupNonUniformShuffleUp | Op::GroupNonUniformShuffleDown => (
            C::GroupNonUniformShuffleRelative,
            AnyScalarOrVector,
            &[SameAsResult, IntScalar(true)],
        ),
        Op::GroupNonUniformQuadBroadcast => (
            C::GroupNonUniformQuad,
            AnyScalarOrVector,
            &[SameAsResult, IntScalar(true)],
        ),
        Op::GroupNonUniformQuadSwap => (
            C::GroupNonUniformQuad,
            AnyScalarOrVector,
            &[SameAsResult, IntScalar(true)],
        ),
        _ => return None,
    })
}

fn satisfies(cx: &Cx<'_>, want: Want, t: u32, result: u32) -> bool {
    let m = &cx.m;
    match want {
        Want::Bool => m.scalar(t) == Some(Scalar::Bool),
        Want::Ballot => m.is_ballot_type(t, true),
        Want::IntScalar(unsigned) => {
            matches!(m.scalar(t), Some(Scalar::Int { signed, .. }) if !(unsigned && signed))
        }
        Want::SameAsResult => t == result,
        Want::AnyScalarOrVector => m.scalar_or_vector(t).is_some(),
    }
}

fn want_text(want: Want) -> &'static str {
    match want {
        Want::Bool => "a Boolean scalar",
        Want::Ballot => "a vector of four 32-bit unsigned integers",
        Want::IntScalar(true) => "an unsigned integer scalar",
        Want::IntScalar(false) => "an integer scalar",
        Want::SameAsResult => "of the Result Type",
        Want::AnyScalarOrVector => "a scalar or vector of integer, floating-point or Boolean type",
    }
}

/// SG0602: the Execution operand (word 3).
///
/// The unified SPIR-V specification (1.6 revision 6) says of every instruction checked here
/// "It must be Subgroup." with no version or environment qualifier, so Workgroup is reported in
/// every environment (SPIRV-Tools does the same since 2023; the Debian spirv-val 2023.1 still
/// accepts Workgroup outside Vulkan, a documented difference). Vulkan names the rule too
/// (VUID-StandaloneSpirv-None-04642).
fn check_scope(cx: &Cx<'_>, i: usize, name: &str, out: &mut Sink) {
    let Some(scope) = cx.m.word(i, 3) else { return };
    let found = match scope_value(cx, scope) {
        Some(3) => return,
        Some(v) => format!("found {}", scope_name(v)),
        None => format!("%{scope} is not an OpConstant of 32-bit integer type"),
    };
    // In Vulkan the VUID note is added with the finding; elsewhere the spec sentence is the note.
    let notes = if cx.vulkan {
        vec![]
    } else {
        vec!["SPIR-V 3.3.24: \"It must be Subgroup.\"".to_owned()]
    };
    out.emit(
        cx,
        Rule::CoreScope,
        i,
        format!("`Op{name}`: Execution must be the constant Subgroup (3); {found}"),
        notes,
    );
}

/// Checks one core non-uniform instruction (not a partitioned reduce/scan).
pub(crate) fn check(cx: &Cx<'_>, i: usize, out: &mut Sink) {
    let m = &cx.m;
    let Some(op) = crate::binary::op_of(m.opcode(i)) else {
        return;
    };
    let name = opname(m.opcode(i));
    out.count_core(i);
    check_scope(cx, i, name, out);
    let Some(rt) = m.word(i, 1) else { return };
    let rt_known = m.type_known(rt);
    let type_err =
        |out: &mut Sink, msg: String| out.emit(cx, Rule::CoreOperandType, i, msg, vec![]);
    if let Some(fam) = family(m.opcode(i)) {
        // Arithmetic: Reduce/scans/ClusteredReduce.
        let g = m.word(i, 4).unwrap_or(0);
        let cap = match g {
            0..=2 => C::GroupNonUniformArithmetic,
            3 => C::GroupNonUniformClustered,
            _ => {
                out.emit(
                    cx,
                    Rule::CoreGroupOperation,
                    i,
                    format!(
                        "`Op{name}`: {} ({g}) is not a group operation of this instruction",
                        group_op_name(g)
                    ),
                    vec![],
                );
                C::GroupNonUniformArithmetic
            }
        };
        require(cx, i, name, cap, out);
        let cluster = m.word(i, 6);
        match (g, cluster) {
            (3, None) => out.emit(
                cx,
                Rule::CoreGroupOperation,
                i,
                format!("`Op{name}` with ClusteredReduce needs a ClusterSize operand"),
                vec![],
            ),
            (3, Some(c)) => check_cluster_size(cx, i, name, c, out),
            (0..=2, Some(_)) => out.emit(
                cx,
                Rule::CoreGroupOperation,
                i,
                format!(
                    "`Op{name}`: ClusterSize is allowed only with ClusteredReduce, not {}",
                    group_op_name(g)
                ),
                vec![],
            ),
            _ => {}
        }
        if rt_known && !fits(cx, fam, rt) {
            type_err(
                out,
                format!(
                    "`Op{name}`: Result Type must be {}, found {}",
                    family_text(fam),
                    describe(cx, rt)
                ),
            );
        } else if rt_known && needs_unsigned(op) && !is_unsigned(cx, rt) {
            type_err(
                out,
                format!(
                    "`Op{name}`: Result Type must be a scalar or vector of integer type whose Signedness operand is 0, found {}",
                    describe(cx, rt)
                ),
            );
        }
        if let Some(vt) = m.word(i, 5).and_then(|v| m.type_of(v)) {
            if rt_known && m.type_known(vt) && vt != rt {
                type_err(
                    out,
                    format!(
                        "`Op{name}`: the type of Value ({}) must be the Result Type ({})",
                        describe(cx, vt),
                        describe(cx, rt)
                    ),
                );
            }
        }
        return;
    }
    if op == Op::GroupNonUniformBallotBitCount {
        require(cx, i, name, C::GroupNonUniformBallot, out);
        let g = m.word(i, 4).unwrap_or(0);
        // Only Vulkan restricts it (VUID 04685); the core spec has no such sentence.
        if g > 2 && cx.vulkan {
            out.emit(
                cx,
                Rule::BallotBitCountGroupOperation,
                i,
                format!(
                    "`Op{name}` takes Reduce, InclusiveScan or ExclusiveScan, not {} ({g})",
                    group_op_name(g)
                ),
                vec![],
            );
        }
        if rt_known && !satisfies(cx, Want::IntScalar(true), rt, rt) {
            type_err(
                out,
                format!(
                    "`Op{name}`: Result Type must be an unsigned integer scalar, found {}",
                    describe(cx, rt)
                ),
            );
        }
        if let Some(vt) = m.word(i, 5).and_then(|v| m.type_of(v)) {
            if m.type_known(vt) && !m.is_ballot_type(vt, true) {
                type_err(out, format!("`Op{name}`: Value must be a vector of four 32-bit unsigned integers, found {}", describe(cx, vt)));
            }
        }
        return;
    }
    let Some((cap, want_r, operands)) = shape(op) else {
        return;
    };
    require(cx, i, name, cap, out);
    if rt_known && !satisfies(cx, want_r, rt, rt) {
        type_err(
            out,
            format!(
                "`Op{name}`: Result Type must be {}, found {}",
                want_text(want_r),
                describe(cx, rt)
            ),
        );
    }
    for (k, want) in operands.iter().enumerate() {
        let Some(id) = m.word(i, 4 + k) else {
            type_err(out, format!("`Op{name}` is missing an operand"));
            break;
        };
        let Some(t) = m.type_of(id) else { continue };
        if !m.type_known(t) || (*want == Want::SameAsResult && !rt_known) {
            continue;
        }
        if k == 1
            && matches!(
                op,
                Op::GroupNonUniformBroadcast | Op::GroupNonUniformQuadBroadcast
            )
            && m.version_pair() < (1, 5)
            && !is_constant(cx, id)
        {
            type_err(
                out,
                format!("`Op{name}`: before SPIR-V 1.5 the Id/Index operand %{id} must come from a constant instruction"),
            );
        }
        // OpGroupNonUniformQuadSwap: "Direction must come from a constant instruction."
        if k == 1 && op == Op::GroupNonUniformQuadSwap && !is_constant(cx, id) {
            type_err(
                out,
                format!(
                    "`Op{name}`: the Direction operand %{id} must come from a constant instruction"
                ),
            );
        }
        if !satisfies(cx, *want, t, rt) {
            type_err(
                out,
                format!(
                    "`Op{name}`: operand %{id} must be {}, found {}",
                    want_text(*want),
                    describe(cx, t)
                ),
            );
        }
    }
}

/// The ClusterSize operand of a ClusteredReduce: its type and constness make the module valid or
/// not (SG0605); its value only makes execution undefined (SG0606, SG0607 with a target).
fn check_cluster_size(cx: &Cx<'_>, i: usize, name: &str, c: u32, out: &mut Sink) {
    let m = &cx.m;
    let group_op =
        |out: &mut Sink, msg: String| out.emit(cx, Rule::CoreGroupOperation, i, msg, vec![]);
    if let Some(t) = m.type_of(c) {
        if m.type_known(t) && !matches!(m.scalar(t), Some(Scalar::Int { signed: false, .. })) {
            group_op(
                out,
                format!(
                    "`Op{name}`: ClusterSize must be a scalar of integer type whose Signedness operand is 0, found {}",
                    describe(cx, t)
                ),
            );
        }
    }
    if !is_constant(cx, c) {
        group_op(
            out,
            format!("`Op{name}`: ClusterSize %{c} must come from a constant instruction"),
        );
        return;
    }
    // A specialization constant's value is not known here; only OpConstant is judged.
    let Some(v) = m.const_u32(c) else { return };
    if v == 0 || !v.is_power_of_two() {
        out.emit(
            cx,
            Rule::ClusterSizeUndefined,
            i,
            format!("`Op{name}`: ClusterSize is {v}; behavior is undefined unless ClusterSize is at least 1 and a power of 2"),
            vec![],
        );
    }
    if let Some(t) = cx.target {
        if v > t.max_subgroup_size {
            out.emit(
                cx,
                Rule::ClusterSizeAboveSubgroup,
                i,
                format!(
                    "`Op{name}`: ClusterSize {v} is greater than the largest subgroup of target `{}` ({}); executing it is undefined behaviour",
                    t.name, t.max_subgroup_size
                ),
                vec![],
            );
        }
    }
}

fn require(cx: &Cx<'_>, i: usize, name: &str, cap: C, out: &mut Sink) {
    if !cx.m.has_cap(cap) {
        out.emit(
            cx,
            Rule::CoreMissingCapability,
            i,
            format!(
                "`Op{name}` needs `OpCapability {}`, which the module does not declare",
                cap_text(cx, cap)
            ),
            vec![],
        );
    }
}

/// SG0604: core non-uniform instructions need SPIR-V 1.3.
pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    let m = &cx.m;
    if m.version_pair() >= (1, 3) {
        return;
    }
    if let Some((at, count)) = out.core_insts {
        let (maj, min) = m.version_pair();
        out.emit(
            cx,
            Rule::CoreSpirvVersion,
            at,
            format!(
                "`Op{}` needs SPIR-V 1.3 or later, but the module is SPIR-V {maj}.{min}",
                opname(m.opcode(at))
            ),
            vec![format!(
                "{count} core non-uniform instruction(s) in the module"
            )],
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect};

    const ALL_CAPS: &str = "OpCapability GroupNonUniform\nOpCapability GroupNonUniformVote\nOpCapability GroupNonUniformBallot\nOpCapability GroupNonUniformShuffle\nOpCapability GroupNonUniformShuffleRelative\nOpCapability GroupNonUniformArithmetic\nOpCapability GroupNonUniformClustered\nOpCapability GroupNonUniformQuad";

    /// (instruction, capability it needs) pairs that are well typed.
    fn good() -> Vec<(&'static str, &'static str)> {
        vec![
            (
                "%r = OpGroupNonUniformElect %bool %uint_3",
                "GroupNonUniform",
            ),
            (
                "%r = OpGroupNonUniformAll %bool %uint_3 %true",
                "GroupNonUniformVote",
            ),
            (
                "%r = OpGroupNonUniformAny %bool %uint_3 %true",
                "GroupNonUniformVote",
            ),
            (
                "%r = OpGroupNonUniformAllEqual %bool %uint_3 %float_1",
                "GroupNonUniformVote",
            ),
            (
                "%r = OpGroupNonUniformBroadcast %uint %uint_3 %uint_1 %uint_0",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBroadcastFirst %v4uint %uint_3 %ballot_c",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallot %v4uint %uint_3 %true",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformInverseBallot %bool %uint_3 %ballot_c",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallotBitExtract %bool %uint_3 %ballot_c %uint_1",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallotBitCount %uint %uint_3 Reduce %ballot_c",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallotFindLSB %uint %uint_3 %ballot_c",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallotFindMSB %uint %uint_3 %ballot_c",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformShuffle %float %uint_3 %float_1 %uint_1",
                "GroupNonUniformShuffle",
            ),
            (
                "%r = OpGroupNonUniformShuffleXor %bool %uint_3 %true %uint_1",
                "GroupNonUniformShuffle",
            ),
            (
                "%r = OpGroupNonUniformShuffleUp %uint %uint_3 %uint_1 %uint_1",
                "GroupNonUniformShuffleRelative",
            ),
            (
                "%r = OpGroupNonUniformShuffleDown %uint %uint_3 %uint_1 %uint_1",
                "GroupNonUniformShuffleRelative",
            ),
            (
                "%r = OpGroupNonUniformIAdd %uint %uint_3 Reduce %uint_1",
                "GroupNonUniformArithmetic",
            ),
            (
                "%r = OpGroupNonUniformFMax %float %uint_3 InclusiveScan %float_1",
                "GroupNonUniformArithmetic",
            ),
            (
                "%r = OpGroupNonUniformLogicalXor %bool %uint_3 ExclusiveScan %true",
                "GroupNonUniformArithmetic",
            ),
            (
                "%r = OpGroupNonUniformUMin %uint %uint_3 ClusteredReduce %uint_1 %uint_2",
                "GroupNonUniformClustered",
            ),
            (
                "%r = OpGroupNonUniformQuadBroadcast %uint %uint_3 %uint_1 %uint_2",
                "GroupNonUniformQuad",
            ),
            (
                "%r = OpGroupNonUniformQuadSwap %uint %uint_3 %uint_1 %uint_2",
                "GroupNonUniformQuad",
            ),
        ]
    }

    #[test]
    fn well_typed_ops_with_their_capability_pass() {
        for (inst, cap) in good() {
            check(
                &shader(&format!("OpCapability {cap}"), inst),
                "vulkan1.1",
                Expect::Clean,
            );
        }
    }

    #[test]
    fn capability_is_required() {
        for (inst, cap) in good() {
            let others: String = ALL_CAPS
                .lines()
                .filter(|l| !l.ends_with(&format!(" {cap}")))
                .collect::<Vec<_>>()
                .join("\n");
            if cap == "GroupNonUniform" {
                // Every other non-uniform capability implies GroupNonUniform.
                check(&shader("", inst), "spv1.3", Expect::Has("SG0601"));
                continue;
            }
            check(&shader(&others, inst), "spv1.3", Expect::Has("SG0601"));
        }
    }

    #[test]
    fn scope_is_checked() {
        for (inst, cap) in good() {
            let header = format!("OpCapability {cap}");
            let wg = inst.replacen("%uint_3", "%uint_2", 1);
            check(&shader(&header, &wg), "vulkan1.1", Expect::Has("SG0602"));
            // The current spec has no Workgroup exception outside Vulkan either.
            check(&shader(&header, &wg), "spv1.3", Expect::Has("SG0602"));
            let dev = inst.replacen("%uint_3", "%uint_1", 1);
            check(&shader(&header, &dev), "spv1.3", Expect::Has("SG0602"));
        }
    }

    /// A scope is an OpConstant of 32-bit integer type; a 64-bit constant 3 is not one.
    #[test]
    fn scope_is_a_32_bit_constant() {
        let h = "OpCapability GroupNonUniform\nOpCapability Int64";
        let body = "%r = OpGroupNonUniformElect %bool %sg64";
        let src = shader(h, body).replace(
            "%uint_3 = OpConstant %uint 3\n",
            "%uint_3 = OpConstant %uint 3\n%ulong = OpTypeInt 64 0\n%sg64 = OpConstant %ulong 3\n",
        );
        check(&src, "spv1.3", Expect::Has("SG0602"));
    }

    #[test]
    fn types_are_checked() {
        let bad = [
            (
                "%r = OpGroupNonUniformElect %uint %uint_3",
                "GroupNonUniform",
            ),
            (
                "%r = OpGroupNonUniformAll %bool %uint_3 %uint_1",
                "GroupNonUniformVote",
            ),
            (
                "%r = OpGroupNonUniformAny %uint %uint_3 %true",
                "GroupNonUniformVote",
            ),
            (
                "%r = OpGroupNonUniformBroadcast %uint %uint_3 %float_1 %uint_0",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBroadcast %uint %uint_3 %uint_1 %float_1",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallot %v4int %uint_3 %true",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallot %v4uint %uint_3 %uint_1",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallotBitCount %int %uint_3 Reduce %ballot_c",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformBallotFindLSB %uint %uint_3 %uint_1",
                "GroupNonUniformBallot",
            ),
            (
                "%r = OpGroupNonUniformShuffle %uint %uint_3 %uint_1 %int_3",
                "GroupNonUniformShuffle",
            ),
            (
                "%r = OpGroupNonUniformShuffleDown %float %uint_3 %uint_1 %uint_1",
                "GroupNonUniformShuffleRelative",
            ),
            (
                "%r = OpGroupNonUniformIAdd %float %uint_3 Reduce %float_1",
                "GroupNonUniformArithmetic",
            ),
            (
                "%r = OpGroupNonUniformFAdd %float %uint_3 Reduce %uint_1",
                "GroupNonUniformArithmetic",
            ),
        ];
        for (inst, cap) in bad {
            check(
                &shader(&format!("OpCapability {cap}"), inst),
                "spv1.3",
                Expect::Has("SG0603"),
            );
        }
    }

    #[test]
    fn broadcast_id_is_constant_before_1_5() {
        let h = "OpCapability GroupNonUniformBallot";
        let body = "%id = OpIAdd %uint %uint_1 %uint_0\n%r = OpGroupNonUniformBroadcast %uint %uint_3 %uint_1 %id";
        check(&shader(h, body), "spv1.3", Expect::Has("SG0603"));
        check(&shader(h, body), "spv1.5", Expect::Clean);
        let q = "OpCapability GroupNonUniformQuad";
        let body = "%id = OpIAdd %uint %uint_1 %uint_0\n%r = OpGroupNonUniformQuadBroadcast %uint %uint_3 %uint_1 %id";
        check(&shader(q, body), "spv1.4", Expect::Has("SG0603"));
    }

    #[test]
    fn group_operations() {
        let h = "OpCapability GroupNonUniformClustered\nOpCapability GroupNonUniformArithmetic";
        check(
            &shader(
                h,
                "%r = OpGroupNonUniformIAdd %uint %uint_3 ClusteredReduce %uint_1",
            ),
            "spv1.3",
            Expect::Has("SG0605"),
        );
        // ClusterSize 3: valid, undefined behaviour at run time (issue 13).
        check(
            &shader(
                h,
                "%r = OpGroupNonUniformIAdd %uint %uint_3 ClusteredReduce %uint_1 %uint_3",
            ),
            "spv1.3",
            Expect::Has("SG0606"),
        );
        check(
            &shader(
                h,
                "%r = OpGroupNonUniformIAdd %uint %uint_3 Reduce %uint_1 %uint_2",
            ),
            "spv1.3",
            Expect::Has("SG0605"),
        );
        check(
            &shader(
                h,
                "%r = OpGroupNonUniformIAdd %uint %uint_3 ClusteredReduce %uint_1 %uint_2",
            ),
            "spv1.3",
            Expect::Clean,
        );
    }

    /// ClusterSize: its type and constness decide validity (SG0605); its value only warns.
    #[test]
    fn cluster_size() {
        let h = "OpCapability GroupNonUniformClustered\nOpCapability GroupNonUniformArithmetic";
        let with = |decl: &str, size: &str| {
            shader(
                h,
                &format!("{decl}\n%r = OpGroupNonUniformIAdd %uint %uint_3 ClusteredReduce %uint_1 {size}"),
            )
        };
        let report = crate::rules::testutil::run(&with("", "%uint_0"), "vulkan1.1", None);
        assert!(!report.has_errors(), "{report:?}");
        assert_eq!(report.diagnostics.len(), 1);
        assert_eq!(report.diagnostics[0].rule.code(), "SG0606");
        // Signed, or not from a constant instruction: invalid.
        check(&with("", "%int_3"), "spv1.3", Expect::Has("SG0605"));
        check(
            &with("%n = OpIAdd %uint %uint_1 %uint_1", "%n"),
            "spv1.3",
            Expect::Has("SG0605"),
        );
        // Larger than the target's largest subgroup (lavapipe: 16): a warning, only with a target.
        let big = with("", "%uint_32");
        let big = big.replace(
            "%uint_3 = OpConstant %uint 3\n",
            "%uint_3 = OpConstant %uint 3\n%uint_32 = OpConstant %uint 32\n",
        );
        check(&big, "vulkan1.1", Expect::Clean);
        crate::rules::testutil::check_target(
            &big,
            "vulkan1.1",
            Some("lavapipe"),
            Expect::Has("SG0607"),
        );
        crate::rules::testutil::check_target(
            &big,
            "vulkan1.1",
            Some("nvidia"),
            Expect::Lacks(&["SG0607"]),
        );
    }

    #[test]
    fn spec_constant_cluster_size_is_accepted() {
        let h = "OpCapability GroupNonUniformClustered\nOpCapability GroupNonUniformArithmetic";
        let src = shader(
            h,
            "%r = OpGroupNonUniformIAdd %uint %uint_3 ClusteredReduce %uint_1 %spec",
        )
        .replace(
            "%uint_3 = OpConstant %uint 3\n",
            "%uint_3 = OpConstant %uint 3\n%spec = OpSpecConstant %uint 4\n",
        );
        check(&src, "vulkan1.1", Expect::Clean);
    }

    #[test]
    fn ballot_bit_count_group_operation_is_a_vulkan_rule() {
        let h = "OpCapability GroupNonUniformBallot\nOpCapability GroupNonUniformClustered";
        let src = shader(
            h,
            "%r = OpGroupNonUniformBallotBitCount %uint %uint_3 ClusteredReduce %ballot_c",
        );
        check(&src, "vulkan1.1", Expect::Has("SG0608"));
        check(&src, "spv1.3", Expect::Clean);
    }

    #[test]
    fn umin_umax_need_unsigned_results() {
        let h = "OpCapability GroupNonUniformArithmetic";
        for op in ["UMin", "UMax"] {
            let signed = format!("%r = OpGroupNonUniform{op} %int %uint_3 Reduce %int_3");
            check(&shader(h, &signed), "spv1.3", Expect::Has("SG0603"));
            let unsigned = format!("%r = OpGroupNonUniform{op} %uint %uint_3 Reduce %uint_1");
            check(&shader(h, &unsigned), "spv1.3", Expect::Clean);
        }
        // SMin and SMax take either signedness.
        check(
            &shader(h, "%r = OpGroupNonUniformSMin %uint %uint_3 Reduce %uint_1"),
            "spv1.3",
            Expect::Clean,
        );
    }

    #[test]
    fn quad_swap_direction_is_constant_and_ids_are_unsigned() {
        let q = "OpCapability GroupNonUniformQuad";
        let body = "%d = OpIAdd %uint %uint_1 %uint_0\n%r = OpGroupNonUniformQuadSwap %uint %uint_3 %uint_1 %d";
        check(&shader(q, body), "spv1.5", Expect::Has("SG0603"));
        let b = "OpCapability GroupNonUniformBallot";
        check(
            &shader(
                b,
                "%r = OpGroupNonUniformBroadcast %uint %uint_3 %uint_1 %int_3",
            ),
            "spv1.3",
            Expect::Has("SG0603"),
        );
    }

    #[test]
    fn operands_must_be_values() {
        let b = "OpCapability GroupNonUniformBallot";
        for bad in ["%uint", "%entry", "%main"] {
            let src = shader(
                b,
                &format!("%r = OpGroupNonUniformBroadcastFirst %uint %uint_3 {bad}"),
            );
            check(&src, "spv1.3", Expect::Has("SG0003"));
        }
        let v = "OpCapability GroupNonUniformVote";
        check(
            &shader(v, "%r = OpGroupNonUniformAll %bool %bool %true"),
            "spv1.3",
            Expect::Has("SG0003"),
        );
        check(
            &shader(
                crate::rules::testutil::VOTE,
                "%r = OpSubgroupAnyKHR %bool %bool",
            ),
            "spv1.0",
            Expect::Has("SG0003"),
        );
        check(
            &shader("", "OpControlBarrier %uint_2 %uint %uint_0"),
            "spv1.0",
            Expect::Has("SG0003"),
        );
        check(
            &shader(
                b,
                "%r = OpGroupNonUniformBroadcastFirst %uint %uint_3 %uint_1",
            ),
            "spv1.3",
            Expect::Clean,
        );
    }

    #[test]
    fn needs_spirv_1_3() {
        let src = shader(
            "OpCapability GroupNonUniformBallot",
            "%r = OpGroupNonUniformBallot %v4uint %uint_3 %true",
        );
        check(&src, "spv1.3", Expect::Clean);
        // spirv-as refuses core non-uniform ops for 1.0; patch the header version instead.
        let mut words = crate::rules::testutil::assemble(&src, "spv1.3");
        words[1] = 0x0001_0200;
        let r = crate::validate(&words, &Default::default()).unwrap();
        assert!(
            r.diagnostics.iter().any(|d| d.rule.code() == "SG0604"),
            "{r:?}"
        );
    }
}
