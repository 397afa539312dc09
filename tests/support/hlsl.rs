//! The self-checking HLSL fixtures of `fixtures/lower/hlsl/` (real Slang output), shared by the
//! harnesses that run them on lavapipe (`lower_hlsl_exec.rs`) and through wgpu (`wgpu_exec.rs`).
//!
//! Each shader writes a record of [`RECORD`] words per invocation: `n` (how many results the lane
//! checks; 0 when it sat out), its results in words `1..1+n` and the brute-force reference the
//! same shader computed in words `12..12+n`.

use std::path::PathBuf;

use crate::tools;

/// Invocations per workgroup (`numthreads` of every fixture).
pub const LOCAL: u32 = 64;
/// Workgroups per dispatch.
pub const GROUPS: u32 = 4;
/// Words per invocation in the record buffer (binding 1).
pub const RECORD: usize = 24;

/// The fixtures' `.spvasm` files, sorted.
pub fn fixtures() -> Vec<PathBuf> {
    let dir = tools::workspace_root().join("fixtures/lower/hlsl");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "spvasm"))
        .collect();
    found.sort();
    assert!(
        found.len() >= 3,
        "the HLSL fixtures are missing in {}",
        dir.display()
    );
    found
}

/// Keys for one dispatch (binding 0): few distinct values, so subsets have several members;
/// float fixtures get float bits including +0.0, -0.0 and a NaN.
pub fn keys(float: bool, seed: u32) -> Vec<u32> {
    let floats = [0.0f32, -0.0, 1.0, 2.5, -1.0, f32::NAN].map(f32::to_bits);
    (0..LOCAL * GROUPS)
        .map(|i| {
            let h = (i ^ seed.wrapping_mul(0x9e37_79b9)).wrapping_mul(0x85eb_ca6b) >> 7;
            if float {
                floats[(h % floats.len() as u32) as usize]
            } else {
                h % 5
            }
        })
        .collect()
}

/// Checks every record of `records` (results against the reference); returns how many results
/// were compared. `what` names the run in a failure.
pub fn check_records(records: &[u32], what: &str) -> usize {
    let mut compared = 0;
    for (inv, rec) in records.chunks(RECORD).enumerate() {
        let n = rec[0] as usize;
        assert!(
            n <= 11,
            "{what}: invocation {inv} wrote no record (n = {n:#x})"
        );
        for j in 0..n {
            assert_eq!(
                rec[1 + j],
                rec[12 + j],
                "{what}, invocation {inv}: result {j} differs from the reference (record {rec:x?})"
            );
        }
        compared += n;
    }
    compared
}
