//! The properties every fuzz input is held to (issue 9 item 4, issue 12 item 3).
//!
//! [`cli_outcome`] makes the decision `spv-subgroup lower` makes about its exit status, with the
//! library calls the CLI makes (`lower_words`, `verify_lowered`) and the rule both read
//! (`spv_subgroup_lower::Verdict`): refused (exit 1), lowered (exit 0), or blamed on us (exit 3). [`check_lower`] then asks, for one target:
//! - the same input gives the same outcome and the same bytes (run twice);
//! - a lowered module lowers to itself (byte for byte) and our validator accepts it with the
//!   target (that is what "lowered" means in the CLI);
//! - exit 3 never happens on an input `spirv-val` accepts for the target's environment;
//! - with [`Checks::spirv_val_output`], a changed output of an input `spirv-val` accepts is
//!   accepted by `spirv-val` too.
//!
//! [`check_emulated`] asks the same of `lower --emulate-subgroup-size N --target T`, where a
//! lowered module is one the target takes as it is (plain lowering gives it back unchanged),
//! and an input our validator finds errors in is refused (as plain lowering refuses it: the
//! emulation judges the input before rewriting anything). [`emulated_size`] picks N from the
//! input, so the fuzzer reaches every size without a run per size.
//!
//! Exit codes outside 0-3 and signals are the CLI's business: the replay test runs the binary.

use spv_subgroup_lower::{lower_words, verify_lowered, LowerOptions, Target, Verdict};

use crate::tools::spirv_val_accepts;

/// What `spv-subgroup lower --target T` would do with a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Exit 0: written; `changed` false means the input is written back unchanged.
    Lowered {
        /// The module written.
        words: Vec<u32>,
        /// Whether the lowering rewrote anything.
        changed: bool,
    },
    /// Exit 1: the input is malformed or cannot be lowered for the target.
    Refused(String),
    /// Exit 3: the output failed verification with errors the input does not have.
    Internal(String),
}

/// Lowers `words` for `target` and decides the exit status as the CLI does (with `--verify`):
/// with the same library calls, `lower_words` then `verify_lowered`.
pub fn cli_outcome(words: &[u32], target: &Target) -> Outcome {
    cli_outcome_with(words, &LowerOptions::new(target.clone()))
}

