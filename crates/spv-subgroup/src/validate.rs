//! `spv-subgroup validate`: check modules against the subgroup rules and, with `--target`, a device.
//!
//! Human output is the validator's own rendering ([`render_human`]); `--format json` prints one
//! JSON document for the whole run (documented in `docs/cli.md`):
//! `{"version":1,"files":[{"file","ok","error","findings"}],"summary":{..}}`; `--format sarif`
//! one SARIF 2.1.0 log, built by the validator ([`spv_subgroup_validate::sarif`]) from the working
//! directory, `--sarif-root` and this program's name and version ([`sarif_locator`], [`SARIF_TOOL`]).
//!
//! Files are checked in parallel on all cores ([`check_all`]); their outcomes are printed in the
//! order of the inputs as soon as every earlier one is done, so the output is the same as serial.

use clap::{Args, ValueEnum};
use serde::Serialize;
use serde_json::Value;
use spv_subgroup_validate::{
    render_human, render_json, render_short, sarif, validate, Severity, ValidateOptions,
};

use crate::args::{parse_target_env, GeneralOpts, InputArgs, TargetArg};
use crate::io::{expand_inputs, print_stdout, Source};
use crate::{EXIT_FINDINGS, EXIT_OK, EXIT_USAGE};

/// The version of the JSON document; bumped only on incompatible changes.
pub const JSON_VERSION: u32 = 1;

/// The project's home (the workspace's `repository`).
const REPOSITORY: &str = env!("CARGO_PKG_REPOSITORY");

/// What the SARIF log names as its driver: this program.
const SARIF_TOOL: sarif::Tool<'static> = sarif::Tool {
    name: "spv-subgroup",
    version: env!("CARGO_PKG_VERSION"),
    information_uri: REPOSITORY,
    rules_uri: concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/rules.md"),
};

/// The SARIF log's locator for `--sarif-root` (`None`: the working directory): relative paths
/// are taken from the working directory.
fn sarif_locator(root: Option<&std::path::Path>) -> anyhow::Result<sarif::Locator> {
    let cwd = std::env::current_dir()?;
    let root = match root {
        Some(r) => std::path::absolute(r)?,
        None => cwd.clone(),
    };
    Ok(sarif::Locator::new(cwd, root))
}

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// `error[SG0101]: ...` with the instruction disassembled and its position.
    Human,
    /// One line per finding, `FILE:LINE:COL: error[SG0201]: message`, at the shader source line
    /// where the module has line information (what editors and CI problem matchers read).
    Short,
    /// One JSON document for the whole run.
    Json,
    /// One SARIF 2.1.0 log for the whole run (GitHub code scanning and other CI viewers).
    Sarif,
}

const AFTER_HELP: &str = "\
Examples:
  spv-subgroup validate a.spv b.spv
  spv-subgroup validate shaders/ --target-env vulkan1.2 --target lavapipe
  spv-subgroup validate --target dev.json --format json shader.spv
      (dev.json from `vulkaninfo --json -o dev.json`)
  spv-subgroup validate shaders/ --format sarif > findings.sarif   (GitHub code scanning)
  cat shader.spv | spv-subgroup validate

  spv-subgroup validate shaders/ --deny warnings --allow SG0401   (CI: warnings fail, but not SG0401)

Exit status:
  0  every module is valid (warnings and notes allowed, unless --deny warnings)
  1  a finding at error level (or a warning with --deny warnings), or a malformed module
  2  usage error, or an input could not be read";

/// What `--deny` can turn into a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Deny {
    /// Warning-level findings fail the run (exit 1), as errors do.
    Warnings,
}

/// Check SPIR-V modules against the subgroup vote and partition rules (and a target's features).
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct Opts {
    #[command(flatten)]
    inputs: InputArgs,
    /// The API environment, as spirv-val means it (e.g. vulkan1.1, spv1.3, opencl2.2).
    #[arg(long, value_name = "ENV", value_parser = parse_target_env)]
    target_env: Option<String>,
    #[command(flatten)]
    target: TargetArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    format: Format,
    /// The directory SARIF paths are relative to (`%SRCROOT%`, usually the repository's root);
    /// default: the working directory. Paths outside it become absolute `file://` URIs.
    #[arg(long, value_name = "DIR")]
    sarif_root: Option<std::path::PathBuf>,
    /// Make findings of this level fail the run (exit 1): `--deny warnings`.
    #[arg(long, value_enum, value_name = "LEVEL")]
    deny: Vec<Deny>,
    /// Drop every finding of this rule (a code such as SG0401, or a rule name); repeatable.
    #[arg(long, value_name = "RULE")]
    allow: Vec<String>,
    #[command(flatten)]
    general: GeneralOpts,
}

