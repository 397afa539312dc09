//! Friendly names of ids for disassembly (`%uint`, `%main`), as spirv-dis gives them, computed
//! once per module on its first finding ([`super::Module::names`]).

use std::collections::{HashMap, HashSet};

use spirv::Op;

use super::Module;

/// Friendly names, as spirv-dis gives them: OpName names (sanitized), then scalar, vector and
/// pointer types and integer/Boolean constants. A name already taken is not given twice.
pub(crate) fn friendly_names(m: &Module<'_>) -> HashMap<u32, String> {
    let mut names: HashMap<u32, String> = HashMap::new();
    let mut taken: HashSet<String> = HashSet::new();
    let mut give = |names: &mut HashMap<u32, String>, id: u32, name: String| {
        if !names.contains_key(&id) && !name.is_empty() && taken.insert(name.clone()) {
            names.insert(id, name);
        }
    };
    for i in 0..m.insts.len() {
        let op = m.opcode(i);
        if op == Op::Name as u32 {
            if let Some(target) = m.word(i, 1) {
                let raw = m.string(i, 2);
                let mut n: String = raw
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect();
                if n.starts_with(|c: char| c.is_ascii_digit()) {
                    n.insert(0, '_');
                }
                give(&mut names, target, n);
            }
        } else if op >= Op::TypeVoid as u32 && op <= Op::TypePointer as u32
            || op == Op::Constant as u32
            || op == Op::ConstantTrue as u32
            || op == Op::ConstantFalse as u32
        {
            let Some(r) = m.result_id(i) else { continue };
            if names.contains_key(&r) {
                continue;
            }
            if let Some(n) = type_or_constant_name(m, &names, i, op) {
                give(&mut names, r, n);
            }
        }
    }
    names
}

fn type_or_constant_name(
    m: &Module<'_>,
    names: &HashMap<u32, String>,
    i: usize,
    op: u32,
) -> Option<String> {
    let w = |k| m.word(i, k);
    let name_of = |id: u32| names.get(&id).cloned();
    Some(match crate::binary::op_of(op)? {
        Op::TypeVoid => "void".into(),
        Op::TypeBool => "bool".into(),
        Op::TypeInt => {
            let base = match w(2)? {
                8 => "char",
                16 => "short",
                32 => "int",
                64 => "long",
                _ => return None,
            };
            if w(3)? == 0 {
                format!("u{base}")
            } else {
                base.into()
            }
        }
        Op::TypeFloat => match w(2)? {
            16 => "half".into(),
            32 => "float".into(),
            64 => "double".into(),
            _ => return None,
        },
        Op::TypeVector => format!("v{}{}", w(3)?, name_of(w(2)?)?),
        Op::TypePointer => {
            let sc = spirv::StorageClass::from_u32(w(2)?).map(|c| format!("{c:?}"))?;
            format!("_ptr_{sc}_{}", name_of(w(3)?)?)
        }
        Op::ConstantTrue => "true".into(),
        Op::ConstantFalse => "false".into(),
        Op::Constant => {
            let ty = name_of(w(1)?)?;
            let v = w(3)?;
            if m.wc(i) != 4 {
                return None;
            }
            match m.ty(w(1)?) {
                super::Ty::Int { signed: true, .. } if (v as i32) < 0 => {
                    format!("{ty}_n{}", (v as i32).unsigned_abs())
                }
                super::Ty::Int { .. } => format!("{ty}_{v}"),
                _ => return None,
            }
        }
        _ => return None,
    })
}
