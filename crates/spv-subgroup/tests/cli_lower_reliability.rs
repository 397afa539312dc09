//! Regression tests of `lower` from the reliability probe (issue 12, the lowering half; each
//! test names its problem, `Pnn`, from `shared/repro/reliability/README.md`).
//!
//! Inputs are built at test time from our fixtures (`fixtures/examples`, `fixtures/reliability`)
//! with glslang and spirv-as, as the probe's scripts build them; outputs are checked with
//! spirv-val for the target's environment.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{code, stderr, to_bytes};
use spv_subgroup_tests::tools;

fn fixture(rel: &str) -> PathBuf {
    tools::workspace_root().join(rel)
}

/// Compiles a GLSL fixture with extra glslang flags (`-gV` for NonSemantic debug info).
fn glslang(rel: &str, env: &str, flags: &[&str]) -> Vec<u32> {
    tools::require("glslangValidator");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("out.spv");
    let o = Command::new("glslangValidator")
        .arg("-V")
        .args(flags)
        .args(["--target-env", env, "-o"])
        .arg(&out)
        .arg(fixture(rel))
        .output()
        .expect("glslangValidator runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    tools::read_words(&out)
}

fn spvasm(rel: &str, env: &str) -> Vec<u32> {
    let text = std::fs::read_to_string(fixture(rel)).expect("fixture reads");
    tools::assemble(&text, env).expect("fixture assembles")
}

/// `lower IN -o OUT ARGS...` in `dir`, with the input's words; returns the run and the output's
/// words if one was written.
fn lower(dir: &Path, words: &[u32], args: &[&str]) -> (Output, Option<Vec<u32>>) {
    lower_with(dir, words, args, "")
}

/// As [`lower`], run through `sh` after `prelude` (a `ulimit`).
fn lower_with(
    dir: &Path,
    words: &[u32],
    args: &[&str],
    prelude: &str,
) -> (Output, Option<Vec<u32>>) {
    let input = dir.join("in.spv");
    let output = dir.join("out.spv");
    let _ = std::fs::remove_file(&output);
    std::fs::write(&input, to_bytes(words)).expect("input writes");
    let script = format!("{prelude} exec \"$0\" lower in.spv -o out.spv \"$@\"");
    let o = common::sh_with_args(&script, args, dir);
    let out = output.exists().then(|| tools::read_words(&output));
    (o, out)
}

fn valid(words: &[u32], env: &str) {
    if let Err(e) = tools::spirv_val(words, env) {
        panic!("spirv-val --target-env {env} rejects the output:\n{e}");
    }
}

#[test]
fn p03_local_size_id_modules_are_lowered_and_keep_the_mode() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = glslang("fixtures/examples/partitioned_vote.comp", "vulkan1.3", &[]);
    assert!(tools::disassemble(&input).contains("OpExecutionModeId"));
    for target in ["lavapipe", "nvidia"] {
        let (o, out) = lower(dir.path(), &input, &["--target", target]);
        assert_eq!(code(&o), 0, "--target {target}: {}", stderr(&o));
        let out = out.expect("written");
        valid(&out, "vulkan1.3");
        let text = tools::disassemble(&out);
        assert!(
            text.lines()
                .any(|l| l.contains("OpExecutionModeId") && l.contains("LocalSizeId")),
            "{target}: {text}"
        );
    }
}

#[test]
fn p03_nonsemantic_debug_info_is_lowered_and_kept_in_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = glslang(
        "fixtures/examples/partitioned_vote.comp",
        "vulkan1.1",
        &["-gV"],
    );
    let debug_globals = |words: &[u32]| -> Vec<String> {
        tools::disassemble(words)
            .lines()
            // The debug-info ext-insts other than the per-instruction scopes and lines.
            .filter(|l| {
                l.contains(" Debug")
                    && !["DebugScope", "DebugLine", "DebugNoScope", "DebugNoLine"]
                        .iter()
                        .any(|s| l.contains(s))
            })
            .map(str::to_owned)
            .collect()
    };
    let before = debug_globals(&input);
    assert!(
        before.iter().any(|l| l.contains("DebugCompilationUnit")),
        "glslang -gV emits NonSemantic debug info"
    );
    for target in ["vulkan1.1", "lavapipe"] {
        let (o, out) = lower(dir.path(), &input, &["--target", target]);
        assert_eq!(code(&o), 0, "--target {target}: {}", stderr(&o));
        let out = out.expect("written");
        valid(&out, "vulkan1.1");
        assert_eq!(debug_globals(&out), before, "{target}: debug info changed");
    }
    // naga 30's front end reads no `OpLine` among the types, where glslang -gV puts them: the
    // input's, so `--target naga` refuses it (exit 1), naming the instruction (SG0704, which
    // `validate --target naga` reports too), writing nothing.
    let (o, out) = lower(dir.path(), &input, &["--target", "naga"]);
    assert_eq!(code(&o), 1, "--target naga: {}", stderr(&o));
    assert!(
        stderr(&o).contains("`OpLine` outside a function: target `naga` does not accept it"),
        "--target naga: {}",
        stderr(&o)
    );
    assert!(out.is_none(), "--target naga: nothing written");
}

