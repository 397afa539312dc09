//! Link settings of the shared library (`libspv_subgroup.so`) on ELF platforms:
//!
//! - a SONAME, `libspv_subgroup.so.<ABI>`, so that programs linked against it record the ABI
//!   version they were built for and keep working when `cargo xtask install` replaces the file
//!   with a compatible one (`libspv_subgroup.so` -> `.so.<ABI>` -> `.so.<version>`);
//! - a linker version script that exports the `spvsg_*` functions and nothing else: without it
//!   every public symbol of the Rust standard library and our dependencies that the linker keeps is
//!   visible (about 3,800), and a program could bind to them by accident.
//!
//! Only the `cdylib` gets these arguments (`cargo:rustc-cdylib-link-arg`); the static library and
//! the rlib are untouched. Apple's linker takes neither flag (it uses install names and
//! exported-symbol lists), so there the library is left as rustc links it.

use std::path::PathBuf;

/// The C ABI version: part of the SONAME. It changes only when the C interface breaks (a
/// function removed or its signature or a struct's layout changed), independent of the crate
/// version; docs/capi.md says what that promises.
const ABI_VERSION: u32 = 0;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    let elf = family.split(',').any(|f| f == "unix") && !matches!(os.as_str(), "macos" | "ios");
    if !elf {
        return;
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libspv_subgroup.so.{ABI_VERSION}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let script = out.join("spv_subgroup.map");
    // Written into OUT_DIR rather than committed next to this file so the exported prefix is
    // stated once, here. `local: *` hides everything the pattern does not match.
    std::fs::write(
        &script,
        "{\n  global:\n    spvsg_*;\n  local:\n    *;\n};\n",
    )
    .expect("OUT_DIR is writable");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        script.display()
    );
}
