//! `cargo xtask bench tree`: a tree of many small shaders, as a game or an engine has them.
//!
//! ```text
//! cargo xtask bench tree [--files 2000] [--runs 3] [--loop-runs 1] [--seed S] [--no-docs]
//! cargo xtask bench tree [--files 2000] [--seed S] --bundle DIR     (then `sh DIR/run.sh` elsewhere)
//! ```
//!
//! The tree (`bench-out/tree/in/`, 20 directories of up to 100 files) mixes our own fixtures
//! (`fixtures/lower`, `fixtures/conformance`, `fixtures/examples`: the GLSL compiled with
//! `glslangValidator`, the `.spvasm` assembled with `spirv-as`, each kept only when `spirv-val
//! --target-env vulkan1.1` accepts it) with modules from the benchmark generator ([`bench_gen`]) of
//! 1 to 64 KiB, each with its own seed. Timed in the same run, round-robin:
//! `spv-subgroup validate DIR --target-env vulkan1.1`, `spv-subgroup lower DIR -o OUT` (into an empty
//! `OUT` each run), and the reference: one `spirv-val --target-env vulkan1.1` process per file,
//! one after the other as a shell loop runs them, and the same spread over all cores (what
//! `xargs -P` gives), so the comparison does not rest only on the parallelism our tool has.
//! Each row also gives the CPU time (user plus system) the command took: our binary's from
//! `/usr/bin/time`, the loops' as the CPU time of the `spirv-val` children they waited for (from
//! `/proc/self/stat`), since a loop's wall time depends on the machine's load far more than its CPU
//! time does. The load average at the start and at the end of the run goes with the table.
//! The table goes into the `## Whole trees` section of `docs/PERFORMANCE.md`.
//!
//! The same benchmark on another machine (the GPU machine of the `device` tool has 16 cores, no
//! Rust, no SPIRV-Tools and no `/usr/bin/time`): `--bundle DIR` makes the tree here and copies it,
//! our release binary, `spirv-val`, `/usr/bin/time` and this program into `DIR`, with a `run.sh`
//! that runs `xtask bench tree --from-bundle DIR` there (the tree, binaries and revision from the
//! bundle; no build, no docs; the table is printed and written to `$OUT/tree.md`). Its table goes
//! into docs/PERFORMANCE.md by hand, under a notes subsection that names the machine.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{bail, Context, Result};

use super::bench_gen;

const SECTION: &str = "## Whole trees";

#[derive(Clone, Debug)]
struct Opts {
    files: usize,
    runs: usize,
    loop_runs: usize,
    seed: u64,
    docs: bool,
    /// Make the tree and a bundle to run it elsewhere, time nothing.
    bundle: Option<PathBuf>,
    /// Time a bundle made by `--bundle` (on the machine it was carried to).
    from_bundle: Option<PathBuf>,
    /// Where to write the table as well (with `--from-bundle`).
    table: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut o = Opts {
        files: 2000,
        runs: 3,
        loop_runs: 1,
        seed: 1,
        docs: true,
        bundle: None,
        from_bundle: None,
        table: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--files" => o.files = value()?.parse().context("--files")?,
            "--runs" => o.runs = value()?.parse().context("--runs")?,
            "--loop-runs" => o.loop_runs = value()?.parse().context("--loop-runs")?,
            "--seed" => o.seed = value()?.parse().context("--seed")?,
            "--no-docs" => o.docs = false,
            "--bundle" => o.bundle = Some(PathBuf::from(value()?)),
            "--from-bundle" => o.from_bundle = Some(PathBuf::from(value()?)),
            "--table" => o.table = Some(PathBuf::from(value()?)),
            other => bail!(
                "unknown argument {other}\nusage: cargo xtask bench tree [--files N] [--runs N] \
                 [--loop-runs N] [--seed S] [--no-docs] [--bundle DIR | --from-bundle DIR [--table FILE]]"
            ),
        }
    }
    if o.files == 0 || o.runs == 0 || o.loop_runs == 0 {
        bail!("--files, --runs and --loop-runs must be at least 1");
    }
    Ok(o)
}

