//! Ballot provenance (SG0401, warning): the ballot of a partitioned reduce/scan should come from a
//! partition op. Followed back through `OpLoad`/`OpStore` of the same variable (and `OpCopyMemory`),
//! `OpCopyObject`, `OpCopyLogical`, `OpPhi`, `OpSelect`, function parameters (every call site, by
//! value or by pointer) and a composite rebuilt unchanged from one value.

use std::collections::HashSet;

use spirv::Op;

use crate::module::{Cx, StoreKind};
use crate::rules::common::opname;
use crate::rules::Rule;
use crate::sink::Sink;

/// A node of the search: a value, or a pointer whose stored values matter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Node {
    Value(u32),
    /// Every value stored through this root pointer, its initializer, and its callers' arguments.
    Pointer(u32),
}

use crate::sink::Unproven;

pub(crate) fn check(cx: &Cx<'_>, i: usize, out: &mut Sink) {
    let m = &cx.m;
    let Some(ballot) = m.word(i, 6) else { return };
    let result = match out.unproven.get(&ballot) {
        Some(u) => Err(u.clone()),
        None => trace(cx, ballot, &mut out.proven),
    };
    if let Err(u) = result {
        out.unproven.insert(ballot, u.clone());
        let name = opname(m.opcode(i));
        out.emit(
            cx,
            Rule::BallotProvenance,
            i,
            format!("the ballot %{ballot} of `Op{name}` does not provably come from `OpGroupNonUniformPartitionNV`"),
            vec![
                format!("a path ends at {}: {}", cx.m.id_text(u.id), u.why),
                "\"If the <ballot> parameter to any partitioned subgroup operation is not a valid partition, then the result is undefined.\"".into(),
            ],
        );
    }
}

