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
    let opts = ValidateOptions::default().with_target_env("vulkan1.1");
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

/// A malformed binary is a `ParseError` with its word offset, never a panic or a finding.
#[test]
fn malformed_binaries_are_parse_errors_with_offsets() {
    use spv_subgroup_validate::{words_from_bytes, ParseErrorKind};
    let path = common::fixture_root().join("glsl/partitioned_vote.comp");
    let good = common::load(&path).words;
    let opts = ValidateOptions::default();
    // The last instruction (OpFunctionEnd) claims 5 words: truncated.
    let mut cut = good.clone();
    let last = cut.len() - 1;
    cut[last] |= 5 << 16;
    let e = validate(&cut, &opts).unwrap_err();
    assert_eq!(e.word_offset, last);
    assert!(
        matches!(e.kind, ParseErrorKind::TruncatedInstruction { .. }),
        "{e}"
    );
    assert!(e
        .to_string()
        .contains(&format!("at word {}", e.word_offset)));
    // Word count 0 right after the header.
    let mut zero = good.clone();
    zero[5] &= 0xffff;
    let e = validate(&zero, &opts).unwrap_err();
    assert_eq!(
        (e.kind.clone(), e.word_offset, e.inst_index),
        (ParseErrorKind::ZeroWordCount, 5, Some(0))
    );
    // Bad magic, in bytes and in words.
    let e = words_from_bytes(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap_err();
    assert!(matches!(e.kind, ParseErrorKind::BadMagic(_)));
    // Big-endian bytes read the same.
    let be: Vec<u8> = good.iter().flat_map(|w| w.to_be_bytes()).collect();
    assert_eq!(words_from_bytes(&be).unwrap(), good);
    // An id at the bound.
    let mut bound = good.clone();
    bound[3] = 2;
    let e = validate(&bound, &opts).unwrap_err();
    assert!(matches!(e.kind, ParseErrorKind::IdOutOfBound { .. }), "{e}");
}

/// Every rule is tripped by at least one fixture (its passing neighbours are the clean fixtures
/// and the unit tests in the rule's file), except those listed here with the reason.
#[test]
fn every_rule_has_a_fixture() {
    use spv_subgroup_validate::Rule;
    const UNIT_TESTED_ONLY: &[(&str, &str)] = &[(
        "SG0604",
        "spirv-as refuses core non-uniform ops below SPIR-V 1.3; core::tests::needs_spirv_1_3 patches the header",
    )];
    let mut expected = std::collections::BTreeSet::new();
    for path in common::all_paths() {
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            if let Some(e) = line
                .trim_start_matches(['/', ';', ' '])
                .strip_prefix("EXPECT:")
            {
                expected.extend(e.split_whitespace().map(str::to_owned));
            }
        }
    }
    for rule in Rule::ALL {
        let code = rule.code();
        let exempt = UNIT_TESTED_ONLY.iter().any(|e| e.0 == code);
        assert!(
            expected.contains(code) || exempt,
            "no fixture trips {code} ({})",
            rule.name()
        );
    }
}

/// Mutated real modules (every glslang fixture) never panic the validator or the renderers.
#[test]
fn mutated_fixture_modules_never_panic() {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let targets = [None, Some("lavapipe"), Some("naga"), Some("khr-ballot")];
    for path in common::all_paths()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e != "spvasm"))
    {
        let words = common::load(&path).words;
        // `MUTATION_ROUNDS=100000` for a longer run.
        let rounds = std::env::var("MUTATION_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(400usize);
        for round in 0..rounds {
            let mut w = words.clone();
            for _ in 0..1 + next() % 3 {
                let i = 5 + (next() as usize) % (w.len() - 5);
                match next() % 4 {
                    0 => w[i] = next() as u32,
                    1 => w[i] ^= 1 << (next() % 32),
                    // Another id of the module: operands of the wrong kind, cycles.
                    2 => w[i] = (next() % u64::from(w[3].max(1))) as u32,
                    _ => w[i] = (w[i] & 0xffff_0000) | (next() % 400) as u32,
                }
            }
            let target = targets[round % targets.len()]
                .and_then(spv_subgroup_validate::target::Target::preset);
            let mut opts = ValidateOptions::default().with_target_env("vulkan1.1");
            opts.target = target;
            if let Ok(r) = validate(&w, &opts) {
                let _ = render_human(&r, "m.spv");
                let _ = render_json(&r, "m.spv");
            }
        }
    }
}
