//! Module well-formedness (SG00xx): every id operand resolves, every result type is a type.
//!
//! Runs before the rule families; they skip instructions whose types do not resolve, so each
//! problem is reported once, here.

use crate::binary::op_table;
use crate::module::Cx;
use crate::rules::Rule;
use crate::Sink;

pub(crate) fn check(cx: &Cx<'_>, out: &mut Sink) {
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

/// The grammar name of an opcode (without `Op`).
pub(crate) fn opname(opcode: u32) -> &'static str {
    match opcode {
        5296 => "GroupNonUniformPartitionNV",
        _ => op_table()
            .get(opcode as usize)
            .and_then(|o| o.grammar)
            .map_or("?", |g| g.opname),
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect};

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
}
