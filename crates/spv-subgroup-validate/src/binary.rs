//! Our own fail-fast word-level reader: header, instruction boundaries, ids.
//!
//! [`parse`] walks the words once, with no allocation per instruction, and stops at the first
//! malformation with a [`ParseError`] that carries the word offset. What it guarantees to the
//! rest of the crate: every instruction has a known opcode and lies inside the words, every id
//! operand it could locate is below the bound, and no result id is defined twice.

use rspirv::grammar::{LogicalOperand, OperandKind, OperandQuantifier, INSTRUCTION_TABLE};

/// The SPIR-V magic number.
pub const MAGIC: u32 = 0x0723_0203;

/// Words in the module header.
pub const HEADER_WORDS: usize = 5;

/// What is wrong with a binary that cannot be read as SPIR-V at all.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// The byte length is not a multiple of four.
    NotWordAligned(usize),
    /// Fewer than the five header words.
    TruncatedHeader,
    /// The first word is not the SPIR-V magic number in either byte order.
    BadMagic(u32),
    /// The header's version word is not `0x00MMmm00` with a known major version.
    BadVersion(u32),
    /// The id bound is 0.
    ZeroBound,
    /// The header's schema word (reserved) is not 0.
    BadSchema(u32),
    /// An instruction's word count is 0.
    ZeroWordCount,
    /// An instruction runs past the end of the module.
    TruncatedInstruction {
        /// Its word count.
        word_count: usize,
        /// Words left in the module.
        remaining: usize,
    },
    /// An opcode no SPIR-V grammar knows.
    UnknownOpcode(u32),
    /// An instruction is shorter than its fixed operands.
    TooFewOperands {
        /// The opcode's name.
        opcode: &'static str,
        /// Its word count.
        word_count: usize,
    },
    /// An id operand is not below the header's bound.
    IdOutOfBound {
        /// The id.
        id: u32,
        /// The bound.
        bound: u32,
    },
    /// A result id is 0 (never a valid id).
    ZeroId,
    /// A result id is defined by a second instruction.
    DuplicateResultId(u32),
    /// A literal string has no terminating NUL inside its instruction.
    UnterminatedString,
    /// No `OpMemoryModel`: every module has exactly one (SPIR-V 2.4, "Logical Layout of a Module"),
    /// so a header alone, or a fragment, is not a module.
    MissingMemoryModel,
}

/// A malformed binary, with the word offset of the problem.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{} at word {word_offset}{}", describe(kind), inst_index.map(|i| format!(" (instruction #{i})")).unwrap_or_default())]
pub struct ParseError {
    /// What is wrong.
    pub kind: ParseErrorKind,
    /// Offset of the offending word (the instruction's first word for instruction errors).
    pub word_offset: usize,
    /// Index of the offending instruction (from 0 after the header), if it is about one.
    pub inst_index: Option<usize>,
}

fn describe(kind: &ParseErrorKind) -> String {
    match kind {
        ParseErrorKind::NotWordAligned(n) => {
            format!("a SPIR-V binary is a sequence of 32-bit words, but it has {n} bytes")
        }
        ParseErrorKind::TruncatedHeader => "the module is shorter than the 5-word header".into(),
        ParseErrorKind::BadMagic(w) => format!("bad magic number {w:#010x} (expected 0x07230203)"),
        ParseErrorKind::BadVersion(w) => format!("bad version word {w:#010x}"),
        ParseErrorKind::ZeroBound => "the id bound in the header is 0".into(),
        ParseErrorKind::BadSchema(w) => format!("the reserved schema word is {w}, not 0"),
        ParseErrorKind::ZeroWordCount => "instruction with word count 0".into(),
        ParseErrorKind::TruncatedInstruction {
            word_count,
            remaining,
        } => {
            format!(
                "truncated instruction: word count {word_count} but only {remaining} words left"
            )
        }
        ParseErrorKind::UnknownOpcode(o) => format!("unknown opcode {o}"),
        ParseErrorKind::TooFewOperands { opcode, word_count } => {
            format!("Op{opcode} with word count {word_count} is too short for its operands")
        }
        ParseErrorKind::IdOutOfBound { id, bound } => {
            format!("id %{id} is not below the id bound {bound}")
        }
        ParseErrorKind::ZeroId => "result id 0".into(),
        ParseErrorKind::DuplicateResultId(id) => format!("result id %{id} is defined twice"),
        ParseErrorKind::UnterminatedString => "literal string without terminating NUL".into(),
        ParseErrorKind::MissingMemoryModel => {
            "no OpMemoryModel (every module has one): not a complete module".into()
        }
    }
}

