//! Arguments shared by several subcommands, flattened into each subcommand's `Opts`.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use spv_subgroup_validate::target::{Target, TargetError, PRESETS};

/// The `--target-env` names `spirv-val` 2023.1 accepts, which we accept too (the same list
/// checks a target file's `target_env`).
pub use spv_subgroup_validate::target::TARGET_ENVS;

/// Parses a `--target-env` value, rejecting names spirv-val would not know.
pub fn parse_target_env(s: &str) -> Result<String, String> {
    if TARGET_ENVS.contains(&s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "unknown target environment `{s}`{}; expected one of: {}",
            crate::suggest::hint(s, TARGET_ENVS.iter().copied()),
            TARGET_ENVS.join(", ")
        ))
    }
}

/// Parses `--emulate-subgroup-size`: a power of two from 1 to 64.
pub fn parse_emulated_size(s: &str) -> Result<u32, String> {
    match parse_subgroup_size(s) {
        Ok(n) if n <= 64 => Ok(n),
        Ok(n) => Err(format!(
            "an emulated subgroup size is a power of two from 1 to 64, got {n}"
        )),
        Err(e) => Err(e.replace("1 to 128", "1 to 64")),
    }
}

/// Parses a subgroup size: a power of two from 1 to 128.
pub fn parse_subgroup_size(s: &str) -> Result<u32, String> {
    let n: u32 = s
        .parse()
        .map_err(|e: std::num::ParseIntError| match e.kind() {
            std::num::IntErrorKind::PosOverflow => {
                format!("`{s}` is out of range: a subgroup size is a power of two from 1 to 128")
            }
            _ => format!("`{s}` is not a number"),
        })?;
    if n.is_power_of_two() && n <= 128 {
        Ok(n)
    } else {
        Err(format!(
            "subgroup size must be a power of two from 1 to 128, got {n}"
        ))
    }
}

/// `--target NAME|FILE`: which device's subgroup features to check against or lower for.
#[derive(Debug, Args)]
pub struct TargetArg {
    /// A target preset (see `spv-subgroup targets`), or a JSON file: our format
    /// (`spv-subgroup targets --show NAME`) or a `vulkaninfo --json` report.
    #[arg(long, value_name = "NAME|FILE")]
    pub target: Option<String>,
}

impl TargetArg {
    /// The chosen target, if any.
    pub fn load(&self) -> anyhow::Result<Option<Target>> {
        self.target.as_deref().map(load_target).transpose()
    }
}

/// Loads a preset or a target file, with a message naming what was asked for.
pub fn load_target(name: &str) -> anyhow::Result<Target> {
    Target::load(name).map_err(|e| {
        // A name that is no preset and no file is most likely a misspelt preset.
        let hint = match e {
            TargetError::Unknown { .. } => crate::suggest::hint(name, PRESETS.iter().map(|p| p.0)),
            _ => String::new(),
        };
        anyhow::Error::new(e).context(format!("cannot use target `{name}`{hint}"))
    })
}

/// When to colour human output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal, as `NO_COLOR`, `CLICOLOR` and `CLICOLOR_FORCE` allow.
    #[default]
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

impl ColorChoice {
    /// Whether to colour stdout.
    pub fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            // The conventions of no-color.org and bixense.com/clicolors: `NO_COLOR` (non-empty)
            // wins, then `CLICOLOR_FORCE` (not `0`) colours even a pipe, then `CLICOLOR=0`
            // turns colour off; otherwise a terminal that is not `dumb` gets colour.
            ColorChoice::Auto => {
                let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
                if set("NO_COLOR").is_some() {
                    false
                } else if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
                    true
                } else if set("CLICOLOR").is_some_and(|v| v == "0") {
                    false
                } else {
                    std::io::stdout().is_terminal()
                        && std::env::var("TERM").map_or(true, |t| t != "dumb")
                }
            }
        }
    }
}

/// Options of every command that prints findings.
#[derive(Debug, Args)]
pub struct GeneralOpts {
    /// When to colour the output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Print only error-level findings and no summary.
    #[arg(short, long)]
    pub quiet: bool,
}

/// Input files, directories or `-` for stdin.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// SPIR-V binaries; a directory is searched recursively for `*.spv`; `-` or nothing reads stdin.
    #[arg(value_name = "INPUT")]
    pub inputs: Vec<PathBuf>,
}

/// `-o OUT`, `-` for stdout.
#[derive(Debug, Args)]
pub struct OutputArg {
    /// Where to write the result, `-` for stdout. Written atomically: a failure leaves no partial file.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
}
