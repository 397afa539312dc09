//! The naga target end to end: every lowering fixture, lowered for the `naga` preset, goes
//! through naga's SPIR-V front end, naga's validator (all capabilities, subgroups included) and
//! its WGSL, MSL and HLSL back ends (MSL must refuse modules with doubles, which Metal lacks).
//!
//! Fixtures whose *input* uses a type naga has no front-end support for (8- and 16-bit integers,
//! half floats) are expected to be refused by naga (front end or validator) for that type, and
//! only for it: the test asserts the reason, so a lowering bug elsewhere still fails it.
//! Those in [`NAGA_READS_NARROW`] use the narrow type only where naga reads it, and must pass.
//!
//! `naga_target_exits_0_only_on_what_naga_takes` is issue 21's "done when": every fixture, lowered
//! with `lower_and_verify` (the CLI's and the C interface's verification, which runs naga itself
//! for the naga target), exits 0 only with an output this harness's own naga run takes, and never
//! blames the lowering; the inputs naga cannot take ([`NAGA_REFUSES`]) are refused for their reason.

mod lower_common;

use lower_common::{build, lower, wants, PATTERN};
use spv_subgroup_lower::Target;
use spv_subgroup_tests::naga::through_naga;

/// Capabilities whose types naga 30 refuses in the uses these fixtures make (its front end lists
/// all three as supported capabilities; the refusals come from the type's uses, by the front end
/// or the validator), with their capability names.
const NAGA_UNSUPPORTED: [&str; 3] = ["Int8", "Int16", "Float16"];

/// Fixtures whose input has a narrow type only in loads, stores and conversions (no 8-bit type,
/// no narrow constant), which naga reads: their lowered module must go through naga, so a move
/// of the lowering's own that naga cannot read (as the half-vector bitcast was) fails here.
/// `int16_storage_only.comp` (issue 21): naga reads its half move through the 16-bit integer type,
/// with the `Int16` the lowering declares for it.
const NAGA_READS_NARROW: [&str; 2] = [
    "lower/partition/float16.comp",
    "lower/wide/int16_storage_only.comp",
];

fn unsupported_input_capability(words: &[u32]) -> Option<&'static str> {
    let m = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("input loads");
    m.capabilities
        .iter()
        .find_map(|c| match c.operands.first() {
            Some(rspirv::dr::Operand::Capability(cap)) => {
                let name = format!("{cap:?}");
                NAGA_UNSUPPORTED.iter().copied().find(|n| *n == name)
            }
            _ => None,
        })
}

/// Whether naga's error is its refusal of an 8/16-bit type (front end or validator).
fn refuses_narrow_type(e: &str) -> bool {
    (e.starts_with("spv front end")
        && (NAGA_UNSUPPORTED.iter().any(|c| e.contains(c))
            // An 8- or 16-bit type itself (width in bytes), before any capability is looked at.
            || e.contains("InvalidTypeWidth(1)")
            || e.contains("InvalidTypeWidth(2)")))
        || (e.starts_with("validator")
            && (e.contains("WidthError(Invalid(Sint, 1))")
                || e.contains("WidthError(Invalid(Uint, 1))")
                || e.contains("WidthError(Invalid(Sint, 2))")
                || e.contains("WidthError(Invalid(Uint, 2))")
                || e.contains("InvalidScalar")))
}

/// Whether the module has an `OpSpecConstantOp` (glslang writes one for operations on
/// specialization constants, e.g. a swizzle).
fn has_spec_constant_op(words: &[u32]) -> bool {
    let m = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("input loads");
    m.types_global_values
        .iter()
        .any(|i| i.class.opcode == rspirv::spirv::Op::SpecConstantOp)
}

fn has_capability(words: &[u32], name: &str) -> bool {
    let m = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("input loads");
    m.capabilities.iter().any(|c| matches!(c.operands.first(), Some(rspirv::dr::Operand::Capability(cap)) if format!("{cap:?}") == name))
}

