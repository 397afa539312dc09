//! One built-in variable per stage kind where the code that loads it is shared.
//!
//! Vulkan wants integer `Input` variables of a fragment entry point decorated `Flat`
//! (VUID-StandaloneSpirv-Flat-04744) and forbids `Flat` inputs in a vertex entry point
//! (VUID-StandaloneSpirv-Flat-06202). The new built-ins the rewrites load are `Flat` when the
//! module has a fragment entry point; a function reached from both a fragment and another entry
//! point would hand the other stage a `Flat` input. Such functions are cloned for the other
//! stages, loading an undecorated twin of each `Flat` built-in, and those entry points call
//! (or are) the clones.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rspirv::dr::{Function, Instruction, Module, Operand};
use spirv::{Decoration, ExecutionModel, Op};

use crate::emit::{Emitter, Id};
use crate::{elide, LowerError};

/// For the entry points that are not fragment shaders, flat built-in -> its twin; function ->
/// its clone for those stages.
type Split = (BTreeMap<Id, Id>, HashMap<Id, Id>);

/// Splits the code that loads `Flat` built-ins between fragment and other entry points.
/// Returns, for the entry points that are not fragment shaders, flat built-in -> its twin, and
/// function -> its clone for those stages.
pub(crate) fn split(module: &mut Module, em: &mut Emitter) -> Result<Split, LowerError> {
    let flat: BTreeSet<Id> = em
        .new_annotations
        .iter()
        .filter_map(|a| match a.operands.as_slice() {
            [Operand::IdRef(v), Operand::Decoration(Decoration::Flat)]
                if em.new_builtins.contains(v) =>
            {
                Some(*v)
            }
            _ => None,
        })
        .collect();
    if flat.is_empty() {
        return Ok(Default::default());
    }
    let calls = call_graph(module);
    let (mut fragment_roots, mut other_roots) = (Vec::new(), Vec::new());
    for ep in &module.entry_points {
        if let [Operand::ExecutionModel(model), Operand::IdRef(root), ..] = ep.operands.as_slice() {
            if *model == ExecutionModel::Fragment {
                fragment_roots.push(*root);
            } else {
                other_roots.push(*root);
            }
        }
    }
    let in_fragment = reachable(&calls, &fragment_roots);
    let in_other = reachable(&calls, &other_roots);
    // Functions of the other stages whose call tree loads a flat built-in.
    let loads_flat: BTreeSet<Id> = module
        .functions
        .iter()
        .filter_map(|f| {
            let id = f.def.as_ref()?.result_id?;
            let uses = f
                .blocks
                .iter()
                .flat_map(|b| &b.instructions)
                .flat_map(|i| &i.operands)
                .any(|o| matches!(o, Operand::IdRef(v) if flat.contains(v)));
            uses.then_some(id)
        })
        .collect();
    let affected: BTreeSet<Id> = in_other
        .iter()
        .copied()
        .filter(|f| reaches_any(&calls, *f, &loads_flat))
        .collect();
    if affected.is_empty() {
        return Ok(Default::default());
    }
    // Undecorated twins of the flat built-ins, for the other stages.
    let mut twins: BTreeMap<Id, Id> = BTreeMap::new();
    for &var in &flat {
        let Some(def) = em
            .new_globals
            .iter()
            .find(|g| g.result_id == Some(var))
            .cloned()
        else {
            continue;
        };
        let twin = em.id();
        let builtin = em
            .new_annotations
            .iter()
            .find(|a| {
                matches!(a.operands.as_slice(),
                    [Operand::IdRef(v), Operand::Decoration(Decoration::BuiltIn), _] if *v == var)
            })
            .cloned();
        let mut def = def;
        def.result_id = Some(twin);
        em.new_globals.push(def);
        if let Some(mut b) = builtin {
            b.operands[0] = Operand::IdRef(twin);
            em.new_annotations.push(b);
        }
        twins.insert(var, twin);
    }
    // Functions shared with a fragment stage get a clone; the others load the twins in place.
    let mut clone_of: HashMap<Id, Id> = HashMap::new();
    for &f in &affected {
        if in_fragment.contains(&f) {
            clone_of.insert(f, em.id());
        }
    }
    let mut decorations = Vec::new();
    let mut clones = Vec::new();
    for function in &mut module.functions {
        let Some(id) = function.def.as_ref().and_then(|d| d.result_id) else {
            continue;
        };
        if !affected.contains(&id) {
            continue;
        }
        match clone_of.get(&id) {
            Some(&new_id) => {
                let mut ids: HashMap<Id, Id> = twins.iter().map(|(a, b)| (*a, *b)).collect();
                ids.extend(clone_of.iter().map(|(a, b)| (*a, *b)));
                ids.insert(id, new_id);
                // A copy gets new ids for every value: the elided instructions come back first.
                if let Some(words) = em.source {
                    elide::expand(function, words).ok_or_else(|| LowerError::Invalid {
                        result_id: id,
                        message: "the function's instructions no longer parse".to_owned(),
                    })?;
                }
                let clone = clone_function(function, em, &mut ids);
                decorations.push(ids);
                clones.push(clone);
            }
            None => {
                let mut ids: HashMap<Id, Id> = twins.iter().map(|(a, b)| (*a, *b)).collect();
                ids.extend(clone_of.iter().map(|(a, b)| (*a, *b)));
                for inst in all_instructions(function) {
                    remap_operands(inst, &ids);
                }
            }
        }
    }
    // Decorations of the cloned values (RelaxedPrecision, NoContraction) go with them.
    let mut new_decorations = Vec::new();
    for ids in &decorations {
        for a in &module.annotations {
            if a.class.opcode == Op::Decorate {
                if let Some(Operand::IdRef(t)) = a.operands.first() {
                    if let Some(&n) = ids.get(t).filter(|_| !twins.contains_key(t)) {
                        let mut d = a.clone();
                        d.operands[0] = Operand::IdRef(n);
                        new_decorations.push(d);
                    }
                }
            }
        }
    }
    module.annotations.extend(new_decorations);
    module.functions.extend(clones);
    for ep in &mut module.entry_points {
        if let [Operand::ExecutionModel(model), Operand::IdRef(root), ..] =
            ep.operands.as_mut_slice()
        {
            if *model != ExecutionModel::Fragment {
                if let Some(&c) = clone_of.get(root) {
                    *root = c;
                }
            }
        }
    }
    Ok((twins, clone_of))
}

