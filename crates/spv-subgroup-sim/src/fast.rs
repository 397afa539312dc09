//! Elementwise instructions resolved once at translation (operand sources, scalars, leaf
//! counts) so each execution goes straight to [`crate::vector::row`] over whole rows: the
//! register-machine form of the most frequent instructions, without an id, type or layout
//! lookup per step. Only operations `vector::row` computes and whose operands are registers or
//! constants (never `OpUndef`, whose bits are drawn per lane) of scalar or vector types get
//! this form; a shift with a lane out of range or a division by zero falls back to the
//! general path, which reports the undefined result, so every result is what `ops.rs`'s
//! elementwise path computes. The executor runs this form before decoding anything else.

use crate::error::{malformed, Result};
use crate::exec::{Machine, Sg};
use crate::translate::{ChainPlan, Fast, IdKind, Inst, Operand, Program, RowOp, Src};
use crate::types::{Scalar, Shape, TypeInfo};
use crate::vector::{row, split_rows, MAX_LANES};

/// Most constant rows the row form keeps (each machine fills `lanes` slots per row: at 128
/// lanes 4 MiB); constant operands past them are filled at each execution, as before.
const MAX_CONST_ROWS: usize = 4096;

/// Constant rows given out by [`prepare`], each sequence of values once.
#[derive(Default)]
struct ConstRows {
    values: Vec<u64>,
    first: std::collections::HashMap<Vec<u64>, u32>,
}

impl ConstRows {
    /// The first of the rows holding `values` (None past [`MAX_CONST_ROWS`]).
    fn rows(&mut self, values: &[u64]) -> Option<u32> {
        if let Some(&first) = self.first.get(values) {
            return Some(first);
        }
        let next = self.values.len();
        if next + values.len() > MAX_CONST_ROWS {
            return None;
        }
        self.values.extend_from_slice(values);
        self.first.insert(values.to_vec(), next as u32);
        Some(next as u32)
    }
}

/// Marks the instructions that take the row form and the straight-line form.
pub fn prepare(p: &mut Program) {
    let mut funcs = std::mem::take(&mut p.funcs);
    let mut consts = ConstRows::default();
    for f in &mut funcs {
        for inst in &mut f.insts {
            inst.row = resolve(p, inst);
            if let Some(r) = &mut inst.row {
                for (k, src) in [r.a, r.b].into_iter().enumerate() {
                    let Src::Const(i) = src else { continue };
                    let n = if r.wide[k] { r.leaves } else { 1 } as usize;
                    if let Some(values) = p.consts.get(i as usize..i as usize + n) {
                        r.const_rows[k] = consts.rows(values);
                    }
                }
            }
            if p.general_only {
                if let Some(r) = &mut inst.row {
                    r.kernel = None;
                }
                inst.fast = None;
            } else {
                inst.fast = straight(p, inst, &mut consts);
            }
            if matches!(
                inst.decoded,
                Some(spirv::Op::AccessChain | spirv::Op::InBoundsAccessChain)
            ) && inst.local.is_none()
            {
                // A chain the types reject keeps no plan: it fails when it runs, as before.
                inst.chain = chain_plan(p, inst).ok().map(Box::new);
            }
        }
    }
    if !p.general_only {
        for f in &mut funcs {
            skip_written_checks(f);
        }
    }
    p.funcs = funcs;
    p.row_consts = consts.values;
}

/// A forwarded load after a store that wrote every leaf it reads, in the same block with no
/// call or `OpVariable` of that variable in between, has nothing to check: a block runs under
/// one mask, and the store set every active lane's flags. Its form becomes [`Fast::Nop`].
fn skip_written_checks(f: &mut crate::translate::Func) {
    // Per block, the (variable, first value row, leaves) stored so far.
    let mut stored: Vec<(u32, u32, u32)> = Vec::new();
    for b in 0..f.blocks.len() {
        let (start, end) = (f.blocks[b].start as usize, f.blocks[b].end as usize);
        stored.clear();
        for inst in f.insts.get_mut(start..end).into_iter().flatten() {
            match (inst.decoded, inst.local) {
                (Some(spirv::Op::FunctionCall), _) => stored.clear(),
                (Some(spirv::Op::Variable), Some(l)) => stored.retain(|s| s.0 != l.var),
                (Some(spirv::Op::Store), Some(l)) => stored.push((l.var, l.value, l.leaves)),
                (Some(spirv::Op::Load), Some(l)) if inst.forwarded => {
                    let covered = stored.iter().any(|&(var, value, leaves)| {
                        var == l.var && value <= l.value && l.value + l.leaves <= value + leaves
                    });
                    if covered && matches!(inst.fast, Some(Fast::LoadForwarded { .. })) {
                        inst.fast = Some(Fast::Nop);
                    }
                }
                _ => {}
            }
        }
    }
}

