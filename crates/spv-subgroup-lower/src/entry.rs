//! The two entry points of the pass: [`lower`] on a module that holds its functions, and
//! [`lower_words`] on SPIR-V words, which streams the module one function at a time
//! (`stream.rs`). Both run the one pass of `pipeline`; this file checks what only words tell
//! (their structure, the header's id bound) and places an error at its word offset.

use rspirv::dr::Module;

use crate::pipeline::{self, check_input_bound, DEVICE_MODES};
use crate::{loader, stream, LowerError, LowerOptions, LowerReport};

/// Lowers a module given as SPIR-V words; returns the new words and the report.
/// A module that needs nothing is returned word for word.
///
/// Memory: the words are read once by our structural check (bounded by the module's size, not
/// its header's bound), then loaded sparsely: only the instructions the pass reads or changes
/// become rspirv instructions, every other run of a block stays in `words` and is copied to the
/// output (see `elide`), and each function is rewritten and written out as soon as it is
/// parsed, so at most one is held in rspirv's form (see `stream`; an input of 2^31 words or
/// more is loaded whole; docs/PERFORMANCE.md has the measured bytes per input byte). With
/// `emulate_subgroup_size` the emulation streams the same way first, writing the emulated words
/// that are then lowered (see `emulate_stream`). The id
/// bound is at most [`MAX_ID_BOUND`](crate::MAX_ID_BOUND), so tables indexed by id stay below 17 MB whatever the
/// header claims.
///
/// ```
/// use spv_subgroup_lower::{lower_words, LowerOptions, Target};
///
/// # fn example_module() -> Vec<u32> {
/// #     // A compute shader with one `OpSubgroupAllKHR` (SPV_KHR_subgroup_vote), built with rspirv.
/// #     use rspirv::spirv::{AddressingModel, Capability, ExecutionMode, ExecutionModel, FunctionControl, MemoryModel};
/// #     use rspirv::binary::Assemble;
/// #     let mut b = rspirv::dr::Builder::new();
/// #     b.set_version(1, 3);
/// #     b.capability(Capability::Shader);
/// #     b.capability(Capability::SubgroupVoteKHR);
/// #     b.extension("SPV_KHR_subgroup_vote");
/// #     b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
/// #     let void = b.type_void();
/// #     let void_fn = b.type_function(void, vec![]);
/// #     let bool_ty = b.type_bool();
/// #     let yes = b.constant_true(bool_ty);
/// #     let main = b.begin_function(void, None, FunctionControl::NONE, void_fn).unwrap();
/// #     b.begin_block(None).unwrap();
/// #     b.subgroup_all_khr(bool_ty, None, yes).unwrap();
/// #     b.ret().unwrap();
/// #     b.end_function().unwrap();
/// #     b.entry_point(ExecutionModel::GLCompute, main, "main", vec![]);
/// #     b.execution_mode(main, ExecutionMode::LocalSize, vec![64, 1, 1]);
/// #     b.module().assemble()
/// # }
/// // A module with `OpSubgroupAllKHR`, which Vulkan 1.1 lacks; its core `OpGroupNonUniformAll` does it.
/// let words: Vec<u32> = example_module();
/// let opts = LowerOptions::new(Target::preset("vulkan1.1").unwrap());
/// let (lowered, report) = lower_words(&words, &opts)?;
/// assert!(report.changed);
/// assert_eq!(report.rewrites, vec![("OpSubgroupAllKHR".to_owned(), 1)]);
///
/// // Lowering the output again changes nothing: it is returned word for word.
/// let (again, report) = lower_words(&lowered, &opts)?;
/// assert!(!report.changed);
/// assert_eq!(again, lowered);
/// # Ok::<(), spv_subgroup_lower::LowerError>(())
/// ```
pub fn lower_words(
    words: &[u32],
    opts: &LowerOptions,
) -> Result<(Vec<u32>, LowerReport), LowerError> {
    if let Some(n) = opts.emulate_subgroup_size {
        return crate::emulate_stream::lower_words_emulated(words, opts, n)
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

/// Lowers a module in place for `opts.target`.
///
/// ```
/// use spv_subgroup_lower::rspirv::binary::{Assemble, Disassemble};
/// use spv_subgroup_lower::{lower, rspirv, LowerOptions, Target};
///
/// # fn example_module() -> Vec<u32> {
/// #     // A compute shader with one `OpSubgroupAllKHR` (SPV_KHR_subgroup_vote), built with rspirv.
/// #     use rspirv::spirv::{AddressingModel, Capability, ExecutionMode, ExecutionModel, FunctionControl, MemoryModel};
/// #     use rspirv::binary::Assemble;
/// #     let mut b = rspirv::dr::Builder::new();
/// #     b.set_version(1, 3);
/// #     b.capability(Capability::Shader);
/// #     b.capability(Capability::SubgroupVoteKHR);
/// #     b.extension("SPV_KHR_subgroup_vote");
/// #     b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
/// #     let void = b.type_void();
/// #     let void_fn = b.type_function(void, vec![]);
/// #     let bool_ty = b.type_bool();
/// #     let yes = b.constant_true(bool_ty);
/// #     let main = b.begin_function(void, None, FunctionControl::NONE, void_fn).unwrap();
/// #     b.begin_block(None).unwrap();
/// #     b.subgroup_all_khr(bool_ty, None, yes).unwrap();
/// #     b.ret().unwrap();
/// #     b.end_function().unwrap();
/// #     b.entry_point(ExecutionModel::GLCompute, main, "main", vec![]);
/// #     b.execution_mode(main, ExecutionMode::LocalSize, vec![64, 1, 1]);
/// #     b.module().assemble()
/// # }
/// // Load the words into rspirv's form (or build the module with `rspirv::dr::Builder`).
/// let mut module = rspirv::dr::load_words(example_module()).unwrap();
/// let opts = LowerOptions::new(Target::preset("vulkan1.1").unwrap()).with_subgroup_size(Some(32));
/// let report = lower(&mut module, &opts)?;
/// assert!(report.changed);
/// // The KHR vote instruction is gone, its capability and extension with it.
/// let text = module.disassemble();
/// assert!(!text.contains("OpSubgroupAllKHR") && !text.contains("SPV_KHR_subgroup_vote"));
/// assert!(text.contains("OpGroupNonUniformAll"));
/// let words: Vec<u32> = module.assemble();
/// # let _ = words;
/// # Ok::<(), spv_subgroup_lower::LowerError>(())
/// ```
pub fn lower(module: &mut Module, opts: &LowerOptions) -> Result<LowerReport, LowerError> {
    if let Some(n) = opts.emulate_subgroup_size {
        return crate::emulate::lower_emulated(module, opts, n);
    }
    if let Some(h) = module.header.as_ref() {
        check_input_bound(h.bound, &opts.target)?;
    }
    pipeline::lower_module(module, opts)
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
                    "OpEntryPoint" => find_instruction(words, |op, w| {
                        op == spirv::Op::EntryPoint as u32
                            && !crate::pipeline::NAGA_STAGES
                                .iter()
                                .any(|&m| w.get(1) == Some(&(m as u32)))
                    })
                    .unwrap_or(word_offset),
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
