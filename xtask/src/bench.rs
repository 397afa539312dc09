//! `cargo xtask bench`: CPU benchmarks of `spv-subgroup validate` and `lower` on large generated modules,
//! against `spirv-val` and `spirv-opt` in the same run.
//!
//! ```text
//! cargo xtask bench [--sizes 1,10] [--runs N] [--val-runs N] [--only validate|lower] [--seed S] [--body N] [--no-extras] [--no-docs]
//! cargo xtask bench gen --size BYTES [--seed S] [--body N] [-o FILE]
//! cargo run --release -p xtask -- bench phases [--sizes 1,10] [--runs 3]   (in-process phase breakdown)
//! cargo xtask bench tree [--files 2000] [--runs 3] [--loop-runs 1] [--bundle DIR]  (2,000 small shaders, see bench_tree.rs)
//! cargo xtask bench sim [--runs 3] [--sizes 32,64,128]  (the simulator against lavapipe, see bench_sim.rs)
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

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use spirv::Op;

// main.rs (the lead's) declares only `mod bench`; the generator is a child module in its own file.
#[path = "bench_gen.rs"]
mod bench_gen;
#[path = "bench_phases.rs"]
mod bench_phases;
#[path = "bench_sim.rs"]
mod bench_sim;
#[path = "bench_tree.rs"]
mod bench_tree;

const SECTION: &str = "## CPU benchmarks";
/// Subsections of the CPU section whose heading ends with this are hand-written and kept as they are.
const NOTES_SUFFIX: &str = "(notes)";
const MB: f64 = 1024.0 * 1024.0;

#[derive(Debug)]
struct Opts {
    sizes: Vec<f64>,
    runs: usize,
    val_runs: usize,
    only: Option<String>,
    seed: u64,
    body: usize,
    extras: bool,
    docs: bool,
}

/// One measured command: all wall times, the peak RSS (max over runs) and the last exit status.
#[derive(Debug, Clone)]
struct Sample {
    times: Vec<f64>,
    /// User + system CPU seconds of each run (GNU time `%U + %S`, 10 ms resolution).
    cpu: Vec<f64>,
    rss_kib: u64,
    ok: bool,
    note: String,
    /// Size of the file the command wrote, if it writes one.
    out_bytes: Option<u64>,
}

fn median_of(v: &[f64]) -> f64 {
    let mut t = v.to_vec();
    t.sort_by(|a, b| a.total_cmp(b));
    if t.is_empty() {
        return f64::NAN;
    }
    t[t.len() / 2]
}

impl Sample {
    fn median(&self) -> f64 {
        median_of(&self.times)
    }
    fn best(&self) -> f64 {
        self.times.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

/// One run of a child under GNU time.
#[derive(Debug)]
struct Run {
    wall: f64,
    cpu: f64,
    rss_kib: u64,
    ok: bool,
    tail: String,
}

#[derive(Debug)]
struct SizeResult {
    label: String,
    bytes: u64,
    ours_val: Option<Sample>,
    spirv_val: Option<Sample>,
    ours_lower: Option<Sample>,
    spirv_opt: Option<Sample>,
    extras: Vec<(String, Sample)>,
    lowered_check: Option<String>,
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

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
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

fn tool(name: &str) -> Result<PathBuf> {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    bail!("{name} not found on PATH (cargo xtask install-deps installs spirv-tools)")
}

fn tool_version(path: &Path) -> String {
    Command::new(path)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            text.lines()
                .find(|l| l.contains("SPIRV-Tools"))
                .map(str::to_string)
        })
        .unwrap_or_else(|| "unknown version".into())
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<f64>().ok())
        })
        .map(|k| format!(", {:.1} GiB RAM", k / MB))
        .unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .map(|l| format!(", load average {l} at the end of the run"))
        .unwrap_or_default();
    format!("{model}, nproc {cpus}{mem}{load}")
}

