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
    let reaches_flat = callers_of(&calls, &loads_flat);
    let affected: BTreeSet<Id> = in_other.intersection(&reaches_flat).copied().collect();
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
    // What every affected function refers to differently: the twins and the clones. One map for
    // all of them (a map per function made this quadratic: 270 MB on a 10 MB module).
    let shared: HashMap<Id, Id> = twins
        .iter()
        .chain(clone_of.iter())
        .map(|(a, b)| (*a, *b))
        .collect();
    // Per clone, its values' new ids, in the order the clones are made.
    let mut renamed: Vec<HashMap<Id, Id>> = Vec::new();
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
                // A copy gets new ids for every value: the elided instructions come back first.
                if let Some(words) = em.source {
                    elide::expand(function, words).ok_or_else(|| LowerError::Invalid {
                        result_id: id,
                        message: "the function's instructions no longer parse".to_owned(),
                    })?;
                }
                let mut own = HashMap::new();
                own.insert(id, new_id);
                let clone = clone_function(function, em, &shared, &mut own);
                renamed.push(own);
                clones.push(clone);
            }
            None => {
                for inst in all_instructions(function) {
                    remap_operands(inst, &shared, &HashMap::new());
                }
            }
        }
    }
    // Decorations of the cloned values (RelaxedPrecision, NoContraction) go with them: per clone,
    // in the order of the annotations.
    let mut decorated: HashMap<Id, Vec<usize>> = HashMap::new();
    for (i, a) in module.annotations.iter().enumerate() {
        if a.class.opcode == Op::Decorate {
            if let Some(Operand::IdRef(t)) = a.operands.first() {
                decorated.entry(*t).or_default().push(i);
            }
        }
    }
    let mut new_decorations = Vec::new();
    for own in &renamed {
        let mut found: Vec<(usize, Id)> = own
            .iter()
            .flat_map(|(old, new)| {
                decorated
                    .get(old)
                    .into_iter()
                    .flatten()
                    .map(move |&i| (i, *new))
            })
            .collect();
        found.sort_unstable();
        for (i, new) in found {
            let mut d = module.annotations[i].clone();
            d.operands[0] = Operand::IdRef(new);
            new_decorations.push(d);
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

/// Renames the ids `inst` refers to: through `own` (a clone's values) first, then `shared`.
fn remap_operands(inst: &mut Instruction, shared: &HashMap<Id, Id>, own: &HashMap<Id, Id>) {
    for op in &mut inst.operands {
        if let Operand::IdRef(id) = op {
            if let Some(&n) = own.get(id).or_else(|| shared.get(id)) {
                *id = n;
            }
        }
    }
}

/// A copy of `f` with fresh result ids (added to `own`, which may hold the function's own new
/// id), its references remapped through `own` and `shared`.
fn clone_function(
    f: &Function,
    em: &mut Emitter,
    shared: &HashMap<Id, Id>,
    own: &mut HashMap<Id, Id>,
) -> Function {
    let mut c = f.clone();
    for inst in all_instructions(&mut c) {
        if let Some(r) = inst.result_id {
            if !shared.contains_key(&r) {
                own.entry(r).or_insert_with(|| em.id());
            }
        }
    }
    for inst in all_instructions(&mut c) {
        if let Some(r) = inst.result_id {
            inst.result_id = own.get(&r).or_else(|| shared.get(&r)).copied().or(Some(r));
        }
        remap_operands(inst, shared, own);
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

/// Every function whose call tree holds one of `targets` (the targets included): one walk up
/// the call graph, where asking each function on its own walks down it once per function.
fn callers_of(calls: &HashMap<Id, Vec<Id>>, targets: &BTreeSet<Id>) -> BTreeSet<Id> {
    let mut callers: HashMap<Id, Vec<Id>> = HashMap::new();
    for (&caller, callees) in calls {
        for &callee in callees {
            callers.entry(callee).or_default().push(caller);
        }
    }
    let mut seen: BTreeSet<Id> = BTreeSet::new();
    let mut stack: Vec<Id> = targets.iter().copied().collect();
    while let Some(f) = stack.pop() {
        if seen.insert(f) {
            stack.extend(callers.get(&f).into_iter().flatten().copied());
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