/// Whether `spirv-val --target-env vulkan1.1` accepts the file.
fn spirv_val_ok(spirv_val: &Path, file: &Path) -> bool {
    Command::new(spirv_val)
        .args(["--target-env", "vulkan1.1"])
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Every fixture source below `dir`, sorted.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| ["comp", "frag", "vert", "spvasm"].iter().any(|k| x == *k))
        {
            out.push(p);
        }
    }
    out.sort();
}

/// Compiles the fixtures into `scratch` and returns the modules spirv-val accepts for Vulkan 1.1.
fn fixture_modules(root: &Path, scratch: &Path, spirv_val: &Path) -> Result<Vec<Vec<u8>>> {
    let mut srcs = Vec::new();
    for d in [
        "fixtures/lower",
        "fixtures/conformance",
        "fixtures/examples",
    ] {
        sources(&root.join(d), &mut srcs);
    }
    std::fs::create_dir_all(scratch)?;
    let mut modules = Vec::new();
    for (i, src) in srcs.iter().enumerate() {
        let out = scratch.join(format!("f{i}.spv"));
        let status = if src.extension().is_some_and(|x| x == "spvasm") {
            Command::new("spirv-as")
                .args(["--target-env", "vulkan1.1"])
                .arg(src)
                .arg("-o")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
        } else {
            Command::new("glslangValidator")
                .args(["-V", "--target-env", "vulkan1.1"])
                .arg(src)
                .arg("-o")
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
        }
        .context("running glslangValidator or spirv-as (cargo xtask install-deps)")?;
        // Invalid fixtures (made to trip a rule) and ones for other environments are left out.
        if status.success() && spirv_val_ok(spirv_val, &out) {
            modules.push(std::fs::read(&out)?);
        }
    }
    if modules.is_empty() {
        bail!("no fixture compiled: are glslangValidator and spirv-as installed (cargo xtask install-deps)?");
    }
    Ok(modules)
}

/// What the tree holds.
struct Tree {
    dir: PathBuf,
    files: Vec<PathBuf>,
    bytes: u64,
    fixtures: usize,
    distinct_fixtures: usize,
    generated: usize,
}

/// Writes the tree: every other file a fixture (in turn), the rest generated modules of
/// 1 to 64 KiB (sizes spread evenly on a log scale), each from its own seed.
fn make_tree(root: &Path, out: &Path, opts: &Opts, spirv_val: &Path) -> Result<Tree> {
    let dir = out.join("in");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let fixtures = fixture_modules(root, &out.join("fixtures"), spirv_val)?;
    let mut tree = Tree {
        dir: dir.clone(),
        files: Vec::new(),
        bytes: 0,
        fixtures: 0,
        distinct_fixtures: fixtures.len(),
        generated: 0,
    };
    for i in 0..opts.files {
        let sub = dir.join(format!("pack{:02}", i % 20)).join(if i % 3 == 0 {
            "compute"
        } else {
            "shaders"
        });
        std::fs::create_dir_all(&sub)?;
        let path = sub.join(format!("s{i:04}.spv"));
        let bytes = if i % 2 == 0 {
            tree.fixtures += 1;
            fixtures[(i / 2) % fixtures.len()].clone()
        } else {
            tree.generated += 1;
            let seed = opts.seed.wrapping_mul(1_000_003).wrapping_add(i as u64);
            // 2^10 .. 2^16 bytes.
            let size = 1usize << (10 + (seed % 7) as usize);
            bench_gen::to_bytes(&bench_gen::generate(size, seed, 2 + (i % 13)))
        };
        tree.bytes += bytes.len() as u64;
        std::fs::write(&path, bytes)?;
        tree.files.push(path);
    }
    Ok(tree)
}

/// One timed command: its wall and CPU times, and the exit status and stderr tail of the last run.
struct Timed {
    name: String,
    times: Vec<f64>,
    /// User plus system CPU seconds of each run (NaN where it could not be read).
    cpu: Vec<f64>,
    status: String,
    tail: String,
}

