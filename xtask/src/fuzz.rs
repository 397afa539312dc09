//! `cargo xtask fuzz [--minutes N] [--seconds N] [--target NAME]... [--merge] [--build-only] [--quick]`:
//! coverage-guided fuzzing of the `fuzz/` targets with libFuzzer, on the stable toolchain.
//!
//! With `--quick` (what `cargo xtask test` runs), step 1 builds in the ordinary `target/debug`
//! with the dev profile and instruments only our crates: this binary, set as
//! `RUSTC_WORKSPACE_WRAPPER`, adds the coverage flags to the workspace members alone, so every
//! dependency is the one the test build compiled (a wrapper is part of the artifact's hash, so
//! the instrumented and plain builds of our crates live side by side); step 2 is skipped (the
//! committed corpus is the seed).
//!
//! 1. builds the targets with SanitizerCoverage instrumentation (`-Cpasses=sancov-module`, the
//!    flags cargo-fuzz uses with `--sanitizer none`; no sanitizer is needed, the libraries forbid
//!    `unsafe`) into `target/fuzz/`, so the ordinary build is untouched;
//! 2. builds the seed corpus in `target/fuzz/seeds/`: every fixture compiled (GLSL for Vulkan 1.1,
//!    1.3 and 1.3 with `NonSemantic` debug info, `.spvasm` assembled), the reliability probe's
//!    modules and target files from `../shared/repro/reliability/` when present, the presets
//!    serialized, and the vulkaninfo report under `fixtures/targets/`;
//! 3. runs every target at once under `nice -n 19` for the budget, reading the committed corpus
//!    `fuzz/corpus/NAME/` and the seeds and writing new inputs to `target/fuzz/corpus/NAME/`,
//!    failing inputs to `target/fuzz/artifacts/NAME/` (`--keep-seeds` uses the seeds of the last
//!    run); a long run goes on past every failure (libFuzzer's fork mode, [`fuzz_target`]), a
//!    quick one stops at the first; at the end prints executions and coverage per target and
//!    every input written to the artifacts folder, with the cause of the first crashes;
//! 4. with `--merge` (or `--merge-only`, without fuzzing first), makes `fuzz/corpus/NAME/` the
//!    50 inputs of the committed and working corpora that cover the most beyond the seeds
//!    ([`crate::fuzz_merge`]; what to commit after a long run).
//!
//! See `docs/fuzzing.md`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

use crate::process::{cargo, step};

/// The fuzz targets (binaries of the `spv-subgroup-fuzz` package) and the seed folder each reads.
pub const TARGETS: &[(&str, &str)] = &[
    ("validate", "modules"),
    ("lower", "modules"),
    ("lower_structured", "modules"),
    ("target_json", "targets"),
];

/// The coverage flags (the ones cargo-fuzz passes with `--sanitizer none`) and `--cfg fuzzing`.
const COVERAGE_FLAGS: &[&str] = &[
    "-Cpasses=sancov-module",
    "-Cllvm-args=-sanitizer-coverage-level=4",
    "-Cllvm-args=-sanitizer-coverage-inline-8bit-counters",
    "-Cllvm-args=-sanitizer-coverage-pc-table",
    "-Cllvm-args=-sanitizer-coverage-trace-compares",
    "--cfg",
    "fuzzing",
];

/// The flags of the full build: the coverage flags plus debug assertions (on in the dev profile
/// of `--quick` already), so an arithmetic overflow is a crash too.
fn rustflags() -> String {
    let mut flags = COVERAGE_FLAGS.join(" ");
    flags.push_str(" -Cdebug-assertions");
    flags
}

/// Set (to anything) in the environment of the `--quick` build: this binary, run by cargo as
/// `RUSTC_WORKSPACE_WRAPPER`, then acts as [`wrap_rustc`] instead of as `cargo xtask`.
pub const WRAPPER_ENV: &str = "SPVSG_XTASK_COVERAGE_WRAPPER";

/// `RUSTC_WORKSPACE_WRAPPER` for `--quick`: runs rustc (the first argument) with the other
/// arguments and [`COVERAGE_FLAGS`]; cargo runs it for the workspace members only. Returns the
/// exit status to exit with.
pub fn wrap_rustc(args: &[String]) -> i32 {
    let Some((rustc, rest)) = args.split_first() else {
        eprintln!("xtask: {WRAPPER_ENV} is set but no rustc command was given");
        return 2;
    };
    let mut cmd = Command::new(rustc);
    cmd.args(rest);
    // Only a compilation gets the flags, not a query such as `rustc -vV`.
    if rest.iter().any(|a| a == "--crate-name") {
        cmd.args(COVERAGE_FLAGS);
    }
    match cmd.status() {
        Ok(s) => s.code().unwrap_or(1),
        Err(e) => {
            eprintln!("xtask: cannot run {rustc}: {e}");
            1
        }
    }
}

