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
            if let Err(e) = tools::spirv_val(&out, &target.target_env) {
                panic!(
                    "{ctx}: spirv-val rejects the output:\n{e}\n{}",
                    tools::disassemble(&out)
                );
            }
            let opts = ValidateOptions {
                target: Some(target.clone()),
                target_env: None,
            };
            let findings = validate(&out, &opts).expect("output parses");
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
            let lacks = misfits(&out, &target);
            assert!(
                lacks.is_empty(),
                "{ctx}: the output uses what the target lacks: {lacks:#?}"
            );
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
