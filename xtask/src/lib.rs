//! The parts of `cargo xtask` that tests use too: [`install`], the installed layout, which
//! `crates/spv-subgroup/tests/install.rs` lays out from the dev build's artifacts.
//! The command line and every other subcommand are in `main.rs`.

pub mod install;
