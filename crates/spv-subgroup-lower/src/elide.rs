//! Instructions left as words: the memory bound of [`crate::lower_words`].
//!
//! rspirv's `dr::Instruction` costs 100 bytes and more per instruction (a `Vec` of operands,
//! each operand 32 bytes), 10 to 30 times the instruction's own words.
//! The pass reads and changes few instructions: the subgroup ops, what touches a built-in
//! variable, and the control flow around them that it reads (labels, loop merges, calls; a
//! selection merge or a terminator is copied wherever its block's tail goes, so it stays in the
//! input's words like any other instruction).
//! A block's phis stay in the input's words too, behind a placeholder of their own (a loop header
//! keeps its phis when the driver moves the rest of the block): when a rewrite splits a block,
//! the phis naming it as a parent are renamed while the function is written.
//! When lowering words, every other run of instructions in a block stays in the input and the
//! block holds one placeholder for the run: an `OpNop` whose one 64-bit operand holds the run's
//! word offset and word count (a real `OpNop` has no operands; one operand is half the memory
//! of two), which [`assemble_function`] copies back as `stream` writes each function.
//! The value types of the elided instructions, which the rewrites ask for, go to the emitter's
//! table indexed by id (4 bytes per id, the id bound being at most `MAX_ID_BOUND`).
//!
//! Also here, for the copies `stages` makes: [`Renames`], one table of old id -> new id
//! (4 bytes per renamed id), and the reading back of written words ([`parse_instructions`],
//! [`for_each_result_in`]), so that a copy is made from the output's own words of the function.

use std::collections::{HashMap, HashSet};

use rspirv::binary::{Assemble, Consumer, ParseAction};
use rspirv::dr::{Function, Instruction, ModuleHeader, Operand};
use spirv::Op;
use spv_subgroup_validate::fit;

use crate::emit::Id;
use crate::LowerError;

/// A placeholder for `count` words of the input starting at `offset`; `phis` when they are a
/// block's phis.
pub(crate) fn placeholder(offset: usize, count: usize, phis: bool) -> Instruction {
    Instruction::new(
        Op::Nop,
        None,
        None,
        vec![Operand::LiteralBit64(pack(offset, count, phis))],
    )
}

/// The phi flag's bit in the packed count.
const PHIS: u64 = 1 << 31;

/// Offset, count and the phi flag in one 64-bit operand. Offsets and counts fit in 31 bits:
/// placeholders are only made for inputs of fewer than 2^31 words (see `entry::lower_words`).
fn pack(offset: usize, count: usize, phis: bool) -> u64 {
    ((offset as u64) << 32) | (count as u64 & (PHIS - 1)) | if phis { PHIS } else { 0 }
}

/// The word range a placeholder stands for; `None` for every other instruction.
pub(crate) fn range_of(inst: &Instruction) -> Option<(usize, usize)> {
    packed(inst).map(|v| ((v >> 32) as usize, (v & (PHIS - 1)) as usize))
}

fn packed(inst: &Instruction) -> Option<u64> {
    match (inst.class.opcode, inst.operands.as_slice()) {
        (Op::Nop, [Operand::LiteralBit64(v)]) => Some(*v),
        _ => None,
    }
}

/// Whether `inst` is a placeholder of a block's phis.
pub(crate) fn is_phis(inst: &Instruction) -> bool {
    packed(inst).is_some_and(|v| v & PHIS != 0)
}

/// Old id -> new id of every value of a function's copy, of the copied functions themselves and
/// of whatever else such a copy refers to differently; dense, 4 bytes per id up to the largest
/// renamed one (each id is defined once in a module, so one table serves every copy).
#[derive(Default)]
pub(crate) struct Renames {
    table: Vec<Id>,
}

impl Renames {
    /// Records that `old` becomes `new`, unless `old` already has a new id.
    pub(crate) fn insert(&mut self, old: Id, new: Id) {
        let i = old as usize;
        if i >= self.table.len() {
            self.table.resize(i + 1 + i / 4, 0);
        }
        if self.table[i] == 0 {
            self.table[i] = new;
        }
    }

    /// The new id of `old`, if it has one.
    pub(crate) fn get(&self, old: Id) -> Option<Id> {
        self.table.get(old as usize).copied().filter(|&n| n != 0)
    }

    /// Whether `old` has a new id.
    pub(crate) fn contains(&self, old: Id) -> bool {
        self.get(old).is_some()
    }

    /// Renames the result id and every id operand of `inst`.
    pub(crate) fn apply(&self, inst: &mut Instruction) {
        if let Some(r) = inst.result_id.and_then(|r| self.get(r)) {
            inst.result_id = Some(r);
        }
        for op in &mut inst.operands {
            if let Operand::IdRef(id) = op {
                if let Some(n) = self.get(*id) {
                    *id = n;
                }
            }
        }
    }
}

