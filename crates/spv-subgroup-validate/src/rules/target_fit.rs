//! Target fit (SG07xx): every instruction and capability the chosen target lacks, a SPIR-V
//! version above the target's, subgroup operations on 8/16/64-bit values without extended types,
//! and the target's consumer restrictions (naga).

use spirv::{Capability as C, Op};

use crate::fit::{self, InstFit, Kind, Missing, Restriction, ValueType};
use crate::module::{Cx, Scalar};
use crate::rules::common::{cap_text, is_arithmetic, is_partitioned, opname};
use crate::rules::Rule;
use crate::sink::Sink;

const LOWER_NOTE: &str = "run `spv-subgroup lower` to rewrite it with operations the target has";

/// Whether our lowering rewrites uses of this capability (the quad-control execution modes and
/// Workgroup-scope `Groups` instructions aside, which it refuses, naming them).
fn lowerable(c: C) -> bool {
    matches!(
        c,
        C::SubgroupVoteKHR
            | C::GroupNonUniformPartitionedEXT
            | C::GroupNonUniformRotateKHR
            | C::QuadControlKHR
            | C::Groups
            | C::GroupUniformArithmeticKHR
    )
}

/// A scalar or vector type id as the fit table sees it.
fn value_type(cx: &Cx<'_>, type_id: u32) -> Option<ValueType> {
    let (s, n) = cx.m.scalar_or_vector(type_id)?;
    let (kind, width) = match s {
        Scalar::Bool => (Kind::Bool, 32),
        Scalar::Int { width, signed } => (Kind::Int { signed }, width),
        Scalar::Float { width } => (Kind::Float, width),
    };
    Some(ValueType {
        kind,
        width,
        components: n,
    })
}

/// Instruction `i` described for [`fit::missing`]: the value that crosses lanes is the operand
/// [`fit::value_operand`] names.
fn describe(cx: &Cx<'_>, i: usize, op: Op) -> InstFit {
    let m = &cx.m;
    let arithmetic = is_arithmetic(op);
    // Operands start at word 3 (after the opcode word, result type and result id).
    let value_word = fit::value_operand(op).map(|k| k + 3);
    InstFit {
        opcode: op,
        group_op: if arithmetic || op == Op::GroupNonUniformBallotBitCount {
            m.word(i, 4)
        } else if op == Op::GroupNonUniformRotateKHR {
            // A `ClusterSize` (word 6) makes it a clustered rotate, as `InstFit` spells it.
            m.word(i, 6)
                .map(|_| spirv::GroupOperation::ClusteredReduce as u32)
        } else {
            None
        },
        value: value_word
            .and_then(|k| m.word(i, k))
            .and_then(|v| m.type_of(v))
            .and_then(|t| value_type(cx, t)),
        result: m.word(i, 1).and_then(|t| value_type(cx, t)),
    }
}

/// Whether [`check`] looks at instructions with this opcode (decorations for the mask
/// built-ins, and subgroup instructions); `rules::run` skips the others.
pub(crate) fn looks_at(op: Op) -> bool {
    op == Op::Decorate || op == Op::ExtInst || fit::is_subgroup_op(op)
}

/// The name of the extended instruction set `set` (an `OpExtInstImport` id), if it is one.
fn import_name(cx: &Cx<'_>, set: u32) -> Option<String> {
    let i = cx.m.def_inst(set)?;
    (cx.m.opcode(i) == Op::ExtInstImport as u32).then(|| cx.m.string(i, 2))
}

/// An `OpExtInst` of `SPV_AMD_shader_ballot`'s set on a target without `VK_AMD_shader_ballot`.
fn check_ext_inst(cx: &Cx<'_>, t: &crate::Target, i: usize, out: &mut Sink) {
    let m = &cx.m;
    let (Some(set), Some(number)) = (m.word(i, 3), m.word(i, 4)) else {
        return;
    };
    // Most ext-insts are GLSL.std.450's: only an AMD import's name is read in full.
    if m.def_inst(set).map(|d| m.wc(d)) != Some(2 + fit::AMD_SHADER_BALLOT.len() / 4 + 1) {
        return;
    }
    let Some(set_name) = import_name(cx, set) else {
        return;
    };
    let Some(missing) = fit::missing_ext_inst(t, &set_name, number) else {
        return;
    };
    let name = fit::amd_ballot_instruction(number).unwrap_or("?");
    out.emit(
        cx,
        Rule::TargetMissingFeature,
        i,
        format!(
            "`{name}` (`{set_name}`) is not supported by target `{}`",
            t.name
        ),
        vec![format!("it needs {missing}"), LOWER_NOTE.into()],
    );
}

