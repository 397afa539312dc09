//! Partitioned arithmetic rules (SG03xx): the 16 `OpGroupNonUniform<op>` instructions with group
//! operation `PartitionedReduceNV` (6), `PartitionedInclusiveScanNV` (7) or
//! `PartitionedExclusiveScanNV` (8), and those group operations on any other instruction.
//!
//! Layout: `%r = OpGroupNonUniformIAdd %type %scope <group op> %value %ballot`.

use crate::module::Cx;
use crate::rules::common::{
    describe, family, family_text, fits, group_op_text, is_unsigned, needs_unsigned, opname,
    require_capability, scope_name, scope_value,
};
use crate::rules::Rule;
use crate::sink::Sink;

/// Checks a partitioned reduce/scan.
pub(crate) fn check(cx: &Cx<'_>, i: usize, out: &mut Sink) {
    let m = &cx.m;
    out.count_partition(i);
    let name = opname(m.opcode(i));
    let g = group_op_text(cx, m.word(i, 4).unwrap_or(0));
    require_capability(
        cx,
        i,
        &format!("`Op{name}` with group operation `{g}`"),
        out,
    );
    // Execution scope.
    if let Some(scope) = m.word(i, 3) {
        match scope_value(cx, scope) {
            Some(3) => {}
            v => out.emit(
                cx,
                Rule::PartitionedScope,
                i,
                match v {
                    Some(v) => format!("`Op{name}` with `{g}`: Execution must be the constant Subgroup (3), found {}", scope_name(v)),
                    None => format!("`Op{name}` with `{g}`: Execution %{scope} must be an OpConstant of 32-bit integer type holding Subgroup (3)"),
                },
                vec!["a partition ballot names invocations of one subgroup".into()],
            ),
        }
    }
    // Ballot.
    match m.word(i, 6) {
        None => out.emit(
            cx,
            Rule::PartitionedBallotMissing,
            i,
            format!("`Op{name}` with `{g}` has no ballot operand"),
            vec!["\"When using GroupOperationPartitioned*, the <ballot> parameter is the last operand\" (GL_NV_shader_subgroup_partitioned)".into()],
        ),
        Some(b) => {
            if let Some(bt) = m.type_of(b) {
                if m.type_known(bt) && !m.is_ballot_type(bt, false) {
                    out.emit(
                        cx,
                        Rule::PartitionedBallotType,
                        i,
                        format!("`Op{name}` with `{g}`: the ballot %{b} must be a vector of four 32-bit integers, found {}", describe(cx, bt)),
                        vec!["the ballot is a `uvec4` (`subgroupPartitioned<op>NV(genType value, uvec4 ballot)`)".into()],
                    );
                }
            }
        }
    }
    // Types.
    let Some(rt) = m.word(i, 1) else { return };
    if !m.type_known(rt) {
        return;
    }
    if let Some(fam) = family(m.opcode(i)) {
        if !fits(cx, fam, rt) {
            out.emit(
                cx,
                Rule::PartitionedResultType,
                i,
                format!(
                    "`Op{name}`: Result Type must be {}, found {}",
                    family_text(fam),
                    describe(cx, rt)
                ),
                vec![],
            );
        } else if crate::binary::op_of(m.opcode(i)).is_some_and(needs_unsigned)
            && !is_unsigned(cx, rt)
        {
            out.emit(
                cx,
                Rule::PartitionedResultType,
                i,
                format!(
                    "`Op{name}`: Result Type must be a scalar or vector of integer type whose Signedness operand is 0, found {}",
                    describe(cx, rt)
                ),
                vec!["a partitioned group operation does not change the opcode's result type rule".into()],
            );
        }
    }
    if let Some(v) = m.word(i, 5) {
        if let Some(vt) = m.type_of(v) {
            if vt != rt && m.type_known(vt) {
                out.emit(
                    cx,
                    Rule::PartitionedValueType,
                    i,
                    format!(
                        "`Op{name}`: the type of Value %{v} ({}) must be the Result Type ({})",
                        describe(cx, vt),
                        describe(cx, rt)
                    ),
                    vec!["\"The type of Value must be the same as Result Type.\"".into()],
                );
            }
        }
    }
}

