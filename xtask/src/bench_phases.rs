//! `cargo xtask bench phases`: where the time of `validate` and `lower` goes, phase by phase, measured
//! in-process on the generated modules (the same ones `cargo xtask bench` times as whole commands).
//!
//! ```text
//! cargo run --release -p xtask -- bench phases [--sizes 1,10] [--runs 3] [--seed S] [--body N]
//! ```
//!
//! Phases of `spv-subgroup lower` (as `crates/spv-subgroup/src/lower.rs` and
//! `spv_subgroup_lower::lower_words` run them): read the bytes into words, validate the input (the
//! structural check in `lower_words`), load it into an `rspirv::dr::Module`, run the pass, assemble,
//! validate the output (`--verify`), turn words into bytes, drop the module. Phase times are medians
//! over the runs. Build with `--release`: the workspace crates are unoptimised in the dev profile.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use spv_subgroup_lower::LowerOptions;
use spv_subgroup_validate::{validate, words_from_bytes, ValidateOptions};

use super::bench_gen;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

fn ms(t: f64) -> String {
    format!("{:.1} ms", t * 1000.0)
}

/// Runs the phase breakdown; prints a Markdown table per size.
pub fn run(args: &[String]) -> Result<()> {
    let (mut sizes, mut runs, mut seed, mut body) =
        (vec![1.0f64, 10.0], 3usize, 1u64, bench_gen::DEFAULT_BODY);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--sizes" => {
                sizes = value()?
                    .split(',')
                    .map(|s| s.trim().parse::<f64>().context("--sizes: numbers in MB"))
                    .collect::<Result<_>>()?
            }
            "--runs" => runs = value()?.parse().context("--runs")?,
            "--seed" => seed = value()?.parse().context("--seed")?,
            "--body" => body = value()?.parse().context("--body")?,
            other => bail!(
                "unknown argument {other}: cargo run --release -p xtask -- bench phases \
                 [--sizes 1,10] [--runs 3] [--seed S] [--body N]"
            ),
        }
    }
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this xtask is a debug build; run `cargo run --release -p xtask -- bench phases` \
             for meaningful numbers"
        );
    }
    let mut report = String::new();
    for mb in sizes {
        let words = bench_gen::generate((mb * 1024.0 * 1024.0) as usize, seed, body);
        let bytes = bench_gen::to_bytes(&words);
        let names = [
            "validate: words_from_bytes",
            "validate: validate (all rules)",
            "lower: validate input (lower_words)",
            "lower: rspirv::dr::load_words",
            "lower: lower (the pass)",
            "lower: Module::assemble",
            "lower: validate output (--verify)",
            "lower: words to bytes",
            "lower: drop the Module",
            "lower: lower_words end to end",
        ];
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
        let mut out_words = 0usize;
        let mut rewrites = String::new();
        for _ in 0..runs {
            let mut lap = {
                let mut t = Instant::now();
                move || {
                    let e = t.elapsed().as_secs_f64();
                    t = Instant::now();
                    e
                }
            };
            let w = words_from_bytes(&bytes).map_err(|e| anyhow::anyhow!("{e}"))?;
            times[0].push(lap());
            let rep =
                validate(&w, &ValidateOptions::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
            times[1].push(lap());
            if rep.has_errors() {
                bail!("our validator reports errors on the generated module");
            }
            drop(rep);
            lap();
            let _ =
                validate(&w, &ValidateOptions::default()).map_err(|e| anyhow::anyhow!("{e}"))?;
            times[2].push(lap());
            let mut module =
                rspirv::dr::load_words(&w).map_err(|e| anyhow::anyhow!("rspirv: {e}"))?;
            times[3].push(lap());
            let opts = LowerOptions::default();
            let lr = spv_subgroup_lower::lower(&mut module, &opts)
                .map_err(|e| anyhow::anyhow!("lower: {e}"))?;
            times[4].push(lap());
            let out = rspirv::binary::Assemble::assemble(&module);
            times[5].push(lap());
            let vopts = ValidateOptions::default()
                .with_target_env(opts.target.target_env.clone())
                .with_target(opts.target.clone());
            let orep = validate(&out, &vopts).map_err(|e| anyhow::anyhow!("{e}"))?;
            times[6].push(lap());
            if orep.has_errors() {
                bail!("our validator reports errors on the lowered module");
            }
            drop(orep);
            lap();
            let ob: Vec<u8> = out.iter().flat_map(|w| w.to_le_bytes()).collect();
            times[7].push(lap());
            drop(module);
            times[8].push(lap());
            out_words = out.len();
            drop((ob, out));
            lap();
            let (o2, _) = spv_subgroup_lower::lower_words(&w, &opts)
                .map_err(|e| anyhow::anyhow!("lower_words: {e}"))?;
            drop(o2);
            times[9].push(lap());
            rewrites = lr
                .rewrites
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ");
        }
        let in_mb = bytes.len() as f64 / (1024.0 * 1024.0);
        let out_mb = out_words as f64 * 4.0 / (1024.0 * 1024.0);
        report.push_str(&format!(
            "\n{mb} MB module ({in_mb:.2} MiB in, {out_mb:.2} MiB lowered; rewrites: {rewrites}), \
             median of {runs} runs:\n\n| phase | time | per input MB |\n|---|---|---|\n"
        ));
        let lower_total: f64 = (2..=8).map(|i| median(times[i].clone())).sum();
        for (name, t) in names.iter().zip(times) {
            let m = median(t);
            let share = if name.starts_with("lower:") && !name.contains("end to end") {
                format!(" ({:.0}% of the lower phases)", 100.0 * m / lower_total)
            } else {
                String::new()
            };
            report.push_str(&format!(
                "| {name} | {}{share} | {} |\n",
                ms(m),
                ms(m / in_mb)
            ));
        }
    }
    #[allow(clippy::print_stdout)]
    {
        println!("{report}");
    }
    Ok(())
}
