//! `validate --format sarif` (issue 11 item 3): the log is valid against the SARIF 2.1.0 schema
//! (`fixtures/sarif/`, draft 4, checked with the `jsonschema` crate), carries every rule of the
//! table with its help text, and places each finding at its instruction's bytes with the
//! disassembly as the snippet, agreeing with the JSON format's word offsets.
//! Also: `validate` checks files in parallel but prints in input order (issue 11 item 2), and
//! findings name the shader source line where the module carries one (glslang `-g`, `-gV`) in
//! every format (issue 22 item 4).

mod common;

use common::*;
use serde_json::Value;
use spv_subgroup_tests::tools;

/// A directory with a valid module, one with findings (the vote extension removed), one whose
/// name needs percent-encoding, and a malformed one.
fn inputs() -> tempfile::TempDir {
    let words = example_words();
    let text = tools::disassemble(&words);
    let line = "OpExtension \"SPV_KHR_subgroup_vote\"";
    assert!(text.contains(line));
    let bad = tools::assemble(&text.replace(line, ""), "vulkan1.1").expect("assembles");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("shaders");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("a_ok.spv"), to_bytes(&words)).unwrap();
    std::fs::write(d.join("b_bad.spv"), to_bytes(&bad)).unwrap();
    std::fs::write(d.join("c bad#1.spv"), to_bytes(&bad)).unwrap();
    std::fs::write(d.join("d_junk.spv"), b"#version 450\n").unwrap();
    dir
}

