//! `cargo xtask codegen [--check]`: write `docs/rules.md` from the validator's rule table.
//!
//! The text comes from `spv_subgroup_validate::rules::markdown()`, so the table in the code stays
//! the single source of truth. `--check` fails (without writing) when the file is out of date.

use anyhow::{bail, Context};

/// Writes or checks the generated files.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let check = match args {
        [] => false,
        [a] if a == "--check" => true,
        _ => bail!("usage: cargo xtask codegen [--check]"),
    };
    let path = crate::workspace_root().join("docs/rules.md");
    let want = spv_subgroup_validate::rules::markdown();
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have == want {
        eprintln!("codegen: {} is up to date", path.display());
        return Ok(());
    }
    if check {
        bail!(
            "{} is out of date: run `cargo xtask codegen` and commit the result",
            path.display()
        );
    }
    std::fs::write(&path, want).with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("codegen: wrote {}", path.display());
    Ok(())
}
