//! Where a module reaches its built-in variables, found in one place: the emulation of a
//! subgroup size (`emulate`), the emitter's table of the input's built-ins (`emit`), the mask
//! rewrite's variables (`rewrite::masks`) and the sparse load (`loader`, which keeps every
//! instruction that touches a built-in or a pointer derived from one) all ask this module.
//!
//! - A built-in is an id decorated `BuiltIn`, by `OpDecorate` or by `OpGroupDecorate` of an
//!   `OpDecorationGroup` that is decorated `BuiltIn` ([`decorated`]).
//! - A pointer into one is derived from the variable by access chains and `OpCopyObject`s, and
//!   chains of those ([`derived_from`]).
//! - A function reads the built-in by an `OpLoad` or an `OpCopyMemory` from such a pointer.
//!
//! [`Reads::normalize`] turns every read of the watched built-ins into one whole `OpLoad` of the
//! variable (with an `OpVectorExtractDynamic` for a component) and drops the derived pointers,
//! so a rewrite matches `OpLoad %var` alone. A use it cannot turn into one (the pointer passed
//! to a function, a phi or select of it, `OpCopyMemorySized`, a store of the pointer itself, any
//! other instruction naming it) is refused, naming the instruction: it is never left to read the
//! hardware's value. The ids it drops are returned, so that their names and decorations go too
//! ([`drop_debug_of`]).

use std::collections::{BTreeSet, HashMap};

use rspirv::dr::{Function, Instruction, Module, Operand};
use spirv::{BuiltIn, Decoration, MemoryAccess, Op};

/// A result id (`emit::Id`; the emitter reads this module, so it does not import the emitter).
type Id = u32;

/// Every id decorated `BuiltIn`, with its built-in: `OpDecorate`, and `OpGroupDecorate` of a
/// decoration group decorated `BuiltIn`.
pub(crate) fn decorated(module: &Module) -> HashMap<Id, BuiltIn> {
    let mut out = HashMap::new();
    for a in &module.annotations {
        if let [Operand::IdRef(t), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)] =
            a.operands.as_slice()
        {
            if a.class.opcode == Op::Decorate {
                out.insert(*t, *b);
            }
        }
    }
    let groups: Vec<(Id, BuiltIn)> = module
        .annotations
        .iter()
        .filter(|a| a.class.opcode == Op::DecorationGroup)
        .filter_map(|a| a.result_id)
        .filter_map(|g| out.get(&g).map(|&b| (g, b)))
        .collect();
    for (g, b) in groups {
        out.remove(&g);
        for a in &module.annotations {
            if a.class.opcode != Op::GroupDecorate {
                continue;
            }
            if let Some((Operand::IdRef(group), targets)) = a.operands.split_first() {
                if *group == g {
                    for t in targets {
                        if let Operand::IdRef(t) = t {
                            out.insert(*t, b);
                        }
                    }
                }
            }
        }
    }
    out
}

/// The built-ins decorated on a structure's member (`OpMemberDecorate ... BuiltIn`), with the
/// structure: a read of one goes through the block's access chains, which [`Reads`] does not
/// follow, so a pass that must see every read refuses them.
pub(crate) fn member_decorated(module: &Module) -> Vec<(Id, BuiltIn)> {
    module
        .annotations
        .iter()
        .filter(|a| a.class.opcode == Op::MemberDecorate)
        .filter_map(|a| match a.operands.as_slice() {
            [Operand::IdRef(t), _, Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)] => {
                Some((*t, *b))
            }
            _ => None,
        })
        .collect()
}

/// Each pointer type of `module` with the type it points to.
pub(crate) fn pointer_types(module: &Module) -> impl Iterator<Item = (Id, Id)> + '_ {
    module
        .types_global_values
        .iter()
        .filter(|i| i.class.opcode == Op::TypePointer)
        .filter_map(|i| match (i.result_id, i.operands.get(1)) {
            (Some(p), Some(Operand::IdRef(t))) => Some((p, *t)),
            _ => None,
        })
}

