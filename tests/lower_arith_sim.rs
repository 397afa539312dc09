//! Partitioned reduce/scan lowerings executed at subgroup sizes no driver here has (64, 128), by a
//! small lock-step interpreter of the emitted SPIR-V.
//!
//! lavapipe runs 4 to 16 lanes and the GPU 32, so no run ever has a subset spanning ballot words
//! (lanes 32 to 127): FindMSB/FindLSB across words, lane-mask built-ins above 32, the per-word
//! fallbacks of the naga target. Here one instruction (`IAdd`, `SMax`, 64-bit `IAdd`, `UMin` on a
//! `uvec2`, 8-bit `IAdd` and `BitwiseAnd` by bit slices) is lowered for `vulkan1.1`, `naga` and `khr-ballot` and the output is interpreted for
//! 32, 64 and 128 lanes with some lanes inactive, ballots that carry bits of inactive lanes and of
//! lanes beyond the subgroup, and keys whose subsets span every ballot word. Every active lane's
//! result must equal the model. A shuffle that reads an inactive lane yields a poison pattern, so
//! a sequence that consumed one unguarded would show.
//!
//! The interpreter runs all active lanes in lock step and requires every branch to be uniform over
//! them (which the lowering promises: its loops and its fast-path `if` branch on ballots); it
//! knows exactly the instructions the lowering emits for these cases and fails on any other.

use std::collections::HashMap;

use rspirv::dr::{Function, Instruction, Module, Operand};
use spirv::{BuiltIn, Decoration, GroupOperation, Op};
use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::tools;

/// A scalar or vector value: one `u64` per component (bools 0/1, narrower ints zero-extended).
type Val = Vec<u64>;

const POISON: u64 = 0xdead_beef_dead_beef;

#[derive(Clone, Copy, Debug)]
enum Kind {
    Int { width: u32 },
    Float,
    Bool,
}

#[derive(Clone, Copy, Debug)]
struct Ty {
    kind: Kind,
    n: usize,
}

impl Ty {
    fn width(self) -> u32 {
        match self.kind {
            Kind::Int { width, .. } => width,
            Kind::Float => 32,
            Kind::Bool => 1,
        }
    }
    fn mask(self, v: u64) -> u64 {
        let w = self.width();
        if w >= 64 {
            v
        } else {
            v & ((1u64 << w) - 1)
        }
    }
    fn signed(self, v: u64) -> i64 {
        let w = self.width();
        if w >= 64 {
            v as i64
        } else {
            ((v << (64 - w)) as i64) >> (64 - w)
        }
    }
}

/// The module's types, constants, built-in variables and functions.
struct Prog<'m> {
    types: HashMap<u32, Ty>,
    consts: HashMap<u32, Val>,
    builtins: HashMap<u32, BuiltIn>,
    functions: HashMap<u32, &'m Function>,
    glsl: Option<u32>,
}

