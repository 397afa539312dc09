//! Our own module loader: rspirv's parser decodes the operands, this module places instructions
//! into the sections of a `dr::Module`.
//!
//! rspirv 0.13's `dr::Loader` decides the section from the opcode alone and refuses what it does
//! not know (`OpExecutionModeId`, `OpExtInst` of a non-semantic set at global scope) as "not
//! inside block". Here the section comes from where the instruction stands: outside a function
//! everything that is not one of the preamble's opcodes belongs to the types/globals section, in
//! its order, and instructions between two functions (non-semantic ext-insts may stand there)
//! are kept aside with the number of functions before them, so [`assemble`] puts them back.
//!
//! Literal strings that are not UTF-8 (a Latin-1 comment in the `OpSource` text of a `-g` build,
//! a file name in an `OpString`) cannot be rspirv's `LiteralString`s: the parser gets them with
//! their non-ASCII bytes as `?` ([`prepare_strings`]), and the placer puts the input's words of
//! the string back as plain 32-bit literals ([`restore_strings`]), so the module assembles to
//! the input's bytes. Only names the pass reads must be UTF-8 (`OpExtension`, `OpExtInstImport`).
//!
//! For `lower_words` the load is sparse (runs the pass never reads stay in the words, see
//! `elide`) and streams: once the globals are complete, each function and each instruction
//! between functions goes to a [`Stream`] as soon as it is parsed instead of into the module.

use std::collections::{HashMap, HashSet};

use rspirv::binary::{Assemble, Consumer, ParseAction};
use rspirv::dr::{Block, Function, Instruction, Module, ModuleHeader, Operand};
use spirv::Op;

use crate::{builtin_uses, elide, LowerError};

/// Where a streaming load ([`load_streaming`]) hands what it parses, one function at a time.
pub(crate) trait Stream {
    /// The globals are complete (at the first `OpFunction`, or at the end of a module without
    /// functions); the stream may change them (they are what the load returns).
    fn globals(&mut self, module: &mut Module);
    /// One finished function, its elided runs left in the words behind placeholders;
    /// `elided_types` holds (result id, type id) of its elided values (to be drained).
    fn function(&mut self, module: &Module, f: Function, elided_types: &mut Vec<(u32, u32)>);
    /// An instruction standing between two functions (after the first one).
    fn between(&mut self, inst: Instruction);
}

/// A loaded module and what the `dr::Module` has no place for.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The module, its sections in input order.
    pub module: Module,
    /// Instructions standing between functions: (how many functions precede it, instruction).
    pub between_functions: Vec<(usize, Instruction)>,
}

/// Loads SPIR-V words into sections, accepting every instruction the grammar knows wherever a
/// valid module may hold it. Errors name the instruction's index and what is wrong.
pub fn load(words: &[u32]) -> Result<Loaded, LowerError> {
    let prepared = prepare_spec_constant_ops(words)?;
    let mut placer = Placer {
        disguised: prepared.disguised,
        input: words,
        strings: prepared.strings,
        ..Placer::default()
    };
    rspirv::binary::parse_words(prepared.words.as_deref().unwrap_or(words), &mut placer)
        .map_err(|e| LowerError::Parse(e.to_string()))?;
    if let Some(err) = placer.error {
        return Err(LowerError::Parse(err));
    }
    Ok(placer.loaded)
}

/// Loads like [`load`], but runs of instructions the pass neither reads nor changes stay in
/// `words`, each block holding a placeholder for them (see `elide`), and the globals and then
/// each function, as soon as it is parsed, go to `stream`, so that at most one function is ever
/// held in rspirv's form (rspirv's parser still reads the whole module in one pass: its type
/// tracker needs the globals to decode literals). Returns the globals.
/// The caller checks `words.len() < 2^31` (placeholders hold 31-bit offsets).
pub(crate) fn load_streaming(words: &[u32], stream: &mut dyn Stream) -> Result<Module, LowerError> {
    let prepared = prepare_spec_constant_ops(words)?;
    let mut placer = Placer {
        disguised: prepared.disguised,
        input: words,
        strings: prepared.strings,
        sparse: Some(Sparse {
            words,
            pos: 5,
            watched: None,
            elided_types: Vec::new(),
            stream,
        }),
        ..Placer::default()
    };
    rspirv::binary::parse_words(prepared.words.as_deref().unwrap_or(words), &mut placer)
        .map_err(|e| LowerError::Parse(e.to_string()))?;
    if let Some(err) = placer.error {
        return Err(LowerError::Parse(err));
    }
    if !placer.globals_done {
        placer.start_functions();
    }
    Ok(placer.loaded.module)
}

