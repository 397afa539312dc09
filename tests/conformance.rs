//! Execution conformance: runs GLSL compute shaders natively and lowered on a real Vulkan driver
//! and checks every result against the host model (`conformance_model.rs`).
//!
//! - `lavapipe_subgroup_size_{4,8,16}` re-run this binary (`child_suite`) with
//!   `LP_NATIVE_VECTOR_WIDTH` = 128/256/512 (lavapipe reads it at load time, hence a child process)
//!   and assert the driver reports that subgroup size;
//! - `child_suite` is the suite itself, `#[ignore]`d: it runs inside such a child (or on the GPU
//!   machine, see `cargo xtask gpu`), and run by hand without `SPV_CONFORMANCE_CHILD` it fails;
//! - `conformance_vote_loop.rs` is the `vote-loop-spirv1.0` case (issue 7's lavapipe hazard: votes
//!   in a loop whose only exit is a divergent `break`);
//! - `mutation_unmasked_ballot_is_caught` breaks a lowered module on purpose (the active-set masking
//!   of the ballot) and asserts the suite sees it;
//! - `model_*` test the host model itself.
//!
//! Environment of the child: `SPV_CONFORMANCE_CHILD=1`, `SPV_CHILD_EXPECT_SIZE`,
//! `SPV_CONFORMANCE_PRESETS` (comma list; default `lavapipe,naga`, or `vulkan1.1,naga` on a device
//! with native partitioned ops), `SPV_CONFORMANCE_FILTER` (substring of case names),
//! `SPV_CONFORMANCE_BENCH=1` (also time native vs lowered), `SPV_CONFORMANCE_OUT` (a folder for
//! the summary and benchmark JSON).

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

#[path = "conformance_bench.rs"]
mod bench;
#[path = "conformance_bench_emulated.rs"]
mod bench_emulated;
#[path = "conformance_inputs.rs"]
mod inputs;
#[path = "conformance_model.rs"]
mod model;
#[path = "conformance_shaders.rs"]
mod shaders;
#[path = "conformance_vote_loop.rs"]
mod vote_loop;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;
use std::time::{Duration, Instant};

use spv_subgroup_tests::lavapipe;

use model::{KeyEq, Layout, Rng, Scalar, Ty};
use shaders::{Case, Family};
use spv_subgroup_lower::{lower_words, FloatPartition, LowerOptions, Target};
use spv_subgroup_tests::tools;
use spv_subgroup_vk::{PipelineOptions, Runner};

/// A dispatch must finish in this time or the case fails (a hung shader).
const TIMEOUT: Duration = Duration::from_secs(30);
/// The first dispatch of a pipeline: lavapipe compiles the shader then (LLVM; large lowered
/// modules on a loaded 2-core machine take tens of seconds).
const FIRST_TIMEOUT: Duration = Duration::from_secs(240);
/// Workgroups per dispatch (each one its own key pattern and data).
const GROUPS: u32 = 12;
/// Seeds per (case, variant, local size).
const SEEDS: [u64; 2] = [1, 2];

/// The raw outputs of one case: per variant, (local size, seed, output words).
type RawOutputs = BTreeMap<Variant, Vec<(u32, u64, Vec<u32>)>>;

/// Compiles GLSL text (through a temporary file) for `env`.
fn compile(glsl: &str, env: &str) -> Result<Vec<u32>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("case.comp");
    std::fs::write(&path, glsl).map_err(|e| e.to_string())?;
    tools::compile_glsl(&path, env)
}

/// How a module is produced from the compiled GLSL.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Variant {
    /// As compiled.
    Native,
    /// Lowered for a preset.
    Lowered(String),
    /// Emulated at a subgroup size (`LowerOptions::emulate_subgroup_size`) and lowered for a
    /// preset: checked against the model and against the original run at that size in the
    /// simulator, never against the other variants (they run at the device's size).
    Emulated(String, u32),
}

impl Variant {
    fn name(&self) -> String {
        match self {
            Variant::Native => "native".into(),
            Variant::Lowered(p) => format!("lowered:{p}"),
            Variant::Emulated(p, n) => format!("emulated:{p}@{n}"),
        }
    }
}

/// The capabilities a module declares.
fn capabilities(words: &[u32]) -> Vec<u32> {
    let mut caps = Vec::new();
    let mut i = 5;
    while i < words.len() {
        let w = words[i];
        let (len, op) = ((w >> 16) as usize, w & 0xffff);
        if len == 0 {
            break;
        }
        if op == 17 && i + 1 < words.len() {
            caps.push(words[i + 1]);
        }
        i += len;
    }
    caps
}

/// Why the device cannot run a module natively, if it cannot.
fn native_blocker(words: &[u32], runner: &Runner) -> Option<&'static str> {
    let info = runner.info();
    let caps = capabilities(words);
    if caps.contains(&5297) && !info.has_subgroup_op("partitioned_nv") {
        return Some("no native partitioned ops");
    }
    if caps.contains(&4431) && !info.has_extension("VK_EXT_shader_subgroup_vote") {
        return Some("no VK_EXT_shader_subgroup_vote");
    }
    if caps.contains(&4423) && !info.has_extension("VK_EXT_shader_subgroup_ballot") {
        return Some("no VK_EXT_shader_subgroup_ballot");
    }
    if caps.contains(&67) && !info.has_subgroup_op("clustered") {
        return Some("no clustered ops");
    }
    None
}

fn device_lacks(case: &Case, runner: &Runner) -> Option<&'static str> {
    let f = &runner.info().features;
    let n = case.needs;
    let ext = f.subgroup_extended_types;
    if n.int64 && !(f.int64 && ext) {
        return Some("int64");
    }
    if n.float64 && !f.float64 {
        return Some("float64");
    }
    if n.int16 && !(f.int16 && ext) {
        return Some("int16");
    }
    if n.int8 && !(f.int8 && ext) {
        return Some("int8");
    }
    if n.float16 && !(f.float16 && ext) {
        return Some("float16");
    }
    None
}