impl<'m> Prog<'m> {
    fn new(m: &'m Module) -> Prog<'m> {
        let mut p = Prog {
            types: HashMap::new(),
            consts: HashMap::new(),
            builtins: HashMap::new(),
            functions: HashMap::new(),
            glsl: m.ext_inst_imports.first().and_then(|i| i.result_id),
        };
        for a in &m.annotations {
            if let [Operand::IdRef(t), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)] =
                a.operands.as_slice()
            {
                p.builtins.insert(*t, *b);
            }
        }
        for i in &m.types_global_values {
            let Some(id) = i.result_id else { continue };
            match (i.class.opcode, i.operands.as_slice()) {
                (Op::TypeInt, [Operand::LiteralBit32(w), Operand::LiteralBit32(_)]) => {
                    p.types.insert(
                        id,
                        Ty {
                            kind: Kind::Int { width: *w },
                            n: 1,
                        },
                    );
                }
                (Op::TypeFloat, _) => {
                    p.types.insert(
                        id,
                        Ty {
                            kind: Kind::Float,
                            n: 1,
                        },
                    );
                }
                (Op::TypeBool, _) => {
                    p.types.insert(
                        id,
                        Ty {
                            kind: Kind::Bool,
                            n: 1,
                        },
                    );
                }
                (Op::TypeVector, [Operand::IdRef(e), Operand::LiteralBit32(n)]) => {
                    let e = p.types[e];
                    p.types.insert(
                        id,
                        Ty {
                            kind: e.kind,
                            n: *n as usize,
                        },
                    );
                }
                (Op::Constant, [Operand::LiteralBit32(v)]) => {
                    let t = p.types[&i.result_type.expect("typed")];
                    p.consts.insert(id, vec![t.mask(u64::from(*v))]);
                }
                (Op::Constant, [Operand::LiteralBit64(v)]) => {
                    p.consts.insert(id, vec![*v]);
                }
                (Op::ConstantTrue, _) => {
                    p.consts.insert(id, vec![1]);
                }
                (Op::ConstantFalse, _) => {
                    p.consts.insert(id, vec![0]);
                }
                (Op::ConstantComposite, ops) => {
                    let v = ops
                        .iter()
                        .flat_map(|o| match o {
                            Operand::IdRef(c) => p.consts[c].clone(),
                            _ => vec![],
                        })
                        .collect();
                    p.consts.insert(id, v);
                }
                _ => {}
            }
        }
        for f in &m.functions {
            if let Some(id) = f.def.as_ref().and_then(|d| d.result_id) {
                p.functions.insert(id, f);
            }
        }
        p
    }
}

/// One subgroup: its size, its active lanes, and the inputs of the test module.
struct Group {
    size: usize,
    active: Vec<bool>,
    /// Function-variable id -> per-lane value loaded from it.
    inputs: HashMap<u32, Vec<Val>>,
    /// Per-lane values stored to each variable.
    stored: HashMap<u32, Vec<Val>>,
}

impl Group {
    fn lanes(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.size).filter(|&l| self.active[l])
    }
    fn mask_of(&self, bits: impl Iterator<Item = usize>) -> Val {
        let mut m = vec![0u64; 4];
        for b in bits {
            m[b / 32] |= 1 << (b % 32);
        }
        m
    }
    fn bit(v: &Val, b: usize) -> bool {
        b < 128 && (v[b / 32] >> (b % 32)) & 1 == 1
    }
}

type Env = Vec<HashMap<u32, Val>>;

fn get(p: &Prog, env: &Env, lane: usize, o: &Operand) -> Val {
    match o {
        Operand::IdRef(id) | Operand::IdScope(id) => env[lane]
            .get(id)
            .or_else(|| p.consts.get(id))
            .unwrap_or_else(|| panic!("%{id} has no value"))
            .clone(),
        other => panic!("operand {other:?} is not an id"),
    }
}