/// Reads bytes as SPIR-V words, in whichever byte order the magic number says.
pub fn words_from_bytes(bytes: &[u8]) -> Result<Vec<u32>, ParseError> {
    let err = |kind, word_offset| ParseError {
        kind,
        word_offset,
        inst_index: None,
    };
    if !bytes.len().is_multiple_of(4) {
        return Err(err(
            ParseErrorKind::NotWordAligned(bytes.len()),
            bytes.len() / 4,
        ));
    }
    if bytes.len() < 4 {
        return Err(err(ParseErrorKind::TruncatedHeader, 0));
    }
    let first = [bytes[0], bytes[1], bytes[2], bytes[3]];
    let le = if u32::from_le_bytes(first) == MAGIC {
        true
    } else if u32::from_be_bytes(first) == MAGIC {
        false
    } else {
        return Err(err(ParseErrorKind::BadMagic(u32::from_le_bytes(first)), 0));
    };
    Ok(bytes
        .chunks_exact(4)
        .map(|c| {
            let a = [c[0], c[1], c[2], c[3]];
            if le {
                u32::from_le_bytes(a)
            } else {
                u32::from_be_bytes(a)
            }
        })
        .collect())
}

/// One instruction's position: 8 bytes, no heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Inst {
    /// Offset of its first word.
    pub offset: u32,
    /// Its opcode (known to the grammar).
    pub opcode: u16,
    /// Its word count (at least 1).
    pub wc: u16,
}

/// One instruction of the core grammar: what the table, the operand walk and the disassembly
/// read of rspirv's `grammar::Instruction`.
#[derive(Debug)]
pub(crate) struct Grammar {
    /// Its name without `Op`.
    pub opname: &'static str,
    /// Its opcode.
    pub op: spirv::Op,
    /// Its logical operands, Result Type and Result <id> included.
    pub operands: &'static [LogicalOperand],
}

/// Writes the generated `binary/grammar.rs` entries: `Name [Kind Quantifier, ...]` each.
macro_rules! instructions {
    ($($op:ident [$($kind:ident $quant:ident),*])*) => {
        &[$(Grammar {
            opname: stringify!($op),
            op: spirv::Op::$op,
            operands: &[$(LogicalOperand {
                kind: OperandKind::$kind,
                quantifier: OperandQuantifier::$quant,
            }),*],
        },)*]
    };
}

/// rspirv's core instruction grammar, as `cargo xtask codegen` copied it ([`grammar_source`]),
/// so that the opcode table below is built at compile time: a static in the library's image,
/// with nothing on the heap (a library that is loaded and unloaded again, as the Vulkan loader
/// does with the layer at every instance, would otherwise leave a table behind each time).
mod grammar;

use grammar::GRAMMAR;

/// The text of `binary/grammar.rs` from rspirv's `INSTRUCTION_TABLE` (`cargo xtask codegen`
/// writes it; a test keeps the file current).
pub fn grammar_source() -> String {
    let mut s = String::from(
        "//! rspirv's core instruction grammar, one line per instruction: its name, then each \
         operand's kind and\n//! quantifier. Generated by `cargo xtask codegen` \
         (`spv_subgroup_validate::grammar_source()`): do not edit.\n\n\
         use super::{Grammar, LogicalOperand, OperandKind, OperandQuantifier};\n\n\
         pub(super) const GRAMMAR: &[Grammar] = instructions! {\n",
    );
    for g in INSTRUCTION_TABLE.iter() {
        let operands: Vec<String> = g
            .operands
            .iter()
            .map(|o| format!("{:?} {:?}", o.kind, o.quantifier))
            .collect();
        s += &format!("    {} [{}]\n", g.opname, operands.join(", "));
    }
    s += "};\n";
    s
}

/// Per-opcode facts from the grammar, indexed by opcode.
#[derive(Clone, Copy)]
pub(crate) struct OpInfo {
    pub grammar: Option<&'static Grammar>,
    /// The opcode as the `spirv` crate's enum (`None`: unknown to it).
    pub op: Option<spirv::Op>,
    /// The instruction has a Result Type operand (word 1).
    pub has_type: bool,
    /// The instruction has a Result <id> (word 1, or word 2 after a type).
    pub has_result: bool,
    /// Fixed operand words required (excluding the first word).
    pub min_words: u16,
    /// The instruction declares a type (`OpType*`).
    pub is_type: bool,
    /// The operand walk of [`parse`] as a table, where the grammar allows one: what each
    /// operand word is, as far as the walk checks them (`None`: the walk reads the grammar).
    walk: Option<Walk>,
}

/// What [`parse`] checks in one operand word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WordClass {
    /// A literal or an enumerant: nothing.
    Other,
    /// An id operand: below the bound, not 0, recorded when not yet defined.
    Id,
    /// The result id: below the bound, not 0, not defined before.
    Result,
}

