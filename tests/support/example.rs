//! The README's example, `fixtures/examples/partitioned_vote.comp`: a host model of what it
//! computes and inputs that exercise every branch, shared by the harnesses that run it lowered
//! (`crates/spv-subgroup/tests/cli_lavapipe.rs` on the Vulkan runner, `tests/wgpu_conformance.rs`
//! through wgpu).

/// The example's `local_size_x`.
pub const LANES: usize = 64;

/// Keys with repeats in every subgroup and some lanes with key 0 (outside the vote branch):
/// lanes 0-15 all small, 16-31 all big (> 100), the rest mixed, so each vote goes both ways
/// at subgroup sizes up to 16.
pub fn keys() -> Vec<u32> {
    (0..LANES as u32)
        .map(|i| match i / 16 {
            0 => (i * 13) % 97,
            1 => 101 + (i * 29) % 97,
            _ => (i * 37 + 11) % 211,
        })
        .collect()
}

/// What `fixtures/examples/partitioned_vote.comp` computes, per invocation, for subgroups of `size`.
pub fn model(keys: &[u32], size: usize) -> (Vec<[u32; 4]>, Vec<u32>, Vec<u32>) {
    let mut masks = vec![[0u32; 4]; keys.len()];
    let mut sums = vec![0u32; keys.len()];
    let mut flags = vec![0u32; keys.len()];
    for (i, _) in keys.iter().enumerate() {
        let base = i / size * size;
        let group = base..base + size;
        let key = keys[i] & 7;
        for j in group.clone().filter(|&j| keys[j] & 7 == key) {
            let lane = j - base;
            masks[i][lane / 32] |= 1 << (lane % 32);
            sums[i] = sums[i].wrapping_add(keys[j]);
        }
        if key != 0 {
            // The votes run in the branch `key != 0`: only those lanes vote.
            let bigs: Vec<bool> = group
                .filter(|&j| keys[j] & 7 != 0)
                .map(|j| keys[j] > 100)
                .collect();
            let mut f = 0;
            if bigs.iter().all(|&b| b) {
                f |= 1;
            }
            if bigs.iter().any(|&b| b) {
                f |= 2;
            }
            if bigs.iter().all(|&b| b == bigs[0]) {
                f |= 4;
            }
            flags[i] = f;
        }
    }
    (masks, sums, flags)
}
