//! The subgroup mask built-ins (`SubgroupEqMask`, `GeMask`, `GtMask`, `LeMask`, `LtMask`) on
//! consumers without them (naga's front end: `no_mask_builtins`), computed from
//! `SubgroupLocalInvocationId` and `SubgroupSize`.
//!
//! Three steps, all driven from `driver.rs`:
//!
//! 1. [`normalize`] (before anything else): a component read through an access chain,
//!    `%c = OpAccessChain %ptr %mask %i; %x = OpLoad %uint %c`, becomes
//!    `%t = OpLoad %v4uint %mask; %x = OpVectorExtractDynamic %uint %t %i`, and the chain goes,
//!    so every read of a mask is one whole `OpLoad` of its variable.
//! 2. Each such load is a rewrite ([`needs`], [`lower`]), per word so no shift reaches 32:
//!    `Eq` = bit `lane`; `Lt` = bits below `lane`; `Le` = bits up to `lane`;
//!    `Gt = size & ~Le` and `Ge = size & ~Lt`, where `size` holds the bits below `SubgroupSize`
//!    (lanes beyond the subgroup have no bit, as drivers give them).
//! 3. [`remove_unused`] (after every function): a mask variable nothing reads any more goes,
//!    with its decorations, names and places in the entry points' interfaces.

use std::collections::BTreeSet;

use rspirv::dr::{Instruction, Module, Operand};
use spirv::{BuiltIn, Decoration, Op};

use super::invalid;
use crate::emit::{Code, Emitter, Id, Ty};
use crate::{LowerError, Target};

/// Whether `b` is one of the five mask built-ins.
fn is_mask(b: BuiltIn) -> bool {
    matches!(
        b,
        BuiltIn::SubgroupEqMask
            | BuiltIn::SubgroupGeMask
            | BuiltIn::SubgroupGtMask
            | BuiltIn::SubgroupLeMask
            | BuiltIn::SubgroupLtMask
    )
}

/// The module's variables decorated with a mask built-in, with the built-in.
fn mask_vars(module: &Module) -> Vec<(Id, BuiltIn)> {
    let mut out = Vec::new();
    for a in &module.annotations {
        if let [Operand::IdRef(v), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)] =
            a.operands.as_slice()
        {
            if a.class.opcode == Op::Decorate && is_mask(*b) {
                out.push((*v, *b));
            }
        }
    }
    out
}

/// Whether the module declares a mask built-in `target` lacks (so lowering has work to do even
/// where nothing reads it: the declaration alone is what the target rejects).
pub(crate) fn declared(module: &Module, target: &Target) -> bool {
    target.restrictions.no_mask_builtins && !mask_vars(module).is_empty()
}

/// Step 1: turns component reads through access chains into whole loads and extracts.
pub(crate) fn normalize(module: &mut Module, target: &Target) {
    if !target.restrictions.no_mask_builtins {
        return;
    }
    let vars: BTreeSet<Id> = mask_vars(module).into_iter().map(|(v, _)| v).collect();
    if vars.is_empty() {
        return;
    }
    // Pointee type of each mask variable (through its pointer type).
    let mut pointee = std::collections::BTreeMap::new();
    let pointers: std::collections::BTreeMap<Id, Id> = module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::TypePointer)
        .filter_map(|i| match (i.result_id, i.operands.get(1)) {
            (Some(p), Some(Operand::IdRef(t))) => Some((p, *t)),
            _ => None,
        })
        .collect();
    for i in &module.types_global_values {
        if let (Op::Variable, Some(id), Some(pt)) = (i.class.opcode, i.result_id, i.result_type) {
            if vars.contains(&id) {
                if let Some(t) = pointers.get(&pt) {
                    pointee.insert(id, *t);
                }
            }
        }
    }
    // Single-index access chains into a mask: chain id -> (variable, index id).
    let mut chains = std::collections::BTreeMap::new();
    for inst in module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
    {
        if let (Op::AccessChain | Op::InBoundsAccessChain, Some(id)) =
            (inst.class.opcode, inst.result_id)
        {
            if let [Operand::IdRef(base), Operand::IdRef(index)] = inst.operands.as_slice() {
                if vars.contains(base) {
                    chains.insert(id, (*base, *index));
                }
            }
        }
    }
    if chains.is_empty() {
        return;
    }
    let mut bound = module.header.as_ref().map_or(1, |h| h.bound);
    let mut used_otherwise: BTreeSet<Id> = BTreeSet::new();
    for f in &mut module.functions {
        for block in &mut f.blocks {
            let mut out = Vec::with_capacity(block.instructions.len());
            for inst in std::mem::take(&mut block.instructions) {
                if inst.class.opcode == Op::Load {
                    if let Some(Operand::IdRef(p)) = inst.operands.first() {
                        if let (Some(&(var, index)), Some(&vt)) =
                            (chains.get(p), chains.get(p).and_then(|c| pointee.get(&c.0)))
                        {
                            let whole = bound;
                            bound += 1;
                            // The load's memory operands stay (a `Volatile` one is required
                            // in ray stages under the Vulkan memory model, VUID 04679).
                            let mut operands = vec![Operand::IdRef(var)];
                            operands.extend(inst.operands.iter().skip(1).cloned());
                            out.push(Instruction::new(Op::Load, Some(vt), Some(whole), operands));
                            out.push(Instruction::new(
                                Op::VectorExtractDynamic,
                                inst.result_type,
                                inst.result_id,
                                vec![Operand::IdRef(whole), Operand::IdRef(index)],
                            ));
                            continue;
                        }
                    }
                }
                if !matches!(inst.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
                    || !inst.result_id.is_some_and(|r| chains.contains_key(&r))
                {
                    for o in &inst.operands {
                        if let Operand::IdRef(r) = o {
                            if chains.contains_key(r) {
                                used_otherwise.insert(*r);
                            }
                        }
                    }
                }
                out.push(inst);
            }
            block.instructions = out;
        }
    }
    // Chains read only by loads are gone; any other use keeps its chain (and its variable).
    for f in &mut module.functions {
        for block in &mut f.blocks {
            block.instructions.retain(|i| {
                !(matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
                    && i.result_id
                        .is_some_and(|r| chains.contains_key(&r) && !used_otherwise.contains(&r)))
            });
        }
    }
    if let Some(h) = module.header.as_mut() {
        h.bound = bound;
    }
}