/// Runs `f` with `args` (per lane); returns the per-lane return value.
fn call(p: &Prog, g: &mut Group, f: &Function, args: Vec<Vec<Val>>) -> Result<Vec<Val>, String> {
    let mut env: Env = vec![HashMap::new(); g.size];
    for (param, vals) in f.parameters.iter().zip(args) {
        let id = param.result_id.expect("parameter id");
        for l in g.lanes().collect::<Vec<_>>() {
            env[l].insert(id, vals[l].clone());
        }
    }
    let labels: HashMap<u32, usize> = f
        .blocks
        .iter()
        .enumerate()
        .filter_map(|(i, b)| Some((b.label.as_ref()?.result_id?, i)))
        .collect();
    let (mut at, mut prev) = (0usize, 0u32);
    let mut steps = 0;
    loop {
        steps += 1;
        if steps > 100_000 {
            return Err("more than 100000 blocks run: a loop does not end".into());
        }
        let block = &f.blocks[at];
        let here = block.label.as_ref().and_then(|l| l.result_id).unwrap_or(0);
        let mut next = None;
        for inst in &block.instructions {
            match inst.class.opcode {
                Op::SelectionMerge | Op::LoopMerge | Op::Variable => {}
                Op::Branch => next = Some(id_of(&inst.operands[0])),
                Op::BranchConditional => {
                    let lanes: Vec<usize> = g.lanes().collect();
                    let c: Vec<u64> = lanes
                        .iter()
                        .map(|&l| get(p, &env, l, &inst.operands[0])[0])
                        .collect();
                    if c.iter().any(|&x| x != c[0]) {
                        return Err(format!("divergent branch in block %{here}"));
                    }
                    next = Some(id_of(&inst.operands[if c[0] != 0 { 1 } else { 2 }]));
                }
                Op::Return => return Ok(vec![vec![]; g.size]),
                Op::ReturnValue => {
                    let mut out = vec![vec![]; g.size];
                    for l in g.lanes().collect::<Vec<_>>() {
                        out[l] = get(p, &env, l, &inst.operands[0]);
                    }
                    return Ok(out);
                }
                Op::Store => {
                    let var = id_of(&inst.operands[0]);
                    let mut vals = vec![vec![]; g.size];
                    for l in g.lanes().collect::<Vec<_>>() {
                        vals[l] = get(p, &env, l, &inst.operands[1]);
                    }
                    g.stored.insert(var, vals);
                }
                Op::Phi => {
                    let id = inst.result_id.expect("phi id");
                    let pair = inst
                        .operands
                        .chunks(2)
                        .find(|c| id_of(&c[1]) == prev)
                        .ok_or("phi without this predecessor")?;
                    for l in g.lanes().collect::<Vec<_>>() {
                        let v = get(p, &env, l, &pair[0]);
                        env[l].insert(id, v);
                    }
                }
                Op::FunctionCall => {
                    let callee = p.functions[&id_of(&inst.operands[0])];
                    let args: Vec<Vec<Val>> = inst.operands[1..]
                        .iter()
                        .map(|o| {
                            (0..g.size)
                                .map(|l| {
                                    if g.active[l] {
                                        get(p, &env, l, o)
                                    } else {
                                        vec![]
                                    }
                                })
                                .collect()
                        })
                        .collect();
                    let r = call(p, g, callee, args)?;
                    for l in g.lanes().collect::<Vec<_>>() {
                        env[l].insert(inst.result_id.expect("call id"), r[l].clone());
                    }
                }
                _ => {
                    let r = exec(p, g, &env, inst)?;
                    let id = inst.result_id.expect("value id");
                    for l in g.lanes().collect::<Vec<_>>() {
                        env[l].insert(id, r[l].clone());
                    }
                }
            }
        }
        let Some(n) = next else {
            return Err(format!("block %{here} has no terminator we know"));
        };
        prev = here;
        at = labels[&n];
    }
}

fn id_of(o: &Operand) -> u32 {
    match o {
        Operand::IdRef(id) => *id,
        other => panic!("{other:?} is not an id"),
    }
}