pub(crate) fn check(cx: &Cx<'_>, i: usize, op: Op, out: &mut Sink) {
    let Some(t) = cx.target else { return };
    let m = &cx.m;
    if op == Op::Decorate {
        // Mask built-ins on a consumer without them.
        if m.word(i, 2) == Some(spirv::Decoration::BuiltIn as u32) {
            let missing = m.word(i, 3).and_then(|b| fit::missing_builtin(t, b));
            if let Some(Missing::Restriction(Restriction::MaskBuiltin(b))) = missing {
                out.emit(
                    cx,
                    Rule::TargetRestriction,
                    i,
                    format!(
                        "the built-in `{b:?}` is not supported by target `{}`",
                        t.name
                    ),
                    vec!["compute the mask from SubgroupLocalInvocationId instead".into()],
                );
            }
        }
        return;
    }
    if op == Op::ExtInst {
        check_ext_inst(cx, t, i, out);
        return;
    }
    if !fit::is_subgroup_op(op) {
        return;
    }
    let name = opname(op as u32);
    for missing in fit::missing(t, &describe(cx, i, op)) {
        match missing {
            Missing::Capability(cap) => {
                let what = if matches!(cap, C::GroupNonUniformPartitionedEXT)
                    && is_partitioned(cx, i)
                {
                    format!("`Op{name}` with a partitioned group operation")
                } else {
                    format!("`Op{name}`")
                };
                let mut notes = vec![format!("it needs `{}`", cap_text(cx, cap))];
                if lowerable(cap) {
                    notes.push(LOWER_NOTE.into());
                }
                out.emit(
                    cx,
                    Rule::TargetMissingFeature,
                    i,
                    format!("{what} is not supported by target `{}`", t.name),
                    notes,
                );
            }
            Missing::Restriction(r) => out.emit(
                cx,
                Rule::TargetRestriction,
                i,
                format!(
                    "`Op{name}`: target `{}` does not accept {}",
                    t.name,
                    r.what()
                ),
                vec![],
            ),
            Missing::RotateClustered => out.emit(
                cx,
                Rule::TargetMissingFeature,
                i,
                format!(
                    "`Op{name}` with a `ClusterSize` is not supported by target `{}`",
                    t.name
                ),
                vec![
                    "it needs `shaderSubgroupRotateClustered` (`ops.rotate_clustered`)".into(),
                ],
            ),
            // Only ext-insts lack a device extension (above).
            Missing::DeviceExtension(_) => {}
            Missing::ExtendedTypes { width } => out.emit(
                cx,
                Rule::TargetExtendedTypes,
                i,
                format!("`Op{name}` on {width}-bit values is not supported by target `{}` (no subgroup extended types)", t.name),
                vec!["convert the value to 32 bits around the operation".into()],
            ),
        }
    }
}

pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    check_env_version(cx, out);
    let Some(t) = cx.target else { return };
    let m = &cx.m;
    for &(c, at) in &m.caps {
        let Some(cap) = C::from_u32(c) else { continue };
        if !fit::target_has(t, cap) {
            let mut notes = vec![];
            if lowerable(cap) {
                notes.push(LOWER_NOTE.into());
            }
            out.emit(
                cx,
                Rule::TargetMissingFeature,
                at,
                format!(
                    "capability `{}` is not supported by target `{}`",
                    cap_text(cx, cap),
                    t.name
                ),
                notes,
            );
        }
    }
    // The extension of AMD's ballot instructions, which every target without
    // `VK_AMD_shader_ballot` refuses (VUID-VkShaderModuleCreateInfo-pCode-08742).
    if !t.ops.groups {
        for (name, at) in &m.exts {
            if name == fit::AMD_SHADER_BALLOT {
                out.emit(
                    cx,
                    Rule::TargetMissingFeature,
                    *at,
                    format!("extension `{name}` is not supported by target `{}`", t.name),
                    vec![
                        "it needs the device extension `VK_AMD_shader_ballot` (`ops.groups`)"
                            .into(),
                        LOWER_NOTE.into(),
                    ],
                );
            }
        }
    }
    if m.version > t.version_word() {
        let (maj, min) = m.version_pair();
        let (tmaj, tmin) = t.spirv_version;
        let first = 0;
        let mut d = crate::Diagnostic {
            rule: Rule::TargetSpirvVersion,
            severity: Rule::TargetSpirvVersion.severity(),
            message: format!("the module is SPIR-V {maj}.{min}, but target `{}` consumes at most SPIR-V {tmaj}.{tmin}", t.name),
            location: crate::Location { word_offset: 1, inst_index: first, result_id: None, function: None },
            notes: vec![
                format!("the header's version word is {:#010x}", m.version),
                "run `spv-subgroup lower` to rewrite the ops that need the newer version, or recompile for the older environment".into(),
            ],
            disassembly: Some(format!("; Version: {maj}.{min}")),
            source: None,
        };
        d.location.inst_index = 0;
        out.diags.push(d);
    }
}

