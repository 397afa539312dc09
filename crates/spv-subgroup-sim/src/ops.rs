//! Non-control instructions: memory and access chains, composites, elementwise arithmetic,
//! GLSL.std.450 and atomics; subgroup instructions go to [`crate::group`].

use crate::alu;
use crate::error::{malformed, unsupported, Error, ErrorKind, Result};
use crate::exec::{Machine, Sg};
use crate::num::lanes;
use crate::translate::{IdKind, Inst, MemForm, Src};
use crate::types::{Scalar, Shape, TypeInfo};

impl<'p> Machine<'p> {
    /// Executes a non-control instruction for the lanes of `mask`.
    pub fn compute(
        &mut self,
        sg: &mut Sg,
        inst: &'p Inst,
        op: spirv::Op,
        mask: u128,
    ) -> Result<()> {
        use spirv::Op as O;
        if let Some(local) = inst.local {
            return self.local(sg, inst, op, local, mask);
        }
        if let Some(r) = &inst.row {
            if self.run_row(sg, inst.res, r, mask) {
                return Ok(());
            }
        }
        if let Some(form) = &inst.mem {
            if self.mem_form(sg, form, inst.res, mask) {
                return Ok(());
            }
        }
        let arg = |k: usize| {
            inst.args
                .get(k)
                .copied()
                .ok_or_else(|| malformed("missing operand"))
        };
        let rty = if inst.ty != 0 {
            Some(self.ty(inst.ty)?)
        } else {
            None
        };
        let rleaves = rty.map_or(0, |t| t.leaves);
        match op {
            O::Variable => {
                let t = match rty.map(|t| &t.shape) {
                    Some(Shape::Pointer { pointee, .. }) => self.ty(*pointee)?,
                    _ => return Err(malformed("variable of a non-pointer type")),
                };
                let init = inst.args.get(1).map(|id| self.val(*id)).transpose()?;
                for l in lanes(mask) {
                    let ptr = self.alloc_local(sg, t.size, inst.id);
                    if let Some(v) = init {
                        let vals: Vec<u64> = (0..t.leaves).map(|c| self.get(sg, v, c, l)).collect();
                        self.store(ptr, t, &vals)?;
                    }
                    self.put(sg, inst, 0, l, ptr);
                }
            }
            O::Load => {
                let p = self.val(arg(0)?)?;
                let t = rty.ok_or_else(|| malformed("load without a type"))?;
                // A scalar through a register pointer: straight from the pointer row into the
                // result row, no buffer between.
                if let (Src::Reg(r), [(o, s)], true) =
                    (p.0, t.layout.as_slice(), inst.res != u32::MAX)
                {
                    if let Some(MemForm::FusedLoad { plan, chain, .. }) = inst.mem.as_deref() {
                        // The chain's pointers after all, as it would have made them (it made
                        // none: nothing between it and here changed what it reads).
                        self.chain_pointers(sg, plan, *chain, mask);
                    }
                    if self.load_row(sg, r, *o, *s, inst.res, mask) {
                        return Ok(());
                    }
                    let n = self.lanes as usize;
                    let (prow, orow) = (r as usize * n, inst.res as usize * n);
                    for l in lanes(mask) {
                        let l = l as usize;
                        let ptr = sg.regs.get(prow + l).copied().unwrap_or(0);
                        let v = self.load_scalar(ptr, *o, *s)?;
                        if let Some(x) = sg.regs.get_mut(orow + l) {
                            *x = v;
                        }
                    }
                    return Ok(());
                }
                let mut buf = std::mem::take(&mut self.scratch);
                for l in lanes(mask) {
                    buf.clear();
                    let ptr = self.get(sg, p, 0, l);
                    if let Err(e) = self.load(ptr, t, &mut buf) {
                        self.scratch = buf;
                        return Err(e);
                    }
                    for (c, v) in buf.iter().enumerate() {
                        self.put(sg, inst, c as u32, l, *v);
                    }
                }
                self.scratch = buf;
            }
            O::Store => {
                let p = self.val(arg(0)?)?;
                let v = self.val(arg(1)?)?;
                // A scalar through a register pointer: each lane's value straight from its row.
                if let (Src::Reg(r), [(o, s)]) = (p.0, v.1.layout.as_slice()) {
                    if self.store_row(sg, r, *o, *s, v.0, mask) {
                        return Ok(());
                    }
                    let n = self.lanes as usize;
                    let prow = r as usize * n;
                    for l in lanes(mask) {
                        let ptr = sg.regs.get(prow + l as usize).copied().unwrap_or(0);
                        let x = match v.0 {
                            Src::Reg(vr) => sg
                                .regs
                                .get(vr as usize * n + l as usize)
                                .copied()
                                .unwrap_or(0),
                            _ => self.get(sg, v, 0, l),
                        };
                        self.store_scalar(ptr, *o, *s, x)?;
                    }
                    return Ok(());
                }
                let mut buf = std::mem::take(&mut self.scratch);
                for l in lanes(mask) {
                    buf.clear();
                    for c in 0..v.1.leaves {
                        buf.push(self.get(sg, v, c, l));
                    }
                    let ptr = self.get(sg, p, 0, l);
                    if let Err(e) = self.store(ptr, v.1, &buf) {
                        self.scratch = buf;
                        return Err(e);
                    }
                }
                self.scratch = buf;
            }
            O::CopyMemory => {
                let (dst, src) = (self.val(arg(0)?)?, self.val(arg(1)?)?);
                let t = match &src.1.shape {
                    Shape::Pointer { pointee, .. } => self.ty(*pointee)?,
                    _ => return Err(malformed("OpCopyMemory of a non-pointer")),
                };
                let mut buf = Vec::new();
                for l in lanes(mask) {
                    buf.clear();
                    let (s, d) = (self.get(sg, src, 0, l), self.get(sg, dst, 0, l));
                    self.load(s, t, &mut buf)?;
                    self.store(d, t, &buf)?;
                }
            }
            O::AccessChain | O::InBoundsAccessChain => {
                // Resolved at translation where the types allow (else here, with its error).
                let computed;
                let plan = match &inst.chain {
                    Some(plan) => plan.as_ref(),
                    None => {
                        computed = crate::fast::chain_plan(self.p, inst)?;
                        &computed
                    }
                };
                self.chain_pointers(sg, plan, inst.res, mask);
            }
            O::ArrayLength => {
                let p = self.val(arg(0)?)?;
                let k = *inst
                    .args
                    .get(1)
                    .ok_or_else(|| malformed("OpArrayLength member"))?
                    as usize;
                let (off, stride) = match &p.1.shape {
                    Shape::Pointer { pointee, .. } => match &self.ty(*pointee)?.shape {
                        Shape::Struct { members, offsets } => {
                            let st = match self
                                .ty(*members.get(k).ok_or_else(|| malformed("member"))?)?
                                .shape
                            {
                                Shape::Array { stride, .. } => stride,
                                _ => return Err(malformed("OpArrayLength of a non-array member")),
                            };
                            (offsets[k], st)
                        }
                        _ => return Err(malformed("OpArrayLength of a non-struct")),
                    },
                    _ => return Err(malformed("OpArrayLength of a non-pointer")),
                };
                if let Src::Reg(r) = p.0 {
                    if self.array_length_row(sg, r, off, stride, inst.res, mask, false) {
                        return Ok(());
                    }
                }
                for l in lanes(mask) {
                    let ptr = self.get(sg, p, 0, l);
                    let len = self.mem_len((ptr >> 32) as usize) as u64;
                    let n = len.saturating_sub(u64::from(ptr as u32) + u64::from(off))
                        / u64::from(stride.max(1));
                    self.put(sg, inst, 0, l, n & 0xffff_ffff);
                }
            }
            O::CopyObject | O::CopyLogical => {
                let v = self.val(arg(0)?)?;
                self.copy_leaves(sg, inst, mask, &[(v, 0, rleaves)])?;
            }
            O::CompositeConstruct => {
                // Each constituent after the previous one, in order (no list of parts built).
                let mut at = 0;
                for &id in &inst.args {
                    let v = self.val(id)?;
                    self.copy_leaves_at(sg, inst, mask, at, &[(v, 0, v.1.leaves)])?;
                    at += v.1.leaves;
                }
            }
            O::CompositeExtract => {
                let v = self.val(arg(0)?)?;
                let (start, _) = sub_leaf(self, v.1, inst.args.get(1..).unwrap_or(&[]))?;
                self.copy_leaves(sg, inst, mask, &[(v, start, rleaves)])?;
            }
            O::CompositeInsert => {
                let obj = self.val(arg(0)?)?;
                let comp = self.val(arg(1)?)?;
                let (start, t) = sub_leaf(self, obj.1, inst.args.get(2..).unwrap_or(&[]))?;
                let n = t.leaves;
                self.copy_leaves(
                    sg,
                    inst,
                    mask,
                    &[
                        (obj, 0, start),
                        (comp, 0, n),
                        (obj, start + n, rleaves.saturating_sub(start + n)),
                    ],
                )?;
            }
            O::VectorShuffle => {
                let (a, b) = (self.val(arg(0)?)?, self.val(arg(1)?)?);
                let na = a.1.leaves;
                for l in lanes(mask) {
                    for (c, &k) in inst.args.get(2..).unwrap_or(&[]).iter().enumerate() {
                        let v = if k == u32::MAX {
                            let s = rty.and_then(TypeInfo::scalar_of).unwrap_or(Scalar::Int {
                                width: 32,
                                signed: false,
                            });
                            self.undefined("an OpVectorShuffle component 0xFFFFFFFF", s)
                        } else if k < na {
                            self.get(sg, a, k, l)
                        } else {
                            self.get(sg, b, k - na, l)
                        };
                        self.put(sg, inst, c as u32, l, v);
                    }
                }
            }
            O::VectorExtractDynamic | O::VectorInsertDynamic => {
                let v = self.val(arg(0)?)?;
                let ins = op == O::VectorInsertDynamic;
                let idx = self.val(arg(if ins { 2 } else { 1 })?)?;
                let comp = if ins { Some(self.val(arg(1)?)?) } else { None };
                let n = v.1.leaves;
                let s = v.1.scalar_of().unwrap_or(Scalar::Int {
                    width: 32,
                    signed: false,
                });
                for l in lanes(mask) {
                    let i = self.get(sg, idx, 0, l);
                    match comp {
                        None => {
                            let x = if i < u64::from(n) {
                                self.get(sg, v, i as u32, l)
                            } else {
                                self.undefined("OpVectorExtractDynamic out of range", s)
                            };
                            self.put(sg, inst, 0, l, x);
                        }
                        Some(cv) => {
                            for c in 0..n {
                                let x = if u64::from(c) == i {
                                    self.get(sg, cv, 0, l)
                                } else {
                                    self.get(sg, v, c, l)
                                };
                                self.put(sg, inst, c, l, x);
                            }
                        }
                    }
                }
            }
            O::Select => {
                let (c, a, b) = (self.val(arg(0)?)?, self.val(arg(1)?)?, self.val(arg(2)?)?);
                let per_comp = c.1.leaves > 1;
                let undef = [c.0, a.0, b.0].contains(&Src::Undef);
                if !undef && inst.res != u32::MAX {
                    // Row by row: no operand draws undefined bits, so the order is free.
                    let n = self.lanes as usize;
                    let full = self.full_mask();
                    let len = sg.regs.len();
                    // A row out of range reads 0, as `get` does.
                    let fix = |x: Leaf| match x {
                        Leaf::Row(r) if r + n <= len => x,
                        Leaf::Const(_) => x,
                        _ => Leaf::Const(0),
                    };
                    for k in 0..rleaves {
                        let cs = fix(self.leaf_src(c.0, if per_comp { k } else { 0 }, n));
                        let xa = fix(self.leaf_src(a.0, k, n));
                        let xb = fix(self.leaf_src(b.0, k, n));
                        let to = (inst.res as usize + k as usize) * n;
                        if to + n > len {
                            continue;
                        }
                        let at = |regs: &[u64], x: Leaf, l: usize| match x {
                            Leaf::Row(r) => regs[r + l],
                            Leaf::Const(v) => v,
                            Leaf::Undef(_) => 0,
                        };
                        if mask == full {
                            for l in 0..n {
                                let pick = if at(&sg.regs, cs, l) != 0 { xa } else { xb };
                                sg.regs[to + l] = at(&sg.regs, pick, l);
                            }
                        } else {
                            for l in lanes(mask) {
                                let l = l as usize;
                                let pick = if at(&sg.regs, cs, l) != 0 { xa } else { xb };
                                sg.regs[to + l] = at(&sg.regs, pick, l);
                            }
                        }
                    }
                    return Ok(());
                }
                for l in lanes(mask) {
                    for k in 0..rleaves {
                        let cond = self.get(sg, c, if per_comp { k } else { 0 }, l) != 0;
                        let x = if cond {
                            self.get(sg, a, k, l)
                        } else {
                            self.get(sg, b, k, l)
                        };
                        self.put(sg, inst, k, l, x);
                    }
                }
            }
            O::Bitcast => {
                let v = self.val(arg(0)?)?;
                let t = rty.ok_or_else(|| malformed("bitcast type"))?;
                if v.0 != Src::Undef && inst.res != u32::MAX {
                    // Straight from the operand's rows (no undefined bits to draw in order).
                    let n = self.lanes as usize;
                    if let ([_], [(_, s)]) = (v.1.layout.as_slice(), t.layout.as_slice()) {
                        // One leaf to one leaf (`floatBitsToUint` and the like): its low bits.
                        let m = crate::num::mask(s.bytes() * 8);
                        let out = inst.res as usize * n;
                        if out + n <= sg.regs.len() {
                            match self.leaf_src(v.0, 0, n) {
                                Leaf::Row(r) if r + n <= sg.regs.len() => {
                                    for l in lanes(mask) {
                                        sg.regs[out + l as usize] = sg.regs[r + l as usize] & m;
                                    }
                                }
                                // A constant, or a row out of range (read as 0, as `get` does).
                                src => {
                                    let x = match src {
                                        Leaf::Const(x) => x,
                                        _ => 0,
                                    };
                                    for l in lanes(mask) {
                                        sg.regs[out + l as usize] = x & m;
                                    }
                                }
                            }
                        }
                        return Ok(());
                    }
                    for l in lanes(mask) {
                        let l = l as usize;
                        let mut bits: u128 = 0;
                        let mut at = 0;
                        for (c, (_, s)) in v.1.layout.iter().enumerate() {
                            let x = match self.leaf_src(v.0, c as u32, n) {
                                Leaf::Row(r) => sg.regs.get(r + l).copied().unwrap_or(0),
                                Leaf::Const(x) => x,
                                Leaf::Undef(_) => 0,
                            };
                            bits |= u128::from(x) << at;
                            at += s.bytes() * 8;
                        }
                        let mut at = 0;
                        for (c, (_, s)) in t.layout.iter().enumerate() {
                            let w = s.bytes() * 8;
                            let x = ((bits >> at) as u64) & crate::num::mask(w);
                            at += w;
                            if let Some(slot) = sg.regs.get_mut((inst.res as usize + c) * n + l) {
                                *slot = x;
                            }
                        }
                    }
                    return Ok(());
                }
                for l in lanes(mask) {
                    let mut bits: u128 = 0;
                    let mut at = 0;
                    for (c, (_, s)) in v.1.layout.iter().enumerate() {
                        bits |= u128::from(self.get(sg, v, c as u32, l)) << at;
                        at += s.bytes() * 8;
                    }
                    let mut at = 0;
                    for (c, (_, s)) in t.layout.iter().enumerate() {
                        let w = s.bytes() * 8;
                        let x = ((bits >> at) as u64) & crate::num::mask(w);
                        at += w;
                        self.put(sg, inst, c as u32, l, x);
                    }
                }
            }
            O::Dot => {
                let (a, b) = (self.val(arg(0)?)?, self.val(arg(1)?)?);
                let w = a.1.scalar_of().map_or(32, Scalar::width);
                for l in lanes(mask) {
                    let mut acc = 0.0;
                    for c in 0..a.1.leaves {
                        acc += crate::num::fget(w, self.get(sg, a, c, l))
                            * crate::num::fget(w, self.get(sg, b, c, l));
                    }
                    self.put(sg, inst, 0, l, crate::num::fput(w, acc));
                }
            }
            O::VectorTimesScalar => {
                let (a, b) = (self.val(arg(0)?)?, self.val(arg(1)?)?);
                let w = a.1.scalar_of().map_or(32, Scalar::width);
                for l in lanes(mask) {
                    let s = crate::num::fget(w, self.get(sg, b, 0, l));
                    for c in 0..a.1.leaves {
                        let x = crate::num::fget(w, self.get(sg, a, c, l)) * s;
                        self.put(sg, inst, c, l, crate::num::fput(w, x));
                    }
                }
            }
            O::Any | O::All => {
                let v = self.val(arg(0)?)?;
                // Every component is read (undefined bits drawn in order), then combined.
                for l in lanes(mask) {
                    let (mut any, mut all) = (false, true);
                    for c in 0..v.1.leaves {
                        let b = self.get(sg, v, c, l) != 0;
                        any |= b;
                        all &= b;
                    }
                    let r = if op == O::Any { any } else { all };
                    self.put(sg, inst, 0, l, u64::from(r));
                }
            }
            O::BitFieldInsert | O::BitFieldSExtract | O::BitFieldUExtract => {
                let vals: Vec<_> = inst
                    .args
                    .iter()
                    .map(|id| self.val(*id))
                    .collect::<Result<_>>()?;
                let w = rty.and_then(TypeInfo::scalar_of).map_or(32, Scalar::width);
                let s = rty.and_then(TypeInfo::scalar_of).unwrap_or(Scalar::Int {
                    width: 32,
                    signed: false,
                });
                for l in lanes(mask) {
                    for c in 0..rleaves {
                        let xs: Vec<u64> = vals
                            .iter()
                            .enumerate()
                            .map(|(k, v)| {
                                // Offset and Count are scalars.
                                let cc = if (op == O::BitFieldInsert && k >= 2)
                                    || (op != O::BitFieldInsert && k >= 1)
                                {
                                    0
                                } else {
                                    c
                                };
                                self.get(sg, *v, cc, l)
                            })
                            .collect();
                        let r = match alu::bitfield(op, w, &xs) {
                            Some(r) => r,
                            None => self.undefined("a bit field beyond the width", s),
                        };
                        self.put(sg, inst, c, l, r);
                    }
                }
            }
            O::ExtInst => {
                if self.p.ids.get(arg(0)? as usize) != Some(&IdKind::Glsl) {
                    return Err(unsupported("extended instructions other than GLSL.std.450"));
                }
                self.glsl(sg, inst, arg(1)?, mask)?;
            }
            _ if crate::opclass::is_atomic(op) => self.atomic(sg, inst, op, mask)?,
            _ if inst.group => self.group(sg, inst, op, mask)?,
            _ => self.elementwise(sg, inst, op, mask)?,
        }
        Ok(())
    }

