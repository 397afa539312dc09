//! Validator fixtures: every file under `fixtures/validate/` (GLSL compiled with glslangValidator,
//! `.spvasm` assembled with spirv-as) is validated as its `RUN:` line says; the codes must match its
//! `EXPECT:` line, and the human and JSON output are insta snapshots.

#[path = "validate_common.rs"]
mod common;

use spv_subgroup_validate::{render_human, render_json, validate, ValidateOptions};

#[test]
fn fixtures() {
    insta::glob!(
        "../fixtures/validate",
        "{glsl,spvasm}/*.{comp,frag,vert,spvasm}",
        |path| {
            let f = common::load(path);
            let report = common::run(&f);
            let file = format!("{}.spv", f.name);
            let human = render_human(&report, &file);
            assert_eq!(
                common::codes(&report),
                f.expect,
                "{}: codes differ from EXPECT\n{human}",
                f.name
            );
            insta::assert_snapshot!("human", human);
            insta::assert_json_snapshot!("json", render_json(&report, &file));
        }
    );
}

/// The acceptance case: a glslang-compiled shader using GL_NV_shader_subgroup_partitioned
/// and GL_ARB_shader_group_vote validates clean; with an OpExtension removed it reports the rule.
#[test]
fn removing_an_extension_reports_the_rule() {
    let path = common::fixture_root().join("glsl/partitioned_vote.comp");
    let f = common::load(&path);
    let opts = ValidateOptions {
        target_env: Some("vulkan1.1".into()),
        target: None,
    };
    let report = validate(&f.words, &opts).unwrap();
    assert!(
        report.diagnostics.is_empty(),
        "{}",
        render_human(&report, "partitioned_vote.spv")
    );
    for (ext, code) in [
        ("SPV_KHR_subgroup_vote", "SG0102"),
        ("SPV_NV_shader_subgroup_partitioned", "SG0202"),
    ] {
        let stripped = common::strip_extension(&f.words, ext);
        assert_eq!(
            stripped.len() + (ext.len() + 4) / 4 + 1,
            f.words.len(),
            "{ext} was removed"
        );
        let report = validate(&stripped, &opts).unwrap();
        assert!(report.has_errors());
        assert_eq!(common::codes(&report), vec![code.to_owned()]);
        insta::assert_snapshot!(
            format!("stripped_{ext}"),
            render_human(&report, "partitioned_vote.spv")
        );
    }
}