/// Generates the input buffer of one dispatch (shared with the simulator's harness).
fn gen_inputs(case: &Case, local: u32, seed: u64) -> Vec<u32> {
    inputs::gen_inputs(case, local, seed, GROUPS)
}

/// One run's raw output (for native-vs-lowered comparison) and its check.
struct RunResult {
    out: Vec<u32>,
    outcome: model::Outcome,
}

fn run_one(
    runner: &Runner,
    pipeline: &spv_subgroup_vk::Pipeline<'_>,
    case: &Case,
    local: u32,
    seed: u64,
    eq: KeyEq,
) -> Result<RunResult, String> {
    let inp = gen_inputs(case, local, seed);
    let n = (GROUPS * local) as usize;
    let mut bufs = vec![inp, vec![0u32; case.layout.out_words(n)]];
    // The first seed is the pipeline's first dispatch (see FIRST_TIMEOUT).
    let timeout = if seed == SEEDS[0] {
        FIRST_TIMEOUT
    } else {
        TIMEOUT
    };
    runner
        .run(pipeline, &mut bufs, [GROUPS, 1, 1], timeout)
        .map_err(|e| e.to_string())?;
    let out = bufs.pop().unwrap_or_default();
    let recs = case.layout.decode(&out);
    let outcome = model::check(&case.layout, &recs, eq);
    Ok(RunResult { out, outcome })
}

/// Tallies of a whole suite run.
#[derive(Default)]
struct Summary {
    /// (case, variant) -> (passed runs, failed runs, values checked)
    rows: BTreeMap<(String, String), (usize, usize, usize)>,
    failures: Vec<String>,
    notes: Vec<String>,
    unchecked: usize,
    /// Records compared with the simulator, by variant (`native`: the native module at the
    /// device's size; `emulated:P@N`: the original at N): identical, differing as expected
    /// (NVIDIA's bitwise float partition, native only), differing.
    sim: BTreeMap<String, (usize, usize, usize)>,
}

impl Summary {
    fn record(&mut self, case: &str, variant: &str, ok: bool, checked: usize) {
        let e = self
            .rows
            .entry((case.to_owned(), variant.to_owned()))
            .or_default();
        if ok {
            e.0 += 1;
        } else {
            e.1 += 1;
        }
        e.2 += checked;
    }
    fn fail(&mut self, case: &str, variant: &str, msg: String) {
        self.record(case, variant, false, 0);
        self.failures.push(format!("{case} [{variant}]: {msg}"));
    }
    fn totals(&self) -> BTreeMap<String, (usize, usize, usize)> {
        let mut t: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
        for ((_, v), (p, f, c)) in &self.rows {
            let e = t.entry(v.clone()).or_default();
            e.0 += p;
            e.1 += f;
            e.2 += c;
        }
        t
    }
    fn report(&self, size: u32, device: &str) -> String {
        let mut s = format!("conformance on {device}, subgroup size {size}\n");
        for (v, (p, f, c)) in self.totals() {
            let _ = writeln!(
                s,
                "  {v:<22} runs passed {p:>4}, failed {f:>3}, values checked {c}"
            );
        }
        let _ = writeln!(
            s,
            "  float results not exactly representable (not compared): {}",
            self.unchecked
        );
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        for f in &self.failures {
            let _ = writeln!(s, "FAIL {f}");
        }
        s
    }
}

fn presets(runner: &Runner) -> Vec<String> {
    let mut v: Vec<String> = if let Ok(p) = std::env::var("SPV_CONFORMANCE_PRESETS") {
        p.split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    } else if runner.info().has_subgroup_op("partitioned_nv") {
        vec!["vulkan1.1".into(), "naga".into()]
    } else {
        vec!["lavapipe".into(), "naga".into()]
    };
    // With SPV_CONFORMANCE_KNOWN_SIZE=1, also each preset lowered for the device's subgroup size.
    if std::env::var("SPV_CONFORMANCE_KNOWN_SIZE").is_ok() {
        let size = runner.info().subgroup_size;
        let known: Vec<String> = v
            .iter()
            .filter(|p| !p.contains('@'))
            .map(|p| format!("{p}@{size}"))
            .collect();
        v.extend(known);
    }
    v
}

/// Lowers `words` for `preset` and checks the output with `spirv-val` for the target's env.
fn lower_checked(
    words: &[u32],
    preset: &str,
    float_partition: FloatPartition,
) -> Result<Vec<u32>, String> {
    // `preset@N`: lower for a known subgroup size N.
    match preset.split_once('@') {
        Some((p, n)) => {
            let n = n
                .parse()
                .map_err(|_| format!("bad subgroup size in `{preset}`"))?;
            lower_checked_sized(words, p, float_partition, Some(n))
        }
        None => lower_checked_sized(words, preset, float_partition, None),
    }
}

/// [`lower_checked`] for a known subgroup size.
fn lower_checked_sized(
    words: &[u32],
    preset: &str,
    float_partition: FloatPartition,
    subgroup_size: Option<u32>,
) -> Result<Vec<u32>, String> {
    let target = Target::preset(preset).ok_or_else(|| format!("no preset `{preset}`"))?;
    lower_checked_target(words, target, float_partition, subgroup_size)
}

/// [`lower_checked_sized`] for any target (the benchmark's variants of a preset).
fn lower_checked_target(
    words: &[u32],
    target: Target,
    float_partition: FloatPartition,
    subgroup_size: Option<u32>,
) -> Result<Vec<u32>, String> {
    lower_checked_opts(
        words,
        LowerOptions::new(target)
            .with_subgroup_size(subgroup_size)
            .with_float_partition(float_partition),
    )
}