/// Follows every path back from `start`. `proven` holds values already proven by an earlier
/// successful search (every node a successful search visits is proven), so the total work over
/// all partitioned ops stays linear when ballots share their history.
fn trace(cx: &Cx<'_>, start: u32, proven: &mut HashSet<u32>) -> Result<(), Unproven> {
    let m = &cx.m;
    let mut seen: HashSet<Node> = HashSet::new();
    let mut stack = vec![Node::Value(start)];
    let bad = |id: u32, why: &str| {
        Err(Unproven {
            id,
            why: why.to_owned(),
        })
    };
    while let Some(node) = stack.pop() {
        if let Node::Value(v) = node {
            if proven.contains(&v) {
                continue;
            }
        }
        if !seen.insert(node) {
            continue;
        }
        match node {
            Node::Value(id) => {
                let Some(d) = m.def_inst(id) else {
                    return bad(id, "the id is not defined");
                };
                let op = m.opcode(d);
                let w = |k| m.word(d, k);
                match crate::binary::op_of(op) {
                    Some(Op::GroupNonUniformPartitionEXT) => {}
                    Some(Op::CopyObject | Op::CopyLogical) => stack.extend(w(3).map(Node::Value)),
                    Some(Op::Select) => {
                        stack.extend([w(4), w(5)].into_iter().flatten().map(Node::Value))
                    }
                    Some(Op::Phi) => {
                        let mut k = 3;
                        while let Some(v) = w(k) {
                            stack.push(Node::Value(v));
                            k += 2;
                        }
                    }
                    Some(Op::Load) => stack.extend(w(3).map(|p| Node::Pointer(m.root_pointer(p)))),
                    Some(Op::FunctionParameter) => {
                        let Some((f, n)) = m.param_position(d) else {
                            return bad(id, "a parameter outside a function");
                        };
                        for call in m.calls_of(f) {
                            match m.word(call, 4 + n) {
                                Some(arg) => stack.push(Node::Value(arg)),
                                None => return bad(id, "a call passes too few arguments"),
                            }
                        }
                    }
                    Some(Op::CompositeConstruct) => {
                        match rebuilt_from(cx, d) {
                            Some(src) => stack.push(Node::Value(src)),
                            None => return bad(
                                id,
                                "a composite built from something other than one partition result",
                            ),
                        }
                    }
                    Some(Op::VectorShuffle) => {
                        let comps: Vec<u32> = (5..m.wc(d)).filter_map(|k| m.word(d, k)).collect();
                        match (w(3), w(4)) {
                            (Some(a), _) if comps == [0, 1, 2, 3] => stack.push(Node::Value(a)),
                            (_, Some(b)) if comps == [4, 5, 6, 7] && same_len4(cx, w(3)) => {
                                stack.push(Node::Value(b))
                            }
                            _ => {
                                return bad(
                                    id,
                                    "a vector shuffle that reorders or mixes components",
                                )
                            }
                        }
                    }
                    _ => {
                        let what = format!("`Op{}` computes the ballot", opname(op));
                        return Err(Unproven { id, why: what });
                    }
                }
            }
            Node::Pointer(root) => {
                let Some(d) = m.def_inst(root) else {
                    return bad(root, "the pointer is not defined");
                };
                if m.opcode(d) == Op::Variable as u32 {
                    let storage = m.word(d, 3).unwrap_or(u32::MAX);
                    let private = storage == spirv::StorageClass::Function as u32
                        || storage == spirv::StorageClass::Private as u32;
                    if !private {
                        let sc = spirv::StorageClass::from_u32(storage)
                            .map_or(format!("{storage}"), |c| format!("{c:?}"));
                        return bad(root, &format!("a variable in {sc} storage is shared between invocations: the ballot read may be another invocation's"));
                    }
                }
                let op = m.opcode(d);
                let mut writers = 0usize;
                for s in m.stores_into(root) {
                    writers += 1;
                    match s {
                        StoreKind::Whole(v) => stack.push(Node::Value(v)),
                        StoreKind::CopyFrom(p) => stack.push(Node::Pointer(m.root_pointer(p))),
                        StoreKind::Partial => {
                            return bad(
                                root,
                                "part of the variable is written through an access chain",
                            )
                        }
                    }
                }
                // Stores done by callees through the parameter this pointer is passed as.
                for (callee, n) in m.passed_as(root) {
                    if let Some(p) = m.param_id(callee, n as usize) {
                        for s in m.stores_into(p) {
                            writers += 1;
                            match s {
                                StoreKind::Whole(v) => stack.push(Node::Value(v)),
                                StoreKind::CopyFrom(q) => {
                                    stack.push(Node::Pointer(m.root_pointer(q)))
                                }
                                StoreKind::Partial => {
                                    return bad(
                                        p,
                                        "part of the variable is written through an access chain",
                                    )
                                }
                            }
                        }
                    }
                }
                if op == Op::Variable as u32 {
                    if let Some(init) = m.word(d, 4) {
                        writers += 1;
                        stack.push(Node::Value(init));
                    }
                    if writers == 0 {
                        return bad(root, "the variable is loaded but never written");
                    }
                } else if op == Op::FunctionParameter as u32 {
                    let Some((f, n)) = m.param_position(d) else {
                        return bad(root, "a parameter outside a function");
                    };
                    for call in m.calls_of(f) {
                        match m.word(call, 4 + n) {
                            Some(arg) => stack.push(Node::Pointer(m.root_pointer(arg))),
                            None => return bad(root, "a call passes too few arguments"),
                        }
                    }
                } else {
                    return bad(
                        root,
                        &format!(
                            "the ballot is loaded through `Op{}`, which is not followed",
                            opname(op)
                        ),
                    );
                }
            }
        }
    }
    proven.extend(seen.into_iter().filter_map(|n| match n {
        Node::Value(v) => Some(v),
        Node::Pointer(_) => None,
    }));
    Ok(())
}

/// `OpCompositeConstruct %v4uint (extract %s 0) (extract %s 1) (extract %s 2) (extract %s 3)`: `%s`.
fn rebuilt_from(cx: &Cx<'_>, d: usize) -> Option<u32> {
    let m = &cx.m;
    if m.wc(d) != 7 {
        return None;
    }
    let mut src = None;
    for k in 0..4u32 {
        let c = m.word(d, 3 + k as usize)?;
        let e = m.def_inst(c)?;
        if m.opcode(e) != Op::CompositeExtract as u32 || m.wc(e) != 5 || m.word(e, 4) != Some(k) {
            return None;
        }
        let s = m.word(e, 3)?;
        if *src.get_or_insert(s) != s {
            return None;
        }
    }
    src
}

