//! `lower_words` with an emulated subgroup size, one function at a time: the memory bound of
//! `lower --emulate-subgroup-size N` on words.
//!
//! The sparse load ([`loader::load_streaming`]) hands each function over as soon as it is
//! parsed, the runs of instructions no pass reads left in the input's words behind placeholders
//! (`elide`; every instruction the emulation rewrites is one the lowering reads too: subgroup
//! ops, what touches a built-in variable or a pointer derived from one, `SPV_AMD_shader_ballot`'s
//! instructions). The input is first checked as plain lowering checks it
//! (`emulate::check_input`). Each function is emulated with the emitter
//! (`emulate::emulate_function`: its reads of built-ins become whole loads, `builtin_uses`, and
//! are rewritten; the globals are held), written into the emulated
//! module's body (placeholders copied from the input) and dropped. At the end the globals get
//! what the emulation adds (`emulate::finish`) and are written in front of the body, and the
//! ordinary streaming `lower_words` lowers the emulated words.
//!
//! Ids are given in the order the whole-module emulation gives them (the emitter's, function by
//! function), so the output is the same word for word.
//! What is held at most: the input, the emulated module's words (the input's size and what the
//! emulation adds), one function in rspirv's form and the emitter's tables; then the input, the
//! emulated words and the ordinary lowering's memory on them (docs/PERFORMANCE.md).

use std::collections::BTreeSet;

use rspirv::binary::Assemble;
use rspirv::dr::{Function, Instruction, Module};

use crate::emit::{Emitter, Id};
use crate::emulate::{self, Virtual};
use crate::{elide, loader, LowerError, LowerOptions, LowerReport, Target};

/// `lower_words` with `opts.emulate_subgroup_size == Some(n)`.
pub(crate) fn lower_words_emulated(
    words: &[u32],
    opts: &LowerOptions,
    n: u32,
) -> Result<(Vec<u32>, LowerReport), LowerError> {
    spv_subgroup_validate::check_structure(words).map_err(|e| LowerError::Parse(e.to_string()))?;
    emulate::check_input(words, opts)?;
    // Placeholders hold 31-bit word offsets: larger inputs are loaded whole.
    if words.len() >= 1 << 31 {
        return emulate::lower_words_emulated_whole(words, opts, n);
    }
    let inner = opts.clone().with_emulated_subgroup_size(None);
    let full = emulate::emitting_target(&opts.target);
    let mut streamer = Streamer {
        words,
        opts,
        n,
        full: &full,
        run: None,
        error: None,
    };
    // An error of the loader wins over one of the emulation (as when the module is loaded
    // whole first).
    let mut module = loader::load_streaming(words, &mut streamer)?;
    if let Some(e) = streamer.error {
        return Err(e);
    }
    let mut run = streamer.run.ok_or_else(|| LowerError::Invalid {
        result_id: 0,
        message: "the module's globals never reached the emulation".to_owned(),
    })?;
    if run.sites == 0 {
        // Nothing observes the size: the module is lowered as it is.
        drop(run);
        return crate::lower_words(words, &inner);
    }
    emulate::finish(
        &mut module,
        &mut run.em,
        n,
        &run.functions,
        &run.dropped,
        &opts.target,
    )?;
    let sites = run.sites;
    let mut head = std::mem::take(&mut module).assemble();
    // The input's generator word is kept (the whole-module emulation keeps only that one).
    if let (Some(o), Some(&g)) = (head.get_mut(2), words.get(2)) {
        *o = g;
    }
    let mut emulated = std::mem::take(&mut run.body);
    drop(run);
    // In place: the body moves up once, within the room reserved for it.
    emulated.splice(0..0, head.drain(..));
    let (out, report) = crate::lower_words(&emulated, &inner)?;
    Ok((out, emulate::with_emulation(report, n, sites)))
}

/// The state of a streaming emulation, from the first function on.
struct Streamer<'t> {
    words: &'t [u32],
    opts: &'t LowerOptions,
    n: u32,
    /// The target the emitter writes for (`emulate::emitting_target`).
    full: &'t Target,
    /// Set once the globals are checked.
    run: Option<Run<'t>>,
    /// The first error; later functions are parsed but not emulated, so that an error of the
    /// loader still wins.
    error: Option<LowerError>,
}

/// The emulation under way.
struct Run<'t> {
    v: Virtual<'t>,
    em: Emitter<'t>,
    /// The pointers into built-ins the emulation dropped (their names go at the end).
    dropped: BTreeSet<Id>,
    /// How many instructions the emulation changed.
    sites: usize,
    /// Every function (each counts as rewritten for the entry points' interfaces).
    functions: BTreeSet<Id>,
    /// The emulated module's functions and the instructions between them, in order.
    body: Vec<u32>,
}

impl<'t> Streamer<'t> {
    /// The checks of the globals, step 1's tables and the emitter.
    fn start(&self, module: &mut Module) -> Result<Run<'t>, LowerError> {
        let words = self.words;
        let v = Virtual::of(module, self.n, self.opts)?;
        // The value types of the elided instructions arrive function by function; the table
        // starts at the size the sparse load gives it (as `stream` sizes the pass's).
        let bound = words.get(3).copied().unwrap_or(1) as usize;
        let types = vec![0; bound.min(words.len() / 2 + 1)];
        let em = Emitter::new(module, self.full, 128, Some(types));
        Ok(Run {
            v,
            em,
            dropped: BTreeSet::new(),
            sites: 0,
            functions: BTreeSet::new(),
            // Room for an emulated module a quarter larger than the input and its new
            // globals: the part never written is address space, not memory.
            body: Vec::with_capacity(words.len() + words.len() / 4 + 4096),
        })
    }
}

impl Run<'_> {
    /// Emulates `f` and writes it into the body.
    fn function(
        &mut self,
        mut f: Function,
        elided_types: &mut Vec<(u32, u32)>,
        words: &[u32],
    ) -> Result<(), LowerError> {
        let em = &mut self.em;
        for (id, ty) in elided_types.drain(..) {
            em.set_value_type(id, ty);
        }
        em.index_function_values(&f);
        self.sites += emulate::emulate_function(&self.v, em, &mut f, &mut self.dropped)?;
        self.functions
            .extend(f.def.as_ref().and_then(|d| d.result_id));
        elide::assemble_function(&f, words, None, &mut self.body)
    }
}

impl loader::Stream for Streamer<'_> {
    fn globals(&mut self, module: &mut Module) {
        match self.start(module) {
            Ok(run) => self.run = Some(run),
            Err(e) => self.error = Some(e),
        }
    }

    fn function(&mut self, _: &Module, f: Function, elided_types: &mut Vec<(u32, u32)>) {
        let Some(run) = self.run.as_mut().filter(|_| self.error.is_none()) else {
            elided_types.clear();
            return;
        };
        if let Err(e) = run.function(f, elided_types, self.words) {
            self.error = Some(e);
        }
    }

    fn between(&mut self, inst: Instruction) {
        if let Some(run) = self.run.as_mut() {
            inst.assemble_into(&mut run.body);
        }
    }
}
