//! Regression tests of issue 21 ("the consumer is the judge"), parts 2 and 3 and the probe
//! findings N5 and N9: every capability an output needs is declared, AMD's shader-ballot
//! instructions are never passed as fitting a target without `VK_AMD_shader_ballot`, and an
//! invalid input is refused (exit 1, the finding named), never lowered (exit 0) nor blamed on
//! the pass (exit 3).
//!
//! Inputs are built at test time from our fixtures with glslang and spirv-as; outputs are
//! checked with spirv-val for the target's environment.

mod common;

use std::path::Path;
use std::process::Output;

use common::{code, stderr, to_bytes};
use spv_subgroup_tests::tools;

fn fixture_text(rel: &str) -> String {
    std::fs::read_to_string(tools::workspace_root().join(rel)).expect("fixture reads")
}

fn spvasm(rel: &str, env: &str) -> Vec<u32> {
    tools::assemble(&fixture_text(rel), env).expect("fixture assembles")
}

/// Runs the CLI with `args` in `dir` after writing `words` to `in.spv`; returns the run and the
/// words of `out.spv` if one was written.
fn run(dir: &Path, words: &[u32], args: &[&str]) -> (Output, Option<Vec<u32>>) {
    let output = dir.join("out.spv");
    let _ = std::fs::remove_file(&output);
    std::fs::write(dir.join("in.spv"), to_bytes(words)).expect("input writes");
    let o = common::sh_with_args(r#"exec "$0" "$@""#, args, dir);
    let out = output.exists().then(|| tools::read_words(&output));
    (o, out)
}

/// Issue 21, part 2: the half move for naga goes through the 16-bit integer type the input
/// declared for 16-bit storage only; the output must declare `Int16` (before the fix `lower`
/// exited 0 with an output spirv-val rejects), and `validate` reports such a module (SG0504).
#[test]
fn a_reused_storage_only_type_gets_its_capability() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let input = tools::compile_glsl(
        &tools::workspace_root().join("fixtures/lower/wide/int16_storage_only.comp"),
        "vulkan1.1",
    )
    .expect("fixture compiles");
    let dis = tools::disassemble(&input);
    assert!(
        dis.contains("StorageBuffer16BitAccess") && !dis.contains("OpCapability Int16"),
        "the fixture declares its 16-bit integer type for storage only:\n{dis}"
    );
    for target in ["naga", "vulkan1.1"] {
        let (o, out) = run(
            d,
            &input,
            &["lower", "in.spv", "-o", "out.spv", "-q", "--target", target],
        );
        assert_eq!(code(&o), 0, "--target {target}: {}", stderr(&o));
        let out = out.expect("written");
        if let Err(e) = tools::spirv_val(&out, "vulkan1.1") {
            panic!("--target {target}: spirv-val rejects the output:\n{e}");
        }
        let (o, _) = run(d, &out, &["validate", "in.spv", "--target", target]);
        assert_eq!(code(&o), 0, "--target {target}: {}", stderr(&o));
    }
    // The module the pass wrote before the fix, as a validator fixture: SG0504.
    let broken = spvasm(
        "fixtures/validate/spvasm/storage16_bitcast.spvasm",
        "vulkan1.1",
    );
    let (o, _) = run(d, &broken, &["validate", "in.spv"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 1, "{text}");
    assert!(text.contains("SG0504") && text.contains("Int16"), "{text}");
}

/// N5: a shuffle of a pointer (SG0603) lowered for naga exited 0, the bool-move rewrite hiding
/// the error; every target refuses it now, naming the instruction and the rule.
#[test]
fn n5_an_invalid_bool_move_is_refused_for_naga_too() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let input = spvasm(
        "fixtures/reliability/naga_bool_shuffle_of_pointer.spvasm",
        "vulkan1.1",
    );
    let (o, _) = run(d, &input, &["validate", "in.spv"]);
    assert_eq!(code(&o), 1, "validate: {}", stderr(&o));
    for target in ["naga", "vulkan1.1", "lavapipe"] {
        let (o, out) = run(
            d,
            &input,
            &["lower", "in.spv", "-o", "out.spv", "--target", target],
        );
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "--target {target}: {err}");
        assert!(out.is_none(), "--target {target}: an output was written");
        assert!(
            err.contains("SG0603") && err.contains("%60"),
            "--target {target}: the refusal names the rule and the instruction: {err}"
        );
    }
}

