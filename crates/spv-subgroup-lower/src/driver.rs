//! The pass pipeline: find what needs rewriting, rewrite function by function (splitting blocks
//! where a rewrite needs a loop), then fix the module's globals, interfaces and requirements.
//!
//! Instructions are rewritten in place of the original: the rewrite's final instruction takes
//! over the original result id, so uses, names and decorations (RelaxedPrecision) stay attached.
//!
//! [`lower_words`] hands the module to `stream`, which runs the same steps one function at a
//! time as the loader parses them; [`lower`] (and `lower_words` on an input of 2^31 words or
//! more) runs them here on the whole module.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rspirv::dr::{Block, Instruction, Module, Operand};
use spirv::Op;

use crate::emit::{Code, Emitter, Id};
use crate::{
    elide, hygiene, loader, outline, rewrite, stages, stream, LowerError, LowerOptions, LowerReport,
};

/// The largest id bound spirv-val accepts by default (SPIR-V's universal limit on result ids),
/// the validator's (which reports a larger one as SG0005).
/// An input above it is refused (it could not be valid output either), and an output that
/// would grow past it is refused instead of written.
pub use spv_subgroup_validate::MAX_ID_BOUND;

/// Lowers a module given as SPIR-V words; returns the new words and the report.
/// A module that needs nothing is returned word for word.
///
/// Memory: the words are read once by our structural check (bounded by the module's size, not
/// its header's bound), then loaded sparsely: only the instructions the pass reads or changes
/// become rspirv instructions, every other run of a block stays in `words` and is copied to the
/// output (see `elide`), and each function is rewritten and written out as soon as it is
/// parsed, so at most one is held in rspirv's form (see `stream`; an input of 2^31 words or
/// more is loaded whole; docs/PERFORMANCE.md has the measured bytes per input byte). The id
/// bound is at most [`MAX_ID_BOUND`], so tables indexed by id stay below 17 MB whatever the
/// header claims.
pub fn lower_words(
    words: &[u32],
    opts: &LowerOptions,
) -> Result<(Vec<u32>, LowerReport), LowerError> {
    if let Some(n) = opts.emulate_subgroup_size {
        return crate::emulate::lower_words_emulated(words, opts, n)
            .map_err(|e| with_word_offset(e, words));
    }
    // Our own reader first: it reports malformed input with word offsets, never panicking.
    spv_subgroup_validate::check_structure(words).map_err(|e| LowerError::Parse(e.to_string()))?;
    if let Some(&bound) = words.get(3) {
        check_input_bound(bound, &opts.target)?;
    }
    // Placeholders hold 31-bit word offsets: larger inputs are loaded whole.
    if words.len() < 1 << 31 {
        return stream::lower_streaming(words, opts).map_err(|e| with_word_offset(e, words));
    }
    let loader::Loaded {
        mut module,
        between_functions,
    } = loader::load(words)?;
    let report = lower(&mut module, opts).map_err(|e| with_word_offset(e, words))?;
    if !report.changed {
        return Ok((words.to_vec(), report));
    }
    let mut out = loader::assemble(module, &between_functions);
    // The input's generator word is kept (as are its version unless raised, and the reserved
    // schema word).
    if let (Some(o), Some(&g)) = (out.get_mut(2), words.get(2)) {
        *o = g;
    }
    if let (Some(o), Some(&r)) = (out.get_mut(4), words.get(4)) {
        *o = r;
    }
    Ok((out, report))
}

/// Refuses an input whose id bound is past [`MAX_ID_BOUND`]: its output would be past it too.
fn check_input_bound(bound: u32, target: &crate::Target) -> Result<(), LowerError> {
    if bound <= MAX_ID_BOUND {
        return Ok(());
    }
    Err(LowerError::Unsupported {
        result_id: 0,
        opcode: "the module header".to_owned(),
        word_offset: 3,
        target: target.name.clone(),
        missing: format!(
            "an id bound of {bound} (the header's word 3); SPIR-V's universal limit, \
             which spirv-val enforces, is {MAX_ID_BOUND}"
        ),
    })
}