/// One value instruction for every active lane.
fn exec(p: &Prog, g: &Group, env: &Env, inst: &Instruction) -> Result<Vec<Val>, String> {
    let ty = inst
        .result_type
        .and_then(|t| p.types.get(&t).copied())
        .ok_or_else(|| format!("Op{:?}: unknown result type", inst.class.opcode))?;
    let lanes: Vec<usize> = g.lanes().collect();
    let mut out = vec![vec![]; g.size];
    let arg = |l: usize, i: usize| get(p, env, l, &inst.operands[i]);
    let op = inst.class.opcode;
    // Subgroup operations look at every lane at once.
    match op {
        Op::GroupNonUniformBallot => {
            let m = g.mask_of(lanes.iter().copied().filter(|&l| arg(l, 1)[0] != 0));
            for &l in &lanes {
                out[l] = m.clone();
            }
            return Ok(out);
        }
        Op::SubgroupBallotKHR => {
            let m = g.mask_of(lanes.iter().copied().filter(|&l| arg(l, 0)[0] != 0));
            for &l in &lanes {
                out[l] = m.clone();
            }
            return Ok(out);
        }
        Op::SubgroupReadInvocationKHR => {
            // The index must be the same on every active lane (the extension requires it).
            let idx: Vec<u64> = lanes.iter().map(|&l| arg(l, 1)[0]).collect();
            if idx.iter().any(|&i| i != idx[0]) {
                return Err("OpSubgroupReadInvocationKHR with a non-uniform index".into());
            }
            let src = idx[0] as usize;
            for &l in &lanes {
                out[l] = if src < g.size && g.active[src] {
                    arg(src, 0)
                } else {
                    vec![ty.mask(POISON); ty.n]
                };
            }
            return Ok(out);
        }
        Op::GroupNonUniformShuffle => {
            for &l in &lanes {
                let src = arg(l, 2)[0] as usize;
                out[l] = if src < g.size && g.active[src] {
                    arg(src, 1)
                } else {
                    vec![ty.mask(POISON); ty.n]
                };
            }
            return Ok(out);
        }
        Op::GroupNonUniformIAdd
        | Op::GroupNonUniformSMax
        | Op::GroupNonUniformUMin
        | Op::GroupNonUniformBitwiseAnd => {
            let scan = match inst.operands[1] {
                Operand::GroupOperation(GroupOperation::Reduce) => 0,
                Operand::GroupOperation(GroupOperation::InclusiveScan) => 1,
                Operand::GroupOperation(GroupOperation::ExclusiveScan) => 2,
                ref o => return Err(format!("group operation {o:?}")),
            };
            for &l in &lanes {
                let take: Vec<usize> = lanes
                    .iter()
                    .copied()
                    .filter(|&j| scan == 0 || (scan == 1 && j <= l) || (scan == 2 && j < l))
                    .collect();
                out[l] = (0..ty.n)
                    .map(|c| {
                        take.iter()
                            .fold(identity(op, ty), |a, &j| combine(op, ty, a, arg(j, 2)[c]))
                    })
                    .collect();
            }
            return Ok(out);
        }
        _ => {}
    }
    for &l in &lanes {
        let a = |i: usize| arg(l, i);
        let n = ty.n;
        let bin = |f: &dyn Fn(u64, u64) -> u64| -> Val {
            let (x, y) = (a(0), a(1));
            (0..n).map(|c| ty.mask(f(x[c], y[c]))).collect()
        };
        let cmp = |f: &dyn Fn(u64, u64) -> bool| -> Val {
            let (x, y) = (a(0), a(1));
            (0..n).map(|c| u64::from(f(x[c], y[c]))).collect()
        };
        out[l] = match op {
            Op::Load => {
                let var = id_of(&inst.operands[0]);
                if let Some(b) = p.builtins.get(&var) {
                    builtin(g, *b, l)?
                } else if let Some(v) = g.inputs.get(&var) {
                    v[l].clone()
                } else {
                    return Err(format!("load of unknown %{var}"));
                }
            }
            Op::CopyObject => a(0),
            Op::IAdd => bin(&|x, y| x.wrapping_add(y)),
            Op::ISub => bin(&|x, y| x.wrapping_sub(y)),
            Op::IMul => bin(&|x, y| x.wrapping_mul(y)),
            Op::BitwiseAnd => bin(&|x, y| x & y),
            Op::BitwiseOr => bin(&|x, y| x | y),
            Op::BitwiseXor => bin(&|x, y| x ^ y),
            Op::ShiftLeftLogical => bin(&|x, y| if y >= 64 { 0 } else { x << y }),
            Op::ShiftRightLogical => bin(&|x, y| if y >= 64 { 0 } else { x >> y }),
            Op::Not => a(0).iter().map(|&x| ty.mask(!x)).collect(),
            Op::IEqual | Op::LogicalEqual => cmp(&|x, y| x == y),
            Op::INotEqual | Op::LogicalNotEqual => cmp(&|x, y| x != y),
            Op::ULessThan => cmp(&|x, y| x < y),
            Op::ULessThanEqual => cmp(&|x, y| x <= y),
            Op::UGreaterThan => cmp(&|x, y| x > y),
            Op::UGreaterThanEqual => cmp(&|x, y| x >= y),
            Op::LogicalAnd => cmp(&|x, y| x != 0 && y != 0),
            Op::LogicalOr => cmp(&|x, y| x != 0 || y != 0),
            Op::LogicalNot => a(0).iter().map(|&x| u64::from(x == 0)).collect(),
            Op::All => vec![u64::from(a(0).iter().all(|&x| x != 0))],
            Op::Any => vec![u64::from(a(0).iter().any(|&x| x != 0))],
            Op::Select => {
                let (c, x, y) = (a(0), a(1), a(2));
                (0..n)
                    .map(|i| {
                        if c[if c.len() == 1 { 0 } else { i }] != 0 {
                            x[i]
                        } else {
                            y[i]
                        }
                    })
                    .collect()
            }
            Op::CompositeExtract => {
                let v = a(0);
                let Operand::LiteralBit32(i) = inst.operands[1] else {
                    return Err("extract index".into());
                };
                vec![v[i as usize]]
            }
            Op::VectorExtractDynamic => {
                let (v, i) = (a(0), a(1));
                vec![v.get(i[0] as usize).copied().unwrap_or(POISON)]
            }
            Op::CompositeConstruct => (0..inst.operands.len()).flat_map(a).collect(),
            Op::Bitcast | Op::UConvert => {
                let src_ty = value_type(p, inst, 0).ok_or("bitcast source type")?;
                let v = a(0);
                if op == Op::UConvert {
                    v.iter().map(|&x| ty.mask(x)).collect()
                } else {
                    // Reinterpret: concatenate the source bits, little-endian, and re-split.
                    let sw = src_ty.width();
                    let mut bits: Vec<bool> = Vec::new();
                    for x in v {
                        bits.extend((0..sw).map(|b| (x >> b) & 1 == 1));
                    }
                    let dw = ty.width() as usize;
                    bits.chunks(dw)
                        .map(|ch| {
                            ch.iter()
                                .enumerate()
                                .fold(0u64, |acc, (b, &s)| acc | (u64::from(s) << b))
                        })
                        .collect()
                }
            }
            Op::BitCount => a(0).iter().map(|&x| u64::from(x.count_ones())).collect(),
            Op::ExtInst => {
                if Some(id_of(&inst.operands[0])) != p.glsl {
                    return Err("unknown extended instruction set".into());
                }
                let Operand::LiteralExtInstInteger(k) = inst.operands[1] else {
                    return Err("ext inst number".into());
                };
                let x = a(2);
                let y = if inst.operands.len() > 3 {
                    a(3)
                } else {
                    vec![]
                };
                (0..n)
                    .map(|c| match k {
                        73 => {
                            if x[c] == 0 {
                                ty.mask(u64::MAX)
                            } else {
                                u64::from(x[c].trailing_zeros())
                            }
                        }
                        75 => {
                            if x[c] == 0 {
                                ty.mask(u64::MAX)
                            } else {
                                u64::from(63 - x[c].leading_zeros())
                            }
                        }
                        38 => x[c].min(y[c]),
                        41 => x[c].max(y[c]),
                        39 => {
                            if ty.signed(x[c]) <= ty.signed(y[c]) {
                                x[c]
                            } else {
                                y[c]
                            }
                        }
                        42 => {
                            if ty.signed(x[c]) >= ty.signed(y[c]) {
                                x[c]
                            } else {
                                y[c]
                            }
                        }
                        _ => POISON,
                    })
                    .collect()
            }
            Op::GroupNonUniformBallotFindLSB | Op::GroupNonUniformBallotFindMSB => {
                let v = a(1);
                let bits: Vec<usize> = (0..g.size).filter(|&b| Group::bit(&v, b)).collect();
                let b = if op == Op::GroupNonUniformBallotFindLSB {
                    bits.first()
                } else {
                    bits.last()
                };
                vec![b.map_or(POISON & 0xffff_ffff, |&b| b as u64)]
            }
            Op::GroupNonUniformBallotBitCount => {
                let v = a(2);
                vec![(0..g.size).filter(|&b| Group::bit(&v, b)).count() as u64]
            }
            Op::GroupNonUniformBallotBitExtract => {
                let (v, i) = (a(1), a(2));
                vec![u64::from(Group::bit(&v, i[0] as usize))]
            }
            other => return Err(format!("the interpreter does not know Op{other:?}")),
        };
    }
    Ok(out)
}

