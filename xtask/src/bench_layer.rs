//! `cargo xtask bench layer`: what the Vulkan layer (`VK_LAYER_SPV_SUBGROUP_lower`,
//! docs/layer.md) adds to pipeline creation, for the conformance suite's partitioned and vote
//! shaders and for the 10 MB generated module.
//!
//! ```text
//! cargo xtask bench layer [--runs 9] [--big-runs 5] [--big-size BYTES] [--big-reach GROUPS] [--no-big]
//!                         [--device NAME] [--force] [--table FILE] [--work DIR]
//! xtask bench layer --layer-path DIR --work DIR --device NVIDIA [--force] [--table FILE]   (the GPU bundle's run.sh)
//! ```
//!
//! Here the layer is built in release (`cargo build --release -p spv-subgroup-layer --lib`) and
//! found through a manifest written into `bench-out/layer/`; the shaders (`bench-out/layer/shaders`,
//! [`prepare_shaders`]) are every case of the conformance suite (`tests/conformance_shaders.rs`,
//! compiled by `glslangValidator`) that declares `GroupNonUniformPartitionedNV` or
//! `SubgroupVoteKHR`, and a 10 MB module of the generator of `cargo xtask bench gen --size
//! 10485760` whose entry point calls only the first of its groups of 64 functions
//! (`--big-reach`, [`bench_gen::generate_reaching`]): the layer lowers all 10 MB, the driver
//! compiles what the entry point reaches. With the whole module reachable, lavapipe spent more
//! than 4 minutes and 7 GB in one `vkCreateComputePipelines` before it was stopped.
//! `cargo xtask gpu` bundles this program and the installed layer (`SPV_GPU_RUN=layer-bench`).
//!
//! Each measurement is one child process (this program, `--child`) that opens the device
//! (`spv-subgroup-vk`'s `Runner`, which enables the extensions the device lists) and, for each
//! module, creates a compute pipeline twice: `vkCreateShaderModule`, the set and pipeline layouts
//! and `vkCreateComputePipelines`, timed around the whole (`Runner::pipeline`). Through the layer
//! (`VK_INSTANCE_LAYERS`) the first creation lowers the module (the layer's cache is empty in a new
//! process: cold) and the second finds it in the layer's memory cache (a hit); without the layer,
//! the same two creations are made with the module the driver got from the layer (the lowered
//! words, from the layer's `SPV_SUBGROUP_LAYER_DUMP` in an untimed run first; the original where
//! the layer leaves it unchanged), so the difference is the layer's alone. The layer's own time
//! (lowering plus cache lookup, or the lookup of a hit) is what it logs at
//! `SPV_SUBGROUP_LAYER_LOG=info` for each module. Runs alternate with and without the layer; each
//! number is the median over `--runs` processes. The drivers' own shader caches are off
//! (`MESA_SHADER_CACHE_DISABLE=true`, `__GL_SHADER_DISK_CACHE=0`), so every process compiles.
//! `--force` sets `SPV_SUBGROUP_LAYER_FORCE=1` (on a driver with the extensions, the layer
//! otherwise passes every module through and lowers nothing).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use spv_subgroup_vk::{PipelineOptions, Runner};

use super::bench_env::{machine, revision, root};
use super::bench_gen;

// The conformance suite's shader generator and the record layouts it needs, from the test
// harness's own files (one source for the shaders the suite runs).
#[allow(dead_code, clippy::all)]
#[path = "../../tests/conformance_model.rs"]
mod model;
#[allow(dead_code, clippy::all)]
#[path = "../../tests/conformance_shaders.rs"]
mod shaders;

