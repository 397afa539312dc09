//! `lower_words` one function at a time: the memory bound on code the pass rewrites.
//!
//! The loader hands each function to [`Streamer`] as soon as rspirv's parser has read it
//! ([`loader::load_streaming`]); the function is rewritten (`driver::lower_function`), written
//! into the output's body (its placeholders copied from the input, `elide::assemble_function`)
//! and dropped, so at most one user function is ever held in rspirv's form.
//! What the driver's whole-module pass reads from every function is recorded on the way
//! instead: the call graph, the capabilities the kept instructions need, whether a KHR ballot
//! instruction or a Subgroup memory scope is left, which functions were rewritten.
//! At the end the globals (held as in the whole-module pass) get the new types, constants,
//! built-ins, decorations, imports and the requirements' changes, and are written in front of
//! the body in its own buffer (room for them is reserved when the body starts).
//! If no function needed a rewrite and nothing global is removable, the input is returned.
//!
//! Where vertex-like stages must load undecorated twins of the new `Flat` built-ins
//! (`stages`), the split is decided at the end from what was recorded (which functions refer to
//! a flat built-in, the call graph; which functions only twin loaders reach is read from the
//! words before the load): a function only twin loaders reach is renamed in place in the body
//! (renaming ids never changes an instruction's length; its elided runs, recorded while it is
//! written, are left as they are, as the whole-module pass leaves placeholders), and the copy of
//! a function both kinds of entry point reach is read back from the body's range of the
//! rewritten function and appended, every id renamed through `elide::Renames`.
//!
//! Where a naga-like target lacks the mask built-ins, step 1 of `masks` (reads through access
//! chains become whole loads) runs on each function as it comes, the whole loads' ids counted
//! from the words before the load (they come before the emitter's, as in the whole-module
//! pass), and step 3 removes the variables no recorded instruction uses.
//!
//! Inputs of 2^31 words or more are loaded whole (`driver`; placeholders hold 31-bit offsets).

use std::collections::{BTreeSet, HashMap};

use rspirv::binary::Assemble;
use rspirv::dr::{Function, Instruction, Module, Operand};

use crate::emit::{Emitter, Id};
use crate::rewrite::masks;
use crate::{
    driver, elide, hygiene, loader, outline, rewrite, stages, LowerError, LowerOptions, LowerReport,
};

/// The state of a streaming `lower_words` run, from the first function on.
pub(crate) struct Streamer<'t> {
    words: &'t [u32],
    opts: &'t LowerOptions,
    /// Set once the globals are complete.
    run: Option<Run<'t>>,
    /// The first error of the pass; later functions are parsed but not lowered, so that an
    /// error of the loader (which the whole-module pass reports first) still wins.
    error: Option<LowerError>,
}

/// What the pass holds while streaming.
struct Run<'t> {
    em: Emitter<'t>,
    helpers: outline::Helpers,
    counts: HashMap<String, usize>,
    /// Functions whose rewrite allocated ids.
    rewritten: BTreeSet<Id>,
    /// For naga-like targets, the functions that may load `SubgroupSize`.
    size_ok: Option<BTreeSet<Id>>,
    /// Whether the SPIR-V version was checked against the target (done before the first
    /// rewrite, as the whole-module pass does).
    version_checked: bool,
    /// Whether a function needed a rewrite.
    any_rewrite: bool,
    /// Whether the globals hold something the pass removes (then the version was checked).
    removable: bool,
    /// Function id -> the functions it calls (after its rewrite), as `stages::call_graph`.
    calls: HashMap<Id, Vec<Id>>,
    /// The capabilities the functions' kept instructions need (`hygiene::required_capability`).
    used_caps: BTreeSet<u32>,
    /// Whether a KHR ballot instruction is left.
    khr_ballot_left: bool,
    /// Whether a barrier or atomic has a Subgroup memory scope.
    subgroup_memory_scope: bool,
    /// The output's functions and the instructions between them, in order.
    body: Vec<u32>,
    /// Step 1 of `masks` (reads of mask built-ins through access chains become whole loads),
    /// with the id after the last whole load's, which the emitter's ids start from.
    normalize: Option<(masks::Normalize, Id)>,
    /// The mask variables step 3 of `masks` may remove, and those the functions use.
    mask_vars: Option<BTreeSet<Id>>,
    mask_uses: BTreeSet<Id>,
    /// When vertex-like stages may need copies of functions: what the copies need.
    twins: Option<Twins>,
}

