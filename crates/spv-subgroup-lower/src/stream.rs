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
//! Two kinds of module are declined at the globals and loaded whole as before (`driver`): one
//! that declares a mask built-in its target lacks (`masks` rewrites its access chains
//! module-wide, before the emitter's first id), and one whose new `Flat` built-ins vertex-like
//! stages must not list (`stages::split` copies functions after every function is rewritten).
//! So are inputs of 2^31 words or more (placeholders hold 31-bit offsets).

use std::collections::{BTreeSet, HashMap};

use rspirv::binary::Assemble;
use rspirv::dr::{Function, Instruction, Module, Operand};

use crate::emit::{Emitter, Id};
use crate::{
    driver, elide, hygiene, loader, outline, rewrite, stages, LowerError, LowerOptions, LowerReport,
};

/// The state of a streaming `lower_words` run, from the first function on.
pub(crate) struct Streamer<'t> {
    words: &'t [u32],
    opts: &'t LowerOptions,
    /// Set once the globals are accepted (`None`: declined, or not there yet).
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
}

/// The result of [`lower_streaming`].
pub(crate) enum Streamed {
    /// The output words and the report.
    Done(Vec<u32>, LowerReport),
    /// The stream declined at the globals: the module loaded sparsely, whole, with the elided
    /// values' types (what `loader::load_streaming` returns then).
    Declined(Box<loader::Loaded>, Vec<u32>),
}

/// Lowers `words` one function at a time, or loads them whole when the module is one the
/// stream declines (see the module doc). `words` must be fewer than 2^31.
pub(crate) fn lower_streaming(words: &[u32], opts: &LowerOptions) -> Result<Streamed, LowerError> {
    let mut streamer = Streamer {
        words,
        opts,
        run: None,
        error: None,
    };
    let (mut loaded, value_types) = loader::load_streaming(words, &mut streamer)?;
    if let Some(e) = streamer.error {
        return Err(e);
    }
    let Some(run) = streamer.run else {
        return Ok(Streamed::Declined(Box::new(loaded), value_types));
    };
    drop(value_types);
    let (out, report) = run.finish(&mut loaded.module, words, opts)?;
    Ok(Streamed::Done(out, report))
}

impl loader::Stream for Streamer<'_> {
    fn globals(&mut self, module: &Module) -> bool {
        let target = &self.opts.target;
        let fragment = module.entry_points.iter().any(|e| {
            matches!(
                e.operands.first(),
                Some(Operand::ExecutionModel(spirv::ExecutionModel::Fragment))
            )
        });
        if rewrite::declares_removable_masks(module, target)
            || (fragment && stages::twin_entry_points(module).contains(&true))
        {
            return false;
        }
        match Run::start(module, self.words, self.opts) {
            Ok(run) => self.run = Some(run),
            Err(e) => self.error = Some(e),
        }
        true
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
        module: &Module,
        words: &'t [u32],
        opts: &'t LowerOptions,
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
        // The value types of the elided instructions arrive function by function; the table
        // starts at the size the sparse load gives it.
        let bound = words.get(3).copied().unwrap_or(1) as usize;
        let types = vec![0; bound.min(words.len() / 2 + 1)];
        let mut em = Emitter::new(module, target, max_lanes, Some((words, &types)));
        drop(types);
        em.float_partition = opts.float_partition;
        em.partition_form = opts.partition_form;
        let size_ok = target.restrictions.no_mask_builtins.then(|| {
            stages::only_reached_through(
                &module.entry_points,
                &stages::call_graph_of_words(words),
                &[
                    spirv::ExecutionModel::GLCompute,
                    spirv::ExecutionModel::Fragment,
                ],
            )
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
        elide::assemble_function(&f, words, parents, None, &mut self.body)
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
            self.subgroup_memory_scope |= hygiene::has_subgroup_memory_scope_in(inst, &self.em);
        }
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
        for helper in std::mem::take(&mut self.helpers.functions) {
            self.record(&helper);
            elide::assemble_function(&helper, words, None, None, &mut self.body)?;
        }
        module.debug_names.append(&mut self.helpers.names);
        let em = &mut self.em;
        module.types_global_values.append(&mut em.new_globals);
        module.annotations.append(&mut em.new_annotations);
        if let Some(import) = em.new_ext_import.take() {
            module.ext_inst_imports.push(import);
        }
        // Listed by every entry point whose call tree holds rewritten code (no stage here must
        // avoid a `Flat` input: the stream declined those modules).
        for ep in &mut module.entry_points {
            let Some(&Operand::IdRef(root)) = ep.operands.get(1) else {
                continue;
            };
            if !stages::reaches_any(&self.calls, root, &self.rewritten) {
                continue;
            }
            for &var in &em.used_builtins {
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
        let scope_needs_cap = target.target_env.starts_with("vulkan")
            && hygiene::provides_subgroup_scope(module)
            && self.subgroup_memory_scope;
        let removed = rewrite::finish_streamed(module, target, self.khr_ballot_left);
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