/// The child's marker before each timing line on stderr.
const MARK: &str = "LAYERBENCH";
/// The layer's name.
const LAYER: &str = "VK_LAYER_SPV_SUBGROUP_lower";
/// The generated module's file name in the shader folder.
const BIG: &str = "gen-10mb.spv";
/// `cargo xtask bench gen --size 10485760`.
pub(crate) const BIG_SIZE: usize = 10_485_760;
/// How many groups of 64 generated functions the big module's entry point calls (the rest is
/// lowered by the layer but dropped by the driver): see [`bench_gen::generate_reaching`].
pub(crate) const BIG_REACH: usize = 1;
/// `SpvCapabilityGroupNonUniformPartitionedNV` and `SubgroupVoteKHR`.
const LAYER_CAPABILITIES: [u32; 2] = [5297, 4431];

#[derive(Debug)]
struct Opts {
    runs: usize,
    big_runs: usize,
    big_size: usize,
    big_reach: usize,
    big: bool,
    device: String,
    force: bool,
    layer_path: Option<PathBuf>,
    shaders: Option<PathBuf>,
    table: Option<PathBuf>,
    work: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut o = Opts {
        runs: 9,
        big_runs: 5,
        big_size: BIG_SIZE,
        big_reach: BIG_REACH,
        big: true,
        device: "llvmpipe".to_owned(),
        force: false,
        layer_path: None,
        shaders: None,
        table: None,
        work: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--runs" => o.runs = value()?.parse().context("--runs")?,
            "--big-runs" => o.big_runs = value()?.parse().context("--big-runs")?,
            "--big-size" => o.big_size = value()?.parse().context("--big-size BYTES")?,
            "--big-reach" => o.big_reach = value()?.parse().context("--big-reach GROUPS")?,
            "--no-big" => o.big = false,
            "--device" => o.device = value()?.clone(),
            "--force" => o.force = true,
            "--layer-path" => o.layer_path = Some(PathBuf::from(value()?)),
            "--shaders" => o.shaders = Some(PathBuf::from(value()?)),
            "--table" => o.table = Some(PathBuf::from(value()?)),
            "--work" => o.work = Some(PathBuf::from(value()?)),
            other => bail!(
                "unknown argument {other}\nusage: cargo xtask bench layer [--runs N] [--big-runs N] \
                 [--big-size BYTES] [--no-big] [--device NAME] [--force] [--layer-path DIR] \
                 [--shaders DIR] [--table FILE] [--work DIR]"
            ),
        }
    }
    if o.runs == 0 || o.big_runs == 0 {
        bail!("--runs and --big-runs must be at least 1");
    }
    Ok(o)
}

/// Whether a module declares one of the capabilities the layer lowers.
fn uses_layer_capability(words: &[u32]) -> bool {
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        if first & 0xffff != 17 || count < 2 {
            break;
        }
        if words
            .get(at + 1)
            .is_some_and(|c| LAYER_CAPABILITIES.contains(c))
        {
            return true;
        }
        at += count;
    }
    false
}

fn read_words(path: &Path) -> Result<Vec<u32>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if bytes.len() % 4 != 0 || bytes.len() < 20 {
        bail!("{} is not a SPIR-V module", path.display());
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

/// Writes the benchmark's modules into `dir`: each conformance case that uses the partitioned or
/// KHR vote capability, compiled by `glslangValidator` (`NAME.spv`), and the generated module of
/// `big_size` bytes ([`BIG`]) unless `big_size` is 0. Returns how many small modules it wrote.
pub(crate) fn prepare_shaders(dir: &Path, big_size: usize, big_reach: usize) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let glslang = super::bench_env::tool("glslangValidator")
        .context("glslangValidator compiles the conformance shaders")?;
    let tmp = tempfile::tempdir()?;
    let mut written = 0;
    for case in shaders::all_cases() {
        let name = case.name.replace(['/', ' ', ':'], "_");
        let src = tmp.path().join(format!("{name}.comp"));
        let out = dir.join(format!("{name}.spv"));
        std::fs::write(&src, &case.glsl)?;
        let o = Command::new(&glslang)
            .args(["--target-env", case.env, "-o"])
            .arg(&out)
            .arg(&src)
            .output()
            .context("running glslangValidator")?;
        if !o.status.success() {
            bail!(
                "glslangValidator refused the conformance case {}:\n{}",
                case.name,
                String::from_utf8_lossy(&o.stdout)
            );
        }
        if uses_layer_capability(&read_words(&out)?) {
            written += 1;
        } else {
            // Nothing for the layer to do: not what this benchmark measures.
            std::fs::remove_file(&out)?;
        }
    }
    if big_size > 0 {
        let words = bench_gen::generate_reaching(big_size, 1, bench_gen::DEFAULT_BODY, big_reach);
        std::fs::write(dir.join(BIG), bench_gen::to_bytes(&words))?;
    }
    Ok(written)
}

