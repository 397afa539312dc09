//! `cargo xtask bench`: CPU benchmarks of `spv-subgroup validate` and `lower` on large generated modules,
//! against `spirv-val` and `spirv-opt` in the same run.
//!
//! ```text
//! cargo xtask bench [--sizes 1,10] [--runs N] [--val-runs N] [--only validate|lower] [--seed S] [--body N] [--no-extras] [--no-docs]
//! cargo xtask bench gen --size BYTES [--seed S] [--body N] [-o FILE]
//! cargo run --release -p xtask -- bench phases [--sizes 1,10] [--runs 3]   (in-process phase breakdown)
//! cargo xtask bench tree [--files 2000] [--runs 3] [--loop-runs 1] [--bundle DIR]  (2,000 small shaders, see bench_tree.rs)
//! cargo xtask bench sim [--runs 3] [--sizes 32,64,128]  (the simulator against lavapipe, see bench_sim.rs)
//! cargo xtask bench layer [--runs 5] [--big-runs 3] [--device NAME] [--force]  (the Vulkan layer's share of pipeline creation, see bench_layer.rs)
//! ```
//!
//! For each size (MB) a module is generated into `bench-out/` (see [`bench_gen`]), then each
//! command runs `--runs` times, round-robin with the commands it is compared with (the reference
//! `spirv-val` only `--val-runs` times, default 1: over 10 s on the 10 MB module). Each child runs
//! under GNU `time` (`/usr/bin/time -f "%M %U %S"`), which reports its peak resident set size and CPU
//! time (the workspace forbids `unsafe`, so no direct `wait4`); the wall time is measured here around
//! the child. The table, the goals and the machine are printed and written into the
//! `## CPU benchmarks` section of `docs/PERFORMANCE.md` (other sections, and hand-written
//! `### ... (notes)` subsections of this one, are left untouched).
//!
//! This file measures; `bench_model.rs` holds what it measured (options, samples, results),
//! `bench_env.rs` the run's environment (root, tools, machine, revision), and `bench_report.rs`
//! renders the report and rewrites the docs' section.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use spirv::Op;

// main.rs (the lead's) declares only `mod bench`; the generator is a child module in its own file.
#[path = "bench_env.rs"]
mod bench_env;
#[path = "bench_gen.rs"]
mod bench_gen;
#[path = "bench_layer.rs"]
pub(crate) mod bench_layer;
#[path = "bench_model.rs"]
mod bench_model;
#[path = "bench_phases.rs"]
mod bench_phases;
#[path = "bench_report.rs"]
mod bench_report;
#[path = "bench_sim.rs"]
mod bench_sim;
#[path = "bench_tree.rs"]
mod bench_tree;

use bench_env::{machine, revision, root, tool, tool_version};
use bench_model::{Opts, Sample, SizeResult, MB};
use bench_report::{render, write_section, write_section_named, SECTION};

/// One run of a child under GNU time.
#[derive(Debug)]
struct Run {
    wall: f64,
    cpu: f64,
    rss_kib: u64,
    ok: bool,
    tail: String,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut o = Opts {
        sizes: vec![1.0, 10.0],
        runs: 5,
        val_runs: 1,
        only: None,
        seed: 1,
        body: bench_gen::DEFAULT_BODY,
        extras: true,
        docs: true,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--sizes" => {
                o.sizes = value()?
                    .split(',')
                    .map(|s| s.trim().parse::<f64>().context("--sizes: numbers in MB"))
                    .collect::<Result<_>>()?;
            }
            "--runs" => o.runs = value()?.parse().context("--runs")?,
            "--val-runs" => o.val_runs = value()?.parse().context("--val-runs")?,
            "--only" => o.only = Some(value()?.clone()),
            "--seed" => o.seed = value()?.parse().context("--seed")?,
            "--body" => o.body = value()?.parse().context("--body")?,
            "--no-docs" => o.docs = false,
            "--no-extras" => o.extras = false,
            other => bail!(
                "unknown argument {other}\nusage: cargo xtask bench [--sizes 1,10] [--runs N] \
                 [--val-runs N] [--only validate|lower] [--seed S] [--body N] [--no-extras] [--no-docs]\n       \
                 cargo xtask bench gen --size BYTES [--seed S] [--body N] [-o FILE]"
            ),
        }
    }
    if o.runs == 0 || o.val_runs == 0 {
        bail!("--runs and --val-runs must be at least 1");
    }
    Ok(o)
}

