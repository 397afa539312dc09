//! Integration tests of the `spv-subgroup` binary: exit codes, inputs (files, directories, stdin),
//! output formats (a JSON snapshot), `explain`, `targets`, malformed input, and `lower`'s
//! atomic, verified writes.
//!
//! Modules are compiled from GLSL with `glslangValidator` or assembled with `spirv-as` at test time
//! (a missing tool fails the test with an install hint).

mod common;

use std::process::{Command, Stdio};

use common::*;
use spv_subgroup_tests::tools;

/// The example with one `OpExtension` line removed (disassemble, edit, reassemble).
fn example_without_extension(ext: &str) -> Vec<u32> {
    let text = tools::disassemble(&example_words());
    let line = format!("OpExtension \"{ext}\"");
    assert!(text.contains(&line), "the example declares {ext}");
    let edited: String = text
        .lines()
        .filter(|l| !l.contains(&line))
        .map(|l| format!("{l}\n"))
        .collect();
    tools::assemble(&edited, "vulkan1.1").expect("the edited module assembles")
}

// ---- validate ---------------------------------------------------------------------------------

#[test]
fn valid_glslang_shader_prints_nothing_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ok.spv", &to_bytes(&example_words()));
    let o = run(&["validate", "ok.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(text(&o.stdout), "", "{}", show(&o));
}

#[test]
fn missing_partitioned_extension_prints_rule_and_instruction_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.spv",
        &to_bytes(&example_without_extension(
            "SPV_NV_shader_subgroup_partitioned",
        )),
    );
    let o = run(&["validate", "bad.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.contains("error[SG0202]"), "{}", show(&o));
    assert!(
        out.contains("OpCapability GroupNonUniformPartitionedNV"),
        "{}",
        show(&o)
    );
    assert!(out.contains("bad.spv"), "{}", show(&o));
}

#[test]
fn missing_vote_extension_prints_rule_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.spv",
        &to_bytes(&example_without_extension("SPV_KHR_subgroup_vote")),
    );
    let o = run(&["validate", "bad.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(text(&o.stdout).contains("error[SG0102]"), "{}", show(&o));
    assert!(
        text(&o.stdout).contains("OpCapability SubgroupVoteKHR"),
        "{}",
        show(&o)
    );
}

#[test]
fn target_misfit_exits_1_and_suggests_lower() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ex.spv", &to_bytes(&example_words()));
    let o = run(&["validate", "--target", "vulkan1.1", "ex.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        text(&o.stdout).contains("spv-subgroup lower"),
        "{}",
        show(&o)
    );
    let o = run(&["validate", "--target", "nvidia", "ex.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
}

#[test]
fn stdin_is_read_without_input_and_with_dash() {
    let dir = tempfile::tempdir().unwrap();
    let good = to_bytes(&example_words());
    let bad = to_bytes(&example_without_extension(
        "SPV_NV_shader_subgroup_partitioned",
    ));
    for args in [&["validate"][..], &["validate", "-"][..]] {
        let o = run_with_stdin(args, dir.path(), &good);
        assert_eq!(code(&o), 0, "{}", show(&o));
        let o = run_with_stdin(args, dir.path(), &bad);
        assert_eq!(code(&o), 1, "{}", show(&o));
        assert!(text(&o.stdout).contains("<stdin>"), "{}", show(&o));
    }
}

#[test]
fn directory_is_searched_recursively_for_spv_files() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "shaders/a.spv", &to_bytes(&example_words()));
    write(
        dir.path(),
        "shaders/nested/deeper/b.spv",
        &to_bytes(&plain_words()),
    );
    write(dir.path(), "shaders/readme.txt", b"not a module");
    let o = run(&["validate", "--format", "json", "shaders"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let files: Vec<&str> = doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["shaders/a.spv", "shaders/nested/deeper/b.spv"]);

    write(
        dir.path(),
        "shaders/nested/c.spv",
        &to_bytes(&example_without_extension("SPV_KHR_subgroup_vote")),
    );
    let o = run(&["validate", "shaders"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        text(&o.stdout).contains("shaders/nested/c.spv"),
        "{}",
        show(&o)
    );
    assert!(text(&o.stderr).contains("checked 3 files"), "{}", show(&o));

    std::fs::create_dir(dir.path().join("empty")).unwrap();
    let o = run(&["validate", "empty"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(text(&o.stderr).contains("no `*.spv` files"), "{}", show(&o));
}

#[test]
fn json_output_shape() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "good.spv", &to_bytes(&example_words()));
    write(
        dir.path(),
        "bad.spv",
        &to_bytes(&example_without_extension(
            "SPV_NV_shader_subgroup_partitioned",
        )),
    );
    write(
        dir.path(),
        "junk.spv",
        &[0x03, 0x02, 0x23, 0x07, 0, 3, 1, 0],
    );
    let o = run(
        &[
            "validate", "--format", "json", "good.spv", "bad.spv", "junk.spv",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["files"][0]["ok"], true);
    assert_eq!(doc["files"][1]["ok"], false);
    assert_eq!(doc["files"][2]["error"]["kind"], "malformed");
    assert!(doc["files"][2]["error"]["word_offset"].is_u64());
    assert_eq!(doc["summary"]["files"], 3);
    assert_eq!(doc["summary"]["malformed"], 1);
    // The raw text, so the snapshot also pins the documented key order.
    insta::assert_snapshot!("validate_json", text(&o.stdout));
}

#[test]
fn human_output_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.spv",
        &to_bytes(&example_without_extension(
            "SPV_NV_shader_subgroup_partitioned",
        )),
    );
    let o = run(&["validate", "bad.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    insta::assert_snapshot!("validate_human", text(&o.stdout));
}

#[test]
fn color_always_colours_the_heads() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.spv",
        &to_bytes(&example_without_extension(
            "SPV_NV_shader_subgroup_partitioned",
        )),
    );
    let o = run(&["validate", "--color", "always", "bad.spv"], dir.path());
    assert!(
        text(&o.stdout).contains("\x1b[1;31merror[SG0202]\x1b[0m"),
        "{}",
        show(&o)
    );
    let o = run(&["validate", "--color", "never", "bad.spv"], dir.path());
    assert!(!text(&o.stdout).contains('\x1b'), "{}", show(&o));
}

#[test]
fn malformed_input_names_file_and_word_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut words = example_words();
    // The first instruction (word 5) now claims more words than the module has.
    words[5] = (0xffff << 16) | (words[5] & 0xffff);
    write(dir.path(), "cut.spv", &to_bytes(&words));
    let o = run(&["validate", "cut.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = text(&o.stdout);
    assert!(out.contains("cut.spv"), "{}", show(&o));
    assert!(out.contains("word 5"), "{}", show(&o));
    let o = run(&["validate", "--format", "json", "cut.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(doc["files"][0]["error"]["word_offset"], 5, "{}", show(&o));

    write(dir.path(), "text.spv", b"#version 450\n");
    let o = run(&["validate", "text.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(text(&o.stdout).contains("text.spv"), "{}", show(&o));
}

#[test]
fn usage_and_io_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ok.spv", &to_bytes(&plain_words()));
    let o = run(&["validate", "missing.spv"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(text(&o.stderr).contains("missing.spv"), "{}", show(&o));
    // An unreadable file among readable ones: the others are still checked.
    let o = run(&["validate", "ok.spv", "missing.spv"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    let o = run(
        &["validate", "--target-env", "vulkan9", "ok.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        text(&o.stderr).contains("vulkan1.1"),
        "lists the known envs: {}",
        show(&o)
    );
    let o = run(
        &["validate", "--target", "no-such-device", "ok.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        text(&o.stderr).contains("lavapipe"),
        "lists the presets: {}",
        show(&o)
    );
    let o = run(&["validate", "--format", "xml", "ok.spv"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    let o = run(&["frobnicate"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
}

#[test]
fn spirv_val_target_envs_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ok.spv", &to_bytes(&plain_words()));
    for env in [
        "vulkan1.1",
        "vulkan1.2",
        "vulkan1.3",
        "spv1.3",
        "spv1.5",
        "universal1.3",
        "vulkan1.1spv1.4",
    ] {
        let o = run(&["validate", "--target-env", env, "ok.spv"], dir.path());
        assert_eq!(code(&o), 0, "--target-env {env}: {}", show(&o));
    }
}

#[test]
fn help_documents_exit_status_and_examples() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--help"][..],
        &["validate", "--help"][..],
        &["lower", "--help"][..],
    ] {
        let o = run(args, dir.path());
        assert_eq!(code(&o), 0, "{}", show(&o));
        let out = text(&o.stdout);
        assert!(
            out.contains("Exit status:") && out.contains("Examples:"),
            "{args:?}: {}",
            show(&o)
        );
    }
}

// ---- explain and targets ----------------------------------------------------------------------

#[test]
fn explain_by_code_and_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let by_code = run(&["explain", "SG0101"], dir.path());
    assert_eq!(code(&by_code), 0, "{}", show(&by_code));
    let out = text(&by_code.stdout);
    assert!(
        out.starts_with("SG0101 vote-missing-capability (error, invalid)"),
        "{}",
        show(&by_code)
    );
    // The kind and the VUID of a rule Vulkan names (issue 13, issue 9 item 2).
    let vuid = run(&["explain", "SG0609"], dir.path());
    let out_v = text(&vuid.stdout);
    assert!(
        out_v.starts_with("SG0609 subgroup-memory-scope (error, invalid)")
            && out_v.contains("Vulkan: VUID-StandaloneSpirv-SubgroupVoteKHR-07951"),
        "{}",
        show(&vuid)
    );
    let ub = run(&["explain", "SG0606"], dir.path());
    assert!(
        text(&ub.stdout)
            .starts_with("SG0606 cluster-size-undefined (warning, undefined behaviour)"),
        "{}",
        show(&ub)
    );
    assert!(out.contains("SubgroupVoteKHR"), "{}", show(&by_code));
    let lower_case = run(&["explain", "sg0101"], dir.path());
    assert_eq!(by_code.stdout, lower_case.stdout);
    let by_name = run(&["explain", "vote-missing-capability"], dir.path());
    assert_eq!(by_code.stdout, by_name.stdout);
    let all = run(&["explain"], dir.path());
    assert_eq!(code(&all), 0);
    assert!(text(&all.stdout).lines().count() > 10, "{}", show(&all));
    let unknown = run(&["explain", "SG9999"], dir.path());
    assert_eq!(code(&unknown), 2, "{}", show(&unknown));
}

#[test]
fn targets_lists_presets_and_shows_editable_json() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["targets"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    for name in ["vulkan1.1", "lavapipe", "nvidia", "khr-ballot", "naga"] {
        assert!(
            text(&o.stdout).lines().any(|l| l.starts_with(name)),
            "{name}: {}",
            show(&o)
        );
    }
    let o = run(&["targets", "--show", "nvidia"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let mut edited: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(edited["ops"]["partitioned"], true);
    // An edited copy is a valid --target.
    edited["name"] = "my-gpu".into();
    edited["ops"]["partitioned"] = false.into();
    write(dir.path(), "my-gpu.json", edited.to_string().as_bytes());
    let o = run(&["targets", "--show", "my-gpu.json"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(text(&o.stdout).contains("\"my-gpu\""), "{}", show(&o));
    write(dir.path(), "ex.spv", &to_bytes(&example_words()));
    let o = run(
        &["validate", "--target", "my-gpu.json", "ex.spv"],
        dir.path(),
    );
    assert_eq!(
        code(&o),
        1,
        "partitioned ops are missing on my-gpu: {}",
        show(&o)
    );
    // A vulkaninfo report is read too.
    let report = tools::workspace_root().join("fixtures/targets/lavapipe-vulkaninfo.json");
    let o = run(&["targets", "--show", report.to_str().unwrap()], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(t["ops"]["khr_vote"], true);
    let o = run(&["targets", "--show", "nope"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
}

#[test]
fn closed_stdout_exits_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(EXE)
        .args(["explain"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(text(&o.stderr), "", "{}", show(&o));
}

// ---- lower ------------------------------------------------------------------------------------

/// A module with warnings only (SG0401: a partition ballot built by hand), compiled by glslang.
fn handmade_ballot() -> Vec<u32> {
    let path =
        tools::workspace_root().join("fixtures/validate/glsl/partitioned_handmade_ballot.comp");
    tools::compile_glsl(&path, "vulkan1.1").expect("the fixture compiles")
}

#[test]
fn deny_warnings_fails_the_run_and_allow_drops_a_rule() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "w.spv", &to_bytes(&handmade_ballot()));
    let o = run(&["validate", "w.spv"], dir.path());
    assert_eq!(code(&o), 0, "warnings alone pass: {}", show(&o));
    assert!(text(&o.stdout).contains("warning[SG0401]"), "{}", show(&o));
    let o = run(&["validate", "--deny", "warnings", "w.spv"], dir.path());
    assert_eq!(code(&o), 1, "--deny warnings: {}", show(&o));
    for allow in ["SG0401", "sg0401"] {
        let o = run(
            &["validate", "--deny", "warnings", "--allow", allow, "w.spv"],
            dir.path(),
        );
        assert_eq!(code(&o), 0, "--allow {allow}: {}", show(&o));
        assert!(!text(&o.stdout).contains("SG0401"), "{}", show(&o));
    }
    let name = spv_subgroup_validate::Rule::from_code("SG0401")
        .unwrap()
        .name();
    let o = run(
        &["validate", "--format", "json", "--allow", name, "w.spv"],
        dir.path(),
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        doc["summary"]["warnings"],
        0,
        "--allow {name}: {}",
        show(&o)
    );
    let o = run(&["validate", "--allow", "SG0410", "w.spv"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("did you mean `SG0401`?"),
        "{}",
        show(&o)
    );
}

#[test]
fn quiet_per_file_line_counts_the_hidden_warnings() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "w.spv", &to_bytes(&handmade_ballot()));
    let o = run(&["validate", "--target", "vulkan1.1", "w.spv"], dir.path());
    let full = text(&o.stdout);
    let last = full.trim_end().lines().last().unwrap().to_owned();
    assert!(
        last.starts_with("w.spv: ") && !last.contains(" 0 warnings"),
        "{full}"
    );
    let o = run(
        &["validate", "-q", "--target", "vulkan1.1", "w.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    let out = text(&o.stdout);
    assert!(!out.contains("warning["), "{out}");
    assert!(
        out.trim_end()
            .ends_with(&format!("{last} (not shown: --quiet)")),
        "the line counts the module's warnings: {out}"
    );
}

#[test]
fn misspelt_presets_environments_and_rules_get_a_suggestion() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ok.spv", &to_bytes(&plain_words()));
    for (args, hint) in [
        (
            &["validate", "--target", "lavapip", "ok.spv"][..],
            "did you mean `lavapipe`?",
        ),
        (
            &["lower", "ok.spv", "-o", "o.spv", "--target", "Nvidai"][..],
            "did you mean `nvidia`?",
        ),
        (
            &["validate", "--target-env", "vulkan13", "ok.spv"][..],
            "did you mean `vulkan1.3`?",
        ),
        (
            &[
                "lower",
                "ok.spv",
                "-o",
                "o.spv",
                "--target-env",
                "vulkna1.2",
            ][..],
            "did you mean `vulkan1.2`?",
        ),
        (&["explain", "SG0110"][..], "did you mean `SG0101`?"),
    ] {
        let o = run(args, dir.path());
        assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
        assert!(stderr(&o).contains(hint), "{args:?}: {}", show(&o));
    }
    let o = run(&["validate", "--target", "zzzz", "ok.spv"], dir.path());
    assert!(
        !stderr(&o).contains("did you mean"),
        "nothing near: {}",
        show(&o)
    );
}

#[test]
fn clicolor_force_colours_a_pipe_and_no_color_wins() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.spv",
        &to_bytes(&example_without_extension(
            "SPV_NV_shader_subgroup_partitioned",
        )),
    );
    let with_env = |vars: &[(&str, &str)]| {
        let mut c = command(&["validate", "bad.spv"], dir.path());
        c.env_remove("NO_COLOR");
        for (k, v) in vars {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    let coloured = |o: &std::process::Output| text(&o.stdout).contains("\x1b[");
    assert!(
        coloured(&with_env(&[("CLICOLOR_FORCE", "1")])),
        "CLICOLOR_FORCE colours a pipe"
    );
    assert!(!coloured(&with_env(&[("CLICOLOR_FORCE", "0")])));
    assert!(!coloured(&with_env(&[
        ("CLICOLOR_FORCE", "1"),
        ("NO_COLOR", "1")
    ])));
    assert!(!coloured(&with_env(&[("CLICOLOR", "0")])));
    assert!(!coloured(&with_env(&[])), "a pipe is not a terminal");
}

#[test]
fn version_names_the_commit_and_the_grammar() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["--version"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = text(&o.stdout);
    assert!(
        out.starts_with(&format!(
            "spv-subgroup {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "{out}"
    );
    let grammar = format!(
        "SPIR-V grammar {}.{} revision {}",
        spirv::MAJOR_VERSION,
        spirv::MINOR_VERSION,
        spirv::REVISION
    );
    assert!(out.contains(&grammar), "{out}");
}

#[test]
fn lower_of_several_inputs_into_a_file_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.spv", &example_bytes());
    write(dir.path(), "b.spv", &example_bytes());
    let o = run(&["lower", "a.spv", "b.spv", "-o", "res.spv"], dir.path());
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        stderr(&o).contains("`res.spv` is named like a module"),
        "{}",
        show(&o)
    );
    assert!(!dir.path().join("res.spv").exists(), "nothing is created");
    // A directory that exists may have any name.
    std::fs::create_dir(dir.path().join("out.spv")).unwrap();
    let o = run(&["lower", "a.spv", "b.spv", "-o", "out.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(dir.path().join("out.spv/a.spv").is_file());
}

/// The README example compiled by glslang for a later Vulkan version: SPIR-V 1.5 or 1.6.
fn example_for(env: &str) -> Vec<u32> {
    tools::compile_glsl(&example_source(), env).expect("the example compiles")
}

#[test]
fn lower_default_takes_modules_of_every_vulkan_version() {
    let dir = tempfile::tempdir().unwrap();
    for (env, version) in [
        ("vulkan1.1", "1.3"),
        ("vulkan1.2", "1.5"),
        ("vulkan1.3", "1.6"),
    ] {
        write(dir.path(), "in.spv", &to_bytes(&example_for(env)));
        let o = run(&["lower", "-v", "in.spv", "-o", "out.spv"], dir.path());
        assert_eq!(code(&o), 0, "{env}: {}", show(&o));
        let err = stderr(&o);
        assert!(
            err.contains(&format!("environment {env} (SPIR-V up to {version})")),
            "{env}: -v names the environment chosen: {}",
            show(&o)
        );
        assert!(err.contains("the default"), "{env}: {}", show(&o));
        let out = words(&std::fs::read(dir.path().join("out.spv")).unwrap());
        assert_ne!(out, example_for(env), "{env}: the example is lowered");
        tools::spirv_val(&out, env).unwrap_or_else(|e| panic!("{env}: spirv-val: {e}"));
        let o = run(
            &[
                "validate",
                "out.spv",
                "--target",
                "vulkan1.1",
                "--target-env",
                env,
            ],
            dir.path(),
        );
        assert_eq!(code(&o), 0, "{env}: our validator: {}", show(&o));
    }
}

#[test]
fn lower_default_writes_a_newer_module_with_nothing_to_lower_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let plain = plain_words_for("vulkan1.3");
    write(dir.path(), "in.spv", &to_bytes(&plain));
    let o = run(&["lower", "in.spv", "-o", "out.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(stderr(&o).contains("nothing to lower"), "{}", show(&o));
    assert_eq!(
        std::fs::read(dir.path().join("out.spv")).unwrap(),
        to_bytes(&plain)
    );
}

#[test]
fn lower_target_env_sets_the_version_the_output_may_have() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.spv", &to_bytes(&example_for("vulkan1.3")));
    // An environment older than the module's version refuses it, naming the version.
    let o = run(
        &[
            "lower",
            "in.spv",
            "-o",
            "out.spv",
            "--target-env",
            "vulkan1.1",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(stderr(&o).contains("SPIR-V 1.6"), "{}", show(&o));
    assert!(!dir.path().join("out.spv").exists(), "{}", show(&o));
    // A preset of a later Vulkan version, or the environment alone, takes it.
    for args in [
        &["--target", "vulkan1.3"][..],
        &["--target", "vulkan1.4"][..],
        &["--target-env", "vulkan1.3"][..],
        &["--target", "lavapipe", "--target-env", "vulkan1.3"][..],
    ] {
        let mut argv = vec!["lower", "-v", "in.spv", "-o", "out.spv"];
        argv.extend_from_slice(args);
        let o = run(&argv, dir.path());
        assert_eq!(code(&o), 0, "{args:?}: {}", show(&o));
        assert!(
            !stderr(&o).contains("the default"),
            "{args:?}: {}",
            show(&o)
        );
        let out = words(&std::fs::read(dir.path().join("out.spv")).unwrap());
        tools::spirv_val(&out, "vulkan1.3").unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
    // An unknown environment is a usage error.
    let o = run(
        &[
            "lower",
            "in.spv",
            "-o",
            "out.spv",
            "--target-env",
            "vulkan9",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
}

#[test]
fn targets_lists_the_vulkan_version_presets() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["targets"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    for name in ["vulkan1.1", "vulkan1.2", "vulkan1.3", "vulkan1.4"] {
        assert!(text(&o.stdout).contains(name), "{name}: {}", show(&o));
    }
}

#[test]
fn lower_writes_a_valid_module_and_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.spv", &to_bytes(&example_words()));
    let o = run(&["lower", "in.spv", "-o", "out.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let err = text(&o.stderr);
    assert!(
        err.starts_with("lowered ") && err.contains("(target vulkan1.1)"),
        "{}",
        show(&o)
    );
    assert!(
        err.contains("OpSubgroupAllKHR") && err.contains("OpGroupNonUniformPartitionNV"),
        "{}",
        show(&o)
    );
    assert_eq!(err.lines().count(), 1, "{}", show(&o));
    let out = tools::read_words(&dir.path().join("out.spv"));
    tools::spirv_val(&out, "vulkan1.1").expect("spirv-val accepts the output");
    let dis = tools::disassemble(&out);
    assert!(
        !dis.contains("Partitioned") && !dis.contains("SubgroupVoteKHR"),
        "{dis}"
    );
    let o = run(
        &["validate", "--target", "vulkan1.1", "out.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    // Lowering the output again changes nothing.
    let o = run(&["lower", "out.spv", "-o", "again.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(
        std::fs::read(dir.path().join("again.spv")).unwrap(),
        std::fs::read(dir.path().join("out.spv")).unwrap()
    );
}

#[test]
fn lower_leaves_an_unchanged_module_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = to_bytes(&plain_words());
    write(dir.path(), "in.spv", &bytes);
    let o = run(&["lower", "in.spv", "-o", "out.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(text(&o.stderr).contains("unchanged"), "{}", show(&o));
    assert_eq!(std::fs::read(dir.path().join("out.spv")).unwrap(), bytes);
    // Also for a module with only what the target has natively.
    let bytes = to_bytes(&example_words());
    write(dir.path(), "ex.spv", &bytes);
    let o = run(
        &["lower", "--target", "nvidia", "ex.spv", "-o", "ex.out.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(std::fs::read(dir.path().join("ex.out.spv")).unwrap(), bytes);
}

#[test]
fn big_endian_modules_are_read_and_kept_as_is_when_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let be: Vec<u8> = example_words()
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    write(dir.path(), "be.spv", &be);
    let o = run(&["validate", "be.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let o = run(
        &["lower", "--target", "nvidia", "be.spv", "-o", "same.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert_eq!(std::fs::read(dir.path().join("same.spv")).unwrap(), be);
    // A lowered module is written little-endian, as the tools write it.
    let o = run(&["lower", "be.spv", "-o", "low.spv"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let out = tools::read_words(&dir.path().join("low.spv"));
    assert_eq!(out[0], 0x0723_0203);
    tools::spirv_val(&out, "vulkan1.1").expect("spirv-val accepts the output");
}

#[test]
fn lower_dash_reads_stdin_and_writes_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = to_bytes(&example_words());
    write(dir.path(), "in.spv", &bytes);
    let file = run(&["lower", "in.spv", "-o", "out.spv"], dir.path());
    assert_eq!(code(&file), 0, "{}", show(&file));
    let piped = run_with_stdin(&["lower", "-", "-o", "-"], dir.path(), &bytes);
    assert_eq!(code(&piped), 0, "{}", show(&piped));
    assert_eq!(
        piped.stdout,
        std::fs::read(dir.path().join("out.spv")).unwrap()
    );
    assert!(
        text(&piped.stderr).starts_with("lowered "),
        "{}",
        show(&piped)
    );
}

#[test]
fn lower_failures_leave_no_file() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.spv", &to_bytes(&example_words()));
    write(dir.path(), "junk.spv", b"\x03\x02\x23\x07garbage");
    // An output directory that does not exist: IO error, nothing created.
    write(dir.path(), "plain.spv", &to_bytes(&plain_words()));
    let o = run(
        &["lower", "plain.spv", "-o", "no/such/dir/out.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 2, "{}", show(&o));
    assert!(
        text(&o.stderr).contains("no/such/dir/out.spv"),
        "{}",
        show(&o)
    );
    assert!(!dir.path().join("no").exists());
    // Malformed input: exit 1, an existing output is left as it was, no temporary files remain.
    write(dir.path(), "keep.spv", b"previous");
    let o = run(&["lower", "junk.spv", "-o", "keep.spv"], dir.path());
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(text(&o.stderr).contains("junk.spv"), "{}", show(&o));
    assert_eq!(
        std::fs::read(dir.path().join("keep.spv")).unwrap(),
        b"previous"
    );
    // A target that cannot run any rewrite (no subgroup ops at all): exit 1, names what is missing.
    write(
        dir.path(),
        "bare.json",
        br#"{"name": "bare", "spirv_version": [1, 3], "ops": {}}"#,
    );
    let o = run(
        &["lower", "--target", "bare.json", "in.spv", "-o", "keep.spv"],
        dir.path(),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        text(&o.stderr).contains("cannot be lowered") && text(&o.stderr).contains("bare"),
        "{}",
        show(&o)
    );
    assert_eq!(
        std::fs::read(dir.path().join("keep.spv")).unwrap(),
        b"previous"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Needs the debug-build fault hook of `lower` (release builds of the binary do not have it).
#[cfg(debug_assertions)]
#[test]
fn failed_verification_is_an_internal_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.spv", &to_bytes(&example_words()));
    write(dir.path(), "keep.spv", b"previous");
    let o = Command::new(EXE)
        .args(["lower", "in.spv", "-o", "keep.spv"])
        .current_dir(dir.path())
        .env("SPV_SUBGROUP_TEST_BREAK_OUTPUT", "1")
        .output()
        .unwrap();
    assert_eq!(code(&o), 3, "{}", show(&o));
    assert!(
        text(&o.stderr).contains("internal error, please report it"),
        "{}",
        show(&o)
    );
    assert!(text(&o.stderr).contains("was not written"), "{}", show(&o));
    assert_eq!(
        std::fs::read(dir.path().join("keep.spv")).unwrap(),
        b"previous"
    );
    // --no-verify writes whatever the pass produced.
    let o = Command::new(EXE)
        .args(["lower", "--no-verify", "in.spv", "-o", "new.spv"])
        .current_dir(dir.path())
        .env("SPV_SUBGROUP_TEST_BREAK_OUTPUT", "1")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(dir.path().join("new.spv").exists());
}

#[test]
fn lower_rejects_bad_options() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.spv", &to_bytes(&example_words()));
    for args in [
        &["lower", "in.spv"][..],
        &["lower", "in.spv", "-o", "o.spv", "--subgroup-size", "48"][..],
        &["lower", "in.spv", "-o", "o.spv", "--subgroup-size", "256"][..],
        &[
            "lower",
            "in.spv",
            "-o",
            "o.spv",
            "--float-partition",
            "fuzzy",
        ][..],
        &["lower", "in.spv", "-o", "o.spv", "--target", "nope"][..],
        &[
            "lower",
            "in.spv",
            "-o",
            "o.spv",
            "--target",
            "lavapipe",
            "--subgroup-size",
            "32",
        ][..],
    ] {
        let o = run(args, dir.path());
        assert_eq!(code(&o), 2, "{args:?}: {}", show(&o));
        assert!(!dir.path().join("o.spv").exists());
    }
    let o = run(
        &[
            "lower",
            "in.spv",
            "-o",
            "o.spv",
            "--subgroup-size",
            "32",
            "--float-partition",
            "bitwise",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
}

#[test]
fn lower_emulate_subgroup_size() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "in.spv", &to_bytes(&example_words()));
    // Sizes that are no power of two from 1 to 64, larger than the target's subgroups, or
    // a hardware size that is no multiple: usage errors, nothing written.
    for args in [
        &["--emulate-subgroup-size", "0"][..],
        &["--emulate-subgroup-size", "3"][..],
        &["--emulate-subgroup-size", "128"][..],
        &["--emulate-subgroup-size", "32", "--target", "lavapipe"][..],
        &["--emulate-subgroup-size", "16", "--subgroup-size", "8"][..],
    ] {
        let mut all = vec!["lower", "in.spv", "-o", "o.spv"];
        all.extend_from_slice(args);
        let o = run(&all, dir.path());
        assert_eq!(code(&o), 2, "{all:?}: {}", show(&o));
        assert!(stderr(&o).contains("subgroup"), "{all:?}: {}", show(&o));
        assert!(!dir.path().join("o.spv").exists());
    }
    let o = run(
        &[
            "lower",
            "in.spv",
            "-o",
            "o.spv",
            "--emulate-subgroup-size",
            "8",
            "--target",
            "naga",
            "-v",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    assert!(
        stderr(&o).contains("emulated at subgroup size 8"),
        "{}",
        show(&o)
    );
    let plain = run(
        &["lower", "in.spv", "-o", "plain.spv", "--target", "naga"],
        dir.path(),
    );
    assert_eq!(code(&plain), 0, "{}", show(&plain));
    let emulated = std::fs::read(dir.path().join("o.spv")).unwrap();
    let lowered = std::fs::read(dir.path().join("plain.spv")).unwrap();
    assert_ne!(emulated, lowered, "emulation changed nothing");
    // An emulated module is not emulated again (it reads the hardware's lane id).
    let o = run(
        &[
            "lower",
            "o.spv",
            "-o",
            "twice.spv",
            "--emulate-subgroup-size",
            "8",
        ],
        dir.path(),
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stderr(&o).contains("OpModuleProcessed") && stderr(&o).contains("already emulated"),
        "{}",
        show(&o)
    );
    assert!(!dir.path().join("twice.spv").exists());
    // Compiles GLSL `source` as `NAME.EXT` and lowers it emulating `n`: the run's output.
    let emulate = |file: &str, source: &str, n: &str| {
        let path = dir.path().join(file);
        std::fs::write(&path, source).unwrap();
        let words = tools::compile_glsl(&path, "vulkan1.1").expect("the shader compiles");
        let stem = file.split('.').next().unwrap_or(file);
        write(dir.path(), &format!("{stem}.spv"), &to_bytes(&words));
        run(
            &[
                "lower",
                &format!("{stem}.spv"),
                "-o",
                &format!("{stem}.out.spv"),
                "--emulate-subgroup-size",
                n,
            ],
            dir.path(),
        )
    };
    // Every stage is emulated: a fragment shader reading gl_SubgroupSize gets the constant N.
    let o = emulate(
        "f.frag",
        "#version 450\n#extension GL_KHR_shader_subgroup_basic : require\n\
         layout(location = 0) out vec4 c;\n\
         void main() { c = vec4(float(gl_SubgroupSize)); }\n",
        "8",
    );
    assert_eq!(code(&o), 0, "{}", show(&o));
    let text = tools::disassemble(&tools::read_words(&dir.path().join("f.out.spv")));
    // The built-in's variable may stay declared; nothing loads it any more.
    let size_var = text
        .lines()
        .find_map(|l| l.trim().strip_suffix(" BuiltIn SubgroupSize"))
        .and_then(|l| l.strip_prefix("OpDecorate "))
        .map(str::to_owned);
    let loads_size = size_var.as_ref().is_some_and(|v| {
        text.lines()
            .any(|l| l.contains("OpLoad") && l.trim_end().ends_with(&format!(" {v}")))
    });
    assert!(
        !loads_size && text.contains("--emulate-subgroup-size 8"),
        "the size built-in is replaced by the constant:\n{text}"
    );
    // What is not emulated is refused with exit 1, naming the instruction: a quad op in
    // virtual subgroups of 2 lanes (a quad would straddle two of them).
    let o = emulate(
        "q.comp",
        "#version 450\n#extension GL_KHR_shader_subgroup_quad : require\n\
         layout(local_size_x = 64) in;\n\
         layout(set = 0, binding = 0) buffer B { uint d[]; };\n\
         void main() { d[gl_LocalInvocationIndex] = subgroupQuadSwapHorizontal(d[gl_LocalInvocationIndex]); }\n",
        "2",
    );
    assert_eq!(code(&o), 1, "{}", show(&o));
    assert!(
        stderr(&o).contains("OpGroupNonUniformQuadSwap"),
        "{}",
        show(&o)
    );
    assert!(!dir.path().join("q.out.spv").exists());
}

// ---- docs ---------------------------------------------------------------------------------------

#[test]
fn docs_targets_md_shows_the_current_lavapipe_preset() {
    let dir = tempfile::tempdir().unwrap();
    let o = run(&["targets", "--show", "lavapipe"], dir.path());
    assert_eq!(code(&o), 0, "{}", show(&o));
    let doc = std::fs::read_to_string(tools::workspace_root().join("docs/targets.md")).unwrap();
    let start = doc
        .find("```json\n")
        .expect("docs/targets.md has a JSON example")
        + "```json\n".len();
    let end = start + doc[start..].find("```").expect("closed");
    assert_eq!(
        &doc[start..end],
        text(&o.stdout),
        "update the example in docs/targets.md"
    );
}

#[test]
fn docs_cli_md_lists_every_json_key() {
    let doc = std::fs::read_to_string(tools::workspace_root().join("docs/cli.md")).unwrap();
    for key in [
        "version",
        "files[]",
        "files[].file",
        "files[].ok",
        "files[].error",
        "files[].findings[]",
        "summary",
        ".code",
        ".severity",
        ".message",
        ".word_offset",
        ".instruction_index",
        ".instruction",
        ".notes",
    ] {
        assert!(
            doc.contains(&format!("`{key}`")),
            "docs/cli.md documents `{key}`"
        );
    }
}
