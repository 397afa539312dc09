//! `spv-subgroup generate-assets --out DIR` (hidden): writes the man pages and the shell
//! completions from the clap definition of the command line, so they never drift from `--help`.
//!
//! `cargo xtask install` runs it with the binary it installs and lays the files out under the
//! prefix (docs/install.md). It lives in the binary, not in xtask, because the clap definition
//! is the binary's: the files are generated from exactly the parser that ships.
//!
//! Written into DIR: `spv-subgroup.1` and one `spv-subgroup-SUBCOMMAND.1` per subcommand but
//! `help` (as git names its pages), `spv-subgroup.bash`, `_spv-subgroup` (zsh) and `spv-subgroup.fish`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::EXIT_OK;

/// The name the binary is installed under, which the completions register for.
const BIN: &str = "spv-subgroup";

/// Write the man pages and shell completions (for `cargo xtask install`).
#[derive(Debug, Args)]
pub struct Opts {
    /// The directory to write into (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

impl Opts {
    /// Runs the command; returns the exit status.
    pub fn run(self) -> anyhow::Result<u8> {
        std::fs::create_dir_all(&self.out)
            .with_context(|| format!("cannot create {}", self.out.display()))?;
        let mut cli = crate::Cli::command();
        cli.build();
        write_man_pages(&cli, &self.out)?;
        let mut visible = without_hidden_subcommands(&crate::Cli::command());
        for (shell, file) in [
            (Shell::Bash, "spv-subgroup.bash"),
            (Shell::Zsh, "_spv-subgroup"),
            (Shell::Fish, "spv-subgroup.fish"),
        ] {
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut visible, BIN, &mut text);
            write(&self.out.join(file), &text)?;
        }
        Ok(EXIT_OK)
    }
}

/// The page of the command, then one per visible subcommand, named `spv-subgroup-NAME.1`.
fn write_man_pages(cli: &clap::Command, out: &Path) -> anyhow::Result<()> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cli.clone()).render(&mut page)?;
    write(&out.join(format!("{BIN}.1")), &page)?;
    for sub in cli
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        // `build()` named each subcommand `spv-subgroup-NAME` (its display name, the page's
        // title) and `spv-subgroup NAME` (its bin name, the page's synopsis).
        let name = sub.get_display_name().unwrap_or_else(|| sub.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(sub.clone()).render(&mut page)?;
        write(&out.join(format!("{name}.1")), &page)?;
    }
    Ok(())
}

/// The command line (not yet built: clap adds `help` when it builds) without its hidden subcommands (this one): clap_complete lists them among
/// the topics of `help` (zsh, bash), and users should not be offered them. clap cannot remove a
/// subcommand, so the command is rebuilt with the visible ones; the top level has no arguments
/// of its own but `--help` and `--version`, which clap adds again.
fn without_hidden_subcommands(cli: &clap::Command) -> clap::Command {
    let mut visible = clap::Command::new(BIN)
        .version(env!("CARGO_PKG_VERSION"))
        .about(cli.get_about().cloned().unwrap_or_default());
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        visible = visible.subcommand(sub.clone());
    }
    visible
}

fn write(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}