#[test]
fn naga_target_outputs_go_through_naga() {
    let target = Target::preset("naga").expect("naga preset");
    let mut failures = Vec::new();
    let mut passed = 0;
    let root = spv_subgroup_tests::tools::workspace_root().join("fixtures");
    insta::glob!("../fixtures", PATTERN, |path| {
        if !wants(path, &target) {
            return;
        }
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let input = build(path, &target);
        let (out, _) = match lower(&input, &target) {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{rel}: lowering failed: {e}"));
                return;
            }
        };
        let result = through_naga(&out, has_capability(&input, "Float64"));
        if has_spec_constant_op(&input) {
            // naga 30's front end reads no OpSpecConstantOp at all (the input's own, which the
            // lowering keeps word for word): it must refuse the module for exactly that.
            match result {
                Err(e) if e.contains("SpecConstantOp") => passed += 1,
                r => failures.push(format!(
                    "{rel}: expected naga to refuse OpSpecConstantOp, got {r:?}"
                )),
            }
            return;
        }
        let narrow = unsupported_input_capability(&input)
            .filter(|_| !NAGA_READS_NARROW.contains(&rel.as_str()));
        match (narrow, result) {
            (None, Ok(())) => passed += 1,
            (None, Err(e)) => failures.push(format!("{rel}: {e}")),
            (Some(_), Err(e)) if refuses_narrow_type(&e) => passed += 1,
            (Some(cap), r) => failures.push(format!(
                "{rel}: expected naga to refuse capability {cap}, got {r:?}"
            )),
        }
    });
    assert!(
        failures.is_empty(),
        "{} fixtures failed in naga:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(passed > 10, "only {passed} fixtures ran");
}

/// Fixtures that `lower --target naga` must refuse with exit 1 (the input brings what naga 30
/// refuses and no rewrite removes), with a phrase of the reason. Every other fixture, whatever
/// presets its `targets:` line names, must either lower to a module naga takes or be refused as
/// the input's fault; none may be blamed on the lowering.
const NAGA_REFUSES: [(&str, &str); 9] = [
    (
        "lower/naga/lane_id_2d.comp",
        "in a workgroup of more than one dimension",
    ),
    (
        "lower/naga/partition_2d.comp",
        "the lane id (SubgroupLocalInvocationId) in a workgroup of more than one dimension",
    ),
    (
        "lower/naga/resizing_bitcast.spvasm",
        "an `OpBitcast` that changes the component count",
    ),
    ("lower/stages/geometry.geom", "the Geometry stage"),
    (
        "lower/stages/tessellation.tesc",
        "the TessellationControl stage",
    ),
    (
        "lower/stages/tessellation.tese",
        "the TessellationEvaluation stage",
    ),
    ("lower/mixed/spec_constant_swizzle.comp", "SpecConstantOp"),
    (
        "lower/naga/vertex_without_position.vert",
        "Vertex shaders must return a `@builtin(position)` output value",
    ),
    (
        "lower/naga/spec_workgroup_size.comp",
        "Initializer must be a const-expression",
    ),
];

/// Fixtures the naga preset must lower to a module naga takes although their `targets:` line
/// leaves naga out of the other harnesses.
const NAGA_TAKES: [&str; 1] = ["lower/naga/half_constant.spvasm"];