/// What `stages::split` needs of the functions already written, when some entry points load
/// twins of the `Flat` built-ins.
struct Twins {
    /// Per entry point, whether it loads the twins (`stages::twin_entry_points`).
    twin_entry: Vec<bool>,
    /// The functions that only twin loaders reach: renamed in place if they reach a flat
    /// built-in, so their elided runs (which are not renamed) are recorded.
    twin_only: BTreeSet<Id>,
    /// The user functions, in order.
    written: Vec<Written>,
}

/// A function written into the body.
struct Written {
    id: Id,
    /// Its words in the body.
    range: std::ops::Range<usize>,
    /// Whether it refers to a `Flat` built-in.
    loads_flat: bool,
    /// For a function of [`Twins::twin_only`]: its elided runs, (offset, count) in the body.
    elided: Vec<(usize, usize)>,
}

/// Lowers `words` one function at a time. `words` must be fewer than 2^31.
pub(crate) fn lower_streaming(
    words: &[u32],
    opts: &LowerOptions,
) -> Result<(Vec<u32>, LowerReport), LowerError> {
    let mut streamer = Streamer {
        words,
        opts,
        run: None,
        error: None,
    };
    let mut module = loader::load_streaming(words, &mut streamer)?;
    if let Some(e) = streamer.error {
        return Err(e);
    }
    let run = streamer.run.ok_or_else(|| LowerError::Invalid {
        result_id: 0,
        message: "the module's globals never reached the pass".to_owned(),
    })?;
    run.finish(&mut module, words, opts)
}

impl loader::Stream for Streamer<'_> {
    fn globals(&mut self, module: &mut Module) {
        let fragment = module.entry_points.iter().any(|e| {
            matches!(
                e.operands.first(),
                Some(Operand::ExecutionModel(spirv::ExecutionModel::Fragment))
            )
        });
        // Only new built-ins of a module with a fragment stage are `Flat`; then the vertex-like
        // stages load twins, and the functions they share are copied at the end.
        let twin_entry = stages::twin_entry_points(module);
        let twins = (fragment && twin_entry.contains(&true)).then_some(twin_entry);
        match Run::start(module, self.words, self.opts, twins) {
            Ok(run) => self.run = Some(run),
            Err(e) => self.error = Some(e),
        }
    }

    fn function(&mut self, module: &Module, f: Function, elided_types: &mut Vec<(u32, u32)>) {
        let Some(run) = self.run.as_mut().filter(|_| self.error.is_none()) else {
            elided_types.clear();
            return;
        };
        if let Err(e) = run.function(module, f, elided_types, self.words, self.opts) {
            self.error = Some(e);
        }
    }

    fn between(&mut self, inst: Instruction) {
        if let Some(run) = self.run.as_mut() {
            inst.assemble_into(&mut run.body);
        }
    }
}