/// N9: a KHR ballot of a `uint` without its capability: `validate` exited 0 and `lower` 3
/// ("internal error"). Now `validate` reports the missing capability (SG0504) and `lower`
/// refuses the input with it; with the capability declared, the ballot of a `uint` is still
/// refused as invalid input (exit 1), never blamed on the pass.
#[test]
fn n9_a_khr_ballot_of_a_uint_is_the_inputs_fault() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let text = fixture_text("fixtures/reliability/khr_ballot_of_uint.spvasm");
    let input = tools::assemble(&text, "spv1.3").expect("fixture assembles");
    let (o, _) = run(d, &input, &["validate", "in.spv"]);
    let found = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 1, "validate: {found}");
    assert!(
        found.contains("SG0504") && found.contains("SubgroupBallotKHR"),
        "{found}"
    );
    for target in ["vulkan1.1", "naga", "lavapipe"] {
        let (o, out) = run(
            d,
            &input,
            &["lower", "in.spv", "-o", "out.spv", "--target", target],
        );
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "--target {target}: {err}");
        assert!(out.is_none(), "--target {target}");
        assert!(err.contains("SG0504"), "--target {target}: {err}");
        assert!(!err.contains("internal error"), "--target {target}: {err}");
    }
    // With the capability declared the predicate is still a `uint` (SG0611, which spirv-val
    // 2023.1 does not check): validate reports it and the rewrite refuses it.
    let declared = text
        .replacen(
            "OpCapability SubgroupVoteKHR",
            "OpCapability SubgroupVoteKHR\nOpCapability SubgroupBallotKHR",
            1,
        )
        .replacen(
            "OpExtension \"SPV_KHR_subgroup_vote\"",
            "OpExtension \"SPV_KHR_subgroup_vote\"\nOpExtension \"SPV_KHR_shader_ballot\"",
            1,
        );
    let input = tools::assemble(&declared, "spv1.3").expect("variant assembles");
    if let Err(e) = tools::spirv_val(&input, "spv1.3") {
        panic!("the variant is what spirv-val 2023.1 accepts:\n{e}");
    }
    let (o, _) = run(d, &input, &["validate", "in.spv"]);
    let found = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 1, "validate: {found}");
    assert!(
        found.contains("SG0611") && !found.contains("SG0504"),
        "{found}"
    );
    let (o, out) = run(d, &input, &["lower", "in.spv", "-o", "out.spv"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(out.is_none());
    assert!(
        err.contains("Predicate must be a Boolean type")
            && err.contains("%28")
            && err.contains("SG0611"),
        "{err}"
    );
}

/// Issue 21, part 3: `SPV_AMD_shader_ballot`'s instructions passed as fitting every preset and
/// `lower` kept them. `validate --target` now reports each (and the extension) on a target
/// without `VK_AMD_shader_ballot`; `lower` rewrites them for every preset that takes the module
/// (khr-ballot consumes SPIR-V 1.0 only) and keeps them for a target that has the extension.
#[test]
fn amd_ballot_instructions_never_fit_a_target_without_the_extension() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let input = spvasm("fixtures/lower/groups/amd_ballot_uvec2.spvasm", "vulkan1.1");
    let (o, _) = run(d, &input, &["validate", "in.spv", "--target", "vulkan1.1"]);
    let found = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 1, "{found}");
    for name in ["MbcntAMD", "WriteInvocationAMD", "SPV_AMD_shader_ballot"] {
        assert!(found.contains(name), "{name}: {found}");
    }
    for target in ["vulkan1.1", "lavapipe", "naga", "nvidia"] {
        let (o, out) = run(
            d,
            &input,
            &["lower", "in.spv", "-o", "out.spv", "--target", target],
        );
        let err = stderr(&o);
        assert_eq!(code(&o), 0, "--target {target}: {err}");
        assert!(
            err.contains("1 MbcntAMD") && err.contains("1 WriteInvocationAMD"),
            "--target {target}: {err}"
        );
        let out = out.expect("written");
        assert!(
            !tools::disassemble(&out).contains("AMD"),
            "--target {target}: the extension, its import or an instruction is left"
        );
        if let Err(e) = tools::spirv_val(&out, "vulkan1.1") {
            panic!("--target {target}: spirv-val rejects the output:\n{e}");
        }
    }
    // A device with VK_AMD_shader_ballot runs them as they are.
    let (o, _) = run(d, &[], &["targets", "--show", "vulkan1.1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let shown = String::from_utf8_lossy(&o.stdout).replace("\"groups\": false", "\"groups\": true");
    assert!(shown.contains("\"groups\": true"), "{shown}");
    std::fs::write(d.join("amd.json"), shown).expect("target file writes");
    let (o, out) = run(
        d,
        &input,
        &["lower", "in.spv", "-o", "out.spv", "--target", "amd.json"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        out.as_deref(),
        Some(input.as_slice()),
        "written back unchanged"
    );
}

/// Probe findings Q07 and Q08 at the CLI: `lower --emulate-subgroup-size N` exited 0 on inputs
/// plain `lower` refuses (SG0603, SG0103; spirv-val 2023.1 misses both), and 3 on a valid input
/// with an `OpName` on a mask's access chain. The emulation refuses what plain lowering refuses,
/// with the same finding, and lowers the named chain (spirv-val accepts the output).
#[test]
fn q07_q08_the_emulation_refuses_what_plain_lower_refuses() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    for (fixture, rule, n) in [
        ("emulate_findlsb_of_pointer", "SG0603", "2"),
        ("emulate_khr_all_uvec4", "SG0103", "1"),
    ] {
        let input = spvasm(
            &format!("fixtures/reliability/{fixture}.spvasm"),
            "vulkan1.1",
        );
        for emulate in [None, Some(n)] {
            let mut args = vec!["lower", "in.spv", "-o", "out.spv", "--target", "vulkan1.1"];
            args.extend(emulate.iter().flat_map(|n| ["--emulate-subgroup-size", n]));
            let (o, out) = run(d, &input, &args);
            let err = stderr(&o);
            assert_eq!(code(&o), 1, "{fixture} {args:?}: {err}");
            assert!(out.is_none(), "{fixture} {args:?}: an output was written");
            assert!(err.contains(rule), "{fixture} {args:?}: {err}");
        }
    }
    let input = spvasm(
        "fixtures/reliability/emulate_opname_on_mask_chain.spvasm",
        "vulkan1.1",
    );
    for n in ["1", "8"] {
        let (o, out) = run(
            d,
            &input,
            &[
                "lower",
                "in.spv",
                "-o",
                "out.spv",
                "--emulate-subgroup-size",
                n,
            ],
        );
        assert_eq!(code(&o), 0, "emulating {n}: {}", stderr(&o));
        let out = out.expect("written");
        tools::spirv_val(&out, "vulkan1.1").unwrap_or_else(|e| panic!("emulating {n}: {e}"));
    }
}