/// The most operands an instruction of the grammar has (a compile-time check says so).
const MAX_OPERANDS: usize = 16;

/// The operand walk of an opcode whose operands are all one word each: the class of word `w`
/// is `fixed()[w]`, then `tail` for every further word (a repeated last operand), and the walk
/// stops after `fixed()` when there is no `tail` (where the grammar walk stops checking).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Walk {
    classes: [WordClass; MAX_OPERANDS],
    len: u8,
    tail: Option<WordClass>,
}

impl Walk {
    /// The classes of the fixed words.
    fn fixed(&self) -> &[WordClass] {
        &self.classes[..self.len as usize]
    }

    /// The table form of the grammar walk in [`parse`] over `operands`, if it has one: every
    /// operand is one word (or a kind where that walk stops), none is a string or a pair.
    const fn of(operands: &[LogicalOperand]) -> Option<Walk> {
        let mut walk = Walk {
            classes: [WordClass::Other; MAX_OPERANDS],
            len: 0,
            tail: None,
        };
        let mut i = 0;
        while i < operands.len() {
            let lo = &operands[i];
            let kind = lo.kind;
            let class = if matches!(kind, OperandKind::IdResult) {
                WordClass::Result
            } else if is_id(kind) {
                WordClass::Id
            } else if single_word(kind) {
                WordClass::Other
            } else if matches!(
                kind,
                OperandKind::LiteralString
                    | OperandKind::PairIdRefIdRef
                    | OperandKind::PairIdRefLiteralInteger
            ) {
                return None;
            } else {
                // The grammar walk stops checking at this operand.
                return Some(walk);
            };
            if matches!(lo.quantifier, OperandQuantifier::ZeroOrMore) {
                walk.tail = Some(class);
                return Some(walk);
            }
            walk.classes[walk.len as usize] = class;
            walk.len += 1;
            i += 1;
        }
        Some(walk)
    }
}

impl OpInfo {
    /// An opcode no grammar knows.
    const UNKNOWN: OpInfo = OpInfo {
        grammar: None,
        op: None,
        has_type: false,
        has_result: false,
        min_words: 0,
        is_type: false,
        walk: None,
    };

    /// The facts of one instruction of the grammar.
    const fn of(g: &'static Grammar) -> OpInfo {
        let ops = g.operands;
        assert!(
            ops.len() <= MAX_OPERANDS,
            "an instruction with more operands than MAX_OPERANDS"
        );
        let has_type = !ops.is_empty() && matches!(ops[0].kind, OperandKind::IdResultType);
        let has_result = (!ops.is_empty() && matches!(ops[0].kind, OperandKind::IdResult))
            || (ops.len() > 1 && matches!(ops[1].kind, OperandKind::IdResult));
        let mut min_words = 0;
        let mut i = 0;
        while i < ops.len() {
            if matches!(ops[i].quantifier, OperandQuantifier::One) {
                min_words += fixed_words(ops[i].kind);
            }
            i += 1;
        }
        let name = g.opname.as_bytes();
        let is_type = starts_with(name, b"Type") && !equals(name, b"TypeForwardPointer");
        OpInfo {
            grammar: Some(g),
            op: Some(g.op),
            has_type,
            has_result,
            min_words,
            is_type,
            walk: Walk::of(ops),
        }
    }
}