impl<'t> Run<'t> {
    /// The checks and indexes of the whole-module pass that read only the globals.
    fn start(
        module: &mut Module,
        words: &'t [u32],
        opts: &'t LowerOptions,
        twin_entry: Option<Vec<bool>>,
    ) -> Result<Self, LowerError> {
        let target = &opts.target;
        driver::check_environment(module, target)?;
        driver::check_execution_modes(module, target)?;
        let max_lanes = opts
            .subgroup_size
            .unwrap_or(target.max_subgroup_size)
            .clamp(1, 128);
        let removable = rewrite::has_removable_globals(module, target)
            || hygiene::has_removable(module, target);
        if removable {
            driver::check_version(module, target)?;
        }
        // The whole loads of step 1 take the ids after the input's, as the whole-module pass
        // gives them before the emitter starts.
        let normalize = masks::normalize_streamed(module, target, words).map(|(n, loads)| {
            let end = n.next + loads;
            if let Some(h) = module.header.as_mut() {
                h.bound = end;
            }
            (n, end)
        });
        // The value types of the elided instructions arrive function by function; the table
        // starts at the size the sparse load gives it.
        let bound = words.get(3).copied().unwrap_or(1) as usize;
        let types = vec![0; bound.min(words.len() / 2 + 1)];
        let mut em = Emitter::new(module, target, max_lanes, Some(types));
        em.float_partition = opts.float_partition;
        em.partition_form = opts.partition_form;
        // What must be known of the call graph before a function is rewritten is read from the
        // words (the helpers the rewrites add call no function of the input).
        let calls = (target.restrictions.no_mask_builtins || twin_entry.is_some())
            .then(|| stages::call_graph_of_words(words));
        let size_ok = calls
            .as_ref()
            .filter(|_| target.restrictions.no_mask_builtins)
            .map(|calls| {
                stages::only_reached_through(
                    &module.entry_points,
                    calls,
                    &[
                        spirv::ExecutionModel::GLCompute,
                        spirv::ExecutionModel::Fragment,
                    ],
                )
            });
        let twins = twin_entry.map(|twin_entry| Twins {
            twin_only: calls.as_ref().map_or_else(BTreeSet::new, |calls| {
                stages::twin_only(&module.entry_points, &twin_entry, calls)
            }),
            twin_entry,
            written: Vec::new(),
        });
        // Room for an output a quarter larger than the input and its new globals: the part
        // never written is address space, not memory, and the body rarely has to move.
        let room = words.len() + words.len() / 4 + 4096;
        Ok(Run {
            helpers: outline::Helpers::new(module),
            em,
            counts: HashMap::new(),
            rewritten: BTreeSet::new(),
            size_ok,
            version_checked: removable,
            any_rewrite: false,
            removable,
            calls: HashMap::new(),
            used_caps: BTreeSet::new(),
            khr_ballot_left: false,
            subgroup_memory_scope: false,
            body: Vec::with_capacity(room),
            twins,
            normalize,
            mask_vars: masks::removable_vars(module, target),
            mask_uses: BTreeSet::new(),
        })
    }

