//! The environment of a benchmark run: the repository root, the external tools and their
//! versions, the machine, and the revision the binaries were built from.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};

use super::bench_model::MB;

pub(super) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

pub(super) fn tool(name: &str) -> Result<PathBuf> {
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    bail!("{name} not found on PATH (cargo xtask install-deps installs spirv-tools)")
}

pub(super) fn tool_version(path: &Path) -> String {
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

pub(super) fn machine() -> String {
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
pub(super) fn revision(root: &Path) -> String {
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