/// How many crash inputs per target the report at the end runs once more to show their cause.
const CAUSES_SHOWN: usize = 10;

/// Up to how many inputs per target the report at the end lists one by one.
const FINDINGS_LISTED: usize = 20;

/// Largest input the fuzzer makes (every fixture module is smaller).
const MAX_LEN: &str = "-max_len=65536";

struct Opts {
    seconds: u64,
    targets: Vec<String>,
    merge: bool,
    merge_only: bool,
    build_only: bool,
    keep_seeds: bool,
    quick: bool,
}

fn parse(args: &[String]) -> anyhow::Result<Opts> {
    let mut o = Opts {
        seconds: 60,
        targets: Vec::new(),
        merge: false,
        merge_only: false,
        build_only: false,
        keep_seeds: false,
        quick: false,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = |what: &str| -> anyhow::Result<u64> {
            it.next()
                .with_context(|| format!("{what} needs a number"))?
                .parse()
                .with_context(|| format!("{what} needs a number"))
        };
        match a.as_str() {
            "--minutes" => o.seconds = num("--minutes")? * 60,
            "--seconds" => o.seconds = num("--seconds")?,
            "--target" => o.targets.push(
                it.next()
                    .context("--target needs a name")?
                    .to_owned(),
            ),
            "--merge" => o.merge = true,
            "--merge-only" => o.merge_only = true,
            "--build-only" => o.build_only = true,
            "--keep-seeds" => o.keep_seeds = true,
            "--quick" => o.quick = true,
            other => bail!(
                "unknown argument `{other}`; usage: cargo xtask fuzz [--minutes N | --seconds N] [--target NAME]... [--merge | --merge-only] [--build-only] [--keep-seeds] [--quick]"
            ),
        }
    }
    let known: Vec<&str> = TARGETS.iter().map(|t| t.0).collect();
    for t in &o.targets {
        if !known.contains(&t.as_str()) {
            bail!("no fuzz target `{t}`; the targets are {}", known.join(", "));
        }
    }
    if o.targets.is_empty() {
        o.targets = known.iter().map(|s| (*s).to_owned()).collect();
    }
    Ok(o)
}

/// Runs the steps in the module doc.
pub fn run(args: &[String]) -> anyhow::Result<()> {
    let o = parse(args)?;
    let root = crate::workspace_root();
    let bin_dir = if o.quick {
        build_quick(&root)?
    } else {
        build(&root)?
    };
    if o.build_only {
        return Ok(());
    }
    let work = root.join("target/fuzz");
    let seeds = work.join("seeds");
    let have_seeds = seeds.join("modules").is_dir() && seeds.join("targets").is_dir();
    // A quick run builds no seeds; a long one reuses the last ones only with `--keep-seeds`.
    let reuse_seeds = o.keep_seeds && have_seeds;
    if !o.quick && !reuse_seeds {
        build_seeds(&root, &seeds)?;
    }
    if o.merge_only {
        for name in &o.targets {
            merge(&root, &bin_dir, &seeds, name)?;
        }
        return Ok(());
    }
    let mut runs = Vec::new();
    for name in &o.targets {
        // A quick run reads the committed corpus and keeps its own working corpus and log: a
        // long run's corpus and seeds take minutes to load, and its log must survive.
        let quick = if o.quick { "quick-" } else { "" };
        let seed_dir = if o.quick {
            work.join("quick-seeds")
        } else {
            TARGETS
                .iter()
                .find(|t| t.0 == name)
                .map(|t| seeds.join(t.1))
                .unwrap_or_default()
        };
        let committed = root.join("fuzz/corpus").join(name);
        let corpus = work.join(format!("{quick}corpus")).join(name);
        let artifacts = work.join("artifacts").join(name);
        for d in [&committed, &corpus, &artifacts, &seed_dir] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        let log = work.join(format!("{quick}{name}.log"));
        std::fs::write(&log, "").with_context(|| format!("creating {}", log.display()))?;
        eprintln!(
            "xtask fuzz: {name} for {} s, log {}",
            o.seconds,
            log.display()
        );
        let bin = bin_dir.join(name);
        let name = name.clone();
        let (seconds, fork) = (o.seconds, !o.quick);
        runs.push(std::thread::spawn(move || {
            fuzz_target(
                &name,
                &bin,
                [&corpus, &committed, &seed_dir],
                &artifacts,
                &log,
                seconds,
                fork,
            )
        }));
    }
    let mut outcomes = Vec::new();
    for run in runs {
        outcomes.push(
            run.join()
                .map_err(|_| anyhow::anyhow!("a fuzzing thread panicked"))??,
        );
    }
    let mut failed = Vec::new();
    for out in &outcomes {
        let text = std::fs::read_to_string(&out.log).unwrap_or_default();
        eprintln!("xtask fuzz: {}: {}", out.name, summary(&text));
        report(&bin_dir.join(&out.name), out);
        if out.findings.iter().any(|f| is_failure(f)) {
            failed.push(out.name.as_str());
        }
    }
    if o.merge {
        for name in &o.targets {
            merge(&root, &bin_dir, &seeds, name)?;
        }
    }
    if !failed.is_empty() {
        bail!(
            "fuzz targets found failures: {} (the inputs are listed above; replay one with `{}/NAME FILE`, the message is in the log)",
            failed.join(", "),
            bin_dir.display()
        );
    }
    Ok(())
}