/// Whether `inst` is a whole load of a mask built-in `em`'s target lacks.
pub(crate) fn needs(inst: &Instruction, em: &Emitter) -> bool {
    em.target.restrictions.no_mask_builtins
        && inst.class.opcode == Op::Load
        && matches!(inst.operands.first(), Some(Operand::IdRef(p)) if em.mask_builtin(*p).is_some())
}

/// Step 2: the value of a mask load, computed from the lane id.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let b = match inst.operands.first() {
        Some(Operand::IdRef(p)) => code.em.mask_builtin(*p),
        _ => None,
    }
    .ok_or_else(|| invalid(inst, "not a load of a mask built-in"))?;
    if inst.result_type.and_then(|t| code.em.ty_of_id(t)) != Some(Ty::UVEC4) {
        return Err(invalid(
            inst,
            "a mask built-in must be a vector of four 32-bit integers",
        ));
    }
    let m = match b {
        BuiltIn::SubgroupEqMask => code.own_bit()?,
        BuiltIn::SubgroupLtMask => code.lt_mask()?,
        BuiltIn::SubgroupLeMask => code.le_mask()?,
        _ => {
            let below = if b == BuiltIn::SubgroupGtMask {
                code.le_mask()?
            } else {
                code.lt_mask()?
            };
            let size = code.size_mask()?;
            code.mask_and_not(size, below)
        }
    };
    Ok(code.widen_mask(m))
}

/// Step 3: drops the mask variables no instruction uses any more; returns whether it did.
pub(crate) fn remove_unused(module: &mut Module, target: &Target) -> bool {
    if !target.restrictions.no_mask_builtins {
        return false;
    }
    let vars: BTreeSet<Id> = mask_vars(module).into_iter().map(|(v, _)| v).collect();
    if vars.is_empty() {
        return false;
    }
    let mut used = BTreeSet::new();
    for inst in module
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
    {
        for o in &inst.operands {
            if let Operand::IdRef(r) = o {
                if vars.contains(r) {
                    used.insert(*r);
                }
            }
        }
    }
    let gone: BTreeSet<Id> = vars.difference(&used).copied().collect();
    if gone.is_empty() {
        return false;
    }
    let refers =
        |i: &Instruction| matches!(i.operands.first(), Some(Operand::IdRef(t)) if gone.contains(t));
    module.annotations.retain(|i| !refers(i));
    module.debug_names.retain(|i| !refers(i));
    module.types_global_values.retain(|i| {
        !(i.class.opcode == Op::Variable && i.result_id.is_some_and(|r| gone.contains(&r)))
    });
    for ep in &mut module.entry_points {
        ep.operands
            .retain(|o| !matches!(o, Operand::IdRef(r) if gone.contains(r)));
    }
    true
}