fn all_instructions(f: &mut Function) -> impl Iterator<Item = &mut Instruction> {
    f.def
        .iter_mut()
        .chain(f.parameters.iter_mut())
        .chain(
            f.blocks
                .iter_mut()
                .flat_map(|b| b.label.iter_mut().chain(b.instructions.iter_mut())),
        )
        .chain(f.end.iter_mut())
}

fn remap_operands(inst: &mut Instruction, ids: &HashMap<Id, Id>) {
    for op in &mut inst.operands {
        if let Operand::IdRef(id) = op {
            if let Some(&n) = ids.get(id) {
                *id = n;
            }
        }
    }
}

/// A copy of `f` with fresh result ids (added to `ids`), its references remapped through `ids`.
fn clone_function(f: &Function, em: &mut Emitter, ids: &mut HashMap<Id, Id>) -> Function {
    let mut c = f.clone();
    for inst in all_instructions(&mut c) {
        if let Some(r) = inst.result_id {
            ids.entry(r).or_insert_with(|| em.id());
        }
    }
    for inst in all_instructions(&mut c) {
        if let Some(r) = inst.result_id {
            inst.result_id = ids.get(&r).copied().or(Some(r));
        }
        remap_operands(inst, ids);
    }
    c
}

/// Function id -> the functions it calls.
pub(crate) fn call_graph(module: &Module) -> HashMap<Id, Vec<Id>> {
    let mut calls: HashMap<Id, Vec<Id>> = HashMap::new();
    for f in &module.functions {
        let Some(id) = f.def.as_ref().and_then(|d| d.result_id) else {
            continue;
        };
        let callees = calls.entry(id).or_default();
        for inst in f.blocks.iter().flat_map(|b| &b.instructions) {
            if inst.class.opcode == Op::FunctionCall {
                if let Some(Operand::IdRef(callee)) = inst.operands.first() {
                    callees.push(*callee);
                }
            }
        }
    }
    calls
}

/// Every function the roots' call trees hold.
fn reachable(calls: &HashMap<Id, Vec<Id>>, roots: &[Id]) -> BTreeSet<Id> {
    let mut seen: BTreeSet<Id> = BTreeSet::new();
    let mut stack = roots.to_vec();
    while let Some(f) = stack.pop() {
        if seen.insert(f) {
            stack.extend(calls.get(&f).into_iter().flatten().copied());
        }
    }
    seen
}

/// Whether the call tree from `root` holds one of `targets`.
pub(crate) fn reaches_any(calls: &HashMap<Id, Vec<Id>>, root: Id, targets: &BTreeSet<Id>) -> bool {
    reachable(calls, &[root])
        .iter()
        .any(|f| targets.contains(f))
}