/// Calls `each` with the result id of every instruction of `run` (whole instructions), in order;
/// `None` if `run` does not hold whole instructions of known opcodes.
pub(crate) fn for_each_result_in(
    run: &[u32],
    slots: &mut ResultSlots,
    mut each: impl FnMut(Id),
) -> Option<()> {
    let mut at = 0;
    while at < run.len() {
        let n = (run[at] >> 16) as usize;
        let inst = run.get(at..at + n).filter(|_| n > 0)?;
        if let Some(slot) = slots.slot(run[at] & 0xffff)? {
            each(*inst.get(slot)?);
        }
        at += n;
    }
    Some(())
}

/// Per opcode, the word that holds its result id (1, 2, or none), looked up in rspirv's grammar
/// once per opcode (a linear search of its table).
#[derive(Default)]
pub(crate) struct ResultSlots {
    /// Opcode -> 0 unknown yet, 1 no result, 2 word 1, 3 word 2.
    known: Vec<u8>,
}

impl ResultSlots {
    /// `Some(None)` for an opcode without a result, `None` for an opcode the grammar lacks.
    fn slot(&mut self, opcode: u32) -> Option<Option<usize>> {
        use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
        let i = opcode as usize;
        if i >= self.known.len() {
            self.known.resize(i + 1, 0);
        }
        if self.known[i] == 0 {
            let g = INSTRUCTION_TABLE.lookup_opcode(opcode)?;
            let has = |k| g.operands.iter().any(|o| o.kind == k);
            self.known[i] = match (has(OperandKind::IdResultType), has(OperandKind::IdResult)) {
                (_, false) => 1,
                (false, true) => 2,
                (true, true) => 3,
            };
        }
        Some(match self.known[i] {
            2 => Some(1),
            3 => Some(2),
            _ => None,
        })
    }
}

/// Grows the placeholder at the end of `insts` by the run at `offset`, or adds one; phis and
/// other instructions never share a placeholder.
pub(crate) fn push(insts: &mut Vec<Instruction>, offset: usize, count: usize, phis: bool) {
    if let Some(last) = insts.last_mut() {
        if let Some((start, n)) = range_of(last) {
            if start + n == offset && is_phis(last) == phis {
                if let [Operand::LiteralBit64(v)] = last.operands.as_mut_slice() {
                    *v = pack(start, n + count, phis);
                    return;
                }
            }
        }
    }
    insts.push(placeholder(offset, count, phis));
}

/// Whether the sparse load keeps `inst` as an instruction: the pass reads or changes it.
/// `watched` holds the built-in variables and the access chains into them, and the
/// `SPV_AMD_shader_ballot` import (its instructions are rewritten).
pub(crate) fn keep(inst: &Instruction, watched: &HashSet<u32>) -> bool {
    let op = inst.class.opcode;
    // A block split by a rewrite keeps its tail (selection merge and terminator included) in
    // order in its last piece, and phis naming the block are renamed (`pipeline::function`): only a loop
    // header's merge moves on its own.
    // `OpIsNan`/`OpIsInf` are rewritten for naga (`rewrite/float_class.rs`); rare enough to keep
    // for every target.
    matches!(
        op,
        Op::Label | Op::LoopMerge | Op::FunctionCall | Op::IsNan | Op::IsInf
    ) || fit::is_subgroup_op(op)
        || memory_scope_operand(inst).is_some()
        || inst
            .operands
            .iter()
            .any(|o| matches!(o, Operand::IdRef(id) if watched.contains(id)))
}

/// The operand (counted after the result type and id) holding the Memory scope of a barrier or
/// an atomic: hygiene reads it (a Subgroup memory scope needs a subgroup capability in Vulkan).
pub(crate) fn memory_scope_operand(inst: &Instruction) -> Option<usize> {
    // The validator's table counts words from the opcode's: one word for the opcode, and two
    // more (result type and id) before the operands of an instruction with a result.
    let before = if inst.result_id.is_some() { 3 } else { 1 };
    fit::memory_scope_word(inst.class.opcode).and_then(|w| w.checked_sub(before))
}

/// Every instruction of `f`, in order.
pub(crate) fn all_instructions(f: &Function) -> impl Iterator<Item = &Instruction> {
    f.def
        .iter()
        .chain(&f.parameters)
        .chain(
            f.blocks
                .iter()
                .flat_map(|b| b.label.iter().chain(&b.instructions)),
        )
        .chain(&f.end)
}

/// How many words `inst` assembles to (a placeholder: the words it stands for).
pub(crate) fn word_count(inst: &Instruction) -> usize {
    if let Some((_, count)) = range_of(inst) {
        return count;
    }
    let operands: usize = inst
        .operands
        .iter()
        .map(|o| match o {
            Operand::LiteralBit64(_) => 2,
            Operand::LiteralString(s) => s.len() / 4 + 1,
            _ => 1,
        })
        .sum();
    1 + usize::from(inst.result_type.is_some()) + usize::from(inst.result_id.is_some()) + operands
}

