//! The C interface from C: `examples/lower_and_validate.c` is compiled with the system `cc`
//! against the static and against the shared library, lowers the README example for Vulkan 1.1,
//! and its output passes `spirv-val`.

use std::path::{Path, PathBuf};
use std::process::Command;

use spv_subgroup_tests::tools;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory cargo put this crate's libraries in (the test binary lives in its `deps/`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let deps = exe.parent().expect("deps/");
    let profile = deps.parent().expect("the profile directory");
    // `deps/` first: cargo built that copy for this run; the profile directory may hold an
    // older one from another build (it is refreshed only when the library is built on its own).
    for dir in [deps, profile] {
        if dir.join("libspv_subgroup.a").exists() && dir.join("libspv_subgroup.so").exists() {
            return dir.to_owned();
        }
    }
    panic!(
        "libspv_subgroup.a/.so not found next to {}: build the crate with `cargo build -p spv-subgroup-capi`",
        exe.display()
    );
}

fn run(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run {shown} ({e}); install gcc (Debian: apt-get install gcc)")
    });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{text}",
        out.status
    );
    text
}

fn example_module(dir: &Path) -> PathBuf {
    let src = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&src, "vulkan1.1").expect("glslang compiles the example");
    let path = dir.join("in.spv");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).unwrap();
    path
}

fn build_and_run(linking: &[&str], name: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let libs = library_dir();
    let exe = tmp.path().join(name);
    let mut cc = Command::new("cc");
    cc.args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(crate_dir().join("examples/lower_and_validate.c"))
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-L")
        .arg(&libs)
        .args(linking);
    run(&mut cc);
    let input = example_module(tmp.path());
    let output = tmp.path().join("out.spv");
    // The program records the library's SONAME, libspv_subgroup.so.0, which cargo does not
    // create (`cargo xtask install` does): link it to the built file, as an install would.
    let soname_dir = tmp.path().join("lib");
    std::fs::create_dir(&soname_dir).unwrap();
    std::os::unix::fs::symlink(
        libs.join("libspv_subgroup.so"),
        soname_dir.join("libspv_subgroup.so.0"),
    )
    .unwrap();
    let text = run(Command::new(&exe)
        .arg(&input)
        .arg(&output)
        .env("LD_LIBRARY_PATH", &soname_dir));
    assert!(
        text.contains("ok: spv-subgroup"),
        "the program did not finish:\n{text}"
    );
    assert!(
        text.contains("error[SG0701]"),
        "the input's target findings are printed:\n{text}"
    );
    let lowered = tools::read_words(&output);
    tools::spirv_val(&lowered, "vulkan1.1")
        .unwrap_or_else(|e| panic!("spirv-val rejects what the C program wrote:\n{e}"));
}

#[test]
fn c_program_with_the_static_library() {
    // The system libraries a Rust static library needs on Linux (`rustc --print native-static-libs`).
    build_and_run(
        &[
            "-l:libspv_subgroup.a",
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ],
        "static",
    );
}

#[test]
fn c_program_with_the_shared_library() {
    build_and_run(&["-lspv_subgroup"], "shared");
}
