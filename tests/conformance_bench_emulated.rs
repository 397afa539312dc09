//! The emulation's cost in the GPU benchmark (issue 26, part 3): each benchmark row's module
//! emulated at a half and a quarter of the device's subgroup size (`LowerOptions::
//! emulate_subgroup_size`, lowered for the device's own preset, so that only the emulation's
//! rewrites separate it from native), timed by `conformance_bench.rs` in the same round robin as
//! the row's native op, and its output checked against the simulator's run of the original at N.
//!
//! `SPV_BENCH_EMULATE` (comma list of sizes; empty or `none` for none) replaces the default sizes
//! (the device's size / 2 and / 4, those of at least 4 lanes).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use spv_subgroup_lower::{LowerOptions, Target};
use spv_subgroup_vk::{DeviceInfo, PipelineOptions, Runner};

/// Iterations of the chain in the check dispatch (the timed one runs `SPV_BENCH_ITERS`: too many
/// for the simulator, and the check needs the same module only, with another `ITERS`).
const CHECK_ITERS: u32 = 64;
/// Workgroups of the check dispatch (each of the device's subgroup size, as the timed one).
const CHECK_GROUPS: u32 = 8;

/// The emulated sizes to time on a device of `device` lanes.
pub fn sizes(device: u32) -> Vec<u32> {
    match std::env::var("SPV_BENCH_EMULATE") {
        Ok(list) => list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .filter(|&n: &u32| n.is_power_of_two() && n < device)
            .collect(),
        Err(_) => [device / 2, device / 4]
            .into_iter()
            .filter(|&n| n >= 4)
            .collect(),
    }
}

/// The preset that describes the device: what it runs natively stays native after the
/// emulation, so the emulated column's cost is the emulation's alone.
pub fn device_preset(info: &DeviceInfo) -> &'static str {
    if info.vendor_id == 0x10de {
        "nvidia"
    } else if info.driver.contains("llvmpipe") || info.name.contains("llvmpipe") {
        "lavapipe"
    } else {
        "vulkan1.1"
    }
}

/// `native` emulated at `n` and lowered for `preset`, checked as every lowered module of the
/// suite is (spirv-val and our validator for the target).
pub fn emulate(native: &[u32], preset: &str, n: u32) -> Result<Vec<u32>, String> {
    let target = Target::preset(preset).ok_or_else(|| format!("no preset `{preset}`"))?;
    super::lower_checked_opts(
        native,
        LowerOptions::new(target).with_emulated_subgroup_size(Some(n)),
    )
}

/// What the check of one emulated variant found (`of`: the words compared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Check {
    /// Every output word equal to the simulator's run of the original at N.
    Equal,
    /// Words differ in a row of float arithmetic (the driver's float operations may run in
    /// another order than the simulator's): not a check.
    FloatDiffers { differ: usize, of: usize },
    /// Words differ in a row without floats: a failure.
    Differs { differ: usize, of: usize },
    /// Not checked, and why.
    NotChecked(String),
}

impl Check {
    fn cell(&self) -> String {
        match self {
            Check::Equal => "yes".to_owned(),
            Check::FloatDiffers { differ, of } => {
                format!("float: {differ} of {of} words differ (not checked)")
            }
            Check::Differs { differ, of } => format!("NO: {differ} of {of} words differ"),
            Check::NotChecked(why) => format!("not checked: {why}"),
        }
    }
}

/// The check of one emulated variant: its pipeline with `CHECK_ITERS` iterations, dispatched over
/// `CHECK_GROUPS` workgroups of the device's subgroup size, against the original (`native`) at
/// `n` lanes in the simulator with the same input and workgroups, word for word.
pub fn check(runner: &Runner, emulated: &[u32], native: &[u32], n: u32, float: bool) -> Check {
    let size = runner.info().subgroup_size;
    let input = super::bench::input((CHECK_GROUPS * size) as usize);
    let opts = PipelineOptions {
        buffers: 1,
        spec_constants: vec![(0, size), (1, CHECK_ITERS)],
        ..PipelineOptions::default()
    };
    let mut device = vec![input.clone()];
    if let Err(e) = runner.pipeline(emulated, &opts).and_then(|p| {
        runner.run(
            &p,
            &mut device,
            [CHECK_GROUPS, 1, 1],
            Duration::from_secs(60),
        )
    }) {
        return Check::NotChecked(format!("the check dispatch failed: {e}"));
    }
    let device = device.remove(0);
    let spec = BTreeMap::from([(0u32, u64::from(size)), (1, u64::from(CHECK_ITERS))]);
    let module = match spv_subgroup_sim::Module::with_spec_constants(native, &spec) {
        Ok(m) => m,
        Err(e) => return Check::NotChecked(format!("the simulator cannot translate it: {e}")),
    };
    let d = spv_subgroup_sim::Dispatch::default()
        .with_subgroup_size(n)
        .with_workgroups([CHECK_GROUPS, 1, 1])
        .with_buffer((0, 0), input.iter().flat_map(|w| w.to_le_bytes()).collect())
        .with_seed(1);
    let out = match module.run(&d) {
        Ok(o) => o,
        Err(e) => return Check::NotChecked(format!("the simulator failed: {e}")),
    };
    if out.undefined_total != 0 {
        return Check::NotChecked(format!(
            "the original reads {} undefined values at {n}",
            out.undefined_total
        ));
    }
    let sim: Vec<u32> = out.buffers[&(0, 0)]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let of = sim.len().max(device.len());
    let differ =
        sim.iter().zip(&device).filter(|(a, b)| a != b).count() + sim.len().abs_diff(device.len());
    match (differ, float) {
        (0, _) => Check::Equal,
        (differ, true) => Check::FloatDiffers { differ, of },
        (differ, false) => Check::Differs { differ, of },
    }
}

