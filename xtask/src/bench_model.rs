//! What `cargo xtask bench` measures, as its report reads it: the options of the run, one
//! command's samples, and the results of one module size.

pub(super) const MB: f64 = 1024.0 * 1024.0;

#[derive(Debug)]
pub(super) struct Opts {
    pub(super) sizes: Vec<f64>,
    pub(super) runs: usize,
    pub(super) val_runs: usize,
    pub(super) only: Option<String>,
    pub(super) seed: u64,
    pub(super) body: usize,
    pub(super) extras: bool,
    pub(super) docs: bool,
}

/// One measured command: all wall times, the peak RSS (max over runs) and the last exit status.
#[derive(Debug, Clone)]
pub(super) struct Sample {
    pub(super) times: Vec<f64>,
    /// User + system CPU seconds of each run (GNU time `%U + %S`, 10 ms resolution).
    pub(super) cpu: Vec<f64>,
    pub(super) rss_kib: u64,
    pub(super) ok: bool,
    pub(super) note: String,
    /// Size of the file the command wrote, if it writes one.
    pub(super) out_bytes: Option<u64>,
}

pub(super) fn median_of(v: &[f64]) -> f64 {
    let mut t = v.to_vec();
    t.sort_by(|a, b| a.total_cmp(b));
    if t.is_empty() {
        return f64::NAN;
    }
    t[t.len() / 2]
}

impl Sample {
    pub(super) fn median(&self) -> f64 {
        median_of(&self.times)
    }
    pub(super) fn best(&self) -> f64 {
        self.times.iter().copied().fold(f64::INFINITY, f64::min)
    }
}

#[derive(Debug)]
pub(super) struct SizeResult {
    pub(super) label: String,
    pub(super) bytes: u64,
    pub(super) ours_val: Option<Sample>,
    pub(super) spirv_val: Option<Sample>,
    pub(super) ours_lower: Option<Sample>,
    pub(super) spirv_opt: Option<Sample>,
    pub(super) extras: Vec<(String, Sample)>,
    pub(super) lowered_check: Option<String>,
}
