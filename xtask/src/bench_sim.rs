//! `cargo xtask bench sim`: the simulator (`spv-subgroup-sim`) against lavapipe on three kernels
//! of 65,536 invocations (`xtask/bench_sim/*.comp`: a 64-iteration loop of arithmetic and
//! `subgroupAdd`, a sum reduction, a histogram with atomics), the same SPIR-V and inputs in the
//! same run.
//!
//! ```text
//! cargo xtask bench sim [--runs 3] [--sizes 32,64,128] [--threads N]
//! ```
//!
//! For each kernel: lavapipe's dispatch time (GPU timestamps around each of at least ten
//! dispatches in one command buffer, the fastest: its threads slow down with the machine's load),
//! then `Module::run` at each size (the calling thread's CPU time, `CLOCK_THREAD_CPUTIME_ID`:
//! `/proc`'s schedstat advances only at scheduler ticks; fairer than wall time on a loaded machine; median of `--runs`),
//! its lane-instructions (instructions times active lanes) per second, and the ratio to
//! lavapipe. The results are checked: the reduction and the histogram against a host computation
//! at every size, and every kernel's simulated output at lavapipe's own subgroup size against
//! lavapipe's. Prints a Markdown table (docs/PERFORMANCE.md, "Simulator against lavapipe"),
//! all on one thread (`Dispatch::with_threads(1)`); then a second table of wall times on one
//! thread, on `--threads` (default: one per core) and on `spv-subgroup run`'s default
//! (`Dispatch::threads` 0: every core, after the calling thread's first workgroups), whose
//! outcomes must equal the one-thread run's, with the speedup and the ratios to lavapipe.
//! Then the conformance shaders at each size on one thread (issue 25's lane-instructions goal
//! is stated for them): the `conformance_sim` harness's `part_*` tests, whose lane-instructions
//! and `Module::run` time, wall and CPU, are summed into a third table.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use spv_subgroup_sim::{Dispatch, Module};
use spv_subgroup_vk::{PipelineOptions, Runner};

/// Workgroups of 256 invocations: 65,536 invocations per dispatch.
const GROUPS: u32 = 256;
const LOCAL: u32 = 256;
const INVOCATIONS: usize = (GROUPS * LOCAL) as usize;

/// One benchmark kernel: its source file, its input words, and the words of its output buffer.
struct Kernel {
    name: &'static str,
    file: &'static str,
    input: Vec<u32>,
    out_words: usize,
    /// The expected output where it does not depend on the subgroup size.
    expect: Option<Vec<u32>>,
}

/// A deterministic word sequence (xorshift), so every run has the same inputs.
fn words(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 16) as u32
        })
        .collect()
}

fn kernels() -> Vec<Kernel> {
    let loop_in = words(INVOCATIONS, 1);
    let reduce_in = words(INVOCATIONS * 16, 2);
    let hist_in = words(INVOCATIONS, 3);
    let mut reduce_out = vec![0u32; 1 + GROUPS as usize];
    // Invocation g of workgroup w sums inp[(g + k * n) % len] for k < 16 (n = 65,536).
    let len = reduce_in.len();
    for g in 0..INVOCATIONS {
        let mut s = 0u32;
        for k in 0..16 {
            s = s.wrapping_add(reduce_in[(g + k * INVOCATIONS) % len]);
        }
        let w = g / LOCAL as usize;
        reduce_out[1 + w] = reduce_out[1 + w].wrapping_add(s);
        reduce_out[0] = reduce_out[0].wrapping_add(s);
    }
    let mut bins = vec![0u32; 256];
    for w in &hist_in {
        for k in 0..4 {
            bins[((w >> (8 * k)) & 255) as usize] += 1;
        }
    }
    vec![
        Kernel {
            name: "loop (64 iterations, subgroupAdd)",
            file: "loop.comp",
            input: loop_in,
            out_words: INVOCATIONS,
            expect: None,
        },
        Kernel {
            name: "reduction (subgroupAdd, shared, atomicAdd)",
            file: "reduce.comp",
            input: reduce_in,
            out_words: 1 + GROUPS as usize,
            expect: Some(reduce_out),
        },
        Kernel {
            name: "histogram (shared and global atomics)",
            file: "histogram.comp",
            input: hist_in,
            out_words: 256,
            expect: Some(bins),
        },
    ]
}

