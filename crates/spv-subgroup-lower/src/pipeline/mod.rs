//! The pass, once for both entry points: check the module against the target, rewrite it
//! function by function (splitting blocks where a rewrite needs a loop), then fix its globals,
//! interfaces and requirements.
//!
//! [`Pass`] is fed one function at a time, and records on the way what the end of the pass
//! reads of every function (the call graph, the capabilities the kept instructions need,
//! whether a KHR ballot instruction or a Subgroup memory scope is left, which mask variables
//! are used, which functions were rewritten). Where a finished function goes is a [`Sink`]:
//! [`Held`] leaves it in the `dr::Module` that holds it ([`lower_module`], for `lower`), the
//! stream (`stream.rs`, for `lower_words`) writes it out as words and drops it. The sink also
//! makes the copies of functions for vertex-like stages (`stages`), since they are read from
//! where the functions went.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rspirv::dr::{Function, Module, Operand};

use crate::emit::{Emitter, Id};
use crate::rewrite::masks;
use crate::{hygiene, outline, rewrite, stages, LowerError, LowerOptions, LowerReport};

mod checks;
mod function;

pub use checks::MAX_ID_BOUND;
pub(crate) use checks::{
    check_environment, check_execution_modes, check_input_bound, check_output_bound, check_version,
    refuse, DEVICE_MODES, NAGA_STAGES,
};

/// Where the pass puts a function once it is rewritten, and how it copies functions for the
/// vertex-like stages at the end.
pub(crate) trait Sink {
    /// Takes function `f` as rewritten; `moved` are its blocks a rewrite split (original label
    /// -> the label of the block that now holds the original terminator).
    fn function(
        &mut self,
        f: &Function,
        moved: &HashMap<Id, Id>,
        em: &Emitter,
    ) -> Result<(), LowerError>;

    /// Takes the outlined helpers after the last function, and runs `stages::split` on all the
    /// functions: the call graph ([`Pass::calls`]) and the rewritten functions
    /// ([`Pass::rewritten`]) take the copies in.
    fn finish_functions(
        &mut self,
        module: &mut Module,
        helpers: Vec<Function>,
        pass: &mut Pass,
    ) -> Result<stages::Split, LowerError>;
}

/// The sink of `lower`: the functions stay in the module that holds them.
pub(crate) struct Held;

impl Sink for Held {
    fn function(
        &mut self,
        _: &Function,
        _: &HashMap<Id, Id>,
        _: &Emitter,
    ) -> Result<(), LowerError> {
        Ok(())
    }

    fn finish_functions(
        &mut self,
        module: &mut Module,
        mut helpers: Vec<Function>,
        pass: &mut Pass,
    ) -> Result<stages::Split, LowerError> {
        module.functions.append(&mut helpers);
        let twin_entry = stages::twin_entry_points(module);
        let split = stages::split(module, &mut pass.em, &twin_entry)?;
        let copied: Vec<Id> = pass
            .rewritten
            .iter()
            .filter_map(|f| split.clone_of.get(f))
            .copied()
            .collect();
        pass.rewritten.extend(copied);
        pass.calls = stages::call_graph(module);
        Ok(split)
    }
}

/// Where the functions come from, as the start of the pass needs to know.
pub(crate) enum Source<'w> {
    /// A module that holds its functions (the emitter indexes their values at the start).
    Held,
    /// The words of a module whose functions come one at a time (`stream.rs`): the emitter
    /// learns their values as they come, and step 1 of `masks` reads its access chains and
    /// counts its whole loads in the words.
    Words(&'w [u32]),
}