/// The commit the binaries were built from, and whether the crates had uncommitted changes.
fn revision(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let head = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = git(&["status", "--porcelain", "--", "crates"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{head} + uncommitted changes in crates/")
    } else {
        head
    }
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

fn secs(s: &Option<Sample>) -> Option<f64> {
    s.as_ref().filter(|s| s.ok).map(Sample::median)
}

/// CPU times come from GNU time with 10 ms resolution: below that, say so.
fn fmt_cpu(t: f64) -> String {
    if t < 0.01 {
        "< 10 ms".into()
    } else {
        fmt_time(t)
    }
}

fn fmt_time(t: f64) -> String {
    if t < 1.0 {
        format!("{:.1} ms", t * 1000.0)
    } else {
        format!("{t:.2} s")
    }
}

fn row(out: &mut String, cmd: &str, r: &SizeResult, s: &Option<Sample>) {
    let Some(s) = s else { return };
    let mb = r.bytes as f64 / MB;
    if !s.ok {
        let _ = writeln!(
            out,
            "| {} | `{cmd}` | failed | | | | | {} | |",
            r.label,
            s.note.replace('|', "/")
        );
        return;
    }
    let t = s.median();
    let _ = writeln!(
        out,
        "| {} ({:.2} MB) | `{cmd}` | {} | {} | {} | {} | {:.1} MiB | {} | {} |",
        r.label,
        mb,
        fmt_time(t),
        fmt_time(s.best()),
        fmt_cpu(median_of(&s.cpu)),
        fmt_time(t / mb),
        s.rss_kib as f64 / 1024.0,
        s.out_bytes
            .map_or("".into(), |b| format!("{:.2} MB", b as f64 / MB)),
        s.times.len()
    );
}

fn goal(out: &mut String, ok: Option<bool>, text: String) {
    let mark = match ok {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "not measured",
    };
    let _ = writeln!(out, "- {mark}: {text}");
}

fn render(
    opts: &Opts,
    results: &[SizeResult],
    cmd: &str,
    ours: &Path,
    spirv_val: &Path,
    spirv_opt: &Path,
) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{SECTION}\n");
    let _ = writeln!(
        o,
        "Generated by `{cmd}` (xtask/src/bench.rs; modules from xtask/src/bench_gen.rs, seed {}: \
         a compute and a fragment entry point calling thousands of functions that use \
         `OpSubgroup{{All,Any,AllEqual}}KHR`, `OpGroupNonUniformPartitionNV` on int/float/bool/vector keys and \
         partitioned reduce/inclusive/exclusive arithmetic inside divergent if/else and loops, plus filler; \
         every module passes `spirv-val --target-env vulkan1.1`).\n",
        opts.seed
    );
    let _ = writeln!(o, "- machine: {}", machine());
    let _ = writeln!(
        o,
        "- tools: {} ({}), {} ({}), `{}` (release build of {})",
        spirv_val.display(),
        tool_version(spirv_val),
        spirv_opt.display(),
        tool_version(spirv_opt),
        ours.file_name()
            .map(|f| f.to_string_lossy())
            .unwrap_or_default(),
        revision(&root())
    );
    let _ = writeln!(
        o,
        "- wall time: median of the runs (column `runs`); best wall: the fastest run; CPU time: median user + system time \
         (GNU time `%U`+`%S`, 10 ms resolution; less sensitive than wall time to other load on the \
         machine); peak RSS: maximum resident set of the child (GNU time `%M`); per MB: wall time / \
         input size in MiB; output: size of the written module. MB = MiB.\n"
    );
    let _ = writeln!(
        o,
        "| module | command | wall time | best wall | CPU time | wall per MB | peak RSS | output | runs |\n\
         |---|---|---|---|---|---|---|---|---|"
    );
    for r in results {
        row(&mut o, "spv-subgroup validate big.spv", r, &r.ours_val);
        row(
            &mut o,
            "spirv-val --target-env vulkan1.1 big.spv",
            r,
            &r.spirv_val,
        );
        row(
            &mut o,
            "spv-subgroup lower big.spv -o out.spv",
            r,
            &r.ours_lower,
        );
        row(
            &mut o,
            "spirv-opt --skip-validation --strip-debug big.spv -o out2.spv",
            r,
            &r.spirv_opt,
        );
        for (cmd, s) in &r.extras {
            row(&mut o, cmd, r, &Some(s.clone()));
        }
    }
    let _ = writeln!(o);

    // Ratios: wall time (CPU time in parentheses) and peak RSS.
    let _ = writeln!(
        o,
        "| module | validate: spirv-val / ours, wall (CPU) | validate: RSS ours / spirv-val | \
         lower: spirv-opt / ours, wall (CPU) | lower: RSS ours / spirv-opt |\n|---|---|---|---|---|"
    );
    for r in results {
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".into(),
        };
        let cpu = |s: &Option<Sample>| {
            s.as_ref()
                .filter(|s| s.ok)
                .map(|s| median_of(&s.cpu))
                .filter(|&t| t >= 0.01)
        };
        let both = |a: &Option<Sample>, b: &Option<Sample>| {
            format!("{} ({})", ratio(secs(a), secs(b)), ratio(cpu(a), cpu(b)))
        };
        let rss = |s: &Option<Sample>| s.as_ref().filter(|s| s.ok).map(|s| s.rss_kib as f64);
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            r.label,
            both(&r.spirv_val, &r.ours_val),
            ratio(rss(&r.ours_val), rss(&r.spirv_val)),
            both(&r.spirv_opt, &r.ours_lower),
            ratio(rss(&r.ours_lower), rss(&r.spirv_opt)),
        );
    }
    let _ = writeln!(o);
    for r in results {
        if let Some(c) = &r.lowered_check {
            let _ = writeln!(o, "Check: {c}.\n");
        }
    }

    // Goals, judged on the smallest and the largest size.
    let _ = writeln!(o, "Goals (issue 2 and 3), smallest vs largest module:\n");
    let small = results.iter().min_by(|a, b| a.bytes.cmp(&b.bytes));
    let large = results.iter().max_by(|a, b| a.bytes.cmp(&b.bytes));
    let per_mb = |r: &SizeResult, s: &Option<Sample>| secs(s).map(|t| t / (r.bytes as f64 / MB));
    if let (Some(sm), Some(lg)) = (small, large) {
        let distinct = sm.bytes != lg.bytes;
        let lin = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if distinct && a > 0.0 => Some(b / a),
            _ => None,
        };
        let cpu_mb = |r: &SizeResult, s: &Option<Sample>| {
            s.as_ref()
                .filter(|s| s.ok)
                .map(|s| median_of(&s.cpu))
                // 10 ms ticks: too coarse below 50 ms to compare rates.
                .filter(|&t| t >= 0.05)
                .map(|t| t / (r.bytes as f64 / MB))
        };
        let x = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.2}x"));
        let best_mb = |r: &SizeResult, s: &Option<Sample>| {
            s.as_ref()
                .filter(|s| s.ok)
                .map(|s| s.best() / (r.bytes as f64 / MB))
        };
        let v_lin = lin(per_mb(sm, &sm.ours_val), per_mb(lg, &lg.ours_val));
        let v_lin_best = lin(best_mb(sm, &sm.ours_val), best_mb(lg, &lg.ours_val));
        let v_lin_cpu = lin(cpu_mb(sm, &sm.ours_val), cpu_mb(lg, &lg.ours_val));
        goal(
            &mut o,
            v_lin.map(|x| x <= 1.5),
            format!(
                "validate linear: wall time per MB at {} is {} that at {} (best runs: {}; CPU time: {}; \
                 goal <= 1.5x)",
                lg.label,
                x(v_lin),
                sm.label,
                x(v_lin_best),
                x(v_lin_cpu)
            ),
        );
        let v_abs = secs(&lg.ours_val);
        goal(
            &mut o,
            v_abs
                .filter(|_| lg.bytes as f64 >= 9.5 * MB)
                .map(|t| t < 1.0),
            format!(
                "validate under 1 s for 10 MB: {} on {} ",
                v_abs.map_or("-".into(), fmt_time),
                lg.label
            ),
        );
        let v_ratio = match (secs(&lg.spirv_val), v_abs) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        goal(
            &mut o,
            v_ratio
                .filter(|_| lg.bytes as f64 >= 9.5 * MB)
                .map(|x| x >= 50.0),
            format!(
                "validate at least 50x faster than spirv-val on {}: {}",
                lg.label,
                v_ratio.map_or("-".into(), |x| format!("{x:.0}x"))
            ),
        );
        let l_lin = lin(per_mb(sm, &sm.ours_lower), per_mb(lg, &lg.ours_lower));
        let l_lin_best = lin(best_mb(sm, &sm.ours_lower), best_mb(lg, &lg.ours_lower));
        let o_lin = lin(per_mb(sm, &sm.spirv_opt), per_mb(lg, &lg.spirv_opt));
        let l_lin_cpu = lin(cpu_mb(sm, &sm.ours_lower), cpu_mb(lg, &lg.ours_lower));
        goal(
            &mut o,
            l_lin.map(|x| x <= 1.5),
            format!(
                "lower linear: wall time per MB at {} is {} that at {} (best runs: {}; CPU time: {}; \
                 spirv-opt on the same modules: {}; goal <= 1.5x)",
                lg.label,
                x(l_lin),
                sm.label,
                x(l_lin_best),
                x(l_lin_cpu),
                x(o_lin)
            ),
        );
        for r in [sm, lg] {
            let faster = match (secs(&r.ours_lower), secs(&r.spirv_opt)) {
                (Some(a), Some(b)) => Some((
                    a < b,
                    format!(
                        "wall {} vs {} (CPU {} vs {})",
                        fmt_time(a),
                        fmt_time(b),
                        fmt_time(
                            r.ours_lower
                                .as_ref()
                                .map_or(f64::NAN, |s| median_of(&s.cpu))
                        ),
                        fmt_time(r.spirv_opt.as_ref().map_or(f64::NAN, |s| median_of(&s.cpu)))
                    ),
                )),
                _ => None,
            };
            goal(
                &mut o,
                faster.as_ref().map(|f| f.0),
                format!(
                    "lower faster than spirv-opt on {}: {}",
                    r.label,
                    faster.map_or("-".into(), |f| f.1)
                ),
            );
            let mem = match (&r.ours_lower, &r.spirv_opt) {
                (Some(a), Some(b)) if a.ok && b.ok => Some((
                    a.rss_kib < b.rss_kib,
                    format!(
                        "{:.1} MiB vs {:.1} MiB",
                        a.rss_kib as f64 / 1024.0,
                        b.rss_kib as f64 / 1024.0
                    ),
                )),
                _ => None,
            };
            goal(
                &mut o,
                mem.as_ref().map(|m| m.0),
                format!(
                    "lower uses less peak memory than spirv-opt on {}: {}",
                    r.label,
                    mem.map_or("-".into(), |m| m.1)
                ),
            );
            if !distinct {
                break;
            }
        }
    }
    o
}

