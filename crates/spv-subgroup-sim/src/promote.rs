//! Function variables kept in registers instead of memory (the classic promotion), and the
//! execution of the instructions that touch them.
//!
//! glslang's unoptimised output keeps every local in an `OpVariable` of the Function storage
//! class and reaches it through `OpLoad`, `OpStore` and `OpAccessChain`: in memory that is a
//! memory object per lane and call, and a byte-level read and write per leaf. A variable whose
//! pointer is used only as the pointer of `OpLoad` and `OpStore`, or as the base of an access
//! chain with constant, in-range indices whose result is used the same way, can never be
//! reached by anything else, so its leaves live in register rows, each with a row of "written"
//! flags. What a program observes is unchanged, bit for bit:
//! - a load of a leaf no lane's store wrote since the variable's `OpVariable` ran reads
//!   undefined bits, reported as "uninitialised memory of function variable %id", in the same
//!   order (lane by lane, leaf by leaf) as the memory path draws them;
//! - a store keeps what memory keeps (a leaf's bytes: integers and floats truncated to their
//!   width, a bool as `value != 0` of its four bytes);
//! - the step count and lane-instructions are the same (every instruction still runs; the access
//!   chain's pointer is simply never made).
//!
//! Any other use (a call argument, `OpCopyMemory`, an atomic, a phi, a pointer stored as a
//! value, a dynamic index) leaves the variable in memory, as before.

use std::collections::{HashMap, HashSet};

use crate::error::{malformed, Result};
use crate::exec::{Machine, Sg};
use crate::num::{lanes, mask as wmask};
use crate::translate::{Binding, IdKind, Local, Program, Src, WRITTEN};
use crate::types::{Scalar, Shape, TypeInfo};

/// Most leaves of a promoted variable (its rows are part of every subgroup's register file).
const MAX_PROMOTED_LEAVES: u32 = 256;

/// Most register rows all promoted variables take together (values and flags): at 128 lanes,
/// 8 MiB per subgroup at most, so the register file stays a small constant per lane.
const MAX_PROMOTED_ROWS: u32 = 8192;

/// The register file the executor accepts (`exec::dispatch`: registers times lanes); promotion
/// never takes a module that fits at 128 lanes over it.
const MAX_STATE_SLOTS: u32 = 1 << 27;

/// `Function` storage class.
const FUNCTION: u32 = spirv::StorageClass::Function as u32;

/// `Input` storage class.
const INPUT: u32 = spirv::StorageClass::Input as u32;

/// A pointer into a promotable variable: its root variable's id, first leaf and leaf count.
#[derive(Clone, Copy)]
struct Alias {
    root: u32,
    start: u32,
    leaves: u32,
    /// Pointee type id.
    pointee: u32,
}