/// The words rspirv's parser gets, where they differ from the input (see
/// [`prepare_spec_constant_ops`]).
struct Prepared {
    /// `Some` when an instruction is disguised: the input with those instructions' opcodes changed.
    words: Option<Vec<u32>>,
    /// Result ids of the disguised `OpSpecConstantOp`s.
    disguised: HashSet<u32>,
    /// Instruction index -> word offset of each instruction with a string that is not UTF-8.
    strings: HashMap<usize, usize>,
}

/// Whether rspirv 0.13's parser decodes an `OpSpecConstantOp` of this operation wrongly: it reads
/// one word for each of the operation's operands, whatever their quantifier, so an operation with
/// a variable number of literals or ids fails with "found extra operands" when it has more than
/// one. glslang writes such ones for every swizzle of a specialization constant (`VectorShuffle`
/// with two or more components) and for nested indexing (`CompositeExtract`, `CompositeInsert`
/// with two or more indexes); they are valid SPIR-V. Only operations whose operands are ids and
/// integer literals are handled (all the spec allows for `OpSpecConstantOp` are).
fn needs_disguise(g: &rspirv::grammar::Instruction<'_>) -> bool {
    use rspirv::grammar::{OperandKind, OperandQuantifier};
    let operands = || {
        g.operands
            .iter()
            .filter(|o| !matches!(o.kind, OperandKind::IdResultType | OperandKind::IdResult))
    };
    operands().any(|o| o.quantifier != OperandQuantifier::One)
        && operands().all(|o| matches!(o.kind, OperandKind::IdRef | OperandKind::LiteralInteger))
}

/// Prepares the words for rspirv's parser.
///
/// Refuses an `OpSpecConstantOp` whose operation rspirv 0.13's parser cannot decode: it panics
/// (rather than failing) on an operation whose operands include a literal of context-dependent
/// width, a nested `OpSpecConstantOp` literal or an `OpSwitch` pair, e.g. operation 52, itself.
/// None of those is an operation the spec allows there, so such a module is invalid anyway.
///
/// An `OpSpecConstantOp` rspirv decodes wrongly ([`needs_disguise`]) goes to the parser as an
/// `OpSpecConstantComposite` of the same words (its `IdRef*` operands take any word), and the
/// placer turns it back ([`undisguise`]): the module holds the instruction as it was, and
/// assembles to the input's words. The lengths stay, so every word offset is the input's.
/// The walk stops at the first malformed word count; the parser reports that one.
fn prepare_spec_constant_ops(words: &[u32]) -> Result<Prepared, LowerError> {
    use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
    let mut prepared = Prepared {
        words: None,
        disguised: HashSet::new(),
        strings: HashMap::new(),
    };
    let mut at = 5;
    let mut index = 0usize;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        if count == 0 || at + count > words.len() {
            break;
        }
        if first & 0xffff == Op::SpecConstantOp as u32 && count >= 4 {
            let operation = words[at + 3];
            if let Some(g) = INSTRUCTION_TABLE.lookup_opcode(operation) {
                let undecodable = g.operands.iter().any(|o| {
                    matches!(
                        o.kind,
                        OperandKind::LiteralContextDependentNumber
                            | OperandKind::LiteralSpecConstantOpInteger
                            | OperandKind::PairLiteralIntegerIdRef
                    )
                });
                if undecodable {
                    return Err(LowerError::Parse(format!(
                        "instruction #{index} at word {at}: OpSpecConstantOp with operation {operation} \
                         ({}), which is not a specialization-constant operation",
                        spirv::Op::from_u32(operation)
                            .map_or("unknown".to_owned(), |o| format!("Op{o:?}"))
                    )));
                }
                if needs_disguise(g) {
                    let copy = prepared.words.get_or_insert_with(|| words.to_vec());
                    copy[at] = (first & 0xffff_0000) | Op::SpecConstantComposite as u32;
                    prepared.disguised.insert(words[at + 2]);
                }
            }
        }
        prepare_strings(words, at, count, index, &mut prepared)?;
        at += count;
        index += 1;
    }
    Ok(prepared)
}

