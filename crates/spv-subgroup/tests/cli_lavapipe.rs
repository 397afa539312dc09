//! End to end on a real driver: `spv-subgroup lower` turns the README's example shader (partitioned
//! ops and KHR votes, which Mesa's lavapipe lacks) into a module lavapipe builds a compute pipeline
//! from and runs with the results a host model of the original shader predicts.
//!
//! Needs the Vulkan loader and lavapipe (`cargo xtask install-deps`); without them the test fails
//! with the runner's install hint.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{example_words, show, to_bytes};
use spv_subgroup_tests::example::{keys, model, LANES};
use spv_subgroup_tests::tools;
use spv_subgroup_vk::{PipelineOptions, Runner};

/// The README example lowered by the binary for its default target (Vulkan 1.1).
fn lower_example(dir: &Path) -> Vec<u32> {
    std::fs::write(dir.join("in.spv"), to_bytes(&example_words())).unwrap();
    let o = common::run(&["lower", "in.spv", "-o", "out.spv"], dir);
    assert!(o.status.success(), "lower failed: {}", show(&o));
    tools::read_words(&dir.join("out.spv"))
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

    let keys = keys();
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