/// The straight-line form of `inst`, if it has one (its row form, if any, already resolved).
fn straight(p: &Program, inst: &Inst, consts: &mut ConstRows) -> Option<Fast> {
    let operand = |src: Src, row: Option<u32>| match (src, row) {
        (Src::Reg(r), _) => Some(Operand::Reg(r)),
        (Src::Const(_), Some(c)) => Some(Operand::Const(c)),
        _ => None,
    };
    if let Some(r) = &inst.row {
        if r.leaves != 1 || inst.res == u32::MAX {
            return None;
        }
        return Some(Fast::Row {
            kernel: r.kernel?,
            dst: inst.res,
            a: operand(r.a, r.const_rows[0])?,
            b: operand(r.b, r.const_rows[1])?,
        });
    }
    let Some(local) = inst.local else {
        return copy_or_select(p, inst, consts);
    };
    match inst.decoded? {
        spirv::Op::AccessChain | spirv::Op::InBoundsAccessChain => Some(Fast::Nop),
        spirv::Op::Variable if inst.args.len() == 1 => Some(Fast::VarInit {
            flags: local.written,
            leaves: local.leaves,
            unwritten: u64::from(local.var) << 1,
        }),
        spirv::Op::Load if inst.res != u32::MAX => Some(if inst.forwarded {
            Fast::LoadForwarded {
                flags: local.written,
                leaves: local.leaves,
            }
        } else {
            Fast::Load {
                from: local.value,
                flags: local.written,
                to: inst.res,
                leaves: local.leaves,
            }
        }),
        spirv::Op::Store if local.leaves == 1 => {
            let id = *inst.args.get(1)?;
            let (src, t) = p.val(id).ok()?;
            if t.leaves != 1 {
                return None;
            }
            let keep = match t.layout.first()?.1 {
                Scalar::Bool | Scalar::Ptr => return None,
                s => crate::num::mask(s.width()),
            };
            let src = match src {
                Src::Reg(r) => Operand::Reg(r),
                Src::Const(k) => Operand::Const(consts.rows(&[*p.consts.get(k as usize)?])?),
                _ => return None,
            };
            Some(Fast::Store {
                value: local.value,
                flags: local.written,
                src,
                keep,
            })
        }
        _ => None,
    }
}