/// [`lower_checked_target`] with any options (the benchmark's forced partition forms).
fn lower_checked_opts(words: &[u32], opts: LowerOptions) -> Result<Vec<u32>, String> {
    let target = opts.target.clone();
    let preset = target.name.clone();
    let env = target.target_env.clone();
    let (out, report) = lower_words(words, &opts).map_err(|e| format!("lowering failed: {e}"))?;
    tools::spirv_val(&out, &env)
        .map_err(|e| format!("spirv-val --target-env {env} rejects the lowered module: {e}"))?;
    // Our validator with the target, judged as `lower_and_verify` judges it: nothing the
    // lowering adds may break a rule. What the input itself brings that the target's consumer
    // refuses and no lowering removes (SG0704: naga 30 refuses the shaders' specialization-
    // constant workgroup size) is the input's; the lowering's code is still run here.
    match spv_subgroup_lower::verify_lowered(words, &out, report.changed, &opts, Some(&env)) {
        Ok(()) => {}
        Err(spv_subgroup_lower::VerifyError::Input { errors })
            if errors.diagnostics.iter().all(|d| d.rule.code() == "SG0704") => {}
        Err(e) => {
            return Err(format!(
                "our validator rejects the lowered module for `{preset}`: {e}"
            ))
        }
    }
    Ok(out)
}

/// Runs every variant of one case; returns per variant the raw outputs (for comparisons).
fn run_case(runner: &Runner, case: &Case, presets: &[String], summary: &mut Summary) -> RawOutputs {
    let mut raw = BTreeMap::new();
    if let Some(missing) = device_lacks(case, runner) {
        summary
            .notes
            .push(format!("{}: device lacks {missing}", case.name));
        return raw;
    }
    let native = match compile(&case.glsl, case.env) {
        Ok(w) => w,
        Err(e) => {
            summary.fail(&case.name, "compile", e);
            return raw;
        }
    };
    let native_ok = native_blocker(&native, runner);
    let mut variants: Vec<(Variant, Result<Vec<u32>, String>)> = Vec::new();
    match native_ok {
        None => variants.push((Variant::Native, Ok(native.clone()))),
        Some(why)
            if matches!(
                case.family,
                Family::CoreArith | Family::CoreVote | Family::Vote
            ) =>
        {
            summary.fail(&case.name, "native", format!("cannot run natively: {why}"));
        }
        Some(_) => {}
    }
    // Emulation is lowered for the device's first preset, also for a case with its own list
    // (the SPIR-V 1.0 `khr-ballot` one: emulation needs core ballots).
    let device_presets = presets;
    let own: Vec<String>;
    let presets = match &case.presets {
        Some(p) => {
            own = p.iter().map(|s| (*s).to_owned()).collect();
            &own[..]
        }
        None => presets,
    };
    if !matches!(case.family, Family::CoreArith | Family::CoreVote) {
        for p in presets {
            variants.push((
                Variant::Lowered(p.clone()),
                lower_checked(&native, p, FloatPartition::Spec),
            ));
        }
    }
    // Emulation (issue 26) where the device has 16 lanes or more: at a quarter and a half of its
    // size (on lavapipe's 16 lanes: 4 and 8; on the GPU machine's 32: 8 and 16).
    let device_size = runner.info().subgroup_size;
    // Every case the device has the types of (`device_lacks` above), the wide ones too: on
    // lavapipe's 16 lanes they cost the child about 12 s of CPU (docs/lowering.md).
    if let (true, Some(p)) = (
        device_size >= 16,
        device_presets.iter().find(|p| !p.contains('@')),
    ) {
        for n in [device_size / 4, device_size / 2] {
            let emulated = Target::preset(p)
                .ok_or_else(|| format!("no preset `{p}`"))
                .and_then(|target| {
                    lower_checked_opts(
                        &native,
                        LowerOptions::default()
                            .with_target(target)
                            .with_emulated_subgroup_size(Some(n)),
                    )
                });
            variants.push((Variant::Emulated(p.clone(), n), emulated));
        }
    }
    let bitwise_native = runner.info().has_subgroup_op("partitioned_nv");
    for (variant, words) in variants {
        let vname = variant.name();
        let words = match words {
            Ok(w) => w,
            Err(e) => {
                summary.fail(&case.name, &vname, e);
                continue;
            }
        };
        if let Ok(dir) = std::env::var("SPV_CONFORMANCE_DUMP") {
            let file = format!(
                "{}-{}.spv",
                case.name.replace('/', "_"),
                vname.replace(':', "_")
            );
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::write(std::path::Path::new(&dir).join(file), bytes);
        }
        // NVIDIA's native partition compares bits (DESIGN.md section 5); the model knows both.
        let eq = if variant == Variant::Native && bitwise_native {
            KeyEq::Bitwise
        } else {
            KeyEq::Spec
        };
        for &local in &case.local_sizes {
            let opts = PipelineOptions {
                buffers: 2,
                spec_constants: vec![(0, local)],
                ..PipelineOptions::default()
            };
            let pipeline = match runner.pipeline(&words, &opts) {
                Ok(p) => p,
                Err(e) => {
                    summary.fail(&case.name, &vname, format!("local size {local}: {e}"));
                    continue;
                }
            };
            for seed in SEEDS {
                match run_one(runner, &pipeline, case, local, seed, eq) {
                    Ok(r) => {
                        let model_ok = r.outcome.mismatches == 0 && r.outcome.records > 0;
                        let mut ok = model_ok;
                        if let Variant::Emulated(_, n) = variant {
                            // The driver's run of the emulated module against the original's
                            // at N in the simulator, record for record: a difference fails
                            // the run.
                            let what = format!(
                                "{vname}: the original at {n} in the simulator vs the driver"
                            );
                            ok &= sim_compare(
                                case,
                                &native,
                                (local, seed, n),
                                &r.out,
                                eq,
                                summary,
                                (&vname, &what),
                            );
                        }
                        summary.unchecked += r.outcome.unchecked;
                        summary.record(&case.name, &vname, ok, r.outcome.checked);
                        if !model_ok {
                            summary.failures.push(format!(
                                "{} [{vname}] local {local} seed {seed}: {} mismatches of {} ({:?}); records {}\n    {}",
                                case.name,
                                r.outcome.mismatches,
                                r.outcome.checked,
                                r.outcome.by_result,
                                r.outcome.records,
                                r.outcome.details.join("\n    ")
                            ));
                        }
                        if variant == Variant::Native {
                            let size = runner.info().subgroup_size;
                            let what = "native: simulator vs driver";
                            sim_compare(
                                case,
                                &words,
                                (local, seed, size),
                                &r.out,
                                eq,
                                summary,
                                ("native", what),
                            );
                        }
                        if matches!(variant, Variant::Emulated(..)) {
                            continue;
                        }
                        raw.entry(variant.clone())
                            .or_insert_with(Vec::new)
                            .push((local, seed, r.out));
                    }
                    Err(e) => summary.fail(
                        &case.name,
                        &vname,
                        format!("local {local} seed {seed}: {e}"),
                    ),
                }
            }
        }
    }
    raw
}

