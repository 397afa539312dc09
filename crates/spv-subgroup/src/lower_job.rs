//! One module through `lower`: [`Job`] holds what every module of a run is lowered with (the
//! options, or the default target chosen per module from its version), lowers and verifies one
//! module, and says what to write ([`Done`]) or why not ([`Refused`], with the exit status it
//! calls for). The subcommand ([`crate::lower`]) runs one job; a tree ([`crate::lower_tree`])
//! runs it on every file.

use spv_subgroup_lower::{
    lower_words, verify_lowered, LowerError, LowerOptions, LowerReport, Verdict, VerifyError,
};
use spv_subgroup_validate::target::Target;
use spv_subgroup_validate::{render_human, words_from_bytes};

use crate::io::{eprint_line, terminal_text, Words};
use crate::EXIT_FINDINGS;

/// What every module of a run is lowered with.
pub struct Job {
    /// The lowering options (target, subgroup size, float partition).
    pub opts: LowerOptions,
    /// `--target` as given, for messages.
    pub target_arg: String,
    /// Neither `--target` nor `--target-env` was given: each module is lowered for
    /// [`Target::default_for_version`] of its own SPIR-V version, never refused for it alone.
    pub target_from_module: bool,
    /// Whether to verify the output (`--no-verify` clears it).
    pub verify: bool,
    /// `-v`: say on stderr which target and environment each module was lowered for.
    pub verbose: bool,
}

/// A module lowered and verified, ready to write.
pub enum Done {
    /// Nothing to lower: the input's own bytes are the output (same byte order).
    Unchanged,
    /// The lowered module's bytes (little-endian) and what was rewritten.
    Lowered(Vec<u8>, LowerReport),
}

impl Done {
    /// The bytes to write, given the input's bytes.
    pub fn bytes<'a>(&'a self, input: &'a [u8]) -> &'a [u8] {
        match self {
            Done::Unchanged => input,
            Done::Lowered(bytes, _) => bytes,
        }
    }
}

/// Why a module was not lowered: the exit status it calls for, the message to print (which ends
/// with the note that `OUT` was not written where that helps), and its kind for a tree's summary.
pub struct Refused {
    /// `EXIT_FINDINGS` (the input's fault) or `EXIT_INTERNAL` (ours).
    pub exit: u8,
    /// What to print on stderr, `error: ...`, possibly several lines.
    pub message: String,
    /// One word for the summary: `malformed`, `invalid`, `unsupported` or `internal`.
    pub kind: &'static str,
}

impl Job {
    /// Lowers one module read from `name`, to be written to `out` (both as messages show them).
    pub fn lower(&self, name: &str, bytes: &[u8], out: &str) -> Result<Done, Refused> {
        let words = words_from_bytes(bytes).map_err(|e| Refused {
            exit: EXIT_FINDINGS,
            message: format!("error: `{name}` is not a valid SPIR-V module: {e}"),
            kind: "malformed",
        })?;
        let input = Words {
            little_endian: bytes.starts_with(&0x0723_0203u32.to_le_bytes()),
            words,
        };
        self.lower_input(name, &input, out)
    }

    /// [`Job::lower`] of a module already read as words.
    pub fn lower_input(&self, name: &str, input: &Words, out: &str) -> Result<Done, Refused> {
        let refuse = |kind, message: String| Refused {
            exit: Verdict::Refused.exit_status(),
            message,
            kind,
        };
        let words = &input.words;
        let chosen;
        let opts = match self.target_for(words) {
            Some(target) => {
                chosen = self.opts.clone().with_target(target);
                &chosen
            }
            None => &self.opts,
        };
        if self.verbose {
            let line = format!(
                "{name}: {}",
                describe_target(&opts.target, self.target_from_module)
            );
            eprint_line(&terminal_text(&line));
        }
        let (lowered, report) = lower_words(words, opts).map_err(|e| match e {
            LowerError::Parse(_) => refuse(
                "malformed",
                format!("error: `{name}` is not a module that can be lowered: {e}"),
            ),
            // The message already says "cannot be lowered for target ..." and names the instruction.
            LowerError::Unsupported { .. } => {
                refuse("unsupported", format!("error: `{name}`: {e}"))
            }
            // `LowerError::Invalid`, and any kind added later (the enum is `#[non_exhaustive]`)
            // until it gets its own arm.
            _ => refuse(
                "invalid",
                format!(
                    "error: `{name}` cannot be lowered: {e}{}",
                    Self::input_findings(name, words, &opts.target.target_env)
                ),
            ),
        })?;
        #[cfg(debug_assertions)]
        let lowered = if report.changed {
            break_output_for_tests(lowered)
        } else {
            lowered
        };
        // Every output is judged against the target, also one written back unchanged: "nothing
        // to lower" must not pass off a module the target cannot run.
        if self.verify {
            verify_lowered(words, &lowered, report.changed, opts, None)
                .map_err(|e| self.verify_failed(name, out, e))?;
        }
        Ok(if report.changed {
            Done::Lowered(crate::io::into_le_bytes(lowered), report)
        } else {
            Done::Unchanged
        })
    }