/// The `.spv` files of `dir`, by name.
fn modules_in(dir: &Path) -> Result<BTreeMap<String, PathBuf>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "spv") {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.insert(name, p);
        }
    }
    Ok(out)
}

/// The child: opens `device`, creates each module's pipeline twice and prints a timing line per
/// creation (`LAYERBENCH NAME first|second NS`, or `LAYERBENCH NAME error MESSAGE`) on stderr,
/// where the layer's log lines come before the creation they belong to.
fn child(args: &[String]) -> Result<()> {
    let mut device = None;
    let mut files = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--device" => device = it.next().cloned(),
            f => files.push(PathBuf::from(f)),
        }
    }
    let runner = Runner::with_device(device.as_deref())
        .map_err(|e| anyhow::anyhow!("opening the Vulkan device: {e}"))?;
    let info = runner.info();
    eprintln!(
        "{MARK} device {} ({}), subgroup size {}",
        info.name, info.driver, info.subgroup_size
    );
    let opts = PipelineOptions {
        buffers: 4,
        ..PipelineOptions::default()
    };
    for file in files {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let words = read_words(&file)?;
        for which in ["first", "second"] {
            let start = Instant::now();
            let made = runner.pipeline(&words, &opts);
            let ns = start.elapsed().as_nanos();
            match made {
                Ok(pipeline) => {
                    eprintln!("{MARK} {name} {which} {ns}");
                    drop(pipeline);
                }
                Err(e) => {
                    eprintln!("{MARK} {name} error {e}");
                    break;
                }
            }
        }
    }
    Ok(())
}

/// One creation as a child saw it: its time and the layer's own time for it.
#[derive(Clone, Copy, Debug, Default)]
struct Creation {
    ms: f64,
    layer_ms: Option<f64>,
}

/// What one child measured: per module, its first and second creation; the modules it could not
/// create; its device line.
#[derive(Debug, Default)]
struct ChildResult {
    device: String,
    first: BTreeMap<String, Creation>,
    second: BTreeMap<String, Creation>,
    errors: BTreeMap<String, String>,
}

/// Parses a child's stderr: the layer's `lowered for ... in X ms` and `lowered (cached, X ms)`
/// lines go with the next timing line.
fn parse_child(text: &str) -> ChildResult {
    let mut r = ChildResult::default();
    let mut layer_ms: Option<f64> = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(&format!("{LAYER}: module ")) {
            let ms = rest
                .split_once(" at subgroup size ")
                .and_then(|(_, t)| t.split_once(" in "))
                .and_then(|(_, t)| t.split_once(" ms"))
                .or_else(|| {
                    rest.split_once("(cached, ")
                        .and_then(|(_, t)| t.split_once(" ms"))
                })
                .and_then(|(v, _)| v.trim().parse::<f64>().ok());
            if let Some(ms) = ms {
                *layer_ms.get_or_insert(0.0) += ms;
            }
            continue;
        }
        let Some(rest) = line.strip_prefix(&format!("{MARK} ")) else {
            continue;
        };
        if let Some(device) = rest.strip_prefix("device ") {
            r.device = device.to_owned();
            continue;
        }
        let mut parts = rest.splitn(3, ' ');
        let (Some(name), Some(which), Some(value)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let creation = Creation {
            ms: value.parse::<f64>().unwrap_or(f64::NAN) / 1e6,
            layer_ms: layer_ms.take(),
        };
        match which {
            "first" => {
                r.first.insert(name.to_owned(), creation);
            }
            "second" => {
                r.second.insert(name.to_owned(), creation);
            }
            _ => {
                r.errors.insert(name.to_owned(), value.to_owned());
            }
        }
    }
    r
}

