//! GPU timing of native versus lowered subgroup ops (filled in below).

use spv_subgroup_vk::Runner;

/// Times every benchmark op natively and lowered and prints a table.
pub fn run(runner: &Runner) {
    let _ = runner;
}
