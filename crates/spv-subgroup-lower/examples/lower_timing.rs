//! Times `lower_and_verify` (and its two halves, `lower_words` and `verify_lowered`) on SPIR-V
//! files for lavapipe's target as the Vulkan layer builds it (Vulkan 1.3, subgroup size 8, no
//! partitioned operations, no `SPV_KHR_subgroup_vote`), median of `SPV_RUNS` runs (21) per file:
//! `cargo run --release -p spv-subgroup-lower --example lower_timing -- a.spv b.spv`. The last
//! line sums the medians (with what rspirv's parser alone takes to decode each input, which the
//! lowering's load does first); `SPV_OUT=DIR` writes each lowered module there (`NAME.lowered.spv`).
#![allow(clippy::print_stdout)]

use std::time::Instant;

use spv_subgroup_lower::rspirv::binary::{parse_words, Consumer, ParseAction};
use spv_subgroup_lower::rspirv::dr::{Instruction, ModuleHeader};
use spv_subgroup_lower::{lower_and_verify, lower_words, verify_lowered, LowerOptions, Target};
use spv_subgroup_validate::{target::SubgroupOps, words_from_bytes};

/// lavapipe's target as the layer derives it from the device (`crates/spv-subgroup-layer`).
fn lavapipe() -> Target {
    let mut ops = SubgroupOps::default();
    ops.basic = true;
    ops.vote = true;
    ops.arithmetic = true;
    ops.ballot = true;
    ops.shuffle = true;
    ops.shuffle_relative = true;
    ops.clustered = true;
    ops.quad = true;
    let mut t = Target::default();
    t.name = "llvmpipe".to_owned();
    t.target_env = "vulkan1.3".to_owned();
    t.spirv_version = (1, 6);
    t.ops = ops;
    t.min_subgroup_size = 8;
    t.max_subgroup_size = 8;
    t
}

/// A consumer that drops every instruction: what rspirv's decoding alone costs.
struct Discard;

impl Consumer for Discard {
    fn initialize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn finalize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn consume_header(&mut self, _: ModuleHeader) -> ParseAction {
        ParseAction::Continue
    }
    fn consume_instruction(&mut self, _: Instruction) -> ParseAction {
        ParseAction::Continue
    }
}

/// The median of `v` (0 for no runs: a module the lowering refuses has no halves to time).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn main() {
    let runs: usize = std::env::var("SPV_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(21)
        .max(1);
    let out_dir = std::env::var_os("SPV_OUT").map(std::path::PathBuf::from);
    let opts = LowerOptions::new(lavapipe()).with_subgroup_size(Some(8));
    let (mut sum_all, mut sum_lower, mut sum_verify, mut sum_decode) = (0.0, 0.0, 0.0, 0.0);
    for path in std::env::args().skip(1) {
        let words = match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| words_from_bytes(&b).map_err(|e| e.to_string()))
        {
            Ok(w) => w,
            Err(e) => {
                println!("{path}: {e}");
                continue;
            }
        };
        let (mut all, mut lower, mut verify) = (Vec::new(), Vec::new(), Vec::new());
        let mut decode = Vec::new();
        let mut outcome = String::new();
        for _ in 0..runs {
            let t = Instant::now();
            let r = lower_and_verify(&words, &opts, None);
            all.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let _ = parse_words(&words, &mut Discard);
            decode.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let Ok((out, report)) = lower_words(&words, &opts) else {
                outcome = format!("{:?}", r.err());
                continue;
            };
            lower.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            let v = verify_lowered(&words, &out, report.changed, &opts, None);
            verify.push(t.elapsed().as_secs_f64() * 1e3);
            outcome = match v {
                Ok(()) => format!("{} words, changed {}", out.len(), report.changed),
                Err(e) => e.to_string(),
            };
            if let Some(dir) = &out_dir {
                let name = std::path::Path::new(&path)
                    .file_stem()
                    .map_or("module".into(), |s| s.to_string_lossy());
                let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_le_bytes()).collect();
                if let Err(e) = std::fs::write(dir.join(format!("{name}.lowered.spv")), bytes) {
                    println!("{path}: writing the output: {e}");
                }
            }
        }
        let (a, l, v, d) = (median(all), median(lower), median(verify), median(decode));
        sum_decode += d;
        sum_all += a;
        sum_lower += l;
        sum_verify += v;
        println!("{path}: {a:.3} ms (lower {l:.3}, verify {v:.3}; rspirv's decoding of the input alone {d:.3}): {outcome}");
    }
    println!(
        "total of the medians: {sum_all:.3} ms (lower {sum_lower:.3} ms, verify {sum_verify:.3} ms; rspirv's decoding of the inputs alone {sum_decode:.3} ms)"
    );
}
