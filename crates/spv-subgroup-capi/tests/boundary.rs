//! What C may pass that the Rust side must not trust (issue 21, N7 and N11): `tests/boundary.c`,
//! compiled with the system `cc` against the shared library, passes result codes and float
//! partition modes the enums do not name and word counts no buffer has. Every call returns a
//! code (`unknown result code`, `SPVSG_ERROR_INVALID_ARGUMENT`, `SPVSG_ERROR_OUT_OF_MEMORY`),
//! the program does not crash, and nothing reaches its stderr (no panic message).

use std::path::PathBuf;
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory cargo put this crate's shared library in (the test binary lives in its `deps/`).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let deps = exe.parent().expect("deps/");
    let profile = deps.parent().expect("the profile directory");
    // `deps/` first: cargo built that copy for this run; the profile directory may hold an
    // older one from another build (it is refreshed only when the library is built on its own).
    let found = [deps, profile]
        .into_iter()
        .find(|dir| dir.join("libspv_subgroup.so").exists())
        .unwrap_or_else(|| {
            panic!(
                "libspv_subgroup.so not found next to {}: build the crate with `cargo build -p spv-subgroup-capi`",
                exe.display()
            )
        })
        .to_owned();
    found
}

#[test]
fn values_the_enums_do_not_name_and_impossible_word_counts_get_codes_and_print_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let libs = library_dir();
    let exe = tmp.path().join("boundary");
    let compiled = Command::new("cc")
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(crate_dir().join("tests/boundary.c"))
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg("-L")
        .arg(&libs)
        .arg("-lspv_subgroup")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run cc ({e}); install gcc (Debian: apt-get install gcc)")
        });
    assert!(
        compiled.status.success(),
        "cc failed:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    // The program records the library's SONAME, libspv_subgroup.so.0, which cargo does not
    // create (`cargo xtask install` does): link it to the built file, as an install would.
    let soname_dir = tmp.path().join("lib");
    std::fs::create_dir(&soname_dir).unwrap();
    std::os::unix::fs::symlink(
        libs.join("libspv_subgroup.so"),
        soname_dir.join("libspv_subgroup.so.0"),
    )
    .unwrap();
    let out = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &soname_dir)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("the program runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success() && stdout.contains("done"),
        "the program failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        stderr.is_empty(),
        "the library printed on the host's stderr:\n{stderr}"
    );
}