/// Marks the variables that can live in registers and the instructions that reach them.
pub fn promote(p: &mut Program) {
    let mut alias: HashMap<u32, Alias> = HashMap::new();
    let small = |ty: u32| -> Option<(u32, u32)> {
        let pointee = pointee_of(p, ty)?;
        let t = p.types.get(pointee as usize).and_then(Option::as_ref)?;
        (t.size != 0 && t.leaves != 0 && t.leaves <= MAX_PROMOTED_LEAVES)
            .then_some((pointee, t.leaves))
    };
    // Roots: Function variables, and pointer parameters (bound to what each call passes), of a
    // type with a bounded, small layout.
    // Built-in Input variables (read-only: filled once per subgroup and workgroup) of a type
    // whose leaves cover its bytes.
    for g in &p.globals {
        if g.class != INPUT || g.builtin.is_none() {
            continue;
        }
        if let Some((pointee, leaves)) = p.id_ty.get(g.id as usize).and_then(|t| small(*t)) {
            let whole = p
                .types
                .get(pointee as usize)
                .and_then(Option::as_ref)
                .is_some_and(crate::exec::whole);
            if whole {
                alias.insert(
                    g.id,
                    Alias {
                        root: g.id,
                        start: 0,
                        leaves,
                        pointee,
                    },
                );
            }
        }
    }
    for f in &p.funcs {
        for inst in &f.insts {
            if inst.decoded != Some(spirv::Op::Variable) || inst.args.first() != Some(&FUNCTION) {
                continue;
            }
            if let Some((pointee, leaves)) = small(inst.ty) {
                alias.insert(
                    inst.id,
                    Alias {
                        root: inst.id,
                        start: 0,
                        leaves,
                        pointee,
                    },
                );
            }
        }
        for &id in &f.param_ids {
            if let Some((pointee, leaves)) = p.id_ty.get(id as usize).and_then(|t| small(*t)) {
                alias.insert(
                    id,
                    Alias {
                        root: id,
                        start: 0,
                        leaves,
                        pointee,
                    },
                );
            }
        }
    }
    // Access chains with constant, in-range indices into them (to a fixed point, so the order of
    // definitions does not matter).
    loop {
        let mut grew = false;
        for f in &p.funcs {
            for inst in &f.insts {
                if !is_chain(inst.decoded) || alias.contains_key(&inst.id) {
                    continue;
                }
                let Some(base) = inst.args.first().and_then(|b| alias.get(b)).copied() else {
                    continue;
                };
                if let Some(a) = constant_chain(p, base, &inst.args[1..]) {
                    alias.insert(inst.id, a);
                    grew = true;
                }
            }
        }
        if !grew {
            break;
        }
    }
    // Every use of every alias must be a load's or store's pointer, a promoted chain's base, or
    // a call's argument for a promoted parameter; every call must pass a promoted parameter a
    // promoted variable. Roots that fail are kept in memory, to a fixed point (a parameter kept
    // in memory needs real pointers from every caller, and the other way round).
    let mut escaped: HashSet<u32> = HashSet::new();
    // The budget of rows, given to roots in id order; the rest stay in memory (decided before
    // the fixed point below, so a parameter and the variables bound to it go together).
    let mut budget = MAX_PROMOTED_ROWS.min((MAX_STATE_SLOTS / 128).saturating_sub(p.nregs));
    let mut by_id: Vec<(u32, u32)> = alias
        .iter()
        .filter(|(id, a)| a.root == **id)
        .map(|(id, a)| (*id, a.leaves))
        .collect();
    by_id.sort_unstable();
    for (id, leaves) in by_id {
        match budget.checked_sub(2 * leaves) {
            Some(rest) => budget = rest,
            None => {
                escaped.insert(id);
            }
        }
    }
    let reg_of = |id: u32| match p.ids.get(id as usize) {
        Some(IdKind::Value(Src::Reg(r))) => Some(*r),
        _ => None,
    };
    let alias_regs: HashMap<u32, u32> = alias
        .iter()
        .filter_map(|(id, a)| reg_of(*id).map(|r| (r, a.root)))
        .collect();
    for f in &p.funcs {
        for blk in &f.blocks {
            for phi in &blk.phis {
                for (_, src) in &phi.incoming {
                    if let Some(root) = match src {
                        Src::Reg(r) => alias_regs.get(r),
                        _ => None,
                    } {
                        escaped.insert(*root);
                    }
                }
            }
        }
    }
    loop {
        let before = escaped.len();
        for f in &p.funcs {
            for inst in &f.insts {
                let callee = match (inst.decoded, inst.args.first()) {
                    (Some(spirv::Op::FunctionCall), Some(c)) => match p.ids.get(*c as usize) {
                        Some(IdKind::Func(f)) => p.funcs.get(*f as usize),
                        _ => None,
                    },
                    _ => None,
                };
                for (k, arg) in inst.args.iter().enumerate() {
                    // A call's promoted parameter must receive a promoted variable.
                    let param = match (callee, k) {
                        (Some(c), 1..) => c.param_ids.get(k - 1).filter(|q| alias.contains_key(q)),
                        _ => None,
                    };
                    let Some(a) = alias.get(arg) else {
                        if let Some(q) = param {
                            escaped.insert(*q);
                        }
                        continue;
                    };
                    let allowed = match (inst.decoded, k) {
                        (Some(spirv::Op::Load), 0) => same_layout(p, inst.ty, a.pointee),
                        (Some(spirv::Op::Store), 0) => inst
                            .args
                            .get(1)
                            .and_then(|v| p.id_ty.get(*v as usize))
                            .is_some_and(|vt| same_layout(p, *vt, a.pointee)),
                        (Some(spirv::Op::FunctionCall), 1..) => param.is_some_and(|q| {
                            // The same variable twice in one call would alias: memory.
                            let once = inst.args[1..]
                                .iter()
                                .filter(|x| alias.get(x).is_some_and(|b| b.root == a.root))
                                .count()
                                == 1;
                            once && !escaped.contains(q)
                                && alias
                                    .get(q)
                                    .is_some_and(|b| same_layout(p, b.pointee, a.pointee))
                        }),
                        (op, 0) => is_chain(op) && alias.contains_key(&inst.id),
                        _ => false,
                    };
                    if !allowed || escaped.contains(&a.root) {
                        escaped.insert(a.root);
                        if let Some(q) = param {
                            escaped.insert(*q);
                        }
                    }
                }
            }
        }
        if escaped.len() == before {
            break;
        }
    }
    // Registers for the promoted roots: the leaves' values, then their written flags.
    let mut rows: HashMap<u32, (u32, u32)> = HashMap::new();
    let mut roots: Vec<(u32, u32)> = alias
        .iter()
        .filter(|(id, a)| a.root == **id && !escaped.contains(*id))
        .map(|(id, a)| (*id, a.leaves))
        .collect();
    roots.sort_unstable();
    for (id, leaves) in roots {
        let Some(next) = p.nregs.checked_add(2 * leaves) else {
            continue;
        };
        rows.insert(id, (p.nregs, p.nregs + leaves));
        p.nregs = next;
    }
    let local_of = |id: u32| -> Option<Local> {
        let a = alias.get(&id)?;
        let (value, written) = *rows.get(&a.root)?;
        Some(Local {
            var: a.root,
            value: value + a.start,
            written: written + a.start,
            leaves: a.leaves,
        })
    };
    for g in &mut p.globals {
        g.promoted = local_of(g.id);
    }
    let funcs = std::mem::take(&mut p.funcs);
    let mut out = funcs.clone();
    for (f, g) in funcs.iter().zip(&mut out) {
        for (inst, ginst) in f.insts.iter().zip(&mut g.insts) {
            ginst.local = match inst.decoded {
                Some(spirv::Op::Variable) => local_of(inst.id),
                Some(spirv::Op::Load | spirv::Op::Store) => {
                    inst.args.first().and_then(|a| local_of(*a))
                }
                op if is_chain(op) => local_of(inst.id),
                _ => None,
            };
            if inst.decoded != Some(spirv::Op::FunctionCall) {
                continue;
            }
            let Some(IdKind::Func(c)) = inst.args.first().and_then(|c| p.ids.get(*c as usize))
            else {
                continue;
            };
            let Some(callee) = funcs.get(*c as usize) else {
                continue;
            };
            for (k, q) in callee.param_ids.iter().enumerate() {
                let arg = inst.args.get(k + 1).and_then(|a| local_of(*a));
                if let (Some(arg), Some(to)) = (arg, local_of(*q)) {
                    ginst.bindings.push(Binding {
                        param: k as u32,
                        arg,
                        to,
                    });
                }
            }
        }
    }
    p.funcs = out;
    forward_loads(p);
}