/// The operand whose pointer `inst`'s result points into (or copies): access chains and
/// `OpCopyObject`. The sparse load keeps the users of such results of a built-in.
pub(crate) fn derived_from(inst: &Instruction) -> Option<Id> {
    match (inst.class.opcode, inst.operands.first()) {
        (
            Op::AccessChain | Op::InBoundsAccessChain | Op::PtrAccessChain | Op::CopyObject,
            Some(Operand::IdRef(base)),
        ) => Some(*base),
        _ => None,
    }
}

/// Where a pointer points: a watched variable, and the component index when it points to one.
#[derive(Clone, Copy)]
struct Origin {
    var: Id,
    builtin: BuiltIn,
    index: Option<Id>,
    /// The type of what the pointer points to.
    pointee: Id,
}

/// A use of a built-in that [`Reads::normalize`] cannot turn into a whole load.
pub(crate) struct Refusal {
    /// The instruction, as the input has it.
    pub inst: Instruction,
    /// Why, naming the built-in.
    pub why: String,
}

/// The reads of a set of built-in variables, and what turning them into whole loads needs.
pub(crate) struct Reads {
    /// Watched variable -> (its built-in, the type it points to).
    vars: HashMap<Id, (BuiltIn, Id)>,
    /// Pointer type -> the type it points to.
    pointee: HashMap<Id, Id>,
}

impl Reads {
    /// The reads of `module`'s built-in variables whose built-in `watch` picks.
    pub(crate) fn new(module: &Module, watch: impl Fn(BuiltIn) -> bool) -> Self {
        let builtins = decorated(module);
        let pointee: HashMap<Id, Id> = pointer_types(module).collect();
        let vars = module
            .types_global_values
            .iter()
            .filter(|i| i.class.opcode == Op::Variable)
            .filter_map(|i| {
                let id = i.result_id?;
                let b = *builtins.get(&id)?;
                let t = *pointee.get(&i.result_type?)?;
                watch(b).then_some((id, (b, t)))
            })
            .collect();
        Reads { vars, pointee }
    }