#[test]
fn p06_p07_huge_id_bounds_are_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = glslang("fixtures/examples/partitioned_vote.comp", "vulkan1.1", &[]);
    for bound in [0xFFFF_FFF0u32, 0xFFFF_FFFC, 0xFFFF_FFFF, 0x1000_0000] {
        let mut words = input.clone();
        words[3] = bound;
        // 1 GB of address space: the old `vec![0; bound]` aborted here.
        let (o, out) = lower_with(dir.path(), &words, &[], "ulimit -v 1000000;");
        assert_eq!(code(&o), 1, "bound {bound:#x}: {}", stderr(&o));
        assert!(stderr(&o).contains("id bound"), "{}", stderr(&o));
        assert!(stderr(&o).contains("4194303"), "{}", stderr(&o));
        assert!(out.is_none(), "nothing is written");
    }
}

/// P06's leftover (issue 21): `validate` exited 0 on the bound `lower` refuses and spirv-val
/// rejects; now an error (SG0005) at the header's word 3, and the limit itself stays valid.
#[test]
fn p06_validate_reports_an_id_bound_past_the_limit_as_lower_refuses_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = glslang("fixtures/examples/partitioned_vote.comp", "vulkan1.1", &[]);
    for (bound, over) in [
        (0x40_0000u32, true),
        (0xFFFF_FFFF, true),
        (0x3F_FFFF, false),
    ] {
        let mut words = input.clone();
        words[3] = bound;
        std::fs::write(dir.path().join("in.spv"), to_bytes(&words)).expect("input writes");
        let o = common::run(&["validate", "in.spv"], dir.path());
        let out = common::text(&o.stdout);
        assert_eq!(
            tools::spirv_val(&words, "vulkan1.1").is_err(),
            over,
            "spirv-val's verdict on bound {bound:#x}"
        );
        if over {
            assert_eq!(code(&o), 1, "bound {bound:#x}: {}", common::show(&o));
            assert!(
                out.contains("error[SG0005]: the id bound is")
                    && out.contains("in.spv:word 3 (header)"),
                "{out}"
            );
            let (lowered, _) = lower(dir.path(), &words, &[]);
            assert_eq!(code(&lowered), 1, "lower refuses it too");
        } else {
            assert!(!out.contains("SG0005"), "bound {bound:#x}: {out}");
        }
    }
}

#[test]
fn p08_output_past_the_id_bound_limit_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut words = glslang("fixtures/examples/partitioned_vote.comp", "vulkan1.1", &[]);
    words[3] = 0x3F_FFFF;
    valid(&words, "vulkan1.1");
    let (o, out) = lower(dir.path(), &words, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("would need an id bound"),
        "{}",
        stderr(&o)
    );
    assert!(out.is_none(), "nothing is written");
}

#[test]
fn p02_function_shared_by_vertex_and_fragment_gets_flat_only_in_fragment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = spvasm(
        "fixtures/reliability/vertex_fragment_shared.spvasm",
        "vulkan1.1",
    );
    valid(&input, "vulkan1.1");
    for (target, env) in [("vulkan1.1", "vulkan1.1"), ("lavapipe", "vulkan1.3")] {
        let (o, out) = lower(dir.path(), &input, &["--target", target]);
        assert_eq!(code(&o), 0, "--target {target}: {}", stderr(&o));
        valid(&out.expect("written"), env);
    }
    // The shared function's rewrite reads the lane id, which naga's validator refuses in a
    // vertex shader: `--target naga` refuses the module (exit 1) rather than write what naga
    // rejects.
    let (o, out) = lower(dir.path(), &input, &["--target", "naga"]);
    assert_eq!(code(&o), 1, "--target naga: {}", stderr(&o));
    assert!(
        stderr(&o).contains("a vertex entry point reaches"),
        "--target naga: {}",
        stderr(&o)
    );
    assert!(out.is_none(), "--target naga: nothing written");
}

