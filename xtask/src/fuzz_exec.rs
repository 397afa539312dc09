//! `cargo xtask fuzz-exec --minutes N [--seed S]`: the random-program harness
//! (`tests/sim_random.rs`) for N minutes of fresh seeds, under `nice -n 19` so it does not starve
//! other work on a shared machine. Disagreements are written to `target/fuzz-exec/` (the harness
//! says which); each one becomes a fixture in `fixtures/sim-random/`.

use std::process::Command;

use anyhow::{bail, Context};

/// Parses the arguments and runs the harness.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let (mut minutes, mut seed) = (None, None);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = |v: Option<&String>| -> anyhow::Result<u64> {
            v.context("missing value")?
                .parse()
                .with_context(|| format!("{a} needs a number"))
        };
        match a.as_str() {
            "--minutes" => minutes = Some(value(it.next())?),
            "--seed" => seed = Some(value(it.next())?),
            other => bail!(
                "unknown argument `{other}` (usage: cargo xtask fuzz-exec --minutes N [--seed S])"
            ),
        }
    }
    let minutes = minutes.context("usage: cargo xtask fuzz-exec --minutes N [--seed S]")?;
    // A seed from the clock unless given, so successive runs explore new programs.
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            * 1000
    });
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    eprintln!("fuzz-exec: {minutes} minutes from seed {seed}");
    let status = Command::new("nice")
        .args(["-n", "19"])
        .arg(cargo)
        .current_dir(crate::workspace_root())
        .args([
            "test",
            "-p",
            "spv-subgroup-tests",
            "--test",
            "sim_random",
            "--",
            "--exact",
            "random_programs",
            "--nocapture",
        ])
        .env("SPV_FUZZ_MINUTES", minutes.to_string())
        .env("SPV_FUZZ_SEED", seed.to_string())
        .status()
        .context("running cargo under nice")?;
    if !status.success() {
        bail!("disagreements found (programs in target/fuzz-exec/)");
    }
    Ok(())
}
