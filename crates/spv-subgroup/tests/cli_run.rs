//! Integration tests of `spv-subgroup run`: buffers in and out, the exit-status contract
//! (0 completed, 1 step limit / out of bounds / malformed, 2 usage or IO), `--report-undefined`.

use std::path::Path;
use std::process::{Command, Output};

use spv_subgroup_tests::tools;

const EXE: &str = env!("CARGO_BIN_EXE_spv-subgroup");

/// Each invocation writes its subgroup's sum and a shuffle from lane + 1 (undefined at the top lane).
const SHADER: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_shuffle_relative : require
layout(local_size_x = 6) in;
layout(set = 0, binding = 0) buffer In { uint vin[]; };
layout(set = 1, binding = 2) buffer Out { uint vout[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    vout[2u * g] = subgroupAdd(vin[g]);
    vout[2u * g + 1u] = subgroupShuffleDown(vin[g], 1u);
    if (vin[g] == 999u) { while (true) {} }
}
"#;

fn compile(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("s.comp");
    std::fs::write(&src, SHADER).expect("write");
    let words = tools::compile_glsl(&src, "vulkan1.1").expect("compiles");
    let spv = dir.join("s.spv");
    std::fs::write(
        &spv,
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .expect("write");
    spv
}

fn run(args: &[&str]) -> Output {
    Command::new(EXE)
        .arg("run")
        .args(args)
        .output()
        .expect("runs")
}

fn words(path: &Path) -> Vec<u32> {
    std::fs::read(path)
        .expect("saved")
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn write_words(path: &Path, w: &[u32]) {
    std::fs::write(
        path,
        w.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>(),
    )
    .expect("write");
}

#[test]
fn runs_with_buffers_and_saves_results() {
    let dir = tempfile::tempdir().expect("tmp");
    let spv = compile(dir.path());
    let input: Vec<u32> = (1..=12).collect();
    write_words(&dir.path().join("in.bin"), &input);
    write_words(&dir.path().join("out.bin"), &[0; 24]);
    let (inp, out, saved) = (
        dir.path().join("in.bin"),
        dir.path().join("out.bin"),
        dir.path().join("saved.bin"),
    );
    let o = run(&[
        spv.to_str().unwrap_or_default(),
        "--subgroup-size",
        "4",
        "--workgroups",
        "2,1,1",
        &format!("--buffer=0={}", inp.display()),
        &format!("--buffer=1.2={}", out.display()),
        &format!("--save=1.2={}", saved.display()),
        "--report-undefined",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let w = words(&saved);
    // Workgroups of 6 at size 4: subgroups of 4 and 2 lanes.
    let sums = [10, 10, 10, 10, 11, 11, 34, 34, 34, 34, 23, 23];
    for g in 0..12 {
        assert_eq!(w[2 * g], sums[g], "invocation {g}");
        let top = g % 6 == 3 || g % 6 == 5;
        if !top {
            assert_eq!(w[2 * g + 1], input[g + 1], "invocation {g}");
        }
    }
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("4 undefined values"), "{stdout}");
    assert!(stdout.contains("OpGroupNonUniformShuffleDown"), "{stdout}");
    // The input file is untouched: --save writes only where asked.
    assert_eq!(words(&inp), input);
}

#[test]
fn exit_status_contract() {
    let dir = tempfile::tempdir().expect("tmp");
    let spv = compile(dir.path());
    let inp = dir.path().join("in.bin");
    let out = dir.path().join("out.bin");
    write_words(&out, &[0; 24]);
    let spv = spv.to_str().unwrap_or_default().to_owned();
    let common = |i: &str| {
        vec![
            spv.clone(),
            "--subgroup-size".into(),
            "4".into(),
            "--workgroups".into(),
            "2".into(),
            format!("--buffer=0={i}"),
            format!("--buffer=1.2={}", out.display()),
        ]
    };
    // Step limit: one invocation spins.
    let mut spin: Vec<u32> = (1..=12).collect();
    spin[3] = 999;
    write_words(&inp, &spin);
    let mut a = common(&inp.display().to_string());
    a.extend(["--step-limit".into(), "5000".into()]);
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("step limit"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Out of bounds: the input buffer is too short.
    write_words(&inp, &[1, 2]);
    let o = run(&common(&inp.display().to_string())
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("OpLoad"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Usage: size 0; IO: a missing buffer file.
    let o = run(&[&spv, "--subgroup-size", "0", "--workgroups", "1"]);
    assert_eq!(o.status.code(), Some(2));
    let missing = dir.path().join("missing.bin");
    let o = run(&common(&missing.display().to_string())
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(o.status.code(), Some(2));
    // Malformed module.
    let bad = dir.path().join("bad.spv");
    std::fs::write(&bad, [1u8, 2, 3, 4, 5, 6, 7, 8]).expect("write");
    let o = run(&[
        bad.to_str().unwrap_or_default(),
        "--subgroup-size",
        "4",
        "--workgroups",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
}
