//! The binary read into the tables, once: ids, decorations, types with their layouts,
//! constants (specialization constants overridden), variables, functions and their
//! instructions' operands resolved to register slots, constants and blocks.

use std::collections::BTreeMap;

use crate::error::{malformed, unsupported, Location, Result};
use crate::types::{align_up, Scalar, Shape, TypeInfo, MAX_LEAVES};

use super::{Block, Entry, Func, Global, IdKind, Inst, Phi, Program, Src};

/// Largest id bound accepted (tables are indexed by id).
const MAX_BOUND: u32 = 1 << 22;

/// Largest type in bytes (memory objects are allocated whole).
const MAX_BYTES: u64 = 1 << 28;

#[derive(Default)]
struct Decor {
    builtin: Option<u32>,
    spec_id: Option<u32>,
    array_stride: Option<u32>,
    set: Option<u32>,
    binding: Option<u32>,
    member_offset: BTreeMap<u32, u32>,
    member_matrix_stride: BTreeMap<u32, u32>,
}

/// Decodes a nul-terminated UTF-8 literal string from words; returns it and the words it used.
fn string(words: &[u32]) -> (String, usize) {
    let mut bytes = Vec::new();
    for (i, w) in words.iter().enumerate() {
        for b in w.to_le_bytes() {
            if b == 0 {
                return (String::from_utf8_lossy(&bytes).into_owned(), i + 1);
            }
            bytes.push(b);
        }
    }
    (String::from_utf8_lossy(&bytes).into_owned(), words.len())
}

struct Builder<'a> {
    p: Program,
    decor: Vec<Decor>,
    spec: &'a BTreeMap<u32, u64>,
}