fn same_len4(cx: &Cx<'_>, a: Option<u32>) -> bool {
    a.and_then(|a| cx.m.type_of(a))
        .and_then(|t| cx.m.scalar_or_vector(t))
        .is_some_and(|(_, n)| n == 4)
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{check, shader, Expect, PART};

    fn with_decls(body: &str, decls: &str) -> String {
        shader(PART, body).replace(
            "%main = OpFunction",
            &format!("{decls}\n%main = OpFunction"),
        )
    }

    const USE: &str = "%r = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1";

    #[test]
    fn direct_copies_selects_pass() {
        let cases = [
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%x = OpCopyObject %v4uint %b",
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%c = OpGroupNonUniformPartitionNV %v4uint %uint_0\n%x = OpSelect %v4uint %true %b %c",
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%e0 = OpCompositeExtract %uint %b 0\n%e1 = OpCompositeExtract %uint %b 1\n%e2 = OpCompositeExtract %uint %b 2\n%e3 = OpCompositeExtract %uint %b 3\n%x = OpCompositeConstruct %v4uint %e0 %e1 %e2 %e3",
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%x = OpVectorShuffle %v4uint %b %b 0 1 2 3",
        ];
        for c in cases {
            check(
                &shader(PART, &format!("{c}\n{USE} %x")),
                "spv1.3",
                Expect::Clean,
            );
        }
    }

    #[test]
    fn other_sources_warn() {
        let cases = [
            "%x = OpCopyObject %v4uint %ballot_c",
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%x = OpSelect %v4uint %true %b %ballot_c",
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%x = OpBitwiseAnd %v4uint %b %ballot_c",
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%e0 = OpCompositeExtract %uint %b 0\n%e1 = OpCompositeExtract %uint %b 1\n%e2 = OpCompositeExtract %uint %b 2\n%x = OpCompositeConstruct %v4uint %e0 %e1 %e2 %e2",
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%x = OpVectorShuffle %v4uint %b %b 1 0 2 3",
        ];
        for c in cases {
            check(
                &shader(PART, &format!("{c}\n{USE} %x")),
                "spv1.3",
                Expect::Has("SG0401"),
            );
        }
        // A core ballot is not a partition.
        let src = shader(
            &format!("{PART}\nOpCapability GroupNonUniformBallot"),
            &format!("%x = OpGroupNonUniformBallot %v4uint %uint_3 %true\n{USE} %x"),
        );
        check(&src, "spv1.3", Expect::Has("SG0401"));
    }

    #[test]
    fn through_variables() {
        let ok = "%v = OpVariable %ptr_v4uint Function\n%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\nOpStore %v %b\n%x = OpLoad %v4uint %v";
        check(
            &shader(PART, &format!("{ok}\n{USE} %x")),
            "spv1.3",
            Expect::Clean,
        );
        let copy = "%v = OpVariable %ptr_v4uint Function\n%w = OpVariable %ptr_v4uint Function\n%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\nOpStore %v %b\nOpCopyMemory %w %v\n%x = OpLoad %v4uint %w";
        check(
            &shader(PART, &format!("{copy}\n{USE} %x")),
            "spv1.3",
            Expect::Clean,
        );
        let also_const = "%v = OpVariable %ptr_v4uint Function\n%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\nOpStore %v %b\nOpStore %v %ballot_c\n%x = OpLoad %v4uint %v";
        check(
            &shader(PART, &format!("{also_const}\n{USE} %x")),
            "spv1.3",
            Expect::Has("SG0401"),
        );
        let partial = "%v = OpVariable %ptr_v4uint Function\n%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\nOpStore %v %b\n%p = OpAccessChain %ptr_uint %v %uint_0\nOpStore %p %uint_1\n%x = OpLoad %v4uint %v";
        check(
            &shader(PART, &format!("{partial}\n{USE} %x")),
            "spv1.3",
            Expect::Has("SG0401"),
        );
        let never = "%v = OpVariable %ptr_v4uint Function\n%x = OpLoad %v4uint %v";
        check(
            &shader(PART, &format!("{never}\n{USE} %x")),
            "spv1.3",
            Expect::Has("SG0401"),
        );
        let init = "%v = OpVariable %ptr_v4uint Function %ballot_c\n%x = OpLoad %v4uint %v";
        check(
            &shader(PART, &format!("{init}\n{USE} %x")),
            "spv1.3",
            Expect::Has("SG0401"),
        );
    }

    #[test]
    fn shared_variables_are_not_trusted() {
        let src = with_decls(
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\nOpStore %s %b\n%x = OpLoad %v4uint %s\n%r = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %x",
            "%pw = OpTypePointer Workgroup %v4uint\n%s = OpVariable %pw Workgroup",
        );
        check(&src, "spv1.3", Expect::Has("SG0401"));
        let src = with_decls(
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\nOpStore %s %b\n%x = OpLoad %v4uint %s\n%r = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %x",
            "%pp = OpTypePointer Private %v4uint\n%s = OpVariable %pp Private",
        );
        check(&src, "spv1.3", Expect::Clean);
    }

    #[test]
    fn through_phis() {
        let ok = "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\nOpSelectionMerge %m None\nOpBranchConditional %true %t %m\n%t = OpLabel\n%c = OpGroupNonUniformPartitionNV %v4uint %uint_0\nOpBranch %m\n%m = OpLabel\n%x = OpPhi %v4uint %b %entry %c %t";
        check(
            &shader(PART, &format!("{ok}\n{USE} %x")),
            "spv1.3",
            Expect::Clean,
        );
        let bad = ok.replace(
            "%x = OpPhi %v4uint %b %entry %c %t",
            "%x = OpPhi %v4uint %b %entry %ballot_c %t",
        );
        check(
            &shader(PART, &format!("{bad}\n{USE} %x")),
            "spv1.3",
            Expect::Has("SG0401"),
        );
        // A loop: the phi feeds itself; the cycle is not a path to anything else.
        let looped = "OpBranch %h\n%h = OpLabel\n%x = OpPhi %v4uint %b0 %entry %x %h\nOpLoopMerge %m %h None\nOpBranchConditional %true %h %m\n%m = OpLabel";
        let src = shader(
            PART,
            &format!("%b0 = OpGroupNonUniformPartitionNV %v4uint %uint_1\n{looped}\n{USE} %x"),
        );
        check(&src, "spv1.3", Expect::Clean);
    }

    #[test]
    fn through_function_parameters() {
        let decls = "%fn_b = OpTypeFunction %uint %v4uint\n%fn_pb = OpTypeFunction %uint %ptr_v4uint\n\
%f = OpFunction %uint None %fn_b\n%fb = OpFunctionParameter %v4uint\n%fl = OpLabel\n\
%fr = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %fb\nOpReturnValue %fr\nOpFunctionEnd\n\
%g = OpFunction %uint None %fn_pb\n%gp = OpFunctionParameter %ptr_v4uint\n%gl = OpLabel\n%gb = OpLoad %v4uint %gp\n\
%gr = OpGroupNonUniformIAdd %uint %uint_3 PartitionedReduceNV %uint_1 %gb\nOpReturnValue %gr\nOpFunctionEnd";
        let ok =
            "%b = OpGroupNonUniformPartitionNV %v4uint %uint_1\n%c1 = OpFunctionCall %uint %f %b\n\
%v = OpVariable %ptr_v4uint Function\nOpStore %v %b\n%c2 = OpFunctionCall %uint %g %v";
        // OpVariable must be first in the block.
        let ok = format!(
            "%v = OpVariable %ptr_v4uint Function\n{}",
            ok.replace("%v = OpVariable %ptr_v4uint Function\n", "")
        );
        check(&with_decls(&ok, decls), "spv1.3", Expect::Clean);
        let bad_value = format!("{ok}\n%c3 = OpFunctionCall %uint %f %ballot_c");
        check(
            &with_decls(&bad_value, decls),
            "spv1.3",
            Expect::Has("SG0401"),
        );
        let bad_ptr = format!("%w = OpVariable %ptr_v4uint Function\n{ok}\nOpStore %w %ballot_c\n%c4 = OpFunctionCall %uint %g %w");
        check(
            &with_decls(&bad_ptr, decls),
            "spv1.3",
            Expect::Has("SG0401"),
        );
    }
}