/// Refuses a module whose memory model or `Kernel` capability the target's environment does not
/// allow: an OpenCL kernel "lowered for vulkan1.1" would be output Vulkan cannot consume.
pub(crate) fn check_environment(module: &Module, target: &crate::Target) -> Result<(), LowerError> {
    if !target.target_env.starts_with("vulkan") {
        return Ok(());
    }
    let refuse = |opcode: &str, missing: String| LowerError::Unsupported {
        result_id: 0,
        opcode: opcode.to_owned(),
        word_offset: 0,
        target: target.name.clone(),
        missing,
    };
    for c in &module.capabilities {
        if let Some(Operand::Capability(
            cap @ (spirv::Capability::Kernel | spirv::Capability::Addresses),
        )) = c.operands.first()
        {
            return Err(refuse(
                "OpCapability",
                format!(
                    "capability {cap:?}, which the target's environment ({}) does not allow \
                     (an OpenCL module cannot be lowered for a Vulkan target)",
                    target.target_env
                ),
            ));
        }
    }
    if let Some(mm) = &module.memory_model {
        if let [Operand::AddressingModel(a), Operand::MemoryModel(m)] = mm.operands.as_slice() {
            let addressing_ok = matches!(
                a,
                spirv::AddressingModel::Logical | spirv::AddressingModel::PhysicalStorageBuffer64
            );
            let memory_ok = matches!(m, spirv::MemoryModel::GLSL450 | spirv::MemoryModel::Vulkan);
            if !addressing_ok || !memory_ok {
                return Err(refuse(
                    "OpMemoryModel",
                    format!(
                        "the {a:?} addressing model and {m:?} memory model, which the target's \
                         environment ({}) does not allow",
                        target.target_env
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The execution modes that promise something of the device no rewrite can give
/// (`SPV_KHR_quad_control`: derivatives by quad, and full quads), with the capability that
/// declares them.
const DEVICE_MODES: [(spirv::ExecutionMode, spirv::Capability); 2] = [
    (
        spirv::ExecutionMode::QuadDerivativesKHR,
        spirv::Capability::QuadControlKHR,
    ),
    (
        spirv::ExecutionMode::RequireFullQuadsKHR,
        spirv::Capability::QuadControlKHR,
    ),
];

/// Refuses a module with one of [`DEVICE_MODES`] the target lacks the capability of: the quad
/// votes can be rewritten, but not the device's promise the mode asks for.
pub(crate) fn check_execution_modes(
    module: &Module,
    target: &crate::Target,
) -> Result<(), LowerError> {
    for inst in &module.execution_modes {
        let Some(Operand::ExecutionMode(mode)) = inst.operands.get(1) else {
            continue;
        };
        let Some(&(_, cap)) = DEVICE_MODES.iter().find(|(m, _)| m == mode) else {
            continue;
        };
        if !spv_subgroup_validate::fit::target_has(target, cap) {
            return Err(LowerError::Unsupported {
                result_id: 0,
                opcode: "OpExecutionMode".to_owned(),
                word_offset: 0,
                target: target.name.clone(),
                missing: format!(
                    "the {cap:?} capability for the execution mode {mode:?}, a guarantee of the \
                     device that no rewrite gives"
                ),
            });
        }
    }
    Ok(())
}

/// Refuses an output whose id bound would pass [`MAX_ID_BOUND`].
pub(crate) fn check_output_bound(bound: u32, target: &crate::Target) -> Result<(), LowerError> {
    // The input bound is at most 2^22, so counting new ids cannot wrap before memory runs out;
    // the output must still stay within the limit consumers are sure to accept.
    if bound <= MAX_ID_BOUND {
        return Ok(());
    }
    Err(LowerError::Unsupported {
        result_id: 0,
        opcode: "the module header".to_owned(),
        word_offset: 3,
        target: target.name.clone(),
        missing: format!(
            "room for the new ids: the lowered module would need an id bound of {bound}, \
             past SPIR-V's universal limit of {MAX_ID_BOUND} that spirv-val enforces"
        ),
    })
}

/// Refuses a module of a SPIR-V version past the target's (asked once something needs doing).
pub(crate) fn check_version(module: &Module, target: &crate::Target) -> Result<(), LowerError> {
    if let Some(h) = module.header.as_ref() {
        let (major, minor) = h.version();
        if (major, minor) > target.spirv_version {
            return Err(LowerError::Unsupported {
                result_id: 0,
                opcode: "the module header".to_owned(),
                word_offset: 1,
                target: target.name.clone(),
                missing: format!(
                    "SPIR-V {major}.{minor} (the target consumes up to {}.{})",
                    target.spirv_version.0, target.spirv_version.1
                ),
            });
        }
    }
    Ok(())
}

/// Fills in the word offset of the instruction an error names.
fn with_word_offset(err: LowerError, words: &[u32]) -> LowerError {
    match err {
        LowerError::Unsupported {
            result_id,
            opcode,
            target,
            missing,
            word_offset,
        } => {
            let word_offset = if result_id == 0 {
                match opcode.as_str() {
                    // The environment checks name the first instruction that breaks them.
                    "OpCapability" => find_instruction(words, |op, w| {
                        op == spirv::Op::Capability as u32
                            && matches!(w.get(1), Some(&c) if c == spirv::Capability::Kernel as u32
                                || c == spirv::Capability::Addresses as u32)
                    })
                    .unwrap_or(word_offset),
                    "OpMemoryModel" => {
                        find_instruction(words, |op, _| op == spirv::Op::MemoryModel as u32)
                            .unwrap_or(word_offset)
                    }
                    "OpExecutionMode" => find_instruction(words, |op, w| {
                        op == spirv::Op::ExecutionMode as u32
                            && DEVICE_MODES
                                .iter()
                                .any(|&(m, _)| w.get(2) == Some(&(m as u32)))
                    })
                    .unwrap_or(word_offset),
                    _ => word_offset,
                }
            } else {
                find_definition(words, result_id).unwrap_or(0)
            };
            LowerError::Unsupported {
                result_id,
                opcode,
                word_offset,
                target,
                missing,
            }
        }
        other => other,
    }
}

/// Word offset of the first instruction `pick(opcode, its words)` chooses.
fn find_instruction(words: &[u32], pick: impl Fn(u32, &[u32]) -> bool) -> Option<usize> {
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let inst = words.get(at..at + count)?;
        if count == 0 {
            return None;
        }
        if pick(words[at] & 0xffff, inst) {
            return Some(at);
        }
        at += count;
    }
    None
}

/// Word offset of the instruction defining `id` (result id in the second or third word).
fn find_definition(words: &[u32], id: u32) -> Option<usize> {
    let mut at = 5;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        if count == 0 {
            return None;
        }
        let op = words[at] & 0xffff;
        let (has_type, has_result) = rspirv::grammar::INSTRUCTION_TABLE
            .lookup_opcode(op)?
            .operands
            .iter()
            .fold((false, false), |(t, r), o| {
                (
                    t || o.kind == rspirv::grammar::OperandKind::IdResultType,
                    r || o.kind == rspirv::grammar::OperandKind::IdResult,
                )
            });
        if has_result {
            let slot = at + if has_type { 2 } else { 1 };
            if words.get(slot) == Some(&id) {
                return Some(at);
            }
        }
        at += count;
    }
    None
}

/// Lowers a module in place for `opts.target`.
pub fn lower(module: &mut Module, opts: &LowerOptions) -> Result<LowerReport, LowerError> {
    if let Some(n) = opts.emulate_subgroup_size {
        return crate::emulate::lower_emulated(module, opts, n);
    }
    let target = &opts.target;
    if let Some(h) = module.header.as_ref() {
        check_input_bound(h.bound, target)?;
    }
    check_environment(module, target)?;
    check_execution_modes(module, target)?;
    let max_lanes = opts
        .subgroup_size
        .unwrap_or(target.max_subgroup_size)
        .clamp(1, 128);
    let removable_globals = rewrite::has_removable_globals(module, target);
    if removable_globals {
        rewrite::prepare(module, target);
    }
    let rewrites_needed = {
        let em = Emitter::new(module, target, max_lanes, None);
        module
            .functions
            .iter()
            .flat_map(|f| &f.blocks)
            .flat_map(|b| &b.instructions)
            .any(|i| rewrite::needs_rewrite(i, &em))
    };
    if !rewrites_needed && !removable_globals && !hygiene::has_removable(module, target) {
        return Ok(Default::default());
    }
    check_version(module, target)?;
    let before = (module.capabilities.len(), module.extensions.len());
    let mut em = Emitter::new(module, target, max_lanes, None);
    em.float_partition = opts.float_partition;
    em.partition_form = opts.partition_form;
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut rewritten: BTreeSet<Id> = BTreeSet::new();
    let mut helpers = outline::Helpers::new(module);
    // naga's validator takes the `SubgroupSize` built-in in compute and fragment entry points
    // only (`VaryingContext::validate_impl` in naga's `valid/interface.rs`; not in vertex
    // shaders): for naga-like consumers (no mask built-ins) the size branch is emitted only in
    // functions that no other stage reaches.
    let size_ok: Option<BTreeSet<Id>> = target.restrictions.no_mask_builtins.then(|| {
        stages::only_reached_from(
            module,
            &[
                spirv::ExecutionModel::GLCompute,
                spirv::ExecutionModel::Fragment,
            ],
        )
    });
    for function in &mut module.functions {
        let before = em.bound();
        em.size_builtin_ok = size_ok.as_ref().is_none_or(|ok| {
            function
                .def
                .as_ref()
                .and_then(|d| d.result_id)
                .is_some_and(|id| ok.contains(&id))
        });
        lower_function(function, &mut em, &mut counts, &mut helpers)?;
        if em.bound() != before {
            rewritten.extend(function.def.as_ref().and_then(|d| d.result_id));
        }
    }
    module.functions.append(&mut helpers.functions);
    module.debug_names.append(&mut helpers.names);
    finish_globals(module, &mut em, &rewritten)?;
    let scope_needs_cap = hygiene::subgroup_scope_needs_capability(module, &em, target);
    let removed = rewrite::finish(module, target);
    hygiene::fix_requirements(module, &em, opts, scope_needs_cap)?;
    check_output_bound(em.bound(), target)?;
    if let Some(h) = module.header.as_mut() {
        h.bound = em.bound();
    }
    let mut rewrites: Vec<(String, usize)> = counts.into_iter().collect();
    rewrites.sort();
    let changed = !rewrites.is_empty()
        || removed
        || before != (module.capabilities.len(), module.extensions.len());
    Ok(LowerReport { changed, rewrites })
}

/// Rewrites one function. Returns the blocks a rewrite split (original label -> the label of
/// the block that now holds the original terminator): the phis it holds are renamed here, those
/// left in the input's words when assembling.
pub(crate) fn lower_function(
    function: &mut rspirv::dr::Function,
    em: &mut Emitter,
    counts: &mut HashMap<String, usize>,
    helpers: &mut outline::Helpers,
) -> Result<HashMap<Id, Id>, LowerError> {
    if !function
        .blocks
        .iter()
        .flat_map(|b| &b.instructions)
        .any(|i| rewrite::needs_rewrite(i, em))
    {
        return Ok(HashMap::new());
    }
    let first_new_id = em.bound();
    // Original result ids now defined by emitted code (their phis, if any, are new code).
    let mut taken_over: BTreeSet<Id> = BTreeSet::new();
    let mut out: Vec<Block> = Vec::with_capacity(function.blocks.len());
    // Original label -> label of the block that now holds the original terminator.
    let mut moved: HashMap<Id, Id> = HashMap::new();
    for block in std::mem::take(&mut function.blocks) {
        let label = block.label.as_ref().and_then(|l| l.result_id).unwrap_or(0);
        let needs = block
            .instructions
            .iter()
            .any(|i| rewrite::needs_rewrite(i, em));
        if !needs {
            out.push(block);
            continue;
        }
        let mut code = Code {
            em,
            done: Vec::new(),
            cur: Block {
                label: block.label.clone(),
                instructions: Vec::new(),
            },
        };
        let mut rest: Vec<Instruction> = block.instructions;
        // A loop header keeps its phis and merge: the rest moves to a new block, so that a rewrite
        // that splits the block leaves OpLoopMerge in the block the back edge targets.
        if let Some(merge_at) = rest.iter().position(|i| i.class.opcode == Op::LoopMerge) {
            let phis = rest
                .iter()
                .take_while(|i| i.class.opcode == Op::Phi || elide::is_phis(i))
                .count();
            let body_label = code.em.id();
            let mut tail = rest.split_off(phis);
            let merge = tail.remove(merge_at - phis);
            code.cur.instructions.extend(rest);
            code.cur.instructions.push(merge);
            code.emit_void(Op::Branch, vec![Operand::IdRef(body_label)]);
            code.start_block(body_label);
            rest = tail;
        }
        for inst in rest {
            if !rewrite::needs_rewrite(&inst, code.em) {
                code.cur.instructions.push(inst);
                continue;
            }
            let mark = (code.done.len(), code.cur.instructions.len());
            let before = code.em.bound();
            let value = if outline::is_outlined(&inst) {
                outline::call(&mut code, &inst, helpers)
            } else {
                rewrite::lower_inst(&mut code, &inst)
            }
            .map_err(|e| name_error(e, &inst))?;
            *counts.entry(rewrite::kind_name(&inst)).or_insert(0) += 1;
            if let (Some(orig), Some(result_type)) = (inst.result_id, inst.result_type) {
                if value >= before {
                    rename(&mut code, mark, value, orig);
                    taken_over.insert(orig);
                } else {
                    code.cur.instructions.push(Instruction::new(
                        Op::CopyObject,
                        Some(result_type),
                        Some(orig),
                        vec![Operand::IdRef(value)],
                    ));
                }
            }
        }
        // A loop that was its own continue target gets a continue block of its own holding the
        // rest of the block and the back edge: the loops a rewrite added must merge inside the outer loop construct, and
        // the continue construct must be post-dominated by the back-edge block.
        if code.cur_label() != label {
            let self_continue = code.done.first_mut().and_then(|b| {
                b.instructions
                    .iter_mut()
                    .find(|i| i.class.opcode == Op::LoopMerge)
                    .and_then(|m| match m.operands.get_mut(1) {
                        Some(Operand::IdRef(cont)) if *cont == label => Some(cont),
                        _ => None,
                    })
            });
            if let Some(cont) = self_continue {
                let new_cont = code.em.id();
                *cont = new_cont;
                // The whole last piece moves: values it computes stay in the block that uses
                // them (naga's MSL writer cannot name a subgroup result across into `continuing`).
                let tail = std::mem::take(&mut code.cur.instructions);
                code.emit_void(Op::Branch, vec![Operand::IdRef(new_cont)]);
                code.start_block(new_cont);
                code.cur.instructions = tail;
            }
        }
        let final_label = code.cur_label();
        if final_label != label {
            moved.insert(label, final_label);
        }
        out.append(&mut code.done);
        out.push(code.cur);
    }
    // Phis of the original code that name a split block as predecessor now name its last piece.
    if !moved.is_empty() {
        for inst in out.iter_mut().flat_map(|b| b.instructions.iter_mut()) {
            if inst.class.opcode != Op::Phi
                || inst
                    .result_id
                    .is_some_and(|r| r >= first_new_id || taken_over.contains(&r))
            {
                continue;
            }
            elide::rename_parents(inst, &moved);
        }
    }
    // Blocks built by pushing hold up to twice their instructions' room until the output is
    // written; trimmed here, the room goes to the next function's rewrites.
    for b in &mut out {
        b.instructions.shrink_to_fit();
    }
    function.blocks = out;
    Ok(moved)
}

/// Makes the instruction defining `value` (emitted since `mark`) define `orig` instead.
fn rename(code: &mut Code, mark: (usize, usize), value: Id, orig: Id) {
    let (done_from, cur_from) = mark;
    let cur_from = if code.done.len() > done_from {
        0
    } else {
        cur_from
    };
    let emitted = code.done[done_from..]
        .iter_mut()
        .flat_map(|b| b.instructions.iter_mut())
        .chain(code.cur.instructions[cur_from..].iter_mut());
    for inst in emitted {
        if inst.result_id == Some(value) {
            inst.result_id = Some(orig);
        }
        for op in &mut inst.operands {
            if let Operand::IdRef(id) = op {
                if *id == value {
                    *id = orig;
                }
            }
        }
    }
}

fn name_error(err: LowerError, inst: &Instruction) -> LowerError {
    match err {
        LowerError::Unsupported {
            target,
            missing,
            word_offset,
            ..
        } => LowerError::Unsupported {
            result_id: inst.result_id.unwrap_or(0),
            // An ext-inst is named by its instruction (`OpExtInst MbcntAMD`).
            opcode: match inst.class.opcode {
                Op::ExtInst => format!("OpExtInst {}", rewrite::kind_name(inst)),
                op => format!("Op{op:?}"),
            },
            word_offset,
            target,
            missing,
        },
        other => other,
    }
}

/// Appends new types, constants, variables, decorations and imports, and lists the built-ins the
/// new code loads in the interface of every entry point whose call tree holds rewritten code.
fn finish_globals(
    module: &mut Module,
    em: &mut Emitter,
    rewritten: &BTreeSet<Id>,
) -> Result<(), LowerError> {
    // Functions shared by entry points that list `Flat` built-ins and ones that must not are
    // split first (it adds globals).
    let twin_entry = stages::twin_entry_points(module);
    let stages::Split {
        twins,
        clone_of: clones,
    } = stages::split(module, em, &twin_entry)?;
    let mut rewritten = rewritten.clone();
    rewritten.extend(
        rewritten
            .iter()
            .filter_map(|f| clones.get(f))
            .copied()
            .collect::<Vec<_>>(),
    );
    let calls = stages::call_graph(module);
    add_new_globals(module, em, &twin_entry, &twins, &calls, &rewritten);
    Ok(())
}

/// Appends the emitter's new types, constants, variables, decorations and import to the module,
/// and lists the built-ins the new code loads in the interface of every entry point whose call
/// tree (`calls`) reaches a `rewritten` function: required from SPIR-V 1.4 on and allowed before.
/// An entry point that must not list a `Flat` input (`twin_entry`, a vertex stage: see
/// `stages.rs`) lists the undecorated twin of a `Flat` built-in (`twins`) instead.
/// The whole-module pass and the stream (`stream.rs`) end with it.
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
