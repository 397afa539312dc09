//! wgpu end to end: modules lowered for the `naga` target are loaded with `wgpu` (so naga's
//! SPIR-V front end translates them, exactly as a wgpu user gets it), run as compute pipelines on
//! lavapipe through wgpu's Vulkan backend at subgroup sizes 4, 8 and 16, and checked.
//!
//! The shaders are the self-checking HLSL fixtures of `fixtures/lower/hlsl/` (real Slang output:
//! WaveMatch, WaveMultiPrefix*, WaveActiveAllEqual and friends; see `lower_hlsl_exec.rs` for the
//! record layout): every result must equal the brute-force reference the same shader computes.
//!
//! What wgpu 30 lacks and this test therefore does not do: wgpu has no way to ask for a subgroup
//! size (no `requiredSubgroupSize`) and no partial-subgroup control, so each size is lavapipe's
//! own, chosen by `LP_NATIVE_VECTOR_WIDTH` in a child process, as for the Vulkan runner
//! (`spv_subgroup_tests::lavapipe_size_tests!`).

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

#[path = "wgpu_common.rs"]
mod common;

use common::{gpu, pipeline, run};

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::hlsl::{check_records, fixtures, keys, GROUPS, LOCAL, RECORD};
use spv_subgroup_tests::{lavapipe, tools};

/// The suite at one subgroup size, run by `lavapipe_subgroup_size_*` in a child process.
#[test]
#[ignore = "the suite of a child process: lavapipe_subgroup_size_* run it at their size"]
fn child_suite() {
    lavapipe::assert_child();
    let gpu = gpu();
    println!("subgroup size: {}", gpu.subgroup_size);
    let target = Target::preset("naga").expect("preset");
    for path in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let input = tools::assemble(&text, "vulkan1.1").unwrap_or_else(|e| panic!("{name}: {e}"));
        let opts = LowerOptions::new(target.clone());
        let (out, _) =
            lower_words(&input, &opts).unwrap_or_else(|e| panic!("{name}: lowering fails: {e}"));
        let float = name.contains("float");
        let what = format!("{name} lowered:naga");
        let kernel = pipeline(&gpu, &out, &what).unwrap_or_else(|e| panic!("{e}"));
        let mut compared = 0;
        for seed in 1..=3 {
            let inputs = vec![
                keys(float, seed),
                vec![0xdead_beef; (LOCAL * GROUPS) as usize * RECORD],
            ];
            let results = run(&gpu, &kernel, &inputs, GROUPS);
            compared += check_records(&results[1], &format!("{what}, seed {seed}"));
        }
        assert!(compared > 0, "{name}: no lane checked anything");
        println!("{name} lowered:naga through wgpu: {compared} results agree");
    }
}

spv_subgroup_tests::lavapipe_size_tests!(900);
