//! `spv-subgroup lower`: rewrite vote and partitioned operations into what a target has.
//!
//! The output is verified with our validator (unless `--no-verify`) before anything is written,
//! and written atomically. A module that needs no change is written back byte for byte.
//! [`Job::lower`] does one module; several inputs or a directory go to [`crate::lower_tree`].

use clap::{Args, ValueEnum};
use std::path::PathBuf;

use spv_subgroup_lower::{
    lower_words, verify_lowered, FloatPartition, LowerError, LowerOptions, LowerReport, VerifyError,
};
use spv_subgroup_validate::{render_human, words_from_bytes};

use crate::args::{load_target, parse_subgroup_size, OutputArg};
use crate::io::{show_path, source_of, write_atomically, Source, Words};
use crate::{EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK};

const AFTER_HELP: &str = "\
Examples:
  spv-subgroup lower in.spv -o out.spv                    for Vulkan 1.1 core subgroup features
  spv-subgroup lower in.spv -o out.spv --target naga      what naga's SPIR-V front end accepts
  spv-subgroup lower in.spv -o out.spv --target dev.json --subgroup-size 32
  spv-subgroup lower - -o - < in.spv > out.spv            stdin to stdout
  spv-subgroup lower shaders/ -o lowered/                 every *.spv below shaders/, mirrored
  spv-subgroup lower a.spv b.spv -o lowered/              into lowered/a.spv and lowered/b.spv

Exit status:
  0  lowered (or nothing to lower) and written
  1  the input is malformed, or cannot be lowered for the target (the message names the
     instruction and the missing feature)
  2  usage error or IO error
  3  internal error: the lowered module failed verification; nothing was written (please report it)
  With several inputs, the highest status any module calls for (3, then 2, then 1).";

/// How partition keys of float type are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FloatPartitionArg {
    /// As the spec says: +0.0 and -0.0 share a subset, every NaN may stand alone.
    Spec,
    /// Compare bit patterns, as NVIDIA's native implementation does.
    Bitwise,
}

/// Rewrite subgroup vote and partitioned operations into ballot and shuffle sequences a target runs.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct Opts {
    /// The SPIR-V binary to read (`-` for stdin), or several files and directories: then `-o`
    /// names a directory that mirrors them (every `*.spv` below a directory, lowered in parallel).
    #[arg(value_name = "INPUT", required = true)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    output: OutputArg,
    /// The device to lower for: a preset (see `spv-subgroup targets`) or a JSON file
    /// (our format or a `vulkaninfo --json` report).
    #[arg(long, value_name = "NAME|FILE", default_value = "vulkan1.1")]
    target: String,
    /// The subgroup size the module will run with (a power of two, 1 to 128); default: any the target allows.
    #[arg(long, value_name = "N", value_parser = parse_subgroup_size)]
    subgroup_size: Option<u32>,
    /// How partition keys of float type are compared.
    #[arg(long, value_enum, default_value_t = FloatPartitionArg::Spec, value_name = "MODE")]
    float_partition: FloatPartitionArg,
    /// Check the output with our validator before writing it (the default).
    #[arg(long, overrides_with = "no_verify")]
    verify: bool,
    /// Skip checking the output.
    #[arg(long, overrides_with = "verify")]
    no_verify: bool,
    /// Print nothing on success.
    #[arg(short, long)]
    quiet: bool,
}

impl Opts {
    /// Runs the command; returns the exit status.
    pub fn run(self) -> anyhow::Result<u8> {
        let target = load_target(&self.target)?;
        if let Some(n) = self.subgroup_size {
            if !(target.min_subgroup_size..=target.max_subgroup_size).contains(&n) {
                anyhow::bail!(
                    "--subgroup-size {n} is outside the sizes target `{}` runs with ({}..={})",
                    target.name,
                    target.min_subgroup_size,
                    target.max_subgroup_size
                );
            }
        }
        let job = Job {
            opts: LowerOptions::new(target.clone())
                .with_subgroup_size(self.subgroup_size)
                .with_float_partition(match self.float_partition {
                    FloatPartitionArg::Spec => FloatPartition::Spec,
                    FloatPartitionArg::Bitwise => FloatPartition::Bitwise,
                }),
            target_arg: self.target.clone(),
            verify: !self.no_verify,
        };
        if crate::lower_tree::is_tree(&self.inputs) {
            return crate::lower_tree::run(&self.inputs, &self.output.output, &job, self.quiet);
        }
        let source = source_of(&self.inputs[0]);
        if source == Source::Stdin {
            crate::io::check_stdin_not_terminal()?;
        }
        let name = source.display_name();
        // Read as words (its bytes are never held), freed before the output is written: see
        // the memory bound in docs/PERFORMANCE.md.
        let input = match source.read_words()? {
            Ok(input) => input,
            Err(e) => {
                eprintln!("error: `{name}` is not a valid SPIR-V module: {e}");
                return Ok(EXIT_FINDINGS);
            }
        };
        let out = &self.output.output;
        match job.lower_input(&name, &input, &show_path(out)) {
            Ok(done) => {
                match &done {
                    // Written back exactly as read (same bytes, same byte order).
                    Done::Unchanged => write_atomically(out, &input.to_bytes())?,
                    Done::Lowered(bytes, _) => {
                        drop(input);
                        write_atomically(out, bytes)?;
                    }
                }
                if !self.quiet {
                    match &done {
                        Done::Unchanged => eprintln!(
                            "nothing to lower for target {}: module written unchanged",
                            target.name
                        ),
                        Done::Lowered(_, report) => eprintln!("{}", summary(report, &target.name)),
                    }
                }
                Ok(EXIT_OK)
            }
            Err(refused) => {
                eprintln!("{}", refused.message);
                Ok(refused.exit)
            }
        }
    }
}