/// The type of operand `i` of `inst`, where the operand is a constant or a typed value we can find.
fn value_type(p: &Prog, inst: &Instruction, i: usize) -> Option<Ty> {
    TYPE_OF.with(|t| {
        t.borrow()
            .get(&id_of(&inst.operands[i]))
            .and_then(|t| p.types.get(t).copied())
    })
}

thread_local! {
    /// Result id -> type id of every value of the module being run.
    static TYPE_OF: std::cell::RefCell<HashMap<u32, u32>> = std::cell::RefCell::new(HashMap::new());
}

fn builtin(g: &Group, b: BuiltIn, lane: usize) -> Result<Val, String> {
    Ok(match b {
        BuiltIn::SubgroupLocalInvocationId => vec![lane as u64],
        BuiltIn::SubgroupSize => vec![g.size as u64],
        BuiltIn::SubgroupEqMask => g.mask_of(std::iter::once(lane)),
        BuiltIn::SubgroupLtMask => g.mask_of(0..lane),
        BuiltIn::SubgroupLeMask => g.mask_of(0..=lane),
        BuiltIn::SubgroupGtMask => g.mask_of(lane + 1..g.size),
        BuiltIn::SubgroupGeMask => g.mask_of(lane..g.size),
        other => return Err(format!("built-in {other:?}")),
    })
}