/// Builds the CLI in release (what every benchmark times) and returns its path.
fn build_release_cli(root: &Path) -> Result<PathBuf> {
    eprintln!("building spv-subgroup (release)...");
    let st = crate::process::cargo()
        .args(["build", "--release", "-p", "spv-subgroup"])
        .current_dir(root)
        .status()
        .context("cargo build")?;
    if !st.success() {
        bail!("cargo build --release -p spv-subgroup failed");
    }
    Ok(target_dir(root).join("release").join("spv-subgroup"))
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// `cargo xtask bench gen`: write one generated module.
fn gen_cmd(args: &[String]) -> Result<()> {
    let (mut size, mut seed, mut out) = (1usize << 20, 1u64, None);
    let mut body = bench_gen::DEFAULT_BODY;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--size" => size = value()?.parse().context("--size BYTES")?,
            "--seed" => seed = value()?.parse().context("--seed")?,
            "--body" => body = value()?.parse().context("--body")?,
            "-o" => out = Some(PathBuf::from(value()?)),
            other => bail!(
                "unknown argument {other}: cargo xtask bench gen --size BYTES [--seed S] [-o FILE]"
            ),
        }
    }
    let out = out.unwrap_or_else(|| root().join("bench-out").join(format!("gen-{size}.spv")));
    if let Some(dir) = out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let words = bench_gen::generate(size, seed, body);
    std::fs::write(&out, bench_gen::to_bytes(&words))?;
    eprintln!("wrote {} ({} bytes)", out.display(), words.len() * 4);
    Ok(())
}

/// Runs `cmd args` once under `/usr/bin/time`: wall seconds, CPU seconds, peak RSS, success, stderr tail.
fn run_once(cmd: &Path, args: &[&str]) -> Result<Run> {
    let rss_file = std::env::temp_dir().join(format!("xtask-bench-rss-{}", std::process::id()));
    let start = Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M %U %S")
        .arg("-o")
        .arg(&rss_file)
        .arg(cmd)
        .args(args)
        .output()
        .with_context(|| format!("running /usr/bin/time {}", cmd.display()))?;
    let wall = start.elapsed().as_secs_f64();
    let rss_text = std::fs::read_to_string(&rss_file).unwrap_or_default();
    let _ = std::fs::remove_file(&rss_file);
    // GNU time writes "Command exited with non-zero status N" before the format line on failure.
    let (rss, cpu) = rss_text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f[..] {
                [m, u, s] => Some((
                    m.parse::<u64>().ok()?,
                    u.parse::<f64>().ok()? + s.parse::<f64>().ok()?,
                )),
                _ => None,
            }
        })
        .next_back()
        .unwrap_or((0, f64::NAN));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: String = stderr
        .lines()
        .rev()
        .take(3)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect::<Vec<_>>()
        .join(" | ");
    Ok(Run {
        wall,
        cpu,
        rss_kib: rss,
        ok: out.status.success(),
        tail,
    })
}

/// One command to time: `runs` runs; `output` is the file it writes, if any.
#[derive(Debug)]
struct Job {
    name: String,
    cmd: PathBuf,
    args: Vec<String>,
    runs: usize,
    output: Option<PathBuf>,
}

impl Job {
    fn new(name: &str, cmd: &Path, args: &[&str], runs: usize, output: Option<&Path>) -> Job {
        Job {
            name: name.to_string(),
            cmd: cmd.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
            runs,
            output: output.map(Path::to_path_buf),
        }
    }
}