/// Where the literal strings of the instruction at `words[at..at + count]` start (a word index
/// in the instruction), and whether more than one may follow; `None` for an instruction
/// without one. Every instruction of the core grammar and its extensions that holds a literal
/// string stands before the first function.
fn string_operands(words: &[u32], at: usize, count: usize) -> Option<(usize, bool)> {
    // String-valued decorations: LinkageAttributes, UserSemantic, UserTypeGOOGLE.
    let string_decoration = |d: u32| matches!(d, 41 | 5635 | 5636);
    let word = |k: usize| words.get(at + k).copied().filter(|_| k < count);
    let start = match Op::from_u32(words[at] & 0xffff)? {
        Op::SourceContinued | Op::SourceExtension | Op::Extension | Op::ModuleProcessed => {
            (1, false)
        }
        Op::Name | Op::String | Op::ExtInstImport | Op::TypeOpaque => (2, false),
        Op::MemberName | Op::EntryPoint => (3, false),
        Op::Source => (4, false),
        Op::Decorate if word(2).is_some_and(string_decoration) => (3, false),
        Op::MemberDecorate if word(3).is_some_and(string_decoration) => (4, false),
        Op::DecorateString => (3, true),
        Op::MemberDecorateString => (4, true),
        _ => return None,
    };
    (start.0 < count).then_some(start)
}

/// Gives the parser every literal string of the instruction at word `at` (`count` words, the
/// `index`th) that is not UTF-8 with its bytes of 128 and up as `?` (the same length, so every
/// word offset stays the input's), and records the instruction for [`restore_strings`].
/// Refuses such a name where the pass reads it: an `OpExtension` (which extensions the module
/// declares) or an `OpExtInstImport` (which instruction set an `OpExtInst` is of).
fn prepare_strings(
    words: &[u32],
    at: usize,
    count: usize,
    index: usize,
    prepared: &mut Prepared,
) -> Result<(), LowerError> {
    let Some((mut k, several)) = string_operands(words, at, count) else {
        return Ok(());
    };
    while k < count {
        let bytes = || {
            words[at + k..at + count]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take_while(|&b| b != 0)
        };
        let len = bytes().count() / 4 + 1;
        // ASCII, as nearly every string is, without a copy.
        let string: Vec<u8> = if bytes().any(|b| b >= 0x80) {
            bytes().collect()
        } else {
            Vec::new()
        };
        if std::str::from_utf8(&string).is_err() {
            let op = words[at] & 0xffff;
            if op == Op::Extension as u32 || op == Op::ExtInstImport as u32 {
                return Err(LowerError::Parse(format!(
                    "instruction #{index} at word {at}: the name {:?} of this Op{} is not UTF-8, \
                     so it names no extension or instruction set the lowering knows",
                    String::from_utf8_lossy(&string),
                    if op == Op::Extension as u32 {
                        "Extension"
                    } else {
                        "ExtInstImport"
                    },
                )));
            }
            let copy = prepared.words.get_or_insert_with(|| words.to_vec());
            for w in &mut copy[at + k..(at + k + len).min(at + count)] {
                let bytes = w.to_le_bytes().map(|b| if b >= 0x80 { b'?' } else { b });
                *w = u32::from_le_bytes(bytes);
            }
            prepared.strings.insert(index, at);
        }
        if !several {
            break;
        }
        k += len;
    }
    Ok(())
}

