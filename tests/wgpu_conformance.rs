//! wgpu end to end for the conformance shaders and the README example (issue 11, item 4): each
//! module is lowered for the `naga` target, loaded with `wgpu` 30 (naga's SPIR-V front end does the
//! translation a wgpu user gets), run as a compute pipeline on lavapipe through wgpu's Vulkan
//! backend at subgroup sizes 4, 8 and 16, and every result is checked against the host model
//! (`conformance_model.rs`; the README example against `spv_subgroup_tests::example::model`).
//!
//! What wgpu 30 lacks, and what this harness therefore does differently from `conformance.rs`:
//! - No specialization of the workgroup size: naga 30's SPIR-V front end takes the workgroup size
//!   from the `LocalSize` execution mode only, not from a specialization constant, so each local
//!   size of a case is compiled in: `local_size_x_id = 0` becomes `local_size_x = N` in the GLSL.
//! - No `requiredSubgroupSize` and no full-subgroups control: the size is lavapipe's own, set by
//!   `LP_NATIVE_VECTOR_WIDTH` in a child process, and partial subgroups come from the local sizes.
//! - No subgroup operations on 8-, 16- or 64-bit types: wgpu 30's Vulkan backend never enables
//!   `shaderSubgroupExtendedTypes` (wgpu-hal 30.0.1 names neither the feature nor its struct).
//!   The `naga` target has no extended types either, so the lowered modules never need it: every
//!   such case that naga can read runs (`partition/u16`, `partition/i16`, ...), with `SHADER_INT64`,
//!   `SHADER_I16`, `SHADER_F16` and `SHADER_F64` requested where the adapter has them.
//! - The cases naga 30 cannot read are skipped by name, each with the reason measured here, in
//!   [`SKIPS`]: the conformance shaders' own 64-bit loads and stores (`packDouble2x32`, `pack64`),
//!   naga's missing 8-bit integers and 8- and 16-bit constants.
//!   Every case not in the list must pass; `skip_list_names_only_real_cases` keeps the list true.
//! - The `CoreArith`/`CoreVote` families check the host model against the driver's own core
//!   operations, not the lowering; `conformance.rs` runs them, this harness does not.
//!
//! `SPV_CONFORMANCE_FILTER` selects cases by substring, as in `conformance.rs`.

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

#[path = "wgpu_common.rs"]
mod common;
#[path = "conformance_inputs.rs"]
mod inputs;
#[path = "conformance_model.rs"]
#[allow(dead_code)] // Shared with the lavapipe harness, which uses all of it.
mod model;
#[path = "conformance_shaders.rs"]
#[allow(dead_code)]
mod shaders;

use common::{gpu, pipeline, run, Gpu};
use model::KeyEq;
use shaders::{Case, Family};
use spv_subgroup_lower::{lower_and_verify, LowerOptions, Target};
use spv_subgroup_tests::{example, lavapipe, tools};

/// Workgroups per dispatch.
const GROUPS: u32 = 4;
/// Input seeds per (case, local size).
const SEEDS: [u64; 2] = [1, 2];

fn compile(glsl: &str, env: &str) -> Result<Vec<u32>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("case.comp");
    std::fs::write(&path, glsl).map_err(|e| e.to_string())?;
    tools::compile_glsl(&path, env)
}

/// Lowers for `naga` with the CLI's verification, and checks the output with spirv-val.
fn lower_for_naga(words: &[u32]) -> Result<Vec<u32>, String> {
    let target = Target::preset("naga").ok_or("no preset `naga`")?;
    let env = target.target_env.clone();
    let opts = LowerOptions::new(target);
    let (out, _) = lower_and_verify(words, &opts, None).map_err(|e| format!("lower: {e}"))?;
    tools::spirv_val(&out, &env).map_err(|e| format!("spirv-val --target-env {env}: {e}"))?;
    Ok(out)
}