/// Translates a module, with specialization constants overridden by `SpecId`.
pub fn translate(words: &[u32], spec: &BTreeMap<u32, u64>) -> Result<Program> {
    if words.len() < 5 {
        return Err(malformed("shorter than the 5-word header"));
    }
    if words[0] != 0x0723_0203 {
        return Err(malformed(format!(
            "bad magic number {:#010x} (big-endian modules are not read)",
            words[0]
        )));
    }
    let bound = words[3];
    if bound > MAX_BOUND {
        return Err(unsupported(format!("id bound {bound} above {MAX_BOUND}")));
    }
    // Split into instructions.
    let mut insts: Vec<(u32, u32, &[u32])> = Vec::new();
    let mut at = 5usize;
    while at < words.len() {
        let count = (words[at] >> 16) as usize;
        let op = words[at] & 0xffff;
        if count == 0 || at + count > words.len() {
            return Err(malformed(format!(
                "instruction at word {at} has a bad word count {count}"
            ))
            .at(&Location::at(at as u32, op, None)));
        }
        insts.push((at as u32, op, &words[at + 1..at + count]));
        at += count;
    }
    let n = bound as usize;
    let mut b = Builder {
        p: Program {
            types: vec![None; n],
            ids: vec![IdKind::None; n],
            id_ty: vec![0; n],
            consts: Vec::new(),
            row_consts: Vec::new(),
            nregs: 0,
            general_only: false,
            funcs: Vec::new(),
            entries: Vec::new(),
            globals: Vec::new(),
            workgroup_size: None,
            memory_lane_by_lane: false,
            never_written: Vec::new(),
        },
        decor: (0..n).map(|_| Decor::default()).collect(),
        spec,
    };
    // Decorations first (they precede types in a valid module, but be order-independent).
    for &(word, op, ops) in &insts {
        b.decorate(op, ops)
            .map_err(|e| e.at(&Location::at(word, op, None)))?;
    }
    let mut entry_raw = Vec::new();
    let mut modes: Vec<(u32, u32, Vec<u32>)> = Vec::new();
    let mut i = 0;
    while i < insts.len() {
        let (word, op, ops) = insts[i];
        let loc = Location::at(word, op, None);
        match spirv::Op::from_u32(op) {
            Some(spirv::Op::EntryPoint) => {
                if ops.len() < 3 {
                    return Err(malformed("short OpEntryPoint").at(&loc));
                }
                if ops[0] == spirv::ExecutionModel::GLCompute as u32 {
                    entry_raw.push((ops[1], string(&ops[2..]).0));
                }
            }
            Some(spirv::Op::ExecutionMode) | Some(spirv::Op::ExecutionModeId) if ops.len() >= 2 => {
                modes.push((ops[0], ops[1], ops[2..].to_vec()));
            }
            Some(spirv::Op::ExtInstImport) => {
                let id = b.id(ops, 0)?;
                if string(&ops[1..]).0 == "GLSL.std.450" {
                    b.p.ids[id as usize] = IdKind::Glsl;
                }
            }
            Some(spirv::Op::Function) => {
                let end = insts[i..]
                    .iter()
                    .position(|x| x.1 == spirv::Op::FunctionEnd as u32)
                    .ok_or_else(|| malformed("OpFunction without OpFunctionEnd").at(&loc))?;
                let index = b.p.funcs.len() as u32;
                let fid = b.id(ops, 1)?;
                b.p.ids[fid as usize] = IdKind::Func(index);
                b.p.funcs.push(Func {
                    id: fid,
                    ..Func::default()
                });
                i += end + 1;
                continue;
            }
            _ => b.global(word, op, ops).map_err(|e| e.at(&loc))?,
        }
        i += 1;
    }
    // Functions: first every result gets registers and every label a block, then bodies.
    let funcs: Vec<&[(u32, u32, &[u32])]> = {
        let mut v = Vec::new();
        let mut i = 0;
        while i < insts.len() {
            if insts[i].1 == spirv::Op::Function as u32 {
                let len = insts[i..]
                    .iter()
                    .position(|x| x.1 == spirv::Op::FunctionEnd as u32)
                    .unwrap_or(0);
                v.push(&insts[i..i + len]);
                i += len;
            }
            i += 1;
        }
        v
    };
    for (fi, body) in funcs.iter().enumerate() {
        b.allocate(fi as u32, body)?;
    }
    for (fi, body) in funcs.iter().enumerate() {
        b.body(fi as u32, body)?;
    }
    for (fid, name) in entry_raw {
        let func = match b.p.ids.get(fid as usize) {
            Some(IdKind::Func(f)) => *f,
            _ => {
                return Err(malformed(format!(
                    "entry point `{name}` names %{fid}, not a function"
                )))
            }
        };
        let mut local_size = [1, 1, 1];
        for (target, mode, lits) in &modes {
            if *target != fid || lits.len() < 3 {
                continue;
            }
            if *mode == spirv::ExecutionMode::LocalSize as u32 {
                local_size = [lits[0], lits[1], lits[2]];
            } else if *mode == spirv::ExecutionMode::LocalSizeId as u32 {
                for (k, id) in lits.iter().take(3).enumerate() {
                    local_size[k] = b.const_u32(*id)?;
                }
            }
        }
        b.p.entries.push(Entry {
            name,
            func,
            local_size,
        });
    }
    Ok(b.p)
}