/// The state of the pass, from its start to its end.
pub(crate) struct Pass<'t> {
    opts: &'t LowerOptions,
    pub(crate) em: Emitter<'t>,
    helpers: outline::Helpers,
    counts: HashMap<String, usize>,
    /// Functions whose rewrite allocated ids.
    pub(crate) rewritten: BTreeSet<Id>,
    /// For naga-like targets, the functions that may load `SubgroupSize`.
    size_ok: Option<BTreeSet<Id>>,
    /// The refusal of the module's SPIR-V version, asked before the first rewrite.
    version_refused: Option<LowerError>,
    /// Whether a function needed a rewrite.
    any_rewrite: bool,
    /// Whether the globals hold something the pass removes (then the version was checked).
    removable: bool,
    /// Whether the emitter learns each function's values as it comes ([`Source::Words`]).
    index_values: bool,
    /// Function id -> the functions it calls (after its rewrite), as `stages::call_graph`.
    pub(crate) calls: HashMap<Id, Vec<Id>>,
    /// The capabilities the functions' kept instructions need (`hygiene::required_capability`).
    used_caps: BTreeSet<u32>,
    /// Whether a KHR ballot instruction is left.
    khr_ballot_left: bool,
    /// Whether a barrier or atomic has a Subgroup memory scope.
    subgroup_memory_scope: bool,
    /// Step 1 of `masks` (reads of mask built-ins through access chains become whole loads),
    /// done function by function, with the id after the last whole load's, which the
    /// emitter's ids start from.
    normalize: Option<(masks::Normalize, Id)>,
    /// The mask variables step 3 of `masks` may remove, and those the functions use.
    mask_vars: Option<BTreeSet<Id>>,
    mask_uses: BTreeSet<Id>,
}

impl<'t> Pass<'t> {
    /// The checks and indexes that read only the globals (and, for [`Source::Words`], the
    /// words). `input_calls` is the input's call graph, when the caller has it (or it is needed
    /// for naga-like targets, which take `SubgroupSize` only in compute and fragment stages).
    pub(crate) fn start(
        module: &mut Module,
        opts: &'t LowerOptions,
        source: Source<'_>,
        input_calls: Option<&HashMap<Id, Vec<Id>>>,
    ) -> Result<Self, LowerError> {
        let target = &opts.target;
        check_environment(module, target)?;
        check_execution_modes(module, target)?;
        let max_lanes = opts
            .subgroup_size
            .unwrap_or(target.max_subgroup_size)
            .clamp(1, 128);
        let removable = rewrite::has_removable_globals(module, target)
            || hygiene::has_removable(module, target);
        let version_refused = check_version(module, target).err();
        if removable {
            if let Some(e) = version_refused {
                return Err(e);
            }
        }
        // Step 1 of `masks`: its whole loads take the ids after the input's, before the
        // emitter's, so they are counted first.
        let (normalize, types) = match source {
            Source::Held => (masks::normalize_held(module, target), None),
            Source::Words(words) => {
                // The value types of the elided instructions arrive function by function; the
                // table starts at the size the sparse load gives it.
                let bound = words.get(3).copied().unwrap_or(1) as usize;
                (
                    masks::normalize_streamed(module, target, words),
                    Some(vec![0; bound.min(words.len() / 2 + 1)]),
                )
            }
        };
        let normalize = normalize.map(|(n, loads)| {
            let end = n.next + loads;
            if let Some(h) = module.header.as_mut() {
                h.bound = end;
            }
            (n, end)
        });
        let index_values = types.is_some();
        let mut em = Emitter::new(module, target, max_lanes, types);
        em.float_partition = opts.float_partition;
        em.partition_form = opts.partition_form;
        // naga's validator takes the `SubgroupSize` built-in in compute and fragment entry
        // points only (`VaryingContext::validate_impl` in naga's `valid/interface.rs`; not in
        // vertex shaders): for naga-like consumers (no mask built-ins) the size branch is
        // emitted only in functions that no other stage reaches.
        let size_ok = target.restrictions.no_mask_builtins.then(|| {
            let allowed = [
                spirv::ExecutionModel::GLCompute,
                spirv::ExecutionModel::Fragment,
            ];
            match input_calls {
                Some(calls) => stages::only_reached_through(&module.entry_points, calls, &allowed),
                None => stages::only_reached_from(module, &allowed),
            }
        });
        Ok(Pass {
            opts,
            helpers: outline::Helpers::new(module),
            em,
            counts: HashMap::new(),
            rewritten: BTreeSet::new(),
            size_ok,
            version_refused,
            any_rewrite: false,
            removable,
            index_values,
            calls: HashMap::new(),
            used_caps: BTreeSet::new(),
            khr_ballot_left: false,
            subgroup_memory_scope: false,
            normalize,
            mask_vars: masks::removable_vars(module, &opts.target),
            mask_uses: BTreeSet::new(),
        })
    }