/// What every module of a run is lowered with.
pub struct Job {
    /// The lowering options (target, subgroup size, float partition).
    pub opts: LowerOptions,
    /// `--target` as given, for messages.
    pub target_arg: String,
    /// Whether to verify the output (`--no-verify` clears it).
    pub verify: bool,
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
            exit: EXIT_FINDINGS,
            message,
            kind,
        };
        let words = &input.words;
        let (lowered, report) = lower_words(words, &self.opts).map_err(|e| match e {
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
            _ => refuse("invalid", format!("error: `{name}` cannot be lowered: {e}")),
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
            verify_lowered(words, &lowered, report.changed, &self.opts, None)
                .map_err(|e| self.verify_failed(name, out, e))?;
        }
        Ok(if report.changed {
            Done::Lowered(crate::io::into_le_bytes(lowered), report)
        } else {
            Done::Unchanged
        })
    }

    /// Explains a failed verification: the input's own fault (exit 1) or ours (exit 3).
    fn verify_failed(&self, name: &str, out: &str, e: VerifyError) -> Refused {
        const REPORT: &str = "internal error, please report it at https://github.com/spv-subgroup/spv-subgroup/issues";
        match e {
            VerifyError::Binary(parse) => Refused {
                exit: EXIT_FINDINGS,
                message: format!("error: `{name}` is not a valid SPIR-V module: {parse}"),
                kind: "malformed",
            },
            // `verify_lowered` does not lower; kept apart so a new case cannot be mistaken for ours.
            VerifyError::Lower(_) => Refused {
                exit: EXIT_FINDINGS,
                message: format!("error: `{name}` cannot be lowered: {e}"),
                kind: "invalid",
            },
            VerifyError::Input { ref errors } => Refused {
                exit: EXIT_FINDINGS,
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
                exit: EXIT_INTERNAL,
                message: format!(
                    "error: {REPORT}: the lowered module does not parse: {parse}\nnote: `{out}` was not written"
                ),
                kind: "internal",
            },
            VerifyError::Internal { errors, .. } => Refused {
                exit: EXIT_INTERNAL,
                message: format!(
                    "error: {REPORT} (with the input module and this command line): the lowered module fails validation\n{}\
                     note: `{out}` was not written; --no-verify writes it anyway",
                    render_human(&errors, &format!("{name} (lowered)"))
                ),
                kind: "internal",
            },
            // `VerifyError` is `#[non_exhaustive]`: a kind added later is reported as ours
            // until it gets its own arm.
            _ => Refused {
                exit: EXIT_INTERNAL,
                message: format!("error: {REPORT}: {e}\nnote: `{out}` was not written"),
                kind: "internal",
            },
        }
    }
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

/// The one-line summary, e.g. `lowered 3 ops: 1 OpSubgroupAllKHR, 2 OpGroupNonUniformPartitionNV (target vulkan1.1)`.
pub fn summary(report: &LowerReport, target: &str) -> String {
    let total: usize = report.rewrites.iter().map(|(_, n)| n).sum();
    // Up to six kinds are listed one by one; more are counted per family, so the line stays a line.
    let parts: Vec<String> = if report.rewrites.len() <= 6 {
        report
            .rewrites
            .iter()
            .map(|(what, n)| format!("{n} {what}"))
            .collect()
    } else {
        let mut families = [
            ("votes", 0),
            ("partitions", 0),
            ("partitioned reduces/scans", 0),
        ];
        for (what, n) in &report.rewrites {
            let family = if what.starts_with("OpSubgroup") {
                0
            } else if what.starts_with("OpGroupNonUniformPartition") {
                1
            } else {
                2
            };
            families[family].1 += n;
        }
        families
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(what, n)| format!("{n} {what}"))
            .chain([format!("{} kinds", report.rewrites.len())])
            .collect()
    };
    if parts.is_empty() {
        format!("no ops to rewrite; removed capabilities or extensions the target lacks (target {target})")
    } else {
        format!(
            "lowered {total} op{}: {} (target {target})",
            if total == 1 { "" } else { "s" },
            parts.join(", ")
        )
    }
}
