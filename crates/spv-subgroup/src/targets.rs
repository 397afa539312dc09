//! `spv-subgroup targets`: list the target presets, or print one target as editable JSON.

use clap::Args;
use spv_subgroup_validate::target::PRESETS;

use crate::args::load_target;
use crate::io::print_stdout;
use crate::EXIT_OK;

const AFTER_HELP: &str = "\
Examples:
  spv-subgroup targets                           list the presets
  spv-subgroup targets --show lavapipe > my.json edit my.json, then: --target my.json
  vulkaninfo --json -o dev.json && spv-subgroup targets --show dev.json

Exit status:
  0  printed
  2  unknown preset, or a file that is no target description";

/// List target presets, or show one target (a preset or a file) in our JSON format.
#[derive(Debug, Args)]
#[command(after_help = AFTER_HELP)]
pub struct Opts {
    /// Print this target (a preset name, or a JSON file in our or vulkaninfo's format) as our JSON.
    #[arg(long, value_name = "NAME|FILE")]
    show: Option<String>,
}

impl Opts {
    /// Runs the command; returns the exit status.
    pub fn run(self) -> anyhow::Result<u8> {
        let text = match self.show {
            Some(name) => {
                let target = load_target(&name)?;
                format!(
                    "{}\n",
                    compact_arrays(&serde_json::to_string_pretty(&target)?)
                )
            }
            None => {
                let width = PRESETS.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
                PRESETS
                    .iter()
                    .map(|(name, doc)| format!("{name:<width$}  {doc}\n"))
                    .collect()
            }
        };
        print_stdout(&text)?;
        Ok(EXIT_OK)
    }
}

/// Puts short arrays of numbers (`"spirv_version": [1, 6]`) on one line, as people write them.
fn compact_arrays(pretty: &str) -> String {
    let mut out = String::with_capacity(pretty.len());
    let mut rest = pretty;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']').map(|c| open + c) else {
            break;
        };
        let inner = &rest[open + 1..close];
        out.push_str(&rest[..open]);
        if inner
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c.is_whitespace())
        {
            let items: Vec<&str> = inner
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            out.push('[');
            out.push_str(&items.join(", "));
            out.push(']');
        } else {
            out.push_str(&rest[open..=close]);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}