    /// Rewrites function `f` and records what the end needs of it. `elided_types` are the
    /// value types of the instructions a sparse load left in the words (drained). Returns the
    /// blocks a rewrite split (original label -> the label of the block that now holds the
    /// original terminator).
    pub(crate) fn function(
        &mut self,
        f: &mut Function,
        elided_types: &mut Vec<(u32, u32)>,
    ) -> Result<HashMap<Id, Id>, LowerError> {
        if let Some((n, _)) = self.normalize.as_mut() {
            masks::normalize_function(f, n);
        }
        let em = &mut self.em;
        for (id, ty) in elided_types.drain(..) {
            em.set_value_type(id, ty);
        }
        // A held module's values were indexed when the emitter started, but not the whole
        // loads of step 1, made since.
        if self.index_values || self.normalize.is_some() {
            em.index_function_values(f);
        }
        let id = f.def.as_ref().and_then(|d| d.result_id);
        let needs = f
            .blocks
            .iter()
            .flat_map(|b| &b.instructions)
            .any(|i| rewrite::needs_rewrite(i, em));
        let mut moved = HashMap::new();
        if needs {
            self.any_rewrite = true;
            if let Some(e) = self.version_refused.take() {
                return Err(e);
            }
            let before = em.bound();
            em.size_builtin_ok = self
                .size_ok
                .as_ref()
                .is_none_or(|ok| id.is_some_and(|id| ok.contains(&id)));
            moved = function::lower_function(f, em, &mut self.counts, &mut self.helpers)?;
            if em.bound() != before {
                self.rewritten.extend(id);
            }
        }
        self.record(f);
        Ok(moved)
    }

    /// Records what the end of the pass reads of function `f` (as held after its rewrite).
    fn record(&mut self, f: &Function) {
        let Some(id) = f.def.as_ref().and_then(|d| d.result_id) else {
            return;
        };
        let callees = self.calls.entry(id).or_default();
        for inst in f.blocks.iter().flat_map(|b| &b.instructions) {
            if inst.class.opcode == spirv::Op::FunctionCall {
                if let Some(Operand::IdRef(callee)) = inst.operands.first() {
                    callees.push(*callee);
                }
            }
            if let Some(c) = hygiene::required_capability(inst) {
                self.used_caps.insert(c as u32);
            }
            self.khr_ballot_left |= rewrite::leaves_khr_ballot(inst);
            if let Some(vars) = &self.mask_vars {
                masks::record_uses(inst, vars, &mut self.mask_uses);
            }
            self.subgroup_memory_scope |= hygiene::has_subgroup_memory_scope_in(inst, &self.em);
        }
    }