const fn starts_with(s: &[u8], prefix: &[u8]) -> bool {
    if s.len() < prefix.len() {
        return false;
    }
    let mut i = 0;
    while i < prefix.len() {
        if s[i] != prefix[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn equals(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && starts_with(a, b)
}

/// Slots in the opcode table: one past the largest opcode of the grammar.
pub(crate) const OPCODES: usize = {
    let mut max = 0;
    let mut i = 0;
    while i < GRAMMAR.len() {
        let op = GRAMMAR[i].op as usize;
        if op > max {
            max = op;
        }
        i += 1;
    }
    max + 1
};

/// The opcode table, built by the compiler: an opcode's entry is its grammar's (the last one
/// of the grammar where two names share an opcode), [`OpInfo::UNKNOWN`] for a gap.
static OP_TABLE: [OpInfo; OPCODES] = {
    let mut table = [OpInfo::UNKNOWN; OPCODES];
    let mut i = 0;
    while i < GRAMMAR.len() {
        let g = &GRAMMAR[i];
        table[g.op as usize] = OpInfo::of(g);
        i += 1;
    }
    table
};

/// Per-opcode facts, indexed by raw opcode.
#[inline]
pub(crate) fn op_table() -> &'static [OpInfo] {
    &OP_TABLE
}

/// The `spirv::Op` of a raw opcode, from the table (no big `match` per call).
#[inline]
pub(crate) fn op_of(opcode: u32) -> Option<spirv::Op> {
    op_table().get(opcode as usize).and_then(|o| o.op)
}

/// The words (counted from the opcode word, 0) of an instruction with raw `opcode` and `wc` words
/// that hold <id> operands other than its Result Type and Result <id>, as the operand table lays
/// them out. `OpPhi` (value and parent pairs) and `OpExtInst` (the set, then the operands after
/// the instruction number) are laid out here too; `None` for any other opcode whose operands the
/// table cannot lay out (strings, pairs), where a caller must not guess.
pub(crate) fn id_operand_words(opcode: u32, wc: usize) -> Option<Vec<usize>> {
    let info = op_table().get(opcode as usize)?;
    let first = 1 + usize::from(info.has_type) + usize::from(info.has_result);
    match info.op {
        Some(spirv::Op::Phi) => return Some((first..wc).collect()),
        Some(spirv::Op::ExtInst) => {
            return Some(
                std::iter::once(3)
                    .chain(5..wc)
                    .filter(|&k| k < wc)
                    .collect(),
            )
        }
        _ => {}
    }
    let walk = info.walk.as_ref()?;
    let classes = walk
        .fixed()
        .iter()
        .copied()
        .map(Some)
        .chain(std::iter::repeat(walk.tail));
    Some(
        (1..wc)
            .zip(classes)
            .map_while(|(k, class)| class.map(|c| (k, c)))
            .filter(|&(k, c)| c == WordClass::Id && k >= first)
            .map(|(k, _)| k)
            .collect(),
    )
}

/// Words a mandatory operand takes at least.
const fn fixed_words(kind: OperandKind) -> u16 {
    match kind {
        OperandKind::PairLiteralIntegerIdRef
        | OperandKind::PairIdRefLiteralInteger
        | OperandKind::PairIdRefIdRef => 2,
        _ => 1,
    }
}

/// Whether an operand kind is exactly one word with no parameters.
const fn single_word(kind: OperandKind) -> bool {
    use OperandKind as K;
    matches!(
        kind,
        K::IdRef
            | K::IdResultType
            | K::IdResult
            | K::IdScope
            | K::IdMemorySemantics
            | K::LiteralInteger
            | K::SourceLanguage
            | K::ExecutionModel
            | K::AddressingModel
            | K::MemoryModel
            | K::StorageClass
            | K::Dim
            | K::SamplerAddressingMode
            | K::SamplerFilterMode
            | K::ImageFormat
            | K::ImageChannelOrder
            | K::ImageChannelDataType
            | K::FPRoundingMode
            | K::LinkageType
            | K::AccessQualifier
            | K::FunctionParameterAttribute
            | K::BuiltIn
            | K::Scope
            | K::GroupOperation
            | K::KernelEnqueueFlags
            | K::Capability
            | K::SelectionControl
            | K::FunctionControl
            | K::MemorySemantics
    )
}

const fn is_id(kind: OperandKind) -> bool {
    use OperandKind as K;
    matches!(
        kind,
        K::IdRef | K::IdResultType | K::IdScope | K::IdMemorySemantics
    )
}

/// Id -> defining instruction index. Dense (a `Vec`) up to a size the module's length justifies,
/// sparse above it, so a lying id bound cannot make us allocate gigabytes.
#[derive(Debug)]
pub(crate) struct IdMap {
    dense: Vec<u32>,
    sparse: std::collections::HashMap<u32, u32>,
}

impl IdMap {
    fn new(bound: u32, words: usize) -> IdMap {
        // Every id is defined by an instruction of at least two words, so a module has at most
        // `words / 2` of them: a dense table past that would serve ids no module can define,
        // at up to 4 bytes per input byte.
        let len = (bound as usize).min(words / 2 + (1 << 16));
        IdMap {
            dense: vec![0; len],
            sparse: std::collections::HashMap::new(),
        }
    }

    /// The index of the instruction defining `id`, if any.
    #[inline]
    pub fn get(&self, id: u32) -> Option<usize> {
        match self.dense.get(id as usize) {
            Some(0) => None,
            Some(&v) => Some(v as usize - 1),
            None => self.sparse.get(&id).map(|&v| v as usize - 1),
        }
    }

    fn set(&mut self, id: u32, inst: u32) {
        match self.dense.get_mut(id as usize) {
            Some(slot) => *slot = inst + 1,
            None => {
                self.sparse.insert(id, inst + 1);
            }
        }
    }
}

/// The parsed header and instruction list.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub version: u32,
    pub bound: u32,
    pub insts: Vec<Inst>,
    /// Index of each id's defining instruction.
    pub def: IdMap,
    /// Id operands that were not yet defined when seen: (id, instruction index).
    pub forward: Vec<(u32, u32)>,
}

/// Records `id` as the result of instruction `idx`: not 0, below the bound, defined once.
fn define_result(def: &mut IdMap, id: u32, bound: u32, idx: usize) -> Result<(), ParseErrorKind> {
    if id == 0 {
        return Err(ParseErrorKind::ZeroId);
    }
    if id >= bound {
        return Err(ParseErrorKind::IdOutOfBound { id, bound });
    }
    if def.get(id).is_some() {
        return Err(ParseErrorKind::DuplicateResultId(id));
    }
    def.set(id, idx as u32);
    Ok(())
}

/// Checks an id instruction `idx` uses (not 0, below the bound), and notes it when it is not
/// defined yet (a forward reference, resolved at the end).
fn use_id(
    def: &IdMap,
    forward: &mut Vec<(u32, u32)>,
    id: u32,
    bound: u32,
    idx: usize,
) -> Result<(), ParseErrorKind> {
    if id >= bound || id == 0 {
        return Err(ParseErrorKind::IdOutOfBound { id, bound });
    }
    if def.get(id).is_none() {
        forward.push((id, idx as u32));
    }
    Ok(())
}

/// Walks the module once. Fails fast on the first malformation.
pub(crate) fn parse(words: &[u32]) -> Result<Parsed, ParseError> {
    parse_with(words, true)
}

/// [`parse`], with the operand walk read from the grammar alone when `!tables` (what the tables
/// are checked against in the tests).
fn parse_with(words: &[u32], tables: bool) -> Result<Parsed, ParseError> {
    let err = |kind, word_offset, inst_index| {
        Err(ParseError {
            kind,
            word_offset,
            inst_index,
        })
    };
    if words.is_empty() {
        return err(ParseErrorKind::TruncatedHeader, 0, None);
    }
    if words[0] != MAGIC {
        return err(ParseErrorKind::BadMagic(words[0]), 0, None);
    }
    if words.len() < HEADER_WORDS {
        return err(ParseErrorKind::TruncatedHeader, words.len(), None);
    }
    let version = words[1];
    if version & 0xff00_00ff != 0 || (version >> 16) & 0xff != 1 {
        return err(ParseErrorKind::BadVersion(version), 1, None);
    }
    let bound = words[3];
    if bound == 0 {
        return err(ParseErrorKind::ZeroBound, 3, None);
    }
    if words[4] != 0 {
        return err(ParseErrorKind::BadSchema(words[4]), 4, None);
    }
    let mut def = IdMap::new(bound, words.len());
    let mut insts = Vec::with_capacity(words.len() / 4);
    let mut forward = Vec::new();
    let table = op_table();
    let mut pos = HEADER_WORDS;
    while pos < words.len() {
        let idx = insts.len();
        let first = words[pos];
        let wc = (first >> 16) as usize;
        let opcode = first & 0xffff;
        if wc == 0 {
            return err(ParseErrorKind::ZeroWordCount, pos, Some(idx));
        }
        if pos + wc > words.len() {
            return err(
                ParseErrorKind::TruncatedInstruction {
                    word_count: wc,
                    remaining: words.len() - pos,
                },
                pos,
                Some(idx),
            );
        }
        let info = match table.get(opcode as usize) {
            Some(i) if i.grammar.is_some() && i.op.is_some() => i,
            _ => return err(ParseErrorKind::UnknownOpcode(opcode), pos, Some(idx)),
        };
        let g = info.grammar.expect("checked above");
        if wc - 1 < info.min_words as usize {
            return err(
                ParseErrorKind::TooFewOperands {
                    opcode: g.opname,
                    word_count: wc,
                },
                pos,
                Some(idx),
            );
        }
        let operands = &words[pos + 1..pos + wc];
        // Walk the operands as far as their layout is certain, checking ids: from the table
        // where the opcode has one (most do; reading the grammar per operand was most of the
        // time of this function), else from the grammar.
        if let Some(walk) = info.walk.as_ref().filter(|_| tables) {
            let classes = walk
                .fixed()
                .iter()
                .copied()
                .chain(std::iter::repeat(walk.tail).map_while(|t| t));
            for (&id, class) in operands.iter().zip(classes) {
                match class {
                    WordClass::Other => {}
                    WordClass::Result => {
                        if let Err(k) = define_result(&mut def, id, bound, idx) {
                            return err(k, pos, Some(idx));
                        }
                    }
                    WordClass::Id => {
                        if let Err(k) = use_id(&def, &mut forward, id, bound, idx) {
                            return err(k, pos, Some(idx));
                        }
                    }
                }
            }
            insts.push(Inst {
                offset: pos as u32,
                opcode: opcode as u16,
                wc: wc as u16,
            });
            pos += wc;
            continue;
        }
        let mut w = 0usize;
        'walk: for lo in g.operands {
            loop {
                if w >= operands.len() {
                    break 'walk;
                }
                let kind = lo.kind;
                if kind == OperandKind::IdResult {
                    if let Err(k) = define_result(&mut def, operands[w], bound, idx) {
                        return err(k, pos, Some(idx));
                    }
                    w += 1;
                } else if is_id(kind) {
                    if let Err(k) = use_id(&def, &mut forward, operands[w], bound, idx) {
                        return err(k, pos, Some(idx));
                    }
                    w += 1;
                } else if kind == OperandKind::LiteralString {
                    match operands[w..]
                        .iter()
                        .position(|x| x.to_le_bytes().contains(&0))
                    {
                        Some(n) => w += n + 1,
                        None => return err(ParseErrorKind::UnterminatedString, pos, Some(idx)),
                    }
                } else if kind == OperandKind::LiteralExtInstInteger
                    || kind == OperandKind::LiteralSpecConstantOpInteger
                {
                    // OpExtInst / OpSpecConstantOp: what follows depends on the extended instruction
                    // or the wrapped opcode (literals among ids), so it is not checked here.
                    break 'walk;
                } else if kind == OperandKind::PairLiteralIntegerIdRef {
                    // OpSwitch: the literal's width depends on the selector's type.
                    break 'walk;
                } else if kind == OperandKind::PairIdRefIdRef
                    || kind == OperandKind::PairIdRefLiteralInteger
                {
                    if w + 1 >= operands.len() {
                        return err(
                            ParseErrorKind::TooFewOperands {
                                opcode: g.opname,
                                word_count: wc,
                            },
                            pos,
                            Some(idx),
                        );
                    }
                    let ids: &[u32] = match kind {
                        OperandKind::PairIdRefIdRef => &operands[w..w + 2],
                        _ => &operands[w..w + 1],
                    };
                    for &id in ids {
                        if id >= bound || id == 0 {
                            return err(ParseErrorKind::IdOutOfBound { id, bound }, pos, Some(idx));
                        }
                        if def.get(id).is_none() {
                            forward.push((id, idx as u32));
                        }
                    }
                    w += 2;
                } else if single_word(kind) {
                    w += 1;
                } else {
                    // Operands with parameters or context-dependent width: stop checking here.
                    break 'walk;
                }
                if lo.quantifier != OperandQuantifier::ZeroOrMore {
                    break;
                }
            }
        }
        insts.push(Inst {
            offset: pos as u32,
            opcode: opcode as u16,
            wc: wc as u16,
        });
        pos += wc;
    }
    let memory_model = spirv::Op::MemoryModel as u16;
    if !insts.iter().any(|i| i.opcode == memory_model) {
        return err(ParseErrorKind::MissingMemoryModel, words.len(), None);
    }
    Ok(Parsed {
        version,
        bound,
        insts,
        def,
        forward,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(bound: u32) -> Vec<u32> {
        vec![MAGIC, 0x0001_0300, 0, bound, 0]
    }

    fn kind(words: &[u32]) -> ParseErrorKind {
        parse(words).unwrap_err().kind
    }

    #[test]
    fn a_module_needs_a_memory_model() {
        let e = parse(&header(1)).unwrap_err();
        assert_eq!(
            (e.kind, e.word_offset),
            (ParseErrorKind::MissingMemoryModel, 5)
        );
        // OpMemoryModel Logical GLSL450: the smallest complete module.
        let mut w = header(1);
        w.extend([(3 << 16) | spirv::Op::MemoryModel as u32, 0, 1]);
        assert_eq!(parse(&w).unwrap().insts.len(), 1);
    }

    #[test]
    fn malformations_are_reported_with_offsets() {
        assert_eq!(kind(&[]), ParseErrorKind::TruncatedHeader);
        assert_eq!(kind(&[1, 2, 3, 4, 5]), ParseErrorKind::BadMagic(1));
        assert_eq!(kind(&[MAGIC, 0x0001_0300]), ParseErrorKind::TruncatedHeader);
        assert_eq!(kind(&header(0)), ParseErrorKind::ZeroBound);
        let mut w = header(10);
        w.push(0); // word count 0
        let e = parse(&w).unwrap_err();
        assert_eq!(
            (e.kind, e.word_offset, e.inst_index),
            (ParseErrorKind::ZeroWordCount, 5, Some(0))
        );
        let mut w = header(10);
        w.extend([(4 << 16) | 17, 1]); // OpCapability with 4 words but 2 present
        assert!(matches!(
            kind(&w),
            ParseErrorKind::TruncatedInstruction {
                word_count: 4,
                remaining: 2
            }
        ));
        let mut w = header(10);
        w.extend([(1 << 16) | 0xfff0]);
        assert_eq!(kind(&w), ParseErrorKind::UnknownOpcode(0xfff0));
        let mut w = header(10);
        w.extend([(2 << 16) | 20, 12]); // OpTypeBool %12 with bound 10
        assert_eq!(kind(&w), ParseErrorKind::IdOutOfBound { id: 12, bound: 10 });
        let mut w = header(10);
        w.extend([(2 << 16) | 20, 3, (2 << 16) | 20, 3]);
        let e = parse(&w).unwrap_err();
        assert_eq!(
            (e.kind, e.word_offset, e.inst_index),
            (ParseErrorKind::DuplicateResultId(3), 7, Some(1))
        );
        let mut w = header(10);
        w.extend([(3 << 16) | 21, 3, 32]); // OpTypeInt missing signedness
        assert!(matches!(kind(&w), ParseErrorKind::TooFewOperands { .. }));
        let mut w = header(10);
        w.extend([(3 << 16) | 10, 0x4142_4344, 0x4546_4748]); // OpExtension without NUL
        assert_eq!(kind(&w), ParseErrorKind::UnterminatedString);
    }

    #[test]
    fn self_referential_types_do_not_recurse() {
        let mut w = header(10);
        w.extend([(2 << 16) | 17, 4431]); // OpCapability SubgroupVoteKHR
        w.extend([(3 << 16) | 14, 0, 1]); // OpMemoryModel Logical GLSL450
        w.extend([(4 << 16) | 23, 2, 2, 4]); // %2 = OpTypeVector %2 4
        w.extend([(4 << 16) | 4428, 2, 3, 3]); // %3 = OpSubgroupAllKHR %2 %3
        let r = crate::validate(&w, &crate::ValidateOptions::default()).unwrap();
        assert!(
            r.diagnostics.iter().any(|d| d.rule.code() == "SG0103"),
            "{r:?}"
        );
        let _ = crate::render_human(&r, "m.spv");
    }

    #[test]
    fn both_byte_orders_are_read() {
        let le: Vec<u8> = header(3).iter().flat_map(|w| w.to_le_bytes()).collect();
        let be: Vec<u8> = header(3).iter().flat_map(|w| w.to_be_bytes()).collect();
        assert_eq!(words_from_bytes(&le).unwrap(), header(3));
        assert_eq!(words_from_bytes(&be).unwrap(), header(3));
        assert!(matches!(
            words_from_bytes(&le[..7]).unwrap_err().kind,
            ParseErrorKind::NotWordAligned(7)
        ));
        assert!(matches!(
            words_from_bytes(&[0, 0, 0, 0]).unwrap_err().kind,
            ParseErrorKind::BadMagic(0)
        ));
        assert_eq!(
            words_from_bytes(&[]).unwrap_err().kind,
            ParseErrorKind::TruncatedHeader
        );
    }

    #[test]
    fn the_generated_grammar_is_rspirvs() {
        let have = include_str!("binary/grammar.rs");
        assert!(
            have == grammar_source(),
            "src/binary/grammar.rs is out of date with rspirv: run `cargo xtask codegen`"
        );
    }

    /// The table the compiler builds holds what the grammar says, derived as at run time.
    #[test]
    fn the_static_table_is_the_grammars() {
        let table = op_table();
        let max = INSTRUCTION_TABLE.iter().map(|g| g.opcode as usize).max();
        assert_eq!(Some(table.len() - 1), max);
        let mut known = vec![false; table.len()];
        for g in INSTRUCTION_TABLE.iter() {
            known[g.opcode as usize] = true;
            let info = &table[g.opcode as usize];
            let ops = g.operands;
            let min_words: u16 = ops
                .iter()
                .filter(|o| o.quantifier == OperandQuantifier::One)
                .map(|o| fixed_words(o.kind))
                .sum();
            let grammar = info.grammar.expect("a known opcode");
            // Where two names share an opcode, the last one's (the same operands).
            assert_eq!(grammar.operands, ops, "{}", g.opname);
            assert_eq!(info.op, Some(g.opcode));
            assert_eq!(
                (info.has_type, info.has_result, info.min_words, info.is_type),
                (
                    ops.first()
                        .is_some_and(|o| o.kind == OperandKind::IdResultType),
                    ops.iter().take(2).any(|o| o.kind == OperandKind::IdResult),
                    min_words,
                    g.opname.starts_with("Type") && g.opname != "TypeForwardPointer",
                ),
                "{}",
                g.opname
            );
            if let Some(walk) = info.walk {
                assert!(walk.fixed().len() + usize::from(walk.tail.is_some()) <= ops.len());
            }
        }
        for (opcode, info) in table.iter().enumerate() {
            assert_eq!(info.grammar.is_some(), known[opcode], "{opcode}");
        }
    }

    /// A small xorshift generator: deterministic, no dependency.
    pub(crate) struct Rng(pub u64);
    impl Rng {
        pub(crate) fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn random_and_mutated_words_never_panic() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let seed: Vec<u32> = {
            let mut w = header(20);
            w.extend([(2 << 16) | 17, 4431]); // OpCapability SubgroupVoteKHR
            w.extend([(2 << 16) | 20, 2]); // OpTypeBool %2
            w.extend([(3 << 16) | 21, 3, 32, 0]);
            w.extend([(4 << 16) | 43, 3, 4, 3]); // OpConstant %3 %4 3
            w.extend([(4 << 16) | 4428, 2, 5, 6]); // OpSubgroupAllKHR %2 %5 %6 (forward ref)
            w
        };
        // `FUZZ_ROUNDS=1000000` for a longer run.
        let rounds = std::env::var("FUZZ_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(6000u64);
        for round in 0..rounds {
            let mut w = if round % 3 == 0 {
                let n = (rng.next() % 40) as usize;
                let mut v = header((rng.next() % 64) as u32);
                v.extend((0..n).map(|_| {
                    let r = rng.next() as u32;
                    if r.is_multiple_of(2) {
                        r
                    } else {
                        ((r % 6) << 16) | ((r >> 8) % 6000)
                    }
                }));
                v
            } else {
                seed.clone()
            };
            for _ in 0..(1 + rng.next() % 4) {
                if w.is_empty() {
                    break;
                }
                let i = (rng.next() as usize) % w.len();
                match rng.next() % 4 {
                    0 => w[i] = rng.next() as u32,
                    1 => w[i] ^= 1 << (rng.next() % 32),
                    2 => {
                        w.truncate(i);
                    }
                    _ => w.insert(i, (rng.next() % 70) as u32),
                }
            }
            // The operand walk from the tables checks what the one from the grammar does.
            let (a, b) = (parse_with(&w, true), parse_with(&w, false));
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(
                    (
                        a.insts,
                        a.forward,
                        (0..a.bound).map(|id| a.def.get(id)).collect::<Vec<_>>()
                    ),
                    (
                        b.insts,
                        b.forward,
                        (0..b.bound).map(|id| b.def.get(id)).collect::<Vec<_>>()
                    ),
                    "{w:x?}"
                ),
                (a, b) => assert_eq!(a.err(), b.err(), "{w:x?}"),
            }
            let _ = crate::validate(&w, &crate::ValidateOptions::default());
            let opts = crate::ValidateOptions {
                target: crate::target::Target::preset("khr-ballot"),
                target_env: Some("vulkan1.0".into()),
            };
            if let Ok(report) = crate::validate(&w, &opts) {
                let _ = crate::render_human(&report, "fuzz.spv");
                let _ = crate::render_json(&report, "fuzz.spv");
            }
        }
    }
}

#[cfg(test)]
mod layout_tests {
    use crate::rules::testutil::{check, shader, Expect};

    /// Literal operands of OpSpecConstantOp and of extended instructions are not ids.
    #[test]
    fn spec_constant_op_and_ext_inst_literals_are_not_ids() {
        let body = "%x = OpExtInst %uint %ext UMin %uint_1 %uint_2";
        let src = shader("", body)
            .replace(
                "OpMemoryModel",
                "%ext = OpExtInstImport \"GLSL.std.450\"\nOpMemoryModel",
            )
            .replace(
                "%main = OpFunction",
                "%sc = OpSpecConstantComposite %v4uint %uint_1 %uint_1 %uint_1 %uint_1\n\
%sv = OpSpecConstantOp %v2uint VectorShuffle %sc %sc 4294967295 7\n\
%se = OpSpecConstantOp %uint CompositeExtract %sc 3000\n%main = OpFunction",
            );
        check(&src, "spv1.3", Expect::Clean);
    }

    /// OpSwitch on a 64-bit selector has two-word literals: the reader must not misread them as ids.
    #[test]
    fn switch_with_64_bit_literals_parses() {
        let body = "%sel = OpUConvert %ulong %uint_1\nOpSelectionMerge %m None\n\
OpSwitch %sel %m 9223372032559808513 %a 7 %b\n%a = OpLabel\nOpBranch %m\n%b = OpLabel\nOpBranch %m\n%m = OpLabel";
        let src = shader("OpCapability Int64", body).replace(
            "%main = OpFunction",
            "%ulong = OpTypeInt 64 0\n%main = OpFunction",
        );
        check(&src, "spv1.3", Expect::Clean);
    }
}
