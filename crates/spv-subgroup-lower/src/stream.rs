//! `lower_words` one function at a time: the memory bound on code the pass rewrites.
//!
//! The loader hands each function to [`Streamer`] as soon as rspirv's parser has read it
//! ([`loader::load_streaming`]); the function is rewritten and recorded by the pass
//! (`pipeline::Pass`), written into the output's body by this file's sink ([`Words`]: its
//! placeholders copied from the input, `elide::assemble_function`) and dropped, so at most one
//! user function is ever held in rspirv's form.
//! At the end the globals (held as in the whole-module pass) get the new types, constants,
//! built-ins, decorations, imports and the requirements' changes (`Pass::finish`), and are
//! written in front of the body in its own buffer (room for them is reserved when the body
//! starts).
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
//! chains become whole loads) runs in the pass on each function as it comes, its tables read
//! and its whole loads counted from the words before the load (their ids come before the
//! emitter's), and step 3 removes the variables no recorded instruction uses.
//!
//! Inputs of 2^31 words or more are loaded whole (`entry`; placeholders hold 31-bit offsets).

use std::collections::{BTreeSet, HashMap};

use rspirv::binary::Assemble;
use rspirv::dr::{Function, Instruction, Module, Operand};

use crate::emit::{Emitter, Id};
use crate::pipeline::{Pass, Sink, Source};
use crate::{elide, loader, stages, LowerError, LowerOptions, LowerReport};

/// The state of a streaming `lower_words` run, from the first function on.
pub(crate) struct Streamer<'t> {
    words: &'t [u32],
    opts: &'t LowerOptions,
    /// Set once the globals are complete.
    run: Option<(Pass<'t>, Words<'t>)>,
    /// The first error of the pass; later functions are parsed but not lowered, so that an
    /// error of the loader (which the whole-module pass reports first) still wins.
    error: Option<LowerError>,
}

/// The sink of `lower_words`: each function is written into the output's body as it comes.
struct Words<'t> {
    /// The input.
    words: &'t [u32],
    /// The output's functions and the instructions between them, in order.
    body: Vec<u32>,
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
    let (pass, mut sink) = streamer.run.ok_or_else(|| LowerError::Invalid {
        result_id: 0,
        message: "the module's globals never reached the pass".to_owned(),
    })?;
    let report = pass.finish(&mut module, &mut sink)?;
    if !report.changed {
        return Ok((words.to_vec(), report));
    }
    let mut head = std::mem::take(&mut module).assemble();
    // The input's generator word is kept (as are its version unless raised, and the
    // reserved schema word).
    for k in [2, 4] {
        if let (Some(o), Some(&w)) = (head.get_mut(k), words.get(k)) {
            *o = w;
        }
    }
    let mut out = sink.body;
    // In place: the body moves up once, within the room reserved for it.
    out.splice(0..0, head.drain(..));
    Ok((out, report))
}

impl loader::Stream for Streamer<'_> {
    fn globals(&mut self, module: &mut Module) {
        match start(module, self.words, self.opts) {
            Ok(run) => self.run = Some(run),
            Err(e) => self.error = Some(e),
        }
    }

    fn function(&mut self, _: &Module, mut f: Function, elided_types: &mut Vec<(u32, u32)>) {
        let Some((pass, sink)) = self.run.as_mut().filter(|_| self.error.is_none()) else {
            elided_types.clear();
            return;
        };
        let done = pass
            .function(&mut f, elided_types)
            .and_then(|moved| sink.function(&f, &moved, &pass.em));
        if let Err(e) = done {
            self.error = Some(e);
        }
    }

    fn between(&mut self, inst: Instruction) {
        if let Some((_, sink)) = self.run.as_mut() {
            inst.assemble_into(&mut sink.body);
        }
    }
}

/// The pass's start on the globals, and the sink, with what must be known of the call graph
/// before a function is rewritten read from the words (the helpers the rewrites add call no
/// function of the input).
fn start<'t>(
    module: &mut Module,
    words: &'t [u32],
    opts: &'t LowerOptions,
) -> Result<(Pass<'t>, Words<'t>), LowerError> {
    let fragment = module.entry_points.iter().any(|e| {
        matches!(
            e.operands.first(),
            Some(Operand::ExecutionModel(spirv::ExecutionModel::Fragment))
        )
    });
    // Only new built-ins of a module with a fragment stage are `Flat`; then the vertex-like
    // stages load twins, and the functions they share are copied at the end.
    let twin_entry = stages::twin_entry_points(module);
    let twin_entry = (fragment && twin_entry.contains(&true)).then_some(twin_entry);
    let calls = (opts.target.restrictions.no_mask_builtins || twin_entry.is_some())
        .then(|| stages::call_graph_of_words(words));
    let pass = Pass::start(module, opts, Source::Words(words), calls.as_ref())?;
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
    let sink = Words {
        words,
        body: Vec::with_capacity(room),
        twins,
    };
    Ok((pass, sink))
}

impl Sink for Words<'_> {
    /// Writes function `f` into the body; records its place when it may be copied or renamed.
    fn function(
        &mut self,
        f: &Function,
        moved: &HashMap<Id, Id>,
        em: &Emitter,
    ) -> Result<(), LowerError> {
        let id = f.def.as_ref().and_then(|d| d.result_id);
        let parents = (!moved.is_empty()).then_some(moved);
        let start = self.body.len();
        elide::assemble_function(f, self.words, parents, &mut self.body)?;
        if let (Some(tw), Some(id)) = (self.twins.as_mut(), id) {
            let flat = stages::flat_builtins(em);
            let insts = f.blocks.iter().flat_map(|b| &b.instructions);
            let mut elided = Vec::new();
            if tw.twin_only.contains(&id) {
                let mut at = start;
                for inst in elide::all_instructions(f) {
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

    fn finish_functions(
        &mut self,
        module: &mut Module,
        mut helpers: Vec<Function>,
        pass: &mut Pass,
    ) -> Result<stages::Split, LowerError> {
        match self.twins.take() {
            Some(tw) => self.split(module, tw, &mut helpers, pass),
            None => {
                for helper in &helpers {
                    elide::assemble_function(helper, self.words, None, &mut self.body)?;
                }
                Ok(stages::Split::default())
            }
        }
    }
}

impl Words<'_> {
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
        pass: &mut Pass,
    ) -> Result<stages::Split, LowerError> {
        let words = self.words;
        let em = &mut pass.em;
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
                    &pass.calls,
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
            if let Some(callees) = pass.calls.get_mut(&id) {
                for c in callees {
                    *c = plan.renames.get(*c).unwrap_or(*c);
                }
            }
        }
        stages::add_clone_calls(
            &mut pass.calls,
            copies.iter().map(|&(id, _)| id),
            &plan.renames,
        );
        let split = stages::finish_split(module, &tw.twin_entry, plan, &made);
        let copied: Vec<Id> = pass
            .rewritten
            .iter()
            .filter_map(|f| split.clone_of.get(f))
            .copied()
            .collect();
        pass.rewritten.extend(copied);
        Ok(split)
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
