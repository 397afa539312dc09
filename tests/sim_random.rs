//! Random programs (issue 8): each generated compute shader (`sim_random_gen.rs`) runs in the
//! simulator natively and lowered for every preset whose subgroup-size range includes a random
//! size, with a random workgroup size (full and partial subgroups); every lowered output must equal
//! the native one word for word, and neither may read an undefined value.
//!
//! - Each program whose size is at most 64 is also emulated at that size
//!   (`LowerOptions::emulate_subgroup_size`, lowered for `vulkan1.1`) and run at every larger
//!   hardware size up to 128: its output must equal the native one at the program's size.
//! - `random_programs`: `SPV_FUZZ_PROGRAMS` programs (default 16) from seed `SPV_FUZZ_SEED`
//!   (default 0) in CI; with `SPV_FUZZ_MINUTES=N` it runs fresh seeds for N minutes instead
//!   (`cargo xtask fuzz-exec --minutes N`). A disagreement writes the program to
//!   `target/fuzz-exec/` (first line `// size S local L`) and fails; such a program is to become a
//!   fixture (none has been found so far: docs/conformance.md, "Random programs").

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

#[path = "sim_random_gen.rs"]
mod gen;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use spv_subgroup_lower::{lower_words, FloatPartition, LowerOptions, Target};
use spv_subgroup_sim::{Dispatch, Module};
use spv_subgroup_tests::tools;

/// Presets the programs are lowered for.
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];
/// Subgroup sizes drawn from.
const SIZES: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];
/// Workgroups per dispatch.
const GROUPS: u32 = 2;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn compile(glsl: &str) -> Result<Vec<u32>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("random.comp");
    std::fs::write(&path, glsl).map_err(|e| e.to_string())?;
    tools::compile_glsl(&path, "vulkan1.1")
}

/// Runs `words` at `size` with `local` invocations per workgroup; the output words, or why not.
fn run(words: &[u32], size: u32, local: u32, lowered: &str) -> Result<Vec<u32>, String> {
    run_at(words, size, size, local, lowered)
}

