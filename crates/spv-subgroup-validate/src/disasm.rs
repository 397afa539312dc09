//! Disassembles one instruction for a diagnostic: `%12 = OpGroupNonUniformPartitionNV %7 %11`.
//!
//! Operands are laid out from the rspirv grammar table: ids as `%N`, strings quoted, the common
//! enums (scope is an id; group operation, capability, storage class, built-in...) by name, and
//! anything whose layout depends on context as plain numbers.

use std::fmt::Write;

use spirv::Op;

use rspirv::grammar::{OperandKind as K, OperandQuantifier};

use crate::binary::op_table;
use crate::module::Module;

/// The instruction `i`, in spirv-dis syntax with its friendly names (`%uint`, `%v4uint`,
/// `%uint_3`, OpName names), `%N` for other ids.
pub(crate) fn instruction(m: &Module<'_>, i: usize) -> String {
    let names = m.names();
    let id = |x: u32| match names.get(&x) {
        Some(n) => format!("%{n}"),
        None => format!("%{x}"),
    };
    let opcode = m.opcode(i);
    let Some(g) = op_table().get(opcode as usize).and_then(|o| o.grammar) else {
        return format!("<unknown opcode {opcode}>");
    };
    let wc = m.wc(i);
    let ops: Vec<u32> = (1..wc).filter_map(|k| m.word(i, k)).collect();
    let mut s = String::new();
    if let Some(r) = m.result_id(i) {
        let _ = write!(s, "{} = ", id(r));
    }
    let name = match opcode {
        // Print the spelling of the extension the module declares.
        5296 if !m.has_ext("SPV_NV_shader_subgroup_partitioned")
            && m.has_ext("SPV_EXT_shader_subgroup_partitioned") =>
        {
            "GroupNonUniformPartitionEXT"
        }
        5296 => "GroupNonUniformPartitionNV",
        _ => g.opname,
    };
    let _ = write!(s, "Op{name}");
    // The spelling of the partitioned extension the module declares.
    let sfx = if !m.has_ext("SPV_NV_shader_subgroup_partitioned")
        && m.has_ext("SPV_EXT_shader_subgroup_partitioned")
    {
        "EXT"
    } else {
        "NV"
    };
    let wide_switch = opcode == Op::Switch as u32
        && m.word(i, 1)
            .and_then(|sel| m.type_of(sel))
            .and_then(|t| m.scalar(t))
            .is_some_and(|t| matches!(t, crate::module::Scalar::Int { width: 64, .. }));
    let mut w = 0usize;
    'walk: for lo in g.operands {
        loop {
            if w >= ops.len() {
                break 'walk;
            }
            let x = ops[w];
            match lo.kind {
                K::IdResult => w += 1,
                K::IdRef | K::IdResultType | K::IdScope | K::IdMemorySemantics => {
                    let _ = write!(s, " {}", id(x));
                    w += 1;
                }
                K::LiteralString => {
                    let end = ops[w..]
                        .iter()
                        .position(|v| v.to_le_bytes().contains(&0))
                        .map_or(ops.len(), |n| w + n + 1);
                    let bytes: Vec<u8> = ops[w..end]
                        .iter()
                        .flat_map(|v| v.to_le_bytes())
                        .take_while(|b| *b != 0)
                        .collect();
                    let _ = write!(s, " {:?}", String::from_utf8_lossy(&bytes));
                    w = end;
                }
                K::PairIdRefIdRef => {
                    let _ = write!(s, " {} {}", id(x), id(ops.get(w + 1).copied().unwrap_or(0)));
                    w += 2;
                }
                K::PairIdRefLiteralInteger => {
                    let _ = write!(s, " {} {}", id(x), ops.get(w + 1).copied().unwrap_or(0));
                    w += 2;
                }
                // OpSwitch's cases: a literal of the selector's width (two words for 64 bits,
                // low-order first) and a label.
                K::PairLiteralIntegerIdRef if wide_switch => {
                    let high = u64::from(ops.get(w + 1).copied().unwrap_or(0));
                    let literal = u64::from(x) | high << 32;
                    let _ = write!(s, " {literal} {}", id(ops.get(w + 2).copied().unwrap_or(0)));
                    w += 3;
                }
                K::PairLiteralIntegerIdRef => {
                    let _ = write!(s, " {x} {}", id(ops.get(w + 1).copied().unwrap_or(0)));
                    w += 2;
                }
                K::GroupOperation => {
                    let _ = match x {
                        6 => write!(s, " PartitionedReduce{sfx}"),
                        7 => write!(s, " PartitionedInclusiveScan{sfx}"),
                        8 => write!(s, " PartitionedExclusiveScan{sfx}"),
                        _ => write_enum(&mut s, spirv::GroupOperation::from_u32(x), x),
                    };
                    w += 1;
                }
                K::Capability => {
                    let _ = match x {
                        5297 => write!(s, " GroupNonUniformPartitioned{sfx}"),
                        _ => write_enum(&mut s, spirv::Capability::from_u32(x), x),
                    };
                    w += 1;
                }
                K::StorageClass => {
                    let _ = write_enum(&mut s, spirv::StorageClass::from_u32(x), x);
                    w += 1;
                }
                K::ExecutionModel => {
                    let _ = write_enum(&mut s, spirv::ExecutionModel::from_u32(x), x);
                    w += 1;
                }
                K::AddressingModel => {
                    let _ = write_enum(&mut s, spirv::AddressingModel::from_u32(x), x);
                    w += 1;
                }
                K::MemoryModel => {
                    let _ = write_enum(&mut s, spirv::MemoryModel::from_u32(x), x);
                    w += 1;
                }
                K::Decoration => {
                    let _ = write_enum(&mut s, spirv::Decoration::from_u32(x), x);
                    w += 1;
                    if x == spirv::Decoration::BuiltIn as u32 {
                        if let Some(&b) = ops.get(w) {
                            let _ = write_enum(&mut s, spirv::BuiltIn::from_u32(b), b);
                            w += 1;
                        }
                    }
                    break 'walk;
                }
                K::FunctionControl | K::SelectionControl => {
                    let _ = if x == 0 {
                        write!(s, " None")
                    } else {
                        write!(s, " {x}")
                    };
                    w += 1;
                }
                _ => break 'walk,
            }
            if lo.quantifier != OperandQuantifier::ZeroOrMore {
                break;
            }
        }
    }
    for x in ops.iter().skip(w) {
        let _ = write!(s, " {x}");
    }
    s
}

fn write_enum<T: std::fmt::Debug>(s: &mut String, v: Option<T>, raw: u32) -> std::fmt::Result {
    match v {
        Some(v) => write!(s, " {v:?}"),
        None => write!(s, " {raw}"),
    }
}