/// Runs a native module in the simulator (`spv-subgroup-sim`) with the driver's inputs,
/// workgroups and subgroup size, and compares its output with the driver's, word for word: the
/// proof that the simulator executes the suite as the driver does (issue 8).
/// Where the driver compares float partition keys bitwise (NVIDIA) and the simulator follows the
/// spec (+0.0 with -0.0), a record whose key and activity agree may differ: counted apart.
/// The records are tallied under `tally` (`native`, or the emulated variant's name: then `words`
/// is the original, run at the emulated size); returns whether every record agreed (up to the
/// expected differences) and the simulator read no undefined value.
fn sim_compare(
    case: &Case,
    words: &[u32],
    (local, seed, size): (u32, u64, u32),
    driver: &[u32],
    eq: KeyEq,
    summary: &mut Summary,
    (tally, what): (&str, &str),
) -> bool {
    let spec = BTreeMap::from([(0u32, u64::from(local))]);
    let module = match spv_subgroup_sim::Module::with_spec_constants(words, &spec) {
        Ok(m) => m,
        Err(e) => {
            summary.fail(&case.name, "simulator", format!("translation: {e}"));
            return false;
        }
    };
    let inp = gen_inputs(case, local, seed);
    let mut buffers = BTreeMap::new();
    buffers.insert((0, 0), inp.iter().flat_map(|w| w.to_le_bytes()).collect());
    buffers.insert((0, 1), vec![0u8; driver.len() * 4]);
    let d = spv_subgroup_sim::Dispatch::default()
        .with_subgroup_size(size)
        .with_workgroups([GROUPS, 1, 1])
        .with_buffers(buffers)
        .with_seed(seed);
    let out = match module.run(&d) {
        Ok(o) => o,
        Err(e) => {
            summary.fail(
                &case.name,
                "simulator",
                format!("local {local} seed {seed}: {e}"),
            );
            return false;
        }
    };
    let sim: Vec<u32> = out.buffers[&(0, 1)]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let stride = case.layout.stride();
    let float_key = case.layout.key.is_some_and(|k| k.is_float());
    let mut shown = 0;
    let counts = summary.sim.entry(tally.to_owned()).or_default();
    let differing_before = counts.2;
    for (i, (a, b)) in driver
        .chunks_exact(stride)
        .zip(sim.chunks_exact(stride))
        .enumerate()
    {
        if a == b {
            counts.0 += 1;
        } else if eq == KeyEq::Bitwise && float_key && a[..8] == b[..8] {
            counts.1 += 1;
        } else {
            counts.2 += 1;
            if shown < 3 {
                shown += 1;
                summary.failures.push(format!(
                    "{} [{what}] local {local} seed {seed} record {i}: driver {a:x?} simulator {b:x?}",
                    case.name
                ));
            }
        }
    }
    let agreed = counts.2 == differing_before && driver.len() == sim.len();
    if driver.len() != sim.len() {
        summary.failures.push(format!(
            "{} [{what}] local {local} seed {seed}: the driver wrote {} words, the simulator {}",
            case.name,
            driver.len(),
            sim.len()
        ));
    }
    if out.undefined_total != 0 {
        summary.failures.push(format!(
            "{} [{what}] local {local} seed {seed}: the simulator read {} undefined values",
            case.name, out.undefined_total
        ));
    }
    agreed && out.undefined_total == 0
}

/// Compares native and lowered outputs word for word (same inputs, same driver layout). Integer
/// results must be bit-identical; float keys may differ only where NVIDIA's bitwise compare splits
/// +0.0 from -0.0 (or groups NaNs): those are counted separately.
fn compare_native_lowered(
    case: &Case,
    raw: &RawOutputs,
    summary: &mut Summary,
) -> (usize, usize, usize) {
    let Some(native) = raw.get(&Variant::Native) else {
        return (0, 0, 0);
    };
    let (mut same, mut expected_diff, mut diff) = (0, 0, 0);
    let layout: &Layout = &case.layout;
    let stride = layout.stride();
    for (variant, runs) in raw {
        if *variant == Variant::Native {
            continue;
        }
        for (local, seed, out) in runs {
            let Some((_, _, nat)) = native.iter().find(|(l, s, _)| l == local && s == seed) else {
                continue;
            };
            for (i, (a, b)) in nat
                .chunks_exact(stride)
                .zip(out.chunks_exact(stride))
                .enumerate()
            {
                if a == b {
                    same += 1;
                    continue;
                }
                // Float keys: a different partition result is expected when the subset's keys contain
                // zeros of both signs or NaNs; results computed from it may then differ too.
                let float_key = layout.key.is_some_and(|k| k.is_float());
                if float_key && a[..8] == b[..8] {
                    expected_diff += 1;
                    continue;
                }
                diff += 1;
                if diff <= 3 {
                    summary.failures.push(format!(
                        "{} [{} vs native] local {local} seed {seed} record {i}: native {:x?} lowered {:x?}",
                        case.name,
                        variant.name(),
                        a,
                        b
                    ));
                }
            }
        }
    }
    (same, expected_diff, diff)
}