fn identity(op: Op, ty: Ty) -> u64 {
    match op {
        Op::GroupNonUniformBitwiseAnd => ty.mask(u64::MAX),
        Op::GroupNonUniformSMax => ty.mask(1u64 << (ty.width() - 1)),
        Op::GroupNonUniformUMin => ty.mask(u64::MAX),
        _ => 0,
    }
}

fn combine(op: Op, ty: Ty, a: u64, b: u64) -> u64 {
    match op {
        Op::GroupNonUniformBitwiseAnd => a & b,
        Op::GroupNonUniformSMax => {
            if ty.signed(a) >= ty.signed(b) {
                a
            } else {
                b
            }
        }
        Op::GroupNonUniformUMin => a.min(b),
        _ => ty.mask(a.wrapping_add(b)),
    }
}

/// A test case: the op, the value type's declaration and its `Ty`.
struct Case {
    op: &'static str,
    core: Op,
    decl: &'static str,
    caps: &'static str,
    ty: Ty,
}

fn module_text(case: &Case, scan: &str, spv10: bool) -> String {
    let core = if spv10 {
        ""
    } else {
        "OpCapability GroupNonUniform\n"
    };
    format!(
        "OpCapability Shader
{caps}{core}OpCapability GroupNonUniformPartitionedNV
OpExtension \"SPV_NV_shader_subgroup_partitioned\"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main \"main\"
OpExecutionMode %main LocalSize 128 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
{decl}
%v4uint = OpTypeVector %uint 4
%ptr_t = OpTypePointer Function %T
%ptr_m = OpTypePointer Function %v4uint
%scope = OpConstant %uint 3
%main = OpFunction %void None %fn
%entry = OpLabel
%vv = OpVariable %ptr_t Function
%bv = OpVariable %ptr_m Function
%v = OpLoad %T %vv
%ballot = OpLoad %v4uint %bv
%r = OpGroupNonUniform{op} %T %scope {scan} %v %ballot
OpStore %vv %r
OpReturn
OpFunctionEnd
",
        caps = case.caps,
        decl = case.decl,
        op = case.op
    )
}

