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

/// SPIR-V 1.3, the first version with the core `GroupNonUniform` instructions.
const V1_3: u32 = 0x0001_0300;

/// The subgroup capability `inst` needs, if any ([`fit::required_capability`]).
pub(crate) fn required_capability(inst: &Instruction) -> Option<Capability> {
    let group_op = inst.operands.iter().find_map(|o| match o {
        Operand::GroupOperation(g) => Some(*g as u32),
        _ => None,
    });
    fit::required_capability(inst.class.opcode, group_op)
}

/// Adds what the new code needs, drops what nothing uses any more, raises the version if needed.
/// `used` is [`required_capability`] of every instruction the functions hold, in any order.
/// `scope_needs_cap`: whether the input's capabilities allowed a Subgroup memory scope that a
/// barrier or atomic of it uses in a Vulkan environment
/// (VUID-StandaloneSpirv-SubgroupVoteKHR-07951), asked before any capability is dropped: when
/// the dropped capabilities were what allowed it, `GroupNonUniform` is declared.
pub(crate) fn fix_requirements(
    module: &mut Module,
    em: &Emitter,
    opts: &LowerOptions,
    scope_needs_cap: bool,
    mut used: Vec<Capability>,
) -> Result<(), LowerError> {
    used.sort_unstable_by_key(|&c| c as u32);
    used.dedup();
    drop_unused(module, &opts.target, &used);

    let mut added: Vec<u32> = em.caps.iter().copied().collect();
    if scope_needs_cap && !provides_subgroup_scope(module) && !added.iter().any(|&c| scope_cap(c)) {
        // The dropped capability was what allowed the Subgroup memory scope
        // (VUID-StandaloneSpirv-SubgroupVoteKHR-07951): declare the core one instead.
        if !fit::target_has(&opts.target, Capability::GroupNonUniform) {
            return Err(LowerError::Unsupported {
                result_id: 0,
                opcode: "a barrier or atomic with a Subgroup memory scope".to_owned(),
                word_offset: 0,
                target: opts.target.name.clone(),
                missing: "GroupNonUniform, SubgroupBallotKHR or SubgroupVoteKHR \
                          (VUID-StandaloneSpirv-SubgroupVoteKHR-07951)"
                    .to_owned(),
            });
        }
        added.push(Capability::GroupNonUniform as u32);
    }
    let present: Vec<u32> = module.capabilities.iter().filter_map(cap_of).collect();
    for &cap in &added {
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

    let needs_1_3 = added.iter().any(|&c| is_core_non_uniform(c));
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
        .any(|e| ext_of(e).is_some_and(|s| ext_removable(module, s, target)))
}

/// Whether extension `s` is one whose capability the target lacks (and not also an extended
/// instruction set the module imports).
fn ext_removable(module: &Module, s: &str, target: &Target) -> bool {
    fit::extension_capability(s).is_some_and(|c| !fit::target_has(target, c))
        && !imported(&module.ext_inst_imports, s)
}

/// Whether `imports` (a module's `OpExtInstImport`s) name the extended instruction set `s`.
fn imported(imports: &[Instruction], s: &str) -> bool {
    imports.iter().any(|i| ext_of(i) == Some(s))
}

/// Whether a capability number lets a Vulkan module use a Subgroup memory scope
/// (VUID-StandaloneSpirv-SubgroupVoteKHR-07951: `SubgroupVoteKHR`, `SubgroupBallotKHR`, or
/// `GroupNonUniform`, which every core non-uniform capability and rotate implicitly declare).
fn scope_cap(cap: u32) -> bool {
    is_core_non_uniform(cap)
        || [
            Capability::SubgroupVoteKHR as u32,
            Capability::SubgroupBallotKHR as u32,
            Capability::GroupNonUniformRotateKHR as u32,
        ]
        .contains(&cap)
}

/// Whether the module declares a capability that allows a Subgroup memory scope.
pub(crate) fn provides_subgroup_scope(module: &Module) -> bool {
    module.capabilities.iter().filter_map(cap_of).any(scope_cap)
}

/// Whether `inst` is a barrier or atomic with a Subgroup memory scope.
pub(crate) fn has_subgroup_memory_scope_in(inst: &Instruction, em: &Emitter) -> bool {
    crate::elide::memory_scope_operand(inst)
        .and_then(|k| inst.operands.get(k))
        .is_some_and(|o| {
            matches!(o, Operand::IdScope(id) | Operand::IdRef(id)
                if em.scope_value(*id) == Some(spirv::Scope::Subgroup as u32))
        })
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
    module
        .capabilities
        .retain(|c| !cap_of(c).and_then(Capability::from_u32).is_some_and(gone));
    let imports = &module.ext_inst_imports;
    module.extensions.retain(|e| {
        !ext_of(e).is_some_and(|s| {
            fit::extension_capability(s).is_some_and(gone) && !imported(imports, s)
        })
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
