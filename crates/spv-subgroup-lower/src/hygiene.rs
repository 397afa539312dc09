//! Module requirements after rewriting: capabilities, extensions and the SPIR-V version.
//!
//! Only what the rewrites touch changes: the capabilities and extensions the new code needs
//! are added (sorted, after the existing ones), every subgroup capability the target lacks
//! (`SubgroupVoteKHR` with `SPV_KHR_subgroup_vote`, `GroupNonUniformPartitionedNV/EXT` with both
//! extension spellings, `GroupNonUniformClustered` on lavapipe, ...) is removed once no
//! instruction needs it (as [`fit::required_capability`] says; `Int64` and the like are kept), and the version is raised to 1.3 only when core `GroupNonUniform`
//! code was added to an older module. Everything else (order, other capabilities, the
//! generator word, debug info) stays as it was.

use rspirv::dr::{Instruction, Module, Operand};
use spirv::{Capability, Op};

use spv_subgroup_validate::fit;

use crate::emit::Emitter;
use crate::{LowerError, LowerOptions, Target};

/// The extension strings of the partitioned ops.
const PARTITIONED_EXTS: [&str; 2] = [
    "SPV_NV_shader_subgroup_partitioned",
    "SPV_EXT_shader_subgroup_partitioned",
];

/// SPIR-V 1.3, the first version with the core `GroupNonUniform` instructions.
const V1_3: u32 = 0x0001_0300;

/// Adds what the new code needs, drops what nothing uses any more, raises the version if needed.
pub(crate) fn fix_requirements(
    module: &mut Module,
    em: &Emitter,
    opts: &LowerOptions,
) -> Result<(), LowerError> {
    let insts = || {
        module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
    };
    let mut used: Vec<Capability> = insts()
        .filter_map(|i| {
            let group_op = i.operands.iter().find_map(|o| match o {
                Operand::GroupOperation(g) => Some(*g as u32),
                _ => None,
            });
            fit::required_capability(i.class.opcode, group_op)
        })
        .collect();
    used.sort_unstable_by_key(|&c| c as u32);
    used.dedup();
    drop_unused(module, &opts.target, &used);

    let present: Vec<u32> = module.capabilities.iter().filter_map(cap_of).collect();
    for &cap in &em.caps {
        if !present.contains(&cap) {
            module.capabilities.push(Instruction::new(
                Op::Capability,
                None,
                None,
                vec![Operand::Capability(capability_from(cap)?)],
            ));
        }
    }
    for &ext in &em.exts {
        if !module.extensions.iter().any(|e| ext_of(e) == Some(ext)) {
            module.extensions.push(Instruction::new(
                Op::Extension,
                None,
                None,
                vec![Operand::LiteralString(ext.to_owned())],
            ));
        }
    }

    let needs_1_3 = em.caps.iter().any(|&c| is_core_non_uniform(c));
    if needs_1_3 {
        if opts.target.version_word() < V1_3 {
            return Err(LowerError::Unsupported {
                result_id: 0,
                opcode: "the lowered code".to_owned(),
                word_offset: 0,
                target: opts.target.name.clone(),
                missing: "SPIR-V 1.3 (core GroupNonUniform instructions)".to_owned(),
            });
        }
        if let Some(h) = module.header.as_mut() {
            let word = (u32::from(h.version().0) << 16) | (u32::from(h.version().1) << 8);
            if word < V1_3 {
                h.set_version(1, 3);
            }
        }
    }
    Ok(())
}

/// Whether the module declares a subgroup capability, or the vote or partitioned extension,
/// the target lacks (so a module with no instruction to rewrite may still need them removed).
pub(crate) fn has_removable(module: &Module, target: &Target) -> bool {
    module.capabilities.iter().any(|c| {
        cap_of(c)
            .and_then(Capability::from_u32)
            .is_some_and(|c| !fit::target_has(target, c))
    }) || module
        .extensions
        .iter()
        .any(|e| ext_of(e).is_some_and(|s| ext_removable(s, target)))
}

/// Whether extension `s` is one whose capability the target lacks.
fn ext_removable(s: &str, target: &Target) -> bool {
    (s == "SPV_KHR_subgroup_vote" && !target.ops.khr_vote)
        || (PARTITIONED_EXTS.contains(&s) && !target.ops.partitioned)
}

/// Whether the capability number is one of the core `GroupNonUniform*` capabilities (SPIR-V 1.3).
fn is_core_non_uniform(cap: u32) -> bool {
    (61..=68).contains(&cap)
}

/// Removes the subgroup capabilities the target lacks that no instruction needs any more
/// (`used`, sorted), with the extensions that declare them.
fn drop_unused(module: &mut Module, target: &Target, used: &[Capability]) {
    let gone = |c: Capability| {
        !fit::target_has(target, c)
            && used
                .binary_search_by_key(&(c as u32), |&u| u as u32)
                .is_err()
    };
    let vote_gone = gone(Capability::SubgroupVoteKHR);
    let partitioned_gone = gone(Capability::GroupNonUniformPartitionedEXT);
    module
        .capabilities
        .retain(|c| !cap_of(c).and_then(Capability::from_u32).is_some_and(gone));
    module.extensions.retain(|e| match ext_of(e) {
        Some("SPV_KHR_subgroup_vote") => !vote_gone,
        Some(s) if PARTITIONED_EXTS.contains(&s) => !partitioned_gone,
        _ => true,
    });
}

fn cap_of(inst: &Instruction) -> Option<u32> {
    match inst.operands.first() {
        Some(Operand::Capability(c)) => Some(*c as u32),
        _ => None,
    }
}

fn ext_of(inst: &Instruction) -> Option<&str> {
    match inst.operands.first() {
        Some(Operand::LiteralString(s)) => Some(s.as_str()),
        _ => None,
    }
}

fn capability_from(n: u32) -> Result<Capability, LowerError> {
    Capability::from_u32(n).ok_or_else(|| LowerError::Invalid {
        result_id: 0,
        message: format!("unknown capability {n}"),
    })
}