/// Prints what a target's run wrote to its artifacts folder: how many inputs of each kind, every
/// input when there are a few (else the folder), and the cause of the first crashes, each cause
/// once with the number of inputs that showed it. Every input is kept.
fn report(bin: &Path, out: &Outcome) {
    let kinds = ["crash", "timeout", "oom", "leak", "slow-unit"];
    let mut counts: Vec<String> = Vec::new();
    for kind in kinds {
        let n = out
            .findings
            .iter()
            .filter(|f| file_name(f).starts_with(&format!("{kind}-")))
            .count();
        if n > 0 {
            counts.push(format!("{n} {kind}"));
        }
    }
    if counts.is_empty() {
        return;
    }
    eprintln!(
        "xtask fuzz: {}: inputs written: {} (a slow unit is not a failure)",
        out.name,
        counts.join(", ")
    );
    if out.findings.len() <= FINDINGS_LISTED {
        for f in &out.findings {
            eprintln!("xtask fuzz: {}:   {}", out.name, f.display());
        }
    } else if let Some(dir) = out.findings[0].parent() {
        eprintln!("xtask fuzz: {}:   inputs in {}", out.name, dir.display());
    }
    // One more run of each of the first crashes, for its panic message (a timeout's run would
    // take a minute): a long run can write many inputs of one cause.
    let mut causes: Vec<(String, PathBuf, usize)> = Vec::new();
    for f in out
        .findings
        .iter()
        .filter(|f| file_name(f).starts_with("crash-"))
        .take(CAUSES_SHOWN)
    {
        let why = cause(bin, f).unwrap_or_else(|| "does not fail again when run alone".to_owned());
        match causes.iter_mut().find(|c| c.0 == why) {
            Some(c) => c.2 += 1,
            None => causes.push((why, f.clone(), 1)),
        }
    }
    for (why, example, n) in causes {
        eprintln!(
            "xtask fuzz: {}: {why} ({n} of the crashes looked at, e.g. {})",
            out.name,
            example.display()
        );
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What one target's run left: its name, its log, and the inputs it wrote to its artifacts folder.
struct Outcome {
    name: String,
    log: PathBuf,
    findings: Vec<PathBuf>,
}

/// Runs one target for `seconds` under `nice -n 19`, reading `dirs` (the first is the working
/// corpus it adds to) and writing failing inputs to `artifacts`; returns what it wrote there.
///
/// A long run (`fork`) uses libFuzzer's fork mode with one job at a time and every kind of
/// failure ignored (`-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1`): each job is a
/// child process fuzzing for a few seconds to five minutes from a sample of the corpus; a job
/// that crashes leaves its input in `artifacts` and the next job starts, so one finding neither
/// ends the run nor is found again by every restart (a restart loop spent half of a long run on
/// one finding: docs/fuzzing.md). The parent merges each job's new inputs into the corpus and
/// stops after the budget once the running job ends (a job lasts at most as many seconds as its
/// number, so a run of an hour overshoots by about a minute and a half at most). A quick run (CI)
/// is one process: the first failure ends it, which is all CI needs to know.
fn fuzz_target(
    name: &str,
    bin: &Path,
    dirs: [&PathBuf; 3],
    artifacts: &Path,
    log: &Path,
    seconds: u64,
    fork: bool,
) -> anyhow::Result<Outcome> {
    let before = list(artifacts);
    let log_file = std::fs::OpenOptions::new()
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let mut cmd = Command::new("nice");
    cmd.args(["-n", "19"])
        .arg(bin)
        .args(dirs)
        .arg(format!("-max_total_time={seconds}"))
        .arg(MAX_LEN)
        // libFuzzer's unit timeout is wall time. A long run allows 60 s: on a loaded machine,
        // under `nice -n 19`, an input whose check runs `spirv-val` a few times took over 10 s
        // of wall time while it needs under one second alone. A quick run (CI) goes beside the
        // tests, which may leave a niced fuzzer almost no CPU for a while: 300 s, so that only
        // a hang fails CI, not a busy machine.
        .arg(if fork { "-timeout=60" } else { "-timeout=300" })
        .args(["-rss_limit_mb=2048", "-print_final_stats=1"])
        .arg(format!("-artifact_prefix={}/", artifacts.display()));
    if fork {
        cmd.args([
            "-fork=1",
            "-ignore_crashes=1",
            "-ignore_timeouts=1",
            "-ignore_ooms=1",
        ]);
    }
    let status = cmd
        .stdout(Stdio::null())
        .stderr(log_file)
        .status()
        .with_context(|| format!("cannot start the `{name}` fuzzer"))?;
    let findings: Vec<PathBuf> = list(artifacts)
        .difference(&before)
        .map(|f| artifacts.join(f))
        .collect();
    // libFuzzer exits non-zero after a failure (in fork mode: when the last job failed), and it
    // then has written the input; a non-zero exit without one is the fuzzer's own failure.
    if !status.success() && findings.is_empty() {
        bail!(
            "the `{name}` fuzzer stopped ({status}) without writing an input; see {}",
            log.display()
        );
    }
    Ok(Outcome {
        name: name.to_owned(),
        log: log.to_path_buf(),
        findings,
    })
}

/// The names of the files in `dir` (none if it cannot be read).
fn list(dir: &Path) -> BTreeSet<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Whether an input libFuzzer wrote is a failure: a crash (panic, abort, property failure), a
/// timeout, a memory overrun or a leak. A `slow-unit-` input (over 10 s but under the timeout)
/// is reported, not a failure: under load at `nice -n 19` it is mostly the machine.
fn is_failure(input: &Path) -> bool {
    !file_name(input).starts_with("slow-unit-")
}

/// Builds the instrumented targets; returns the folder holding the binaries.
fn build(root: &Path) -> anyhow::Result<PathBuf> {
    // `--target HOST` keeps RUSTFLAGS off build scripts and proc macros, as cargo-fuzz does.
    let host = host_triple()?;
    step(
        "build fuzz targets",
        cargo()
            .current_dir(root)
            .env("RUSTFLAGS", rustflags())
            .args([
                "build",
                "--release",
                "-p",
                "spv-subgroup-fuzz",
                "--features",
                "libfuzzer",
                "--bins",
                "--target",
                &host,
                "--target-dir",
                "target/fuzz",
            ]),
    )?;
    Ok(root.join("target/fuzz").join(host).join("release"))
}

/// Builds the instrumented targets for `--quick` into `target/debug`; returns that folder.
fn build_quick(root: &Path) -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe().context("cannot find the xtask binary")?;
    step(
        "build fuzz targets (quick: dev profile, our crates instrumented)",
        cargo()
            .current_dir(root)
            .env("RUSTC_WORKSPACE_WRAPPER", &me)
            .env(WRAPPER_ENV, "1")
            .args([
                "build",
                "-p",
                "spv-subgroup-fuzz",
                "--features",
                "libfuzzer",
                "--bins",
            ]),
    )?;
    Ok(root.join("target/debug"))
}

fn host_triple() -> anyhow::Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .context("cannot run rustc -vV")?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .context("rustc -vV names no host")
}