/// Runs the jobs round-robin (run 1 of each, then run 2 of each, ...) so that a change in the load of
/// the machine during the benchmark affects all of them alike; a job stops at its first failure.
fn measure_all(jobs: &[Job]) -> Result<Vec<Sample>> {
    let mut samples: Vec<Sample> = jobs
        .iter()
        .map(|_| Sample {
            times: Vec::new(),
            cpu: Vec::new(),
            rss_kib: 0,
            ok: true,
            note: String::new(),
            out_bytes: None,
        })
        .collect();
    let rounds = jobs.iter().map(|j| j.runs).max().unwrap_or(0);
    for round in 0..rounds {
        for (job, s) in jobs.iter().zip(samples.iter_mut()) {
            if round >= job.runs || !s.ok {
                continue;
            }
            let args: Vec<&str> = job.args.iter().map(String::as_str).collect();
            let r = run_once(&job.cmd, &args)?;
            eprintln!(
                "  {} run {}/{}: {:.3} s wall, {:.2} s CPU, {:.1} MiB{}",
                job.name,
                round + 1,
                job.runs,
                r.wall,
                r.cpu,
                r.rss_kib as f64 / 1024.0,
                if r.ok {
                    String::new()
                } else {
                    format!(", FAILED: {}", r.tail)
                }
            );
            s.times.push(r.wall);
            s.cpu.push(r.cpu);
            s.rss_kib = s.rss_kib.max(r.rss_kib);
            if !r.ok {
                s.ok = false;
                s.note = r.tail;
            }
        }
    }
    for (job, s) in jobs.iter().zip(samples.iter_mut()) {
        s.out_bytes = job
            .output
            .as_ref()
            .and_then(|p| std::fs::metadata(p).ok())
            .map(|m| m.len());
    }
    Ok(samples)
}

/// Counts the instructions a default-target lowering must remove: the KHR vote ops, the partition op,
/// and group operations with a partitioned group operation (6/7/8). Returns `None` for a malformed file.
fn count_lowerable(path: &Path) -> Option<usize> {
    let bytes = std::fs::read(path).ok()?;
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if words.first() != Some(&0x0723_0203) {
        return None;
    }
    let (mut i, mut n) = (5usize, 0usize);
    while i < words.len() {
        let (count, op) = ((words[i] >> 16) as usize, words[i] & 0xffff);
        if count == 0 {
            return None;
        }
        let partitioned_group_op =
            (Op::GroupNonUniformIAdd as u32..=Op::GroupNonUniformLogicalXor as u32).contains(&op)
                && words.get(i + 4).is_some_and(|g| (6..=8).contains(g));
        if (4428..=4430).contains(&op) || op == 5296 || partitioned_group_op {
            n += 1;
        }
        i += count;
    }
    Some(n)
}

fn size_label(mb: f64) -> String {
    if mb.fract() == 0.0 {
        format!("{}mb", mb as u64)
    } else {
        format!("{mb}mb")
    }
}

