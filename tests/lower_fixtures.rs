//! Lowering fixtures (`fixtures/lower/**`): every fixture for every preset target.
//!
//! For each pair the output must pass `spirv-val` for the target's environment and our own
//! validator with that target (no error findings), use nothing the target lacks, lower again to
//! `changed == false`, and be byte-identical when lowered twice from the same input. A target
//! that cannot take the module must fail with a clear `Unsupported` error (asserted: never
//! `Invalid` or another error for these valid inputs), which the snapshot records. The snapshot
//! holds, per target, the rewrites (or the error) and, for `vulkan1.1` and `naga`, the lowered
//! disassembly. A fixture may add test targets no preset describes (`// test-targets: A B`,
//! see `lower_common::test_target`); they are checked the same way.

mod lower_common;

use std::fmt::Write as _;

use lower_common::{build, lower, misfits, presets, test_targets, wants, PATTERN};
use spv_subgroup_lower::LowerError;
use spv_subgroup_tests::tools;
use spv_subgroup_validate::{validate, Severity, ValidateOptions};

/// Targets whose lowered disassembly is snapshotted in full.
const DISASSEMBLED: [&str; 2] = ["vulkan1.1", "naga"];

#[test]
fn lower_fixtures() {
    insta::glob!("../fixtures", PATTERN, |path| {
        let mut snap = String::new();
        for target in presets().into_iter().chain(test_targets(path)) {
            let name = &target.name;
            if !wants(path, &target) {
                writeln!(snap, "== {name}: not listed in the fixture's targets").unwrap();
                continue;
            }
            let input = build(path, &target);
            let (out, report) = match lower(&input, &target) {
                Ok(r) => r,
                Err(e) => {
                    // A valid input is lowered or refused for what the target lacks: never
                    // `Invalid`, a parse error or an internal one.
                    assert!(
                        matches!(e, LowerError::Unsupported { .. }),
                        "{} for {name}: a valid input must be lowered or refused as Unsupported, got: {e}",
                        path.display()
                    );
                    writeln!(snap, "== {name}: error: {e}").unwrap();
                    continue;
                }
            };
            let what: Vec<String> = report
                .rewrites
                .iter()
                .map(|(k, n)| format!("{n} {k}"))
                .collect();
            writeln!(
                snap,
                "== {name}: {}",
                if report.changed {
                    format!("lowered {}", what.join(", "))
                } else {
                    "unchanged".into()
                }
            )
            .unwrap();
            let ctx = format!("{} for {name}", path.display());
            assert_fits(&out, &target, &ctx);
            let (again, report2) = lower(&out, &target).expect("lowering the output again works");
            assert!(
                !report2.changed,
                "{ctx}: lowering twice changes the module: {report2:?}"
            );
            assert_eq!(again, out, "{ctx}: lowering twice changes the words");
            let (twice, _) = lower(&input, &target).expect("second run");
            assert_eq!(twice, out, "{ctx}: the same input gives different output");
            if !report.changed {
                assert_eq!(
                    out, input,
                    "{ctx}: an unchanged module must come back word for word"
                );
            }
            if DISASSEMBLED.contains(&name.as_str()) && report.changed {
                snap.push_str(&tools::disassemble(&out));
            }
        }
        insta::assert_snapshot!(snap);
    });
}

/// Every GLSL fixture compiled by glslang for Vulkan 1.1, 1.2 and 1.3 (SPIR-V 1.3, 1.5 and 1.6)
/// lowers with `lower`'s default target, `Target::default_for_version` of its own version, and
/// the output passes `spirv-val --target-env` for that version and our validator: the default
/// never refuses a module for its SPIR-V version alone. A fixture that names its own
/// environment (the ray-tracing and mesh stages need Vulkan 1.2) is compiled for the later of
/// the two.
#[test]
fn default_target_takes_every_vulkan_version() {
    const ENVS: [(&str, (u8, u8)); 3] = [
        ("vulkan1.1", (1, 3)),
        ("vulkan1.2", (1, 5)),
        ("vulkan1.3", (1, 6)),
    ];
    let mut checked = 0;
    insta::glob!("../fixtures", PATTERN, |path| {
        if path.extension().is_some_and(|e| e == "spvasm") {
            return; // assembled for one environment by their own lines; lower_fixtures has them
        }
        let text = std::fs::read_to_string(path).expect("fixture is readable");
        let own_env = text
            .lines()
            .find_map(|l| l.strip_prefix("// target-env: ").map(str::trim));
        for (env, version) in ENVS {
            let env = match own_env {
                Some(own) if own > env => own,
                _ => env,
            };
            let input = tools::compile_glsl(path, env)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let header = ((input[1] >> 16) as u8, (input[1] >> 8) as u8);
            assert!(
                header >= version,
                "{}: glslang --target-env {env} wrote SPIR-V {header:?}",
                path.display()
            );
            let target = spv_subgroup_lower::Target::default_for_version(header);
            let ctx = format!(
                "{} compiled for {env} (SPIR-V {}.{}), default target in {}",
                path.display(),
                header.0,
                header.1,
                target.target_env
            );
            assert!(
                target.spirv_version >= header,
                "{ctx}: the default target does not take the module's version"
            );
            let out = match lower(&input, &target) {
                Ok((out, _)) => out,
                Err(e @ LowerError::Unsupported { .. }) => {
                    let refused_for_version = e.to_string().contains("the module header");
                    assert!(!refused_for_version, "{ctx}: refused for its version: {e}");
                    // Refused for a feature the Vulkan 1.1 core lacks: the same as the
                    // vulkan1.1 preset refuses the module compiled for Vulkan 1.1.
                    let v11 = tools::compile_glsl(path, own_env.unwrap_or("vulkan1.1"))
                        .expect("compiles for vulkan1.1");
                    let preset = spv_subgroup_lower::Target::preset("vulkan1.1").unwrap();
                    assert!(
                        lower(&v11, &preset).is_err(),
                        "{ctx}: refused ({e}) though vulkan1.1 lowers it"
                    );
                    continue;
                }
                Err(e) => panic!("{ctx}: {e}"),
            };
            assert_fits(&out, &target, &ctx);
            checked += 1;
        }
    });
    assert!(checked >= 150, "only {checked} fixture builds were checked");
}

/// `out` passes spirv-val for the target's environment and our validator with the target, and
/// uses nothing the target lacks; a failure names `ctx`.
fn assert_fits(out: &[u32], target: &spv_subgroup_lower::Target, ctx: &str) {
    if let Err(e) = tools::spirv_val(out, &target.target_env) {
        panic!(
            "{ctx}: spirv-val rejects the output:\n{e}\n{}",
            tools::disassemble(out)
        );
    }
    let opts = ValidateOptions::default().with_target(target.clone());
    let findings = validate(out, &opts).expect("output parses");
    let errors: Vec<String> = findings
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{}: {}", d.rule.code(), d.message))
        .collect();
    assert!(
        errors.is_empty(),
        "{ctx}: our validator reports errors on the output: {errors:#?}"
    );
    let lacks = misfits(out, target);
    assert!(
        lacks.is_empty(),
        "{ctx}: the output uses what the target lacks: {lacks:#?}"
    );
}