/// Puts the input's words back in place of each literal string of `inst` (the instruction at
/// word `at` of `input`) that [`prepare_strings`] changed: 32-bit literals, which assemble to the
/// input's bytes. Such a string is read as no string at all (only debug information and
/// names the pass does not read can be one).
fn restore_strings(mut inst: Instruction, input: &[u32], at: usize) -> Instruction {
    let mut k = 1 + usize::from(inst.result_type.is_some()) + usize::from(inst.result_id.is_some());
    let mut operands = Vec::with_capacity(inst.operands.len());
    for o in inst.operands.drain(..) {
        match o {
            Operand::LiteralString(s) => {
                let len = s.len() / 4 + 1;
                let original = input.get(at + k..at + k + len).unwrap_or_default();
                let same = original
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .take_while(|&b| b != 0)
                    .eq(s.bytes());
                if same {
                    operands.push(Operand::LiteralString(s));
                } else {
                    operands.extend(original.iter().map(|&w| Operand::LiteralBit32(w)));
                }
                k += len;
            }
            Operand::LiteralBit64(_) => {
                k += 2;
                operands.push(o);
            }
            o => {
                k += 1;
                operands.push(o);
            }
        }
    }
    inst.operands = operands;
    inst
}

/// Turns an `OpSpecConstantComposite` that [`prepare_spec_constant_ops`] disguised back into the
/// `OpSpecConstantOp` it is, its operands typed by the operation's grammar (the words are those
/// of the input; `None` if they do not fit the grammar, which the preparation rules out).
fn undisguise(inst: &Instruction) -> Option<Instruction> {
    use rspirv::grammar::{OperandKind, OperandQuantifier, INSTRUCTION_TABLE};
    let words: Vec<u32> = inst
        .operands
        .iter()
        .map(|o| match o {
            Operand::IdRef(w) => Some(*w),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let (&operation, mut rest) = words.split_first()?;
    let g = INSTRUCTION_TABLE.lookup_opcode(operation)?;
    let mut operands = vec![Operand::LiteralSpecConstantOpInteger(g.opcode)];
    let typed = |kind: OperandKind, w: u32| match kind {
        OperandKind::IdRef => Some(Operand::IdRef(w)),
        OperandKind::LiteralInteger => Some(Operand::LiteralBit32(w)),
        _ => None,
    };
    for o in g
        .operands
        .iter()
        .filter(|o| !matches!(o.kind, OperandKind::IdResultType | OperandKind::IdResult))
    {
        match o.quantifier {
            OperandQuantifier::One => {
                let (&w, tail) = rest.split_first()?;
                operands.push(typed(o.kind, w)?);
                rest = tail;
            }
            OperandQuantifier::ZeroOrOne => {
                if let Some((&w, tail)) = rest.split_first() {
                    operands.push(typed(o.kind, w)?);
                    rest = tail;
                }
            }
            OperandQuantifier::ZeroOrMore => {
                for &w in rest {
                    operands.push(typed(o.kind, w)?);
                }
                rest = &[];
            }
        }
    }
    if !rest.is_empty() {
        return None;
    }
    Some(Instruction::new(
        Op::SpecConstantOp,
        inst.result_type,
        inst.result_id,
        operands,
    ))
}

/// Assembles a loaded module, the between-function instructions back in their places.
pub fn assemble(mut module: Module, between: &[(usize, Instruction)]) -> Vec<u32> {
    if between.is_empty() {
        return module.assemble();
    }
    let functions = std::mem::take(&mut module.functions);
    let mut out = module.assemble();
    let mut pending = between.iter().peekable();
    for (i, f) in functions.iter().enumerate() {
        while let Some((_, inst)) = pending.next_if(|(at, _)| *at <= i) {
            inst.assemble_into(&mut out);
        }
        f.assemble_into(&mut out);
    }
    for (_, inst) in pending {
        inst.assemble_into(&mut out);
    }
    out
}

/// The state of a streaming load.
struct Sparse<'w, 's> {
    words: &'w [u32],
    /// Word offset of the next instruction.
    pos: usize,
    /// Built-in variables and access chains into them (their users are kept), known once the
    /// first function starts.
    watched: Option<HashSet<u32>>,
    /// (result id, type id) of the current function's elided values.
    elided_types: Vec<(u32, u32)>,
    /// Where the globals and the functions go.
    stream: &'s mut dyn Stream,
}

/// Appends `inst` (at word `at` and its word count, in a sparse load) to `block`, or in a sparse
/// load what of it the pass keeps ([`Sparse::elide`]).
fn push_kept(
    sparse: Option<&mut Sparse<'_, '_>>,
    module: &Module,
    inst: Instruction,
    at: Option<(usize, usize)>,
    block: &mut Block,
) {
    let kept = match (sparse, at) {
        (Some(s), Some((at, count))) => s.elide(inst, at, count, &mut block.instructions, module),
        _ => Some(inst),
    };
    block.instructions.extend(kept);
}

impl Sparse<'_, '_> {
    /// Elides `inst` (at word `at`, `count` words) into `insts` unless the pass needs it.
    /// Returns the instruction back when it must be kept.
    fn elide(
        &mut self,
        inst: Instruction,
        at: usize,
        count: usize,
        insts: &mut Vec<Instruction>,
        module: &Module,
    ) -> Option<Instruction> {
        let watched = self
            .watched
            .get_or_insert_with(|| builtin_variables(module));
        if elide::keep(&inst, watched) {
            // Pointers derived from a built-in (access chains, copies) are watched too.
            if let (Some(r), Some(base)) = (inst.result_id, builtin_uses::derived_from(&inst)) {
                if watched.contains(&base) {
                    watched.insert(r);
                }
            }
            // Not trimming the parser's operand vectors (room for 4 operands at least) is
            // deliberate: a reallocation per kept instruction cost 10% of the run for 2% of the
            // peak (docs/PERFORMANCE.md).
            return Some(inst);
        }
        if let (Some(ty), Some(id)) = (inst.result_type, inst.result_id) {
            self.elided_types.push((id, ty));
        }
        elide::push(insts, at, count, inst.class.opcode == Op::Phi);
        None
    }
}

/// The ids decorated `BuiltIn`, and the `SPV_AMD_shader_ballot` import: the pass reads their users.
fn builtin_variables(module: &Module) -> HashSet<u32> {
    builtin_uses::decorated(module)
        .into_keys()
        // The users of AMD's ballot instruction set, its `OpExtInst`s, are rewritten too.
        .chain(
            module
                .ext_inst_imports
                .iter()
                .filter(|i| {
                    matches!(i.operands.first(), Some(Operand::LiteralString(s))
                        if s == spv_subgroup_validate::fit::AMD_SHADER_BALLOT)
                })
                .filter_map(|i| i.result_id),
        )
        .collect()
}

#[derive(Default)]
struct Placer<'w, 's> {
    loaded: Loaded,
    /// `Some` for a streaming load.
    sparse: Option<Sparse<'w, 's>>,
    /// Whether the globals are complete (the first `OpFunction` was seen).
    globals_done: bool,
    /// How many functions have ended.
    functions_done: usize,
    function: Option<Function>,
    block: Option<Block>,
    /// Instructions inside a function before its first label (OpLine, non-semantic ext-insts):
    /// they open the first block, the only place a `dr::Function` can hold them.
    before_label: Vec<Instruction>,
    /// The first misplaced instruction (parse actions cannot carry our message).
    error: Option<String>,
    index: usize,
    /// Result ids of the `OpSpecConstantOp`s parsed in disguise ([`prepare_spec_constant_ops`]).
    disguised: HashSet<u32>,
    /// The input's words.
    input: &'w [u32],
    /// The instructions whose strings [`prepare_strings`] changed: index -> word offset.
    strings: HashMap<usize, usize>,
}

impl Placer<'_, '_> {
    /// The first `OpFunction` (or the end): the globals are complete.
    fn start_functions(&mut self) {
        self.globals_done = true;
        if let Some(s) = self.sparse.as_mut() {
            s.stream.globals(&mut self.loaded.module);
        }
    }

    fn fail(&mut self, message: String) -> ParseAction {
        self.error = Some(format!("instruction {}: {message}", self.index));
        ParseAction::Stop
    }

    fn place_global(&mut self, inst: Instruction) {
        let m = &mut self.loaded.module;
        match inst.class.opcode {
            Op::Capability => m.capabilities.push(inst),
            Op::Extension => m.extensions.push(inst),
            Op::ExtInstImport => m.ext_inst_imports.push(inst),
            Op::MemoryModel => m.memory_model = Some(inst),
            Op::EntryPoint => m.entry_points.push(inst),
            Op::ExecutionMode | Op::ExecutionModeId => m.execution_modes.push(inst),
            Op::String | Op::SourceExtension | Op::Source | Op::SourceContinued => {
                m.debug_string_source.push(inst)
            }
            Op::Name | Op::MemberName => m.debug_names.push(inst),
            Op::ModuleProcessed => m.debug_module_processed.push(inst),
            op if op.is_annotation() => m.annotations.push(inst),
            // After the first function only non-semantic ext-insts (and debug lines) may stand
            // outside one; they keep their place between the functions.
            _ if self.functions_done > 0 => match self.sparse.as_mut() {
                Some(s) => s.stream.between(inst),
                None => {
                    let at = self.functions_done;
                    self.loaded.between_functions.push((at, inst));
                }
            },
            // Types, constants, global variables, OpUndef, OpLine, global OpExtInst, and any
            // future global-scope opcode: the one section that holds them, in order.
            _ => m.types_global_values.push(inst),
        }
    }
}

impl Consumer for Placer<'_, '_> {
    fn initialize(&mut self) -> ParseAction {
        ParseAction::Continue
    }

    fn finalize(&mut self) -> ParseAction {
        if self.function.is_some() || self.block.is_some() {
            return self.fail("the module ends inside a function (no OpFunctionEnd)".to_owned());
        }
        ParseAction::Continue
    }

    fn consume_header(&mut self, header: ModuleHeader) -> ParseAction {
        self.loaded.module.header = Some(header);
        ParseAction::Continue
    }

    fn consume_instruction(&mut self, inst: Instruction) -> ParseAction {
        self.index += 1;
        let inst = if inst.class.opcode == Op::SpecConstantComposite
            && inst
                .result_id
                .is_some_and(|id| self.disguised.contains(&id))
        {
            match undisguise(&inst) {
                Some(real) => real,
                None => {
                    return self.fail(
                        "an OpSpecConstantOp whose operands do not fit its operation".to_owned(),
                    )
                }
            }
        } else if let Some(&at) = (!self.strings.is_empty())
            .then(|| self.strings.get(&(self.index - 1)))
            .flatten()
        {
            // (The emptiness test first: a hash per instruction of every module is not free.)
            restore_strings(inst, self.input, at)
        } else {
            inst
        };
        let op = inst.class.opcode;
        // Where the instruction stands (the structure check before the load vouches for the
        // word counts).
        let at = self.sparse.as_mut().map(|s| {
            let at = s.pos;
            let count = s.words.get(at).map_or(1, |w| (w >> 16) as usize).max(1);
            s.pos += count;
            (at, count)
        });
        let Some(function) = self.function.as_mut() else {
            if op == Op::Function {
                if !self.globals_done {
                    self.start_functions();
                }
                let mut f = Function::new();
                f.def = Some(inst);
                self.function = Some(f);
            } else if op == Op::FunctionEnd
                || op == Op::FunctionParameter
                || op == Op::Label
                || rspirv::grammar::reflect::is_block_terminator(op)
            {
                return self.fail(format!("Op{op:?} outside a function"));
            } else {
                self.place_global(inst);
            }
            return ParseAction::Continue;
        };
        match op {
            Op::Function => return self.fail("OpFunction inside a function".to_owned()),
            Op::FunctionParameter if self.block.is_none() => function.parameters.push(inst),
            Op::FunctionEnd => {
                if self.block.is_some() {
                    return self.fail("OpFunctionEnd inside a block".to_owned());
                }
                if !self.before_label.is_empty() {
                    return self.fail("a function without blocks holds instructions".to_owned());
                }
                function.end = Some(inst);
                if self.sparse.is_some() {
                    function.blocks.shrink_to_fit();
                }
                self.functions_done += 1;
                if let Some(f) = self.function.take() {
                    match self.sparse.as_mut() {
                        Some(s) => s
                            .stream
                            .function(&self.loaded.module, f, &mut s.elided_types),
                        None => self.loaded.module.functions.push(f),
                    }
                }
            }
            Op::Label => {
                if self.block.is_some() {
                    return self.fail("OpLabel inside a block".to_owned());
                }
                let mut block = Block::new();
                block.label = Some(inst);
                block.instructions = std::mem::take(&mut self.before_label);
                self.block = Some(block);
            }
            op if rspirv::grammar::reflect::is_block_terminator(op) => {
                let Some(mut block) = self.block.take() else {
                    return self.fail(format!("Op{op:?} outside a block"));
                };
                push_kept(
                    self.sparse.as_mut(),
                    &self.loaded.module,
                    inst,
                    at,
                    &mut block,
                );
                if self.sparse.is_some() {
                    // Grown by pushing, a block has room for up to twice its instructions:
                    // trimmed, every block the pass leaves alone costs what it holds.
                    block.instructions.shrink_to_fit();
                }
                function.blocks.push(block);
            }
            _ => match self.block.as_mut() {
                Some(block) => {
                    push_kept(self.sparse.as_mut(), &self.loaded.module, inst, at, block);
                }
                None if function.blocks.is_empty() => self.before_label.push(inst),
                None => return self.fail(format!("Op{op:?} between two blocks")),
            },
        }
        ParseAction::Continue
    }
}

#[cfg(test)]
mod spec_constant_op_tests {
    use super::*;

    /// A stream that drops what it is given.
    struct Drop;

    impl Stream for Drop {
        fn globals(&mut self, _: &mut Module) {}
        fn function(&mut self, _: &Module, _: Function, _: &mut Vec<(u32, u32)>) {}
        fn between(&mut self, _: Instruction) {}
    }

    /// A module whose `OpSpecConstantOp` names operation `operation` on constant %2.
    fn module(operation: u32, tail: &[u32]) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 10, 0];
        w.extend([(2 << 16) | 17, 1]); // OpCapability Shader
        w.extend([(3 << 16) | 14, 0, 1]); // OpMemoryModel Logical GLSL450
        w.extend([(4 << 16) | 21, 1, 32, 0]); // %1 = OpTypeInt 32 0
        w.extend([(4 << 16) | 43, 1, 2, 5]); // %2 = OpConstant %1 5
        let count = 4 + tail.len() as u32;
        w.extend([(count << 16) | 52, 1, 3, operation]);
        w.extend(tail);
        w
    }

    #[test]
    fn nested_spec_constant_op_is_a_parse_error_not_a_panic() {
        // Found by the `lower` fuzz target: rspirv's parser panics on operation 52.
        let words = module(52, &[52, 2]);
        for loaded in [
            load(&words).map(|_| ()),
            load_streaming(&words, &mut Drop).map(|_| ()),
        ] {
            match loaded {
                Err(LowerError::Parse(m)) => assert!(m.contains("operation 52"), "{m}"),
                other => panic!("expected a parse error, got {other:?}"),
            }
        }
    }

    #[test]
    fn allowed_operation_still_loads() {
        // OpIAdd (128) %2 %2.
        let words = module(128, &[2, 2]);
        assert!(load(&words).is_ok());
    }

    #[test]
    fn operations_with_several_literals_load_and_assemble_to_the_input() {
        // glslang's swizzles and nested indexes of specialization constants: VectorShuffle (79)
        // %2 %2 with three components, CompositeExtract (81) %2 with two indexes, and
        // CompositeInsert (82) %2 %2 with two. rspirv alone refuses each ("extra operands").
        for (operation, tail) in [
            (79, vec![2, 2, 1, 0, 1]),
            (81, vec![2, 0, 1]),
            (82, vec![2, 2, 1, 0]),
            // One literal: rspirv reads it, and the disguise must give the same.
            (81, vec![2, 0]),
        ] {
            let words = module(operation, &tail);
            let loaded = load(&words).unwrap_or_else(|e| panic!("operation {operation}: {e}"));
            let inst = loaded
                .module
                .types_global_values
                .last()
                .expect("the spec constant");
            assert_eq!(inst.class.opcode, Op::SpecConstantOp);
            assert_eq!(inst.result_id, Some(3));
            assert_eq!(
                inst.operands.len(),
                1 + tail.len(),
                "operation {operation}: {:?}",
                inst.operands
            );
            // From word 5: rspirv's assembler writes its own generator word.
            assert_eq!(
                assemble(loaded.module, &loaded.between_functions)[5..],
                words[5..],
                "operation {operation}"
            );
            assert!(load_streaming(&words, &mut Drop).is_ok());
        }
    }

    #[test]
    fn a_disguised_operation_with_too_few_operands_is_an_error() {
        // VectorShuffle needs two vectors: with one id and nothing else the disguise cannot
        // type the words back, and the load fails rather than keep an OpSpecConstantComposite.
        let words = module(79, &[2]);
        assert!(matches!(load(&words), Err(LowerError::Parse(_))));
    }
}