fn compile(file: &str) -> Result<Vec<u32>> {
    let src = crate::workspace_root().join("xtask/bench_sim").join(file);
    let dir = std::env::temp_dir().join(format!("spv-subgroup-bench-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let out = dir.join(format!("{file}.spv"));
    let st = std::process::Command::new("glslangValidator")
        .args(["-V", "--target-env", "vulkan1.1"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .context("glslangValidator not found (install glslang-tools)")?;
    if !st.status.success() {
        bail!(
            "glslangValidator failed on {}: {}",
            src.display(),
            String::from_utf8_lossy(&st.stdout)
        );
    }
    let bytes = std::fs::read(&out)?;
    Ok(bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

fn bytes(w: &[u32]) -> Vec<u8> {
    w.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// This thread's CPU time in seconds (`CLOCK_THREAD_CPUTIME_ID`, to the nanosecond: `/proc`'s
/// schedstat advances only at scheduler ticks, 4 ms on this project's machines, a quarter of a
/// run).
fn thread_cpu() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Runs the benchmark and prints its table.
#[allow(clippy::print_stdout)] // A benchmark: its table is what it prints.
pub fn run(args: &[String]) -> Result<()> {
    let (mut runs, mut sizes) = (3usize, vec![32u32, 64, 128]);
    let mut threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--runs" => runs = value()?.parse().context("--runs")?,
            "--threads" => threads = value()?.parse().context("--threads")?,
            "--sizes" => {
                sizes = value()?
                    .split(',')
                    .map(|s| s.trim().parse().context("--sizes: subgroup sizes"))
                    .collect::<Result<_>>()?
            }
            other => bail!(
                "unknown argument {other}: cargo xtask bench sim [--runs 3] [--sizes 32,64,128] [--threads N]"
            ),
        }
    }
    let runs = runs.max(1);
    let runner = Runner::new().map_err(|e| anyhow::anyhow!("Vulkan (lavapipe): {e}"))?;
    let vk_size = runner.info().subgroup_size;
    let info = runner.info();
    println!(
        "device: {} ({}), subgroup size {}",
        info.name, info.driver, info.subgroup_size
    );
    let mut wall_table = format!(
        "| kernel | size | wall, 1 thread | wall, {threads} threads | speedup | run ({threads} threads) / lavapipe | wall, run's default (threads 0) | its ratio to lavapipe |\n|---|---|---|---|---|---|---|---|\n"
    );
    let mut table = String::from(
        "| kernel | lavapipe dispatch | size | `Module::run` (CPU) | lane-instructions | million lane-instructions/s | run / lavapipe |\n|---|---|---|---|---|---|---|\n",
    );
    for k in kernels() {
        let words = compile(k.file)?;
        let module = Module::new(&words).map_err(|e| anyhow::anyhow!("{}: {e}", k.file))?;
        let opts = PipelineOptions {
            buffers: 2,
            ..PipelineOptions::default()
        };
        let pipeline = runner
            .pipeline(&words, &opts)
            .map_err(|e| anyhow::anyhow!("{}: {e}", k.file))?;
        let mut bufs = vec![k.input.clone(), vec![0u32; k.out_words]];
        runner
            .run(
                &pipeline,
                &mut bufs,
                [GROUPS, 1, 1],
                Duration::from_secs(60),
            )
            .map_err(|e| anyhow::anyhow!("{}: {e}", k.file))?;
        let vk_out = bufs[1].clone();
        if let Some(e) = &k.expect {
            if &vk_out != e {
                bail!("{}: lavapipe's result differs from the host's", k.name);
            }
        }
        let mut tbufs = vec![k.input.clone(), vec![0u32; k.out_words]];
        // Lavapipe's dispatch runs on its own threads, whose time stretches with the machine's
        // load: its fastest of at least ten dispatches is the figure (the fairest to lavapipe).
        let vk_ns = runner
            .time(
                &pipeline,
                &mut tbufs,
                [GROUPS, 1, 1],
                runs.max(10) as u32,
                Duration::from_secs(60),
            )
            .map_err(|e| anyhow::anyhow!("{}: {e}", k.file))?;
        let vk_s = vk_ns.iter().copied().fold(f64::INFINITY, f64::min) / 1e9;
        let mut all_sizes = sizes.clone();
        if !all_sizes.contains(&vk_size) {
            all_sizes.push(vk_size);
        }
        for &size in &all_sizes {
            // The kernel's dispatch at `size` on `threads` threads (fresh buffers each run).
            let dispatch = |threads: usize| {
                Dispatch::default()
                    .with_subgroup_size(size)
                    .with_workgroups([GROUPS, 1, 1])
                    .with_buffers(BTreeMap::from([
                        ((0, 0), bytes(&k.input)),
                        ((0, 1), vec![0u8; k.out_words * 4]),
                    ]))
                    .with_step_limit(u64::MAX)
                    .with_threads(threads)
            };
            let mut times = Vec::new();
            let mut lane_steps = 0;
            for _ in 0..runs {
                let d = dispatch(1);
                let cpu = thread_cpu();
                let out = module
                    .run(&d)
                    .map_err(|e| anyhow::anyhow!("{} at size {size}: {e}", k.file))?;
                // On a loaded machine the thread's CPU time is the fairer measure.
                times.push(thread_cpu() - cpu);
                lane_steps = out.lane_steps;
                let got: Vec<u32> = out.buffers[&(0, 1)]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                if let Some(e) = &k.expect {
                    if &got != e {
                        bail!(
                            "{} at size {size}: the simulator's result differs from the host's",
                            k.name
                        );
                    }
                }
                if size == vk_size && got != vk_out {
                    bail!("{} at lavapipe's size {size}: the simulator's result differs from lavapipe's", k.name);
                }
            }
            let t = median(times);
            if !sizes.contains(&size) {
                continue;
            }
            let _ = writeln_table(&mut table, k.name, vk_s, size, t, lane_steps);
            // One thread and `threads` alternate, run by run, so a change of the machine's load
            // falls on both.
            let once = |n: usize| -> Result<(f64, spv_subgroup_sim::Outcome)> {
                let d = dispatch(n);
                let t = Instant::now();
                let out = module
                    .run(&d)
                    .map_err(|e| anyhow::anyhow!("{} at size {size}: {e}", k.file))?;
                Ok((t.elapsed().as_secs_f64(), out))
            };
            // ... and the default of `spv-subgroup run` (0: every core, the first workgroups
            // on the calling thread alone until the dispatch shows it is not a small one).
            let (mut one_times, mut many_times, mut default_times) =
                (Vec::new(), Vec::new(), Vec::new());
            let mut outs = Vec::new();
            for _ in 0..runs {
                outs.clear();
                for (n, times) in [
                    (1, &mut one_times),
                    (threads, &mut many_times),
                    (0, &mut default_times),
                ] {
                    let (t, out) = once(n)?;
                    times.push(t);
                    outs.push(out);
                }
            }
            let walls = [one_times, many_times, default_times].map(median);
            let Some(one) = outs.first() else {
                bail!("no run");
            };
            if outs.iter().any(|o| {
                o.buffers != one.buffers
                    || o.steps != one.steps
                    || o.lane_steps != one.lane_steps
                    || o.undefined_total != one.undefined_total
            }) {
                bail!(
                    "{} at size {size}: {threads} threads or the default differ from one",
                    k.name
                );
            }
            let _ = writeln_wall(&mut wall_table, k.name, size, walls, vk_s);
        }
    }
    println!("\n{table}");
    println!("Wall time (median of {runs}, the runs alternating), one thread against {threads} and against run's default (threads 0):\n\n{wall_table}");
    println!(
        "Checked: every simulated result at lavapipe's subgroup size ({vk_size}) equals lavapipe's; the reduction's and the histogram's equal the host's at every size."
    );
    println!("\n{}", conformance_table(&sizes)?);
    Ok(())
}

/// The conformance shaders (glslang's unoptimised output of every case, native and lowered,
/// every local size, two seeds) in the simulator at each size on one thread (one test thread,
/// each dispatch on one thread: `SPV_SIM_THREADS=1`): the harness
/// `conformance_sim`'s `part_*` tests, which check every run against the host model and print
/// their lane-instructions and `Module::run`'s CPU time; summed over the parts.
fn conformance_table(sizes: &[u32]) -> Result<String> {
    let mut table = String::from(
        "| conformance shaders (conformance_sim part_*, one thread: SPV_SIM_THREADS=1) | size | `Module::run` (wall) | (CPU) | lane-instructions | million lane-instructions/s (wall) | (CPU) |\n|---|---|---|---|---|---|---|\n",
    );
    for &size in sizes {
        let out = crate::process::cargo()
            .args([
                "test",
                "-p",
                "spv-subgroup-tests",
                "--test",
                "conformance_sim",
            ])
            .args(["--", "--nocapture", "--test-threads=1", "part_"])
            .env("SPV_SIM_SIZES", size.to_string())
            .env("SPV_SIM_THREADS", "1")
            .current_dir(crate::workspace_root())
            .output()
            .context("cargo test -p spv-subgroup-tests --test conformance_sim")?;
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            bail!(
                "conformance_sim at size {size} failed:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let (mut lane_steps, mut wall, mut cpu, mut parts) = (0u64, 0f64, 0f64, 0);
        for line in text.lines() {
            let Some(rest) = line.split("simulator throughput: ").nth(1) else {
                continue;
            };
            // `N lane-instructions in W s of Module::run (C s of this thread's CPU time) = ...`
            let words: Vec<&str> = rest.split_whitespace().collect();
            let num = |k: usize| {
                words
                    .get(k)
                    .and_then(|x| x.trim_start_matches('(').parse::<f64>().ok())
            };
            let steps = words.first().and_then(|x| x.parse::<u64>().ok());
            match (steps, num(3), num(7), words.get(4), words.get(8)) {
                (Some(n), Some(w), Some(c), Some(&"s"), Some(&"s")) => {
                    lane_steps += n;
                    wall += w;
                    cpu += c;
                    parts += 1;
                }
                _ => bail!("conformance_sim printed a throughput line this does not read: {line}"),
            }
        }
        if parts == 0 {
            bail!("conformance_sim at size {size} printed no throughput line:\n{text}");
        }
        use std::fmt::Write as _;
        let _ = writeln!(
            table,
            "| {parts} parts | {size} | {:.1} ms | {:.1} ms | {:.1} M | {:.0} | {:.0} |",
            wall * 1e3,
            cpu * 1e3,
            lane_steps as f64 / 1e6,
            lane_steps as f64 / wall.max(1e-9) / 1e6,
            lane_steps as f64 / cpu.max(1e-9) / 1e6
        );
    }
    Ok(table)
}

fn writeln_table(
    table: &mut String,
    name: &str,
    vk_s: f64,
    size: u32,
    t: f64,
    lane_steps: u64,
) -> std::fmt::Result {
    use std::fmt::Write as _;
    writeln!(
        table,
        "| {name} | {:.1} ms | {size} | {:.1} ms | {:.1} M | {:.0} | {:.1}x |",
        vk_s * 1e3,
        t * 1e3,
        lane_steps as f64 / 1e6,
        lane_steps as f64 / t / 1e6,
        t / vk_s
    )
}

fn writeln_wall(
    table: &mut String,
    name: &str,
    size: u32,
    [one_s, many_s, default_s]: [f64; 3],
    vk_s: f64,
) -> std::fmt::Result {
    use std::fmt::Write as _;
    writeln!(
        table,
        "| {name} | {size} | {:.1} ms | {:.1} ms | {:.2}x | {:.1}x | {:.1} ms | {:.1}x |",
        one_s * 1e3,
        many_s * 1e3,
        one_s / many_s,
        many_s / vk_s,
        default_s * 1e3,
        default_s / vk_s
    )
}
