//! One built-in variable per stage kind where the code that loads it is shared.
//!
//! Vulkan wants integer `Input` variables of a fragment entry point decorated `Flat`
//! (VUID-StandaloneSpirv-Flat-04744: "Any variable with integer or double-precision
//! floating-point type and with `Input` `Storage` `Class` in a fragment shader, must be decorated
//! `Flat`"), and the new built-ins the rewrites load are `Flat` when the module has a fragment
//! entry point. Only one stage forbids that decoration on an input: "The `Flat`,
//! `NoPerspective`, `Sample`, and `Centroid` decorations must not be used on variables with the
//! `Input` storage class in a vertex shader" (VUID-StandaloneSpirv-Flat-06202). No rule of the
//! Vulkan spec forbids `Flat` on the inputs of compute, task, mesh, geometry, tessellation or
//! ray stages (VUID-StandaloneSpirv-Flat-04670 only wants `Input` or `Output`), so those share
//! the fragment shader's code and variables.
//!
//! spirv-val checks VUID 06202 more broadly than the spec words it: an entry point's `Flat` input
//! is refused when its function is the entry point of a vertex shader *or of more than one
//! execution model* (`validate_decorations.cpp`, the same in 2023.1 and today). So the entry
//! points that load undecorated twins ([`twin_entry_points`]) are the vertex ones and those whose
//! function is also the entry point of another execution model. A function reached from both
//! kinds is cloned for the twin loaders, and those entry points call (or are) the clones.
//!
//! Also which functions only entry points of some stages reach ([`only_reached_from`]): a
//! naga-like consumer takes the `SubgroupSize` built-in in compute and fragment shaders only.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rspirv::dr::{Function, Instruction, Module, Operand};
use spirv::{Decoration, ExecutionModel, Op};

use crate::elide::Renames;
use crate::emit::{Emitter, Id};
use crate::LowerError;

/// What [`split`] made for the entry points that are not fragment shaders.
#[derive(Default)]
pub(crate) struct Split {
    /// Flat built-in -> its twin.
    pub twins: BTreeMap<Id, Id>,
    /// Function -> its clone.
    pub clone_of: HashMap<Id, Id>,
}

/// Per entry point (in `module.entry_points` order), whether it must not list a `Flat` input and
/// so loads the undecorated twins: a vertex shader (VUID-StandaloneSpirv-Flat-06202), or any
/// stage but fragment whose function is also the entry point of another execution model (where
/// spirv-val applies that VUID too; see the module doc). A fragment shader never does: it needs
/// the decoration (VUID-StandaloneSpirv-Flat-04744).
pub(crate) fn twin_entry_points(module: &Module) -> Vec<bool> {
    let mut models: HashMap<Id, Vec<ExecutionModel>> = HashMap::new();
    for ep in &module.entry_points {
        if let [Operand::ExecutionModel(model), Operand::IdRef(root), ..] = ep.operands.as_slice() {
            let m = models.entry(*root).or_default();
            if !m.contains(model) {
                m.push(*model);
            }
        }
    }
    module
        .entry_points
        .iter()
        .map(|ep| match ep.operands.as_slice() {
            [Operand::ExecutionModel(model), Operand::IdRef(root), ..] => {
                *model != ExecutionModel::Fragment
                    && (*model == ExecutionModel::Vertex
                        || models.get(root).is_some_and(|m| m.len() > 1))
            }
            _ => false,
        })
        .collect()
}

/// The new built-ins decorated `Flat` (integer inputs, when the module has a fragment stage).
pub(crate) fn flat_builtins(em: &Emitter) -> BTreeSet<Id> {
    em.new_annotations
        .iter()
        .filter_map(|a| match a.operands.as_slice() {
            [Operand::IdRef(v), Operand::Decoration(Decoration::Flat)]
                if em.new_builtins.contains(v) =>
            {
                Some(*v)
            }
            _ => None,
        })
        .collect()
}

/// Whether one of `insts` refers to a built-in of `flat`.
pub(crate) fn loads_flat<'a>(
    mut insts: impl Iterator<Item = &'a Instruction>,
    flat: &BTreeSet<Id>,
) -> bool {
    insts.any(|i| {
        i.operands
            .iter()
            .any(|o| matches!(o, Operand::IdRef(v) if flat.contains(v)))
    })
}

