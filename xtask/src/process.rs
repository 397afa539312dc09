//! Running the tools a task is made of: the cargo that runs xtask, and a step that is
//! announced, run and named when it fails. Every task module uses these; none uses another's.

use std::process::Command;

use anyhow::{bail, Context};

/// The cargo running us (so `cargo +toolchain xtask` stays on that toolchain).
pub fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Runs one step, announcing it, and fails naming it.
pub fn step(name: &str, cmd: &mut Command) -> anyhow::Result<()> {
    eprintln!("xtask: {name}: {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start step `{name}`"))?;
    if !status.success() {
        bail!("step `{name}` failed ({status})");
    }
    Ok(())
}
