//! Outlining: the long rewrites (the partition op, partitioned reduce and scans) are emitted once
//! per distinct signature as a helper function, and every site becomes one `OpFunctionCall`.
//!
//! Why: inlined, each partitioned op expands into 30 to 120 instructions, so a shader dense in them
//! grows up to 8x, and the pass spends its time writing (and the verifier reading) that copy. A
//! helper keeps the output about the size of the input. Drivers inline SPIR-V functions (Mesa's
//! NIR and NVIDIA's compiler always do; the helper is marked `Inline` as a hint), so the code
//! that runs is the same. Subgroup operations in a called function see the invocations that
//! executed the call together, exactly as the inlined sequence would: calls from two branches
//! are two dynamic instances. Sites also stay straight-line: the waterfall's loop lives in the
//! helper, so the caller's blocks are never split. Signed and unsigned 32-bit operands share a
//! helper where the op does not care about signedness ([`unsigned_form`]).

use std::collections::HashMap;

use rspirv::dr::{Block, Function, Instruction, Module, Operand};
use spirv::{FunctionControl, Op};

use crate::emit::{Code, Id, Scalar, Ty};
use crate::rewrite;
use crate::LowerError;

/// A helper's signature: opcode, result type, and operands with every value replaced by its type.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    opcode: u32,
    result_type: Option<Id>,
    operands: Vec<KeyOperand>,
    /// Whether the helper may choose by `SubgroupSize` (not where a naga-like consumer's
    /// vertex stage calls it): the same op gets two helpers when both kinds of caller have it.
    size_builtin_ok: bool,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum KeyOperand {
    /// A value passed as a parameter of this type.
    Param(Id),
    /// A literal, an enumerant or a scope id: part of the signature.
    Fixed(Operand),
}

/// The helper functions made so far, in creation order (which is deterministic).
#[derive(Default)]
pub(crate) struct Helpers {
    by_key: HashMap<Key, Id>,
    /// Existing and new `OpTypeFunction`s: (return type, parameter types) -> id.
    fn_types: HashMap<(Id, Vec<Id>), Id>,
    /// The new functions, to be appended to the module.
    pub functions: Vec<Function>,
    /// `OpName`s of the new functions.
    pub names: Vec<Instruction>,
}

impl Helpers {
    /// Indexes the module's function types, so that none is declared twice.
    pub(crate) fn new(module: &Module) -> Self {
        let mut h = Helpers::default();
        for inst in &module.types_global_values {
            if inst.class.opcode != Op::TypeFunction {
                continue;
            }
            let ids: Option<Vec<Id>> = inst
                .operands
                .iter()
                .map(|o| match o {
                    Operand::IdRef(id) => Some(*id),
                    _ => None,
                })
                .collect();
            if let (Some(id), Some(ids)) = (inst.result_id, ids) {
                if let Some((&ret, params)) = ids.split_first() {
                    h.fn_types.entry((ret, params.to_vec())).or_insert(id);
                }
            }
        }
        h
    }
}

/// Whether `inst` is rewritten into a helper function rather than inline.
pub(crate) fn is_outlined(inst: &Instruction) -> bool {
    inst.class.opcode == Op::GroupNonUniformPartitionEXT
        || inst.operands.iter().any(|o| {
            matches!(
                o,
                Operand::GroupOperation(
                    spirv::GroupOperation::PartitionedReduceEXT
                        | spirv::GroupOperation::PartitionedInclusiveScanEXT
                        | spirv::GroupOperation::PartitionedExclusiveScanEXT
                )
            )
        })
}

/// Emits a call to the helper for `inst` (making the helper on first use); returns the call's id.
pub(crate) fn call(
    code: &mut Code,
    inst: &Instruction,
    helpers: &mut Helpers,
) -> Result<Id, LowerError> {
    let (Some(result_type), Some(_)) = (inst.result_type, inst.result_id) else {
        return rewrite::lower_inst(code, inst);
    };
    if let Some((unsigned, signed_result)) = unsigned_form(code, inst) {
        let value = call(code, &unsigned, helpers)?;
        return Ok(match signed_result {
            Some(t) => code.op(Op::Bitcast, t, &[value]),
            None => value,
        });
    }
    let mut key = Key {
        opcode: inst.class.opcode as u32,
        result_type: Some(result_type),
        operands: Vec::new(),
        size_builtin_ok: code.em.size_builtin_ok,
    };
    let mut args = Vec::new();
    for op in &inst.operands {
        match op {
            Operand::IdRef(v) => match code.em.type_id_of_value(*v) {
                Some(t) => {
                    key.operands.push(KeyOperand::Param(t));
                    args.push((*v, t));
                }
                // A value of unknown type (e.g. a forward reference we cannot type): inline it.
                None => return rewrite::lower_inst(code, inst),
            },
            other => key.operands.push(KeyOperand::Fixed(other.clone())),
        }
    }
    let function = match helpers.by_key.get(&key) {
        Some(&f) => f,
        None => {
            let f = make_helper(code, inst, result_type, &args, helpers)?;
            helpers.by_key.insert(key, f);
            f
        }
    };
    let mut operands = vec![Operand::IdRef(function)];
    operands.extend(args.iter().map(|&(v, _)| Operand::IdRef(v)));
    Ok(code.emit(Op::FunctionCall, result_type, operands))
}

