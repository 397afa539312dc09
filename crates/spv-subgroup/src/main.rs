//! The `spv-subgroup` command line (being built).
fn main() {}