/// The radix-sort multisplit workload (two passes per digit), checked against a host histogram and
/// a permutation check. Returns an error text on failure.
fn radix(runner: &Runner, words: (&[u32], &[u32]), local: u32, seed: u64) -> Result<(), String> {
    let n: u32 = 5000;
    let mut rng = Rng::derive(&[seed, 0x5a]);
    let keys: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let groups = n.div_ceil(local);
    let mut current = keys.clone();
    for shift in [0u32, 4, 8, 28] {
        let spec = vec![(0, local), (1, shift)];
        let hist_p = runner
            .pipeline(
                words.0,
                &PipelineOptions {
                    buffers: 2,
                    spec_constants: spec.clone(),
                    ..Default::default()
                },
            )
            .map_err(|e| e.to_string())?;
        let scat_p = runner
            .pipeline(
                words.1,
                &PipelineOptions {
                    buffers: 3,
                    spec_constants: spec,
                    ..Default::default()
                },
            )
            .map_err(|e| e.to_string())?;
        let mut input = vec![n];
        input.extend(&current);
        let mut bufs = vec![input.clone(), vec![0u32; 16]];
        runner
            .run(&hist_p, &mut bufs, [groups, 1, 1], FIRST_TIMEOUT)
            .map_err(|e| e.to_string())?;
        let mut host = [0u32; 16];
        for k in &current {
            host[((k >> shift) & 15) as usize] += 1;
        }
        if bufs[1] != host {
            return Err(format!(
                "shift {shift}: histogram {:?}, host {:?}",
                bufs[1], host
            ));
        }
        let mut offsets = vec![0u32; 16];
        let mut acc = 0;
        for d in 0..16 {
            offsets[d] = acc;
            acc += host[d];
        }
        let starts = offsets.clone();
        let mut bufs = vec![input, offsets, vec![0xdead_beef; n as usize]];
        runner
            .run(&scat_p, &mut bufs, [groups, 1, 1], FIRST_TIMEOUT)
            .map_err(|e| e.to_string())?;
        let sorted = bufs[2].clone();
        for d in 0..16 {
            let end = starts[d] + host[d];
            if bufs[1][d] != end {
                return Err(format!(
                    "shift {shift}: bucket {d} counter ends at {}, expected {end}",
                    bufs[1][d]
                ));
            }
            for (i, k) in sorted[starts[d] as usize..end as usize].iter().enumerate() {
                if (k >> shift) & 15 != d as u32 {
                    return Err(format!(
                        "shift {shift}: position {} holds {k:#x}, not digit {d}",
                        starts[d] as usize + i
                    ));
                }
            }
        }
        let (mut a, mut b) = (sorted.clone(), current.clone());
        a.sort_unstable();
        b.sort_unstable();
        if a != b {
            return Err(format!(
                "shift {shift}: the output is not a permutation of the input"
            ));
        }
        current = sorted;
    }
    Ok(())
}

fn run_radix(runner: &Runner, presets: &[String], summary: &mut Summary) {
    let name = "radix-multisplit";
    let (h, s) = match (
        compile(shaders::RADIX_HIST, "vulkan1.1"),
        compile(shaders::RADIX_SCATTER, "vulkan1.1"),
    ) {
        (Ok(h), Ok(s)) => (h, s),
        (Err(e), _) | (_, Err(e)) => return summary.fail(name, "compile", e),
    };
    let mut variants = Vec::new();
    if native_blocker(&h, runner).is_none() {
        variants.push(("native".to_owned(), Ok((h.clone(), s.clone()))));
    }
    // Not for `naga`: the workload's own `subgroupBallotFindLSB` is a ballot bit op, which naga's
    // front end does not take (the lowering leaves user code alone; our validator would refuse it).
    for p in presets.iter().filter(|p| !p.starts_with("naga")) {
        let l = lower_checked(&h, p, FloatPartition::Spec)
            .and_then(|a| Ok((a, lower_checked(&s, p, FloatPartition::Spec)?)));
        variants.push((format!("lowered:{p}"), l));
    }
    // Emulated at a quarter and a half of the device's size (as `run_case`): the histogram and
    // the permutation do not depend on the subgroup size, so the same checks hold. One local
    // size (37: full and partial virtual subgroups), since each run builds 8 pipelines.
    let size = runner.info().subgroup_size;
    let emulating = presets.iter().find(|p| !p.contains('@'));
    if let (true, Some(p)) = (size >= 16, emulating) {
        for n in [size / 4, size / 2] {
            let emulate = |words: &[u32]| {
                Target::preset(p)
                    .ok_or_else(|| format!("no preset `{p}`"))
                    .and_then(|target| {
                        lower_checked_opts(
                            words,
                            LowerOptions::new(target).with_emulated_subgroup_size(Some(n)),
                        )
                    })
            };
            let e = emulate(&h).and_then(|a| Ok((a, emulate(&s)?)));
            variants.push((format!("emulated:{p}@{n}"), e));
        }
    }
    for (vname, words) in variants {
        let runs: &[(u32, u64)] = if vname.starts_with("emulated") {
            &[(37, 2)]
        } else {
            &[(64, 1), (37, 2), (5, 3)]
        };
        match words {
            Err(e) => summary.fail(name, &vname, e),
            Ok((a, b)) => {
                for &(local, seed) in runs {
                    match radix(runner, (&a, &b), local, seed) {
                        Ok(()) => summary.record(name, &vname, true, 5000 * 4),
                        Err(e) => {
                            summary.fail(name, &vname, format!("local {local} seed {seed}: {e}"))
                        }
                    }
                }
            }
        }
    }
}

