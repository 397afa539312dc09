//! `spv-subgroup lower`: rewrite vote and partitioned operations into what a target has.
//!
//! The output is verified with our validator (unless `--no-verify`) before anything is written,
//! and written atomically. A module that needs no change is written back byte for byte.

use clap::{Args, ValueEnum};
use spv_subgroup_lower::{lower_words, FloatPartition, LowerError, LowerOptions, LowerReport};
use spv_subgroup_validate::{render_human, validate, words_from_bytes, Severity, ValidateOptions};

use crate::args::{load_target, parse_subgroup_size, InputArg, OutputArg};
use crate::io::{source_of, write_atomically, Source};
use crate::{EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK};

const AFTER_HELP: &str = "\
Examples:
  spv-subgroup lower in.spv -o out.spv                    for Vulkan 1.1 core subgroup features
  spv-subgroup lower in.spv -o out.spv --target naga      what naga's SPIR-V front end accepts
  spv-subgroup lower in.spv -o out.spv --target dev.json --subgroup-size 32
  spv-subgroup lower - -o - < in.spv > out.spv            stdin to stdout

Exit status:
  0  lowered (or nothing to lower) and written
  1  the input is malformed, or cannot be lowered for the target (the message names the
     instruction and the missing feature)
  2  usage error or IO error
  3  internal error: the lowered module failed verification; nothing was written (please report it)";

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
    #[command(flatten)]
    input: InputArg,
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
        let source = source_of(&self.input.input);
        if source == Source::Stdin {
            crate::io::check_stdin_not_terminal()?;
        }
        let name = source.display_name();
        let bytes = source.read()?;
        let words = match words_from_bytes(&bytes) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("error: `{name}` is not a valid SPIR-V module: {e}");
                return Ok(EXIT_FINDINGS);
            }
        };
        let opts = LowerOptions {
            target: target.clone(),
            subgroup_size: self.subgroup_size,
            float_partition: match self.float_partition {
                FloatPartitionArg::Spec => FloatPartition::Spec,
                FloatPartitionArg::Bitwise => FloatPartition::Bitwise,
            },
        };
        let (lowered, report) = match lower_words(&words, &opts) {
            Ok(r) => r,
            Err(e) => {
                match e {
                    LowerError::Parse(_) => {
                        eprintln!("error: `{name}` is not a module that can be lowered: {e}")
                    }
                    // The message already says "cannot be lowered for target ..." and names the instruction.
                    LowerError::Unsupported { .. } => eprintln!("error: `{name}`: {e}"),
                    _ => eprintln!("error: `{name}` cannot be lowered: {e}"),
                }
                return Ok(EXIT_FINDINGS);
            }
        };
        #[cfg(debug_assertions)]
        let lowered = if report.changed {
            break_output_for_tests(lowered)
        } else {
            lowered
        };
        // Every output is judged against the target, also one written back unchanged: "nothing
        // to lower" must not pass off a module the target cannot run.
        if !self.no_verify {
            let vopts = ValidateOptions {
                target_env: Some(target.target_env.clone()),
                target: Some(target.clone()),
            };
            let out_report = match validate(&lowered, &vopts) {
                Ok(r) => r,
                Err(e) if !report.changed => {
                    // Cannot happen after `lower_words` read it, but the input is to blame then.
                    eprintln!("error: `{name}` is not a valid SPIR-V module: {e}");
                    return Ok(EXIT_FINDINGS);
                }
                Err(e) => {
                    eprintln!(
                        "error: internal error, please report it at https://github.com/spv-subgroup/spv-subgroup/issues: \
                         the lowered module does not parse: {e}\nnote: `{}` was not written",
                        self.output.output.display()
                    );
                    return Ok(EXIT_INTERNAL);
                }
            };
            if out_report.has_errors() {
                return Ok(self.verify_failed(&name, &words, &out_report, &vopts, report.changed));
            }
        }
        if !report.changed {
            // Written back exactly as read (same bytes, same endianness).
            write_atomically(&self.output.output, &bytes)?;
            if !self.quiet {
                eprintln!(
                    "nothing to lower for target {}: module written unchanged",
                    target.name
                );
            }
            return Ok(EXIT_OK);
        }
        let out_bytes: Vec<u8> = lowered.iter().flat_map(|w| w.to_le_bytes()).collect();
        write_atomically(&self.output.output, &out_bytes)?;
        if !self.quiet {
            eprintln!("{}", summary(&report, &target.name));
        }
        Ok(EXIT_OK)
    }

    /// Explains a failed verification: the input's own fault (exit 1) or ours (exit 3).
    ///
    /// The input is judged with the same target: an output error is ours only when the input
    /// does not already have as many errors of that rule (ids and offsets move in a rewrite, the
    /// rule a construct breaks does not).
    fn verify_failed(
        &self,
        name: &str,
        input: &[u32],
        out_report: &spv_subgroup_validate::Report,
        vopts: &ValidateOptions,
        changed: bool,
    ) -> u8 {
        let out = self.output.output.display();
        let input_report = if changed {
            validate(input, vopts).ok()
        } else {
            Some(out_report.clone())
        };
        let new_errors = match &input_report {
            Some(inp) => errors_not_in(out_report, inp),
            None => errors_only(out_report),
        };
        match input_report {
            Some(inp) if new_errors.diagnostics.is_empty() => {
                let findings = render_human(&errors_only(&inp), name);
                eprintln!(
                    "error: `{name}` cannot be lowered for target `{}`: it has constructs the target \
                     lacks that `lower` does not rewrite (or is itself invalid)\n{findings}\
                     note: `{out}` was not written",
                    self.target
                );
                EXIT_FINDINGS
            }
            _ => {
                let findings = render_human(&new_errors, &format!("{name} (lowered)"));
                eprintln!(
                    "error: internal error, please report it at https://github.com/spv-subgroup/spv-subgroup/issues \
                     (with the input module and this command line): the lowered module fails validation\n{findings}\
                     note: `{out}` was not written; --no-verify writes it anyway"
                );
                EXIT_INTERNAL
            }
        }
    }
}

/// The report's error-level findings.
fn errors_only(report: &spv_subgroup_validate::Report) -> spv_subgroup_validate::Report {
    let mut r = report.clone();
    r.diagnostics.retain(|d| d.severity == Severity::Error);
    r
}

/// The output's errors beyond what the input already has, counted per rule.
fn errors_not_in(
    output: &spv_subgroup_validate::Report,
    input: &spv_subgroup_validate::Report,
) -> spv_subgroup_validate::Report {
    let mut budget: std::collections::HashMap<spv_subgroup_validate::Rule, usize> =
        std::collections::HashMap::new();
    for d in input
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        *budget.entry(d.rule).or_insert(0) += 1;
    }
    let mut r = errors_only(output);
    r.diagnostics.retain(|d| match budget.get_mut(&d.rule) {
        Some(n) if *n > 0 => {
            *n -= 1;
            false
        }
        _ => true,
    });
    r
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