    /// Rewrites one function, records what the end needs of it, writes it into the body.
    fn function(
        &mut self,
        module: &Module,
        mut f: Function,
        elided_types: &mut Vec<(u32, u32)>,
        words: &[u32],
        opts: &LowerOptions,
    ) -> Result<(), LowerError> {
        if let Some((n, _)) = self.normalize.as_mut() {
            masks::normalize_function(&mut f, n);
        }
        let em = &mut self.em;
        for (id, ty) in elided_types.drain(..) {
            em.set_value_type(id, ty);
        }
        let kept = f
            .parameters
            .iter()
            .chain(f.blocks.iter().flat_map(|b| b.instructions.iter()));
        for inst in kept {
            if let (Some(t), Some(r)) = (inst.result_type, inst.result_id) {
                em.set_value_type(r, t);
            }
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
            if !self.version_checked {
                driver::check_version(module, &opts.target)?;
                self.version_checked = true;
            }
            let before = em.bound();
            em.size_builtin_ok = self
                .size_ok
                .as_ref()
                .is_none_or(|ok| id.is_some_and(|id| ok.contains(&id)));
            moved = driver::lower_function(&mut f, em, &mut self.counts, &mut self.helpers)?;
            if em.bound() != before {
                self.rewritten.extend(id);
            }
        }
        self.record(&f);
        let parents = (!moved.is_empty()).then_some(&moved);
        let start = self.body.len();
        elide::assemble_function(&f, words, parents, &mut self.body)?;
        if let (Some(tw), Some(id)) = (self.twins.as_mut(), id) {
            let flat = stages::flat_builtins(&self.em);
            let insts = f.blocks.iter().flat_map(|b| &b.instructions);
            let mut elided = Vec::new();
            if tw.twin_only.contains(&id) {
                let mut at = start;
                for inst in elide::all_instructions(&f) {
                    let count = elide::word_count(inst);
                    if elide::range_of(inst).is_some() {
                        elided.push((at, count));
                    }
                    at += count;
                }
            }
            tw.written.push(Written {
                id,
                range: start..self.body.len(),
                loads_flat: stages::loads_flat(insts, &flat),
                elided,
            });
        }
        Ok(())
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

    /// `stages::split` on the written functions and the helpers (still held): the functions
    /// only twin loaders reach are renamed in place in the body (renaming ids never changes an
    /// instruction's length), the helpers are written, and the copies of the functions that
    /// both kinds of entry point reach follow in the body, read back from it with every id
    /// renamed; the call graph and the rewritten functions take the copies in.
    fn split(
        &mut self,
        module: &mut Module,
        tw: Twins,
        helpers: &mut [Function],
        words: &[u32],
    ) -> Result<stages::Split, LowerError> {
        let em = &mut self.em;
        let flat = stages::flat_builtins(em);
        let mut loads: BTreeSet<Id> = tw
            .written
            .iter()
            .filter(|w| w.loads_flat)
            .map(|w| w.id)
            .collect();
        for h in helpers.iter() {
            let insts = h.blocks.iter().flat_map(|b| &b.instructions);
            if let (true, Some(id)) = (
                stages::loads_flat(insts, &flat),
                h.def.as_ref().and_then(|d| d.result_id),
            ) {
                loads.insert(id);
            }
        }
        let plan = (!flat.is_empty())
            .then(|| {
                stages::plan(
                    &module.entry_points,
                    &tw.twin_entry,
                    &self.calls,
                    &loads,
                    &flat,
                    em,
                )
            })
            .flatten();
        let Some(mut plan) = plan else {
            for helper in helpers.iter() {
                elide::assemble_function(helper, words, None, &mut self.body)?;
            }
            return Ok(stages::Split::default());
        };
        let header = words.get(..5).unwrap_or(&[]);
        let no_parse = |id: Id| LowerError::Invalid {
            result_id: id,
            message: "the function's instructions no longer parse".to_owned(),
        };
        let mut slots = elide::ResultSlots::default();
        let mut made = Vec::new();
        // Per copy, in the order they follow the functions: the original's id and words.
        let mut copies: Vec<(Id, std::ops::Range<usize>)> = Vec::new();
        let mut renamed_in_place = Vec::new();
        for w in &tw.written {
            if !plan.affected.contains(&w.id) {
                continue;
            }
            if plan.clone_of.contains_key(&w.id) {
                let first = em.bound();
                let run = self
                    .body
                    .get(w.range.clone())
                    .ok_or_else(|| no_parse(w.id))?;
                let renames = &mut plan.renames;
                elide::for_each_result_in(run, &mut slots, |r| {
                    if !renames.contains(r) {
                        renames.insert(r, em.id());
                    }
                })
                .ok_or_else(|| no_parse(w.id))?;
                made.push((w.id, first..em.bound()));
                copies.push((w.id, w.range.clone()));
            } else {
                rename_in_place(&mut self.body, w, header, em, &plan.renames)
                    .ok_or_else(|| no_parse(w.id))?;
                renamed_in_place.push(w.id);
            }
        }
        let mut helper_copies = Vec::new();
        for h in helpers.iter_mut() {
            let Some(id) = h.def.as_ref().and_then(|d| d.result_id) else {
                continue;
            };
            if !plan.affected.contains(&id) {
                continue;
            }
            if plan.clone_of.contains_key(&id) {
                let first = em.bound();
                stages::fresh_ids(h, em, &mut plan.renames);
                made.push((id, first..em.bound()));
                helper_copies.push(id);
            } else {
                stages::rename_function(h, &plan.renames);
                renamed_in_place.push(id);
            }
        }
        for h in helpers.iter() {
            let start = self.body.len();
            elide::assemble_function(h, words, None, &mut self.body)?;
            if let Some(id) = h.def.as_ref().and_then(|d| d.result_id) {
                if helper_copies.contains(&id) {
                    copies.push((id, start..self.body.len()));
                }
            }
        }
        for (id, range) in &copies {
            let run = self.body.get(range.clone()).ok_or_else(|| no_parse(*id))?;
            let context = elide::switch_context(run, |v| int_type(em, v));
            let insts =
                elide::parse_instructions(header, &context, run).ok_or_else(|| no_parse(*id))?;
            for mut inst in insts {
                plan.renames.apply(&mut inst);
                inst.assemble_into(&mut self.body);
            }
        }
        // The call graph as the whole-module pass sees it after the split.
        for id in renamed_in_place {
            if let Some(callees) = self.calls.get_mut(&id) {
                for c in callees {
                    *c = plan.renames.get(*c).unwrap_or(*c);
                }
            }
        }
        stages::add_clone_calls(
            &mut self.calls,
            copies.iter().map(|&(id, _)| id),
            &plan.renames,
        );
        let split = stages::finish_split(module, &tw.twin_entry, plan, &made);
        let copied: Vec<Id> = self
            .rewritten
            .iter()
            .filter_map(|f| split.clone_of.get(f))
            .copied()
            .collect();
        self.rewritten.extend(copied);
        Ok(split)
    }

    /// The end of the whole-module pass (`driver::lower_module` after its loop, and
    /// `finish_globals` without copies), then the globals written in front of the body.
    fn finish(
        mut self,
        module: &mut Module,
        words: &[u32],
        opts: &LowerOptions,
    ) -> Result<(Vec<u32>, LowerReport), LowerError> {
        let target = &opts.target;
        if !self.any_rewrite && !self.removable {
            return Ok((words.to_vec(), LowerReport::default()));
        }
        let before = (module.capabilities.len(), module.extensions.len());
        let mut helpers = std::mem::take(&mut self.helpers.functions);
        for helper in &helpers {
            self.record(helper);
        }
        module.debug_names.append(&mut self.helpers.names);
        let split = match self.twins.take() {
            Some(tw) => self.split(module, tw, &mut helpers, words)?,
            None => {
                for helper in &helpers {
                    elide::assemble_function(helper, words, None, &mut self.body)?;
                }
                stages::Split::default()
            }
        };
        drop(helpers);
        let em = &mut self.em;
        let twin_entry = stages::twin_entry_points(module);
        driver::add_new_globals(
            module,
            em,
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
                        "the whole loads of mask built-ins counted in the words end at id \
                         {end}, those of the loaded functions at id {}",
                        n.next
                    ),
                });
            }
        }
        let masks = self.mask_vars.as_ref().map(|v| (v, &self.mask_uses));
        let removed = rewrite::finish_streamed(module, target, self.khr_ballot_left, masks);
        let used = self
            .used_caps
            .iter()
            .filter_map(|&c| spirv::Capability::from_u32(c))
            .collect();
        hygiene::fix_requirements_with(module, em, opts, scope_needs_cap, used)?;
        driver::check_output_bound(em.bound(), target)?;
        if let Some(h) = module.header.as_mut() {
            h.bound = em.bound();
        }
        let mut rewrites: Vec<(String, usize)> = self.counts.into_iter().collect();
        rewrites.sort();
        let changed = !rewrites.is_empty()
            || removed
            || before != (module.capabilities.len(), module.extensions.len());
        let report = LowerReport { changed, rewrites };
        if !changed {
            return Ok((words.to_vec(), report));
        }
        let mut head = std::mem::take(module).assemble();
        // The input's generator word is kept (as are its version unless raised, and the
        // reserved schema word).
        for k in [2, 4] {
            if let (Some(o), Some(&w)) = (head.get_mut(k), words.get(k)) {
                *o = w;
            }
        }
        let mut out = self.body;
        // In place: the body moves up once, within the room reserved for it.
        out.splice(0..0, head.drain(..));
        Ok((out, report))
    }
}

