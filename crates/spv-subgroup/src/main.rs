//! The `spv-subgroup` command line: validate and lower SPIR-V subgroup vote and partitioned operations.
//!
//! One module per subcommand, each with an `Opts` struct (clap derive) and `Opts::run()`,
//! which returns the process exit status; shared arguments live in [`args`].
//! Errors that stop a command are `anyhow` errors printed with their `Caused by:` chain (exit 2),
//! except a closed stdout (`BrokenPipe`), which ends the process quietly.

mod args;
mod explain;
mod generate;
mod io;
mod lower;
mod lower_job;
mod lower_tree;
mod output;
mod parallel;
mod run;
mod signals;
mod size_compare;
mod suggest;
mod targets;
mod validate;
mod writeback;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Exit status: the command did what was asked and found nothing at error level.
pub const EXIT_OK: u8 = spv_subgroup_lower::Verdict::Lowered.exit_status();
/// Exit status: a finding at error level, a malformed module, or a module that cannot be lowered.
pub const EXIT_FINDINGS: u8 = spv_subgroup_lower::Verdict::Refused.exit_status();
/// Exit status: a usage error (bad flag, unknown target or rule) or an IO error.
pub const EXIT_USAGE: u8 = 2;
/// Exit status of `lower`: the lowered module failed verification (a bug in spv-subgroup).
pub const EXIT_INTERNAL: u8 = spv_subgroup_lower::Verdict::Internal.exit_status();

const AFTER_HELP: &str = "\
Examples:
  spv-subgroup validate shader.spv                  check one module
  spv-subgroup validate shaders/ --target lavapipe  every *.spv under shaders/, for lavapipe
  spv-subgroup validate - < shader.spv             read stdin
  spv-subgroup lower in.spv -o out.spv              rewrite vote and partitioned ops for Vulkan 1.1
  spv-subgroup explain SG0101                       what a rule means
  spv-subgroup targets --show nvidia                a target preset as editable JSON
  spv-subgroup run s.spv --subgroup-size 64 --workgroups 4 --buffer 0=in.bin --save 1=out.bin
                                                    execute in the simulator

Exit status:
  0  success: valid (warnings allowed), or lowered and written
  1  a finding at error level, a malformed module, or a module that cannot be lowered
  2  usage error or IO error
  3  internal error: the lowered module failed verification (please report it)";

/// `--version`: the release, the commit it was built from (`build.rs`; `unknown` outside a git
/// checkout) and the SPIR-V grammar it reads (the `spirv` crate's, which rspirv shares).
fn long_version() -> String {
    format!(
        "{} (commit {})\nSPIR-V grammar {}.{} revision {}",
        env!("CARGO_PKG_VERSION"),
        env!("SPV_SUBGROUP_COMMIT"),
        spirv::MAJOR_VERSION,
        spirv::MINOR_VERSION,
        spirv::REVISION
    )
}

/// Validate and lower SPIR-V subgroup vote and partitioned operations.
#[derive(Debug, Parser)]
#[command(name = "spv-subgroup", version, about, after_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Validate(validate::Opts),
    Lower(lower::Opts),
    Explain(explain::Opts),
    Targets(targets::Opts),
    Run(run::Opts),
    #[command(hide = true)]
    GenerateAssets(generate::Opts),
}

fn main() -> ExitCode {
    output::note_stdout_state();
    // clap takes `&'static str` without its `string` feature; the one string lives as long as
    // the process anyway.
    let version: &'static str = Box::leak(long_version().into_boxed_str());
    let matches = Cli::command().long_version(version).get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match cli.command {
        Command::Validate(o) => o.run(),
        Command::Lower(o) => o.run(),
        Command::Explain(o) => o.run(),
        Command::Targets(o) => o.run(),
        Command::Run(o) => o.run(),
        Command::GenerateAssets(o) => o.run(),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) if io::is_broken_pipe(&e) => ExitCode::from(EXIT_OK),
        Err(e) => {
            // Not `eprintln!`, which panics (exit 101) on a closed stderr.
            io::eprint_line(&io::error_chain(&e));
            ExitCode::from(EXIT_USAGE)
        }
    }
}