/// Lets the uses of a load of a promoted variable read the variable's rows themselves, where
/// that gives what the load's own copy would: every use is in the load's block, after it, and
/// nothing between the load and its last use writes the variable (a store, an `OpVariable`, a
/// call, or another load of it, whose undefined lanes' bits are drawn into those rows). The
/// load then only checks the written flags (and draws undefined bits into the variable's rows
/// for lanes never written, which no later load reads: each draws its own). glslang's
/// unoptimised code loads every local before each use, so this removes most copies.
fn forward_loads(p: &mut Program) {
    // Registers phis read: a value a phi reads is used outside its block.
    let mut phi_read: HashSet<u32> = HashSet::new();
    for f in &p.funcs {
        for blk in &f.blocks {
            for phi in &blk.phis {
                for (_, src) in &phi.incoming {
                    if let Src::Reg(r) = src {
                        phi_read.insert(*r);
                    }
                }
            }
        }
    }
    for fi in 0..p.funcs.len() {
        let f = &p.funcs[fi];
        // Each id's uses (operand words equal to it: literals may add false uses, which only
        // make the test stricter), as instruction indices.
        let mut uses: HashMap<u32, Vec<u32>> = HashMap::new();
        for (k, inst) in f.insts.iter().enumerate() {
            for a in &inst.args {
                uses.entry(*a).or_default().push(k as u32);
            }
        }
        let mut forwarded = Vec::new();
        for blk in &f.blocks {
            for i in blk.start..blk.end {
                let inst = &f.insts[i as usize];
                let Some(local) = inst.local else { continue };
                if inst.decoded != Some(spirv::Op::Load)
                    || inst.res == u32::MAX
                    || phi_read.contains(&inst.res)
                {
                    continue;
                }
                let Some(at) = uses.get(&inst.id) else {
                    // Never used: nothing to forward (the load still checks its flags).
                    continue;
                };
                if at.iter().any(|&u| u <= i || u >= blk.end) {
                    continue;
                }
                let last = at.iter().copied().max().unwrap_or(i);
                let writes_var = (i + 1..=last).any(|j| {
                    let other = &f.insts[j as usize];
                    match other.decoded {
                        Some(spirv::Op::FunctionCall) => true,
                        Some(spirv::Op::Store | spirv::Op::Load | spirv::Op::Variable) => {
                            other.local.is_some_and(|l| l.var == local.var)
                        }
                        _ => false,
                    }
                });
                if !writes_var {
                    forwarded.push((i, inst.id, local.value));
                }
            }
        }
        for (i, id, value) in forwarded {
            p.funcs[fi].insts[i as usize].forwarded = true;
            if let Some(slot) = p.ids.get_mut(id as usize) {
                *slot = IdKind::Value(Src::Reg(value));
            }
        }
    }
}