fn hash(x: u64) -> u64 {
    let mut h = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^= h >> 29;
    h.wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (h >> 32)
}

#[test]
fn lowered_sequences_at_64_and_128_lanes() {
    let cases = [
        Case {
            op: "IAdd",
            core: Op::GroupNonUniformIAdd,
            decl: "%T = OpTypeInt 32 0",
            caps: "",
            ty: Ty {
                kind: Kind::Int { width: 32 },
                n: 1,
            },
        },
        Case {
            op: "SMax",
            core: Op::GroupNonUniformSMax,
            decl: "%T = OpTypeInt 32 1",
            caps: "",
            ty: Ty {
                kind: Kind::Int { width: 32 },
                n: 1,
            },
        },
        Case {
            op: "IAdd",
            core: Op::GroupNonUniformIAdd,
            decl: "%T = OpTypeInt 64 0",
            caps: "OpCapability Int64\n",
            ty: Ty {
                kind: Kind::Int { width: 64 },
                n: 1,
            },
        },
        Case {
            op: "UMin",
            core: Op::GroupNonUniformUMin,
            decl: "%T = OpTypeVector %uint 2",
            caps: "",
            ty: Ty {
                kind: Kind::Int { width: 32 },
                n: 2,
            },
        },
        Case {
            op: "IAdd",
            core: Op::GroupNonUniformIAdd,
            decl: "%T = OpTypeInt 8 0",
            caps: "OpCapability Int8\n",
            ty: Ty {
                kind: Kind::Int { width: 8 },
                n: 1,
            },
        },
        Case {
            op: "BitwiseAnd",
            core: Op::GroupNonUniformBitwiseAnd,
            decl: "%T = OpTypeInt 8 0",
            caps: "OpCapability Int8\n",
            ty: Ty {
                kind: Kind::Int { width: 8 },
                n: 1,
            },
        },
    ];
    let scans = [
        ("PartitionedReduceNV", 0),
        ("PartitionedInclusiveScanNV", 1),
        ("PartitionedExclusiveScanNV", 2),
    ];
    let mut failures = Vec::new();
    let mut checked = 0usize;
    for case in &cases {
        for (scan, kind) in scans {
            for (target_name, arithmetic) in [
                ("vulkan1.1", true),
                ("vulkan1.1", false),
                ("naga", false),
                ("khr-ballot", false),
            ] {
                let mut target = Target::preset(target_name).expect("preset");
                target.ops.arithmetic = arithmetic && target.ops.arithmetic;
                let spv10 = target.spirv_version < (1, 3);
                let text = module_text(case, scan, spv10);
                let input = tools::assemble(&text, if spv10 { "spv1.0" } else { "vulkan1.1" })
                    .expect("assembles");
                let opts = LowerOptions::new(target.clone());
                let (out, _) = lower_words(&input, &opts).expect("lowers");
                let m = rspirv::dr::load_words(&out).expect("loads");
                TYPE_OF.with(|t| {
                    let mut t = t.borrow_mut();
                    t.clear();
                    for i in m
                        .types_global_values
                        .iter()
                        .chain(m.functions.iter().flat_map(|f| {
                            f.parameters
                                .iter()
                                .chain(f.blocks.iter().flat_map(|b| b.instructions.iter()))
                        }))
                    {
                        if let (Some(ty), Some(id)) = (i.result_type, i.result_id) {
                            t.insert(id, ty);
                        }
                    }
                });
                let p = Prog::new(&m);
                let main = m
                    .functions
                    .iter()
                    .find(|f| {
                        f.def.as_ref().and_then(|d| d.result_id)
                            == m.entry_points[0].operands.get(1).map(id_of)
                    })
                    .expect("main");
                let var_of = |name: &str| -> u32 {
                    // %vv and %bv keep their ids (spirv-as --preserve-numeric-ids is not used: find by type).
                    let vars: Vec<&Instruction> = main.blocks[0]
                        .instructions
                        .iter()
                        .filter(|i| i.class.opcode == Op::Variable)
                        .collect();
                    vars[if name == "vv" { 0 } else { 1 }]
                        .result_id
                        .expect("variable id")
                };
                let (vv, bv) = (var_of("vv"), var_of("bv"));
                for size in [32usize, 64, 128] {
                    if size > target.max_subgroup_size as usize {
                        continue;
                    }
                    for seed in 0..4u64 {
                        // Lanes inactive by a pattern; keys that spread subsets over every word.
                        let active: Vec<bool> = (0..size)
                            .map(|l| seed == 0 || !hash(l as u64 + 97 * seed).is_multiple_of(5))
                            .collect();
                        let key = |l: usize| hash(l as u64 * 7 + seed) % (2 + seed);
                        let value = |l: usize, c: usize| {
                            case.ty.mask(hash((l * 4 + c) as u64 + 1000 * seed))
                        };
                        let mut inputs = HashMap::new();
                        inputs.insert(
                            vv,
                            (0..size)
                                .map(|l| (0..case.ty.n).map(|c| value(l, c)).collect())
                                .collect::<Vec<Val>>(),
                        );
                        let ballots: Vec<Val> = (0..size)
                            .map(|l| {
                                let mut b = vec![0u64; 4];
                                // Every lane of the key, active or not, plus junk beyond the subgroup.
                                for j in (0..size).filter(|&j| key(j) == key(l)) {
                                    b[j / 32] |= 1 << (j % 32);
                                }
                                for j in size..128 {
                                    if hash(j as u64 + seed).is_multiple_of(3) {
                                        b[j / 32] |= 1 << (j % 32);
                                    }
                                }
                                b
                            })
                            .collect();
                        inputs.insert(bv, ballots);
                        let mut g = Group {
                            size,
                            active: active.clone(),
                            inputs,
                            stored: HashMap::new(),
                        };
                        let ctx = format!("{} {} {scan} for {target_name} (core arithmetic {arithmetic}) at {size} lanes, seed {seed}", case.op, case.decl, );
                        if let Err(e) = call(&p, &mut g, main, vec![]) {
                            failures.push(format!("{ctx}: {e}"));
                            continue;
                        }
                        let got = &g.stored[&vv];
                        let lanes: Vec<usize> = (0..size).filter(|&l| active[l]).collect();
                        for &l in &lanes {
                            let subset: Vec<usize> = lanes
                                .iter()
                                .copied()
                                .filter(|&j| key(j) == key(l))
                                .collect();
                            let take: Vec<usize> = subset
                                .iter()
                                .copied()
                                .filter(|&j| {
                                    kind == 0 || (kind == 1 && j <= l) || (kind == 2 && j < l)
                                })
                                .collect();
                            let want: Val = (0..case.ty.n)
                                .map(|c| {
                                    take.iter().fold(identity(case.core, case.ty), |a, &j| {
                                        combine(case.core, case.ty, a, value(j, c))
                                    })
                                })
                                .collect();
                            checked += 1;
                            if got[l] != want {
                                failures.push(format!(
                                    "{ctx}, lane {l}: got {:x?}, want {want:x?}",
                                    got[l]
                                ));
                                break;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(checked > 10_000, "only {checked} lanes checked");
}
