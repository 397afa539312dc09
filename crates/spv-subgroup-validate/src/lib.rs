//! Validator for SPIR-V subgroup vote and partitioned operations (being built: see the issue).
#![deny(missing_docs)]

pub mod target;
