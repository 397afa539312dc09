//! The rewrite of one function: every instruction the target lacks goes to its family in
//! `rewrite` (or to an outlined helper), blocks are split where a rewrite needs a loop, and the
//! rewrite's last instruction takes over the original result id, so uses, names and decorations
//! (RelaxedPrecision) stay attached.

use std::collections::{BTreeSet, HashMap};

use rspirv::dr::{Block, Instruction, Operand};
use spirv::Op;

use crate::emit::{Code, Emitter, Id};
use crate::{elide, outline, rewrite, LowerError};

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