/// The outcome for one input.
enum Outcome {
    /// The module was read and checked; the word count of each finding's instruction.
    Checked(spv_subgroup_validate::Report, Vec<u32>),
    /// The bytes are not a SPIR-V module.
    Malformed(spv_subgroup_validate::ParseError),
    /// The input could not be read.
    Io(anyhow::Error),
}

#[derive(Default)]
struct Summary {
    files: usize,
    ok: usize,
    malformed: usize,
    unreadable: usize,
    errors: usize,
    warnings: usize,
    notes: usize,
}

impl Opts {
    /// Runs the command; returns the exit status.
    pub fn run(self) -> anyhow::Result<u8> {
        // `--target-env` puts the device in that environment, as it does for `lower`: the
        // SPIR-V version it consumes is the environment's.
        let target = match (self.target.load()?, &self.target_env) {
            // (An OpenCL environment has no Vulkan device's version: the target keeps its own.)
            (Some(t), Some(env)) => Some(t.clone().with_env(env).unwrap_or(t)),
            (t, _) => t,
        };
        let allowed = self.allowed_rules()?;
        let sources = expand_inputs(&self.inputs.inputs)?;
        let mut opts = ValidateOptions::default();
        opts.target_env = self.target_env.clone();
        opts.target = target;
        let color = self.general.color.enabled();
        let mut summary = Summary::default();
        let mut files_json = Vec::new();
        let (mut sarif_results, mut sarif_notes) = (Vec::new(), Vec::new());
        let locator = sarif_locator(self.sarif_root.as_deref())?;
        check_all(&sources, &opts, |source, mut outcome| {
            if let Outcome::Checked(report, words) = &mut outcome {
                allow(report, words, &allowed);
            }
            let name = source.display_name();
            summary.files += 1;
            match &outcome {
                Outcome::Checked(report, _) => {
                    let count = |s: Severity| {
                        report
                            .diagnostics
                            .iter()
                            .filter(|d| d.severity == s)
                            .count()
                    };
                    let errors = count(Severity::Error);
                    summary.errors += errors;
                    summary.warnings += count(Severity::Warning);
                    summary.notes += count(Severity::Note);
                    if errors == 0 {
                        summary.ok += 1;
                    }
                }
                Outcome::Malformed(_) => summary.malformed += 1,
                Outcome::Io(_) => summary.unreadable += 1,
            }
            match self.format {
                Format::Human | Format::Short => self.print_human(&outcome, &name, color)?,
                Format::Json => files_json.push(file_json(&outcome, &name)),
                Format::Sarif => {
                    let artifact = locator.artifact(match source {
                        Source::File(p) | Source::Unsearchable(p, _) => Some(p.as_path()),
                        Source::Stdin => None,
                    });
                    match &outcome {
                        Outcome::Checked(report, words) => {
                            sarif_results.extend(sarif::results(report, &artifact, words, &locator))
                        }
                        Outcome::Malformed(e) => sarif_notes.push(sarif::notification(
                            &artifact,
                            &format!("`{name}` is not a valid SPIR-V module: {e}"),
                            Some(e.word_offset),
                        )),
                        Outcome::Io(e) => sarif_notes.push(sarif::notification(
                            &artifact,
                            &format!("{e:#}"),
                            None,
                        )),
                    }
                }
            }
            Ok(())
        })?;
        match self.format {
            Format::Sarif => {
                let log = sarif::log(
                    &SARIF_TOOL,
                    sarif_results,
                    sarif_notes,
                    summary.unreadable == 0,
                    &locator,
                );
                let text = serde_json::to_string_pretty(&log)?;
                print_stdout(&format!("{text}\n"))?;
            }
            Format::Json => {
                let doc = JsonDoc {
                    version: JSON_VERSION,
                    files: files_json,
                    summary: JsonSummary {
                        files: summary.files,
                        ok: summary.ok,
                        malformed: summary.malformed,
                        unreadable: summary.unreadable,
                        errors: summary.errors,
                        warnings: summary.warnings,
                        notes: summary.notes,
                    },
                };
                let text = serde_json::to_string_pretty(&doc)?;
                print_stdout(&format!("{text}\n"))?;
            }
            Format::Short => {}
            Format::Human => {
                if !self.general.quiet && summary.files > 1 {
                    crate::io::eprint_line(&summary_line(&summary));
                }
            }
        }
        let denied = self.deny.contains(&Deny::Warnings) && summary.warnings > 0;
        Ok(if summary.unreadable > 0 {
            EXIT_USAGE
        } else if summary.errors > 0 || summary.malformed > 0 || denied {
            EXIT_FINDINGS
        } else {
            EXIT_OK
        })
    }

