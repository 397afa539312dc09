//! What the shared library shows the dynamic linker: exactly the functions the header declares
//! (all named `spvsg_*`, nothing of the Rust standard library or our dependencies, which
//! `build.rs`'s version script hides), and the SONAME `libspv_subgroup.so.0` that installed
//! programs record. Read with `nm -D` and `readelf -d` (binutils).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `libspv_subgroup.so` as cargo built it for this test (next to the test binary, or one up).
fn shared_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let deps = exe.parent().expect("deps/");
    let profile = deps.parent().expect("the profile directory");
    for dir in [deps, profile] {
        let lib = dir.join("libspv_subgroup.so");
        if lib.exists() {
            return lib;
        }
    }
    panic!(
        "libspv_subgroup.so not found next to {}: build it with `cargo build -p spv-subgroup-capi`",
        exe.display()
    );
}

fn tool(program: &str, args: &[&str], lib: &Path) -> String {
    let out = Command::new(program)
        .args(args)
        .arg(lib)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {program} ({e}); install binutils (Debian: apt-get install binutils)"
            )
        });
    assert!(
        out.status.success(),
        "{program} {args:?} {} failed: {}",
        lib.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("the tool prints UTF-8")
}

/// The functions `include/spv_subgroup.h` declares: each declaration's name before `(`.
fn header_functions() -> BTreeSet<String> {
    let header = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("include/spv_subgroup.h"),
    )
    .expect("the committed header");
    header
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with("//") && !l.starts_with('#'))
        .filter_map(|l| {
            let name = l.split('(').next()?.rsplit([' ', '*']).next()?;
            (l.contains('(') && name.starts_with("spvsg_")).then(|| name.to_owned())
        })
        .collect()
}

#[test]
fn the_shared_library_exports_exactly_the_header_functions() {
    let lib = shared_library();
    let listing = tool("nm", &["-D", "--defined-only"], &lib);
    let mut exported = BTreeSet::new();
    let mut foreign = Vec::new();
    for line in listing.lines() {
        // "ADDRESS TYPE NAME", NAME possibly with a @VERSION suffix.
        let mut fields = line.split_whitespace();
        let (Some(_), Some(kind), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let name = name.split('@').next().unwrap_or(name);
        if name.starts_with("spvsg_") && kind == "T" {
            exported.insert(name.to_owned());
        } else {
            foreign.push(line.to_owned());
        }
    }
    assert!(
        foreign.is_empty(),
        "{} exports {} symbols beyond the spvsg_* functions (build.rs's version script should hide them):\n{}",
        lib.display(),
        foreign.len(),
        foreign.join("\n")
    );
    let declared = header_functions();
    assert!(
        declared.len() >= 10,
        "the header parse found only {declared:?}"
    );
    assert_eq!(
        exported, declared,
        "the exported functions and the header's declarations differ"
    );
}

#[test]
fn the_shared_library_has_the_abi_soname() {
    let lib = shared_library();
    let dynamic = tool("readelf", &["-d"], &lib);
    let soname = dynamic
        .lines()
        .find(|l| l.contains("(SONAME)"))
        .unwrap_or_else(|| panic!("{} has no SONAME:\n{dynamic}", lib.display()));
    assert!(
        soname.contains("[libspv_subgroup.so.0]"),
        "unexpected SONAME: {soname}"
    );
}