    /// Copies leaf ranges of values, in order, into the result: row by row for registers and
    /// constants, lane by lane only for `OpUndef` (fresh bits per lane).
    fn copy_leaves(
        &mut self,
        sg: &mut Sg,
        inst: &Inst,
        mask: u128,
        parts: &[((crate::translate::Src, &TypeInfo), u32, u32)],
    ) -> Result<()> {
        self.copy_leaves_at(sg, inst, mask, 0, parts)
    }

    /// [`Self::copy_leaves`] into the result's leaves from `first` on.
    fn copy_leaves_at(
        &mut self,
        sg: &mut Sg,
        inst: &Inst,
        mask: u128,
        first: u32,
        parts: &[((crate::translate::Src, &TypeInfo), u32, u32)],
    ) -> Result<()> {
        if inst.res == u32::MAX {
            return Ok(());
        }
        let n = self.lanes as usize;
        let full = self.full_mask();
        let len = sg.regs.len();
        let mut c = first;
        for &(v, start, count) in parts {
            for k in 0..count {
                let leaf = start + k;
                let to = (inst.res as usize + c as usize) * n;
                c += 1;
                if to + n > len {
                    continue;
                }
                // Straight from the operand's row into the result's (SSA: never the same row).
                match v.0 {
                    Src::Reg(r) if (r as usize + leaf as usize + 1) * n <= len => {
                        let from = (r as usize + leaf as usize) * n;
                        if mask == full {
                            sg.regs.copy_within(from..from + n, to);
                        } else {
                            for l in lanes(mask) {
                                sg.regs[to + l as usize] = sg.regs[from + l as usize];
                            }
                        }
                    }
                    Src::Undef => {
                        for l in lanes(mask) {
                            let x = self.get(sg, v, leaf, l);
                            sg.regs[to + l as usize] = x;
                        }
                    }
                    src => {
                        // A constant; a register out of range or no value reads 0.
                        let x = match src {
                            Src::Const(i) => self
                                .p
                                .consts
                                .get(i as usize + leaf as usize)
                                .copied()
                                .unwrap_or(0),
                            _ => 0,
                        };
                        if mask == full {
                            sg.regs[to..to + n].fill(x);
                        } else {
                            for l in lanes(mask) {
                                sg.regs[to + l as usize] = x;
                            }
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// An access chain's pointers for the lanes of `mask` into register `res` (none where it is
    /// `u32::MAX`): the row form, else lane by lane.
    pub(crate) fn chain_pointers(
        &mut self,
        sg: &mut Sg,
        plan: &crate::translate::ChainPlan,
        res: u32,
        mask: u128,
    ) {
        if self.chain_row(sg, plan, res, mask) {
            return;
        }
        let nl = self.lanes as usize;
        let len = sg.regs.len();
        for l in lanes(mask) {
            let ptr = match plan.base.0 {
                Src::Reg(r) => sg
                    .regs
                    .get(r as usize * nl + l as usize)
                    .copied()
                    .unwrap_or(0),
                src => self.get_leaf(sg, src, plan.base.1, l),
            };
            let mut off = u64::from(ptr as u32).saturating_add(plan.fixed);
            if plan.all_out {
                off = u64::from(u32::MAX);
            }
            for &(stride, n, idx, s) in &plan.steps {
                if plan.all_out {
                    break;
                }
                let x = match idx {
                    Src::Reg(r) if (r as usize + 1) * nl <= len => {
                        sg.regs[r as usize * nl + l as usize]
                    }
                    src => self.get_leaf(sg, src, s, l),
                };
                let i = crate::num::sext(s.width(), x);
                if i < 0 || (i as u64) >= n {
                    off = u64::from(u32::MAX);
                    break;
                }
                off = off.saturating_add((i as u64).saturating_mul(u64::from(stride)));
            }
            let off = off.min(u64::from(u32::MAX));
            if res != u32::MAX {
                if let Some(r) = sg.regs.get_mut(res as usize * nl + l as usize) {
                    *r = (ptr & !0xffff_ffff) | off;
                }
            }
        }
    }

    /// Leaf 0 of `src` at `lane`, its scalar `s` (what [`Machine::get`] reads: `OpUndef` draws
    /// undefined bits of that scalar).
    fn get_leaf(&mut self, sg: &Sg, src: Src, s: Scalar, lane: u32) -> u64 {
        let t = TypeInfo {
            shape: Shape::Scalar,
            leaves: 1,
            size: s.bytes(),
            align: s.bytes(),
            layout: Vec::new(),
        };
        match src {
            Src::Undef => self.undefined("an OpUndef value", s),
            _ => self.get(sg, (src, &t), 0, lane),
        }
    }

    /// Where leaf `c` of a value comes from for a whole row (a register row or a constant;
    /// `OpUndef` needs bits per lane and is `Leaf::Undef`).
    fn leaf_src(&self, src: Src, c: u32, n: usize) -> Leaf {
        match src {
            Src::Reg(r) => Leaf::Row((r as usize + c as usize) * n),
            Src::Const(i) => Leaf::Const(
                self.p
                    .consts
                    .get(i as usize + c as usize)
                    .copied()
                    .unwrap_or(0),
            ),
            Src::Undef => Leaf::Undef(0),
            Src::None => Leaf::Const(0),
        }
    }

    fn elementwise(&mut self, sg: &mut Sg, inst: &Inst, op: spirv::Op, mask: u128) -> Result<()> {
        let rt = self.ty(inst.ty)?;
        if inst.args.len() > MAX_ELEMENTWISE_ARGS {
            return Err(unsupported(format!(
                "instruction {}",
                crate::error::op_name(inst.op)
            )));
        }
        let nargs = inst.args.len();
        let mut vals = [(Src::None, &crate::exec::UNKNOWN); MAX_ELEMENTWISE_ARGS];
        for (k, id) in inst.args.iter().enumerate() {
            vals[k] = self.val(*id)?;
        }
        let vals = &vals[..nargs];
        let lanes_n = self.lanes as usize;
        let full = self.full_mask();
        // Component outermost, lanes innermost: each operand's source is resolved once per
        // component (a register row, a constant or `OpUndef`), not once per lane, and the lanes
        // of a register row are adjacent in `Sg::regs`.
        let mut srcs = [(Leaf::Const(0), Scalar::Bool); MAX_ELEMENTWISE_ARGS];
        let mut xs = [(0u64, Scalar::Bool); MAX_ELEMENTWISE_ARGS];
        for c in 0..rt.leaves {
            for (k, v) in vals.iter().enumerate() {
                let cc = if v.1.leaves > 1 { c } else { 0 };
                let s = v.1.layout.get(cc as usize).map_or(
                    Scalar::Int {
                        width: 32,
                        signed: false,
                    },
                    |x| x.1,
                );
                let leaf = match v.0 {
                    Src::Reg(r) => Leaf::Row((r as usize + cc as usize) * lanes_n),
                    Src::Const(i) => Leaf::Const(
                        self.p
                            .consts
                            .get(i as usize + cc as usize)
                            .copied()
                            .unwrap_or(0),
                    ),
                    Src::Undef => Leaf::Undef(k),
                    Src::None => Leaf::Const(0),
                };
                srcs[k] = (leaf, s);
            }
            let rs = rt.layout.get(c as usize).map_or(Scalar::Bool, |x| x.1);
            let out = (inst.res as usize + c as usize) * lanes_n;
            // The whole row at once where the operation is always defined and no operand is
            // `OpUndef` (whose bits are drawn per lane).
            if nargs >= 1
                && inst.res != u32::MAX
                && !srcs[..nargs].iter().any(|x| matches!(x.0, Leaf::Undef(_)))
            {
                let (sa, sb) = (srcs[0].1, srcs[if nargs > 1 { 1 } else { 0 }].1);
                let row_of = |k: usize| match srcs[k.min(nargs - 1)].0 {
                    Leaf::Row(b) => Ok(b),
                    Leaf::Const(x) => Err(x),
                    Leaf::Undef(_) => Err(0),
                };
                let (ra, rb) = (row_of(0), row_of(1));
                // Constant operands as rows of their value (only built where needed).
                let (ca, cb): (
                    [u64; crate::vector::MAX_LANES],
                    [u64; crate::vector::MAX_LANES],
                );
                if nargs <= 2 {
                    if let Some((dst, [a, b])) =
                        crate::vector::split_rows(&mut sg.regs, out, [ra.ok(), rb.ok()], lanes_n)
                    {
                        let a = match (a, ra) {
                            (Some(a), _) => a,
                            (None, Err(x)) => {
                                ca = [x; crate::vector::MAX_LANES];
                                &ca[..lanes_n]
                            }
                            (None, Ok(_)) => &[],
                        };
                        let b = match (b, rb) {
                            (Some(b), _) => b,
                            (None, Err(x)) => {
                                cb = [x; crate::vector::MAX_LANES];
                                &cb[..lanes_n]
                            }
                            (None, Ok(_)) => &[],
                        };
                        if a.len() == lanes_n
                            && b.len() == lanes_n
                            && crate::vector::row(op, rs, sa, sb, a, b, dst, mask, full)
                        {
                            continue;
                        }
                    }
                }
            }
            for l in lanes(mask) {
                for (k, &(leaf, s)) in srcs[..nargs].iter().enumerate() {
                    let x = match leaf {
                        Leaf::Row(b) => sg.regs.get(b + l as usize).copied().unwrap_or(0),
                        Leaf::Const(x) => x,
                        Leaf::Undef(k) => self.get(sg, vals[k], c, l),
                    };
                    xs[k] = (x, s);
                }
                let r = match alu::eval(op, rs, &xs[..nargs]) {
                    Ok(Some(r)) => r,
                    Ok(None) => {
                        let what = format!("the result of {} (division by zero, shift too wide, conversion out of range)", crate::error::op_name(inst.op));
                        self.undefined(&what, rs)
                    }
                    Err(()) => {
                        return Err(unsupported(format!(
                            "instruction {}",
                            crate::error::op_name(inst.op)
                        )))
                    }
                };
                if let Some(slot) = sg.regs.get_mut(out + l as usize) {
                    *slot = r;
                }
            }
        }
        Ok(())
    }

    fn atomic(&mut self, sg: &mut Sg, inst: &Inst, op: spirv::Op, mask: u128) -> Result<()> {
        use spirv::Op as O;
        let p = self.val(
            *inst
                .args
                .first()
                .ok_or_else(|| malformed("missing pointer"))?,
        )?;
        let t = match &p.1.shape {
            Shape::Pointer { pointee, .. } => self.ty(*pointee)?,
            _ => return Err(malformed("atomic on a non-pointer")),
        };
        let s = t
            .scalar_of()
            .ok_or_else(|| malformed("atomic on a composite"))?;
        let w = s.width();
        let value = match op {
            O::AtomicStore => {
                Some(self.val(*inst.args.get(3).ok_or_else(|| malformed("operand"))?)?)
            }
            O::AtomicCompareExchange => {
                Some(self.val(*inst.args.get(4).ok_or_else(|| malformed("operand"))?)?)
            }
            O::AtomicLoad | O::AtomicIIncrement | O::AtomicIDecrement => None,
            _ => Some(self.val(*inst.args.get(3).ok_or_else(|| malformed("operand"))?)?),
        };
        let cmp = if op == O::AtomicCompareExchange {
            Some(self.val(*inst.args.get(5).ok_or_else(|| malformed("operand"))?)?)
        } else {
            None
        };
        // Every lane at once where every lane can (`memrow/`).
        let (v, c) = (
            value.map_or(Src::None, |v| v.0),
            cmp.map_or(Src::None, |c| c.0),
        );
        if let Some(MemForm::FusedAtomic { plan, chain }) = inst.mem.as_deref() {
            if self.atomic_fused(sg, op, plan, s, (v, c), inst.res, mask) {
                return Ok(());
            }
            // The chain's pointers after all, as it would have made them.
            self.chain_pointers(sg, plan, *chain, mask);
        }
        if let Src::Reg(prow) = p.0 {
            if self.atomic_row(sg, op, prow, s, v, c, inst.res, mask) {
                return Ok(());
            }
        }
        let mut buf = Vec::new();
        let defer = self.atomic_deferrable(inst.id);
        for l in lanes(mask) {
            let ptr = self.get(sg, p, 0, l);
            let v = match value {
                Some(v) => self.get(sg, v, 0, l),
                None => 0,
            };
            // In a parallel run, a commuting atomic whose result nobody reads waits for the
            // commit as a delta (overlay.rs).
            if defer && self.atomic_delta(ptr, s, op, v) {
                continue;
            }
            buf.clear();
            self.load(ptr, t, &mut buf)?;
            let old = buf.first().copied().unwrap_or(0);
            let c = match cmp {
                Some(c) if op == O::AtomicCompareExchange => self.get(sg, c, 0, l),
                _ => 0,
            };
            if let Some(n) = atomic_result(op, w, old, v, c) {
                self.store(ptr, t, &[n])?;
            }
            self.put(sg, inst, 0, l, old);
        }
        Ok(())
    }
}

/// The value atomic `op` leaves in a `w`-bit word that held `old`, with operand `v` and
/// comparator `c` (`OpAtomicCompareExchange`); `None` where it writes nothing.
pub(crate) fn atomic_result(op: spirv::Op, w: u32, old: u64, v: u64, c: u64) -> Option<u64> {
    use spirv::Op as O;
    let m = crate::num::mask(w);
    let (a, b) = (|| crate::num::sext(w, old), || crate::num::sext(w, v));
    match op {
        O::AtomicLoad => None,
        O::AtomicStore | O::AtomicExchange => Some(v),
        O::AtomicCompareExchange => (old == c).then_some(v),
        O::AtomicIIncrement => Some(old.wrapping_add(1) & m),
        O::AtomicIDecrement => Some(old.wrapping_sub(1) & m),
        O::AtomicIAdd => Some(old.wrapping_add(v) & m),
        O::AtomicISub => Some(old.wrapping_sub(v) & m),
        O::AtomicSMin => Some(if b() < a() { v } else { old }),
        O::AtomicSMax => Some(if b() > a() { v } else { old }),
        O::AtomicUMin => Some(old.min(v)),
        O::AtomicUMax => Some(old.max(v)),
        O::AtomicAnd => Some(old & v),
        O::AtomicOr => Some(old | v),
        _ => Some(old ^ v),
    }
}

/// The first leaf and type of the element a literal index path selects.
fn sub_leaf<'p>(m: &Machine<'p>, mut t: &'p TypeInfo, path: &[u32]) -> Result<(u32, &'p TypeInfo)> {
    let mut start = 0;
    for &k in path {
        match &t.shape {
            Shape::Struct { members, .. } => {
                if k as usize >= members.len() {
                    return Err(malformed("composite index out of range"));
                }
                for mty in &members[..k as usize] {
                    start += m.ty(*mty)?.leaves;
                }
                t = m.ty(members[k as usize])?;
            }
            Shape::Array { elem, n, .. } | Shape::Vector { elem, n } => {
                if k >= *n {
                    return Err(Error::new(ErrorKind::OutOfBounds(format!(
                        "composite index {k} of {n} elements"
                    ))));
                }
                let e = m.ty(*elem)?;
                start += k * e.leaves;
                t = e;
            }
            _ => return Err(malformed("composite index into a scalar")),
        }
    }
    Ok((start, t))
}

/// Most operands of an elementwise instruction (`OpFMA`-like ops go through GLSL.std.450).
const MAX_ELEMENTWISE_ARGS: usize = 3;

/// Where an elementwise operand's component comes from, resolved once per instruction.
#[derive(Clone, Copy)]
enum Leaf {
    /// The first slot of a register row (add the lane).
    Row(usize),
    /// A constant.
    Const(u64),
    /// `OpUndef` (operand index): fresh undefined bits per lane.
    Undef(usize),
}