/// The "done when": `lower --target naga` (the verification the CLI and the C interface
/// run) exits 0 only on outputs naga 30 takes, with the capabilities of a wgpu device with
/// subgroups (tests/support/naga.rs, independent of the library's own judge); what it refuses is
/// the input's fault (exit 1), never an internal error (exit 3).
#[test]
fn naga_target_exits_0_only_on_what_naga_takes() {
    let target = Target::preset("naga").expect("naga preset");
    let opts = spv_subgroup_lower::LowerOptions::default().with_target(target.clone());
    let root = spv_subgroup_tests::tools::workspace_root().join("fixtures");
    let mut failures = Vec::new();
    let (mut accepted, mut refused) = (0, 0);
    let mut expected_seen = Vec::new();
    insta::glob!("../fixtures", PATTERN, |path| {
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(path)
            .display()
            .to_string();
        let input = build(path, &target);
        let expected = NAGA_REFUSES
            .iter()
            .find(|(f, _)| *f == rel)
            .map(|(_, why)| *why);
        match (
            spv_subgroup_lower::lower_and_verify(&input, &opts, None),
            expected,
        ) {
            (Ok((out, _)), None) => match through_naga(&out, has_capability(&input, "Float64")) {
                Ok(()) => accepted += 1,
                Err(e) => failures.push(format!("{rel}: exit 0 on an output naga refuses: {e}")),
            },
            (Ok(_), Some(why)) => {
                failures.push(format!("{rel}: exit 0, expected a refusal for \"{why}\""))
            }
            (Err(e @ spv_subgroup_lower::VerifyError::Internal { .. }), _) => {
                failures.push(format!("{rel}: blamed on the lowering: {e}"))
            }
            (Err(e), expected) => {
                let text = match &e {
                    spv_subgroup_lower::VerifyError::Input { errors } => errors
                        .diagnostics
                        .iter()
                        .map(|d| {
                            format!("{} {}", spv_subgroup_lower::describe(d), d.notes.join(" "))
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                    e => e.to_string(),
                };
                match expected {
                    Some(why) if !text.contains(why) => {
                        failures.push(format!("{rel}: refused, but not for \"{why}\": {text}"))
                    }
                    Some(_) => {
                        expected_seen.push(rel.clone());
                        refused += 1
                    }
                    None if NAGA_TAKES.contains(&rel.as_str()) => {
                        failures.push(format!("{rel}: naga takes it, but lower refused: {text}"))
                    }
                    None => refused += 1,
                }
            }
        }
    });
    for (f, _) in NAGA_REFUSES {
        if !expected_seen.iter().any(|s| s == f) && !failures.iter().any(|x| x.starts_with(f)) {
            failures.push(format!("{f}: listed in NAGA_REFUSES but not found"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} fixtures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        accepted > 40 && refused >= NAGA_REFUSES.len(),
        "only {accepted} accepted, {refused} refused"
    );
}

/// Defects the input brings that naga refuses, in an input naga's front end cannot read as it is
/// (its partitioned or clustered operations): the probe's Q09 mutants, which spirv-val takes,
/// and an array of storage images as in FidelityFX SPD. `lower_and_verify` blames the input
/// (exit 1) with naga's words and, where naga's validator names one, the input's instruction;
/// before, the lowering was blamed (exit 3).
#[test]
fn naga_refusals_the_input_brings_are_the_inputs() {
    use spv_subgroup_lower::VerifyError;
    use spv_subgroup_tests::tools;
    let target = Target::preset("naga").expect("naga preset");
    let opts = spv_subgroup_lower::LowerOptions::default().with_target(target);
    let dir = tools::workspace_root().join("fixtures/reliability");
    // (fixture, naga's words, the result id of the instruction naga's validator names)
    let cases = [
        (
            "naga_input_vec3_index_4.spvasm",
            "Accessing index 4 is out of [3] bounds",
            Some(14),
        ),
        (
            "naga_input_rowmajor_on_array.spvasm",
            "Call to builtin Transpose has incorrect or ambiguous arguments",
            Some(25),
        ),
        (
            "naga_input_without_builtin.spvasm",
            "front end refuses it: missing decoration Location",
            None,
        ),
        (
            "naga_input_image_array.comp",
            "front end refuses it: invalid image",
            None,
        ),
    ];
    for (fixture, why, result_id) in cases {
        let path = dir.join(fixture);
        let input = if fixture.ends_with(".spvasm") {
            let text = std::fs::read_to_string(&path).expect("fixture reads");
            let words = tools::assemble(&text, "vulkan1.1").expect("fixture assembles");
            tools::spirv_val(&words, "vulkan1.1").expect("spirv-val takes the fixture");
            words
        } else {
            tools::compile_glsl(&path, "vulkan1.1").expect("fixture compiles")
        };
        match spv_subgroup_lower::lower_and_verify(&input, &opts, None) {
            Err(VerifyError::Input { errors }) => {
                let d = errors.diagnostics.first().expect("a finding");
                assert!(d.message.contains(why), "{fixture}: {}", d.message);
                assert_eq!(d.location.result_id, result_id, "{fixture}: {d:?}");
            }
            other => panic!("{fixture}: expected the input's fault, got {other:?}"),
        }
    }
}