/// How a child runs: with the layer or without it.
struct Launch<'a> {
    exe: &'a Path,
    device: &'a str,
    layer_path: &'a Path,
    force: bool,
}

impl Launch<'_> {
    /// Runs one child on `files`, with the layer (and its dump into `dump`) or without it.
    fn run(&self, files: &[PathBuf], with_layer: bool, dump: Option<&Path>) -> Result<String> {
        let mut cmd = Command::new(self.exe);
        cmd.args(["bench", "layer", "--child", "--device", self.device])
            .args(files)
            .env("MESA_SHADER_CACHE_DISABLE", "true")
            .env("__GL_SHADER_DISK_CACHE", "0")
            .env_remove("VK_INSTANCE_LAYERS")
            .env_remove("SPV_SUBGROUP_LAYER_FORCE")
            .env_remove("SPV_SUBGROUP_LAYER_CACHE")
            .env_remove("SPV_SUBGROUP_LAYER_DUMP");
        if with_layer {
            cmd.env("VK_LAYER_PATH", self.layer_path)
                .env("VK_INSTANCE_LAYERS", LAYER)
                .env("SPV_SUBGROUP_LAYER_LOG", "info");
            if self.force {
                cmd.env("SPV_SUBGROUP_LAYER_FORCE", "1");
            }
            if let Some(dir) = dump {
                cmd.env("SPV_SUBGROUP_LAYER_DUMP", dir);
            }
        }
        let o = cmd.output().context("running the benchmark child")?;
        let text = String::from_utf8_lossy(&o.stderr).into_owned();
        if !o.status.success() {
            bail!("the benchmark child failed ({}):\n{text}", o.status);
        }
        if with_layer && !text.contains(&format!("{LAYER}: layer active")) {
            bail!(
                "the layer was not loaded (VK_LAYER_PATH={}):\n{text}",
                self.layer_path.display()
            );
        }
        Ok(text)
    }
}