/// Undoes [`forward_loads`]: every load's uses read its own result again.
pub fn unforward(p: &mut Program) {
    for f in &mut p.funcs {
        for inst in &mut f.insts {
            if inst.forwarded {
                if let Some(slot) = p.ids.get_mut(inst.id as usize) {
                    *slot = IdKind::Value(Src::Reg(inst.res));
                }
            }
            inst.forwarded = false;
        }
    }
}

/// Undoes [`promote`]: every variable back in memory (the registers stay allocated, unused),
/// every load's uses reading its own result again.
pub fn unpromote(p: &mut Program) {
    unforward(p);
    for g in &mut p.globals {
        g.promoted = None;
    }
    for f in &mut p.funcs {
        for inst in &mut f.insts {
            inst.local = None;
            inst.bindings.clear();
        }
    }
}

fn is_chain(op: Option<spirv::Op>) -> bool {
    matches!(
        op,
        Some(spirv::Op::AccessChain | spirv::Op::InBoundsAccessChain)
    )
}

fn pointee_of(p: &Program, ptr_ty: u32) -> Option<u32> {
    match p.types.get(ptr_ty as usize).and_then(Option::as_ref)?.shape {
        Shape::Pointer { pointee } => Some(pointee),
        _ => None,
    }
}

/// Whether two types hold the same scalars in the same order (a load's result and the pointee).
fn same_layout(p: &Program, a: u32, b: u32) -> bool {
    let ty = |id: u32| p.types.get(id as usize).and_then(Option::as_ref);
    match (ty(a), ty(b)) {
        (Some(x), Some(y)) => {
            x.leaves == y.leaves
                && x.layout.len() == y.layout.len()
                && x.layout.iter().zip(&y.layout).all(|(l, m)| l.1 == m.1)
        }
        _ => false,
    }
}

