//! The committed header `include/spv_subgroup.h` is what cbindgen makes of `src/lib.rs` today
//! (regenerate it with `cargo xtask codegen`), and it compiles as C and as C++.

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The header cbindgen generates from the sources, with the crate's `cbindgen.toml`.
fn generated() -> String {
    let dir = crate_dir();
    let config =
        cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("the header is UTF-8")
}

#[test]
fn committed_header_is_current() {
    let path = crate_dir().join("include/spv_subgroup.h");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated(),
        "{} is out of date with src/lib.rs: run `cargo xtask codegen` and commit the result",
        path.display()
    );
}

fn compile_header(compiler: &str, lang: &str, extra: &[&str]) {
    let header = crate_dir().join("include/spv_subgroup.h");
    let out = Command::new(compiler)
        .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", lang])
        .args(extra)
        .arg(&header)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `{compiler}` ({e}): install a C/C++ compiler (Debian: apt-get install gcc g++)")
        });
    assert!(
        out.status.success(),
        "{compiler} -x {lang} rejects {}:\n{}",
        Path::new(&header).display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn header_compiles_as_c_and_cpp() {
    compile_header("cc", "c", &["-std=c99", "-pedantic"]);
    compile_header("c++", "c++", &["-std=c++11", "-pedantic"]);
}