/// [`cli_outcome`] with any options (`--emulate-subgroup-size` among them).
pub fn cli_outcome_with(words: &[u32], opts: &LowerOptions) -> Outcome {
    let opts = opts.clone();
    let (out, report) = match lower_words(words, &opts) {
        Ok(r) => r,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    match verify_lowered(words, &out, report.changed, &opts, None) {
        Ok(()) => Outcome::Lowered {
            words: if report.changed { out } else { words.to_vec() },
            changed: report.changed,
        },
        Err(e) => match Verdict::of_verification(&e) {
            Verdict::Internal => Outcome::Internal(e.to_string()),
            _ => Outcome::Refused(e.to_string()),
        },
    }
}

/// Which checks need `spirv-val` (a subprocess per module).
#[derive(Clone, Copy, Debug, Default)]
pub struct Checks {
    /// Run `spirv-val` on the input and every changed output: the output of a valid input must be valid.
    pub spirv_val_output: bool,
}

/// Checks the properties of `lower` on `words` for `target`. `Err` names the broken property.
pub fn check_lower(words: &[u32], target: &Target, checks: Checks) -> Result<Outcome, String> {
    let first = cli_outcome(words, target);
    let second = cli_outcome(words, target);
    if first != second {
        return Err(format!(
            "nondeterminism: two runs for target `{}` disagree",
            target.name
        ));
    }
    match &first {
        Outcome::Refused(_) => {}
        Outcome::Internal(why) => {
            // Exit 3 is right only when the input is itself invalid (the CLI cannot always tell).
            if spirv_val_accepts(words, &target.target_env)? {
                return Err(format!(
                    "exit 3 on an input spirv-val accepts (target `{}`, env {}): {why}",
                    target.name, target.target_env
                ));
            }
        }
        Outcome::Lowered {
            words: out,
            changed,
        } => {
            if *changed {
                match cli_outcome(out, target) {
                    Outcome::Lowered { words: again, .. } if &again == out => {}
                    Outcome::Lowered { .. } => {
                        return Err(format!(
                            "not idempotent: lowering the output for `{}` changes it again",
                            target.name
                        ))
                    }
                    other => {
                        return Err(format!(
                            "the output for `{}` does not lower to itself: {other:?}",
                            target.name
                        ))
                    }
                }
                if checks.spirv_val_output
                    && spirv_val_accepts(words, &target.target_env)?
                    && !spirv_val_accepts(out, &target.target_env)?
                {
                    return Err(format!(
                        "miscompile: spirv-val --target-env {} accepts the input and rejects the output for `{}`",
                        target.target_env, target.name
                    ));
                }
            }
        }
    }
    Ok(first)
}

/// The emulated size and the preset index for `words`: N a power of two from 1 to 64 and one of
/// `presets` presets, both from a hash of the words (one emulated lowering per input keeps the
/// loop and the corpus replay cheap; the fuzzer's mutations move the hash over all pairs).
pub fn emulated_size(words: &[u32], presets: usize) -> (u32, usize) {
    // FNV-1a over the words: stable across runs and platforms.
    let h = words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, w| {
        (h ^ u64::from(*w)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    (1u32 << (h % 7), ((h >> 8) % presets.max(1) as u64) as usize)
}

/// Checks the properties of `lower --emulate-subgroup-size n` on `words` for `target`.
/// `Err` names the broken property.
pub fn check_emulated(
    words: &[u32],
    target: &Target,
    n: u32,
    checks: Checks,
) -> Result<Outcome, String> {
    let opts = LowerOptions::new(target.clone()).with_emulated_subgroup_size(Some(n));
    let what = format!("target `{}` emulating {n}", target.name);
    let first = cli_outcome_with(words, &opts);
    if first != cli_outcome_with(words, &opts) {
        return Err(format!("nondeterminism: two runs for {what} disagree"));
    }
    if !matches!(first, Outcome::Refused(_)) && our_validator_finds_errors(words, target) {
        return Err(format!(
            "an input our validator finds errors in is not refused for {what}: {first:?}"
        ));
    }
    match &first {
        Outcome::Refused(_) => {}
        Outcome::Internal(why) => {
            if spirv_val_accepts(words, &target.target_env)? {
                return Err(format!(
                    "exit 3 on an input spirv-val accepts ({what}, env {}): {why}",
                    target.target_env
                ));
            }
        }
        Outcome::Lowered {
            words: out,
            changed,
        } => {
            if *changed {
                // The emulated module is lowered for the target: plain lowering keeps it.
                match cli_outcome(out, target) {
                    Outcome::Lowered { words: again, .. } if &again == out => {}
                    Outcome::Lowered { .. } => {
                        return Err(format!(
                            "not idempotent: lowering the output of {what} changes it again"
                        ))
                    }
                    other => {
                        return Err(format!(
                            "the output of {what} does not lower to itself: {other:?}"
                        ))
                    }
                }
                if checks.spirv_val_output
                    && spirv_val_accepts(words, &target.target_env)?
                    && !spirv_val_accepts(out, &target.target_env)?
                {
                    return Err(format!(
                        "miscompile: spirv-val --target-env {} accepts the input and rejects the output of {what}",
                        target.target_env
                    ));
                }
            }
        }
    }
    Ok(first)
}

/// Whether our validator finds an error in `words` on their own (no target), in the target's
/// environment: verification blames such an input, so plain lowering refuses it.
fn our_validator_finds_errors(words: &[u32], target: &Target) -> bool {
    let opts = spv_subgroup_validate::ValidateOptions::default()
        .with_target_env(target.target_env.clone());
    spv_subgroup_validate::validate(words, &opts).is_ok_and(|r| r.has_errors())
}