    /// Turns every read of a watched variable in `f` into a whole `OpLoad` of it (ids from
    /// `fresh`), dropping the derived pointers (added to `dropped`). Returns whether `f` changed.
    pub(crate) fn normalize(
        &self,
        f: &mut Function,
        fresh: &mut dyn FnMut() -> Id,
        dropped: &mut BTreeSet<Id>,
    ) -> Result<bool, Refusal> {
        if self.vars.is_empty() {
            return Ok(false);
        }
        let origins = self.origins(f)?;
        let origin_of = |id: Id| -> Option<Origin> {
            match self.vars.get(&id) {
                Some(&(builtin, pointee)) => Some(Origin {
                    var: id,
                    builtin,
                    index: None,
                    pointee,
                }),
                None => origins.get(&id).copied(),
            }
        };
        let mut changed = false;
        for block in &mut f.blocks {
            let mut out = Vec::with_capacity(block.instructions.len());
            for inst in std::mem::take(&mut block.instructions) {
                let op = inst.class.opcode;
                let derived = inst.result_id.filter(|r| origins.contains_key(r));
                if let Some(r) = derived {
                    // Every use of the derived pointer is rewritten below (or refused).
                    dropped.insert(r);
                    changed = true;
                    continue;
                }
                let ids = || {
                    inst.operands.iter().filter_map(|o| match o {
                        Operand::IdRef(id) => origin_of(*id).map(|o| (*id, o)),
                        _ => None,
                    })
                };
                let Some((first, origin)) = ids().next() else {
                    out.push(inst);
                    continue;
                };
                let refuse = |why: String| Refusal {
                    inst: inst.clone(),
                    why,
                };
                let b = origin.builtin;
                let operand = |k: usize| match inst.operands.get(k) {
                    Some(Operand::IdRef(id)) => Some(*id),
                    _ => None,
                };
                match op {
                    Op::Load if operand(0) == Some(first) && ids().count() == 1 => {
                        if first == origin.var {
                            out.push(inst);
                            continue;
                        }
                        let (Some(ty), Some(result)) = (inst.result_type, inst.result_id) else {
                            return Err(refuse(format!(
                                "a load of the {b:?} built-in without a result"
                            )));
                        };
                        let memory: Vec<Operand> = inst.operands[1..].to_vec();
                        self.read(origin, ty, result, memory, fresh, &mut out);
                        changed = true;
                    }
                    Op::CopyMemory if operand(1) == Some(first) && ids().count() == 1 => {
                        let Some(target) = operand(0) else {
                            return Err(refuse(format!(
                                "a copy from the {b:?} built-in without a target"
                            )));
                        };
                        let (store_memory, load_memory) =
                            split_memory_operands(&inst.operands[2..]);
                        let availability = MemoryAccess::MAKE_POINTER_AVAILABLE
                            | MemoryAccess::MAKE_POINTER_VISIBLE;
                        if load_memory.iter().any(
                            |o| matches!(o, Operand::MemoryAccess(m) if m.intersects(availability)),
                        ) {
                            return Err(refuse(format!(
                                "a copy from the {b:?} built-in with availability or visibility \
                                 memory operands"
                            )));
                        }
                        let value = fresh();
                        self.read(origin, origin.pointee, value, load_memory, fresh, &mut out);
                        let mut operands = vec![Operand::IdRef(target), Operand::IdRef(value)];
                        operands.extend(store_memory);
                        out.push(Instruction::new(Op::Store, None, None, operands));
                        changed = true;
                    }
                    Op::CopyMemorySized => {
                        return Err(refuse(format!(
                            "OpCopyMemorySized with a pointer to the {b:?} built-in (only \
                             OpLoad and OpCopyMemory of it are emulated)"
                        )))
                    }
                    Op::FunctionCall => {
                        return Err(refuse(format!(
                            "a pointer to the {b:?} built-in passed to a function (only loads \
                             and copies in the function that names the variable are emulated)"
                        )))
                    }
                    Op::Phi | Op::Select => {
                        return Err(refuse(format!(
                            "Op{op:?} of a pointer to the {b:?} built-in (variable pointers are \
                             not emulated)"
                        )))
                    }
                    _ => {
                        return Err(refuse(format!(
                            "a use of a pointer to the {b:?} built-in other than OpLoad or \
                             OpCopyMemory from it"
                        )))
                    }
                }
            }
            block.instructions = out;
        }
        Ok(changed)
    }

    /// The derived pointers of watched variables in `f` (chains of chains and copies).
    fn origins(&self, f: &Function) -> Result<HashMap<Id, Origin>, Refusal> {
        let mut origins: HashMap<Id, Origin> = HashMap::new();
        // Blocks come in dominance order, so a base is met before what is derived from it; the
        // loop also takes the rare listing that breaks that order.
        loop {
            let before = origins.len();
            for inst in f.blocks.iter().flat_map(|b| &b.instructions) {
                let (Some(base), Some(r)) = (derived_from(inst), inst.result_id) else {
                    continue;
                };
                if origins.contains_key(&r) {
                    continue;
                }
                let base = match self.vars.get(&base) {
                    Some(&(builtin, pointee)) => Origin {
                        var: base,
                        builtin,
                        index: None,
                        pointee,
                    },
                    None => match origins.get(&base) {
                        Some(o) => *o,
                        None => continue,
                    },
                };
                let b = base.builtin;
                let refuse = |why: String| Refusal {
                    inst: inst.clone(),
                    why,
                };
                let origin = match inst.class.opcode {
                    Op::CopyObject => base,
                    Op::AccessChain | Op::InBoundsAccessChain => {
                        let indices: Vec<Id> = inst.operands[1..]
                            .iter()
                            .filter_map(|o| match o {
                                Operand::IdRef(i) => Some(*i),
                                _ => None,
                            })
                            .collect();
                        let index = match (base.index, indices.as_slice()) {
                            (i, []) => i,
                            (None, [i]) => Some(*i),
                            _ => {
                                return Err(refuse(format!(
                                    "an access chain into the {b:?} built-in with more than one \
                                     index"
                                )))
                            }
                        };
                        let pointee = inst
                            .result_type
                            .and_then(|t| self.pointee.get(&t).copied())
                            .unwrap_or(base.pointee);
                        Origin {
                            index,
                            pointee,
                            ..base
                        }
                    }
                    _ => {
                        return Err(refuse(format!(
                            "OpPtrAccessChain into the {b:?} built-in (only OpAccessChain, \
                             OpInBoundsAccessChain and OpCopyObject of it are emulated)"
                        )))
                    }
                };
                origins.insert(r, origin);
            }
            if origins.len() == before {
                return Ok(origins);
            }
        }
    }