#[test]
fn p04_nothing_to_lower_is_still_judged_against_the_target() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = glslang("fixtures/reliability/core_vote.comp", "vulkan1.1", &[]);
    // Core vote ops are nothing to rewrite, but khr-ballot has no core subgroup operations.
    let (o, out) = lower(dir.path(), &input, &["--target", "khr-ballot"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    // The library refuses the version (or our validator names the core vote ops): either way
    // the message names what the target lacks.
    assert!(
        err.contains("SPIR-V 1.3") || err.contains("GroupNonUniformVote"),
        "{err}"
    );
    assert!(!err.contains("internal error"), "{err}");
    assert!(out.is_none(), "nothing is written");
    // The same module for a target that runs it is still written unchanged.
    let (o, out) = lower(dir.path(), &input, &["--target", "vulkan1.1"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(out.as_deref(), Some(&input[..]));
}

/// Our validator's findings on `words` for `--target T`, as `validate` prints them.
fn validate_with_target(dir: &Path, words: &[u32], target: &str) -> String {
    let file = dir.join("check.spv");
    std::fs::write(&file, to_bytes(words)).expect("module writes");
    let o = common::run(&["validate", "check.spv", "--target", target], dir);
    format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o))
}

#[test]
fn p05_exit_3_only_for_errors_the_input_did_not_have() {
    let dir = tempfile::tempdir().expect("temp dir");
    // An input invalid on its own whose lowered form breaks a different rule: a partitioned
    // `UMin` on a signed type (SG0305; found by the `lower` fuzz target, docs/fuzzing.md) becomes
    // a core `UMin` on a signed type (SG0603). Counting errors per rule alone would call SG0603
    // new and blame the lowering (exit 3); the input is to blame (exit 1).
    let input = spvasm(
        "fixtures/validate/spvasm/partitioned_umin_signed.spvasm",
        "vulkan1.1",
    );
    let (o, out) = lower(
        dir.path(),
        &input,
        &["--target", "vulkan1.1", "--no-verify"],
    );
    assert_eq!(
        code(&o),
        0,
        "the partitioned op is rewritten: {}",
        stderr(&o)
    );
    // The case reaches the blame logic: the output breaks a rule the input does not.
    let lowered = validate_with_target(dir.path(), &out.expect("written"), "vulkan1.1");
    assert!(lowered.contains("SG0603"), "{lowered}");
    assert!(!lowered.contains("SG0305"), "{lowered}");
    let original = validate_with_target(dir.path(), &input, "vulkan1.1");
    assert!(original.contains("SG0305"), "{original}");
    assert!(!original.contains("SG0603"), "{original}");
    let (o, out) = lower(dir.path(), &input, &["--target", "vulkan1.1"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(!err.contains("internal error"), "{err}");
    assert!(
        err.contains("error[SG0305]"),
        "names the input's error: {err}"
    );
    assert!(!err.contains("SG0603"), "not the output's: {err}");
    assert!(err.contains("word "), "names the word offset: {err}");
    assert!(out.is_none(), "nothing is written");
    // The probe's own case: clustered add + partition for lavapipe (no clustered ops). The
    // library now rewrites or refuses such constructs itself (so it no longer reaches the blame
    // logic); whichever it does, a valid input never gets exit 3, and exit 0 means a valid output.
    let input = glslang(
        "fixtures/reliability/clustered_partition.comp",
        "vulkan1.1",
        &[],
    );
    valid(&input, "vulkan1.1");
    let (o, out) = lower(dir.path(), &input, &["--target", "lavapipe"]);
    let err = stderr(&o);
    match code(&o) {
        0 => valid(&out.expect("written"), "vulkan1.3"),
        1 => {
            assert!(err.contains("word "), "names the word offset: {err}");
            assert!(out.is_none(), "nothing is written");
        }
        c => panic!("exit {c} on a valid input: {err}"),
    }
    // An input error the rewrite carries into the output (an undefined id beside a KHR vote to
    // rewrite) is the input's fault: exit 1 naming the input's instruction, not exit 3.
    let input = spvasm("fixtures/validate/spvasm/undefined_id.spvasm", "vulkan1.1");
    let (o, out) = lower(dir.path(), &input, &["--target", "lavapipe", "--no-verify"]);
    assert_eq!(
        code(&o),
        0,
        "the module has something to rewrite: {}",
        stderr(&o)
    );
    assert!(out.is_some());
    let (o, out) = lower(dir.path(), &input, &["--target", "lavapipe"]);
    let err = stderr(&o);
    assert_eq!(code(&o), 1, "{err}");
    assert!(!err.contains("internal error"), "{err}");
    assert!(err.contains("is not defined"), "{err}");
    assert!(err.contains("word "), "names the word offset: {err}");
    assert!(out.is_none(), "nothing is written");
}

#[test]
fn p09_opencl_kernels_are_refused_for_vulkan_targets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = spvasm("fixtures/reliability/opencl_kernel_vote.spvasm", "spv1.0");
    for target in ["vulkan1.1", "lavapipe", "naga"] {
        let (o, out) = lower(dir.path(), &input, &["--target", target]);
        let err = stderr(&o);
        assert_eq!(code(&o), 1, "--target {target}: {err}");
        assert!(err.contains("OpenCL"), "{err}");
        assert!(err.contains("at word 5"), "{err}");
        assert!(out.is_none(), "nothing is written");
    }
}

/// The words of every `OpSource`, `OpSourceContinued` and `OpString` of a module, in order.
fn debug_strings(words: &[u32]) -> Vec<Vec<u32>> {
    let mut found = Vec::new();
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        assert!(count > 0 && at + count <= words.len(), "malformed at {at}");
        if matches!(first & 0xffff, 2 | 3 | 7) {
            found.push(words[at..at + count].to_vec());
        }
        at += count;
    }
    found
}

/// The probe's Q06: a `glslangValidator -g` module whose `OpSource` text (a Latin-1 comment)
/// and `OpString` file name (`Gr\xf6\xdfe.comp`) are not UTF-8 was "not a module that can be
/// lowered" (rspirv's parser refuses such strings), although spirv-val and `validate` take it.
/// Now `lower` lowers its 2 ops, plainly and with the size emulation, and the output keeps the
/// input's debug strings byte for byte; `validate` shows the file name lossily, and its SARIF
/// gives the file's URI from the name's bytes.
#[test]
fn q06_debug_strings_that_are_not_utf8_are_kept_as_bytes() {
    use std::os::unix::ffi::OsStrExt;
    tools::require("glslangValidator");
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    let name = std::ffi::OsStr::from_bytes(b"Gr\xf6\xdfe.comp");
    let source: &[u8] = b"#version 450\n\
        // Gr\xf6\xdfe: lanes with equal keys form one subset (a Latin-1 comment).\n\
        #extension GL_NV_shader_subgroup_partitioned : require\n\
        layout(local_size_x = 64) in;\n\
        layout(std430, binding = 0) buffer B { uint v[]; };\n\
        void main() {\n\
        \x20   uint i = gl_GlobalInvocationID.x;\n\
        \x20   v[i] = subgroupPartitionedAddNV(v[i], subgroupPartitionNV(v[i] & 7u));\n\
        }\n";
    std::fs::write(d.join(name), source).expect("source writes");
    let o = Command::new("glslangValidator")
        .args(["-V", "-g", "--target-env", "vulkan1.1", "-o", "g.spv"])
        .arg(name)
        .current_dir(d)
        .output()
        .expect("glslangValidator runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let input = tools::read_words(&d.join("g.spv"));
    let strings = debug_strings(&input);
    let bytes_of = |w: &[u32]| w.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    // (glslang 12 writes the bytes after a byte of 128 or more as 0xff, still not UTF-8.)
    for op in [3, 7] {
        assert!(
            strings
                .iter()
                .any(|s| s[0] & 0xffff == op && bytes_of(s).contains(&0xf6)),
            "glslang wrote no Op {op} with the Latin-1 bytes: {strings:x?}"
        );
    }
    for args in [
        &["--target", "lavapipe"][..],
        &["--emulate-subgroup-size", "4"][..],
    ] {
        let (o, out) = lower(d, &input, args);
        let err = stderr(&o);
        assert_eq!(code(&o), 0, "lower {args:?}: {err}");
        let out = out.expect("written");
        if args[0] == "--target" {
            assert!(err.contains("lowered 2 ops"), "{err}");
            let o = common::run(&["validate", "out.spv", "--target", "lavapipe"], d);
            assert_eq!(code(&o), 0, "validate of the output: {}", common::show(&o));
        }
        assert_eq!(debug_strings(&out), strings, "lower {args:?}");
        valid(&out, "vulkan1.1");
    }
    // An entry point's name that is not UTF-8 is kept too, the built-ins the lowering adds to
    // its interface after it.
    let mut renamed = to_bytes(&input);
    let at = renamed
        .windows(5)
        .position(|w| w == b"main\0")
        .expect("the entry point's name");
    renamed[at + 1] = 0xf6;
    let renamed: Vec<u32> = renamed
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let (o, out) = lower(d, &renamed, &["--target", "lavapipe"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = out.expect("written");
    valid(&out, "vulkan1.1");
    assert!(
        to_bytes(&out).windows(5).any(|w| w == b"m\xf6in\0"),
        "the entry point's name changed"
    );
    let found = validate_with_target(d, &input, "lavapipe");
    assert!(found.contains("Gr\u{fffd}"), "{found}");
    assert!(found.contains(".comp:8 ("), "{found}");
    // SARIF names the source file by its bytes, percent-encoded (not by U+FFFD's).
    let o = common::run(
        &[
            "validate",
            "check.spv",
            "--target",
            "lavapipe",
            "--format",
            "sarif",
        ],
        d,
    );
    let sarif = String::from_utf8_lossy(&o.stdout);
    assert!(sarif.contains("\"uri\": \"Gr%F6"), "{sarif}");
}