fn schema_errors(log: &Value) -> Vec<String> {
    let path = tools::workspace_root().join("fixtures/sarif/sarif-schema-2.1.0.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let validator = jsonschema::draft4::new(&schema).expect("the SARIF schema compiles");
    validator
        .iter_errors(log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn sarif_log_is_valid_and_places_findings() {
    let dir = inputs();
    let o = run(&["validate", "--format", "sarif", "shaders"], dir.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let log: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let errors = schema_errors(&log);
    assert!(errors.is_empty(), "schema violations: {errors:#?}");
    assert_eq!(log["version"], "2.1.0");
    let run0 = &log["runs"][0];

    // Every rule of the table, with its explain text as help.
    let rules = run0["tool"]["driver"]["rules"].as_array().unwrap();
    let o = run(&["explain"], dir.path());
    let listed = String::from_utf8_lossy(&o.stdout).lines().count();
    assert_eq!(rules.len(), listed, "one SARIF rule per rule of `explain`");
    for r in rules {
        let code = r["id"].as_str().unwrap();
        let o = run(&["explain", code], dir.path());
        let explain = String::from_utf8_lossy(&o.stdout).into_owned();
        // The rule's spec quote and VUID (issue 9 item 2), as the table has them.
        let rule = spv_subgroup_validate::Rule::from_code(code).unwrap();
        assert_eq!(r["properties"]["spec"], rule.spec(), "{code}");
        assert_eq!(
            r["properties"]["vuid"],
            rule.vuid().map_or(Value::Null, Value::from),
            "{code}"
        );
        let help = r["help"]["text"].as_str().unwrap();
        let first = help.lines().next().unwrap();
        assert!(
            explain
                .split_whitespace()
                .collect::<String>()
                .contains(&first.split_whitespace().take(8).collect::<String>()),
            "{code}: help {help:?} vs explain {explain:?}"
        );
    }

    // The same findings as the JSON format, at 4 x their word offsets, with the disassembly.
    let o = run(&["validate", "--format", "json", "shaders"], dir.path());
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut expected = Vec::new();
    for f in doc["files"].as_array().unwrap() {
        for finding in f["findings"].as_array().unwrap() {
            expected.push((
                f["file"].as_str().unwrap().to_owned(),
                finding["code"].as_str().unwrap().to_owned(),
                finding["word_offset"].as_u64().unwrap() * 4,
                finding["instruction"].clone(),
            ));
        }
    }
    let results = run0["results"].as_array().unwrap();
    let got: Vec<_> = results
        .iter()
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            (
                loc["artifactLocation"]["uri"].as_str().unwrap().to_owned(),
                r["ruleId"].as_str().unwrap().to_owned(),
                loc["region"]["byteOffset"].as_u64().unwrap(),
                loc["region"]["snippet"]["text"].clone(),
            )
        })
        .collect();
    let expected: Vec<_> = expected
        .into_iter()
        .map(|(f, c, b, i)| (f.replace(' ', "%20").replace('#', "%23"), c, b, i))
        .collect();
    assert!(!got.is_empty());
    assert_eq!(got, expected);
    for r in results {
        let idx = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[idx]["id"], r["ruleId"]);
        assert!(r["locations"][0]["physicalLocation"]["region"]["byteLength"].as_u64() >= Some(4));
    }

    // The malformed module is a notification with its offset.
    let notes = run0["invocations"][0]["toolExecutionNotifications"]
        .as_array()
        .unwrap();
    assert_eq!(notes.len(), 1, "{notes:#?}");
    let loc = &notes[0]["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "shaders/d_junk.spv");
    assert!(notes[0]["message"]["text"]
        .as_str()
        .unwrap()
        .contains("not a valid SPIR-V module"));
}

#[test]
fn sarif_log_of_a_clean_run_is_valid_and_empty() {
    let dir = inputs();
    let o = run(
        &["validate", "--format", "sarif", "shaders/a_ok.spv"],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let log: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(schema_errors(&log), Vec::<String>::new());
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
    assert_eq!(
        log["runs"][0]["invocations"][0]["executionSuccessful"],
        true
    );
}

#[test]
fn parallel_validate_keeps_the_input_order() {
    // Many files of different sizes, so workers finish out of order; the output must not.
    let dir = inputs();
    let d = dir.path().join("shaders");
    let bad = std::fs::read(d.join("b_bad.spv")).unwrap();
    let ok = std::fs::read(d.join("a_ok.spv")).unwrap();
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..60 {
        let bytes: &[u8] = match i % 3 {
            0 => &bad,
            1 => &ok,
            _ => b"junk",
        };
        std::fs::write(many.join(format!("m{i:03}.spv")), bytes).unwrap();
    }
    let o = run(&["validate", "many"], dir.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let mut named: Vec<usize> = Vec::new();
    for line in out.lines() {
        if let Some(pos) = line.find("many/m") {
            let n: usize = line[pos + 6..pos + 9].parse().unwrap();
            if named.last() != Some(&n) {
                named.push(n);
            }
        }
    }
    let expected: Vec<usize> = (0..60).filter(|i| i % 3 != 1).collect();
    assert_eq!(named, expected, "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("checked 60 files: 20 ok, 20 with errors, 20 malformed"),
        "{err}"
    );
}

/// The GLSL call each subgroup instruction of the README example comes from.
fn glsl_call_of(instruction: &str) -> &'static str {
    [
        ("OpGroupNonUniformPartitionNV", "subgroupPartitionNV("),
        ("OpGroupNonUniformIAdd", "subgroupPartitionedAddNV("),
        ("OpSubgroupAllKHR", "allInvocationsARB("),
        ("OpSubgroupAnyKHR", "anyInvocationARB("),
        ("OpSubgroupAllEqualKHR", "allInvocationsEqualARB("),
    ]
    .iter()
    .find(|(op, _)| instruction.contains(op))
    .map_or_else(
        || panic!("no GLSL call known for {instruction}"),
        |(_, c)| c,
    )
}

#[test]
fn findings_name_the_shader_source_line_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let source = std::fs::read_to_string(example_source()).unwrap();
    std::fs::write(dir.path().join("vote.comp"), &source).unwrap();
    let lines: Vec<&str> = source.lines().collect();
    for flag in ["-g", "-gV"] {
        let words = tools::compile_glsl_with(
            std::path::Path::new("vote.comp"),
            "vulkan1.1",
            &[flag],
            Some(dir.path()),
        )
        .unwrap_or_else(|e| panic!("glslangValidator {flag}: {e}"));
        write(dir.path(), "vote.spv", &to_bytes(&words));
        let args = ["validate", "--target", "vulkan1.1", "vote.spv", "--format"];
        // JSON: every finding inside a function names the line of its GLSL call.
        let o = run(&[&args[..], &["json"]].concat(), dir.path());
        assert_eq!(code(&o), 1, "{flag}: {}", show(&o));
        let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
        let findings = doc["files"][0]["findings"].as_array().unwrap();
        let mut placed = Vec::new();
        for f in findings {
            let inst = f["instruction"].as_str().unwrap();
            if f["function"].is_null() {
                assert!(
                    f.get("source").is_none(),
                    "{flag}: a global has no line: {f}"
                );
                continue;
            }
            let src = &f["source"];
            assert_eq!(src["file"], "vote.comp", "{flag}: {f}");
            let line = src["line"].as_u64().unwrap() as usize;
            let text = lines[line - 1];
            assert!(
                text.contains(glsl_call_of(inst)),
                "{flag}: {inst} placed at line {line}: {text:?}"
            );
            placed.push((
                line,
                f["code"].as_str().unwrap().to_owned(),
                f["word_offset"].clone(),
            ));
        }
        assert_eq!(
            placed.len(),
            5,
            "{flag}: the five subgroup calls: {findings:#?}"
        );
        // Short: `vote.comp:LINE: error[CODE]: ...`, the same lines; globals at spirv-val's numbering.
        let o = run(&[&args[..], &["short"]].concat(), dir.path());
        let out = text(&o.stdout);
        for (line, code, word) in &placed {
            let head = format!("vote.comp:{line}: error[{code}]: ");
            assert!(
                out.lines().any(
                    |l| l.starts_with(&head) && l.ends_with(&format!("(vote.spv word {word})"))
                ),
                "{flag}: no `{head}` line: {out}"
            );
        }
        assert!(
            out.lines()
                .any(|l| l.starts_with("vote.spv:2: error[SG0701]")),
            "{flag}: {out}"
        );
        // Human: the arrow names the source and the word offset.
        let o = run(&[&args[..], &["human"]].concat(), dir.path());
        let out = text(&o.stdout);
        for (line, _, word) in &placed {
            assert!(
                out.contains(&format!("  --> vote.comp:{line} (vote.spv:word {word}, ")),
                "{flag}: {out}"
            );
        }
        // SARIF: the source file relative to %SRCROOT% (the working directory), the line, the
        // module's bytes as a related location, a fingerprint on every result.
        let o = run(&[&args[..], &["sarif"]].concat(), dir.path());
        let log: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(schema_errors(&log), Vec::<String>::new(), "{flag}");
        let run0 = &log["runs"][0];
        let root = run0["originalUriBaseIds"]["%SRCROOT%"]["uri"]
            .as_str()
            .unwrap();
        assert!(
            root.starts_with("file:///") && root.ends_with('/'),
            "{root}"
        );
        let results = run0["results"].as_array().unwrap();
        let mut fingerprints: Vec<&str> = results
            .iter()
            .map(|r| {
                r["partialFingerprints"]["spvSubgroupFinding/v1"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        fingerprints.sort_unstable();
        fingerprints.dedup();
        assert_eq!(
            fingerprints.len(),
            results.len(),
            "{flag}: fingerprints are distinct"
        );
        let mut sarif_lines = Vec::new();
        for r in results {
            let loc = &r["locations"][0]["physicalLocation"];
            assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
            match loc["artifactLocation"]["uri"].as_str().unwrap() {
                "vote.comp" => {
                    sarif_lines.push(loc["region"]["startLine"].as_u64().unwrap() as usize);
                    let rel = &r["relatedLocations"][0]["physicalLocation"];
                    assert_eq!(rel["artifactLocation"]["uri"], "vote.spv");
                    assert!(rel["region"]["byteOffset"].as_u64().is_some());
                }
                "vote.spv" => assert!(loc["region"]["startLine"].as_u64() >= Some(1)),
                other => panic!("{flag}: unexpected artifact {other}"),
            }
        }
        let mut want: Vec<usize> = placed.iter().map(|p| p.0).collect();
        want.sort_unstable();
        sarif_lines.sort_unstable();
        assert_eq!(sarif_lines, want, "{flag}");
    }
}

#[test]
fn sarif_paths_outside_the_root_are_file_uris_and_stdin_is_named() {
    let dir = inputs();
    let abs = dir.path().join("shaders/b_bad.spv");
    let o = run(
        &[
            "validate",
            "--format",
            "sarif",
            "--sarif-root",
            "shaders",
            abs.to_str().unwrap(),
        ],
        dir.path(),
    );
    let log: Value = serde_json::from_slice(&o.stdout).unwrap();
    let uri = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(uri["uri"], "b_bad.spv", "relative to --sarif-root: {uri}");
    let o = run(
        &[
            "validate",
            "--format",
            "sarif",
            "--sarif-root",
            "elsewhere",
            "shaders/b_bad.spv",
        ],
        dir.path(),
    );
    let log: Value = serde_json::from_slice(&o.stdout).unwrap();
    let uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        uri.starts_with("file:///") && uri.ends_with("/shaders/b_bad.spv"),
        "{uri}"
    );
    let bad = std::fs::read(dir.path().join("shaders/b_bad.spv")).unwrap();
    let o = run_with_stdin(&["validate", "--format", "sarif", "-"], dir.path(), &bad);
    let log: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(schema_errors(&log), Vec::<String>::new());
    let art = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"];
    assert_eq!(art["uri"], "stdin", "{art}");
}