impl Builder<'_> {
    fn id(&self, ops: &[u32], k: usize) -> Result<u32> {
        let id = *ops.get(k).ok_or_else(|| malformed("missing operand"))?;
        if id == 0 || id as usize >= self.p.ids.len() {
            return Err(malformed(format!("id %{id} outside the bound")));
        }
        Ok(id)
    }

    fn ty(&self, id: u32) -> Result<&TypeInfo> {
        self.p
            .types
            .get(id as usize)
            .and_then(Option::as_ref)
            .ok_or_else(|| malformed(format!("%{id} is not a type")))
    }

    fn decorate(&mut self, op: u32, ops: &[u32]) -> Result<()> {
        let (target, member, rest) = if op == spirv::Op::Decorate as u32 && ops.len() >= 2 {
            (ops[0], None, &ops[1..])
        } else if op == spirv::Op::MemberDecorate as u32 && ops.len() >= 3 {
            (ops[0], Some(ops[1]), &ops[2..])
        } else {
            return Ok(());
        };
        let d = self
            .decor
            .get_mut(target as usize)
            .ok_or_else(|| malformed(format!("decoration of %{target} outside the bound")))?;
        let lit = rest.get(1).copied();
        use spirv::Decoration as D;
        match (D::from_u32(rest[0]), member, lit) {
            (Some(D::BuiltIn), None, Some(v)) => d.builtin = Some(v),
            (Some(D::SpecId), None, Some(v)) => d.spec_id = Some(v),
            (Some(D::ArrayStride), None, Some(v)) => d.array_stride = Some(v),
            (Some(D::DescriptorSet), None, Some(v)) => d.set = Some(v),
            (Some(D::Binding), None, Some(v)) => d.binding = Some(v),
            (Some(D::Offset), Some(m), Some(v)) => {
                d.member_offset.insert(m, v);
            }
            (Some(D::MatrixStride), Some(m), Some(v)) => {
                d.member_matrix_stride.insert(m, v);
            }
            (Some(D::RowMajor), Some(_), _) => {
                return Err(unsupported("RowMajor matrices"));
            }
            _ => {}
        }
        Ok(())
    }

    fn set_type(&mut self, id: u32, t: TypeInfo) {
        self.p.types[id as usize] = Some(t);
    }

    fn add_const(&mut self, id: u32, ty: u32, leaves: Vec<u64>) -> Result<()> {
        let base = self.p.consts.len() as u32;
        self.p.consts.extend(leaves);
        self.p.ids[id as usize] = IdKind::Value(Src::Const(base));
        self.p.id_ty[id as usize] = ty;
        if self.decor[id as usize].builtin == Some(spirv::BuiltIn::WorkgroupSize as u32) {
            let v = self.const_leaves(id)?;
            if v.len() == 3 {
                self.p.workgroup_size = Some([v[0] as u32, v[1] as u32, v[2] as u32]);
            }
        }
        Ok(())
    }

    fn const_leaves(&self, id: u32) -> Result<Vec<u64>> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Value(Src::Const(base))) => {
                let n = self.ty(self.p.id_ty[id as usize])?.leaves as usize;
                let b = *base as usize;
                self.p
                    .consts
                    .get(b..b + n)
                    .map(<[u64]>::to_vec)
                    .ok_or_else(|| malformed(format!("constant %{id} does not fit its type")))
            }
            _ => Err(malformed(format!("%{id} is not a constant"))),
        }
    }

    fn const_u32(&self, id: u32) -> Result<u32> {
        self.const_leaves(id)?
            .first()
            .map(|v| *v as u32)
            .ok_or_else(|| malformed(format!("%{id} is not a scalar constant")))
    }

    fn scalar_type(&mut self, id: u32, s: Scalar) {
        self.set_type(id, TypeInfo::scalar(s));
    }

    /// A type, constant or variable at module scope.
    fn global(&mut self, _word: u32, op: u32, ops: &[u32]) -> Result<()> {
        use spirv::Op as O;
        let Some(o) = O::from_u32(op) else {
            return Err(unsupported("unknown opcode at module scope"));
        };
        match o {
            O::TypeVoid
            | O::TypeFunction
            | O::TypeSampler
            | O::TypeImage
            | O::TypeSampledImage
            | O::TypeAccelerationStructureKHR => {
                let id = self.id(ops, 0)?;
                self.set_type(id, TypeInfo::void());
            }
            O::TypeBool => {
                let id = self.id(ops, 0)?;
                self.scalar_type(id, Scalar::Bool);
            }
            O::TypeInt => {
                let id = self.id(ops, 0)?;
                let width = *ops.get(1).ok_or_else(|| malformed("short OpTypeInt"))?;
                if ![8, 16, 32, 64].contains(&width) {
                    return Err(unsupported(format!("{width}-bit integers")));
                }
                let signed = ops.get(2).copied().unwrap_or(0) != 0;
                self.scalar_type(id, Scalar::Int { width, signed });
            }
            O::TypeFloat => {
                let id = self.id(ops, 0)?;
                let width = *ops.get(1).ok_or_else(|| malformed("short OpTypeFloat"))?;
                if ![16, 32, 64].contains(&width) || ops.len() > 2 {
                    return Err(unsupported(format!(
                        "{width}-bit floats of encoding {:?}",
                        ops.get(2)
                    )));
                }
                self.scalar_type(id, Scalar::Float { width });
            }
            O::TypeVector | O::TypeMatrix => {
                let id = self.id(ops, 0)?;
                let elem = self.id(ops, 1)?;
                let n = *ops.get(2).ok_or_else(|| malformed("short vector type"))?;
                let e = self.ty(elem)?.clone();
                let (shape, stride) = if o == O::TypeVector {
                    (Shape::Vector { elem, n }, e.size)
                } else {
                    let stride = align_up(e.size, e.align);
                    (
                        Shape::Array {
                            elem,
                            n,
                            stride,
                            runtime: false,
                        },
                        stride,
                    )
                };
                self.set_type(id, repeat(shape, &e, n, stride)?);
            }
            O::TypeArray | O::TypeRuntimeArray => {
                let id = self.id(ops, 0)?;
                let elem = self.id(ops, 1)?;
                let e = self.ty(elem)?.clone();
                let runtime = o == O::TypeRuntimeArray;
                let n = if runtime {
                    0
                } else {
                    self.const_u32(self.id(ops, 2)?)?
                };
                let stride = self.decor[id as usize]
                    .array_stride
                    .unwrap_or(align_up(e.size, e.align));
                let mut t = repeat(
                    Shape::Array {
                        elem,
                        n,
                        stride,
                        runtime,
                    },
                    &e,
                    n,
                    stride,
                )?;
                if runtime {
                    t.size = 0;
                }
                self.set_type(id, t);
            }
            O::TypeStruct => {
                let id = self.id(ops, 0)?;
                let members = ops[1..].to_vec();
                let mut offsets = Vec::new();
                let mut layout = Vec::new();
                let (mut size, mut align, mut leaves) = (0u32, 1u32, 0u32);
                let mut unbounded = false;
                for (k, m) in members.iter().enumerate() {
                    let t = self.ty(*m)?.clone();
                    if let (Some(ms), Shape::Array { stride, .. }) = (
                        self.decor[id as usize]
                            .member_matrix_stride
                            .get(&(k as u32)),
                        &t.shape,
                    ) {
                        if ms != stride {
                            // Matrices are laid out packed; a decorated stride that differs is not modelled.
                            return Err(unsupported(format!(
                                "MatrixStride {ms} (packed column stride is {stride})"
                            )));
                        }
                    }
                    let off = match self.decor[id as usize].member_offset.get(&(k as u32)) {
                        Some(o) => *o,
                        None => align_up(size, t.align),
                    };
                    offsets.push(off);
                    if u64::from(off) + u64::from(t.size) > MAX_BYTES {
                        return Err(unsupported(format!("a struct member at offset {off}")));
                    }
                    layout.extend(t.layout.iter().map(|(o, s)| (o + off, *s)));
                    size = size.max(off + t.size);
                    align = align.max(t.align);
                    leaves += t.leaves;
                    unbounded |= matches!(t.shape, Shape::Array { runtime: true, .. })
                        || (t.size == 0 && t.leaves == 0 && !matches!(t.shape, Shape::Void));
                }
                if leaves > MAX_LEAVES {
                    return Err(unsupported(format!("a struct of {leaves} scalars")));
                }
                let size = if unbounded { 0 } else { align_up(size, align) };
                self.set_type(
                    id,
                    TypeInfo {
                        shape: Shape::Struct { members, offsets },
                        leaves,
                        size,
                        align,
                        layout,
                    },
                );
            }
            O::TypePointer | O::TypeForwardPointer if ops.len() >= 3 => {
                let id = self.id(ops, 0)?;
                self.set_type(
                    id,
                    TypeInfo {
                        shape: Shape::Pointer { pointee: ops[2] },
                        ..TypeInfo::scalar(Scalar::Ptr)
                    },
                );
            }
            O::ConstantTrue | O::ConstantFalse | O::SpecConstantTrue | O::SpecConstantFalse => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let mut v = u64::from(matches!(o, O::ConstantTrue | O::SpecConstantTrue));
                if let Some(s) = self.decor[id as usize]
                    .spec_id
                    .and_then(|s| self.spec.get(&s))
                {
                    v = u64::from(*s != 0);
                }
                self.add_const(id, ty, vec![v])?;
            }
            O::Constant | O::SpecConstant => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let s = self
                    .ty(ty)?
                    .scalar_of()
                    .ok_or_else(|| malformed("constant of a non-scalar type"))?;
                let lo = u64::from(
                    *ops.get(2)
                        .ok_or_else(|| malformed("constant without a value"))?,
                );
                let hi = u64::from(ops.get(3).copied().unwrap_or(0));
                let mut v = (lo | (hi << 32)) & crate::num::mask(s.width());
                if let Some(x) = self.decor[id as usize]
                    .spec_id
                    .and_then(|s| self.spec.get(&s))
                {
                    v = x & crate::num::mask(s.width());
                }
                self.add_const(id, ty, vec![v])?;
            }
            O::ConstantComposite | O::SpecConstantComposite => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let mut v = Vec::new();
                for c in &ops[2..] {
                    v.extend(self.const_leaves(*c)?);
                }
                if v.len() != self.ty(ty)?.leaves as usize {
                    return Err(malformed("composite constant of the wrong size"));
                }
                self.add_const(id, ty, v)?;
            }
            O::ConstantNull => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let n = self.ty(ty)?.leaves as usize;
                self.add_const(id, ty, vec![0; n])?;
            }
            O::SpecConstantOp => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let v = self.spec_op(ty, &ops[2..])?;
                self.add_const(id, ty, v)?;
            }
            O::Undef => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                self.p.ids[id as usize] = IdKind::Value(Src::Undef);
                self.p.id_ty[id as usize] = ty;
            }
            O::Variable => {
                let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                let class = *ops.get(2).ok_or_else(|| malformed("short OpVariable"))?;
                let pointee = match self.ty(ty)?.shape {
                    Shape::Pointer { pointee, .. } => pointee,
                    _ => return Err(malformed("variable of a non-pointer type")),
                };
                self.ty(pointee)?;
                let init = match ops.get(3) {
                    Some(c) => Some(match self.p.ids.get(*c as usize) {
                        Some(IdKind::Value(s)) => *s,
                        _ => return Err(malformed("variable initialiser is not a constant")),
                    }),
                    None => None,
                };
                let reg = self.p.nregs;
                self.p.nregs += 1;
                self.p.ids[id as usize] = IdKind::Value(Src::Reg(reg));
                self.p.id_ty[id as usize] = ty;
                let d = &self.decor[id as usize];
                let binding = match (d.set, d.binding) {
                    (None, None) => None,
                    (s, b) => Some((s.unwrap_or(0), b.unwrap_or(0))),
                };
                self.p.globals.push(Global {
                    id,
                    reg,
                    class,
                    pointee,
                    builtin: d.builtin,
                    binding,
                    init,
                    promoted: None,
                });
            }
            O::Line
            | O::NoLine
            | O::Name
            | O::MemberName
            | O::String
            | O::Source
            | O::SourceContinued
            | O::SourceExtension
            | O::ModuleProcessed
            | O::Capability
            | O::Extension
            | O::MemoryModel
            | O::Decorate
            | O::MemberDecorate
            | O::DecorationGroup
            | O::GroupDecorate
            | O::GroupMemberDecorate
            | O::DecorateId
            | O::DecorateString
            | O::MemberDecorateString
            | O::ExecutionMode
            | O::ExecutionModeId
            | O::ExtInstImport
            | O::Nop => {}
            O::ExtInst => {
                return Err(unsupported(
                    "extended instructions at module scope (debug info)",
                ))
            }
            _ => return Err(unsupported("this instruction at module scope")),
        }
        Ok(())
    }

    /// `OpSpecConstantOp` over scalar integer constants (what workgroup-size arithmetic needs).
    fn spec_op(&self, ty: u32, ops: &[u32]) -> Result<Vec<u64>> {
        let op = *ops
            .first()
            .ok_or_else(|| malformed("short OpSpecConstantOp"))?;
        let w = self.ty(ty)?.scalar_of().map_or(32, Scalar::width);
        let a = |k: usize| -> Result<u64> {
            self.const_leaves(
                *ops.get(k)
                    .ok_or_else(|| malformed("short OpSpecConstantOp"))?,
            )?
            .first()
            .copied()
            .ok_or_else(|| malformed("vector spec op"))
        };
        use spirv::Op as O;
        let m = crate::num::mask(w);
        let v = match O::from_u32(op) {
            Some(O::IAdd) => a(1)?.wrapping_add(a(2)?),
            Some(O::ISub) => a(1)?.wrapping_sub(a(2)?),
            Some(O::IMul) => a(1)?.wrapping_mul(a(2)?),
            Some(O::UDiv) => a(1)?.checked_div(a(2)?).unwrap_or(0),
            Some(O::UMod) => a(1)?.checked_rem(a(2)?).unwrap_or(0),
            Some(O::ShiftLeftLogical) => a(1)?.checked_shl(a(2)? as u32).unwrap_or(0),
            Some(O::ShiftRightLogical) => a(1)?.checked_shr(a(2)? as u32).unwrap_or(0),
            Some(O::BitwiseAnd) => a(1)? & a(2)?,
            Some(O::BitwiseOr) => a(1)? | a(2)?,
            Some(O::BitwiseXor) => a(1)? ^ a(2)?,
            Some(O::IEqual) => u64::from(a(1)? == a(2)?),
            Some(O::INotEqual) => u64::from(a(1)? != a(2)?),
            Some(O::ULessThan) => u64::from(a(1)? < a(2)?),
            Some(O::Select) => {
                if a(1)? != 0 {
                    a(2)?
                } else {
                    a(3)?
                }
            }
            Some(O::UConvert) | Some(O::SConvert) => a(1)?,
            Some(O::CompositeExtract) => {
                let c = self.const_leaves(*ops.get(1).ok_or_else(|| malformed("short"))?)?;
                *c.get(*ops.get(2).unwrap_or(&0) as usize)
                    .ok_or_else(|| malformed("index"))?
            }
            _ => {
                return Err(unsupported(format!(
                    "OpSpecConstantOp with {}",
                    crate::error::op_name(op)
                )))
            }
        };
        Ok(vec![v & m])
    }

    /// Registers for every result and parameter, blocks for every label.
    fn allocate(&mut self, fi: u32, body: &[(u32, u32, &[u32])]) -> Result<()> {
        let mut nblock = 0u32;
        for &(word, op, ops) in body.iter().skip(1) {
            let loc = Location::at(word, op, None);
            if op == spirv::Op::Label as u32 {
                let id = self.id(ops, 0).map_err(|e| e.at(&loc))?;
                self.p.ids[id as usize] = IdKind::Block(fi, nblock);
                nblock += 1;
                continue;
            }
            let (has_ty, has_res) = result_shape(op);
            if has_res && has_ty {
                let ty = self.id(ops, 0).map_err(|e| e.at(&loc))?;
                let id = self.id(ops, 1).map_err(|e| e.at(&loc))?;
                if self.p.ids[id as usize] != IdKind::None {
                    return Err(malformed(format!("%{id} defined twice")).at(&loc));
                }
                let leaves = self.ty(ty).map_err(|e| e.at(&loc))?.leaves;
                if op == spirv::Op::Undef as u32 {
                    self.p.ids[id as usize] = IdKind::Value(Src::Undef);
                } else {
                    self.p.ids[id as usize] = IdKind::Value(Src::Reg(self.p.nregs));
                    self.p.nregs = self
                        .p
                        .nregs
                        .checked_add(leaves)
                        .ok_or_else(|| unsupported("too many registers"))?;
                }
                self.p.id_ty[id as usize] = ty;
            }
        }
        Ok(())
    }

    fn src(&self, id: u32) -> Result<Src> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Value(s)) => Ok(*s),
            _ => Err(malformed(format!("%{id} is not a value"))),
        }
    }

    fn block_of(&self, fi: u32, id: u32) -> Result<u32> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Block(f, b)) if *f == fi => Ok(*b),
            _ => Err(malformed(format!("%{id} is not a block of this function"))),
        }
    }

    fn body(&mut self, fi: u32, body: &[(u32, u32, &[u32])]) -> Result<()> {
        let mut f = Func {
            id: self.p.funcs[fi as usize].id,
            ..Func::default()
        };
        for &(word, op, ops) in body.iter().skip(1) {
            let loc = Location::at(word, op, None);
            let r: Result<()> = (|| {
                match spirv::Op::from_u32(op) {
                    Some(spirv::Op::FunctionParameter) => {
                        let id = self.id(ops, 1)?;
                        let leaves = self.ty(self.p.id_ty[id as usize])?.leaves;
                        if let Src::Reg(r) = self.src(id)? {
                            f.params.push((r, leaves));
                            f.param_ids.push(id);
                        }
                    }
                    Some(spirv::Op::Label) => {
                        let label = self.id(ops, 0)?;
                        let start = f.insts.len() as u32;
                        f.blocks.push(Block {
                            label,
                            start,
                            end: start,
                            phis: Vec::new(),
                        });
                    }
                    Some(spirv::Op::Phi) => {
                        let (ty, id) = (self.id(ops, 0)?, self.id(ops, 1)?);
                        let leaves = self.ty(ty)?.leaves;
                        let res = match self.src(id)? {
                            Src::Reg(r) => r,
                            _ => return Err(malformed("phi result")),
                        };
                        let mut incoming = Vec::new();
                        for pair in ops[2..].chunks(2) {
                            if pair.len() != 2 {
                                return Err(malformed("odd OpPhi operands"));
                            }
                            incoming.push((self.block_of(fi, pair[1])?, self.src(pair[0])?));
                        }
                        let blk = f
                            .blocks
                            .last_mut()
                            .ok_or_else(|| malformed("phi outside a block"))?;
                        blk.phis.push(Phi {
                            res,
                            leaves,
                            incoming,
                            word,
                        });
                    }
                    Some(
                        spirv::Op::Line
                        | spirv::Op::NoLine
                        | spirv::Op::LoopMerge
                        | spirv::Op::SelectionMerge
                        | spirv::Op::Nop,
                    ) => {}
                    _ => {
                        let (has_ty, has_res) = result_shape(op);
                        let (ty, id, args) = match (has_ty, has_res) {
                            (true, true) => (self.id(ops, 0)?, self.id(ops, 1)?, &ops[2..]),
                            _ => (0, 0, ops),
                        };
                        let res = match (id, self.p.ids.get(id as usize)) {
                            (0, _) => u32::MAX,
                            (_, Some(IdKind::Value(Src::Reg(r)))) => *r,
                            _ => u32::MAX,
                        };
                        let blk = f
                            .blocks
                            .last_mut()
                            .ok_or_else(|| malformed("instruction outside a block"))?;
                        f.insts.push(Inst {
                            op,
                            decoded: spirv::Op::from_u32(op),
                            group: spirv::Op::from_u32(op).is_some_and(crate::opclass::is_group),
                            word,
                            id,
                            ty,
                            res,
                            args: args.to_vec(),
                            local: None,
                            forwarded: false,
                            bindings: Vec::new(),
                            row: None,
                            fast: None,
                            branch: None,
                            chain: None,
                            grp: None,
                            mem: None,
                        });
                        blk.end = f.insts.len() as u32;
                    }
                }
                Ok(())
            })();
            r.map_err(|e| e.at(&loc))?;
        }
        if f.blocks.is_empty() {
            return Err(malformed("a function without blocks"));
        }
        self.p.funcs[fi as usize] = f;
        Ok(())
    }
}