    /// The rules `--allow` names; an unknown one is a usage error that suggests the nearest.
    fn allowed_rules(&self) -> anyhow::Result<Vec<spv_subgroup_validate::Rule>> {
        self.allow
            .iter()
            .map(|q| {
                crate::explain::find(q).ok_or_else(|| {
                    anyhow::anyhow!(
                        "--allow: no rule is called `{q}`{}; `spv-subgroup explain` lists them all",
                        crate::explain::rule_hint(q)
                    )
                })
            })
            .collect()
    }

    /// A module's findings in the human or the short format.
    fn render(&self, report: &spv_subgroup_validate::Report, name: &str) -> String {
        match self.format {
            Format::Short => render_short(report, name),
            _ => render_human(report, name),
        }
    }

    fn print_human(&self, outcome: &Outcome, name: &str, color: bool) -> anyhow::Result<()> {
        match outcome {
            Outcome::Checked(report, _) => {
                let text = if self.general.quiet {
                    let mut only_errors = report.clone();
                    only_errors
                        .diagnostics
                        .retain(|d| d.severity == Severity::Error);
                    let text = self.render(&only_errors, name);
                    // The per-file line counts what the module has, not what is shown.
                    match (self.format, text.trim_end().rsplit_once('\n')) {
                        (Format::Human, Some((findings, _))) => {
                            format!("{findings}\n{}\n", quiet_count_line(report, name))
                        }
                        _ => text,
                    }
                } else {
                    self.render(report, name)
                };
                if !text.is_empty() {
                    let text = if color { colorize(&text) } else { text };
                    print_stdout(&text)?;
                    if !text.ends_with('\n') {
                        print_stdout("\n")?;
                    }
                }
            }
            Outcome::Malformed(e) => {
                let head = if color {
                    "\x1b[1;31merror\x1b[0m"
                } else {
                    "error"
                };
                print_stdout(&format!(
                    "{head}: `{name}` is not a valid SPIR-V module: {e}\n"
                ))?;
            }
            Outcome::Io(e) => crate::io::eprint_line(&crate::io::error_chain(e)),
        }
        Ok(())
    }
}

/// The per-file line of `--quiet`: the module's real counts, saying the warnings were not shown.
fn quiet_count_line(report: &spv_subgroup_validate::Report, name: &str) -> String {
    let errors = report.count(Severity::Error);
    let warnings = report.count(Severity::Warning);
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let hidden = if warnings > 0 {
        " (not shown: --quiet)"
    } else {
        ""
    };
    format!(
        "{}: {errors} error{}, {warnings} warning{}{hidden}",
        spv_subgroup_validate::escape_controls(name),
        plural(errors),
        plural(warnings)
    )
}

/// Drops the findings of the `--allow`ed rules (and their instructions' word counts).
fn allow(
    report: &mut spv_subgroup_validate::Report,
    inst_words: &mut Vec<u32>,
    allowed: &[spv_subgroup_validate::Rule],
) {
    if allowed.is_empty() {
        return;
    }
    let keep: Vec<bool> = report
        .diagnostics
        .iter()
        .map(|d| !allowed.contains(&d.rule))
        .collect();
    let mut k = keep.iter();
    report.diagnostics.retain(|_| *k.next().unwrap_or(&true));
    let mut k = keep.iter();
    inst_words.retain(|_| *k.next().unwrap_or(&true));
}