/// Splits the code that loads `Flat` built-ins between the entry points that list them and those
/// that load twins (`twin_entry`, from [`twin_entry_points`] before the split).
/// Returns, for the twin loaders, flat built-in -> its twin, and function -> its clone.
pub(crate) fn split(
    module: &mut Module,
    em: &mut Emitter,
    twin_entry: &[bool],
) -> Result<Split, LowerError> {
    let flat = flat_builtins(em);
    if flat.is_empty() || !twin_entry.contains(&true) {
        return Ok(Default::default());
    }
    let calls = call_graph(module);
    // Functions whose call tree loads a flat built-in.
    let loads: BTreeSet<Id> = module
        .functions
        .iter()
        .filter_map(|f| {
            let id = f.def.as_ref()?.result_id?;
            let insts = f.blocks.iter().flat_map(|b| &b.instructions);
            loads_flat(insts, &flat).then_some(id)
        })
        .collect();
    let Some(mut plan) = plan(&module.entry_points, twin_entry, &calls, &loads, &flat, em) else {
        return Ok(Default::default());
    };
    let mut made = Vec::new();
    let mut clones = Vec::new();
    for function in &mut module.functions {
        let Some(id) = function.def.as_ref().and_then(|d| d.result_id) else {
            continue;
        };
        if !plan.affected.contains(&id) {
            continue;
        }
        if plan.clone_of.contains_key(&id) {
            let first = em.bound();
            fresh_ids(function, em, &mut plan.renames);
            made.push((id, first..em.bound()));
            clones.push(clone_function(function, &plan.renames));
        } else {
            for inst in all_instructions(function) {
                rename_operands(inst, &plan.renames);
            }
        }
    }
    module.functions.extend(clones);
    Ok(finish_split(module, twin_entry, plan, &made))
}

/// What [`plan`] decides: the twins of the flat built-ins, the functions to clone, the
/// functions to change (cloned, or renamed in place), and old id -> new id so far.
pub(crate) struct Plan {
    pub twins: BTreeMap<Id, Id>,
    pub clone_of: HashMap<Id, Id>,
    pub affected: BTreeSet<Id>,
    pub renames: Renames,
}