/// The copy and select forms of an instruction that reaches no promoted variable.
fn copy_or_select(p: &Program, inst: &Inst, consts: &mut ConstRows) -> Option<Fast> {
    use spirv::Op as O;
    if inst.res == u32::MAX || inst.group {
        return None;
    }
    let rt = p.types.get(inst.ty as usize)?.as_ref()?;
    // An operand's first row from leaf `start`, `count` leaves (constants as constant rows;
    // OpUndef, whose bits are drawn per lane, has no form).
    let mut operand = |id: u32, start: u32, count: u32| -> Option<Operand> {
        match p.ids.get(id as usize)? {
            IdKind::Value(Src::Reg(r)) => Some(Operand::Reg(r + start)),
            IdKind::Value(Src::Const(k)) => {
                let at = (*k + start) as usize;
                Some(Operand::Const(
                    consts.rows(p.consts.get(at..at + count as usize)?)?,
                ))
            }
            _ => None,
        }
    };
    let leaves_of = |id: u32| -> Option<u32> {
        let t = p.types.get(*p.id_ty.get(id as usize)? as usize)?.as_ref()?;
        Some(t.leaves)
    };
    let parts: Vec<(Operand, u32, u64)> = match inst.decoded? {
        O::CompositeExtract => {
            let v = *inst.args.first()?;
            let vt = p.types.get(*p.id_ty.get(v as usize)? as usize)?.as_ref()?;
            let start = constant_leaf(p, vt, inst.args.get(1..)?)?;
            vec![(operand(v, start, rt.leaves)?, rt.leaves, u64::MAX)]
        }
        O::CompositeConstruct => {
            let mut parts = Vec::with_capacity(inst.args.len());
            for &id in &inst.args {
                let n = leaves_of(id)?;
                parts.push((operand(id, 0, n)?, n, u64::MAX));
            }
            parts
        }
        O::CopyObject | O::CopyLogical if rt.leaves > 1 => {
            let v = *inst.args.first()?;
            vec![(operand(v, 0, rt.leaves)?, rt.leaves, u64::MAX)]
        }
        O::Bitcast => {
            // One leaf to one leaf (`floatBitsToUint` and the like): its low bits.
            let v = *inst.args.first()?;
            let vt = p.types.get(*p.id_ty.get(v as usize)? as usize)?.as_ref()?;
            let ([_], [(_, s)]) = (vt.layout.as_slice(), rt.layout.as_slice()) else {
                return None;
            };
            vec![(operand(v, 0, 1)?, 1, crate::num::mask(s.bytes() * 8))]
        }
        O::Select => {
            let (c, a, b) = (*inst.args.first()?, *inst.args.get(1)?, *inst.args.get(2)?);
            let per_leaf = leaves_of(c)? > 1;
            let n = rt.leaves;
            return Some(Fast::Select {
                dst: inst.res,
                cond: operand(c, 0, if per_leaf { n } else { 1 })?,
                a: operand(a, 0, n)?,
                b: operand(b, 0, n)?,
                leaves: n,
                per_leaf,
            });
        }
        _ => return None,
    };
    if parts.iter().map(|x| x.1).sum::<u32>() != rt.leaves {
        return None;
    }
    Some(Fast::Copy {
        to: inst.res,
        parts: parts.into_boxed_slice(),
    })
}

/// The first leaf an `OpCompositeExtract`'s literal indices reach in a value of type `t`.
fn constant_leaf(p: &Program, t: &TypeInfo, indices: &[u32]) -> Option<u32> {
    let mut t = t;
    let mut start = 0;
    for &k in indices {
        let (elems, n): (Vec<u32>, u32) = match &t.shape {
            Shape::Struct { members, .. } => (members.clone(), members.len() as u32),
            Shape::Array {
                elem,
                n,
                runtime: false,
                ..
            } => (vec![*elem; *n as usize], *n),
            Shape::Vector { elem, n } => (vec![*elem; *n as usize], *n),
            _ => return None,
        };
        if k >= n {
            return None;
        }
        for e in elems.iter().take(k as usize) {
            start += p.types.get(*e as usize)?.as_ref()?.leaves;
        }
        t = p.types.get(*elems.get(k as usize)? as usize)?.as_ref()?;
    }
    Some(start)
}

/// The scalar of a value's first leaf (what `Machine::get` draws for `OpUndef`).
fn first_scalar(t: &TypeInfo) -> Scalar {
    t.layout.first().map_or(
        Scalar::Int {
            width: 32,
            signed: false,
        },
        |l| l.1,
    )
}