/// The element a chain of constant indices reaches from `base`, if every index is a constant
/// in range (an index out of range keeps the memory path and its error).
fn constant_chain(p: &Program, base: Alias, indices: &[u32]) -> Option<Alias> {
    let ty = |id: u32| p.types.get(id as usize).and_then(Option::as_ref);
    let mut t: &TypeInfo = ty(base.pointee)?;
    let mut tid = base.pointee;
    let mut start = base.start;
    for &id in indices {
        let Some(IdKind::Value(Src::Const(k))) = p.ids.get(id as usize) else {
            return None;
        };
        let raw = *p.consts.get(*k as usize)?;
        let w = ty(*p.id_ty.get(id as usize)?)?
            .scalar_of()
            .map_or(32, Scalar::width);
        let i = crate::num::sext(w, raw);
        match &t.shape {
            Shape::Struct { members, .. } => {
                let k = usize::try_from(i).ok().filter(|k| *k < members.len())?;
                for m in &members[..k] {
                    start += ty(*m)?.leaves;
                }
                tid = members[k];
            }
            Shape::Array {
                elem,
                n,
                runtime: false,
                ..
            }
            | Shape::Vector { elem, n } => {
                let k = u32::try_from(i).ok().filter(|k| k < n)?;
                start += k * ty(*elem)?.leaves;
                tid = *elem;
            }
            _ => return None,
        }
        t = ty(tid)?;
    }
    Some(Alias {
        root: base.root,
        start,
        leaves: t.leaves,
        pointee: tid,
    })
}

/// What a leaf's bytes keep of `v` (as `Machine::store` then `Machine::load` give it back).
fn kept(s: Scalar, v: u64) -> u64 {
    match s {
        Scalar::Bool => u64::from(v & 0xffff_ffff != 0),
        Scalar::Ptr => v,
        _ => v & wmask(s.width()),
    }
}