/// The suite inside a child process (or on the GPU machine, through `cargo xtask gpu`).
#[test]
#[ignore = "the suite of a child process: lavapipe_subgroup_size_* and cargo xtask gpu run it"]
fn child_suite() {
    assert!(
        std::env::var("SPV_CONFORMANCE_CHILD").is_ok(),
        "child_suite runs inside lavapipe_subgroup_size_* or `cargo xtask gpu`; to run it at the \
         driver's own subgroup size, set SPV_CONFORMANCE_CHILD=1"
    );
    let mut runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
    let info = runner.info().clone();
    println!("{}", info.summary());
    println!("subgroup size: {}", info.subgroup_size);
    if let Ok(expect) = std::env::var("SPV_CHILD_EXPECT_SIZE") {
        assert_eq!(
            info.subgroup_size.to_string(),
            expect,
            "the driver reports another subgroup size"
        );
    }
    let presets = presets(&runner);
    let filter = std::env::var("SPV_CONFORMANCE_FILTER").unwrap_or_default();
    let start = Instant::now();
    let mut summary = Summary::default();
    let mut cmp = (0, 0, 0);
    for case in shaders::all_cases()
        .iter()
        .filter(|c| c.name.contains(&filter))
    {
        let t = Instant::now();
        let raw = run_case(&runner, case, &presets, &mut summary);
        if runner.is_poisoned() {
            // A shader hung (already a failure); go on with a fresh device for the other cases.
            runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
        }
        let c = compare_native_lowered(case, &raw, &mut summary);
        cmp = (cmp.0 + c.0, cmp.1 + c.1, cmp.2 + c.2);
        println!("  {:<28} {:>6.2}s", case.name, t.elapsed().as_secs_f64());
    }
    if "radix-multisplit".contains(&filter) || filter.is_empty() {
        run_radix(&runner, &presets, &mut summary);
    }
    if "vote-loop-spirv1.0".contains(&filter) || filter.is_empty() {
        vote_loop::run(&runner, &presets, &mut summary);
    }
    let native_sim = summary.sim.get("native").copied().unwrap_or_default();
    summary.notes.push(format!(
        "native runs in the simulator at subgroup size {}: {} records identical to the driver's, {} differ as expected (bitwise float partition), {} differ",
        info.subgroup_size, native_sim.0, native_sim.1, native_sim.2
    ));
    for (variant, (same, _, differ)) in summary.sim.iter().filter(|(v, _)| *v != "native") {
        summary.notes.push(format!(
            "{variant}: the driver's records against the original's in the simulator at the emulated size: {same} identical, {differ} differ"
        ));
    }
    assert!(
        native_sim.0 > 0 || !filter.is_empty(),
        "no native record was compared with the simulator"
    );
    // The emulated variants run on devices of 16 lanes or more (lavapipe's size-16 child, the
    // GPU machine): there, their records must have been compared too.
    assert!(
        info.subgroup_size < 16
            || !filter.is_empty()
            || summary
                .sim
                .iter()
                .any(|(v, c)| v.starts_with("emulated") && c.0 > 0),
        "no emulated record was compared with the simulator"
    );
    if cmp != (0, 0, 0) {
        summary.notes.push(format!(
            "native vs lowered records: {} identical, {} differ as expected (float keys: +0/-0, NaN), {} differ unexpectedly",
            cmp.0, cmp.1, cmp.2
        ));
    }
    let report = summary.report(info.subgroup_size, &info.name);
    println!("{report}");
    println!("suite time: {:.1}s", start.elapsed().as_secs_f64());
    if let Ok(dir) = std::env::var("SPV_CONFORMANCE_OUT") {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            format!("{dir}/conformance-{}.txt", info.subgroup_size),
            &report,
        );
    }
    if std::env::var("SPV_CONFORMANCE_BENCH").is_ok() {
        bench::run(&runner);
    }
    assert!(
        summary.failures.is_empty(),
        "{} failures (see above)",
        summary.failures.len()
    );
    assert!(!summary.rows.is_empty(), "no case ran");
}

/// Re-runs this binary's `child_suite` with `LP_NATIVE_VECTOR_WIDTH` set, with a wall-clock limit.
/// Whether lavapipe runs its LLVM optimisation passes on the pipelines of a child.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Optimise {
    On,
    Off,
}

fn run_child(size: u32, optimise: Optimise) {
    // Off: lavapipe::run_child's default (`nopt`, unless `SPV_LAVAPIPE_LLVM_OPT` is set).
    let mut env = vec![("SPV_CONFORMANCE_CHILD", "1")];
    if optimise == Optimise::On {
        env.push(("GALLIVM_PERF", ""));
    }
    let text = lavapipe::run_child("child_suite", size, &env, Duration::from_secs(900));
    println!("{text}");
}

// Sizes 4 and 16 run with lavapipe's LLVM optimisation passes off (`GALLIVM_PERF=nopt`): a third
// less CPU, since compiling the pipelines dominates the suite; size 8 runs with them on, as users'
// lavapipe does, so a shape the optimiser gets wrong is still seen (docs/conformance.md).
#[test]
fn lavapipe_subgroup_size_4() {
    run_child(4, Optimise::Off);
}

#[test]
fn lavapipe_subgroup_size_8() {
    run_child(8, Optimise::On);
}

#[test]
fn lavapipe_subgroup_size_16() {
    run_child(16, Optimise::Off);
}

#[test]
fn model_partition_follows_the_spec() {
    // Keys +0.0, -0.0, NaN, NaN, 1.0 on five active lanes.
    let kt = Ty::s(Scalar::F(32));
    let keys = [0u64, 0x8000_0000, 0x7fc0_0000, 0x7fc0_0000, 0x3f80_0000];
    let parts = [0b00011u32, 0b00011, 0b00100, 0b01000, 0b10000];
    let layout = Layout {
        slots: 1,
        key: Some(kt),
        value: None,
        results: vec![],
    };
    let recs: Vec<model::Rec> = (0..5)
        .map(|l| model::Rec {
            lane: l,
            size: 8,
            flags: 1,
            act: [0b11111, 0, 0, 0],
            part: [parts[l as usize], 0, 0, 0],
            key: vec![keys[l as usize]],
            ..Default::default()
        })
        .collect();
    assert_eq!(model::check(&layout, &recs, KeyEq::Spec).mismatches, 0);
    // The bitwise model (NVIDIA native) wants the zeros apart.
    assert!(model::check(&layout, &recs, KeyEq::Bitwise).mismatches > 0);
    // Dropping lane 1 from lane 0's subset breaks the spec.
    let mut bad = recs.clone();
    bad[0].part = [0b00001, 0, 0, 0];
    assert!(model::check(&layout, &bad, KeyEq::Spec).mismatches > 0);
}