/// One emulated variant's median time and check.
pub struct Measured {
    pub time: Option<f64>,
    pub check: Check,
}

/// The emulation table of a benchmark run: one row per benchmark row, one group of columns per
/// emulated size.
pub struct Table {
    pub preset: &'static str,
    pub sizes: Vec<u32>,
    size: u32,
    rows: String,
    /// Checks that found every word equal.
    equal: usize,
    /// Float rows whose words differ, and checks not made (row and why).
    float_differs: Vec<String>,
    not_checked: Vec<String>,
}

impl Table {
    pub fn new(info: &DeviceInfo) -> Table {
        Table {
            preset: device_preset(info),
            sizes: sizes(info.subgroup_size),
            size: info.subgroup_size,
            rows: String::new(),
            equal: 0,
            float_differs: Vec::new(),
            not_checked: Vec::new(),
        }
    }

    /// Adds the row of benchmark `name`: `base` its `loop-only` time, `native` the native op's,
    /// `emulated` one entry per size of [`Table::sizes`]; returns the failures (integer words
    /// that differ from the simulator's).
    pub fn row(
        &mut self,
        (name, class): (&str, &str),
        base: Option<f64>,
        native: Option<f64>,
        emulated: &[Measured],
    ) -> Vec<String> {
        let fmt = |t: Option<f64>| t.map_or("n/a".to_owned(), |t| format!("{t:.2}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 => format!("{:.2}x", b / a),
            _ => "n/a".to_owned(),
        };
        let sub = |t: Option<f64>| t.map(|t| t - base.unwrap_or(0.0));
        let mut cells = Vec::new();
        let mut checks = Vec::new();
        let mut failures = Vec::new();
        for (m, n) in emulated.iter().zip(&self.sizes) {
            cells.push(format!(
                "{} | {} | {}",
                fmt(m.time),
                ratio(native, m.time),
                ratio(sub(native), sub(m.time))
            ));
            match &m.check {
                Check::Equal => self.equal += 1,
                Check::FloatDiffers { .. } => self.float_differs.push(format!("{name} at {n}")),
                Check::NotChecked(why) => self.not_checked.push(format!("{name} at {n}: {why}")),
                Check::Differs { .. } => failures.push(format!(
                    "{name} emulated at {n}: {} from the simulator's run of the original at {n}",
                    m.check.cell()
                )),
            }
            checks.push(if self.sizes.len() > 1 {
                format!("{n}: {}", m.check.cell())
            } else {
                m.check.cell()
            });
        }
        let _ = writeln!(
            self.rows,
            "| {name} | {class} | {} | {} | {} | {} |",
            fmt(base),
            fmt(native),
            cells.join(" | "),
            checks.join("; ")
        );
        failures
    }

    /// The table with its heading and notes (empty without emulated sizes or rows).
    pub fn render(&self) -> String {
        if self.sizes.is_empty() || self.rows.is_empty() {
            return String::new();
        }
        let size = self.size;
        let mut s = format!(
            "\nEmulated subgroup sizes (issue 26) on the {size}-lane device: each row's module emulated at N \
             (`LowerOptions::emulate_subgroup_size`) and lowered for the device's preset `{}`, dispatched as \
             native is (workgroups of {size} invocations: {size}/N virtual subgroups each), timed in the row's \
             round robin; ns per op per hardware subgroup, ratio = emulated / native, op-only ratio subtracts \
             `loop-only` from both; outputs: a dispatch of the emulated pipeline with ITERS = {CHECK_ITERS} over \
             {CHECK_GROUPS} workgroups, word for word against the simulator's run of the original at N\n\n| op | class | loop-only | native ({size}) |",
            self.preset
        );
        for n in &self.sizes {
            let _ = write!(s, " emulated at {n} | ratio | op-only ratio |");
        }
        s.push_str(" outputs equal to the original at N |\n|---|---|---|---|");
        s.push_str(&"---|---|---|".repeat(self.sizes.len()));
        s.push_str("---|\n");
        s.push_str(&self.rows);
        s
    }

    /// The line `run.sh` shows (it greps `^BENCH`): how many checks passed, and which were not made.
    pub fn summary(&self) -> String {
        if self.sizes.is_empty() {
            return "BENCH emulated: no sizes (SPV_BENCH_EMULATE)".to_owned();
        }
        let mut s = format!(
            "BENCH emulated at {:?} for `{}`: {} (row, size) outputs equal to the simulator's original at N; \
             {} float ones differ (not checked); {} not checked",
            self.sizes,
            self.preset,
            self.equal,
            self.float_differs.len(),
            self.not_checked.len()
        );
        if !self.float_differs.is_empty() {
            let _ = write!(s, "; float differs: {}", self.float_differs.join(", "));
        }
        if !self.not_checked.is_empty() {
            let _ = write!(s, "; not checked: {}", self.not_checked.join("; "));
        }
        s
    }
}
