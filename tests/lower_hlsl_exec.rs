//! Real HLSL compiler output, run: the Slang-compiled fixtures in `fixtures/lower/hlsl/` (WaveMatch,
//! WaveMultiPrefix*, WaveActiveAllEqual and friends) are lowered for each preset lavapipe can run
//! and executed on lavapipe at subgroup sizes 4, 8 and 16; natively too where lavapipe has the ops.
//!
//! Each shader computes its results with the ops under test and, beside them, a brute-force
//! reference from `WaveActiveBallot` and `WaveReadLaneAt` over the active lanes. A record of 24
//! words per invocation holds `n` (how many results the lane checks; 0 when it sat out), the
//! results in words `1..1+n` and the reference in words `12..12+n`; every pair must agree.

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

use std::time::Duration;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::hlsl::{check_records, fixtures, keys, GROUPS, LOCAL, RECORD};
use spv_subgroup_tests::{lavapipe, tools};
use spv_subgroup_validate::{validate, ValidateOptions};
use spv_subgroup_vk::{PipelineOptions, Runner};

/// Presets whose output lavapipe runs (the others need another device or SPIR-V 1.0 input).
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];

/// Runs `words` once per seed and checks every record; returns how many results were compared.
fn run_checked(runner: &Runner, words: &[u32], float: bool, what: &str) -> usize {
    let opts = PipelineOptions {
        buffers: 2,
        ..PipelineOptions::default()
    };
    let pipeline = runner
        .pipeline(words, &opts)
        .unwrap_or_else(|e| panic!("{what}: lavapipe refuses the module: {e}"));
    let mut compared = 0;
    for seed in 1..=3 {
        let mut buffers = vec![
            keys(float, seed),
            vec![0xdead_beef; (LOCAL * GROUPS) as usize * RECORD],
        ];
        runner
            .run(
                &pipeline,
                &mut buffers,
                [GROUPS, 1, 1],
                Duration::from_secs(120),
            )
            .unwrap_or_else(|e| panic!("{what}: dispatch failed: {e}"));
        compared += check_records(&buffers[1], &format!("{what}, seed {seed}"));
    }
    compared
}

/// The suite at one subgroup size, run by `lavapipe_subgroup_size_*` in a child process.
#[test]
#[ignore = "the suite of a child process: lavapipe_subgroup_size_* run it at their size"]
fn child_suite() {
    lavapipe::assert_child();
    let runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
    println!("subgroup size: {}", runner.info().subgroup_size);
    for path in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let input = tools::assemble(&text, "vulkan1.1").unwrap_or_else(|e| panic!("{name}: {e}"));
        let float = name.contains("float");
        let partitioned = text.contains("OpGroupNonUniformPartitionNV");
        if !partitioned {
            // lavapipe runs the core ops natively: the reference must agree there too.
            let n = run_checked(&runner, &input, float, &format!("{name} native"));
            println!("{name} native: {n} results agree");
        }
        for preset in PRESETS {
            let target = Target::preset(preset).expect("preset");
            let size = runner.info().subgroup_size;
            let opts = LowerOptions::new(target.clone());
            let (out, _) = lower_words(&input, &opts)
                .unwrap_or_else(|e| panic!("{name} for {preset}: lowering fails: {e}"));
            let vopts = ValidateOptions::default().with_target(target.clone());
            let report = validate(&out, &vopts).expect("the output parses");
            assert!(
                !report.has_errors(),
                "{name} for {preset}: the output has findings: {report:?}"
            );
            let n = run_checked(
                &runner,
                &out,
                float,
                &format!("{name} lowered:{preset} at {size}"),
            );
            assert!(n > 0, "{name} for {preset}: no lane checked anything");
            println!("{name} lowered:{preset}: {n} results agree");
        }
    }
}

spv_subgroup_tests::lavapipe_size_tests!(900);