/// An access chain's steps from the types (the same checks, errors and sums as when it was
/// resolved at every execution): struct members and constant indices into one offset (a
/// constant index out of range sends every lane out of range), register indices per lane.
pub fn chain_plan(p: &Program, inst: &Inst) -> Result<ChainPlan> {
    let base_id = *inst
        .args
        .first()
        .ok_or_else(|| malformed("missing operand"))?;
    let base = p.val(base_id)?;
    let mut t = match &base.1.shape {
        Shape::Pointer { pointee, .. } => p.ty(*pointee)?,
        _ => return Err(malformed("access chain into a non-pointer")),
    };
    let mut fixed = 0u64;
    let mut all_out = false;
    let mut steps = Vec::new();
    for &id in inst.args.get(1..).unwrap_or(&[]) {
        let idx = p.val(id)?;
        let (stride, n) = match &t.shape {
            Shape::Struct { members, offsets } => {
                let k = p.constant(id)? as usize;
                let off = *offsets
                    .get(k)
                    .ok_or_else(|| malformed("struct member index out of range"))?;
                fixed = fixed.saturating_add(u64::from(off));
                t = p.ty(*members
                    .get(k)
                    .ok_or_else(|| malformed("struct member index out of range"))?)?;
                continue;
            }
            Shape::Array {
                elem,
                n,
                stride,
                runtime,
            } => {
                let n = if *runtime { u64::MAX } else { u64::from(*n) };
                t = p.ty(*elem)?;
                (*stride, n)
            }
            Shape::Vector { elem, n } => {
                let e = p.ty(*elem)?;
                t = e;
                (e.size, u64::from(*n))
            }
            _ => return Err(malformed("access chain index into a scalar")),
        };
        let s = first_scalar(idx.1);
        let konst = match idx.0 {
            Src::Const(k) => p.consts.get(k as usize).copied(),
            _ => None,
        };
        match konst {
            Some(x) => {
                let i = crate::num::sext(idx.1.scalar_of().map_or(32, Scalar::width), x);
                if i < 0 || (i as u64) >= n {
                    all_out = true;
                } else {
                    fixed = fixed.saturating_add((i as u64).saturating_mul(u64::from(stride)));
                }
            }
            None => steps.push((stride, n, idx.0, s)),
        }
    }
    Ok(ChainPlan {
        base: (base.0, first_scalar(base.1)),
        fixed,
        all_out,
        steps,
    })
}

/// The scalar every leaf of `t` has, if they all have the same one.
fn uniform(t: &TypeInfo) -> Option<Scalar> {
    let s = t.layout.first()?.1;
    t.layout.iter().all(|l| l.1 == s).then_some(s)
}

fn resolve(p: &Program, inst: &crate::translate::Inst) -> Option<RowOp> {
    let op = inst.decoded?;
    if inst.group || inst.local.is_some() || inst.res == u32::MAX || !handles(op) {
        return None;
    }
    let ty = |id: u32| p.types.get(id as usize).and_then(Option::as_ref);
    let rt = ty(inst.ty)?;
    let rs = uniform(rt)?;
    let operand = |k: usize| -> Option<(Src, Scalar, bool)> {
        let id = *inst.args.get(k)?;
        let src = match p.ids.get(id as usize)? {
            IdKind::Value(s @ (Src::Reg(_) | Src::Const(_))) => *s,
            _ => return None,
        };
        let t = ty(*p.id_ty.get(id as usize)?)?;
        Some((src, uniform(t)?, t.leaves > 1))
    };
    let (a, sa, wa) = operand(0)?;
    let (b, sb, wb) = match inst.args.len() {
        1 => (a, sa, wa),
        2 => operand(1)?,
        _ => return None,
    };
    Some(RowOp {
        op,
        a,
        b,
        rs,
        sa,
        sb,
        wide: [wa, wb],
        leaves: rt.leaves,
        kernel: crate::kernels::kernel(op, rs, sa, sb),
        const_rows: [None; 2],
    })
}

/// Whether `vector::row` computes `op` (asked of it, so the two lists cannot drift apart).
fn handles(op: spirv::Op) -> bool {
    let s = Scalar::Int {
        width: 32,
        signed: false,
    };
    // A shift by 1 and a division by 1 are defined: only the opcode decides.
    row(op, s, s, s, &[1], &[1], &mut [0], 1, 1)
}