/// Replaces (or appends) the `## CPU benchmarks` section, up to the next `## ` heading, keeping its
/// hand-written `### ... (notes)` subsections after the generated text.
fn write_section(path: &Path, section: &str) -> Result<()> {
    write_section_named(path, SECTION, section)
}

/// [`write_section`] for the section headed `heading`.
fn write_section_named(path: &Path, heading: &str, section: &str) -> Result<()> {
    let old = std::fs::read_to_string(path).unwrap_or_else(|_| "# Performance\n\n".into());
    let mut out = String::new();
    let mut lines = old.lines().peekable();
    let mut replaced = false;
    while let Some(l) = lines.next() {
        if l.trim_end() == heading {
            out.push_str(section.trim_end());
            out.push_str("\n\n");
            // Hand-written notes (`### ... (notes)` subsections) survive a regeneration.
            let mut keep = false;
            while lines.peek().is_some_and(|n| !n.starts_with("## ")) {
                let n = lines.next().unwrap_or_default();
                if n.starts_with("### ") {
                    keep = n.trim_end().ends_with(NOTES_SUFFIX);
                }
                if keep {
                    out.push_str(n);
                    out.push('\n');
                }
            }
            replaced = true;
        } else {
            out.push_str(l);
            out.push('\n');
        }
    }
    if !replaced {
        if !out.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(section.trim_end());
        out.push('\n');
    }
    std::fs::write(path, out.trim_end().to_string() + "\n")
        .with_context(|| format!("writing {}", path.display()))
}