    /// The target for a module of these words when it is chosen per module (no `--target` and
    /// no `--target-env`), from the version in its header; `None`: the job's own target. A
    /// header too short to hold a version keeps the job's target (the pass reports it).
    fn target_for(&self, words: &[u32]) -> Option<Target> {
        if !self.target_from_module {
            return None;
        }
        Target::default_for_module(words)
    }

    /// For an input the pass found invalid: our validator's errors on it (without the target,
    /// as verification judges an input on its own), so the refusal names the rule it breaks as
    /// every other target's refusal of the same input does; empty when the validator finds none.
    fn input_findings(name: &str, words: &[u32], env: &str) -> String {
        let opts =
            spv_subgroup_validate::ValidateOptions::default().with_target_env(env.to_owned());
        match spv_subgroup_validate::validate(words, &opts) {
            Ok(mut report) if report.has_errors() => {
                report
                    .diagnostics
                    .retain(|d| d.severity == spv_subgroup_validate::Severity::Error);
                format!("\n{}", render_human(&report, name).trim_end())
            }
            _ => String::new(),
        }
    }

    /// Explains a failed verification: the input's own fault (exit 1) or ours (exit 3).
    fn verify_failed(&self, name: &str, out: &str, e: VerifyError) -> Refused {
        const REPORT: &str = "internal error, please report it at https://github.com/spv-subgroup/spv-subgroup/issues";
        // The exit status is the rule's (`Verdict`, shared with the fuzz properties); the arms
        // only word the message.
        let exit = Verdict::of_verification(&e).exit_status();
        match e {
            VerifyError::Binary(parse) => Refused {
                exit,
                message: format!("error: `{name}` is not a valid SPIR-V module: {parse}"),
                kind: "malformed",
            },
            // `verify_lowered` does not lower; kept apart so a new case cannot be mistaken for ours.
            VerifyError::Lower(_) => Refused {
                exit,
                message: format!("error: `{name}` cannot be lowered: {e}"),
                kind: "invalid",
            },
            VerifyError::Input { ref errors } => Refused {
                exit,
                message: format!(
                    "error: `{name}` cannot be lowered for target `{}`: it has constructs the target \
                     lacks that `lower` does not rewrite (or is itself invalid)\n{}\
                     note: `{out}` was not written",
                    self.target_arg,
                    render_human(errors, name)
                ),
                kind: if e.input_is_invalid() {
                    "invalid"
                } else {
                    "unsupported"
                },
            },
            VerifyError::Internal {
                unreadable: Some(parse),
                ..
            } => Refused {
                exit,
                message: format!(
                    "error: {REPORT}: the lowered module does not parse: {parse}\nnote: `{out}` was not written"
                ),
                kind: "internal",
            },
            VerifyError::Internal { errors, .. } => Refused {
                exit,
                message: format!(
                    "error: {REPORT} (with the input module and this command line): the lowered module fails validation\n{}\
                     note: `{out}` was not written; --no-verify writes it anyway",
                    render_human(&errors, &format!("{name} (lowered)"))
                ),
                kind: "internal",
            },
            // `VerifyError` is `#[non_exhaustive]`: a kind added later gets the exit status
            // `Verdict` gives it and a generic message until it gets its own arm.
            _ => Refused {
                exit,
                message: format!("error: {REPORT}: {e}\nnote: `{out}` was not written"),
                kind: "internal",
            },
        }
    }
}

/// What `-v` says of the target a module was lowered for.
fn describe_target(target: &Target, from_module: bool) -> String {
    let (major, minor) = target.spirv_version;
    let how = if from_module {
        " (the default: chosen for the module's SPIR-V version; --target or --target-env choose another)"
    } else {
        ""
    };
    format!(
        "target `{}`, environment {} (SPIR-V up to {major}.{minor}){how}",
        target.name, target.target_env
    )
}

/// Debug builds only: `SPV_SUBGROUP_TEST_BREAK_OUTPUT=1` corrupts the lowered module (its magic
/// number) so the tests can check that a failed verification writes nothing and exits 3.
#[cfg(debug_assertions)]
fn break_output_for_tests(mut words: Vec<u32>) -> Vec<u32> {
    if std::env::var_os("SPV_SUBGROUP_TEST_BREAK_OUTPUT").is_some() {
        if let Some(w) = words.first_mut() {
            *w = 0;
        }
    }
    words
}