impl Machine<'_> {
    /// Runs a row-form instruction for the lanes of `mask`; false (having written only results
    /// the general path writes the same) when a lane needs that path.
    #[inline]
    pub fn run_row(&mut self, sg: &mut Sg, res: u32, r: &RowOp, mask: u128) -> bool {
        let n = self.lanes as usize;
        if n > MAX_LANES {
            return false;
        }
        let Some(kernel) = r.kernel else {
            return self.run_row_general(sg, res, r, mask);
        };
        let full = self.full;
        for c in 0..r.leaves {
            // Each operand's row for this leaf: a register's, or a constant row this machine
            // filled.
            let mut ops = [Operand::Reg(0); 2];
            for (k, src) in [r.a, r.b].into_iter().enumerate() {
                let leaf = if r.wide[k] { c } else { 0 };
                ops[k] = match (src, r.const_rows[k]) {
                    (Src::Reg(x), _) => Operand::Reg(x + leaf),
                    (Src::Const(_), Some(first)) => Operand::Const(first + leaf),
                    _ => return self.run_row_general(sg, res, r, mask),
                };
            }
            let rows = (&mut sg.regs[..], &self.const_rows[..], &mut self.row_tmp);
            if !kernel_row(rows, kernel, res + c, ops, n, (mask, full)) {
                return false;
            }
        }
        true
    }

    /// [`Machine::run_row`] for the operations and widths without a kernel: `vector::row` lane
    /// by lane, constants filled into scratch rows.
    fn run_row_general(&mut self, sg: &mut Sg, res: u32, r: &RowOp, mask: u128) -> bool {
        let n = self.lanes as usize;
        let full = self.full_mask();
        // Rows of the constant operands' values (sized only when there is one).
        // Inactive lanes keep whatever they held: nothing reads them.
        let has_const = matches!(r.a, Src::Const(_)) || matches!(r.b, Src::Const(_));
        let mut consts = if has_const {
            std::mem::take(&mut self.scratch)
        } else {
            Vec::new()
        };
        if has_const && consts.len() < 2 * n {
            consts.resize(2 * n, 0);
        }
        let mut ok = true;
        for c in 0..r.leaves {
            let mut rows = [None; 2];
            for (k, (src, wide)) in [(r.a, r.wide[0]), (r.b, r.wide[1])].into_iter().enumerate() {
                let leaf = if wide { c } else { 0 } as usize;
                match src {
                    Src::Reg(x) => rows[k] = Some((x as usize + leaf) * n),
                    Src::Const(i) => {
                        let v = self.p.consts.get(i as usize + leaf).copied().unwrap_or(0);
                        // Only the lanes the operation reads.
                        let row = &mut consts[k * n..(k + 1) * n];
                        if mask == full {
                            row.fill(v);
                        } else {
                            for l in crate::num::lanes(mask) {
                                row[l as usize] = v;
                            }
                        }
                    }
                    _ => {}
                }
            }
            let out = (res as usize + c as usize) * n;
            let Some((dst, [a, b])) = split_rows(&mut sg.regs, out, rows, n) else {
                ok = false;
                break;
            };
            let a = a.or_else(|| consts.get(..n)).unwrap_or(&[]);
            let b = b.or_else(|| consts.get(n..2 * n)).unwrap_or(&[]);
            if a.len() != n || b.len() != n {
                ok = false;
                break;
            }
            if n > MAX_LANES || !row(r.op, r.rs, r.sa, r.sb, a, b, dst, mask, full) {
                ok = false;
                break;
            }
        }
        if has_const {
            self.scratch = consts;
        }
        ok
    }
}