#[cfg(test)]
mod string_tests {
    use super::*;

    /// A stream that keeps nothing.
    struct Drop;

    impl Stream for Drop {
        fn globals(&mut self, _: &mut Module) {}
        fn function(&mut self, _: &Module, _: Function, _: &mut Vec<(u32, u32)>) {}
        fn between(&mut self, _: Instruction) {}
    }

    /// The words of a literal string (zero-terminated, padded to a word).
    fn string(bytes: &[u8]) -> Vec<u32> {
        let mut b = bytes.to_vec();
        b.resize(bytes.len() / 4 * 4 + 4, 0);
        b.chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    /// Appends instruction `op` with `operands` to `w`.
    fn push(w: &mut Vec<u32>, op: Op, operands: &[u32]) {
        w.push(((operands.len() as u32 + 1) << 16) | op as u32);
        w.extend_from_slice(operands);
    }

    /// A module without functions whose every kind of debug string and name is Latin-1
    /// (`Gr\xf6\xdfe`), and `extra` before its types.
    fn module(extra: &[(Op, Vec<u32>)]) -> Vec<u32> {
        let latin1 = string(b"Gr\xf6\xdfe");
        let with = |head: &[u32]| [head, &latin1].concat();
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 10, 0];
        push(&mut w, Op::Capability, &[1]);
        push(&mut w, Op::Capability, &[5]); // Linkage
        for (op, operands) in extra {
            push(&mut w, *op, operands);
        }
        push(&mut w, Op::MemoryModel, &[0, 1]);
        push(&mut w, Op::EntryPoint, &with(&[5, 3])[..]);
        push(&mut w, Op::String, &with(&[1]));
        push(&mut w, Op::SourceExtension, &latin1);
        push(&mut w, Op::Source, &with(&[2, 450, 1]));
        push(&mut w, Op::SourceContinued, &latin1);
        push(&mut w, Op::Name, &with(&[2]));
        push(&mut w, Op::MemberName, &with(&[2, 0]));
        push(&mut w, Op::ModuleProcessed, &latin1);
        // UserSemantic, and LinkageAttributes' name with its Export (0).
        push(&mut w, Op::DecorateString, &with(&[2, 5635]));
        push(&mut w, Op::MemberDecorateString, &with(&[2, 0, 5635]));
        push(&mut w, Op::Decorate, &[with(&[4, 41]), vec![0]].concat());
        push(&mut w, Op::TypeInt, &[4, 32, 0]);
        push(&mut w, Op::TypeStruct, &[2, 4]);
        w
    }

