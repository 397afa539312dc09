//! `spv-subgroup run`: executes a compute shader in the simulator (`spv-subgroup-sim`) at a chosen
//! subgroup size, with storage buffers read from and saved to files; at several sizes
//! (`--subgroup-size all` or a list), compares every buffer across them (`size_compare.rs`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use spv_subgroup_sim::{Dispatch, Module, Outcome, DEFAULT_STEP_LIMIT};

use crate::io::print_stdout;
use crate::output::write_output;
use crate::{EXIT_FINDINGS, EXIT_OK};

/// Execute a compute shader in the simulator at any subgroup size from 1 to 128.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 the dispatch completed (at several sizes: and every buffer is equal \
across them); 1 an unsupported instruction, the step limit, an out-of-bounds access or a malformed \
module (the message names the instruction); 2 usage or IO error; 4 (several sizes) a buffer's \
results depend on the subgroup size."
)]
pub struct Opts {
    /// The SPIR-V binary.
    #[arg(value_name = "SHADER")]
    shader: PathBuf,
    /// Lanes per subgroup, 1 to 128; or several (`8,16,32`, or `all` for 1, 2, 4, ..., 128):
    /// runs at each and compares every buffer across the sizes.
    #[arg(long, value_name = "N|N,N,...|all", value_parser = parse_sizes)]
    subgroup_size: Sizes,
    /// Workgroups to dispatch: X or X,Y,Z.
    #[arg(long, value_name = "X[,Y,Z]", value_parser = parse_workgroups)]
    workgroups: [u32; 3],
    /// The entry point (needed when the module has several compute entry points).
    #[arg(long, value_name = "NAME")]
    entry: Option<String>,
    /// Binds a file's bytes as the storage buffer at binding B of set 0 (S.B for set S).
    #[arg(long = "buffer", value_name = "B=PATH", value_parser = parse_binding)]
    buffers: Vec<((u32, u32), PathBuf)>,
    /// Writes the buffer at binding B (S.B) to PATH after the dispatch (atomically).
    #[arg(long = "save", value_name = "B=PATH", value_parser = parse_binding)]
    saves: Vec<((u32, u32), PathBuf)>,
    /// Seed of the random bits given for values the spec leaves undefined.
    #[arg(long, value_name = "S", default_value_t = 0)]
    seed: u64,
    /// List every undefined value the dispatch produced (on stdout, one line each).
    #[arg(long)]
    report_undefined: bool,
    /// Most instructions to execute (counted once per subgroup) before stopping.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_STEP_LIMIT)]
    step_limit: u64,
    /// List the executed instructions whose results depend on the subgroup size (loads of
    /// SubgroupSize, SubgroupLocalInvocationId, SubgroupId, NumSubgroups and the masks; every
    /// subgroup instruction), on stdout.
    #[arg(long)]
    report_size_dependence: bool,
    /// Threads the workgroups run on (0: one per core); the results are the same at any count.
    #[arg(long, value_name = "N", default_value_t = 0)]
    threads: usize,
}

/// Exit status of a run at several sizes whose buffers differ between sizes.
pub const EXIT_SIZE_DEPENDENT: u8 = 4;

/// The subgroup sizes to run at, in the order given.
#[derive(Clone, Debug)]
struct Sizes(Vec<u32>);

/// `N`, `N,N,...` or `all`: subgroup sizes, each 1 to 128, without repeats.
fn parse_sizes(s: &str) -> Result<Sizes, String> {
    if s.trim() == "all" {
        return Ok(Sizes((0..8).map(|k| 1u32 << k).collect()));
    }
    let mut sizes = Vec::new();
    for part in s.split(',') {
        let n: u32 = part
            .trim()
            .parse()
            .map_err(|_| format!("`{part}` is not a subgroup size (1 to 128, a list, or `all`)"))?;
        if !(1..=128).contains(&n) {
            return Err(format!("subgroup size {n} is not in 1..=128"));
        }
        if sizes.contains(&n) {
            return Err(format!("subgroup size {n} is given twice"));
        }
        sizes.push(n);
    }
    Ok(Sizes(sizes))
}

fn parse_workgroups(s: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = s.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(format!("`{s}` is not X or X,Y,Z"));
    }
    let mut w = [1u32; 3];
    for (k, p) in parts.iter().enumerate() {
        w[k] = p
            .trim()
            .parse()
            .map_err(|_| format!("`{p}` is not a workgroup count"))?;
        if w[k] == 0 {
            return Err("workgroup counts must be at least 1".into());
        }
    }
    Ok(w)
}

