//! The naga target end to end: every lowering fixture, lowered for the `naga` preset, goes
//! through naga's SPIR-V front end, naga's validator (all capabilities, subgroups included) and
//! its WGSL, MSL and HLSL back ends (MSL must refuse modules with doubles, which Metal lacks).
//!
//! Fixtures whose *input* uses a type naga has no front-end support for (8- and 16-bit integers,
//! half floats) are expected to be refused by naga (front end or validator) for that type, and
//! only for it: the test asserts the reason, so a lowering bug elsewhere still fails it.
//! Those in [`NAGA_READS_NARROW`] use the narrow type only where naga reads it, and must pass.

mod lower_common;

use lower_common::{build, lower, wants, PATTERN};
use spv_subgroup_lower::Target;
use spv_subgroup_tests::naga::through_naga;

/// Capabilities naga 30's SPIR-V front end does not accept (with their capability names).
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
