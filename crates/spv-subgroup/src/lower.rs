//! `spv-subgroup lower`: rewrite vote and partitioned operations into what a target has.
//!
//! The output is verified with our validator (unless `--no-verify`) before anything is written,
//! and written atomically. A module that needs no change is written back byte for byte.
//! [`crate::lower_job`] does one module; several inputs or a directory go to [`crate::lower_tree`].

use clap::{Args, ValueEnum};
use std::path::PathBuf;

use spv_subgroup_lower::{FloatPartition, LowerOptions, LowerReport};

use crate::args::{
    load_target, parse_emulated_size, parse_subgroup_size, parse_target_env, OutputArg,
};
use crate::io::{eprint_line, show_path, source_of, terminal_text, Source};
use crate::lower_job::{Done, Job};
use crate::output::write_output;
use crate::{EXIT_FINDINGS, EXIT_OK};
use spv_subgroup_validate::target::Target;

const AFTER_HELP: &str = "\
Examples:
  spv-subgroup lower in.spv -o out.spv                    Vulkan 1.1 core subgroup features, in
                                                          the module's own Vulkan version
  spv-subgroup lower in.spv -o out.spv --target vulkan1.3 everything Vulkan 1.3 requires
  spv-subgroup lower in.spv -o out.spv --target-env vulkan1.2
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
    /// (our format or a `vulkaninfo --json` report). Default: Vulkan 1.1's core subgroup
    /// features in the lowest Vulkan version that takes the module's SPIR-V version.
    #[arg(long, value_name = "NAME|FILE")]
    target: Option<String>,
    /// The environment the output is for, as spirv-opt and spirv-val mean it (`vulkan1.2`,
    /// `spv1.5`, ...): the SPIR-V version it may have and the rules it is checked by. Default:
    /// the target's own environment.
    #[arg(long, value_name = "ENV", value_parser = parse_target_env)]
    target_env: Option<String>,
    /// The subgroup size the module will run with (a power of two, 1 to 128); default: any the target allows.
    #[arg(long, value_name = "N", value_parser = parse_subgroup_size)]
    subgroup_size: Option<u32>,
    /// Emulate subgroups of N lanes (a power of two, 1 to 64): the output behaves, on a device
    /// whose subgroup size is any multiple of N, as the input does on a device of size N.
    #[arg(long, value_name = "N", value_parser = parse_emulated_size)]
    emulate_subgroup_size: Option<u32>,
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
    #[arg(short, long, conflicts_with = "verbose")]
    quiet: bool,
    /// Also say which target and environment each module was lowered for.
    #[arg(short, long)]
    verbose: bool,
}

impl Opts {
    /// Runs the command; returns the exit status.
    pub fn run(self) -> anyhow::Result<u8> {
        // Without `--target`, the default's features; without `--target-env` as well, its
        // environment is chosen per module from the module's version ([`Job::target_for`]).
        let target = match &self.target {
            Some(name) => load_target(name)?,
            None => Target::default(),
        };
        let target = match &self.target_env {
            Some(env) => target.with_env(env)?,
            None => target,
        };
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
        if let Some(n) = self.emulate_subgroup_size {
            if n > target.max_subgroup_size {
                anyhow::bail!(
                    "--emulate-subgroup-size {n} is larger than the subgroups of target `{}` (at most {})",
                    target.name,
                    target.max_subgroup_size
                );
            }
            if let Some(h) = self.subgroup_size.filter(|h| h % n != 0) {
                anyhow::bail!(
                    "--subgroup-size {h} (the hardware's) is not a multiple of --emulate-subgroup-size {n}"
                );
            }
        }
        let job = Job {
            opts: LowerOptions::new(target.clone())
                .with_subgroup_size(self.subgroup_size)
                .with_emulated_subgroup_size(self.emulate_subgroup_size)
                .with_float_partition(match self.float_partition {
                    FloatPartitionArg::Spec => FloatPartition::Spec,
                    FloatPartitionArg::Bitwise => FloatPartition::Bitwise,
                }),
            target_arg: self.target.clone().unwrap_or_else(|| target.name.clone()),
            target_from_module: self.target.is_none() && self.target_env.is_none(),
            verify: !self.no_verify,
            verbose: self.verbose,
        };
        if crate::lower_tree::is_tree(&self.inputs) {
            let out = &self.output.output;
            // `-o` names a directory here; one that does not exist yet and is named like a
            // module is a slip (`lower a.spv b.spv -o res.spv`), not a wish for a directory.
            if !out.exists() && out.extension().is_some_and(|e| e == "spv") {
                anyhow::bail!(
                    "several inputs (or a directory) are lowered into a directory, but `{}` is named \
                     like a module and does not exist; lower one input at a time to write a file, \
                     or name a directory (create it first if it must end in `.spv`)",
                    show_path(out)
                );
            }
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
                eprint_line(&format!(
                    "error: `{name}` is not a valid SPIR-V module: {e}"
                ));
                return Ok(EXIT_FINDINGS);
            }
        };
        let out = &self.output.output;
        match job.lower_input(&name, &input, &show_path(out)) {
            Ok(done) => {
                match &done {
                    // Written back exactly as read (same bytes, same byte order).
                    Done::Unchanged => write_output(out, &input.to_bytes())?,
                    Done::Lowered(bytes, _) => {
                        drop(input);
                        write_output(out, bytes)?;
                    }
                }
                if !self.quiet {
                    let line = match &done {
                        Done::Unchanged => format!(
                            "nothing to lower for target {}: module written unchanged",
                            target.name
                        ),
                        Done::Lowered(_, report) => summary(report, &target.name),
                    };
                    // The target's name comes from a file: escaped as `validate` escapes it.
                    eprint_line(&terminal_text(&line));
                }
                Ok(EXIT_OK)
            }
            Err(refused) => {
                eprint_line(&terminal_text(&refused.message));
                Ok(refused.exit)
            }
        }
    }
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