/// The shader's own f64 load: GLSL.std.450 `PackDouble2x32` (59), which naga 30 cannot parse.
const F64_LOAD: &str = "the shader loads its f64 values with packDouble2x32 (GLSL.std.450 PackDouble2x32, 59), which naga 30's SPIR-V front end does not parse (UnsupportedExtInst(59)); not the lowering";
/// The shader's own 64-bit integer store: an `OpBitcast` from a 64-bit integer to a `uvec2`.
const I64_STORE: &str = "the shader stores its 64-bit integers with unpack32 (OpBitcast to uvec2), which naga 30 reads as a same-width cast and its validator refuses (\"the type of [..] doesn't match the type stored\"); not the lowering";
/// naga's IR has no 8-bit integers.
const INT8: &str = "naga 30 has no 8-bit integers (its validator: \"The Uint/Sint scalar width 1 is not supported\")";
/// naga's front end parses constants of 32 and 64 bits only.
const CONST_NARROW: &str = "the shader has 8- or 16-bit constants, and naga 30's SPIR-V front end parses OpConstant of 32 and 64 bits only (InvalidTypeWidth(1) or (2))";

/// The cases that do not run through wgpu, by name, and why (each measured: the reason is the
/// error wgpu reports for it). Every other case must pass.
const SKIPS: &[(&str, &str)] = &[
    ("partition/f64", F64_LOAD),
    ("partition/f64x2", F64_LOAD),
    ("arith/f64", F64_LOAD),
    ("arith/f64x2", F64_LOAD),
    ("partition/u64", I64_STORE),
    ("partition/i64", I64_STORE),
    ("partition/u64x2", I64_STORE),
    ("arith/u64", I64_STORE),
    ("arith/i64", I64_STORE),
    ("arith/i64x2", I64_STORE),
    ("diverge-branches/i64", I64_STORE),
    ("diverge-loops/i64", I64_STORE),
    ("diverge-returns/i64", I64_STORE),
    ("partition/u8", INT8),
    ("partition/i8", INT8),
    ("arith/u8", CONST_NARROW),
    ("arith/i8", CONST_NARROW),
    ("arith/u16", CONST_NARROW),
    ("arith/i16", CONST_NARROW),
    ("arith/f16", CONST_NARROW),
    ("arith/f16x2", CONST_NARROW),
];

/// Why this harness does not run a case through wgpu, if it does not (see the module doc).
fn skipped(case: &Case) -> Option<&'static str> {
    if matches!(case.family, Family::CoreArith | Family::CoreVote) {
        return Some("checks the model against native core ops (conformance.rs runs it)");
    }
    SKIPS
        .iter()
        .find(|(name, _)| *name == case.name)
        .map(|(_, why)| *why)
}

/// The case's name, told apart where two cases share one (the KHR-ballot vote case).
fn label(case: &Case) -> String {
    if case.env == "vulkan1.0" {
        format!("{} (SPIR-V 1.0, ARB ballot and vote)", case.name)
    } else {
        case.name.clone()
    }
}

/// Runs one case at every local size and seed; returns (values checked, failures).
fn run_case(gpu: &Gpu, case: &Case) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut checked = 0;
    for &local in &case.local_sizes {
        let glsl = case.glsl.replace(
            "layout(local_size_x_id = 0) in;",
            &format!("layout(local_size_x = {local}) in;"),
        );
        if glsl == case.glsl {
            failures.push(format!(
                "{}: no `local_size_x_id = 0` to replace",
                case.name
            ));
            return (checked, failures);
        }
        let words = match compile(&glsl, case.env).and_then(|w| lower_for_naga(&w)) {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{} local {local}: {e}", case.name));
                continue;
            }
        };
        let what = format!("{} local {local}", label(case));
        let kernel = match pipeline(gpu, &words, &what) {
            Ok(k) => k,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        for seed in SEEDS {
            let what = format!("{what} seed {seed}");
            let n = (GROUPS * local) as usize;
            let bufs = vec![
                inputs::gen_inputs(case, local, seed, GROUPS),
                vec![0u32; case.layout.out_words(n)],
            ];
            let out = run(gpu, &kernel, &bufs, GROUPS).pop().unwrap_or_default();
            let recs = case.layout.decode(&out);
            let outcome = model::check(&case.layout, &recs, KeyEq::Spec);
            checked += outcome.checked;
            if outcome.mismatches > 0 || outcome.records == 0 || outcome.checked == 0 {
                failures.push(format!(
                    "{what}: {} mismatches of {} ({:?}); records {}\n    {}",
                    outcome.mismatches,
                    outcome.checked,
                    outcome.by_result,
                    outcome.records,
                    outcome.details.join("\n    ")
                ));
            }
        }
    }
    (checked, failures)
}

