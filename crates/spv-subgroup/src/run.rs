//! `spv-subgroup run`: executes a compute shader in the simulator (`spv-subgroup-sim`) at a chosen
//! subgroup size, with storage buffers read from and saved to files.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use spv_subgroup_sim::{Dispatch, Module, DEFAULT_STEP_LIMIT};

use crate::io::print_stdout;
use crate::output::write_output;
use crate::{EXIT_FINDINGS, EXIT_OK};

/// Execute a compute shader in the simulator at any subgroup size from 1 to 128.
#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 the dispatch completed; 1 an unsupported instruction, the step limit, \
an out-of-bounds access or a malformed module (the message names the instruction); 2 usage or IO error."
)]
pub struct Opts {
    /// The SPIR-V binary.
    #[arg(value_name = "SHADER")]
    shader: PathBuf,
    /// Lanes per subgroup, 1 to 128.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=128))]
    subgroup_size: u32,
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
        let mut dispatch = Dispatch::default()
            .with_subgroup_size(self.subgroup_size)
            .with_workgroups(self.workgroups)
            .with_buffers(buffers)
            .with_seed(self.seed)
            .with_report_undefined(self.report_undefined)
            .with_step_limit(self.step_limit);
        dispatch.entry = self.entry;
        let outcome = match module.run(&dispatch) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{}: {e}", self.shader.display());
                return Ok(EXIT_FINDINGS);
            }
        };
        for ((set, binding), path) in &self.saves {
            let data = outcome
                .buffers
                .get(&(*set, *binding))
                .with_context(|| format!("--save {set}.{binding}: the module has no buffer at set {set}, binding {binding}"))?;
            write_output(path, data)?;
        }
        if self.report_undefined {
            let mut text = String::new();
            for u in &outcome.undefined {
                text.push_str(&format!("undefined: {} at {}\n", u.what, u.location));
            }
            if outcome.undefined_total > outcome.undefined.len() as u64 {
                text.push_str(&format!(
                    "undefined: {} more not listed\n",
                    outcome.undefined_total - outcome.undefined.len() as u64
                ));
            }
            text.push_str(&format!("{} undefined values\n", outcome.undefined_total));
            print_stdout(&text)?;
        }
        Ok(EXIT_OK)
    }
}