fn median(v: &[f64]) -> f64 {
    let mut t = v.to_vec();
    t.sort_by(|a, b| a.total_cmp(b));
    t.get(t.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The CPU seconds (user plus system) of the children this process has waited for so far:
/// fields 16 and 17 of `/proc/self/stat`, in clock ticks of 1/100 s (Linux's `USER_HZ`).
fn children_cpu() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // The command name (field 2) is in parentheses and may hold spaces; field 3 follows it.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return f64::NAN;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |n: usize| f.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    match (ticks(16), ticks(17)) {
        (Some(u), Some(s)) => (u + s) / 100.0,
        _ => f64::NAN,
    }
}

/// The 1-minute load average now.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// Runs one process per file, on `workers` threads; returns (wall seconds, files spirv-val rejected).
fn spirv_val_per_file(spirv_val: &Path, files: &[PathBuf], workers: usize) -> (f64, usize) {
    let next = AtomicUsize::new(0);
    let rejected = AtomicUsize::new(0);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(f) = files.get(i) else { break };
                if !spirv_val_ok(spirv_val, f) {
                    rejected.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    (start.elapsed().as_secs_f64(), rejected.into_inner())
}

/// The `cargo xtask bench tree` entry point.
pub fn run(args: &[String]) -> Result<()> {
    let opts = parse(args)?;
    if let Some(bundle) = &opts.from_bundle {
        return time_bundle(&opts, bundle);
    }
    let root = super::root();
    let out = root.join("bench-out").join("tree");
    let ours = super::build_release_cli(&root)?;
    let spirv_val = super::tool("spirv-val")?;
    let tree = make_tree(&root, &out, &opts, &spirv_val)?;
    eprintln!(
        "tree: {} files ({} from {} fixtures, {} generated), {:.1} MiB in {}",
        tree.files.len(),
        tree.fixtures,
        tree.distinct_fixtures,
        tree.generated,
        tree.bytes as f64 / super::MB,
        tree.dir.display()
    );
    let revision = super::revision(&root);
    if let Some(bundle) = &opts.bundle {
        return write_bundle(&tree, opts.seed, &ours, &spirv_val, &revision, bundle);
    }
    let text = time_tree(&opts, &tree, &ours, &spirv_val, &out.join("out"), &revision)?;
    if opts.docs {
        let doc = root.join("docs/PERFORMANCE.md");
        super::write_section_named(&doc, SECTION, &text)?;
        eprintln!("updated {}", doc.display());
    }
    Ok(())
}

/// The script a bundle runs with (from the directory that holds the bundle's folder).
const BUNDLE_RUN_SH: &str = r#"#!/bin/sh
# Written by `cargo xtask bench tree --bundle DIR`: times the tree on this machine.
set -eu
B="$(cd "$(dirname "$0")" && pwd)"
[ -x /usr/bin/time ] || cp "$B/bin/time" /usr/bin/time
OUTDIR="${OUT:-/tmp}"
nproc
"$B/bin/xtask" bench tree --from-bundle "$B" --table "$OUTDIR/tree.md" "$@"
"#;

/// Copies the tree, the binaries and the revision into `dir`, with `run.sh` (see the module doc).
fn write_bundle(
    tree: &Tree,
    seed: u64,
    ours: &Path,
    spirv_val: &Path,
    revision: &str,
    dir: &Path,
) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin)?;
    let xtask = std::env::current_exe().context("finding this program")?;
    for (from, name) in [
        (ours, "spv-subgroup"),
        (spirv_val, "spirv-val"),
        (Path::new("/usr/bin/time"), "time"),
        (xtask.as_path(), "xtask"),
    ] {
        let to = bin.join(name);
        std::fs::copy(from, &to).with_context(|| format!("copying {}", from.display()))?;
        // Debug info is most of a binary's size, and the bundle travels under a size limit.
        let _ = Command::new("strip").arg("--strip-debug").arg(&to).status();
    }
    for f in &tree.files {
        let rel = f
            .strip_prefix(&tree.dir)
            .context("a tree file outside the tree")?;
        let to = dir.join("in").join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::copy(f, &to)?;
    }
    std::fs::write(
        dir.join("TREE"),
        format!(
            "{} {} {} {}\n{revision}\n",
            tree.fixtures, tree.distinct_fixtures, tree.generated, seed
        ),
    )?;
    let run_sh = dir.join("run.sh");
    std::fs::write(&run_sh, BUNDLE_RUN_SH)?;
    eprintln!(
        "bundle in {}: run `sh {}/run.sh` on the other machine (from the directory that holds it)",
        dir.display(),
        dir.display()
    );
    Ok(())
}