/// Writes the seed corpus: `modules/` (SPIR-V) and `targets/` (target JSON).
pub fn build_seeds(root: &Path, seeds: &Path) -> anyhow::Result<()> {
    let modules = seeds.join("modules");
    let targets = seeds.join("targets");
    for d in [&modules, &targets] {
        if d.exists() {
            std::fs::remove_dir_all(d)?;
        }
        std::fs::create_dir_all(d)?;
    }
    let tmp = seeds.join("tmp");
    std::fs::create_dir_all(&tmp)?;
    let mut files = Vec::new();
    walk(&root.join("fixtures"), &mut files);
    let repro = root.join("../shared/repro/reliability");
    walk(&repro, &mut files);
    let (mut built, mut failed) = (0usize, Vec::new());
    for (i, f) in files.iter().enumerate() {
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        let stem = format!("{i:04}");
        match ext {
            "comp" | "frag" | "vert" | "geom" | "tesc" | "tese" | "mesh" | "task" | "rgen"
            | "rchit" | "rmiss" | "rint" | "rahit" | "rcall" => {
                // Mesh and ray-tracing stages need SPIR-V 1.4: no Vulkan 1.1 build of them.
                let modern = matches!(ext, "mesh" | "task") || ext.starts_with('r');
                for (tag, env, debug) in [
                    ("vk11", "vulkan1.1", false),
                    ("vk13", "vulkan1.3", false),
                    ("vk13g", "vulkan1.3", true),
                ] {
                    if modern && env == "vulkan1.1" {
                        continue;
                    }
                    let out = modules.join(format!("{stem}_{tag}"));
                    let mut cmd = Command::new("glslangValidator");
                    cmd.args(["--target-env", env]);
                    if debug {
                        cmd.arg("-gV");
                    }
                    cmd.arg("-o").arg(&out).arg(f);
                    if quiet(&mut cmd)? {
                        built += 1;
                    } else {
                        failed.push(f.display().to_string());
                    }
                }
            }
            "spvasm" => {
                let text = std::fs::read_to_string(f).unwrap_or_default();
                let env = text
                    .split("--target-env")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                    .unwrap_or("spv1.6")
                    .to_owned();
                let out = modules.join(&stem);
                let mut cmd = Command::new("spirv-as");
                cmd.args(["--preserve-numeric-ids", "--target-env", &env, "-o"])
                    .arg(&out)
                    .arg(f);
                if quiet(&mut cmd)? {
                    built += 1;
                } else {
                    failed.push(f.display().to_string());
                }
            }
            "spv" if std::fs::metadata(f).is_ok_and(|m| m.len() <= 65536) => {
                std::fs::copy(f, modules.join(&stem))?;
                built += 1;
            }
            "json" if !f.to_string_lossy().contains("sarif") => {
                std::fs::copy(f, targets.join(&stem))?;
            }
            _ => {}
        }
    }
    for (name, _) in spv_subgroup_validate::target::PRESETS {
        if let Some(t) = spv_subgroup_validate::target::Target::preset(name) {
            let text = serde_json::to_string_pretty(&t)?;
            std::fs::write(targets.join(format!("preset_{name}")), text)?;
        }
    }
    std::fs::remove_dir_all(&tmp).ok();
    eprintln!(
        "xtask fuzz: {built} seed modules in {} ({} sources did not build: {})",
        modules.display(),
        failed.len(),
        failed
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .cloned()
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(())
}

fn quiet(cmd: &mut Command) -> anyhow::Result<bool> {
    let shown = format!("{cmd:?}");
    Ok(cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| format!("cannot run {shown}: run `cargo xtask install-deps`"))?
        .success())
}