/// The words the driver gets for each module through the layer: from the layer's dump, the
/// lowered module whose original equals the file's words; the file where the layer lowered
/// nothing. Returns the files to create without the layer, in the order of `files`.
fn driver_modules(files: &[PathBuf], dump: &Path, out: &Path) -> Result<(Vec<PathBuf>, usize)> {
    std::fs::create_dir_all(out)?;
    let mut originals = BTreeMap::new();
    for e in std::fs::read_dir(dump)? {
        let p = e?.path();
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(key) = name.strip_suffix(".original.spv") {
            originals.insert(read_words(&p)?, dump.join(format!("{key}.lowered.spv")));
        }
    }
    let mut lowered = 0;
    let mut list = Vec::new();
    for f in files {
        let words = read_words(f)?;
        match originals.get(&words).filter(|p| p.is_file()) {
            Some(p) => {
                let to = out.join(f.file_name().context("a file name")?);
                std::fs::copy(p, &to)?;
                list.push(to);
                lowered += 1;
            }
            None => list.push(f.clone()),
        }
    }
    Ok((list, lowered))
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Per module, the medians over the runs: without the layer (first, second creation), with it
/// (first, second) and the layer's own time (first, second).
#[derive(Clone, Copy, Debug)]
struct Medians {
    direct_first: f64,
    direct_second: f64,
    layer_first: f64,
    layer_second: f64,
    own_first: f64,
    own_second: f64,
}

fn medians(direct: &[ChildResult], layered: &[ChildResult], name: &str) -> Option<Medians> {
    let pick = |runs: &[ChildResult], second: bool, own: bool| {
        median(
            runs.iter()
                .filter_map(|r| {
                    if second {
                        r.second.get(name)
                    } else {
                        r.first.get(name)
                    }
                })
                .map(|c| if own { c.layer_ms.unwrap_or(0.0) } else { c.ms })
                .collect(),
        )
    };
    let m = Medians {
        direct_first: pick(direct, false, false),
        direct_second: pick(direct, true, false),
        layer_first: pick(layered, false, false),
        layer_second: pick(layered, true, false),
        own_first: pick(layered, false, true),
        own_second: pick(layered, true, true),
    };
    [
        m.direct_first,
        m.direct_second,
        m.layer_first,
        m.layer_second,
    ]
    .iter()
    .all(|v| v.is_finite())
    .then_some(m)
}

/// One table row: totals over `rows` (sums of the per-module medians) and the range of the
/// per-module shares.
fn row(label: &str, rows: &[Medians]) -> String {
    let sum = |f: fn(&Medians) -> f64| rows.iter().map(f).sum::<f64>();
    let share = |own: f64, total: f64| 100.0 * own / total;
    let range = |f: fn(&Medians) -> f64| {
        let v: Vec<f64> = rows.iter().map(f).collect();
        if v.len() < 2 {
            String::new()
        } else {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!(" ({lo:.1}-{hi:.1}, median {:.1})", median(v))
        }
    };
    let (df, ds, lf, ls, of, os) = (
        sum(|m| m.direct_first),
        sum(|m| m.direct_second),
        sum(|m| m.layer_first),
        sum(|m| m.layer_second),
        sum(|m| m.own_first),
        sum(|m| m.own_second),
    );
    format!(
        "| {label} | {df:.2} ms | {lf:.2} ms | {of:.3} ms | **{:.1}%**{} | {:+.1}% | {ds:.2} ms | {ls:.2} ms | {os:.4} ms | **{:.2}%**{} | {:+.1}% |\n",
        share(of, lf),
        range(|m| 100.0 * m.own_first / m.layer_first),
        100.0 * (lf - df) / lf,
        share(os, ls),
        range(|m| 100.0 * m.own_second / m.layer_second),
        100.0 * (ls - ds) / ls,
    )
}

/// A set of modules measured together: its label, its modules by name, its runs.
type ModuleSet = (String, Vec<(String, PathBuf)>, usize);

/// The `cargo xtask bench layer` entry point.
#[allow(clippy::print_stdout)] // A benchmark: its table is what it prints.
pub fn run(args: &[String]) -> Result<()> {
    if args.first().is_some_and(|a| a == "--child") {
        return child(&args[1..]);
    }
    let o = parse(args)?;
    let root = root();
    let work = o
        .work
        .clone()
        .unwrap_or_else(|| root.join("bench-out").join("layer"));
    std::fs::create_dir_all(&work)?;
    let layer_path = match &o.layer_path {
        Some(p) => p.clone(),
        None => build_layer(&root, &work)?,
    };
    let shader_dir = match &o.shaders {
        Some(d) => d.clone(),
        None => {
            let dir = work.join("shaders");
            let _ = std::fs::remove_dir_all(&dir);
            eprintln!("compiling the conformance shaders and generating the big module...");
            prepare_shaders(&dir, if o.big { o.big_size } else { 0 }, o.big_reach)?;
            dir
        }
    };
    let all = modules_in(&shader_dir)?;
    let (big, small): (Vec<_>, Vec<_>) = all
        .iter()
        .map(|(n, p)| (n.clone(), p.clone()))
        .partition(|(n, _)| format!("{n}.spv") == BIG);
    if small.is_empty() {
        bail!("no conformance modules in {}", shader_dir.display());
    }
    let exe = std::env::current_exe().context("finding this program")?;
    let launch = Launch {
        exe: &exe,
        device: &o.device,
        layer_path: &layer_path,
        force: o.force,
    };
    let mut device = String::new();
    let mut notes = Vec::new();
    let mut sets: Vec<ModuleSet> = vec![(
        format!("conformance shaders ({} modules)", small.len()),
        small,
        o.runs,
    )];
    if o.big && !big.is_empty() {
        sets.push(("10 MB generated module".to_owned(), big, o.big_runs));
    }
    let mut rows = String::new();
    for (label, modules, runs) in &sets {
        let files: Vec<PathBuf> = modules.iter().map(|(_, p)| p.clone()).collect();
        // Untimed: what the layer sends the driver.
        let dump = tempfile::tempdir()?;
        let text = launch.run(&files, true, Some(dump.path()))?;
        let first = parse_child(&text);
        device = first.device.clone();
        let driver_dir = work.join("driver");
        let _ = std::fs::remove_dir_all(&driver_dir);
        let (direct_files, lowered) = driver_modules(&files, dump.path(), &driver_dir)?;
        eprintln!(
            "{label}: the layer lowers {lowered} of {} modules; {runs} runs...",
            files.len()
        );
        let mut direct = Vec::new();
        let mut layered = Vec::new();
        for run in 0..*runs {
            // Alternate which goes first, so drift in the machine's load falls on both.
            let order = if run % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for with_layer in order {
                let text = if with_layer {
                    launch.run(&files, true, None)?
                } else {
                    launch.run(&direct_files, false, None)?
                };
                let r = parse_child(&text);
                if with_layer {
                    layered.push(r);
                } else {
                    direct.push(r);
                }
            }
        }
        let mut measured = Vec::new();
        for (name, _) in modules {
            let error = layered
                .iter()
                .chain(&direct)
                .find_map(|r| r.errors.get(name));
            match (error, medians(&direct, &layered, name)) {
                (None, Some(m)) => measured.push(m),
                (Some(e), _) => notes.push(format!("`{name}`: no pipeline ({e}); left out")),
                (None, None) => notes.push(format!("`{name}`: no timing; left out")),
            }
        }
        if measured.is_empty() {
            bail!("{label}: no module made a pipeline");
        }
        let line = row(
            &format!("{label}, {runs} runs, {lowered} lowered by the layer"),
            &measured,
        );
        eprint!("{line}");
        rows.push_str(&line);
        // Written after each set, so that a run cut short still leaves what it measured.
        if let Some(t) = &o.table {
            let table = render(&device, o.force, &root, &rows, &notes);
            std::fs::write(t, &table).with_context(|| format!("writing {}", t.display()))?;
        }
    }
    println!("{}", render(&device, o.force, &root, &rows, &notes));
    Ok(())
}

/// The report: the device, the date, the machine and revision, the table, the notes.
fn render(device: &str, force: bool, root: &Path, rows: &str, notes: &[String]) -> String {
    let mut out = String::new();
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Layer cost on {device}{}, {date}; {}; revision {}.\n",
        if force {
            ", SPV_SUBGROUP_LAYER_FORCE=1"
        } else {
            ""
        },
        machine(),
        revision(root)
    );
    out.push_str(
        "| modules | without the layer, first creation | with the layer, first (lowers) | layer's own: lowering + lookup | share of creation (per module) | with - without | without, second creation | with, second (cache hit) | layer's own: cache hit | share (per module) | with - without |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    out.push_str(rows);
    for n in notes {
        let _ = writeln!(out, "\nNote: {n}");
    }
    out
}

/// Builds the layer in release and writes a manifest for it into `work/manifest`; returns that
/// folder (for `VK_LAYER_PATH`).
fn build_layer(root: &Path, work: &Path) -> Result<PathBuf> {
    use xtask::install::layer_layout as layout;
    eprintln!("building the layer (release)...");
    let st = crate::process::cargo()
        .args(["build", "--release", "-p", "spv-subgroup-layer", "--lib"])
        .current_dir(root)
        .status()
        .context("cargo build")?;
    if !st.success() {
        bail!("cargo build --release -p spv-subgroup-layer failed");
    }
    let lib = super::target_dir(root)
        .join("release")
        .join(layout::LIBRARY_FILE);
    let dir = work.join("manifest");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(
        dir.join(layout::MANIFEST_FILE),
        layout::manifest_json(&lib.to_string_lossy()),
    )?;
    Ok(dir)
}
