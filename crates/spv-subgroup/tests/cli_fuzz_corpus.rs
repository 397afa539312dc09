//! The CLI on the fuzz corpus (`fuzz/corpus/`, see docs/fuzzing.md): the properties issue 12
//! asks of the binary itself, which the in-process fuzz targets can only predict.
//!
//! For every module of the `lower` and `lower_structured` corpora and every preset,
//! `spv-subgroup lower` exits with a code in 0-3 (no signal), with the code
//! `spv_subgroup_fuzz::props::cli_outcome` predicts (so the fuzz targets judge what the CLI does),
//! never 3 on an input `spirv-val` accepts; on exit 0 it writes the predicted bytes, the same
//! bytes a second run writes, and a module `spirv-val` accepts whenever it accepts the input.
//! The regression tests of what fuzzing found come first.
//!
//! Cost: one process per module and preset (about 90 modules, 5 presets), `spirv-val` once per
//! module and environment, and a second run and a `spirv-val` per changed output only.

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::to_bytes;
use spv_subgroup_fuzz::grammar::module_from_bytes;
use spv_subgroup_fuzz::props::{cli_outcome, Outcome};
use spv_subgroup_fuzz::targets::presets;
use spv_subgroup_tests::tools;
use spv_subgroup_validate::words_from_bytes;

fn lower(input: &Path, out: &Path, target: &str) -> Output {
    common::command(&["lower"], Path::new("."))
        .arg(input)
        .arg("-o")
        .arg(out)
        .args(["--target", target, "--quiet"])
        .output()
        .expect("spv-subgroup runs")
}

/// Found by the `lower` target on its first seed: a partitioned `UMin` on a signed type is
/// invalid (SG0305; spirv-val 2023.1 accepts it), and its lowered form breaks a different rule
/// (a core `UMin` on a signed type, SG0603), so the CLI blamed itself with exit 3.
#[test]
fn an_invalid_input_whose_output_breaks_another_rule_is_exit_1() {
    let path =
        tools::workspace_root().join("fixtures/validate/spvasm/partitioned_umin_signed.spvasm");
    let text = std::fs::read_to_string(&path).expect("fixture is readable");
    let words = tools::assemble(&text, "vulkan1.1").expect("fixture assembles");
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("in.spv");
    std::fs::write(&input, to_bytes(&words)).expect("write input");
    for target in presets() {
        let out = dir.path().join(format!("out-{}.spv", target.name));
        let o = lower(&input, &out, &target.name);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "target {}: {stderr}", target.name);
        assert!(
            !out.exists(),
            "target {}: an output was written",
            target.name
        );
    }
}

/// Every module of a corpus: `(file, words)`.
fn modules(corpus: &str, decode: impl Fn(&[u8]) -> Option<Vec<u32>>) -> Vec<(PathBuf, Vec<u32>)> {
    let dir = tools::workspace_root().join("fuzz/corpus").join(corpus);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no inputs", dir.display());
    files
        .into_iter()
        .filter_map(|f| {
            let data = std::fs::read(&f).expect("corpus file is readable");
            decode(&data).map(|w| (f, w))
        })
        .collect()
}

fn check_corpus(corpus: &str, decode: impl Fn(&[u8]) -> Option<Vec<u32>>) {
    tools::require("spirv-val");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut failures = Vec::new();
    let mut runs = 0;
    for (file, words) in modules(corpus, decode) {
        let input = dir.path().join("in.spv");
        std::fs::write(&input, to_bytes(&words)).expect("write input");
        // Whether spirv-val accepts the input, per environment, asked only when needed.
        let mut valid: HashMap<String, bool> = HashMap::new();
        let mut input_valid = |env: &str| {
            *valid
                .entry(env.to_owned())
                .or_insert_with(|| tools::spirv_val(&words, env).is_ok())
        };
        for target in presets() {
            let at = format!("{} for {}", file.display(), target.name);
            let out = dir.path().join("out.spv");
            let _ = std::fs::remove_file(&out);
            let o = lower(&input, &out, &target.name);
            runs += 1;
            let Some(code) = o.status.code() else {
                failures.push(format!("{at}: killed by a signal ({:?})", o.status));
                continue;
            };
            let predicted = cli_outcome(&words, &target);
            let expected = match &predicted {
                Outcome::Lowered { .. } => 0,
                Outcome::Refused(_) => 1,
                Outcome::Internal(_) => 3,
            };
            if code != expected {
                failures.push(format!(
                    "{at}: exit {code}, the fuzz targets predict {expected} ({predicted:?}): {}",
                    String::from_utf8_lossy(&o.stderr)
                ));
            }
            if code == 3 && input_valid(&target.target_env) {
                failures.push(format!("{at}: exit 3 on an input spirv-val accepts"));
            }
            if code != 0 {
                continue;
            }
            let written = std::fs::read(&out).ok();
            if let Outcome::Lowered { words: want, .. } = &predicted {
                if written.as_deref() != Some(to_bytes(want).as_slice()) {
                    failures.push(format!("{at}: the output file is not the lowered module"));
                }
            }
            let Some(written) = written else {
                failures.push(format!("{at}: exit 0 and no output file"));
                continue;
            };
            if written == to_bytes(&words) {
                // Unchanged: the input's validity is the output's, and nothing can vary.
                continue;
            }
            let again = dir.path().join("again.spv");
            let o2 = lower(&input, &again, &target.name);
            runs += 1;
            if o2.status.code() != Some(0) || std::fs::read(&again).ok().as_ref() != Some(&written)
            {
                failures.push(format!(
                    "{at}: a second run gives other bytes or another exit"
                ));
            }
            if input_valid(&target.target_env) {
                let lowered = words_from_bytes(&written).expect("the output is whole words");
                if let Err(e) = tools::spirv_val(&lowered, &target.target_env) {
                    failures.push(format!(
                        "{at}: spirv-val accepts the input and rejects the output: {e}"
                    ));
                }
            }
        }
    }
    assert!(runs > 0, "no CLI run on the {corpus} corpus");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lower_corpus_through_the_cli() {
    check_corpus("lower", |d| words_from_bytes(d).ok());
}

#[test]
fn lower_structured_corpus_through_the_cli() {
    check_corpus("lower_structured", module_from_bytes);
}
