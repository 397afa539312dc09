//! `cargo xtask codegen [--check]`: write the generated files.
//!
//! - `docs/rules.md` from the validator's rule table (`spv_subgroup_validate::rules::markdown()`),
//!   so the table in the code stays the single source of truth;
//! - `crates/spv-subgroup-validate/src/binary/grammar.rs`, rspirv's core instruction grammar
//!   (`spv_subgroup_validate::grammar_source()`), from which the validator's opcode table is
//!   built at compile time (a static with nothing on the heap);
//! - `crates/spv-subgroup-capi/include/spv_subgroup.h`, the C header, by cbindgen from the C
//!   interface's `src/lib.rs` with that crate's `cbindgen.toml`.
//!
//! `--check` fails (without writing) when a file is out of date.

use std::path::Path;

use anyhow::{bail, Context};

/// Writes or checks the generated files.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let check = match args {
        [] => false,
        [a] if a == "--check" => true,
        _ => bail!("usage: cargo xtask codegen [--check]"),
    };
    let root = crate::workspace_root();
    let capi = root.join("crates/spv-subgroup-capi");
    let files = [
        (
            root.join("docs/rules.md"),
            spv_subgroup_validate::rules::markdown(),
        ),
        (
            root.join("crates/spv-subgroup-validate/src/binary/grammar.rs"),
            spv_subgroup_validate::grammar_source(),
        ),
        (capi.join("include/spv_subgroup.h"), c_header(&capi)?),
    ];
    let mut stale = Vec::new();
    for (path, want) in files {
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        if have == want {
            eprintln!("codegen: {} is up to date", path.display());
        } else if check {
            stale.push(path.display().to_string());
        } else {
            std::fs::write(&path, want)
                .with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("codegen: wrote {}", path.display());
        }
    }
    if !stale.is_empty() {
        bail!(
            "out of date: {}; run `cargo xtask codegen` and commit the result",
            stale.join(", ")
        );
    }
    Ok(())
}

/// The C header as cbindgen makes it (the crate's own test, `tests/header.rs`, does the same).
fn c_header(capi: &Path) -> anyhow::Result<String> {
    let config = cbindgen::Config::from_file(capi.join("cbindgen.toml"))
        .map_err(|e| anyhow::anyhow!("cannot read cbindgen.toml: {e}"))?;
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(capi.join("src/lib.rs"))
        .generate()
        .context("cbindgen cannot generate the C header")?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).context("the C header is not UTF-8")
}