/// A vector, matrix or array of `n` elements of `e` at `stride`.
fn repeat(shape: Shape, e: &TypeInfo, n: u32, stride: u32) -> Result<TypeInfo> {
    let leaves = e
        .leaves
        .checked_mul(n)
        .filter(|l| *l <= MAX_LEAVES)
        .ok_or_else(|| {
            unsupported(format!(
                "a composite of {n} elements of {} scalars",
                e.leaves
            ))
        })?;
    let mut layout = Vec::with_capacity(leaves as usize);
    let size = u64::from(stride) * u64::from(n);
    if size > MAX_BYTES {
        return Err(unsupported(format!("a composite of {size} bytes")));
    }
    for k in 0..n {
        layout.extend(e.layout.iter().map(|(o, s)| (o + k * stride, *s)));
    }
    Ok(TypeInfo {
        shape,
        leaves,
        size: size as u32,
        align: e.align,
        layout,
    })
}

/// Whether an opcode has a result type and a result id (SPIR-V's grammar, for the opcodes that matter).
pub fn result_shape(op: u32) -> (bool, bool) {
    use spirv::Op as O;
    match O::from_u32(op) {
        Some(
            O::Store
            | O::CopyMemory
            | O::Branch
            | O::BranchConditional
            | O::Switch
            | O::Return
            | O::ReturnValue
            | O::Kill
            | O::Unreachable
            | O::ControlBarrier
            | O::MemoryBarrier
            | O::AtomicStore
            | O::LoopMerge
            | O::SelectionMerge
            | O::Line
            | O::NoLine
            | O::Nop
            | O::Label
            | O::FunctionEnd
            | O::TerminateInvocation
            | O::LifetimeStart
            | O::LifetimeStop
            | O::EmitVertex
            | O::EndPrimitive
            | O::ImageWrite,
        ) => (false, false),
        _ => (true, true),
    }
}