impl Machine<'_> {
    /// Runs the straight-line form for the lanes of `mask`; false, having written nothing the
    /// general path would not write the same, where that path must run (an undefined result, a
    /// lane never written).
    #[inline]
    pub fn run_fast(&mut self, sg: &mut Sg, f: &Fast, mask: u128) -> bool {
        let n = self.lanes as usize;
        let full = self.full;
        match *f {
            Fast::Nop => true,
            Fast::Copy { to, ref parts } => {
                let mut at = to as usize * n;
                for &(src, leaves, keep) in parts.iter() {
                    for c in 0..leaves as usize {
                        let from = match src {
                            Operand::Reg(r) => Some((r as usize + c) * n),
                            Operand::Const(_) => None,
                        };
                        let Some((out, [v, _])) = split_rows(&mut sg.regs, at, [from, None], n)
                        else {
                            return false;
                        };
                        let v = match (v, src) {
                            (Some(v), _) => v,
                            (None, Operand::Const(k)) => {
                                let k = (k as usize + c) * n;
                                match self.const_rows.get(k..k + n) {
                                    Some(v) => v,
                                    None => return false,
                                }
                            }
                            (None, Operand::Reg(_)) => return false,
                        };
                        store_row(out, v, keep, mask, full);
                        at += n;
                    }
                }
                true
            }
            Fast::Select {
                dst,
                cond,
                a,
                b,
                leaves,
                per_leaf,
            } => {
                let tmp = &mut self.row_tmp;
                tmp.resize(n, 0);
                // Lanes past the highest active one are never computed.
                let top = (128 - mask.leading_zeros() as usize).min(n);
                for c in 0..leaves as usize {
                    let consts = &self.const_rows[..];
                    let (Some(k), Some(x), Some(y)) = (
                        operand_row(&sg.regs, consts, cond, if per_leaf { c } else { 0 }, n),
                        operand_row(&sg.regs, consts, a, c, n),
                        operand_row(&sg.regs, consts, b, c, n),
                    ) else {
                        return false;
                    };
                    for (((t, &k), &x), &y) in tmp[..top].iter_mut().zip(k).zip(x).zip(y) {
                        *t = if k != 0 { x } else { y };
                    }
                    let at = (dst as usize + c) * n;
                    let Some(out) = sg.regs.get_mut(at..at + n) else {
                        return false;
                    };
                    if mask == full {
                        out.copy_from_slice(tmp);
                    } else {
                        crate::kernels::blend(&mut out[..top], &tmp[..top], mask);
                    }
                }
                true
            }
            Fast::VarInit {
                flags,
                leaves,
                unwritten,
            } => {
                let at = flags as usize * n;
                let Some(rows) = sg.regs.get_mut(at..at + leaves as usize * n) else {
                    return false;
                };
                for row in rows.chunks_exact_mut(n) {
                    if mask == full {
                        row.fill(unwritten);
                    } else {
                        for l in crate::num::lanes(mask) {
                            row[l as usize] = unwritten;
                        }
                    }
                }
                true
            }
            Fast::Row { kernel, dst, a, b } => {
                let rows = (&mut sg.regs[..], &self.const_rows[..], &mut self.row_tmp);
                kernel_row(rows, kernel, dst, [a, b], n, (mask, full))
            }
            Fast::LoadForwarded { flags, leaves } => {
                let at = flags as usize * n;
                match sg.regs.get(at..at + leaves as usize * n) {
                    Some(rows) => rows.chunks_exact(n).all(|f| written(f, mask, full)),
                    None => false,
                }
            }
            Fast::Load {
                from,
                flags,
                to,
                leaves,
            } => {
                let len = leaves as usize * n;
                let (from, flags, to) = (from as usize * n, flags as usize * n, to as usize * n);
                let ok = sg
                    .regs
                    .get(flags..flags + len)
                    .is_some_and(|rows| rows.chunks_exact(n).all(|f| written(f, mask, full)));
                if !ok || from + len > sg.regs.len() || to + len > sg.regs.len() {
                    return false;
                }
                if mask == full {
                    sg.regs.copy_within(from..from + len, to);
                } else {
                    for c in 0..leaves as usize {
                        for l in crate::num::lanes(mask) {
                            let l = l as usize;
                            sg.regs[to + c * n + l] = sg.regs[from + c * n + l];
                        }
                    }
                }
                true
            }
            Fast::Store {
                value,
                flags,
                src,
                keep,
            } => {
                let (value, flags) = (value as usize * n, flags as usize * n);
                if value + n > sg.regs.len() || flags + n > sg.regs.len() {
                    return false;
                }
                let from = match src {
                    Operand::Reg(r) => Some(r as usize * n),
                    Operand::Const(_) => None,
                };
                if from == Some(value) {
                    // The variable's own row (a forwarded load of it stored back): its bits
                    // are kept already.
                } else {
                    match split_rows(&mut sg.regs, value, [from, None], n) {
                        Some((out, [Some(v), _])) => store_row(out, v, keep, mask, full),
                        Some((out, [None, _])) => {
                            let Operand::Const(c) = src else {
                                return false;
                            };
                            let at = c as usize * n;
                            match self.const_rows.get(at..at + n) {
                                Some(v) => store_row(out, v, keep, mask, full),
                                None => return false,
                            }
                        }
                        None => return false,
                    }
                }
                if mask == full {
                    sg.regs[flags..flags + n].fill(crate::translate::WRITTEN);
                } else {
                    for l in crate::num::lanes(mask) {
                        sg.regs[flags + l as usize] = crate::translate::WRITTEN;
                    }
                }
                true
            }
        }
    }
}