    #[test]
    fn strings_that_are_not_utf8_load_and_assemble_to_the_input() {
        let words = module(&[]);
        let loaded = load(&words).unwrap_or_else(|e| panic!("{e}"));
        let name = &loaded.module.debug_names[0];
        assert!(
            matches!(
                name.operands.as_slice(),
                [Operand::IdRef(2), Operand::LiteralBit32(_), ..]
            ),
            "{name:?}"
        );
        // From word 5: rspirv's assembler writes its own generator word.
        assert_eq!(
            assemble(loaded.module, &loaded.between_functions)[5..],
            words[5..]
        );
        let globals = load_streaming(&words, &mut Drop).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(globals.assemble()[5..], words[5..]);
    }

    #[test]
    fn names_the_pass_reads_must_be_utf8() {
        let latin1 = string(b"SPV_\xf6");
        for (op, operands, at) in [
            (Op::Extension, latin1.clone(), 9),
            (Op::ExtInstImport, [vec![6], latin1].concat(), 9),
        ] {
            let words = module(&[(op, operands)]);
            for loaded in [
                load(&words).map(|_| ()),
                load_streaming(&words, &mut Drop).map(|_| ()),
            ] {
                match loaded {
                    Err(LowerError::Parse(m)) => assert!(
                        m.contains(&format!("at word {at}")) && m.contains("is not UTF-8"),
                        "{m}"
                    ),
                    other => panic!("Op{op:?}: expected a parse error, got {other:?}"),
                }
            }
        }
    }
}
