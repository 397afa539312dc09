//! Replays the committed corpus (`fuzz/corpus/NAME/`) through every fuzz target without
//! instrumentation, with the `spirv-val` checks the fuzzing loop leaves out for speed: each
//! input the fuzzer kept is checked again on every CI run.
//!
//! A corpus folder that is missing or empty fails the test: the corpus is part of the suite.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use spv_subgroup_fuzz::grammar::module_from_bytes;
use spv_subgroup_fuzz::props::{check_lower, Checks};
use spv_subgroup_fuzz::targets::{self, presets};
use spv_subgroup_validate::words_from_bytes;

fn corpus(name: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no inputs", dir.display());
    files
}

/// Runs `f` on every input of the corpus `name`; fails listing every input that panicked.
fn replay(name: &str, f: impl Fn(&[u8])) {
    let mut failures = Vec::new();
    for path in corpus(name) {
        let data = std::fs::read(&path).expect("corpus file is readable");
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| f(&data))) {
            let msg = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(format!("{}: {msg}", path.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the `{name}` corpus fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The lowering properties with `spirv-val` on every changed output of a valid input, for every
/// preset, and emulated at the size and for the preset the input picks (as the fuzz target).
fn lower_with_spirv_val(words: &[u32]) {
    let checks = Checks {
        spirv_val_output: true,
    };
    let presets = presets();
    for target in &presets {
        if let Err(e) = check_lower(words, target, checks) {
            panic!("property failed: {e}");
        }
    }
    targets::lower_emulated(words, &presets, checks);
}

#[test]
fn validate_corpus() {
    replay("validate", targets::validate);
}

#[test]
fn lower_corpus() {
    replay("lower", |data| {
        if let Ok(words) = words_from_bytes(data) {
            lower_with_spirv_val(&words);
        }
    });
}

#[test]
fn lower_structured_corpus() {
    replay("lower_structured", |data| {
        if let Some(words) = module_from_bytes(data) {
            lower_with_spirv_val(&words);
        }
    });
}

#[test]
fn target_json_corpus() {
    replay("target_json", targets::target_json);
}
