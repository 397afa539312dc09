//! Runs lowered partitioned arithmetic on lavapipe and checks every lane against a host model.
//!
//! The shader is `fixtures/lower/partitioned_arith/exec_spv10.spvasm` (SPIR-V 1.0), lowered for
//! `khr-ballot` (the lane-serial `ReadInvocationKHR` loop, the only place it runs), `lavapipe`,
//! `vulkan1.1` (128-lane `uvec4` masks), `naga` (no ballot bit ops or mask built-ins) and
//! `vulkan1.1` at the device's subgroup size (single-word masks, fewer steps).
//! `lavapipe_sizes` re-runs this binary with `LP_NATIVE_VECTOR_WIDTH` = 128/256/512 (subgroup
//! sizes 4/8/16, read by lavapipe at load time) with Mesa's shader disk cache off: its key ignores
//! `LP_NATIVE_VECTOR_WIDTH`, so a shader compiled at one width is otherwise reused at another and
//! computes with the old width's subgroups (measured here: wrong results at every width but the
//! first one run). `child` is the check itself, `#[ignore]`d, and fails outside such a child.
//! The conformance suite (`tests/conformance.rs`) covers the core-target
//! sequences over every type; this harness adds the SPIR-V 1.0 path.

#![allow(clippy::print_stdout, reason = "a test harness")]

use std::time::Duration;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::{lavapipe, tools};
use spv_subgroup_vk::{PipelineOptions, Runner};

const LANES: usize = 64;
const GROUPS: usize = 4;
const STRIDE: usize = 16;

/// The input word of global invocation `i` (a fixed pseudo-random pattern per run `seed`).
fn input_word(i: usize, seed: u32) -> u32 {
    let mut h = (i as u32).wrapping_mul(0x9e37_79b9) ^ seed.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^ (h >> 12)
}

/// The nine results of each lane, as the shader stores them, computed on the host.
fn model(inp: &[u32], size: usize) -> Vec<[u32; 9]> {
    let mut out = vec![[0u32; 9]; inp.len()];
    let key = |i: usize| inp[i] & 3;
    let x = |i: usize| (inp[i] >> 2) & 255;
    for first in (0..inp.len()).step_by(size) {
        let lanes: Vec<usize> = (first..first + size).collect();
        for &i in &lanes {
            let subset: Vec<usize> = lanes
                .iter()
                .copied()
                .filter(|&j| key(j) == key(i))
                .collect();
            let before: Vec<usize> = subset.iter().copied().filter(|&j| j < i).collect();
            let upto: Vec<usize> = subset.iter().copied().filter(|&j| j <= i).collect();
            let sum = |v: &[usize]| v.iter().fold(0u32, |a, &j| a.wrapping_add(x(j)));
            let wide = |j: usize| (u64::from(x(j)) << 32) | u64::from(x(j) ^ 0x55);
            let umax = upto.iter().map(|&j| wide(j)).max().unwrap_or(0);
            let odd = |j: usize| x(j) & 1 == 1;
            let r7 = if odd(i) {
                upto.iter()
                    .filter(|&&j| odd(j))
                    .fold(1u32, |a, &j| a.wrapping_mul(x(j) | 1))
            } else {
                0
            };
            out[i] = [
                sum(&upto),
                sum(&before),
                sum(&subset),
                before.iter().map(|&j| x(j)).min().unwrap_or(u32::MAX),
                subset.iter().map(|&j| x(j) as f32).sum::<f32>() as u32,
                umax as u32,
                (umax >> 32) as u32,
                u32::from(before.iter().any(|&j| odd(j))),
                r7,
            ];
        }
    }
    out
}

/// The fixtures and the result words each one computes with partitioned ops.
const FIXTURES: [(&str, &[usize]); 1] = [("exec_spv10.spvasm", &[0, 1, 2, 3, 4, 5, 6, 7, 8])];

