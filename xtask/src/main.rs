//! `cargo xtask`: the project's automation, one subcommand per module.
//!
//! - `test`: install missing system tools, then run the whole test suite (what CI runs);
//! - `install-deps`: only the install step;
//! - `codegen`: regenerate `docs/rules.md` from the rule table;
//! - `bench`: generate large modules and time ours against spirv-val/spirv-opt;
//! - `gpu`: run the conformance suite natively and lowered on the GPU machine.

mod bench;
mod codegen;
mod deps;
mod gpu;
mod test;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    match args.first().map(String::as_str) {
        Some("test") => test::run(rest),
        Some("install-deps") => deps::install(),
        Some("codegen") => codegen::run(rest),
        Some("bench") => bench::run(rest),
        Some("gpu") => gpu::run(rest),
        _ => {
            eprintln!("usage: cargo xtask <test|install-deps|codegen|bench|gpu> [args]");
            std::process::exit(2)
        }
    }
}