impl Machine<'_> {
    /// Runs an instruction on a promoted variable for the lanes of `mask`.
    #[inline]
    pub fn local(
        &mut self,
        sg: &mut Sg,
        inst: &crate::translate::Inst,
        op: spirv::Op,
        local: Local,
        mask: u128,
    ) -> Result<()> {
        use spirv::Op as O;
        match op {
            // The pointer is never made: every use reads `local` instead.
            O::AccessChain | O::InBoundsAccessChain => Ok(()),
            O::Variable => {
                let t = match self.ty(inst.ty)?.shape {
                    Shape::Pointer { pointee } => self.ty(pointee)?,
                    _ => return Err(malformed("variable of a non-pointer type")),
                };
                match inst.args.get(1) {
                    Some(init) => {
                        let v = self.val(*init)?;
                        self.local_store(sg, local, v.0, v.1, t, mask);
                    }
                    None => {
                        // A fresh variable for this call: nothing written yet (the flag
                        // names the variable, for reports through a parameter bound to it).
                        let n = self.lanes as usize;
                        for c in 0..local.leaves {
                            let at = (local.written + c) as usize * n;
                            if let Some(row) = sg.regs.get_mut(at..at + n) {
                                for l in lanes(mask) {
                                    row[l as usize] = u64::from(local.var) << 1;
                                }
                            }
                        }
                    }
                }
                Ok(())
            }
            O::Store => {
                let id = *inst
                    .args
                    .get(1)
                    .ok_or_else(|| malformed("missing operand"))?;
                let v = self.val(id)?;
                self.local_store(sg, local, v.0, v.1, v.1, mask);
                Ok(())
            }
            O::Load => {
                let t = self.ty(inst.ty)?;
                // A forwarded load's uses read the variable's rows: the load only checks them.
                let res = if inst.forwarded {
                    local.value
                } else {
                    inst.res
                };
                self.local_load(sg, res, local, t, mask);
                Ok(())
            }
            _ => Err(malformed("an instruction on a promoted variable")),
        }
    }

    /// Stores the value `src` (of type `vt`) into the promoted leaves, kept as `t`'s scalars.
    fn local_store(
        &mut self,
        sg: &mut Sg,
        local: Local,
        src: Src,
        vt: &TypeInfo,
        t: &TypeInfo,
        mask: u128,
    ) {
        let n = self.lanes as usize;
        let scalar = |c: u32| t.layout.get(c as usize).map_or(Scalar::Ptr, |x| x.1);
        match src {
            Src::Reg(_) | Src::Const(_) | Src::None => {
                for c in 0..local.leaves {
                    let s = scalar(c);
                    let (dst, flags) = (
                        (local.value + c) as usize * n,
                        (local.written + c) as usize * n,
                    );
                    let len = sg.regs.len();
                    if dst + n > len || flags + n > len {
                        continue;
                    }
                    let full = mask == self.full_mask();
                    match src {
                        Src::Reg(r) if (r + c + 1) as usize * n <= len => {
                            let from = (r + c) as usize * n;
                            if full && s != Scalar::Bool {
                                // The common case as one loop the compiler can vectorise.
                                let m = kept(s, u64::MAX);
                                if from < dst {
                                    let (lo, hi) = sg.regs.split_at_mut(dst);
                                    for (x, v) in hi[..n].iter_mut().zip(&lo[from..from + n]) {
                                        *x = v & m;
                                    }
                                } else if from > dst {
                                    let (lo, hi) = sg.regs.split_at_mut(from);
                                    for (x, v) in lo[dst..dst + n].iter_mut().zip(&hi[..n]) {
                                        *x = v & m;
                                    }
                                }
                            } else {
                                for l in lanes(mask) {
                                    let l = l as usize;
                                    sg.regs[dst + l] = kept(s, sg.regs[from + l]);
                                }
                            }
                        }
                        _ => {
                            // A constant; a register out of range or no value reads 0.
                            let v = match src {
                                Src::Const(k) => {
                                    self.p.consts.get((k + c) as usize).copied().unwrap_or(0)
                                }
                                _ => 0,
                            };
                            let v = kept(s, v);
                            if full {
                                sg.regs[dst..dst + n].fill(v);
                            } else {
                                for l in lanes(mask) {
                                    sg.regs[dst + l as usize] = v;
                                }
                            }
                        }
                    }
                    if full {
                        sg.regs[flags..flags + n].fill(WRITTEN);
                    } else {
                        for l in lanes(mask) {
                            sg.regs[flags + l as usize] = WRITTEN;
                        }
                    }
                }
            }
            Src::Undef => {
                // Fresh bits per lane and leaf, drawn in the memory path's order.
                for l in lanes(mask) {
                    for c in 0..local.leaves {
                        let v = self.get(sg, (src, vt), c, l);
                        let s = scalar(c);
                        let l = l as usize;
                        if let Some(x) = sg.regs.get_mut((local.value + c) as usize * n + l) {
                            *x = kept(s, v);
                        }
                        if let Some(x) = sg.regs.get_mut((local.written + c) as usize * n + l) {
                            *x = WRITTEN;
                        }
                    }
                }
            }
        }
    }

    /// Loads the promoted leaves into the result `res` (of type `t`) for the lanes of `mask`.
    fn local_load(&mut self, sg: &mut Sg, res: u32, local: Local, t: &TypeInfo, mask: u128) {
        if res == u32::MAX {
            return;
        }
        let n = self.lanes as usize;
        let len = sg.regs.len();
        let in_range = |r: u32| (r + local.leaves) as usize * n <= len;
        if in_range(local.value) && in_range(local.written) && in_range(res) {
            // One pass: each leaf's values copied while its flags are checked; at the first
            // lane never written, the lane-by-lane path below redoes the whole load (it writes
            // the same values, and draws the undefined bits in the memory path's order).
            let full = self.full_mask();
            let mut all_written = true;
            'leaves: for c in 0..local.leaves {
                let (from, flags, to) = (
                    (local.value + c) as usize * n,
                    (local.written + c) as usize * n,
                    (res + c) as usize * n,
                );
                if mask == full {
                    if sg.regs[flags..flags + n].iter().any(|f| *f != WRITTEN) {
                        all_written = false;
                        break 'leaves;
                    }
                    if from != to {
                        sg.regs.copy_within(from..from + n, to);
                    }
                } else {
                    for l in lanes(mask) {
                        let l = l as usize;
                        if sg.regs[flags + l] != WRITTEN {
                            all_written = false;
                            break 'leaves;
                        }
                        sg.regs[to + l] = sg.regs[from + l];
                    }
                }
            }
            if all_written {
                return;
            }
        }
        // Some leaf of some lane was never written: lane by lane, leaf by leaf, as memory reads.
        for l in lanes(mask) {
            let l = l as usize;
            for c in 0..local.leaves {
                let flag = sg
                    .regs
                    .get((local.written + c) as usize * n + l)
                    .copied()
                    .unwrap_or(0);
                let v = if flag == WRITTEN {
                    sg.regs
                        .get((local.value + c) as usize * n + l)
                        .copied()
                        .unwrap_or(0)
                } else {
                    let s = t.layout.get(c as usize).map_or(Scalar::Ptr, |x| x.1);
                    let var = match (flag >> 1) as u32 {
                        0 => local.var,
                        v => v,
                    };
                    let name = format!(
                        "uninitialised memory of {}",
                        crate::exec::MemName::Function(var)
                    );
                    self.undefined(&name, s)
                };
                if let Some(x) = sg.regs.get_mut((res + c) as usize * n + l) {
                    *x = v;
                }
            }
        }
    }
}

