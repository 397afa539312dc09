//! Fuzz targets for spv-subgroup and the properties they check.
//!
//! Each function in [`targets`] takes the fuzzer's bytes and panics when a property fails (a
//! panic is what libFuzzer records as a crash). The same functions run without instrumentation
//! in `tests/replay.rs` on the committed corpus, so CI replays every input the fuzzer kept.
//! [`props`] holds the properties (what `spv-subgroup lower` would exit with, determinism,
//! idempotence, output validity), [`grammar`] builds random valid modules for the structure-aware
//! target, and [`tools`] runs `spirv-val`. See `docs/fuzzing.md`.
#![forbid(unsafe_code)]

pub mod grammar;
pub mod props;
pub mod targets;
pub mod tools;