/// The README example, lowered for naga, against its model; returns the values compared.
fn run_example(gpu: &Gpu) -> Result<usize, String> {
    let src = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&src, "vulkan1.1")?;
    let lowered = lower_for_naga(&words)?;
    // The README's "With wgpu" snippet: the module as the file's bytes, back to words by wgpu.
    let bytes: Vec<u8> = lowered.iter().flat_map(|w| w.to_le_bytes()).collect();
    let lowered = wgpu::util::make_spirv_raw(&bytes).into_owned();
    let lanes = example::LANES;
    let keys = example::keys();
    let bufs = vec![
        keys.clone(),
        vec![0; lanes * 4],
        vec![0; lanes],
        vec![0; lanes],
    ];
    let out = run(gpu, &pipeline(gpu, &lowered, "README example")?, &bufs, 1);
    let size = gpu.subgroup_size as usize;
    let (masks, sums, flags) = example::model(&keys, size);
    let mut compared = 0;
    for i in 0..lanes {
        let mask = [
            out[1][4 * i],
            out[1][4 * i + 1],
            out[1][4 * i + 2],
            out[1][4 * i + 3],
        ];
        if mask != masks[i] || out[2][i] != sums[i] || out[3][i] != flags[i] {
            return Err(format!(
                "README example, invocation {i} at subgroup size {size}: mask {mask:x?} sum {} flags {} (model: {:x?} {} {})",
                out[2][i], out[3][i], masks[i], sums[i], flags[i]
            ));
        }
        compared += 6;
    }
    Ok(compared)
}

/// The suite at one subgroup size, run by `lavapipe_subgroup_size_*` in a child process.
#[test]
#[ignore = "the suite of a child process: lavapipe_subgroup_size_* run it at their size"]
fn child_suite() {
    lavapipe::assert_child();
    let gpu = gpu();
    println!("subgroup size: {}", gpu.subgroup_size);
    let filter = std::env::var("SPV_CONFORMANCE_FILTER").unwrap_or_default();
    let mut failures = Vec::new();
    let mut skips = Vec::new();
    let (mut ran, mut checked) = (0, 0);
    for case in shaders::all_cases() {
        if !case.name.contains(&filter) {
            continue;
        }
        if let Some(why) = skipped(&case) {
            skips.push((label(&case), why));
            continue;
        }
        let (c, f) = run_case(&gpu, &case);
        println!(
            "{} lowered:naga through wgpu: {c} values checked, {} failures",
            label(&case),
            f.len()
        );
        ran += 1;
        checked += c;
        failures.extend(f);
    }
    match run_example(&gpu) {
        Ok(n) => {
            println!("README example lowered:naga through wgpu: {n} values agree");
            checked += n;
        }
        Err(e) => failures.push(e),
    }
    for (name, why) in &skips {
        println!("skipped {name}: {why}");
    }
    println!("{ran} cases and the README example, {checked} values checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(filter.is_empty() || ran > 0, "no case matches `{filter}`");
    if filter.is_empty() {
        assert!(ran >= 10, "only {ran} cases ran");
    }
}

/// Every name in [`SKIPS`] is a case of the suite, once: a renamed case cannot leave a stale
/// entry behind, nor a skip pass for a case that no longer exists.
#[test]
fn skip_list_names_only_real_cases() {
    let cases = shaders::all_cases();
    for (i, (name, _)) in SKIPS.iter().enumerate() {
        assert!(
            cases.iter().any(|c| c.name == *name),
            "SKIPS names `{name}`, which is no case of conformance_shaders.rs"
        );
        assert!(
            SKIPS[..i].iter().all(|(n, _)| n != name),
            "SKIPS names `{name}` twice"
        );
    }
}

/// Sizes 4 and 16 run with lavapipe's LLVM optimisation passes off, as in `conformance.rs`:
/// compiling the pipelines is most of the time, and size 8 still runs the optimised code.
fn child_env(size: u32) -> &'static [(&'static str, &'static str)] {
    if size == 8 {
        &[]
    } else {
        &[("GALLIVM_PERF", "nopt")]
    }
}

spv_subgroup_tests::lavapipe_size_tests!(1800, child_env);
