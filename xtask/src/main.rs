//! `cargo xtask`: the project's automation, one subcommand per module.
//!
//! - `test`: install missing system tools, lint, then run the whole test suite and a short fuzz
//!   run of every target (what CI runs);
//! - `install-deps`: only the install step;
//! - `install --prefix P [--artifacts DIR]`: build the `dist` profile and lay out the binary, the C
//!   library, pkg-config and CMake files, man pages and completions (`xtask::install`);
//! - `codegen [--check]`: regenerate (or check) the generated files (`codegen.rs`);
//! - `example`: the README's main job: compile `fixtures/examples/partitioned_vote.comp`, lower it, check it;
//! - `bench`: generate large modules and time ours against spirv-val/spirv-opt; `bench tree`: a
//!   tree of 2,000 small shaders against one spirv-val process per file;
//! - `gpu`: run the conformance suite natively and lowered on the GPU machine;
//! - `fuzz-exec --minutes N`: random programs, native against lowered, in the simulator;
//! - `fuzz`: coverage-guided fuzzing of the `fuzz/` targets (libFuzzer, stable toolchain).

mod bench;
mod codegen;
mod deps;
mod example;
mod fuzz;
mod fuzz_exec;
mod fuzz_merge;
mod gpu;
mod process;
mod test;

use std::path::PathBuf;

const USAGE: &str = "\
usage: cargo xtask <command> [args]

commands:
  test [--no-lint] [--no-fuzz | --fuzz-seconds N] [ARGS]
                            install missing tools, lint, run every test (ARGS go to the test runner),
                            and every fuzz target for 30 s (N s) beside the tests
  install-deps              install the Debian packages the tests need (as root), or say how
  install --prefix P [--artifacts DIR]
                            build (profile dist) and install the binary, C library, pkg-config and
                            CMake files, man pages and completions under $DESTDIR/P (docs/install.md);
                            --artifacts: install what is already built in DIR (e.g. target/debug)
  codegen [--check]         write the generated files: docs/rules.md, the opcode grammar, the C header (--check: fail if out of date)
  example                   compile, lower and check fixtures/examples/partitioned_vote.comp
  bench [ARGS]              benchmark validation and lowering of large modules
  bench tree [ARGS]         time validate and lower of a tree of 2,000 shaders against spirv-val per file
  bench sim [ARGS]          time the simulator against lavapipe on three kernels of 65,536 invocations
  bench layer [ARGS]        the Vulkan layer's share of pipeline creation (lowering, cache hit)
  gpu [ARGS]                run the conformance suite on a GPU
  fuzz-exec --minutes N     random programs, native against lowered, in the simulator (nice -n 19)
  fuzz [--minutes N] [--target NAME]... [--merge] [--quick]
                            build the fuzz targets and run them (docs/fuzzing.md)";

fn main() {
    if std::env::var_os(fuzz::WRAPPER_ENV).is_some() {
        // Run by cargo as rustc's wrapper for `cargo xtask fuzz --quick`.
        let args: Vec<String> = std::env::args().skip(1).collect();
        std::process::exit(fuzz::wrap_rustc(&args));
    }
    if let Err(e) = run() {
        // `{:#}` prints the `Caused by` chain on one line, without a backtrace.
        eprintln!("xtask: error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    match args.first().map(String::as_str) {
        Some("test") => test::run(rest),
        Some("install-deps") => deps::install(),
        Some("install") => install(rest),
        Some("codegen") => codegen::run(rest),
        Some("example") => example::run(rest),
        Some("bench") => bench::run(rest),
        Some("gpu") => gpu::run(rest),
        Some("fuzz-exec") => fuzz_exec::run(rest),
        Some("fuzz") => fuzz::run(rest),
        Some("help" | "--help" | "-h") => {
            eprintln!("{USAGE}");
            Ok(())
        }
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2)
        }
    }
}

/// The workspace root (the parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

/// `cargo xtask install --prefix P [--artifacts DIR]`, honouring `DESTDIR`.
fn install(args: &[String]) -> anyhow::Result<()> {
    use anyhow::{bail, Context};
    use xtask::install::{build_dist, Artifacts, Install};
    let mut prefix = None;
    let mut artifacts = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let value = |args: &mut std::slice::Iter<'_, String>| {
            args.next()
                .map(PathBuf::from)
                .with_context(|| format!("{arg} needs a directory"))
        };
        match arg.as_str() {
            "--prefix" => prefix = Some(value(&mut args)?),
            "--artifacts" => artifacts = Some(value(&mut args)?),
            other => bail!("unknown argument {other}\n\n{USAGE}"),
        }
    }
    let prefix = prefix.context("install needs --prefix P (e.g. --prefix /usr/local)")?;
    let root = workspace_root();
    let artifacts = match artifacts {
        Some(dir) => Artifacts::in_dir(&root, &dir)?,
        None => build_dist(&root)?,
    };
    let destdir = std::env::var_os("DESTDIR").map(PathBuf::from);
    let install = Install::new(artifacts, &prefix, destdir)?;
    xtask::install::install(&install)?;
    eprintln!(
        "install: done; {} (docs/install.md)",
        if install.destdir.is_some() {
            "staged under DESTDIR"
        } else {
            "add PREFIX/bin to PATH, PREFIX/lib/pkgconfig to PKG_CONFIG_PATH and PREFIX to CMAKE_PREFIX_PATH if they are not there"
        }
    );
    Ok(())
}