/// Every file under `dir` (following no symlinks), in name order.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => walk(&p, out),
            Ok(m) if m.is_file() => out.push(p),
            _ => {}
        }
    }
}

/// A target's log on one line: executions, the last libFuzzer status line, and the failures the
/// log records. A plain run ends with `stat::number_of_executed_units`; in fork mode the parent
/// prints `#RUNS: cov: .. ft: .. corp: .. exec/s: .. oom/timeout/crash: O/T/C time: ..` after
/// every job, with the runs of all jobs so far.
fn summary(log: &str) -> String {
    let status = log
        .lines()
        .rev()
        .find(|l| l.starts_with('#') && l.contains("cov:"))
        .unwrap_or("no status line");
    let fork_runs = status
        .contains("oom/timeout/crash:")
        .then(|| {
            status
                .strip_prefix('#')?
                .split(':')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .flatten();
    let execs: u64 = fork_runs.unwrap_or_else(|| {
        log.lines()
            .filter_map(|l| l.strip_prefix("stat::number_of_executed_units:"))
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum()
    });
    format!("{execs} executions; last: {status}")
}

/// Why `bin` fails on `input`: the panic message (or libFuzzer's error line) of one more run on
/// it, for the report at the end of a run. `None` when it does not fail again or cannot run.
fn cause(bin: &Path, input: &Path) -> Option<String> {
    let out = Command::new("nice")
        .args(["-n", "19"])
        .arg(bin)
        .arg(input)
        .args(["-timeout=60", "-rss_limit_mb=2048"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .ok()?;
    if out.status.success() {
        return None;
    }
    first_error(&String::from_utf8_lossy(&out.stderr))
}

/// The first failure in a libFuzzer run's output: a Rust panic (`panicked at FILE:LINE:COL:` and
/// the message on the next line), else libFuzzer's `ERROR:` line.
fn first_error(text: &str) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    if let Some(i) = lines.iter().position(|l| l.contains(" panicked at ")) {
        let at = lines[i].split(" panicked at ").nth(1).unwrap_or("");
        let msg = lines.get(i + 1).copied().unwrap_or("");
        return Some(format!("panicked at {at} {msg}"));
    }
    lines
        .iter()
        .find(|l| l.contains("ERROR: libFuzzer:"))
        .map(|l| l.split("ERROR: ").nth(1).unwrap_or(l).to_owned())
}

/// `--merge`: the committed corpus of target `name` from the working corpus ([`crate::fuzz_merge`]).
fn merge(root: &Path, bin_dir: &Path, seeds: &Path, name: &str) -> anyhow::Result<()> {
    let seed_dir = TARGETS
        .iter()
        .find(|t| t.0 == name)
        .map(|t| seeds.join(t.1))
        .unwrap_or_default();
    crate::fuzz_merge::merge(root, &bin_dir.join(name), &seed_dir, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_plain_run_sums_the_executions_of_every_run() {
        let log = "#2\tINITED cov: 10 ft: 12 corp: 3/30b\n\
                   stat::number_of_executed_units: 40\n\
                   #77\tDONE cov: 20 ft: 25 corp: 5/50b\n\
                   stat::number_of_executed_units: 37\n";
        let s = summary(log);
        assert!(s.starts_with("77 executions;"), "{s}");
        assert!(s.contains("DONE cov: 20"), "{s}");
    }

    #[test]
    fn summary_of_a_fork_run_takes_the_runs_of_the_last_status_line() {
        // The parent's lines in fork mode (FuzzerFork.cpp), with a job's stats in between that
        // must not be added again.
        let log = "INFO: -fork=1: fuzzing in separate process(s)\n\
                   #120: cov: 300 ft: 400 corp: 50 exec/s: 60 oom/timeout/crash: 0/0/1 time: 3s job: 2 dft_time: 0\n\
                   ==12== ERROR: libFuzzer: deadly signal\n\
                   #5310: cov: 310 ft: 420 corp: 52 exec/s: 90 oom/timeout/crash: 0/1/2 time: 61s job: 11 dft_time: 0\n\
                   INFO: exiting: 0 time: 61s\n";
        let s = summary(log);
        assert!(s.starts_with("5310 executions;"), "{s}");
        assert!(s.contains("oom/timeout/crash: 0/1/2"), "{s}");
    }

    #[test]
    fn the_cause_of_a_crash_is_the_panic_message_else_the_libfuzzer_error() {
        let panic = "INFO: Seed: 1\n\
                     thread '<unnamed>' panicked at fuzz/src/props.rs:10:5:\n\
                     exit 3 on a valid module\n\
                     ==7== ERROR: libFuzzer: deadly signal\n";
        assert_eq!(
            first_error(panic).as_deref(),
            Some("panicked at fuzz/src/props.rs:10:5: exit 3 on a valid module")
        );
        let oom = "==7== ERROR: libFuzzer: out-of-memory (used: 2100Mb; exceeds: 2048Mb)\n";
        assert_eq!(
            first_error(oom).as_deref(),
            Some("libFuzzer: out-of-memory (used: 2100Mb; exceeds: 2048Mb)")
        );
        assert_eq!(first_error("INFO: Done 1 runs in 0 second(s)\n"), None);
    }

    #[test]
    fn a_slow_unit_is_reported_but_is_no_failure() {
        assert!(!is_failure(Path::new("a/slow-unit-0123")));
        for f in [
            "a/crash-0123",
            "a/timeout-0123",
            "a/oom-0123",
            "a/leak-0123",
        ] {
            assert!(is_failure(Path::new(f)), "{f}");
        }
    }
}
