//! Times `validate` on SPIR-V files given on the command line (median of 5 runs) and prints the
//! findings count: `cargo run --release -p spv-subgroup-validate --example validate_timing -- a.spv`.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use spv_subgroup_validate::{target::Target, validate, words_from_bytes, ValidateOptions};

fn main() {
    for path in std::env::args().skip(1) {
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                println!("{path}: {e}");
                continue;
            }
        };
        let words = match words_from_bytes(&bytes) {
            Ok(w) => w,
            Err(e) => {
                println!("{path}: {e}");
                continue;
            }
        };
        // `SPV_TARGET=lavapipe` adds the target-fit rules (and, on partitioned modules, many findings).
        let target = std::env::var("SPV_TARGET")
            .ok()
            .and_then(|t| Target::preset(&t));
        let mut opts = ValidateOptions::default().with_target_env("vulkan1.1");
        opts.target = target;
        let mut times = Vec::new();
        let mut findings = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let r = validate(&words, &opts);
            times.push(t.elapsed().as_secs_f64());
            findings = r.map_or(usize::MAX, |r| r.diagnostics.len());
        }
        times.sort_by(f64::total_cmp);
        let mb = bytes.len() as f64 / 1e6;
        println!(
            "{path}: {mb:.2} MB, {findings} findings, median {:.1} ms, {:.1} ms/MB",
            times[2] * 1e3,
            times[2] * 1e3 / mb
        );
    }
}