/// For an op whose result bits do not depend on the signedness of its integer value (the
/// partition op, and partitioned `IAdd`, `IMul` and the bitwise ops) over signed 32-bit
/// integers: the same op over the unsigned type of the same shape, its value bitcast at the call
/// site, and the signed result type to bitcast the result back to (`None` for a partition op,
/// whose result type is kept). So `int` and `uint` keys share one helper, which is the output's
/// bulk; an `OpBitcast` between the two is free (no instruction on any GPU), so what runs is the
/// same. Other widths keep their own helpers (a consumer such as naga reads narrow bitcasts
/// only in some forms). `None` when nothing changes.
fn unsigned_form(code: &mut Code, inst: &Instruction) -> Option<(Instruction, Option<Ty>)> {
    let unsigned = |t: Ty| match t.scalar {
        Scalar::Int {
            width: 32,
            signed: true,
        } => Some(Ty {
            scalar: Scalar::Int {
                width: 32,
                signed: false,
            },
            n: t.n,
        }),
        _ => None,
    };
    let opcode = inst.class.opcode;
    // The value operand: the first id of the partition op; after the scope and the group
    // operation for the arithmetic ops, whose result type is the value's.
    let (index, signed_result) = match opcode {
        Op::GroupNonUniformPartitionEXT => (0, None),
        Op::GroupNonUniformIAdd
        | Op::GroupNonUniformIMul
        | Op::GroupNonUniformBitwiseAnd
        | Op::GroupNonUniformBitwiseOr
        | Op::GroupNonUniformBitwiseXor => {
            let t = inst.result_type.and_then(|t| code.em.ty_of_id(t))?;
            unsigned(t)?;
            (2, Some(t))
        }
        _ => return None,
    };
    let Some(&Operand::IdRef(value)) = inst.operands.get(index) else {
        return None;
    };
    let value_ty = code.em.ty_of_value(value)?;
    if signed_result.is_some_and(|t| t != value_ty) {
        return None;
    }
    let u = unsigned(value_ty)?;
    let cast = code.op(Op::Bitcast, u, &[value]);
    let mut c = inst.clone();
    c.operands[index] = Operand::IdRef(cast);
    if signed_result.is_some() {
        c.result_type = Some(code.em.ty(u));
    }
    Some((c, signed_result))
}

/// Builds `result_type helper(params) { return <rewrite of inst over the params>; }`.
fn make_helper(
    code: &mut Code,
    inst: &Instruction,
    result_type: Id,
    args: &[(Id, Id)],
    helpers: &mut Helpers,
) -> Result<Id, LowerError> {
    let em = &mut *code.em;
    let param_types: Vec<Id> = args.iter().map(|&(_, t)| t).collect();
    let fn_type = match helpers.fn_types.get(&(result_type, param_types.clone())) {
        Some(&t) => t,
        None => {
            let t = em.id();
            let mut ops = vec![Operand::IdRef(result_type)];
            ops.extend(param_types.iter().map(|&p| Operand::IdRef(p)));
            let decl = em.inst(Op::TypeFunction, None, Some(t), ops);
            em.new_globals.push(decl);
            helpers
                .fn_types
                .insert((result_type, param_types.clone()), t);
            t
        }
    };
    let fn_id = em.id();
    // The template: the original instruction over the helper's parameters.
    let mut template = inst.clone();
    let mut parameters = Vec::with_capacity(args.len());
    let mut param_iter = param_types.iter();
    for op in &mut template.operands {
        if let Operand::IdRef(v) = op {
            let p = em.id();
            let t = param_iter.next().copied().unwrap_or(0);
            em.set_value_type(p, t);
            parameters.push(em.inst(Op::FunctionParameter, Some(t), Some(p), vec![]));
            *v = p;
        }
    }
    let label = em.id();
    let entry = Block {
        label: Some(em.inst(Op::Label, None, Some(label), vec![])),
        instructions: Vec::new(),
    };
    let mut body = Code {
        em,
        done: Vec::new(),
        cur: entry,
    };
    let value = rewrite::lower_inst(&mut body, &template)?;
    body.emit_void(Op::ReturnValue, vec![Operand::IdRef(value)]);
    let mut blocks = std::mem::take(&mut body.done);
    blocks.push(std::mem::take(&mut body.cur));
    let em = &mut *code.em;
    let def = em.inst(
        Op::Function,
        Some(result_type),
        Some(fn_id),
        vec![
            Operand::FunctionControl(FunctionControl::INLINE),
            Operand::IdRef(fn_type),
        ],
    );
    let end = em.inst(Op::FunctionEnd, None, None, vec![]);
    helpers.functions.push(Function {
        def: Some(def),
        end: Some(end),
        parameters,
        blocks,
    });
    // `spv_subgroup.iadd.inclusivescan.2`: readable in a debugger, and free of opcode and
    // capability names, so a text search of the output for those finds only real uses.
    let kind = rewrite::kind_name(inst)
        .trim_start_matches("OpGroupNonUniform")
        .replace("Partitioned", "")
        .to_lowercase()
        .replace(' ', ".");
    let kind = ["nv", "ext"]
        .iter()
        .find_map(|s| kind.strip_suffix(s))
        .unwrap_or(&kind);
    let name = format!("spv_subgroup.{kind}.{}", helpers.functions.len());
    helpers.names.push(em.inst(
        Op::Name,
        None,
        None,
        vec![Operand::IdRef(fn_id), Operand::LiteralString(name)],
    ));
    Ok(fn_id)
}
