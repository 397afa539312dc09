//! Helpers shared by the CLI's integration tests: running the built binary (directly or through
//! `sh`), showing a run in assertion messages, the files a run leaves, and the modules the tests
//! feed it (compiled by glslang at test time; a missing tool fails with an install hint).
//!
//! Every test file includes this module with `mod common;` and uses a different part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use spv_subgroup_tests::tools;

/// The binary under test.
pub const EXE: &str = env!("CARGO_BIN_EXE_spv-subgroup");

pub fn to_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// Little-endian words of `bytes` (a trailing partial word is dropped).
pub fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

pub fn example_source() -> PathBuf {
    tools::workspace_root().join("fixtures/examples/partitioned_vote.comp")
}

/// The README example compiled by glslang: uses both extensions, valid, and changes when
/// lowered for Vulkan 1.1.
pub fn example_words() -> Vec<u32> {
    tools::compile_glsl(&example_source(), "vulkan1.1").expect("the example compiles")
}

pub fn example_bytes() -> Vec<u8> {
    to_bytes(&example_words())
}

/// A compute shader without any subgroup operation (nothing to lower).
pub fn plain_words() -> Vec<u32> {
    plain_words_for("vulkan1.1")
}

/// [`plain_words`] compiled for `env` (`vulkan1.3`: SPIR-V 1.6).
pub fn plain_words_for(env: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("plain.comp");
    std::fs::write(
        &src,
        "#version 450\nlayout(local_size_x = 8) in;\nlayout(std430, binding = 0) buffer B { uint v[]; };\n\
         void main() { v[gl_GlobalInvocationID.x] += 1u; }\n",
    )
    .unwrap();
    tools::compile_glsl(&src, env).expect("plain shader compiles")
}

/// The binary with `args` in `cwd`, colours off.
pub fn command(args: &[&str], cwd: &Path) -> Command {
    let mut c = Command::new(EXE);
    c.args(args).current_dir(cwd).env("NO_COLOR", "1");
    c
}

/// Runs the binary with nothing on stdin.
pub fn run(args: &[&str], cwd: &Path) -> Output {
    command(args, cwd)
        .stdin(Stdio::null())
        .output()
        .expect("the binary runs")
}

/// Runs the binary with `input` on stdin.
pub fn run_with_stdin(args: &[&str], cwd: &Path, input: &[u8]) -> Output {
    let mut child = command(args, cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // The binary may exit before reading everything (a usage error): a broken pipe is its answer,
    // not ours to fail on.
    let _ = child.stdin.take().unwrap().write_all(input);
    child.wait_with_output().unwrap()
}

/// Runs `sh -c SCRIPT` in `cwd` with `$0` set to the binary (for umask, limits, closed
/// descriptors and mount namespaces).
pub fn sh(script: &str, cwd: &Path) -> Output {
    sh_with_args(script, &[], cwd)
}

/// As [`sh`], with `args` as the script's `$1`, `$2`, ...
pub fn sh_with_args(script: &str, args: &[&str], cwd: &Path) -> Output {
    Command::new("sh")
        .args(["-c", script, EXE])
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("sh runs")
}

/// The exit code; a run killed by a signal fails the test, showing the run.
pub fn code(o: &Output) -> i32 {
    match o.status.code() {
        Some(c) => c,
        None => panic!("killed by a signal, not exited\n{}", show(o)),
    }
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// Everything about a run, for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// Writes `bytes` to `dir/rel`, making the directories on the way.
pub fn write(dir: &Path, rel: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(rel);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The CLI's temporary output files left in `dir` (there must be none after any run).
pub fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".spv-subgroup-"))
        .collect()
}

/// Every regular file below `dir`, as sorted relative paths.
pub fn files_below(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