/// The suite at one lavapipe subgroup size: `lavapipe_sizes` runs it in a child process.
#[test]
#[ignore = "the suite of a child process: lavapipe_sizes runs it at each size"]
fn child() {
    assert!(
        std::env::var_os("ARITH_EXEC_CHILD").is_some(),
        "`child` runs inside lavapipe_sizes (which sets ARITH_EXEC_CHILD and the subgroup size)"
    );
    let runner =
        Runner::new().expect("a Vulkan device (lavapipe: apt-get install mesa-vulkan-drivers)");
    let size = runner.info().subgroup_size as usize;
    println!("subgroup size: {size}");
    if let Some(expect) = std::env::var("SPV_CHILD_EXPECT_SIZE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        assert_eq!(
            size, expect,
            "the driver runs another subgroup size than asked"
        );
    }
    let mut variants: Vec<(String, LowerOptions)> = Vec::new();
    for name in ["khr-ballot", "lavapipe", "vulkan1.1", "naga"] {
        let target = Target::preset(name).expect("preset");
        variants.push((name.to_owned(), LowerOptions::new(target)));
    }
    variants.push((
        format!("vulkan1.1 --subgroup-size {size}"),
        LowerOptions::new(Target::preset("vulkan1.1").expect("preset"))
            .with_subgroup_size(Some(size as u32)),
    ));
    let mut failures = Vec::new();
    let mut counts = Vec::new();
    for (fixture, slots) in FIXTURES {
        let path = tools::workspace_root()
            .join("fixtures/lower/partitioned_arith")
            .join(fixture);
        let text = std::fs::read_to_string(&path).expect("fixture");
        let input = tools::assemble(&text, "spv1.0").expect("assembles");
        for (name, opts) in &variants {
            let before = failures.len();
            let label = format!("{fixture} lowered for {name}");
            run_variant(&runner, size, &input, &label, opts, slots, &mut failures);
            counts.push(format!("{label}: {}", failures.len() - before));
        }
    }
    let shown: Vec<&String> = failures.iter().take(12).collect();
    assert!(
        failures.is_empty(),
        "{} wrong lanes at subgroup size {size}; per variant: {counts:#?}\nfirst ones: {shown:#?}",
        failures.len()
    );
    println!(
        "subgroup size {size}: {} fixtures x {} variants x 3 seeds x {} lanes correct",
        FIXTURES.len(),
        variants.len(),
        LANES * GROUPS
    );
}

/// Lowers `input` with `opts`, runs it for three inputs and records every wrong lane.
fn run_variant(
    runner: &Runner,
    size: usize,
    input: &[u32],
    label: &str,
    opts: &LowerOptions,
    slots: &[usize],
    failures: &mut Vec<String>,
) {
    let (words, _) = lower_words(input, opts).expect("lowers");
    let pipeline = runner
        .pipeline(
            &words,
            &PipelineOptions {
                buffers: 2,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    for seed in 1..=3u32 {
        let inp: Vec<u32> = (0..LANES * GROUPS).map(|i| input_word(i, seed)).collect();
        let mut buffers = vec![inp.clone(), vec![0u32; LANES * GROUPS * STRIDE]];
        runner
            .run(
                &pipeline,
                &mut buffers,
                [GROUPS as u32, 1, 1],
                Duration::from_secs(30),
            )
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        for (i, w) in model(&inp, size).iter().enumerate() {
            let got: Vec<u32> = slots.iter().map(|&k| buffers[1][i * STRIDE + k]).collect();
            let want: Vec<u32> = slots.iter().map(|&k| w[k]).collect();
            if got != want {
                failures.push(format!(
                    "{label}, seed {seed}, lane {i}: words {slots:?}: got {got:?}, want {want:?}"
                ));
            }
        }
    }
}

#[test]
fn lavapipe_sizes() {
    for size in [4, 8, 16] {
        let text = lavapipe::run_child(
            "child",
            size,
            &[("ARITH_EXEC_CHILD", "1")],
            Duration::from_secs(600),
        );
        assert!(
            text.contains("variants x 3 seeds"),
            "the child did not run at size {size}:\n{text}"
        );
    }
}