/// A partitioned group operation on an instruction that is not one of the 16 arithmetic ops.
pub(crate) fn check_not_arithmetic(cx: &Cx<'_>, i: usize, out: &mut Sink) {
    let m = &cx.m;
    out.count_partition(i);
    let name = opname(m.opcode(i));
    let g = group_op_text(cx, m.word(i, 4).unwrap_or(0));
    require_capability(cx, i, &format!("group operation `{g}`"), out);
    out.emit(
        cx,
        Rule::PartitionedOpNotArithmetic,
        i,
        format!("group operation `{g}` is not allowed on `Op{name}`: partitioned operations exist only for the 16 OpGroupNonUniform arithmetic instructions"),
        vec![if name.starts_with("GroupNonUniform") {
            "this instruction takes Reduce, InclusiveScan or ExclusiveScan".into()
        } else {
            "the old OpGroup* instructions (Groups capability) take Reduce, InclusiveScan or ExclusiveScan; use OpGroupNonUniform<op> with the ballot as last operand".into()
        }],
    );
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect, PART};

    const INT_OPS: [&str; 9] = [
        "IAdd",
        "IMul",
        "SMin",
        "UMin",
        "SMax",
        "UMax",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
    ];
    const FLOAT_OPS: [&str; 4] = ["FAdd", "FMul", "FMin", "FMax"];
    const BOOL_OPS: [&str; 3] = ["LogicalAnd", "LogicalOr", "LogicalXor"];
    const GROUP_OPS: [&str; 3] = [
        "PartitionedReduceNV",
        "PartitionedInclusiveScanNV",
        "PartitionedExclusiveScanNV",
    ];

    fn all_ops() -> Vec<(&'static str, &'static str, &'static str)> {
        let mut v = Vec::new();
        for op in INT_OPS {
            v.push((op, "%uint", "%uint_1"));
        }
        for op in FLOAT_OPS {
            v.push((op, "%float", "%float_1"));
        }
        for op in BOOL_OPS {
            v.push((op, "%bool", "%true"));
        }
        v
    }

    fn body(op: &str, ty: &str, g: &str, scope: &str, val: &str, ballot: &str) -> String {
        format!("%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%r = OpGroupNonUniform{op} {ty} {scope} {g} {val} {ballot}")
    }

    #[test]
    fn every_op_and_group_op_passes_when_well_typed() {
        for (op, ty, val) in all_ops() {
            for g in GROUP_OPS {
                check(
                    &shader(PART, &body(op, ty, g, "%uint_3", val, "%b")),
                    "vulkan1.1",
                    Expect::Clean,
                );
            }
        }
    }

    #[test]
    fn capability_is_required() {
        for (op, ty, val) in all_ops() {
            let src = shader(
                "OpCapability GroupNonUniformArithmetic",
                &format!(
                    "%r = OpGroupNonUniform{op} {ty} %uint_3 PartitionedReduceNV {val} %ballot_c"
                ),
            );
            check(&src, "spv1.3", Expect::Has("SG0201"));
        }
    }

    #[test]
    fn ballot_present_and_v4_32bit() {
        for (op, ty, val) in all_ops() {
            for g in GROUP_OPS {
                let src = shader(
                    PART,
                    &format!("%r = OpGroupNonUniform{op} {ty} %uint_3 {g} {val}"),
                );
                check(&src, "spv1.3", Expect::Has("SG0301"));
                let src = shader(
                    PART,
                    &format!("%r = OpGroupNonUniform{op} {ty} %uint_3 {g} {val} %uint_1"),
                );
                check(&src, "spv1.3", Expect::Has("SG0302"));
            }
        }
        // 64-bit components: spirv-val checks only the count, we check the width too.
        let header = format!("{PART}\nOpCapability Int64");
        let src = shader(&header, "%r = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %b64").replace(
            "%main = OpFunction",
            "%ulong = OpTypeInt 64 0\n%v4ulong = OpTypeVector %ulong 4\n%ul1 = OpConstant %ulong 1\n%b64 = OpConstantComposite %v4ulong %ul1 %ul1 %ul1 %ul1\n%main = OpFunction",
        );
        check(&src, "spv1.3", Expect::Has("SG0302"));
        // Signed ballot components are accepted.
        let src = shader(
            PART,
            "%r = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %bi",
        )
        .replace(
            "%main = OpFunction",
            "%bi = OpConstantComposite %v4int %int_3 %int_3 %int_3 %int_3\n%main = OpFunction",
        );
        check(&src, "spv1.3", Expect::Lacks(&["SG0302"]));
    }

    #[test]
    fn scope_must_be_constant_subgroup() {
        for (op, ty, val) in all_ops() {
            check(
                &shader(
                    PART,
                    &body(op, ty, "PartitionedReduceNV", "%uint_2", val, "%b"),
                ),
                "spv1.3",
                Expect::Has("SG0303"),
            );
            check(
                &shader(
                    PART,
                    &body(op, ty, "PartitionedReduceNV", "%int_3", val, "%b"),
                ),
                "spv1.3",
                Expect::Lacks(&["SG0303"]),
            );
        }
    }

    #[test]
    fn value_and_result_types() {
        // Value type differs from the result type.
        for (op, ty, _) in all_ops() {
            let other = if ty == "%bool" {
                "%v4bool_c"
            } else if ty == "%uint" {
                "%ballot_c"
            } else {
                "%v4f"
            };
            let src = shader(PART, &body(op, ty, "PartitionedReduceNV", "%uint_3", other, "%b")).replace(
                "%main = OpFunction",
                "%v4bool_c = OpConstantComposite %v4bool %true %true %true %true\n%v4f = OpConstantComposite %v4float %float_1 %float_1 %float_1 %float_1\n%main = OpFunction",
            );
            check(&src, "spv1.3", Expect::Has("SG0304"));
        }
        // Result type of the wrong family.
        let wrong = [
            ("%float", "%float_1"),
            ("%bool", "%true"),
            ("%uint", "%uint_1"),
        ];
        for (op, ty, _) in all_ops() {
            for (wty, wval) in wrong {
                if wty == ty {
                    continue;
                }
                check(
                    &shader(
                        PART,
                        &body(op, wty, "PartitionedReduceNV", "%uint_3", wval, "%b"),
                    ),
                    "spv1.3",
                    Expect::Has("SG0305"),
                );
            }
        }
        // Vectors of the right family pass.
        check(
            &shader(
                PART,
                &body(
                    "IAdd",
                    "%v4uint",
                    "PartitionedReduceNV",
                    "%uint_3",
                    "%ballot_c",
                    "%b",
                ),
            ),
            "spv1.3",
            Expect::Clean,
        );
    }

    #[test]
    fn partitioned_group_ops_only_on_arithmetic() {
        for g in GROUP_OPS {
            let src = shader(
                PART,
                &format!("%r = OpGroupNonUniformBallotBitCount %uint %uint_3 {g} %ballot_c"),
            );
            check(&src, "spv1.3", Expect::Has("SG0306"));
            let src = shader(
                &format!("{PART}\nOpCapability Groups"),
                &format!("%r = OpGroupIAdd %uint %uint_3 {g} %uint_1"),
            );
            check(&src, "spv1.3", Expect::Has("SG0306"));
            let src = shader(
                &format!("OpCapability GroupUniformArithmeticKHR\n{PART}\nOpExtension \"SPV_KHR_uniform_group_instructions\""),
                &format!("%r = OpGroupIMulKHR %uint %uint_3 {g} %uint_1"),
            );
            check(&src, "spv1.3", Expect::Has("SG0306"));
        }
        let src = shader(
            "OpCapability GroupNonUniformBallot",
            "%r = OpGroupNonUniformBallotBitCount %uint %uint_3 Reduce %ballot_c",
        );
        check(&src, "spv1.3", Expect::Clean);
    }
}
