//! The subgroup mask built-ins (`SubgroupEqMask`, `GeMask`, `GtMask`, `LeMask`, `LtMask`) on
//! consumers without them (naga's front end: `no_mask_builtins`), computed from
//! `SubgroupLocalInvocationId` and `SubgroupSize`.
//!
//! Three steps, driven from `pipeline` (steps 1 and 2 one function at a time, as the pass is
//! fed; step 3 at its end):
//!
//! 1. [`normalize_function`] (before anything else in a function; its tables from
//!    [`normalize_held`] or [`normalize_streamed`]): a component read through an access chain,
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

use std::collections::BTreeMap;

use rspirv::dr::{Function, Instruction, Module, Operand};
use spirv::{BuiltIn, Op};

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
    let mut out: Vec<(Id, BuiltIn)> = crate::builtin_uses::decorated(module)
        .into_iter()
        .filter(|(_, b)| is_mask(*b))
        .collect();
    out.sort_unstable_by_key(|(v, _)| *v);
    out
}

/// Whether the module declares a mask built-in `target` lacks (so lowering has work to do even
/// where nothing reads it: the declaration alone is what the target rejects).
pub(crate) fn declared(module: &Module, target: &Target) -> bool {
    target.restrictions.no_mask_builtins && !mask_vars(module).is_empty()
}

/// Step 1's tables: each mask variable's pointee type, the single-index access chains into the
/// masks (chain id -> (variable, index id)), and the id the next whole load gets.
pub(crate) struct Normalize {
    pointee: BTreeMap<Id, Id>,
    chains: BTreeMap<Id, (Id, Id)>,
    /// The next id to give a whole load (the module's bound, then counting up).
    pub next: Id,
    /// The chains dropped (their names and decorations go at the end of the pass).
    pub dropped: BTreeSet<Id>,
}

/// The mask variables `target` lacks and their pointee types (through their pointer types);
/// `None` when there is nothing for step 1 to do.
fn mask_pointees(module: &Module, target: &Target) -> Option<(BTreeSet<Id>, BTreeMap<Id, Id>)> {
    if !target.restrictions.no_mask_builtins {
        return None;
    }
    let vars: BTreeSet<Id> = mask_vars(module).into_iter().map(|(v, _)| v).collect();
    if vars.is_empty() {
        return None;
    }
    let mut pointee = BTreeMap::new();
    let pointers: BTreeMap<Id, Id> = crate::builtin_uses::pointer_types(module).collect();
    for i in &module.types_global_values {
        if let (Op::Variable, Some(id), Some(pt)) = (i.class.opcode, i.result_id, i.result_type) {
            if vars.contains(&id) {
                if let Some(t) = pointers.get(&pt) {
                    pointee.insert(id, *t);
                }
            }
        }
    }
    Some((vars, pointee))
}

/// Step 1's tables for a module that holds its functions (`lower`): as [`normalize_streamed`],
/// with the access chains and the loads through them read from the functions.
pub(crate) fn normalize_held(module: &Module, target: &Target) -> Option<(Normalize, u32)> {
    let (vars, pointee) = mask_pointees(module, target)?;
    let insts = || {
        module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
    };
    // Single-index access chains into a mask: chain id -> (variable, index id).
    let mut chains = BTreeMap::new();
    for inst in insts() {
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
        return None;
    }
    let loads = insts()
        .filter(|i| {
            i.class.opcode == Op::Load
                && matches!(i.operands.first(), Some(Operand::IdRef(p))
                    if chains.get(p).is_some_and(|c| pointee.contains_key(&c.0)))
        })
        .count();
    let next = module.header.as_ref().map_or(1, |h| h.bound);
    Some((
        Normalize {
            pointee,
            chains,
            next,
            dropped: BTreeSet::new(),
        },
        u32::try_from(loads).ok()?,
    ))
}