/// Decides [`split`]'s work from the call graph and the functions that load a `flat` built-in
/// (`loads`), and declares the twins; `None` when no twin loader reaches a flat built-in.
pub(crate) fn plan(
    entry_points: &[Instruction],
    twin_entry: &[bool],
    calls: &HashMap<Id, Vec<Id>>,
    loads: &BTreeSet<Id>,
    flat: &BTreeSet<Id>,
    em: &mut Emitter,
) -> Option<Plan> {
    let (mut flat_roots, mut twin_roots) = (Vec::new(), Vec::new());
    for (ep, &twin) in entry_points.iter().zip(twin_entry) {
        if let [_, Operand::IdRef(root), ..] = ep.operands.as_slice() {
            if twin {
                twin_roots.push(*root);
            } else {
                flat_roots.push(*root);
            }
        }
    }
    let in_flat = reachable(calls, &flat_roots);
    let in_twin = reachable(calls, &twin_roots);
    let reaches_flat = callers_of(calls, loads);
    let affected: BTreeSet<Id> = in_twin.intersection(&reaches_flat).copied().collect();
    if affected.is_empty() {
        return None;
    }
    // Undecorated twins of the flat built-ins, for the twin loaders.
    let mut twins: BTreeMap<Id, Id> = BTreeMap::new();
    for &var in flat {
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
    // Functions shared with an entry point that lists the flat built-ins get a clone; the others
    // load the twins in place.
    let mut clone_of: HashMap<Id, Id> = HashMap::new();
    for &f in &affected {
        if in_flat.contains(&f) {
            clone_of.insert(f, em.id());
        }
    }
    // Old id -> new id, for every function of the twin loaders: the twins and the clones, and
    // (filled by the caller) for each clone its values (fresh ids in instruction order).
    let mut renames = Renames::default();
    for (&old, &new) in twins.iter().chain(clone_of.iter()) {
        renames.insert(old, new);
    }
    Some(Plan {
        twins,
        clone_of,
        affected,
        renames,
    })
}

/// The functions that twin loaders reach and no other entry point does (from the roots alone,
/// before any rewrite: the helpers the rewrites add call no function of the input).
pub(crate) fn twin_only(
    entry_points: &[Instruction],
    twin_entry: &[bool],
    calls: &HashMap<Id, Vec<Id>>,
) -> BTreeSet<Id> {
    let (mut flat_roots, mut twin_roots) = (Vec::new(), Vec::new());
    for (ep, &twin) in entry_points.iter().zip(twin_entry) {
        if let [_, Operand::IdRef(root), ..] = ep.operands.as_slice() {
            if twin {
                twin_roots.push(*root);
            } else {
                flat_roots.push(*root);
            }
        }
    }
    let in_flat = reachable(calls, &flat_roots);
    reachable(calls, &twin_roots)
        .into_iter()
        .filter(|f| !in_flat.contains(f))
        .collect()
}

/// The end of [`split`] once every affected function is cloned or renamed (`made`: per clone,
/// in the order they were made, the function's id and the range of its values' new ids): the
/// decorations of the cloned values are copied and the twin loaders' entry points call the
/// clones.
pub(crate) fn finish_split(
    module: &mut Module,
    twin_entry: &[bool],
    plan: Plan,
    made: &[(Id, std::ops::Range<Id>)],
) -> Split {
    let Plan {
        twins,
        clone_of,
        renames,
        ..
    } = plan;
    // Decorations of the cloned values (RelaxedPrecision, NoContraction) go with them: clone by
    // clone, in the order of the annotations.
    let clone_index = |old: Id, new: Id| {
        made.iter().position(|(f, _)| *f == old).or_else(|| {
            let k = made.partition_point(|(_, r)| r.end <= new);
            made.get(k).filter(|(_, r)| r.contains(&new)).map(|_| k)
        })
    };
    let mut found: Vec<(usize, usize, Id)> = Vec::new();
    for (i, a) in module.annotations.iter().enumerate() {
        if a.class.opcode != Op::Decorate {
            continue;
        }
        let Some(&Operand::IdRef(t)) = a.operands.first() else {
            continue;
        };
        if twins.contains_key(&t) {
            continue;
        }
        if let Some(new) = renames.get(t) {
            if let Some(k) = clone_index(t, new) {
                found.push((k, i, new));
            }
        }
    }
    found.sort_unstable();
    let mut new_decorations = Vec::with_capacity(found.len());
    for (_, i, new) in found {
        let mut d = module.annotations[i].clone();
        d.operands[0] = Operand::IdRef(new);
        new_decorations.push(d);
    }
    module.annotations.extend(new_decorations);
    for (ep, &twin) in module.entry_points.iter_mut().zip(twin_entry) {
        if let [_, Operand::IdRef(root), ..] = ep.operands.as_mut_slice() {
            if twin {
                if let Some(&c) = clone_of.get(root) {
                    *root = c;
                }
            }
        }
    }
    Split { twins, clone_of }
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

/// Renames the ids every instruction of `f` refers to (not their result ids).
pub(crate) fn rename_function(f: &mut Function, renames: &Renames) {
    for inst in all_instructions(f) {
        rename_operands(inst, renames);
    }
}

/// Renames the ids `inst` refers to (not its result id).
pub(crate) fn rename_operands(inst: &mut Instruction, renames: &Renames) {
    for op in &mut inst.operands {
        if let Operand::IdRef(id) = op {
            if let Some(n) = renames.get(*id) {
                *id = n;
            }
        }
    }
}

/// Gives every value `f` defines (a function held whole: the whole-module pass's, or a helper)
/// a fresh id in `renames` (which holds the function's own new id), in instruction order.
pub(crate) fn fresh_ids(f: &Function, em: &mut Emitter, renames: &mut Renames) {
    for r in crate::elide::all_instructions(f).filter_map(|i| i.result_id) {
        if !renames.contains(r) {
            renames.insert(r, em.id());
        }
    }
}

/// A copy of `f` (which holds no placeholders: a `dr::Module` lowered in place) with the fresh
/// ids [`fresh_ids`] gave it, its references renamed.
fn clone_function(f: &Function, renames: &Renames) -> Function {
    let mut c = f.clone();
    for inst in all_instructions(&mut c) {
        renames.apply(inst);
    }
    c
}

/// Adds to `calls` the clones of the functions `ids`: a clone calls what its original calls,
/// renamed.
pub(crate) fn add_clone_calls(
    calls: &mut HashMap<Id, Vec<Id>>,
    ids: impl Iterator<Item = Id>,
    renames: &Renames,
) {
    for id in ids {
        let (Some(clone), Some(callees)) = (renames.get(id), calls.get(&id)) else {
            continue;
        };
        let callees = callees
            .iter()
            .map(|&c| renames.get(c).unwrap_or(c))
            .collect();
        calls.insert(clone, callees);
    }
}

/// The functions that only entry points of the `allowed` execution models reach (at least one
/// of them): code emitted there may use what only those stages accept.
pub(crate) fn only_reached_from(module: &Module, allowed: &[ExecutionModel]) -> BTreeSet<Id> {
    only_reached_through(&module.entry_points, &call_graph(module), allowed)
}

/// [`only_reached_from`] with the call graph given (`lower_words` reads it from the words
/// before it loads a function: [`call_graph_of_words`]).
pub(crate) fn only_reached_through(
    entry_points: &[Instruction],
    calls: &HashMap<Id, Vec<Id>>,
    allowed: &[ExecutionModel],
) -> BTreeSet<Id> {
    let (mut ok_roots, mut other_roots) = (Vec::new(), Vec::new());
    for ep in entry_points {
        if let [Operand::ExecutionModel(model), Operand::IdRef(root), ..] = ep.operands.as_slice() {
            if allowed.contains(model) {
                ok_roots.push(*root);
            } else {
                other_roots.push(*root);
            }
        }
    }
    let other = reachable(calls, &other_roots);
    reachable(calls, &ok_roots)
        .into_iter()
        .filter(|f| !other.contains(f))
        .collect()
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

/// [`call_graph`] read from a module's words (`OpFunction`'s result id, `OpFunctionCall`'s
/// callee): what `lower_words` needs to know before it has loaded the functions. Words that do
/// not hold whole instructions end the walk (the loader reports them).
pub(crate) fn call_graph_of_words(words: &[u32]) -> HashMap<Id, Vec<Id>> {
    let mut calls: HashMap<Id, Vec<Id>> = HashMap::new();
    let mut current = None;
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        let Some(inst) = words.get(at..at + count).filter(|_| count > 0) else {
            break;
        };
        match (first & 0xffff, inst) {
            (op, [_, _, id, ..]) if op == Op::Function as u32 => {
                calls.entry(*id).or_default();
                current = Some(*id);
            }
            (op, [_, _, _, callee, ..]) if op == Op::FunctionCall as u32 => {
                if let Some(f) = current {
                    calls.entry(f).or_default().push(*callee);
                }
            }
            _ => {}
        }
        at += count;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A module with these entry points (execution model, function) and nothing else.
    fn entries(eps: &[(ExecutionModel, Id)]) -> Module {
        let mut m = Module::new();
        for &(model, root) in eps {
            m.entry_points.push(Instruction::new(
                Op::EntryPoint,
                None,
                None,
                vec![
                    Operand::ExecutionModel(model),
                    Operand::IdRef(root),
                    Operand::LiteralString("main".into()),
                ],
            ));
        }
        m
    }

    #[test]
    fn only_vertex_stages_and_shared_roots_load_twins() {
        use ExecutionModel as E;
        // Every stage but vertex may list a `Flat` input (VUID-StandaloneSpirv-Flat-06202).
        for model in [
            E::GLCompute,
            E::Geometry,
            E::TessellationControl,
            E::TessellationEvaluation,
            E::TaskEXT,
            E::MeshEXT,
            E::RayGenerationKHR,
        ] {
            let m = entries(&[(E::Fragment, 1), (model, 2)]);
            assert_eq!(twin_entry_points(&m), [false, false], "{model:?}");
        }
        let m = entries(&[(E::Fragment, 1), (E::Vertex, 2)]);
        assert_eq!(twin_entry_points(&m), [false, true]);
        // One function the entry point of two models: spirv-val refuses a `Flat` input there.
        let m = entries(&[(E::Fragment, 1), (E::GLCompute, 1), (E::GLCompute, 2)]);
        assert_eq!(twin_entry_points(&m), [false, true, false]);
        // Two fragment entry points on one function: one model, the decoration stays.
        let m = entries(&[(E::Fragment, 1), (E::Fragment, 1)]);
        assert_eq!(twin_entry_points(&m), [false, false]);
    }
}
