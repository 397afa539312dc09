//! The fuzz targets: bytes in, a panic naming the broken property out (libFuzzer's crash).
//!
//! - [`validate`]: the validator on any bytes, with no target and with every preset;
//! - [`lower`]: the lowering on any bytes, for every preset, held to [`crate::props`], and
//!   emulated at a subgroup size for one preset (both picked from the input,
//!   [`crate::props::emulated_size`]);
//! - [`lower_structured`]: the same on a valid module that [`crate::grammar`] builds from the bytes;
//! - [`target_json`]: the target file parsers, and a lowering with every target they accept.

use spv_subgroup_lower::Target;
use spv_subgroup_validate::target::PRESETS;
use spv_subgroup_validate::{
    check_structure, render_human, render_json, words_from_bytes, ValidateOptions,
};

use crate::props::{check_emulated, check_lower, cli_outcome, emulated_size, Checks, Outcome};
use crate::tools::{spirv_val_accepts, spirv_val_in_loop};

/// Every preset, in `spv-subgroup targets` order.
pub fn presets() -> Vec<Target> {
    PRESETS
        .iter()
        .filter_map(|(name, _)| Target::preset(name))
        .collect()
}

fn checks() -> Checks {
    Checks {
        spirv_val_output: spirv_val_in_loop(),
    }
}

/// The validator: never panics, agrees with its own structure check, renders every report, and
/// gives the same report twice.
pub fn validate(data: &[u8]) {
    let Ok(words) = words_from_bytes(data) else {
        return;
    };
    let mut options = vec![ValidateOptions::default()];
    options.extend(
        presets()
            .into_iter()
            .map(|t| ValidateOptions::default().with_target(t)),
    );
    let structure_ok = check_structure(&words).is_ok();
    for opts in &options {
        let first = validate_once(&words, opts);
        assert_eq!(
            structure_ok,
            first.is_ok(),
            "check_structure and validate disagree on readability"
        );
        let second = validate_once(&words, opts);
        assert_eq!(first, second, "validate is not deterministic");
        if let Ok(report) = first {
            let _ = render_human(&report, "fuzz.spv");
            let _ = render_json(&report, "fuzz.spv");
        }
    }
}

fn validate_once(
    words: &[u32],
    opts: &ValidateOptions,
) -> Result<spv_subgroup_validate::Report, String> {
    spv_subgroup_validate::validate(words, opts).map_err(|e| e.to_string())
}

/// The lowering for every preset, on whatever the bytes are.
pub fn lower(data: &[u8]) {
    let Ok(words) = words_from_bytes(data) else {
        return;
    };
    lower_words_all_presets(&words);
}

/// The lowering for every preset, on a valid module built from the bytes by the grammar.
pub fn lower_structured(data: &[u8]) {
    let Some(words) = crate::grammar::module_from_bytes(data) else {
        return;
    };
    lower_words_all_presets(&words);
}

fn lower_words_all_presets(words: &[u32]) {
    let checks = checks();
    let presets = presets();
    for target in &presets {
        if let Err(e) = check_lower(words, target, checks) {
            panic!("property failed: {e}");
        }
    }
    lower_emulated(words, &presets, checks);
}

/// `lower --emulate-subgroup-size N` for one preset, N and the preset picked from the input.
pub fn lower_emulated(words: &[u32], presets: &[Target], checks: Checks) {
    let (n, k) = emulated_size(words, presets.len());
    if let Some(target) = presets.get(k) {
        if let Err(e) = check_emulated(words, target, n, checks) {
            panic!("property failed: {e}");
        }
    }
}

/// The target parsers: our format (with a serde round trip of what it accepts), the vulkaninfo
/// format and the sniffing `from_any_json`; every accepted target then lowers a small fixed module
/// with the properties of [`lower`].
pub fn target_json(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ours = Target::from_json(text);
    let _ = Target::from_vulkaninfo_json(text);
    let any = Target::from_any_json(text);
    if let Ok(t) = &ours {
        let back = serde_json_roundtrip(t);
        assert_eq!(
            back.as_ref(),
            Ok(t),
            "an accepted target does not survive its own serialization"
        );
    }
    for t in ours.iter().chain(any.iter()) {
        // Validation with the target must not panic either.
        let sample = crate::grammar::sample_module();
        let _ = spv_subgroup_validate::validate(
            &sample,
            &ValidateOptions::default().with_target(t.clone()),
        );
        let outcome = cli_outcome(&sample, t);
        if let Outcome::Internal(why) = outcome {
            match spirv_val_accepts(&sample, &t.target_env) {
                Ok(false) => {}
                Ok(true) => panic!(
                    "property failed: exit 3 on a valid module with target file {text:?}: {why}"
                ),
                Err(e) => panic!("{e}"),
            }
        }
    }
}

fn serde_json_roundtrip(t: &Target) -> Result<Target, String> {
    let text = serde_json::to_string(t).map_err(|e| e.to_string())?;
    Target::from_json(&text).map_err(|e| e.to_string())
}