/// Step 1 for a module whose functions come one at a time (`stream`): the tables from the
/// globals and the module's words (every single-index access chain into a mask), and how many
/// whole loads the functions will get (their ids come before any the emitter gives);
/// `None` when there is nothing to do.
pub(crate) fn normalize_streamed(
    module: &Module,
    target: &Target,
    words: &[u32],
) -> Option<(Normalize, u32)> {
    let (vars, pointee) = mask_pointees(module, target)?;
    let each = |f: &mut dyn FnMut(u32, &[u32])| {
        let mut at = 5;
        while let Some(&first) = words.get(at) {
            let count = (first >> 16) as usize;
            let Some(inst) = words.get(at..at + count).filter(|_| count > 0) else {
                break;
            };
            f(first & 0xffff, inst);
            at += count;
        }
    };
    let mut chains = BTreeMap::new();
    each(&mut |op, inst| {
        if let (true, [_, _, id, base, index]) = (
            op == Op::AccessChain as u32 || op == Op::InBoundsAccessChain as u32,
            inst,
        ) {
            if vars.contains(base) {
                chains.insert(*id, (*base, *index));
            }
        }
    });
    if chains.is_empty() {
        return None;
    }
    let mut loads = 0u32;
    each(&mut |op, inst| {
        if let (true, [_, _, _, p, ..]) = (op == Op::Load as u32, inst) {
            if chains.get(p).is_some_and(|c| pointee.contains_key(&c.0)) {
                loads += 1;
            }
        }
    });
    let next = module.header.as_ref().map_or(1, |h| h.bound);
    Some((
        Normalize {
            pointee,
            chains,
            next,
            dropped: BTreeSet::new(),
        },
        loads,
    ))
}

/// Step 1 in one function: each load through a chain of `n` becomes a whole load (id `n.next`,
/// counting up) and an extract; the chains nothing else reads go.
pub(crate) fn normalize_function(f: &mut Function, n: &mut Normalize) {
    let chains = &n.chains;
    let mut used_otherwise: BTreeSet<Id> = BTreeSet::new();
    for block in &mut f.blocks {
        let mut out = Vec::with_capacity(block.instructions.len());
        for inst in std::mem::take(&mut block.instructions) {
            if inst.class.opcode == Op::Load {
                if let Some(Operand::IdRef(p)) = inst.operands.first() {
                    if let (Some(&(var, index)), Some(&vt)) = (
                        chains.get(p),
                        chains.get(p).and_then(|c| n.pointee.get(&c.0)),
                    ) {
                        let whole = n.next;
                        n.next += 1;
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
    // Chains read only by loads are gone (a chain is local to its function); any other use
    // keeps its chain (and its variable).
    let mut dropped = Vec::new();
    for block in &mut f.blocks {
        block.instructions.retain(|i| {
            let gone = matches!(i.class.opcode, Op::AccessChain | Op::InBoundsAccessChain)
                && i.result_id
                    .is_some_and(|r| chains.contains_key(&r) && !used_otherwise.contains(&r));
            if gone {
                dropped.extend(i.result_id);
            }
            !gone
        });
    }
    n.dropped.extend(dropped);
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

/// The mask variables step 3 may remove (`None`: none, or the target has the masks).
pub(crate) fn removable_vars(module: &Module, target: &Target) -> Option<BTreeSet<Id>> {
    if !target.restrictions.no_mask_builtins {
        return None;
    }
    let vars: BTreeSet<Id> = mask_vars(module).into_iter().map(|(v, _)| v).collect();
    (!vars.is_empty()).then_some(vars)
}

/// Adds to `used` the variables of `vars` that `inst` refers to.
pub(crate) fn record_uses(inst: &Instruction, vars: &BTreeSet<Id>, used: &mut BTreeSet<Id>) {
    for o in &inst.operands {
        if let Operand::IdRef(r) = o {
            if vars.contains(r) {
                used.insert(*r);
            }
        }
    }
}

/// Step 3: drops the mask variables no instruction uses any more; returns whether it did.
/// `used` are the variables of `vars` ([`removable_vars`]) that the functions' instructions
/// refer to ([`record_uses`]).
pub(crate) fn remove_unused(module: &mut Module, vars: &BTreeSet<Id>, used: &BTreeSet<Id>) -> bool {
    let gone: BTreeSet<Id> = vars.difference(used).copied().collect();
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
