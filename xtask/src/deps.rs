//! `cargo xtask install-deps`: install the system packages the tests need, when they are missing.
//!
//! On Debian (and derivatives) the packages are checked with `dpkg-query` and installed with
//! `apt-get` (after `apt-get update`), only when running as root; otherwise the exact command is
//! printed and the step fails. Elsewhere the tools are looked up on `PATH` and a missing one fails
//! with the list of what to install.

use std::process::{Command, Stdio};

use anyhow::{bail, Context};

/// The Debian packages the test suite needs, and a file or command each provides (for non-Debian checks).
pub const PACKAGES: &[(&str, &str)] = &[
    ("spirv-tools", "spirv-val"),
    ("glslang-tools", "glslangValidator"),
    ("mesa-vulkan-drivers", "lavapipe (the Vulkan CPU driver)"),
    ("libvulkan1", "the Vulkan loader"),
    ("vulkan-tools", "vulkaninfo"),
    ("gcc", "cc (the C interface test compiles a C program)"),
    (
        "g++",
        "c++ (the C interface test compiles the header as C++; libfuzzer-sys compiles libFuzzer for `cargo xtask fuzz`)",
    ),
    (
        "pkg-config",
        "pkg-config (the install test builds C and C++ programs with the installed .pc file)",
    ),
    (
        "cmake",
        "cmake (the install test builds C and C++ programs with the installed CMake package)",
    ),
    ("make", "make (CMake's default generator, for the install test)"),
    (
        "vulkan-validationlayers",
        "Khronos' validation layer (the Vulkan layer's test runs under it)",
    ),
    ("binutils", "nm (the C interface test lists the shared library's exports)"),
];

/// Installs whatever is missing, or fails saying how to.
pub fn install() -> anyhow::Result<()> {
    let has_dpkg = Command::new("dpkg-query")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !has_dpkg {
        return check_path_only();
    }
    let missing: Vec<&str> = PACKAGES
        .iter()
        .map(|p| p.0)
        .filter(|p| !dpkg_installed(p))
        .collect();
    if missing.is_empty() {
        eprintln!(
            "install-deps: all system packages present ({})",
            names().join(", ")
        );
        return Ok(());
    }
    let list = missing.join(" ");
    if !is_root() {
        bail!(
            "missing system packages: {list}\n\
             install-deps installs them only when run as root; run:\n\
             \n    sudo apt-get update && sudo apt-get install -y --no-install-recommends {list}\n"
        );
    }
    eprintln!("install-deps: installing {list}");
    run(Command::new("apt-get").arg("update"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))?;
    let still: Vec<&str> = missing
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    if !still.is_empty() {
        bail!(
            "apt-get finished but these packages are still missing: {}",
            still.join(" ")
        );
    }
    Ok(())
}

fn names() -> Vec<&'static str> {
    PACKAGES.iter().map(|p| p.0).collect()
}

fn dpkg_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout).contains("install ok installed")
        })
}

/// Whether we run as root (uid 0), asked of `id -u` since the workspace forbids `unsafe` (no libc call).
fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn run(cmd: &mut Command) -> anyhow::Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {shown}"))?;
    if !status.success() {
        bail!("{shown} failed ({status})");
    }
    Ok(())
}

/// Without dpkg: the tools must be on PATH already.
fn check_path_only() -> anyhow::Result<()> {
    let tools = [
        "spirv-as",
        "spirv-val",
        "spirv-dis",
        "spirv-opt",
        "glslangValidator",
        "vulkaninfo",
        "cmake",
        "make",
        "pkg-config",
        "nm",
    ];
    let missing: Vec<&str> = tools
        .iter()
        .copied()
        .filter(|t| Command::new(t).arg("--version").output().is_err())
        .collect();
    if missing.is_empty() {
        eprintln!("install-deps: no dpkg here; all tools found on PATH");
        return Ok(());
    }
    bail!(
        "missing tools: {}; this is not a Debian system, so install-deps cannot install them: \
         install SPIRV-Tools, glslang, the Vulkan loader, vulkan-tools, CMake, pkg-config and binutils (and a Vulkan driver, e.g. Mesa's lavapipe) \
         with your package manager",
        missing.join(", ")
    )
}