/// The `cargo xtask bench` entry point.
pub fn run(args: &[String]) -> Result<()> {
    match args.first().map(String::as_str) {
        Some("gen") => return gen_cmd(&args[1..]),
        Some("phases") => return bench_phases::run(&args[1..]),
        Some("tree") => return bench_tree::run(&args[1..]),
        Some("sim") => return bench_sim::run(&args[1..]),
        Some("layer") => return bench_layer::run(&args[1..]),
        _ => {}
    }
    let opts = parse(args)?;
    let do_val = opts.only.as_deref().is_none_or(|o| o == "validate");
    let do_lower = opts.only.as_deref().is_none_or(|o| o == "lower");
    let root = root();
    let out_dir = root.join("bench-out");
    std::fs::create_dir_all(&out_dir)?;

    let ours = build_release_cli(&root)?;
    let spirv_val = tool("spirv-val")?;
    let spirv_opt = tool("spirv-opt")?;

    let mut results = Vec::new();
    for &mb in &opts.sizes {
        let label = size_label(mb);
        let input = out_dir.join(format!("big-{label}.spv"));
        let words = bench_gen::generate((mb * MB) as usize, opts.seed, opts.body);
        std::fs::write(&input, bench_gen::to_bytes(&words))?;
        let bytes = words.len() as u64 * 4;
        eprintln!(
            "{label}: generated {} ({bytes} bytes, seed {})",
            input.display(),
            opts.seed
        );
        let inp = input.to_string_lossy().to_string();
        let mut r = SizeResult {
            label: label.clone(),
            bytes,
            ours_val: None,
            spirv_val: None,
            ours_lower: None,
            spirv_opt: None,
            extras: Vec::new(),
            lowered_check: None,
        };
        if do_val {
            let mut v = measure_all(&[
                Job::new(
                    "spv-subgroup validate",
                    &ours,
                    &["validate", &inp],
                    opts.runs,
                    None,
                ),
                Job::new(
                    "spirv-val",
                    &spirv_val,
                    &["--target-env", "vulkan1.1", &inp],
                    opts.val_runs,
                    None,
                ),
            ])?
            .into_iter();
            r.ours_val = v.next();
            r.spirv_val = v.next();
        }
        if do_lower {
            let out1 = out_dir.join(format!("lowered-{label}.spv"));
            let out2 = out_dir.join(format!("spirv-opt-{label}.spv"));
            let out3 = out_dir.join(format!("lowered-noverify-{label}.spv"));
            let out4 = out_dir.join(format!("lowered-sg32-{label}.spv"));
            let o1 = out1.to_string_lossy().to_string();
            let o2 = out2.to_string_lossy().to_string();
            let o3 = out3.to_string_lossy().to_string();
            let o4 = out4.to_string_lossy().to_string();
            let mut jobs = vec![
                Job::new(
                    "spv-subgroup lower",
                    &ours,
                    &["lower", &inp, "-o", &o1],
                    opts.runs,
                    Some(&out1),
                ),
                Job::new(
                    "spirv-opt",
                    &spirv_opt,
                    &["--skip-validation", "--strip-debug", &inp, "-o", &o2],
                    opts.runs,
                    Some(&out2),
                ),
            ];
            // Variants that explain the cost: without the output check, and for subgroup size 32.
            const NO_VERIFY: &str = "spv-subgroup lower --no-verify big.spv -o out.spv";
            const SG32: &str = "spv-subgroup lower --subgroup-size 32 big.spv -o out.spv";
            if opts.extras {
                jobs.push(Job::new(
                    NO_VERIFY,
                    &ours,
                    &["lower", "--no-verify", &inp, "-o", &o3],
                    opts.runs,
                    Some(&out3),
                ));
                jobs.push(Job::new(
                    SG32,
                    &ours,
                    &["lower", "--subgroup-size=32", &inp, "-o", &o4],
                    opts.runs,
                    Some(&out4),
                ));
            }
            let mut v = measure_all(&jobs)?.into_iter();
            r.ours_lower = v.next();
            r.spirv_opt = v.next();
            for name in [NO_VERIFY, SG32] {
                if let Some(s) = v.next() {
                    r.extras.push((name.to_string(), s));
                }
            }
            // Correctness of the timed output, checked once on the smallest size (spirv-val is slow).
            if r.ours_lower.as_ref().is_some_and(|s| s.ok)
                && mb <= opts.sizes.iter().cloned().fold(f64::INFINITY, f64::min)
            {
                let a = run_once(&spirv_val, &["--target-env", "vulkan1.1", &o1])?;
                let b = run_once(&ours, &["validate", &o1])?;
                let (ok, tail, ok2, tail2) = (a.ok, a.tail, b.ok, b.tail);
                let count = |p: &Path| count_lowerable(p).map_or("?".into(), |n| n.to_string());
                r.lowered_check = Some(format!(
                    "lowered {label} output: {} vote/partition instructions in the input, {} left in the output; \
                     spirv-val --target-env vulkan1.1 {}, spv-subgroup validate {}",
                    count(&input),
                    count(&out1),
                    if ok { "accepts it".to_string() } else { format!("REJECTS it ({tail})") },
                    if ok2 { "accepts it".to_string() } else { format!("REJECTS it ({tail2})") },
                ));
            }
        }
        results.push(r);
    }

    let cmd = format!("cargo xtask bench {}", args.join(" "));
    let report = render(&opts, &results, &cmd, &ours, &spirv_val, &spirv_opt);
    #[allow(clippy::print_stdout)]
    {
        println!("{report}");
    }
    if opts.docs {
        write_section(&root.join("docs").join("PERFORMANCE.md"), &report)?;
        eprintln!("updated docs/PERFORMANCE.md ({SECTION})");
    }
    Ok(())
}