fn parse_binding(s: &str) -> Result<((u32, u32), PathBuf), String> {
    let (b, path) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}` is not B=PATH or S.B=PATH"))?;
    let num = |x: &str| {
        x.parse::<u32>()
            .map_err(|_| format!("`{x}` is not a binding number"))
    };
    let key = match b.split_once('.') {
        Some((set, binding)) => (num(set)?, num(binding)?),
        None => (0, num(b)?),
    };
    if path.is_empty() {
        return Err(format!("`{s}` names no file"));
    }
    Ok((key, PathBuf::from(path)))
}

impl Opts {
    /// Runs the command; returns the exit status.
    pub fn run(self) -> anyhow::Result<u8> {
        let bytes = std::fs::read(&self.shader)
            .with_context(|| format!("cannot read `{}`", self.shader.display()))?;
        let module = match Module::from_bytes(&bytes) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{}: {e}", self.shader.display());
                return Ok(EXIT_FINDINGS);
            }
        };
        let mut buffers = BTreeMap::new();
        for ((set, binding), path) in &self.buffers {
            let data = std::fs::read(path).with_context(|| {
                format!(
                    "cannot read buffer {set}.{binding} from `{}`",
                    path.display()
                )
            })?;
            if buffers.insert((*set, *binding), data).is_some() {
                bail!("buffer {set}.{binding} is bound twice");
            }
        }
        let sizes = self.subgroup_size.0.clone();
        if sizes.len() > 1 && !self.saves.is_empty() {
            bail!("--save takes one subgroup size: run again with the size whose buffers you want");
        }
        let mut dispatch = Dispatch::default()
            .with_subgroup_size(sizes.first().copied().unwrap_or(32))
            .with_workgroups(self.workgroups)
            .with_buffers(buffers)
            .with_seed(self.seed)
            .with_report_undefined(self.report_undefined)
            .with_step_limit(self.step_limit)
            .with_threads(self.threads);
        dispatch.entry = self.entry.clone();
        dispatch.trace_size = self.report_size_dependence;
        let mut runs: Vec<(u32, Outcome)> = Vec::new();
        for &size in &sizes {
            let mut d = dispatch.clone();
            d.subgroup_size = size;
            match module.run(&d) {
                Ok(o) => runs.push((size, o)),
                Err(e) => {
                    let at = if sizes.len() > 1 {
                        format!(" (subgroup size {size})")
                    } else {
                        String::new()
                    };
                    eprintln!("{}{at}: {e}", self.shader.display());
                    return Ok(EXIT_FINDINGS);
                }
            }
        }
        let Some((_, outcome)) = runs.first() else {
            bail!("--subgroup-size names no size");
        };
        for ((set, binding), path) in &self.saves {
            let data = outcome
                .buffers
                .get(&(*set, *binding))
                .with_context(|| format!("--save {set}.{binding}: the module has no buffer at set {set}, binding {binding}"))?;
            write_output(path, data)?;
        }
        let several = runs.len() > 1;
        let mut text = String::new();
        if self.report_undefined {
            for (size, outcome) in &runs {
                let at = if several {
                    format!("size {size}: ")
                } else {
                    String::new()
                };
                for u in &outcome.undefined {
                    text.push_str(&format!("{at}undefined: {} at {}\n", u.what, u.location));
                }
                if outcome.undefined_total > outcome.undefined.len() as u64 {
                    text.push_str(&format!(
                        "{at}undefined: {} more not listed\n",
                        outcome.undefined_total - outcome.undefined.len() as u64
                    ));
                }
                text.push_str(&format!(
                    "{at}{} undefined values\n",
                    outcome.undefined_total
                ));
            }
        }
        if self.report_size_dependence {
            text.push_str(&crate::size_compare::size_reads(&runs));
        }
        let mut status = EXIT_OK;
        if several {
            // Runs again with another seed where undefined values were read, so a difference
            // they cause is told apart from one the subgroup size causes.
            let mut reruns = Vec::new();
            for (size, o) in &runs {
                if o.undefined_total == 0 {
                    continue;
                }
                let mut d = dispatch
                    .clone()
                    .with_subgroup_size(*size)
                    .with_seed(self.seed ^ 0x9e37_79b9_7f4a_7c15)
                    .with_report_undefined(false);
                d.trace_size = false;
                match module.run(&d) {
                    Ok(o) => reruns.push((*size, o)),
                    Err(e) => {
                        eprintln!(
                            "{} (subgroup size {size}, second seed): {e}",
                            self.shader.display()
                        );
                        return Ok(EXIT_FINDINGS);
                    }
                }
            }
            let report = crate::size_compare::compare(&runs, &reruns);
            text.push_str(&report.text);
            if report.size_dependent {
                status = EXIT_SIZE_DEPENDENT;
            }
        }
        if !text.is_empty() {
            print_stdout(&text)?;
        }
        Ok(status)
    }
}
