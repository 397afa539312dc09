//! Instructions left as words: the memory bound of [`crate::lower_words`].
//!
//! rspirv's `dr::Instruction` costs 100 bytes and more per instruction (a `Vec` of operands,
//! each operand 32 bytes), 10 to 30 times the instruction's own words.
//! The pass reads and changes few instructions: the subgroup ops, what touches a built-in
//! variable, and the control flow around them (labels, merges, phis, terminators, calls).
//! When lowering words, every other run of instructions in a block stays in the input and the
//! block holds one placeholder for the run: an `OpNop` whose two operands are the run's word
//! offset and word count (a real `OpNop` has no operands), which [`assemble`] copies back.
//! The value types of the elided instructions, which the rewrites ask for, are kept in a table
//! indexed by id (4 bytes per id, the id bound being at most `MAX_ID_BOUND`).

use std::collections::HashSet;

use rspirv::binary::{Assemble, Consumer, ParseAction};
use rspirv::dr::{Function, Instruction, Module, ModuleHeader, Operand};
use spirv::Op;
use spv_subgroup_validate::fit;

/// A placeholder for `count` words of the input starting at `offset`.
pub(crate) fn placeholder(offset: usize, count: usize) -> Instruction {
    // Offsets and counts fit in 32 bits: the input is a `&[u32]` the header's checks accepted,
    // and placeholders are only made for inputs under 16 GiB (see `loader::load_sparse`).
    Instruction::new(
        Op::Nop,
        None,
        None,
        vec![
            Operand::LiteralBit32(offset as u32),
            Operand::LiteralBit32(count as u32),
        ],
    )
}

/// The word range a placeholder stands for; `None` for every other instruction.
pub(crate) fn range_of(inst: &Instruction) -> Option<(usize, usize)> {
    match (inst.class.opcode, inst.operands.as_slice()) {
        (Op::Nop, [Operand::LiteralBit32(offset), Operand::LiteralBit32(count)]) => {
            Some((*offset as usize, *count as usize))
        }
        _ => None,
    }
}

/// Grows the placeholder at the end of `insts` by the run at `offset`, or adds one.
pub(crate) fn push(insts: &mut Vec<Instruction>, offset: usize, count: usize) {
    if let Some(last) = insts.last_mut() {
        if let Some((start, n)) = range_of(last) {
            if start + n == offset {
                last.operands[1] = Operand::LiteralBit32((n + count) as u32);
                return;
            }
        }
    }
    insts.push(placeholder(offset, count));
}

/// Whether the sparse load keeps `inst` as an instruction: the pass reads or changes it.
/// `watched` holds the built-in variables and the access chains into them.
pub(crate) fn keep(inst: &Instruction, watched: &HashSet<u32>) -> bool {
    let op = inst.class.opcode;
    matches!(
        op,
        Op::Label | Op::Phi | Op::LoopMerge | Op::SelectionMerge | Op::FunctionCall
    ) || rspirv::grammar::reflect::is_block_terminator(op)
        || fit::is_subgroup_op(op)
        || inst
            .operands
            .iter()
            .any(|o| matches!(o, Operand::IdRef(id) if watched.contains(id)))
}

/// Assembles a module whose functions may hold placeholders, copying their words from `words`;
/// the between-function instructions go back in their places.
pub(crate) fn assemble(
    mut module: Module,
    between: &[(usize, Instruction)],
    words: &[u32],
) -> Vec<u32> {
    let functions = std::mem::take(&mut module.functions);
    let head = module.assemble();
    drop(module);
    // The output is about the input's size: one allocation, no doubling past it.
    let mut out = Vec::with_capacity(words.len() + words.len() / 8 + head.len() + 64);
    out.extend_from_slice(&head);
    drop(head);
    let mut pending = between.iter().peekable();
    for (i, f) in functions.into_iter().enumerate() {
        while let Some((_, inst)) = pending.next_if(|(at, _)| *at <= i) {
            inst.assemble_into(&mut out);
        }
        assemble_function(&f, words, &mut out);
    }
    for (_, inst) in pending {
        inst.assemble_into(&mut out);
    }
    out
}

fn assemble_function(f: &Function, words: &[u32], out: &mut Vec<u32>) {
    let put = |inst: &Instruction, out: &mut Vec<u32>| match range_of(inst) {
        Some((offset, count)) => out.extend_from_slice(&words[offset..offset + count]),
        None => inst.assemble_into(out),
    };
    f.def.iter().for_each(|i| put(i, out));
    f.parameters.iter().for_each(|i| put(i, out));
    for b in &f.blocks {
        b.label.iter().for_each(|i| put(i, out));
        b.instructions.iter().for_each(|i| put(i, out));
    }
    f.end.iter().for_each(|i| put(i, out));
}

/// Replaces every placeholder of `f` by the instructions it stands for (a function about to be
/// copied with new ids needs them all). `None` if the words no longer parse, which cannot happen
/// for words the sparse load parsed once.
pub(crate) fn expand(f: &mut Function, words: &[u32]) -> Option<()> {
    for block in &mut f.blocks {
        if !block.instructions.iter().any(|i| range_of(i).is_some()) {
            continue;
        }
        let mut out = Vec::with_capacity(block.instructions.len());
        for inst in std::mem::take(&mut block.instructions) {
            match range_of(&inst) {
                Some((offset, count)) => out.extend(parse_run(words, offset, count)?),
                None => out.push(inst),
            }
        }
        block.instructions = out;
    }
    Some(())
}

/// The instructions of `count` words at `offset`, parsed behind a copy of the module's header.
fn parse_run(words: &[u32], offset: usize, count: usize) -> Option<Vec<Instruction>> {
    let mut run: Vec<u32> = words.get(..5)?.to_vec();
    run.extend_from_slice(words.get(offset..offset + count)?);
    let mut collect = Collect::default();
    rspirv::binary::parse_words(&run, &mut collect).ok()?;
    Some(collect.insts)
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
