//! Module well-formedness (SG00xx): every id operand resolves, every result type is a type, every
//! operand that names a block is a label of the same function, and the value operands of the
//! instructions in scope name values.
//!
//! Runs before the rule families; they skip instructions whose types do not resolve, so each
//! problem is reported once, here.

use spirv::Op;

use crate::binary::op_table;
use crate::module::{Cx, Scalar};
use crate::rules::common::{is_arithmetic, is_core_lane_op, memory_scope_word, opname};
use crate::rules::Rule;
use crate::sink::Sink;

pub(crate) fn check(cx: &Cx<'_>, out: &mut Sink) {
    check_id_bound(cx, out);
    let m = &cx.m;
    let mut last = None;
    for &(id, i) in &m.forward {
        if m.def_inst(id).is_none() && last != Some((id, i)) {
            last = Some((id, i));
            out.emit(
                cx,
                Rule::UndefinedId,
                i as usize,
                format!("operand %{id} is not defined by any instruction"),
                vec![],
            );
        }
    }
    let table = op_table();
    for i in 0..m.insts.len() {
        check_block_operands(cx, i, out);
        let Some(info) = table.get(m.opcode(i) as usize) else {
            continue;
        };
        if !info.has_type {
            continue;
        }
        let Some(t) = m.word(i, 1) else { continue };
        let Some(d) = m.def_inst(t) else { continue }; // reported as undefined above
        if !table.get(m.opcode(d) as usize).is_some_and(|o| o.is_type) {
            out.emit(
                cx,
                Rule::NotAType,
                i,
                format!(
                    "the Result Type %{t} is not a type (it is defined by an Op{})",
                    opname(m.opcode(d))
                ),
                vec![],
            );
        }
    }
}

/// SG0005: the header's id bound (word 3) within SPIR-V's universal limit, which spirv-val
/// enforces and `lower` refuses to pass.
fn check_id_bound(cx: &Cx<'_>, out: &mut Sink) {
    let bound = cx.m.bound;
    if bound <= crate::MAX_ID_BOUND {
        return;
    }
    out.diags.push(crate::Diagnostic {
        rule: Rule::IdBoundTooLarge,
        severity: Rule::IdBoundTooLarge.severity(),
        message: format!(
            "the id bound is {bound}, above SPIR-V's universal limit of {}",
            crate::MAX_ID_BOUND
        ),
        location: crate::Location {
            word_offset: 3,
            inst_index: 0,
            result_id: None,
            function: None,
        },
        notes: vec![
            "renumbering the ids densely (`spirv-opt --compact-ids`) brings the bound down".into(),
        ],
        disassembly: Some(format!("; Bound: {bound}")),
        source: None,
    });
}

/// SG0004: the operands of instruction `i` that name blocks (branch targets, merge blocks, phi
/// parents) must be labels of its own function.
fn check_block_operands(cx: &Cx<'_>, i: usize, out: &mut Sink) {
    let m = &cx.m;
    let opcode = m.opcode(i);
    let Some(op) = crate::binary::op_of(opcode) else {
        return;
    };
    let wc = m.wc(i);
    let check = |k: usize, out: &mut Sink| {
        let Some(id) = m.word(i, k) else { return };
        let Some(d) = m.def_inst(id) else { return }; // SG0001
        let what = if m.opcode(d) != Op::Label as u32 {
            format!("an Op{}", opname(m.opcode(d)))
        } else if m.func_of(d) != m.func_of(i) {
            match m.func_of(d) {
                0 => "a label outside every function".to_owned(),
                f => format!("a label of another function, {}", m.id_text(f)),
            }
        } else {
            return;
        };
        out.emit(
            cx,
            Rule::NotABlockLabel,
            i,
            format!(
                "`Op{}`: operand {} (word {k}) must be the label of a block of this function, but it is {what}",
                opname(opcode),
                m.id_text(id)
            ),
            vec![],
        );
    };
    match op {
        Op::Branch | Op::SelectionMerge => check(1, out),
        Op::LoopMerge => {
            check(1, out);
            check(2, out);
        }
        Op::BranchConditional => {
            check(2, out);
            check(3, out);
        }
        Op::Switch => {
            check(2, out);
            // Each case is a literal of the selector's width (one word, two for 64 bits) and a label.
            let literal = m
                .word(i, 1)
                .and_then(|sel| m.type_of(sel))
                .and_then(|t| m.scalar(t))
                .map_or(1, |s| match s {
                    Scalar::Int { width: 64, .. } => 2,
                    _ => 1,
                });
            let mut k = 3 + literal;
            while k < wc {
                check(k, out);
                k += literal + 1;
            }
        }
        Op::Phi => {
            let mut k = 4;
            while k < wc {
                check(k, out);
                k += 2;
            }
        }
        _ => {}
    }
}

