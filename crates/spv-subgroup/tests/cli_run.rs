//! Integration tests of `spv-subgroup run`: buffers in and out, the exit-status contract
//! (0 completed, 1 step limit / out of bounds / malformed, 2 usage or IO, 4 results depend on the
//! subgroup size), `--report-undefined`, several sizes and `--report-size-dependence`.

mod common;

use std::path::Path;
use std::process::Output;

use common::{code, stderr, to_bytes};
use spv_subgroup_tests::tools;

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
    std::fs::write(&spv, to_bytes(&words)).expect("write");
    spv
}

/// `spv-subgroup run ARGS` (paths in `args` are absolute).
fn run(args: &[&str]) -> Output {
    common::run(&[&["run"], args].concat(), Path::new("."))
}

fn words(path: &Path) -> Vec<u32> {
    common::words(&std::fs::read(path).expect("saved"))
}

fn write_words(path: &Path, w: &[u32]) {
    std::fs::write(path, to_bytes(w)).expect("write");
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
fn threads_give_the_same_buffers_undefined_values_and_errors() {
    let dir = tempfile::tempdir().expect("tmp");
    let spv = compile(dir.path());
    let spv = spv.to_str().unwrap_or_default();
    // 40 workgroups of 6; one invocation of workgroup 20 spins into the step limit in `spin`.
    let input: Vec<u32> = (1..=240).collect();
    let mut spin = input.clone();
    spin[123] = 999;
    let (inp, spin_inp) = (dir.path().join("in.bin"), dir.path().join("spin.bin"));
    write_words(&inp, &input);
    write_words(&spin_inp, &spin);
    write_words(&dir.path().join("out.bin"), &[0; 480]);
    let at = |threads: &str, input: &Path| {
        let saved = dir.path().join(format!("saved-{threads}.bin"));
        let o = run(&[
            spv,
            "--subgroup-size",
            "4",
            "--workgroups",
            "40",
            &format!("--buffer=0={}", input.display()),
            &format!("--buffer=1.2={}", dir.path().join("out.bin").display()),
            &format!("--save=1.2={}", saved.display()),
            "--report-undefined",
            "--step-limit",
            "20000",
            "--threads",
            threads,
        ]);
        let saved = std::fs::read(&saved).ok();
        (
            code(&o),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr(&o),
            saved,
        )
    };
    let one = at("1", &inp);
    assert_eq!(one.0, 0, "{}", one.2);
    assert!(one.1.contains("80 undefined values"), "{}", one.1);
    for threads in ["2", "3", "8"] {
        assert_eq!(at(threads, &inp), one, "--threads {threads}");
    }
    let one = at("1", &spin_inp);
    assert_eq!(one.0, 1);
    assert!(one.2.contains("step limit"), "{}", one.2);
    for threads in ["2", "3", "8"] {
        assert_eq!(
            at(threads, &spin_inp),
            one,
            "--threads {threads}, step limit"
        );
    }
}

#[test]
fn exit_status_contract() {
    let dir = tempfile::tempdir().expect("tmp");
    let spv = compile(dir.path());
    let inp = dir.path().join("in.bin");
    let out = dir.path().join("out.bin");
    write_words(&out, &[0; 24]);
    let spv = spv.to_str().unwrap_or_default().to_owned();
    let args_for = |i: &str| {
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
    let mut a = args_for(&inp.display().to_string());
    a.extend(["--step-limit".into(), "5000".into()]);
    let o = run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("step limit"), "{}", stderr(&o));
    // Out of bounds: the input buffer is too short.
    write_words(&inp, &[1, 2]);
    let o = run(&args_for(&inp.display().to_string())
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(code(&o), 1);
    assert!(stderr(&o).contains("OpLoad"), "{}", stderr(&o));
    // Usage: size 0; IO: a missing buffer file.
    let o = run(&[&spv, "--subgroup-size", "0", "--workgroups", "1"]);
    assert_eq!(code(&o), 2);
    let missing = dir.path().join("missing.bin");
    let o = run(&args_for(&missing.display().to_string())
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    assert_eq!(code(&o), 2);
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
    assert_eq!(code(&o), 1);
}

/// Sums each block of 32 values assuming a subgroup of 32 lanes (the docs/cli.md example).
const ASSUMES_32: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer In { uint vin[]; };
layout(set = 0, binding = 1) buffer Out { uint sums[]; };
void main() {
    uint s = subgroupAdd(vin[gl_GlobalInvocationID.x]);
    if (gl_SubgroupInvocationID == 0u) {
        sums[gl_GlobalInvocationID.x / 32u] = s;
    }
}
"#;

/// The same sums at any size: one atomicAdd per subgroup.
const PORTABLE: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) buffer In { uint vin[]; };
layout(set = 0, binding = 1) buffer Out { uint sums[]; };
void main() {
    uint s = subgroupAdd(vin[gl_GlobalInvocationID.x]);
    if (subgroupElect()) {
        atomicAdd(sums[gl_WorkGroupID.x], s);
    }
}
"#;

/// Equal at every size except the top lane of each subgroup, which reads an undefined value.
const UNDEFINED_ONLY: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_shuffle_relative : require
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer In { uint vin[]; };
layout(set = 0, binding = 1) buffer Out { uint o[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    uint d = subgroupShuffleDown(vin[g], 1u);
    o[g] = gl_SubgroupInvocationID == gl_SubgroupSize - 1u ? d : 7u;
}
"#;

fn compile_source(dir: &Path, name: &str, glsl: &str) -> String {
    let src = dir.join(format!("{name}.comp"));
    std::fs::write(&src, glsl).expect("write");
    let words = tools::compile_glsl(&src, "vulkan1.1").expect("compiles");
    let spv = dir.join(format!("{name}.spv"));
    std::fs::write(&spv, to_bytes(&words)).expect("write");
    spv.display().to_string()
}

#[test]
fn several_sizes_find_the_size_dependence_of_a_shader_that_assumes_32_lanes() {
    let dir = tempfile::tempdir().expect("tmp");
    let (inp, out) = (dir.path().join("in.bin"), dir.path().join("out.bin"));
    write_words(&inp, &(1..=128).collect::<Vec<u32>>());
    write_words(&out, &[0; 4]);
    let bufs = [
        format!("--buffer=0={}", inp.display()),
        format!("--buffer=1={}", out.display()),
    ];
    let assumes = compile_source(dir.path(), "assumes32", ASSUMES_32);
    let o = run(&[
        &assumes,
        "--subgroup-size",
        "all",
        "--workgroups",
        "2",
        &bufs[0],
        &bufs[1],
        "--report-size-dependence",
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 4, "{stdout}{}", stderr(&o));
    assert!(
        stdout.contains("buffer 0.0: equal at subgroup sizes 1, 2, 4, 8, 16, 32, 64, 128"),
        "{stdout}"
    );
    // sums[0] is 1 + ... + 32 = 528 at 32 lanes; at 64 the first subgroup sums 1 to 64.
    assert!(
        stdout.contains("buffer 0.1: depends on the subgroup size: first difference at byte offset 0: size 1: 0x00000020 (32)"),
        "{stdout}"
    );
    assert!(stdout.contains("size 32: 0x00000210 (528)"), "{stdout}");
    assert!(stdout.contains("size 64: 0x00000820 (2080)"), "{stdout}");
    assert!(
        stdout.contains("size-dependent: reads BuiltIn SubgroupLocalInvocationId at OpLoad"),
        "{stdout}"
    );
    assert!(
        stdout.contains("size-dependent: subgroup operation OpGroupNonUniformIAdd"),
        "{stdout}"
    );
    // The same sums computed portably: equal at every size, exit 0.
    let portable = compile_source(dir.path(), "portable", PORTABLE);
    let o = run(&[
        &portable,
        "--subgroup-size",
        "8,16,32,64,128",
        "--workgroups",
        "4",
        &bufs[0],
        &bufs[1],
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{stdout}{}", stderr(&o));
    assert!(
        stdout.contains("buffer 0.1: equal at subgroup sizes 8, 16, 32, 64, 128"),
        "{stdout}"
    );
    // Differences that only undefined values cause are reported as such, not as size dependence.
    let undefined = compile_source(dir.path(), "undefined", UNDEFINED_ONLY);
    write_words(&out, &[0; 64]);
    let o = run(&[
        &undefined,
        "--subgroup-size",
        "8,16,32",
        "--workgroups",
        "1",
        &bufs[0],
        &bufs[1],
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(code(&o), 0, "{stdout}{}", stderr(&o));
    assert!(
        stdout.contains("buffer 0.1: equal at subgroup sizes 8, 16, 32"),
        "{stdout}"
    );
    assert!(
        stdout.contains("words depend on undefined values (first at byte offset 28)"),
        "{stdout}"
    );
    // Usage errors: --save with several sizes, a repeated size, a size out of range.
    let save = format!("--save=1={}", dir.path().join("s.bin").display());
    for sizes in ["8,16", "8,8", "0,4", "256", "some"] {
        let mut args = vec![
            portable.as_str(),
            "--subgroup-size",
            sizes,
            "--workgroups",
            "1",
            &bufs[0],
            &bufs[1],
        ];
        if sizes == "8,16" {
            args.push(&save);
        }
        let o = run(&args);
        assert_eq!(code(&o), 2, "{sizes}: {}", stderr(&o));
    }
}