    /// Appends the read of `origin` into `result` of type `ty`: the whole load of the variable,
    /// and the extract of its component.
    fn read(
        &self,
        origin: Origin,
        ty: Id,
        result: Id,
        memory: Vec<Operand>,
        fresh: &mut dyn FnMut() -> Id,
        out: &mut Vec<Instruction>,
    ) {
        let mut operands = vec![Operand::IdRef(origin.var)];
        operands.extend(memory);
        let Some(index) = origin.index else {
            out.push(Instruction::new(Op::Load, Some(ty), Some(result), operands));
            return;
        };
        let whole = fresh();
        let whole_ty = self.vars.get(&origin.var).map_or(ty, |v| v.1);
        out.push(Instruction::new(
            Op::Load,
            Some(whole_ty),
            Some(whole),
            operands,
        ));
        out.push(Instruction::new(
            Op::VectorExtractDynamic,
            Some(ty),
            Some(result),
            vec![Operand::IdRef(whole), Operand::IdRef(index)],
        ));
    }
}

/// `OpCopyMemory`'s memory operands as (the target's, the source's): with one set given, it
/// applies to both (SPIR-V 1.4 on allows a second one for the source).
fn split_memory_operands(ops: &[Operand]) -> (Vec<Operand>, Vec<Operand>) {
    let second = ops
        .iter()
        .enumerate()
        .skip(1)
        .find(|(_, o)| matches!(o, Operand::MemoryAccess(_)))
        .map(|(k, _)| k);
    match second {
        Some(k) => (ops[..k].to_vec(), ops[k..].to_vec()),
        None => (ops.to_vec(), ops.to_vec()),
    }
}

/// Drops the debug names and decorations of ids the rewrite removed (`OpName`, `OpDecorate`
/// and its kin, the targets of `OpGroupDecorate`), which would otherwise name undefined ids.
pub(crate) fn drop_debug_of(module: &mut Module, dropped: &BTreeSet<Id>) {
    if dropped.is_empty() {
        return;
    }
    let names_dropped = |i: &Instruction| matches!(i.operands.first(), Some(Operand::IdRef(t)) if dropped.contains(t));
    module.debug_names.retain(|i| !names_dropped(i));
    module.annotations.retain(|i| {
        !(matches!(
            i.class.opcode,
            Op::Decorate | Op::DecorateId | Op::DecorateString | Op::MemberDecorate
        ) && names_dropped(i))
    });
    for a in &mut module.annotations {
        if matches!(a.class.opcode, Op::GroupDecorate | Op::GroupMemberDecorate) {
            let mut keep = true;
            let mut k = 0;
            a.operands.retain(|o| {
                // The group (operand 0) stays; a member decoration's targets are (id, literal)
                // pairs, each dropped whole.
                let first = k == 0;
                k += 1;
                if first {
                    return true;
                }
                match o {
                    Operand::IdRef(t) => {
                        keep = !dropped.contains(t);
                        keep
                    }
                    _ => keep,
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_memory_operand_set_applies_to_both_sides() {
        let v = [Operand::MemoryAccess(MemoryAccess::VOLATILE)];
        assert_eq!(split_memory_operands(&v), (v.to_vec(), v.to_vec()));
        let two = [
            Operand::MemoryAccess(MemoryAccess::ALIGNED),
            Operand::LiteralBit32(4),
            Operand::MemoryAccess(MemoryAccess::VOLATILE),
        ];
        assert_eq!(
            split_memory_operands(&two),
            (two[..2].to_vec(), two[2..].to_vec())
        );
    }
}