/// Every file below `dir`, sorted by path.
fn files_below(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.is_dir() {
            files_below(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// Times a bundle made by `--bundle` (on the machine it was carried to) and prints the table.
fn time_bundle(opts: &Opts, bundle: &Path) -> Result<()> {
    let manifest =
        std::fs::read_to_string(bundle.join("TREE")).context("reading the bundle's TREE")?;
    let mut lines = manifest.lines();
    let counts: Vec<u64> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|n| n.parse().ok())
        .collect();
    let [fixtures, distinct_fixtures, generated, seed] = counts[..] else {
        bail!("the bundle's TREE file is not what --bundle writes");
    };
    let opts = &Opts {
        seed,
        ..opts.clone()
    };
    let revision = lines.next().unwrap_or("unknown").to_string();
    let dir = bundle.join("in");
    let mut files = Vec::new();
    files_below(&dir, &mut files)?;
    // The order the tree was made in: by file name (s0000.spv, s0001.spv, ...).
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    let bytes = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()))
        .sum::<std::io::Result<u64>>()?;
    let tree = Tree {
        dir,
        files,
        bytes,
        fixtures: fixtures as usize,
        distinct_fixtures: distinct_fixtures as usize,
        generated: generated as usize,
    };
    let bin = bundle.join("bin");
    let text = time_tree(
        opts,
        &tree,
        &bin.join("spv-subgroup"),
        &bin.join("spirv-val"),
        &bundle.join("out"),
        &revision,
    )?;
    if let Some(t) = &opts.table {
        std::fs::write(t, &text).with_context(|| format!("writing {}", t.display()))?;
    }
    Ok(())
}

/// Times every command round-robin and renders the table.
fn time_tree(
    opts: &Opts,
    tree: &Tree,
    ours: &Path,
    spirv_val: &Path,
    lowered: &Path,
    revision: &str,
) -> Result<String> {
    let input = tree.dir.to_string_lossy().into_owned();
    let lowered_arg = lowered.to_string_lossy().into_owned();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut timed: Vec<Timed> = [
        "spv-subgroup validate DIR --target-env vulkan1.1",
        "spv-subgroup lower DIR -o OUT",
        "spirv-val --target-env vulkan1.1, one process per file, one at a time",
        format!("spirv-val --target-env vulkan1.1, one process per file, {cores} at a time")
            .as_str(),
    ]
    .iter()
    .map(|n| Timed {
        name: n.to_string(),
        times: Vec::new(),
        cpu: Vec::new(),
        status: String::new(),
        tail: String::new(),
    })
    .collect();
    let load_start = load_average();
    let rounds = opts.runs.max(opts.loop_runs);
    for round in 0..rounds {
        for (k, t) in timed.iter_mut().enumerate() {
            let runs = if k < 2 { opts.runs } else { opts.loop_runs };
            if round >= runs {
                continue;
            }
            let (wall, cpu, status, tail) = match k {
                0 | 1 => {
                    let args: Vec<&str> = if k == 0 {
                        vec!["validate", &input, "--target-env", "vulkan1.1"]
                    } else {
                        if lowered.exists() {
                            std::fs::remove_dir_all(lowered)?;
                        }
                        vec!["lower", &input, "-o", &lowered_arg]
                    };
                    let r = super::run_once(ours, &args)?;
                    (
                        r.wall,
                        r.cpu,
                        if r.ok { "0".into() } else { "non-zero".into() },
                        r.tail,
                    )
                }
                _ => {
                    let workers = if k == 2 { 1 } else { cores };
                    let before = children_cpu();
                    let (wall, rejected) = spirv_val_per_file(spirv_val, &tree.files, workers);
                    let cpu = children_cpu() - before;
                    (wall, cpu, format!("{rejected} rejected"), String::new())
                }
            };
            eprintln!(
                "  {} run {}/{runs}: {wall:.3} s wall, {cpu:.2} s CPU",
                t.name,
                round + 1
            );
            t.times.push(wall);
            t.cpu.push(cpu);
            t.status = status;
            t.tail = tail;
        }
    }
    let text = render(opts, tree, &timed, ours, spirv_val, revision, &load_start);
    eprintln!("\n{text}");
    Ok(text)
}