impl Machine<'_> {
    /// At a call: copies each promoted variable passed into the callee parameter's rows.
    pub fn bind_in(&self, sg: &mut Sg, bindings: &[Binding], mask: u128) {
        for b in bindings {
            self.copy_rows(sg, b.arg, b.to, mask);
        }
    }

    /// When the callee of `bindings` returned: copies each parameter's rows back into the
    /// variable passed (the callee's stores through the pointer land there, as in memory).
    pub fn bind_out(&self, sg: &mut Sg, bindings: &[Binding], mask: u128) {
        for b in bindings {
            self.copy_rows(sg, b.to, b.arg, mask);
        }
    }

    /// Copies the value and flag rows of `from` to `to` for the lanes of `mask`.
    fn copy_rows(&self, sg: &mut Sg, from: Local, to: Local, mask: u128) {
        let n = self.lanes as usize;
        let full = self.full_mask();
        for c in 0..from.leaves.min(to.leaves) {
            for (a, b) in [(from.value, to.value), (from.written, to.written)] {
                let (src, dst) = ((a + c) as usize * n, (b + c) as usize * n);
                if src + n > sg.regs.len() || dst + n > sg.regs.len() {
                    continue;
                }
                if mask == full {
                    sg.regs.copy_within(src..src + n, dst);
                } else {
                    for l in lanes(mask) {
                        sg.regs[dst + l as usize] = sg.regs[src + l as usize];
                    }
                }
            }
        }
    }
}