    /// The end of the pass, after the last function: the helpers go to the sink, which copies
    /// functions for vertex-like stages; then the globals get the new types, constants,
    /// built-ins, decorations, imports and the requirements' changes. `report.changed` is false
    /// when the module needs nothing (then nothing of it was changed).
    pub(crate) fn finish(
        mut self,
        module: &mut Module,
        sink: &mut impl Sink,
    ) -> Result<LowerReport, LowerError> {
        let opts = self.opts;
        let target = &opts.target;
        if !self.any_rewrite && !self.removable {
            return Ok(LowerReport::default());
        }
        let before = (module.capabilities.len(), module.extensions.len());
        let helpers = std::mem::take(&mut self.helpers.functions);
        for helper in &helpers {
            self.record(helper);
        }
        module.debug_names.append(&mut self.helpers.names);
        let split = sink.finish_functions(module, helpers, &mut self)?;
        let twin_entry = stages::twin_entry_points(module);
        add_new_globals(
            module,
            &mut self.em,
            &twin_entry,
            &split.twins,
            &self.calls,
            &self.rewritten,
        );
        let scope_needs_cap = target.target_env.starts_with("vulkan")
            && hygiene::provides_subgroup_scope(module)
            && self.subgroup_memory_scope;
        if let Some((n, end)) = &self.normalize {
            if n.next != *end {
                return Err(LowerError::Invalid {
                    result_id: 0,
                    message: format!(
                        "the whole loads of mask built-ins counted at the start end at id \
                         {end}, those made in the functions at id {}",
                        n.next
                    ),
                });
            }
        }
        if let Some((n, _)) = &self.normalize {
            // The chains step 1 dropped must not keep their names (they would name no id).
            crate::builtin_uses::drop_debug_of(module, &n.dropped);
        }
        let masks = self.mask_vars.as_ref().map(|v| (v, &self.mask_uses));
        let removed = rewrite::finish(module, target, self.khr_ballot_left, masks);
        let used = self
            .used_caps
            .iter()
            .filter_map(|&c| spirv::Capability::from_u32(c))
            .collect();
        hygiene::fix_requirements(module, &self.em, opts, scope_needs_cap, used)?;
        check_output_bound(self.em.bound(), target)?;
        if let Some(h) = module.header.as_mut() {
            h.bound = self.em.bound();
        }
        let mut rewrites: Vec<(String, usize)> = self.counts.into_iter().collect();
        rewrites.sort();
        let changed = !rewrites.is_empty()
            || removed
            || before != (module.capabilities.len(), module.extensions.len());
        Ok(LowerReport { changed, rewrites })
    }
}

/// Lowers a module that holds its functions, in place (`lower`).
pub(crate) fn lower_module(
    module: &mut Module,
    opts: &LowerOptions,
) -> Result<LowerReport, LowerError> {
    let mut pass = Pass::start(module, opts, Source::Held, None)?;
    let mut sink = Held;
    let mut no_elided = Vec::new();
    for f in &mut module.functions {
        let moved = pass.function(f, &mut no_elided)?;
        sink.function(f, &moved, &pass.em)?;
    }
    pass.finish(module, &mut sink)
}

/// Appends the emitter's new types, constants, variables, decorations and import to the module,
/// and lists the built-ins the new code loads in the interface of every entry point whose call
/// tree (`calls`) reaches a `rewritten` function: required from SPIR-V 1.4 on and allowed before.
/// An entry point that must not list a `Flat` input (`twin_entry`, a vertex stage: see
/// `stages.rs`) lists the undecorated twin of a `Flat` built-in (`twins`) instead.
/// [`Pass::finish`] calls it, whichever the sink, and so does the emulation pass.
pub(crate) fn add_new_globals(
    module: &mut Module,
    em: &mut Emitter,
    twin_entry: &[bool],
    twins: &BTreeMap<Id, Id>,
    calls: &HashMap<Id, Vec<Id>>,
    rewritten: &BTreeSet<Id>,
) {
    module.types_global_values.append(&mut em.new_globals);
    module.annotations.append(&mut em.new_annotations);
    if let Some(import) = em.new_ext_import.take() {
        module.ext_inst_imports.push(import);
    }
    for (ep, &twin) in module.entry_points.iter_mut().zip(twin_entry) {
        let Some(&Operand::IdRef(root)) = ep.operands.get(1) else {
            continue;
        };
        if !stages::reaches_any(calls, root, rewritten) {
            continue;
        }
        for &var in &em.used_builtins {
            let var = if twin {
                twins.get(&var).copied().unwrap_or(var)
            } else {
                var
            };
            if !ep
                .operands
                .iter()
                .skip(2)
                .any(|o| *o == Operand::IdRef(var))
            {
                ep.operands.push(Operand::IdRef(var));
            }
        }
    }
}