#[test]
fn model_scans_follow_the_spec_example() {
    // The spec's example: even/odd ballots, values 42, 13, -56, 0, 128, -1, 7, 3.5; sums 121 / 15.5.
    let vt = Ty::s(Scalar::F(32));
    let vals = [42.0f32, 13.0, -56.0, 0.0, 128.0, -1.0, 7.0, 3.5];
    let layout = Layout {
        slots: 1,
        key: None,
        value: Some(vt),
        results: vec![
            model::ResultKind::Arith(model::Op::Add, model::Mode::Reduce),
            model::ResultKind::Arith(model::Op::Add, model::Mode::Exclusive),
        ],
    };
    let excl = [0.0f32, 0.0, 42.0, 13.0, -14.0, 13.0, 114.0, 12.0];
    let recs: Vec<model::Rec> = (0..8u32)
        .map(|l| model::Rec {
            lane: l,
            size: 8,
            act: [0xff, 0, 0, 0],
            // Bits beyond the subgroup are ignored.
            ballot: [if l % 2 == 0 { 0x55 } else { 0xaa } | 0xff00, 0, 0, 7],
            value: vec![u64::from(vals[l as usize].to_bits())],
            results: vec![
                vec![u64::from(
                    if l % 2 == 0 { 121.0f32 } else { 15.5 }.to_bits(),
                )],
                vec![u64::from(excl[l as usize].to_bits())],
            ],
            ..Default::default()
        })
        .collect();
    let o = model::check(&layout, &recs, KeyEq::Spec);
    assert_eq!(o.mismatches, 0, "{:?}", o.details);
}

/// The emulation's two checks can fail: a conformance case and a benchmark row, emulated at half
/// the device's size and run by the driver, agree with the original in the simulator at that
/// size and differ from it at a quarter (the suite's `sim_compare` and the benchmark's
/// `bench_emulated::check`, which the child suite and `cargo xtask gpu` rely on).
#[test]
fn emulated_checks_catch_a_wrong_size() {
    let runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
    let size = runner.info().subgroup_size;
    assert!(
        size >= 8,
        "the device has {size} lanes: too few to emulate at a quarter"
    );
    let (n, wrong) = (size / 2, size / 4);
    let preset = bench_emulated::device_preset(runner.info());
    // The suite: a scan (emulated as a partitioned scan over the virtual subgroup) in branches.
    let case = shaders::diverge_case("branches", Ty::s(Scalar::U(32)));
    let native = compile(&case.glsl, case.env).expect("compiles");
    let target = Target::preset(preset).expect("preset");
    let emulated = lower_checked_opts(
        &native,
        LowerOptions::new(target).with_emulated_subgroup_size(Some(n)),
    )
    .expect("emulates");
    let local = *case.local_sizes.last().expect("a local size");
    let opts = PipelineOptions {
        buffers: 2,
        spec_constants: vec![(0, local)],
        ..Default::default()
    };
    let pipeline = runner.pipeline(&emulated, &opts).expect("pipeline");
    let r = run_one(&runner, &pipeline, &case, local, SEEDS[0], KeyEq::Spec).expect("runs");
    let mut summary = Summary::default();
    let same = (local, SEEDS[0], n);
    let right = sim_compare(
        &case,
        &native,
        same,
        &r.out,
        KeyEq::Spec,
        &mut summary,
        ("right", "right"),
    );
    let other = (local, SEEDS[0], wrong);
    let caught = !sim_compare(
        &case,
        &native,
        other,
        &r.out,
        KeyEq::Spec,
        &mut summary,
        ("wrong", "wrong"),
    );
    assert!(
        right,
        "the emulated run differs from the original at {n}: {:?}",
        summary.failures
    );
    assert!(
        caught,
        "the emulated run at {n} passed as the original at {wrong}"
    );
    assert!(summary.sim["wrong"].2 > 0 && summary.sim["right"].0 > 0);
    // The benchmark: a reduce (emulated as a clustered reduce).
    let glsl = bench::row_glsl("op-add-u32").expect("the benchmark row");
    let native = compile(&glsl, "vulkan1.1").expect("compiles");
    let emulated = bench_emulated::emulate(&native, preset, n).expect("emulates");
    let right = bench_emulated::check(&runner, &emulated, &native, n, false);
    assert_eq!(right, bench_emulated::Check::Equal);
    let wrong = bench_emulated::check(&runner, &emulated, &native, wrong, false);
    assert!(
        matches!(wrong, bench_emulated::Check::Differs { differ, .. } if differ > 0),
        "{wrong:?}"
    );
}

/// The mutation check: lower a divergent case, then break the lowered shader so the partitioned ops
/// use the raw ballot operand instead of `ballot & Ballot(true)` (every `OpGroupNonUniformBallot` of
/// `true` whose result feeds an `OpBitwiseAnd` is replaced by an all-ones constant, i.e. the active
/// mask is dropped). The suite must report mismatches for the ballot-from-outside cases.
#[test]
fn mutation_unmasked_ballot_is_caught() {
    let runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
    let case = shaders::diverge_case("branches", Ty::s(Scalar::U(32)));
    let native = compile(&case.glsl, "vulkan1.1").expect("compiles");
    let preset = if runner.info().has_subgroup_op("partitioned_nv") {
        "vulkan1.1"
    } else {
        "lavapipe"
    };
    let lowered = lower_checked(&native, preset, FloatPartition::Spec).expect("lowers");
    // Sanity: the correct lowering passes.
    let check = |words: &[u32]| -> (usize, usize) {
        let mut mism = 0;
        let mut checked = 0;
        for &local in &case.local_sizes {
            let opts = PipelineOptions {
                buffers: 2,
                spec_constants: vec![(0, local)],
                ..Default::default()
            };
            let p = runner.pipeline(words, &opts).expect("pipeline");
            for seed in SEEDS {
                let r = run_one(&runner, &p, &case, local, seed, KeyEq::Spec).expect("runs");
                mism += r.outcome.mismatches;
                checked += r.outcome.checked;
            }
        }
        (mism, checked)
    };
    let (good, checked) = check(&lowered);
    assert_eq!(good, 0, "the unbroken lowering must pass");
    assert!(checked > 0);
    let (broken, patched) = drop_active_mask(&lowered);
    assert!(
        patched > 0,
        "found no active-set ballot to break in the lowered module"
    );
    let (bad, _) = check(&broken);
    println!("mutation: patched {patched} active-set ballots; {bad} mismatches");
    assert!(
        bad > 0,
        "the suite did not notice a lowering that forgets to mask inactive lanes"
    );
}

