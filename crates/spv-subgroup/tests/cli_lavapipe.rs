//! End to end on a real driver: `spv-subgroup lower` turns the README's example shader (partitioned
//! ops and KHR votes, which Mesa's lavapipe lacks) into a module lavapipe builds a compute pipeline
//! from and runs with the results a host model of the original shader predicts.
//!
//! Needs the Vulkan loader and lavapipe (`cargo xtask install-deps`); without them the test fails
//! with the runner's install hint.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use spv_subgroup_tests::tools;
use spv_subgroup_vk::{PipelineOptions, Runner};

const EXE: &str = env!("CARGO_BIN_EXE_spv-subgroup");
const LANES: usize = 64; // local_size_x of the example

/// What `fixtures/examples/partitioned_vote.comp` computes, per invocation, for subgroups of `size`.
fn model(keys: &[u32], size: usize) -> (Vec<[u32; 4]>, Vec<u32>, Vec<u32>) {
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

fn lower_example(dir: &Path) -> Vec<u32> {
    let src = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&src, "vulkan1.1").expect("the example compiles");
    let input = dir.join("in.spv");
    std::fs::write(
        &input,
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let out = dir.join("out.spv");
    let o = Command::new(EXE)
        .arg("lower")
        .arg(&input)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "lower failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    tools::read_words(&out)
}

#[test]
fn lowered_example_runs_on_lavapipe_as_the_model_predicts() {
    let dir = tempfile::tempdir().unwrap();
    let words = lower_example(dir.path());
    let runner = Runner::with_device(Some("llvmpipe")).expect("lavapipe (llvmpipe) is available");
    let info = runner.info().clone();
    assert!(
        !info.has_extension("VK_NV_shader_subgroup_partitioned"),
        "lavapipe has no partitioned ops, so the native module could not run: the point of lowering"
    );
    let opts = PipelineOptions {
        buffers: 4,
        full_subgroups: info.features.compute_full_subgroups,
        ..Default::default()
    };
    let pipeline = runner
        .pipeline(&words, &opts)
        .expect("lavapipe creates a pipeline from the lowered module");

    // Keys with repeats in every subgroup and some lanes with key 0 (outside the vote branch):
    // lanes 0-15 all small, 16-31 all big (> 100), the rest mixed, so each vote goes both ways
    // at subgroup sizes up to 16.
    let keys: Vec<u32> = (0..LANES as u32)
        .map(|i| match i / 16 {
            0 => (i * 13) % 97,
            1 => 101 + (i * 29) % 97,
            _ => (i * 37 + 11) % 211,
        })
        .collect();
    let mut buffers = vec![
        keys.clone(),
        vec![0; LANES * 4],
        vec![0; LANES],
        vec![0; LANES],
    ];
    runner
        .run(&pipeline, &mut buffers, [1, 1, 1], Duration::from_secs(20))
        .expect("the dispatch completes");

    let size = info.subgroup_size as usize;
    assert!(
        size.is_power_of_two() && size <= LANES,
        "subgroup size {size}"
    );
    let (masks, sums, flags) = model(&keys, size);
    if size <= 16 {
        for bit in [1, 2, 4] {
            assert!(
                flags.iter().any(|f| f & bit != 0),
                "the inputs exercise vote bit {bit} set"
            );
            assert!(
                flags.iter().any(|f| f & bit == 0),
                "the inputs exercise vote bit {bit} clear"
            );
        }
    }
    for i in 0..LANES {
        let got_mask = [
            buffers[1][4 * i],
            buffers[1][4 * i + 1],
            buffers[1][4 * i + 2],
            buffers[1][4 * i + 3],
        ];
        assert_eq!(
            got_mask, masks[i],
            "partition mask of invocation {i} (subgroup size {size})"
        );
        assert_eq!(
            buffers[2][i], sums[i],
            "partitioned sum of invocation {i} (subgroup size {size})"
        );
        assert_eq!(
            buffers[3][i], flags[i],
            "vote flags of invocation {i} (subgroup size {size})"
        );
    }
}