/// [`run`] at hardware size `size` with the inputs (and undefined-value seed) of `input_size`.
fn run_at(
    words: &[u32],
    size: u32,
    input_size: u32,
    local: u32,
    lowered: &str,
) -> Result<Vec<u32>, String> {
    let spec = BTreeMap::from([(0u32, u64::from(local))]);
    let module =
        Module::with_spec_constants(words, &spec).map_err(|e| format!("{lowered}: {e}"))?;
    let n = (GROUPS * local) as usize;
    let mut rng = gen::Rng::new(u64::from(local) * 31 + u64::from(input_size));
    let inp: Vec<u8> = (0..n)
        .flat_map(|_| (rng.next() as u32 % 97).to_le_bytes())
        .collect();
    let mut buffers = BTreeMap::new();
    buffers.insert((0, 0), inp);
    buffers.insert((0, 1), vec![0u8; n * gen::SLOTS as usize * 4]);
    let d = Dispatch::default()
        .with_subgroup_size(size)
        .with_workgroups([GROUPS, 1, 1])
        .with_buffers(buffers)
        .with_seed(u64::from(input_size))
        .with_report_undefined(true);
    let out = module.run(&d).map_err(|e| format!("{lowered}: {e}"))?;
    if out.undefined_total != 0 {
        return Err(format!(
            "{lowered} read {} undefined values, first: {:?}",
            out.undefined_total,
            out.undefined.first()
        ));
    }
    Ok(out.buffers[&(0, 1)]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Checks one program at one size and local size: Ok((lowered variants, emulated runs) compared)
/// or the failure.
fn check(glsl: &str, size: u32, local: u32) -> Result<(usize, usize), String> {
    let native = compile(glsl).map_err(|e| format!("glslang: {e}"))?;
    let want = run(&native, size, local, "native")?;
    let (mut compared, mut emulated_runs) = (0, 0);
    for p in PRESETS {
        let target = Target::preset(p).ok_or_else(|| format!("no preset {p}"))?;
        if !(target.min_subgroup_size..=target.max_subgroup_size).contains(&size) {
            continue;
        }
        let opts = LowerOptions::new(target)
            .with_subgroup_size(None)
            .with_float_partition(FloatPartition::Spec);
        let (lowered, _) = lower_words(&native, &opts).map_err(|e| format!("lower {p}: {e}"))?;
        let got = run(&lowered, size, local, &format!("lowered:{p}"))?;
        if let Some(i) = (0..want.len()).find(|&i| want.get(i) != got.get(i)) {
            let slots = gen::SLOTS as usize;
            return Err(format!(
                "lowered:{p} differs from native at invocation {} output {}: native {:x?}, lowered {:x?}",
                i / slots,
                i % slots,
                &want[i - i % slots..(i - i % slots + slots).min(want.len())],
                &got[i - i % slots..(i - i % slots + slots).min(got.len())],
            ));
        }
        compared += 1;
    }
    if size <= 64 {
        // The program emulated at its size, on every wider hardware subgroup.
        let opts = LowerOptions::default()
            .with_target(Target::preset("vulkan1.1").ok_or("no preset vulkan1.1")?)
            .with_emulated_subgroup_size(Some(size));
        let (emulated, _) =
            lower_words(&native, &opts).map_err(|e| format!("emulate {size}: {e}"))?;
        for h in SIZES.into_iter().filter(|&h| h > size) {
            let what = format!("emulated:{size} at hardware size {h}");
            let got = run_at(&emulated, h, size, local, &what)?;
            if let Some(i) = (0..want.len()).find(|&i| want.get(i) != got.get(i)) {
                let slots = gen::SLOTS as usize;
                return Err(format!(
                    "{what} differs from native at invocation {} output {}: native {:x?}, emulated {:x?}",
                    i / slots,
                    i % slots,
                    &want[i - i % slots..(i - i % slots + slots).min(want.len())],
                    &got[i - i % slots..(i - i % slots + slots).min(got.len())],
                ));
            }
            emulated_runs += 1;
        }
    }
    Ok((compared, emulated_runs))
}

/// A random size and local size for `seed`: full subgroups, partial ones, several subgroups.
fn shape(seed: u64) -> (u32, u32) {
    let mut r = gen::Rng::new(seed.wrapping_mul(0x9e37));
    let size = *r.pick(&SIZES);
    let local = match r.below(3) {
        0 => size,
        1 => (size * 2).min(256),
        _ => (r.below(u64::from(size * 2).min(255)) + 1) as u32,
    };
    (size, local)
}

#[test]
fn random_programs() {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
    let first = env("SPV_FUZZ_SEED").unwrap_or(0);
    let minutes = env("SPV_FUZZ_MINUTES");
    let count = env("SPV_FUZZ_PROGRAMS").unwrap_or(16);
    let start = std::time::Instant::now();
    let (mut programs, mut compared, mut fails) = (0u64, 0usize, Vec::new());
    let mut emulated = 0usize;
    let mut totals = gen::Counts::default();
    let mut seed = first;
    loop {
        let done = match minutes {
            Some(m) => start.elapsed().as_secs() >= m * 60,
            None => seed >= first + count,
        };
        if done {
            break;
        }
        let program = gen::generate(seed);
        let (size, local) = shape(seed);
        let c = program.counts;
        totals.votes += c.votes;
        totals.partitions += c.partitions;
        totals.partitioned += c.partitioned;
        totals.loops += c.loops;
        totals.ifs += c.ifs;
        totals.calls += c.calls;
        match check(&program.glsl, size, local) {
            Ok((n, e)) => {
                compared += n;
                emulated += e;
            }
            Err(e) => {
                let dir = workspace().join("target/fuzz-exec");
                let _ = std::fs::create_dir_all(&dir);
                let file = dir.join(format!("seed-{seed}.comp"));
                let _ = std::fs::write(
                    &file,
                    format!("// size {size} local {local}\n{}", program.glsl),
                );
                println!(
                    "FAIL seed {seed} size {size} local {local}: {e}\n  program: {}",
                    file.display()
                );
                fails.push(seed);
            }
        }
        programs += 1;
        seed += 1;
    }
    println!(
        "random programs: {programs} (seeds {first}..{seed}) in {:.1?}, {compared} lowered and {emulated} emulated runs equal to native, {} disagreements {fails:?}; constructs: {totals:?}",
        start.elapsed(),
        fails.len()
    );
    assert!(programs > 0, "no program ran");
    assert!(
        emulated > 0 || minutes.is_some() || count < 4,
        "no program was emulated"
    );
    assert!(fails.is_empty(), "disagreements at seeds {fails:?}");
}