/// The module's version against the explicit `--target-env` (as spirv-val checks it).
fn check_env_version(cx: &Cx<'_>, out: &mut Sink) {
    let Some((env, (emaj, emin))) = cx.env_max_version else {
        return;
    };
    let m = &cx.m;
    let env_word = (u32::from(emaj) << 16) | (u32::from(emin) << 8);
    if m.version <= env_word {
        return;
    }
    let (maj, min) = m.version_pair();
    out.diags.push(crate::Diagnostic {
        rule: Rule::TargetSpirvVersion,
        severity: Rule::TargetSpirvVersion.severity(),
        message: format!(
            "the module is SPIR-V {maj}.{min}, but environment `{env}` consumes at most SPIR-V {emaj}.{emin}"
        ),
        location: crate::Location { word_offset: 1, inst_index: 0, result_id: None, function: None },
        notes: vec![format!("the header's version word is {:#010x}", m.version)],
        disassembly: Some(format!("; Version: {maj}.{min}")),
        source: None,
    });
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{assemble, check_target, run, shader, Expect, PART, VOTE};

    #[test]
    fn module_version_against_target_env() {
        let src = shader("", "%r = OpCopyObject %uint %uint_1");
        let words = crate::rules::testutil::assemble(&src, "spv1.3");
        let codes = |env: &str| -> Vec<&'static str> {
            let opts = crate::ValidateOptions {
                target_env: Some(env.into()),
                target: None,
            };
            let r = crate::validate(&words, &opts).expect("parses");
            r.diagnostics.iter().map(|d| d.rule.code()).collect()
        };
        for (env, too_new) in [
            ("vulkan1.0", true),
            ("spv1.2", true),
            ("vulkan1.1", false),
            ("spv1.3", false),
            ("vulkan1.3", false),
            ("universal1.0", false),
        ] {
            assert_eq!(codes(env).contains(&"SG0702"), too_new, "env {env}");
        }
    }

    #[test]
    fn vote_on_targets() {
        let src = shader(VOTE, "%r = OpSubgroupAllKHR %bool %true");
        for (t, ok) in [
            ("vulkan1.1", false),
            ("lavapipe", true),
            ("nvidia", true),
            ("khr-ballot", false),
            ("naga", false),
        ] {
            let e = if ok {
                Expect::Clean
            } else {
                Expect::Has("SG0701")
            };
            check_target(&src, "spv1.0", Some(t), e);
        }
        let r = run(&src, "spv1.0", Some("vulkan1.1"));
        assert!(r
            .diagnostics
            .iter()
            .all(|d| d.notes.iter().any(|n| n.contains("spv-subgroup lower"))));
    }

    #[test]
    fn partition_on_targets() {
        let src = shader(PART, "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%r = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %b");
        for (t, ok) in [
            ("vulkan1.1", false),
            ("lavapipe", false),
            ("nvidia", true),
            ("naga", false),
        ] {
            let e = if ok {
                Expect::Clean
            } else {
                Expect::Has("SG0701")
            };
            check_target(&src, "spv1.3", Some(t), e);
        }
        let r = run(&src, "spv1.3", Some("lavapipe"));
        let n = r
            .diagnostics
            .iter()
            .filter(|d| d.rule.code() == "SG0701")
            .count();
        assert_eq!(
            n, 3,
            "capability, partition op and partitioned reduce: {r:?}"
        );
    }

    #[test]
    fn core_ops_on_targets() {
        let src = shader(
            "OpCapability GroupNonUniformClustered",
            "%r = OpGroupNonUniformIAdd %uint %uint_3 ClusteredReduce %uint_1 %uint_2",
        );
        check_target(&src, "spv1.3", Some("lavapipe"), Expect::Has("SG0701"));
        check_target(&src, "spv1.3", Some("vulkan1.1"), Expect::Clean);
        let r = run(&src, "spv1.3", Some("lavapipe"));
        assert!(r
            .diagnostics
            .iter()
            .all(|d| d.notes.iter().all(|n| !n.contains("spv-subgroup lower"))));
        let ballot = shader(
            "OpCapability GroupNonUniformBallot",
            "%r = OpGroupNonUniformBallot %v4uint %uint_3 %true",
        );
        check_target(&ballot, "spv1.3", Some("khr-ballot"), Expect::Has("SG0701"));
    }

    const ROTATE: &str =
        "OpCapability GroupNonUniformRotateKHR\nOpExtension \"SPV_KHR_subgroup_rotate\"";

    #[test]
    fn rotate_on_targets() {
        let plain = shader(
            ROTATE,
            "%r = OpGroupNonUniformRotateKHR %uint %uint_3 %uint_1 %uint_1",
        );
        let clustered = shader(
            ROTATE,
            "%r = OpGroupNonUniformRotateKHR %uint %uint_3 %uint_1 %uint_1 %uint_2",
        );
        for t in ["vulkan1.1", "lavapipe", "naga"] {
            check_target(&plain, "vulkan1.1", Some(t), Expect::Has("SG0701"));
            check_target(&clustered, "vulkan1.1", Some(t), Expect::Has("SG0701"));
        }
        check_target(&plain, "vulkan1.1", Some("nvidia"), Expect::Clean);
        check_target(&clustered, "vulkan1.1", Some("nvidia"), Expect::Clean);
        // The instruction and the capability, each with the note that `lower` rewrites it.
        let r = run(&plain, "vulkan1.1", Some("vulkan1.1"));
        assert_eq!(r.diagnostics.len(), 2, "{r:?}");
        assert!(r
            .diagnostics
            .iter()
            .all(|d| d.notes.iter().any(|n| n.contains("spv-subgroup lower"))));
        // A device with rotate but without clustered rotates.
        let mut t = crate::target::Target::preset("nvidia").expect("preset");
        t.ops.rotate_clustered = false;
        let with = |words: &[u32]| {
            let opts = crate::ValidateOptions {
                target_env: Some("vulkan1.1".into()),
                target: Some(t.clone()),
            };
            crate::validate(words, &opts).expect("parses").diagnostics
        };
        assert!(with(&assemble(&plain, "vulkan1.1")).is_empty());
        let d = with(&assemble(&clustered, "vulkan1.1"));
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].rule.code(), "SG0701");
        assert!(d[0].message.contains("ClusterSize"), "{}", d[0].message);
    }

    #[test]
    fn quad_control_and_groups_on_targets() {
        // spirv-as 2023.1 predates SPV_KHR_quad_control: capability 5087 and
        // OpGroupNonUniformQuadAllKHR (5110, 4 words) as raw words.
        let quad = shader(
            "OpCapability !5087\nOpExtension \"SPV_KHR_quad_control\"",
            "!0x000413f6 %bool %q %true",
        );
        check_target(&quad, "vulkan1.3", Some("lavapipe"), Expect::Has("SG0701"));
        check_target(&quad, "vulkan1.3", Some("nvidia"), Expect::Clean);
        let r = run(&quad, "vulkan1.3", Some("lavapipe"));
        assert_eq!(r.diagnostics.len(), 2, "capability and instruction: {r:?}");
        let groups = shader(
            "OpCapability Groups\nOpExtension \"SPV_AMD_shader_ballot\"",
            "%r = OpGroupIAdd %uint %uint_3 Reduce %uint_1\n%b = OpGroupBroadcast %uint %uint_3 %uint_1 %uint_0",
        );
        for t in ["vulkan1.1", "nvidia", "lavapipe", "naga", "khr-ballot"] {
            let r = run(&groups, "vulkan1.1", Some(t));
            let n = r
                .diagnostics
                .iter()
                .filter(|d| d.rule.code() == "SG0701")
                .count();
            assert_eq!(
                n, 4,
                "{t}: capability, extension and two instructions: {r:?}"
            );
        }
    }

    /// Issue 21, part 3: AMD's ballot ext-insts need `ops.groups` (no preset has it).
    #[test]
    fn amd_ballot_ext_insts_need_the_groups_flag() {
        let src = shader(
            "OpExtension \"SPV_AMD_shader_ballot\"\n%amd = OpExtInstImport \"SPV_AMD_shader_ballot\"",
            "%w = OpExtInst %uint %amd WriteInvocationAMD %uint_1 %uint_2 %uint_0",
        );
        let r = run(&src, "vulkan1.1", Some("vulkan1.1"));
        let messages: Vec<&str> = r.diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[1].contains("WriteInvocationAMD"), "{messages:?}");
        // A GLSL.std.450 instruction is never asked about.
        let glsl = shader(
            "%glsl = OpExtInstImport \"GLSL.std.450\"",
            "%m = OpExtInst %uint %glsl UMin %uint_1 %uint_2",
        );
        check_target(&glsl, "vulkan1.1", Some("vulkan1.1"), Expect::Clean);
    }

    #[test]
    fn version_above_target() {
        let src = shader(VOTE, "%r = OpSubgroupAllKHR %bool %true");
        check_target(&src, "spv1.5", Some("lavapipe"), Expect::Clean);
        check_target(&src, "spv1.4", Some("vulkan1.1"), Expect::Has("SG0702"));
        check_target(
            &src,
            "spv1.3",
            Some("vulkan1.1"),
            Expect::Lacks(&["SG0702"]),
        );
        check_target(&src, "spv1.1", Some("khr-ballot"), Expect::Has("SG0702"));
    }

    #[test]
    fn extended_types() {
        let header = "OpCapability GroupNonUniformArithmetic\nOpCapability Int64";
        let src = shader(
            header,
            "%r = OpGroupNonUniformIAdd %ulong %uint_3 Reduce %ul1",
        )
        .replace(
            "%main = OpFunction",
            "%ulong = OpTypeInt 64 0\n%ul1 = OpConstant %ulong 1\n%main = OpFunction",
        );
        check_target(&src, "spv1.3", Some("vulkan1.1"), Expect::Has("SG0703"));
        check_target(&src, "spv1.3", Some("lavapipe"), Expect::Lacks(&["SG0703"]));
    }

    #[test]
    fn naga_restrictions() {
        let cases = [
            (
                "OpCapability GroupNonUniformBallot",
                "%r = OpGroupNonUniformBallotBitCount %uint %uint_3 Reduce %ballot_c",
            ),
            (
                "OpCapability GroupNonUniform",
                "%r = OpGroupNonUniformElect %bool %uint_3",
            ),
            (
                "OpCapability GroupNonUniformShuffle",
                "%r = OpGroupNonUniformShuffle %bool %uint_3 %true %uint_1",
            ),
            (
                "OpCapability GroupNonUniformVote",
                "%r = OpGroupNonUniformAllEqual %bool %uint_3 %uint_1",
            ),
            (
                "OpCapability GroupNonUniformArithmetic",
                "%r = OpGroupNonUniformUMin %uint %uint_3 InclusiveScan %uint_1",
            ),
            (
                "OpCapability GroupNonUniformArithmetic\nOpCapability Int8\n%uchar = OpTypeInt 8 0\n%uchar_1 = OpConstant %uchar 1",
                "%r = OpGroupNonUniformBitwiseOr %uchar %uint_3 Reduce %uchar_1",
            ),
        ];
        for (h, inst) in cases {
            check_target(
                &shader(h, inst),
                "spv1.3",
                Some("naga"),
                Expect::Has("SG0704"),
            );
            check_target(&shader(h, inst), "spv1.3", Some("lavapipe"), Expect::Clean);
        }
        for (h, inst) in [
            (
                "OpCapability GroupNonUniformShuffle",
                "%r = OpGroupNonUniformShuffle %uint %uint_3 %uint_1 %uint_1",
            ),
            (
                "OpCapability GroupNonUniformArithmetic",
                "%r = OpGroupNonUniformIAdd %uint %uint_3 ExclusiveScan %uint_1",
            ),
            (
                "OpCapability GroupNonUniformArithmetic",
                "%r = OpGroupNonUniformUMin %uint %uint_3 Reduce %uint_1",
            ),
        ] {
            check_target(&shader(h, inst), "spv1.3", Some("naga"), Expect::Clean);
        }
        let mask = shader("OpCapability GroupNonUniformBallot", "").replace(
            "%void = OpTypeVoid",
            "OpDecorate %m BuiltIn SubgroupEqMask\n%void = OpTypeVoid",
        ).replace("%main = OpFunction", "%pin = OpTypePointer Input %v4uint\n%m = OpVariable %pin Input\n%main = OpFunction");
        check_target(&mask, "spv1.3", Some("naga"), Expect::Has("SG0704"));
        check_target(&mask, "spv1.3", Some("vulkan1.1"), Expect::Clean);
    }
}