/// One result row of a compiled kernel: `dst` from the operand rows `ops` (registers or
/// constant rows) for the lanes of `mask`; false, having written nothing, where a lane needs
/// the general path (its check fails, a row is out of range or shared with the result).
/// `rows` are the registers, the constant rows and a scratch row. Inlined into both callers:
/// it is the hot path of every row operation.
#[inline(always)]
fn kernel_row(
    (regs, consts, tmp): (&mut [u64], &[u64], &mut Vec<u64>),
    (kernel, check): (crate::kernels::Kernel, crate::kernels::Check),
    dst: u32,
    ops: [Operand; 2],
    n: usize,
    (mask, full): (u128, u128),
) -> bool {
    let reg = |o: Operand| match o {
        Operand::Reg(r) => Some(r as usize * n),
        Operand::Const(_) => None,
    };
    let konst = |o: Operand| match o {
        Operand::Const(c) => consts.get(c as usize * n..(c as usize + 1) * n),
        Operand::Reg(_) => None,
    };
    let [a, b] = ops;
    let Some((out, [x, y])) = split_rows(regs, dst as usize * n, [reg(a), reg(b)], n) else {
        return false;
    };
    let (Some(x), Some(y)) = (x.or_else(|| konst(a)), y.or_else(|| konst(b))) else {
        return false;
    };
    if x.len() != n || y.len() != n || !check.holds(y, mask, full) {
        return false;
    }
    if mask == full {
        kernel(x, y, out);
    } else {
        // Every lane computed (the kernels are total) up to the highest active one (a partial
        // subgroup's mask ends well before the row does), the active ones kept.
        tmp.resize(n, 0);
        let top = (128 - mask.leading_zeros() as usize).min(n);
        kernel(&x[..top], &y[..top], &mut tmp[..top]);
        crate::kernels::blend(&mut out[..top], &tmp[..top], mask);
    }
    true
}

/// Leaf `c`'s row of an operand: from the registers or the constant rows.
#[inline]
fn operand_row<'a>(
    regs: &'a [u64],
    consts: &'a [u64],
    o: Operand,
    c: usize,
    n: usize,
) -> Option<&'a [u64]> {
    let (all, r) = match o {
        Operand::Reg(r) => (regs, r),
        Operand::Const(k) => (consts, k),
    };
    let at = (r as usize + c) * n;
    all.get(at..at + n)
}

/// Stores `v` kept to `keep` into `out` for the lanes of `mask`.
#[inline]
fn store_row(out: &mut [u64], v: &[u64], keep: u64, mask: u128, full: u128) {
    if mask == full {
        for (o, &x) in out.iter_mut().zip(v) {
            *o = x & keep;
        }
    } else {
        for l in crate::num::lanes(mask) {
            let l = l as usize;
            if let (Some(o), Some(&x)) = (out.get_mut(l), v.get(l)) {
                *o = x & keep;
            }
        }
    }
}

/// Whether every lane of `mask` has its written flag set in `flags`.
#[inline]
fn written(flags: &[u64], mask: u128, full: u128) -> bool {
    if mask == full {
        // A flag is WRITTEN (1) or an even number (the variable's id shifted left, or 0): the
        // low bits ANDed together are 1 only if every flag is WRITTEN (one AND per lane, which
        // the compiler vectorises).
        flags.iter().fold(u64::MAX, |all, &f| all & f) & 1 == crate::translate::WRITTEN
    } else {
        crate::num::lanes(mask).all(|l| flags.get(l as usize) == Some(&crate::translate::WRITTEN))
    }
}