/// Writes `f`, its placeholders' words copied from `words`, the phis' parents renamed through
/// `parents`.
pub(crate) fn assemble_function(
    f: &Function,
    words: &[u32],
    parents: Option<&HashMap<Id, Id>>,
    out: &mut Vec<u32>,
) -> Result<(), LowerError> {
    for inst in all_instructions(f) {
        let parents = parents.filter(|_| is_phis(inst));
        match (range_of(inst), parents) {
            (Some((offset, count)), None) => {
                let run = words
                    .get(offset..offset + count)
                    .ok_or_else(|| no_parse(f, offset))?;
                out.extend_from_slice(run);
            }
            (Some((offset, count)), Some(parents)) => {
                let insts = parse_run(words, offset, count).ok_or_else(|| no_parse(f, offset))?;
                for mut i in insts {
                    rename_parents(&mut i, parents);
                    i.assemble_into(out);
                }
            }
            (None, _) => inst.assemble_into(out),
        }
    }
    Ok(())
}

/// Renames the parent blocks of the phi `inst` (its operands are value, parent pairs).
pub(crate) fn rename_parents(inst: &mut Instruction, parents: &HashMap<Id, Id>) {
    if inst.class.opcode != Op::Phi {
        return;
    }
    for pair in inst.operands.chunks_mut(2) {
        if let [_, Operand::IdRef(parent)] = pair {
            if let Some(&m) = parents.get(parent) {
                *parent = m;
            }
        }
    }
}

fn no_parse(f: &Function, offset: usize) -> LowerError {
    LowerError::Invalid {
        result_id: f.def.as_ref().and_then(|d| d.result_id).unwrap_or(0),
        message: format!("the instructions at word {offset} no longer parse"),
    }
}

/// The instructions of `count` words at `offset`, parsed behind a copy of the module's header.
fn parse_run(words: &[u32], offset: usize, count: usize) -> Option<Vec<Instruction>> {
    parse_instructions(words.get(..5)?, &[], words.get(offset..offset + count)?)
}

/// The instructions of `run` (whole instructions of a function), parsed behind `header` (the
/// module's five header words) and `context` (whole instructions the parser must see first,
/// not returned). rspirv's parser decodes the literals of `OpSwitch` by the selector's type,
/// which its type tracker knows only from instructions it has parsed: without them it takes
/// every literal for one word (see [`switch_context`]).
pub(crate) fn parse_instructions(
    header: &[u32],
    context: &[u32],
    run: &[u32],
) -> Option<Vec<Instruction>> {
    let mut words: Vec<u32> = Vec::with_capacity(header.len() + context.len() + run.len());
    words.extend_from_slice(header);
    words.extend_from_slice(context);
    words.extend_from_slice(run);
    let mut collect = Collect::default();
    rspirv::binary::parse_words(&words, &mut collect).ok()?;
    let mut skip = 0;
    for_each_instruction(context, |_| skip += 1)?;
    Some(collect.insts.split_off(skip.min(collect.insts.len())))
}

/// What the parser must see before `run` to decode its `OpSwitch` literals: for each selector
/// whose type `int_type` knows (type id and `OpTypeInt` width and signedness), that type's
/// declaration and an `OpUndef` of it defining the selector (the tracker needs no more).
pub(crate) fn switch_context(
    run: &[u32],
    mut int_type: impl FnMut(Id) -> Option<(Id, u32, u32)>,
) -> Vec<u32> {
    let mut context = Vec::new();
    let _ = for_each_instruction(run, |inst| {
        if let [first, selector, ..] = inst {
            if first & 0xffff == Op::Switch as u32 {
                if let Some((ty, width, signed)) = int_type(*selector) {
                    context.extend([(4 << 16) | Op::TypeInt as u32, ty, width, signed]);
                    context.extend([(3 << 16) | Op::Undef as u32, ty, *selector]);
                }
            }
        }
    });
    context
}

/// Calls `each` with the words of every instruction of `run`; `None` if `run` does not hold
/// whole instructions.
fn for_each_instruction(run: &[u32], mut each: impl FnMut(&[u32])) -> Option<()> {
    let mut at = 0;
    while at < run.len() {
        let n = (run[at] >> 16) as usize;
        each(run.get(at..at + n).filter(|_| n > 0)?);
        at += n;
    }
    Some(())
}

#[derive(Default)]
struct Collect {
    insts: Vec<Instruction>,
}

impl Consumer for Collect {
    fn initialize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn finalize(&mut self) -> ParseAction {
        ParseAction::Continue
    }
    fn consume_header(&mut self, _: ModuleHeader) -> ParseAction {
        ParseAction::Continue
    }
    fn consume_instruction(&mut self, inst: Instruction) -> ParseAction {
        self.insts.push(inst);
        ParseAction::Continue
    }
}