/// Breaks a lowered module on purpose: every `OpBitwiseAnd` operand that is an
/// `OpGroupNonUniformBallot` of constant `true` (the active set the lowering masks ballots with),
/// or a component of one, becomes an all-ones constant. Returns the new words and how many
/// operands were replaced.
fn drop_active_mask(words: &[u32]) -> (Vec<u32>, usize) {
    use rspirv::binary::Assemble;
    use rspirv::dr::{Instruction, Operand};
    use spirv::Op;
    let mut m = rspirv::dr::load_words(words).expect("the lowered module loads");
    let trues: Vec<u32> = m
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::ConstantTrue)
        .filter_map(|i| i.result_id)
        .collect();
    // Active-set ids: whole ballots (vectors) and their components (scalars).
    let mut vec_ids = Vec::new();
    let mut word_ids = Vec::new();
    let mut v4 = None;
    for f in &m.functions {
        for b in &f.blocks {
            for i in &b.instructions {
                let first = match i.operands.first() {
                    Some(Operand::IdRef(p)) => Some(*p),
                    _ => None,
                };
                if i.class.opcode == Op::GroupNonUniformBallot
                    && matches!(i.operands.get(1), Some(Operand::IdRef(p)) if trues.contains(p))
                {
                    vec_ids.extend(i.result_id);
                    v4 = i.result_type;
                } else if i.class.opcode == Op::CompositeExtract
                    && first.is_some_and(|p| vec_ids.contains(&p))
                {
                    word_ids.extend(i.result_id);
                }
            }
        }
    }
    let Some(v4) = v4 else {
        return (words.to_vec(), 0);
    };
    let uint = m
        .types_global_values
        .iter()
        .find(|i| {
            i.class.opcode == Op::TypeInt
                && i.operands == [Operand::LiteralBit32(32), Operand::LiteralBit32(0)]
        })
        .and_then(|i| i.result_id)
        .expect("uint type");
    let bound = m.header.as_ref().map_or(0, |h| h.bound);
    let (c, ones) = (bound, bound + 1);
    if let Some(h) = m.header.as_mut() {
        h.bound = bound + 2;
    }
    m.types_global_values.push(Instruction::new(
        Op::Constant,
        Some(uint),
        Some(c),
        vec![Operand::LiteralBit32(u32::MAX)],
    ));
    m.types_global_values.push(Instruction::new(
        Op::ConstantComposite,
        Some(v4),
        Some(ones),
        vec![Operand::IdRef(c); 4],
    ));
    let mut n = 0;
    for f in &mut m.functions {
        for b in &mut f.blocks {
            for i in &mut b.instructions {
                if i.class.opcode == Op::BitwiseAnd {
                    for o in &mut i.operands {
                        if let Operand::IdRef(id) = o {
                            if vec_ids.contains(id) {
                                *o = Operand::IdRef(ones);
                                n += 1;
                            } else if word_ids.contains(id) {
                                *o = Operand::IdRef(c);
                                n += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    (m.assemble(), n)
}

/// The runner's errors: a pipeline the driver cannot build is an `Err` carrying the `VkResult`,
/// and a shader that never ends is `VkError::Timeout` (then the runner refuses further work).
/// The hang runs in a child process, so the spinning driver thread ends with it.
#[test]
fn runner_errors_are_typed() {
    if std::env::var("SPV_CONFORMANCE_HANG_CHILD").is_ok() {
        let runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
        // llvmpipe ends a shader's loops after 65535 iterations in all (its guard against hangs),
        // so an endless loop alone finishes; millions of workgroups of it do not, in time.
        let glsl = "#version 450\nlayout(local_size_x = 1) in;\n\
                    layout(std430, binding = 0) buffer B { uint d[]; };\n\
                    void main() { while (atomicOr(d[0], 0u) == 0u) { atomicAdd(d[1], 1u); } }\n";
        let words = compile(glsl, "vulkan1.1").expect("compiles");
        let p = runner
            .pipeline(&words, &PipelineOptions::default())
            .expect("pipeline");
        let mut bufs = vec![vec![0u32; 2]];
        let r = runner.run(&p, &mut bufs, [65535, 1024, 1], Duration::from_secs(3));
        assert!(
            matches!(r, Err(spv_subgroup_vk::VkError::Timeout(_))),
            "{r:?} {bufs:?}"
        );
        assert!(runner.is_poisoned());
        assert!(runner.run(&p, &mut bufs, [1, 1, 1], TIMEOUT).is_err());
        println!("hang detected");
        // Exit at once: a driver thread still spins on the hung dispatch.
        std::process::exit(0);
    }
    let runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
    // Not SPIR-V at all.
    assert!(matches!(
        runner.pipeline(&[1, 2, 3], &PipelineOptions::default()),
        Err(spv_subgroup_vk::VkError::Invalid(_))
    ));
    // A partition op on a device without native partitioned ops: the driver refuses it.
    let case = shaders::partition_case(Ty::s(Scalar::U(32)));
    let words = compile(&case.glsl, "vulkan1.1").expect("compiles");
    let opts = PipelineOptions {
        buffers: 2,
        spec_constants: vec![(0, 37)],
        ..Default::default()
    };
    if !runner.info().has_subgroup_op("partitioned_nv") {
        match runner.pipeline(&words, &opts) {
            Err(spv_subgroup_vk::VkError::Pipeline { result, .. }) => {
                println!("pipeline failure reported: {result:?}");
            }
            other => panic!("expected a pipeline error, got {other:?}"),
        }
    }
    drop(runner);
    let proc_exe = std::path::Path::new("/proc/self/exe");
    let exe = if proc_exe.exists() {
        proc_exe.to_path_buf()
    } else {
        std::env::current_exe().expect("the test binary's path")
    };
    let out = Command::new(exe)
        .args([
            "--exact",
            "runner_errors_are_typed",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("SPV_CONFORMANCE_HANG_CHILD", "1")
        .env("MESA_SHADER_CACHE_DISABLE", "true")
        .output()
        .expect("re-running the test binary");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("hang detected"),
        "{text}"
    );
}