fn render(
    opts: &Opts,
    tree: &Tree,
    timed: &[Timed],
    ours: &Path,
    spirv_val: &Path,
    revision: &str,
    load_start: &str,
) -> String {
    let mut s = String::new();
    let loop_median = median(&timed[2].times);
    let _ = writeln!(s, "{SECTION}\n");
    if opts.from_bundle.is_some() {
        let _ = writeln!(
            s,
            "Generated by `cargo xtask bench tree --files {} --seed {} --bundle DIR` on the development machine, then \
             `sh DIR/run.sh --runs {} --loop-runs {}` on this one.",
            tree.files.len(),
            opts.seed,
            opts.runs,
            opts.loop_runs
        );
    } else {
        let _ = writeln!(
            s,
            "Generated by `cargo xtask bench tree --files {} --runs {} --loop-runs {} --seed {}` (do not edit by hand; \
             notes go below in a `### ... (notes)` subsection).",
            opts.files, opts.runs, opts.loop_runs, opts.seed
        );
    }
    let _ = writeln!(
        s,
        "The tree: {} files, {:.1} MiB, in 20 directories of two subdirectories each: {} copies of the {} fixtures `spirv-val --target-env vulkan1.1` accepts (`fixtures/lower`, `fixtures/conformance`, `fixtures/examples`), and {} generated modules of 1 to 64 KiB, one seed each.",
        tree.files.len(),
        tree.bytes as f64 / super::MB,
        tree.fixtures,
        tree.distinct_fixtures,
        tree.generated
    );
    let _ = writeln!(
        s,
        "Machine: {}, {load_start} at the start; binary {} at {}; {}.",
        super::machine(),
        ours.display(),
        revision,
        super::tool_version(spirv_val)
    );
    let _ = writeln!(
        s,
        "Wall time and CPU time (user plus system, all threads or processes), medians of the runs, all commands in the same run, round-robin.\n"
    );
    let _ = writeln!(
        s,
        "| command | runs | wall (median) | of the spirv-val loop | CPU (median) | exit |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for t in timed {
        let m = median(&t.times);
        let _ = writeln!(
            s,
            "| {} | {} | {:.2} s | {:.3} | {:.2} s | {} |",
            t.name,
            t.times.len(),
            m,
            m / loop_median,
            median(&t.cpu),
            t.status
        );
    }
    let _ = writeln!(s);
    for (k, what) in [(0, "validate"), (1, "lower")] {
        let ratio = median(&timed[k].times) / loop_median;
        let _ = writeln!(
            s,
            "- Goal (issue 11): `{what}` of the tree in under a tenth of the spirv-val loop: {} ({:.3}).",
            if ratio < 0.1 { "met" } else { "NOT met" },
            ratio
        );
    }
    for t in &timed[..2] {
        if !t.tail.is_empty() {
            let _ = writeln!(s, "- `{}` said: `{}`", t.name, t.tail);
        }
    }
    s
}