/// The first word of the value operands of an instruction in scope, and the word to skip (a
/// literal group operation), or `None` for instructions out of scope.
pub(crate) fn value_operands(op: Op) -> Option<(usize, Option<usize>)> {
    Some(match op {
        Op::SubgroupAllKHR
        | Op::SubgroupAnyKHR
        | Op::SubgroupAllEqualKHR
        | Op::GroupNonUniformPartitionEXT => (3, None),
        Op::GroupNonUniformBallotBitCount => (3, Some(4)),
        op if is_arithmetic(op) => (3, Some(4)),
        op if is_core_lane_op(op) => (3, None),
        // Scopes and memory semantics are <id>s of constants.
        Op::ControlBarrier | Op::MemoryBarrier => (1, None),
        // OpAtomicStore: Pointer, Memory, Semantics, Value; every other atomic with a Memory
        // scope has a Result Type and Result first, then only <id> operands.
        Op::AtomicStore => (1, None),
        op if memory_scope_word(op).is_some() => (3, None),
        _ => return None,
    })
}

/// SG0003: an operand of an instruction in scope names a type, label, function or other non-value.
pub(crate) fn check_value_operands(cx: &Cx<'_>, i: usize, op: Op, out: &mut Sink) {
    let Some((first, skip)) = value_operands(op) else {
        return;
    };
    let m = &cx.m;
    for k in first..m.wc(i) {
        if Some(k) == skip {
            continue;
        }
        let Some(id) = m.word(i, k) else { break };
        let Some(d) = m.def_inst(id) else { continue }; // SG0001
        let dop = m.opcode(d);
        // A function has a Result Type (its return type) but is not a value.
        if m.result_type(d).is_some() && dop != Op::Function as u32 {
            continue;
        }
        let what = match crate::binary::op_of(dop) {
            Some(Op::Label) => "a label".to_owned(),
            Some(Op::Function) => "a function".to_owned(),
            _ if table_is_type(dop) => "a type".to_owned(),
            _ => format!("an Op{}", opname(dop)),
        };
        out.emit(
            cx,
            Rule::OperandNotAValue,
            i,
            format!(
                "`Op{}`: operand %{id} (word {k}) must be a value, but it is {what}",
                opname(m.opcode(i))
            ),
            vec![],
        );
    }
}

fn table_is_type(opcode: u32) -> bool {
    op_table().get(opcode as usize).is_some_and(|o| o.is_type)
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{assemble, check, shader, Expect};

    /// P06's leftover (issue 21): an id bound above 4,194,303 (spirv-val's "The id bound is
    /// larger than the max id bound") is an error at the header's word 3; the limit itself is not.
    #[test]
    fn an_id_bound_above_the_universal_limit_is_an_error() {
        let words = assemble(&shader("", "%r = OpSubgroupAllKHR %bool %true"), "spv1.3");
        let findings = |bound: u32| {
            let mut w = words.clone();
            w[3] = bound;
            crate::validate(&w, &crate::ValidateOptions::default())
                .expect("parses")
                .diagnostics
        };
        for bound in [0x40_0000, 0xFFFF_FFFF] {
            let found = findings(bound);
            let d = found
                .iter()
                .find(|d| d.rule.code() == "SG0005")
                .unwrap_or_else(|| panic!("bound {bound:#x}: no SG0005 in {found:?}"));
            assert_eq!(d.severity, crate::Severity::Error);
            assert_eq!(d.location.word_offset, 3);
            assert!(
                d.message.contains(&format!("the id bound is {bound}")),
                "{}",
                d.message
            );
        }
        for bound in [0x3F_FFFF, words[3]] {
            let found = findings(bound);
            assert!(
                found.iter().all(|d| d.rule.code() != "SG0005"),
                "bound {bound:#x}: {found:?}"
            );
        }
    }

    #[test]
    fn undefined_ids_and_non_types() {
        // Trips: %99 never defined.
        check(
            &shader("", "%r = OpSubgroupAllKHR %bool %99"),
            "spv1.3",
            Expect::Has("SG0001"),
        );
        // Trips: result type is a constant.
        check(
            &shader("", "%r = OpSubgroupAllKHR %true %true"),
            "spv1.3",
            Expect::Has("SG0002"),
        );
        // Passes.
        check(
            &shader("", "%r = OpSubgroupAllKHR %bool %true"),
            "spv1.3",
            Expect::Lacks(&["SG0001", "SG0002"]),
        );
    }

    /// Issue 9 family (a) on the barriers and atomics our Subgroup-scope rule reads: a type, a
    /// label or a function where a scope, semantics, pointer or value is required.
    #[test]
    fn barrier_and_atomic_operands_must_be_values() {
        let var = "%v = OpVariable %ptr_uint Function\n";
        for body in [
            "OpControlBarrier %uint %uint_3 %uint_0".to_owned(),
            "OpMemoryBarrier %uint_3 %bool".to_owned(),
            format!("{var}%r = OpAtomicIAdd %uint %v %uint_3 %uint_0 %uint"),
            format!("{var}%r = OpAtomicLoad %uint %v %main %uint_0"),
            format!("{var}OpAtomicStore %v %uint_1 %uint_0 %entry"),
        ] {
            check(&shader("", &body), "spv1.3", Expect::Has("SG0003"));
        }
        let ok = format!("{var}%r = OpAtomicIAdd %uint %v %uint_1 %uint_0 %uint_1");
        check(&shader("", &ok), "spv1.3", Expect::Lacks(&["SG0003"]));
    }
}