/// Renames, in `body`, the ids the instructions of the written function `w` refer to, except in
/// its elided runs (as `stages::split` renames a held function); `None` if its words no longer
/// parse or a renamed instruction changed its length.
fn rename_in_place(
    body: &mut [u32],
    w: &Written,
    header: &[u32],
    em: &Emitter,
    renames: &elide::Renames,
) -> Option<()> {
    let mut pieces = Vec::new();
    let mut at = w.range.start;
    for &(offset, count) in &w.elided {
        if offset > at {
            pieces.push(at..offset);
        }
        at = offset + count;
    }
    if at < w.range.end {
        pieces.push(at..w.range.end);
    }
    let mut renamed = Vec::new();
    for piece in pieces {
        let words = body.get_mut(piece)?;
        renamed.clear();
        let context = elide::switch_context(words, |v| int_type(em, v));
        for mut inst in elide::parse_instructions(header, &context, words)? {
            stages::rename_operands(&mut inst, renames);
            inst.assemble_into(&mut renamed);
        }
        if renamed.len() != words.len() {
            return None;
        }
        words.copy_from_slice(&renamed);
    }
    Some(())
}

/// The integer type of value `v` as [`elide::switch_context`] wants it: type id, width,
/// signedness.
fn int_type(em: &Emitter, v: Id) -> Option<(Id, u32, u32)> {
    let ty = em.type_id_of_value(v)?;
    match em.ty_of_id(ty)?.scalar {
        crate::emit::Scalar::Int { width, signed } => {
            Some((ty, u32::from(width), u32::from(signed)))
        }
        _ => None,
    }
}
