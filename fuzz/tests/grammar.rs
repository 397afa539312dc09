//! The grammar makes modules `spirv-val` accepts: a structure-aware target whose inputs were
//! invalid would test the refusal path only.

use spv_subgroup_fuzz::grammar::{
    has_vote_partition_and_partitioned_op, module_from_bytes, sample_module, seed_bytes,
};
use spv_subgroup_fuzz::tools::spirv_val_accepts;

#[test]
fn generated_modules_pass_spirv_val() {
    let mut rejected = Vec::new();
    let total = 150;
    for seed in 0..total {
        let data = seed_bytes(seed, 400);
        let words = module_from_bytes(&data).expect("400 bytes are enough for a header");
        // Universal SPIR-V of the module's own version: the grammar's rules, not an environment's.
        let env = format!("spv1.{}", (words[1] >> 8) & 0xff);
        if !spirv_val_accepts(&words, &env).expect("spirv-val runs") {
            rejected.push(seed);
        }
        let vk = if (words[1] >> 8) & 0xff <= 3 {
            "vulkan1.1"
        } else {
            "vulkan1.3"
        };
        if !spirv_val_accepts(&words, vk).expect("spirv-val runs") {
            rejected.push(seed);
        }
    }
    assert!(
        rejected.is_empty(),
        "spirv-val rejects the grammar's modules for seeds {rejected:?}"
    );
}

#[test]
fn sample_module_has_a_vote_a_partition_and_a_partitioned_op() {
    let words = sample_module();
    assert!(spirv_val_accepts(&words, "vulkan1.1").expect("spirv-val runs"));
    assert!(has_vote_partition_and_partitioned_op(&words));
}