fn check(source: &Source, opts: &ValidateOptions) -> Outcome {
    // Read as words: the input's bytes are never held (see docs/PERFORMANCE.md).
    let read = match source.read_words() {
        Ok(r) => r,
        Err(e) => return Outcome::Io(e),
    };
    let checked = read.and_then(|crate::io::Words { words, .. }| {
        let report = validate(&words, opts)?;
        let inst_words = sarif::instruction_words(&report, &words);
        Ok((report, inst_words))
    });
    match checked {
        Ok((report, inst_words)) => Outcome::Checked(report, inst_words),
        Err(e) => Outcome::Malformed(e),
    }
}

/// Checks every source on all cores and hands the outcomes to `emit` in the order of `sources`
/// ([`crate::parallel::for_each_ordered`]).
fn check_all(
    sources: &[Source],
    opts: &ValidateOptions,
    emit: impl FnMut(&Source, Outcome) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    crate::parallel::for_each_ordered(sources, |s| check(s, opts), emit)
}

/// The JSON document (keys in this order; the findings are the validator's `render_json` objects).
#[derive(Serialize)]
struct JsonDoc {
    version: u32,
    files: Vec<JsonFile>,
    summary: JsonSummary,
}

#[derive(Serialize)]
struct JsonFile {
    file: String,
    ok: bool,
    error: Option<JsonError>,
    findings: Vec<Value>,
}

#[derive(Serialize)]
struct JsonError {
    kind: &'static str,
    message: String,
    word_offset: Option<usize>,
}

#[derive(Serialize)]
struct JsonSummary {
    files: usize,
    ok: usize,
    malformed: usize,
    unreadable: usize,
    errors: usize,
    warnings: usize,
    notes: usize,
}

fn file_json(outcome: &Outcome, name: &str) -> JsonFile {
    let (ok, error, findings) = match outcome {
        Outcome::Checked(report, _) => {
            let findings = match render_json(report, name) {
                Value::Array(items) => items,
                other => vec![other],
            };
            (!report.has_errors(), None, findings)
        }
        Outcome::Malformed(e) => {
            let error = JsonError {
                kind: "malformed",
                message: e.to_string(),
                word_offset: Some(e.word_offset),
            };
            (false, Some(error), Vec::new())
        }
        Outcome::Io(e) => {
            let error = JsonError {
                kind: "io",
                message: format!("{e:#}"),
                word_offset: None,
            };
            (false, Some(error), Vec::new())
        }
    };
    JsonFile {
        file: name.to_owned(),
        ok,
        error,
        findings,
    }
}

fn summary_line(s: &Summary) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut parts = vec![format!("{} ok", s.ok)];
    let bad = s.files - s.ok - s.malformed - s.unreadable;
    if bad > 0 {
        parts.push(format!("{bad} with errors"));
    }
    if s.malformed > 0 {
        parts.push(format!("{} malformed", s.malformed));
    }
    if s.unreadable > 0 {
        parts.push(format!("{} unreadable", s.unreadable));
    }
    format!(
        "checked {}: {}; {}, {}",
        plural(s.files, "file"),
        parts.join(", "),
        plural(s.errors, "error"),
        plural(s.warnings, "warning")
    )
}

/// Colours the `error[..]`, `warning[..]` and `note[..]` heads of human output.
fn colorize(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let styled = [("error", "1;31"), ("warning", "1;33"), ("note", "1;36")]
            .iter()
            .find_map(|(word, code)| {
                let rest = line.strip_prefix(word)?;
                if !(rest.starts_with('[') || rest.starts_with(':')) {
                    return None;
                }
                let head_len = word.len() + rest.find(':').unwrap_or(0);
                Some(format!(
                    "\x1b[{code}m{}\x1b[0m{}",
                    &line[..head_len],
                    &line[head_len..]
                ))
            });
        out.push_str(styled.as_deref().unwrap_or(line));
    }
    out
}
