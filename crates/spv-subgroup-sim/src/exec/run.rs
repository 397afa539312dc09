//! One subgroup's run: its operand values and results, lane by lane, and its control flow
//! (branches, phis, calls, barriers) under the active mask.
//!
//! # Reconvergence (the one place this rule lives)
//!
//! Each function activation keeps a list of pending (block, lane mask) pairs.
//! When the current block's terminator runs, each successor receives the lanes that branch to it
//! and those lanes wait in the list, merged with any lanes already waiting there.
//! The next block to run is always the pending block that comes first in the function's layout
//! order, with every lane waiting at it.
//! SPIR-V requires a block to appear after the blocks that dominate it, and structured control
//! flow (SPIR-V 2.11, "Structured Control Flow") lays a construct's blocks out before its merge
//! block, so lanes that leave a selection or loop early wait at the merge block until every lane
//! of the construct arrives: the selection/loop merge is where the divergent lanes of a construct
//! reconverge, as the spec's structured reconvergence and maximal-reconvergence rules say.
//! Lanes that take a back edge run the loop again before lanes that left it (the header comes
//! first in layout order), so a loop's exit lanes reconverge only after the last lane leaves.
//! A function call runs the callee with the caller's current mask and returns when all of those
//! lanes have returned.
//! `OpControlBarrier` with Workgroup execution scope suspends the subgroup; when every subgroup of
//! the workgroup is suspended at a barrier or finished, all resume.

use crate::error::{malformed, unsupported, Error, ErrorKind, Location, Result};
use crate::num::lanes;
use crate::translate::{IdKind, Inst, Program, Src};
use crate::types::{Scalar, TypeInfo};
use crate::Undefined;

use super::{Frame, Machine, Sg, State, UNKNOWN};

impl<'p> Machine<'p> {
    /// Fresh random bits (splitmix64).
    pub fn random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Records an undefined value and returns seeded random bits of `s`'s width.
    pub fn undefined(&mut self, what: &str, s: Scalar) -> u64 {
        self.undefined_total += 1;
        if self.report && self.undefined.len() < self.report_cap {
            let (word, op, id) = self.here;
            self.undefined.push(Undefined {
                what: what.to_owned(),
                location: Location::at(word, op, (id != 0).then_some(id)),
            });
        }
        let r = self.random();
        match s {
            Scalar::Bool => r & 1,
            Scalar::Ptr => u64::MAX,
            _ => r & crate::num::mask(s.width()),
        }
    }

    /// The type of a type id.
    pub fn ty(&self, id: u32) -> Result<&'p TypeInfo> {
        self.p.ty(id)
    }

    /// Where an operand id's value lives, with its type.
    pub fn val(&self, id: u32) -> Result<(Src, &'p TypeInfo)> {
        self.p.val(id)
    }

    /// Leaf `c` of a value at `lane`.
    pub fn get(&mut self, sg: &Sg, v: (Src, &TypeInfo), c: u32, lane: u32) -> u64 {
        match v.0 {
            // Out-of-range slots only arise from ill-typed modules; they read 0 rather than panic.
            Src::Reg(r) => sg
                .regs
                .get(slot(r, c, self.lanes, lane))
                .copied()
                .unwrap_or(0),
            Src::Const(k) => self
                .p
                .consts
                .get(k as usize + c as usize)
                .copied()
                .unwrap_or(0),
            Src::Undef => {
                let s = v.1.layout.get(c as usize).map_or(
                    Scalar::Int {
                        width: 32,
                        signed: false,
                    },
                    |l| l.1,
                );
                self.undefined("an OpUndef value", s)
            }
            Src::None => 0,
        }
    }

    /// A constant scalar operand (scopes, cluster sizes).
    pub fn constant(&self, id: u32) -> Result<u64> {
        self.p.constant(id)
    }

    fn write(&self, sg: &mut Sg, res: u32, c: u32, lane: u32, v: u64) {
        if let Some(r) = sg.regs.get_mut(slot(res, c, self.lanes, lane)) {
            *r = v;
        }
    }

    /// Copies `leaves` leaves of `v` into the registers from `dst` for the lanes of `mask`: row
    /// by row, or lane by lane (leaves inner) for `OpUndef`, whose bits are drawn in that order.
    fn copy_value(&mut self, sg: &mut Sg, v: (Src, &TypeInfo), leaves: u32, dst: u32, mask: u128) {
        let n = self.lanes as usize;
        match v.0 {
            Src::Undef => {
                for l in lanes(mask) {
                    for c in 0..leaves {
                        let x = self.get(sg, v, c, l);
                        self.write(sg, dst, c, l, x);
                    }
                }
            }
            src => {
                let full = self.full_mask();
                for c in 0..leaves {
                    let to = (dst + c) as usize * n;
                    if to + n > sg.regs.len() {
                        continue;
                    }
                    match src {
                        Src::Reg(r) => {
                            let from = (r + c) as usize * n;
                            if from + n > sg.regs.len() {
                                // Out-of-range slots read 0, as `get` does.
                                for l in lanes(mask) {
                                    sg.regs[to + l as usize] = 0;
                                }
                            } else if mask == full {
                                sg.regs.copy_within(from..from + n, to);
                            } else {
                                for l in lanes(mask) {
                                    sg.regs[to + l as usize] = sg.regs[from + l as usize];
                                }
                            }
                        }
                        _ => {
                            let x = match src {
                                Src::Const(k) => {
                                    self.p.consts.get((k + c) as usize).copied().unwrap_or(0)
                                }
                                _ => 0,
                            };
                            for l in lanes(mask) {
                                sg.regs[to + l as usize] = x;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Moves `mask` lanes from block `from` to block `to` of the top frame: phis, then pending.
    fn goto(&mut self, sg: &mut Sg, from: u32, to: u32, mask: u128) -> Result<()> {
        if mask == 0 {
            return Ok(());
        }
        let Some(frame) = sg.frames.last() else {
            return Ok(());
        };
        let func = &self.p.funcs[frame.func as usize];
        let blk = func
            .blocks
            .get(to as usize)
            .ok_or_else(|| malformed("branch to a missing block"))?;
        if !blk.phis.is_empty() {
            self.phis(sg, func, blk, from, mask)?;
        }
        let frame = sg.frames.last_mut().ok_or_else(|| malformed("no frame"))?;
        match frame.pending.iter_mut().find(|(b, _)| *b == to) {
            Some(e) => e.1 |= mask,
            None => frame.pending.push((to, mask)),
        }
        Ok(())
    }

    /// Writes the phis of block `blk` of `func` for the lanes of `mask` entering it from block
    /// `from`.
    fn phis(
        &mut self,
        sg: &mut Sg,
        func: &'p crate::translate::Func,
        blk: &'p crate::translate::Block,
        from: u32,
        mask: u128,
    ) -> Result<()> {
        // Every phi reads its input before any phi of the block is written (they are parallel
        // copies): whole rows are staged, then written for the lanes of `mask`.
        let n = self.lanes as usize;
        let mut staged = std::mem::take(&mut self.phi_rows);
        staged.clear();
        for phi in &blk.phis {
            let src = phi
                .incoming
                .iter()
                .find(|(p, _)| *p == from)
                .map(|x| x.1)
                .ok_or_else(|| {
                    malformed(format!(
                        "OpPhi of %{} has no value for the edge from %{}",
                        blk.label, func.blocks[from as usize].label
                    ))
                    .at(&Location::at(phi.word, spirv::Op::Phi as u32, None))
                })?;
            let ti = self.phi_type(phi.res, phi.leaves);
            for c in 0..phi.leaves {
                match src {
                    Src::Reg(r) => {
                        let at = (r as usize + c as usize) * n;
                        match sg.regs.get(at..at + n) {
                            Some(row) => staged.extend_from_slice(row),
                            None => staged.resize(staged.len() + n, 0),
                        }
                    }
                    _ => {
                        let base = staged.len();
                        staged.resize(base + n, 0);
                        for lane in lanes(mask) {
                            let v = self.get(sg, (src, ti), c, lane);
                            if let Some(x) = staged.get_mut(base + lane as usize) {
                                *x = v;
                            }
                        }
                    }
                }
            }
        }
        let mut rows = staged.chunks_exact(n.max(1));
        for phi in &blk.phis {
            for c in 0..phi.leaves {
                let (Some(row), Some(dst)) = (rows.next(), {
                    let at = (phi.res as usize + c as usize) * n;
                    sg.regs.get_mut(at..at + n)
                }) else {
                    continue;
                };
                copy_lanes(dst, row, mask, self.full_mask());
            }
        }
        self.phi_rows = staged;
        Ok(())
    }

    fn phi_type(&self, _res: u32, leaves: u32) -> &'p TypeInfo {
        // Undefined phi inputs need a scalar type for their width; 64 random bits masked later is fine
        // only for the leaf count, so use a 32-bit integer layout of the right length where unknown.
        let _ = leaves;
        &UNKNOWN
    }

    /// Runs subgroup `sg` until it finishes or reaches a workgroup barrier.
    pub(super) fn run_sg(&mut self, sg: &mut Sg) -> Result<()> {
        while sg.state == State::Running {
            let Some(frame) = sg.frames.last_mut() else {
                sg.state = State::Done;
                break;
            };
            let Some((block, pc, mask)) = frame.cur else {
                // Pick the first pending block in layout order.
                let Some(k) = frame
                    .pending
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, (b, _))| *b)
                    .map(|x| x.0)
                else {
                    // The call returned: its Function variables are free for the next ones, so
                    // memory stays bounded however many calls run (a dangling pointer to one
                    // is undefined behaviour in SPIR-V; it reads whatever the next user wrote).
                    if let Some(done) = sg.frames.pop() {
                        self.free.extend(done.locals);
                    }
                    // The caller resumes after its call: variables it passed as promoted
                    // parameters get back what the callee stored.
                    if let Some(caller) = sg.frames.last() {
                        if let Some((_, pc, m)) = caller.cur {
                            let insts = &self.p.funcs[caller.func as usize].insts;
                            if let Some(call) =
                                (pc as usize).checked_sub(1).and_then(|i| insts.get(i))
                            {
                                if !call.bindings.is_empty() {
                                    self.bind_out(sg, &call.bindings, m);
                                }
                            }
                        }
                    }
                    continue;
                };
                let (b, m) = frame.pending.swap_remove(k);
                let start = self.p.funcs[frame.func as usize].blocks[b as usize].start;
                frame.cur = Some((b, start, m));
                // Its rows (and its phis', written on the way in) are zeroed after the workgroup.
                sg.written.enter(&self.files.table, frame.func, b);
                continue;
            };
            let fidx = frame.func as usize;
            let program: &'p Program = self.p;
            let func = &program.funcs[fidx];
            let (mut block, mut mask) = (block, mask);
            let mut end = func.blocks[block as usize].end;
            let mut lane_count = u64::from(mask.count_ones());
            // The block's instructions back to back: only one that may leave the block (a
            // terminator, a call, a barrier) records where the frame resumes and ends the run.
            let mut pc = pc;
            loop {
                if pc >= end {
                    return Err(malformed(format!(
                        "block %{} has no terminator",
                        func.blocks[block as usize].label
                    )));
                }
                let inst = &func.insts[pc as usize];
                self.steps += 1;
                self.lane_steps += lane_count;
                if self.steps > self.step_limit {
                    return Err(
                        Error::new(ErrorKind::StepLimit(self.step_limit)).at(&inst.location())
                    );
                }
                if let Some((marks, counts)) = self.trace.as_mut() {
                    let i = pc as usize;
                    if marks
                        .get(fidx)
                        .and_then(|m| m.get(i))
                        .is_some_and(Option::is_some)
                    {
                        if let Some(c) = counts.get_mut(fidx).and_then(|c| c.get_mut(i)) {
                            *c += 1;
                        }
                    }
                }
                pc += 1;
                // The straight-line form, the row form and promoted variables straight away
                // (no decoding on the way).
                if let Some(f) = &inst.fast {
                    if self.run_fast(sg, f, mask) {
                        continue;
                    }
                }
                // A branch all of whose lanes go one way, where nothing else waits in the
                // frame: straight on into the target.
                if let Some(to) = self.straight_branch(sg, inst, mask) {
                    block = to;
                    pc = func.blocks[to as usize].start;
                    end = func.blocks[to as usize].end;
                    if let Some(f) = sg.frames.last_mut() {
                        f.cur = Some((to, pc, mask));
                    }
                    // Marked for zeroing, as where the outer loop picks it.
                    sg.written.enter(&self.files.table, fidx as u32, to);
                    continue;
                }
                // Where undefined values are reported from (the straight-line form never
                // reports one: it gives such lanes to the paths below).
                self.here = (inst.word, inst.op, inst.id);
                if let Some(r) = &inst.row {
                    if self.run_row(sg, inst.res, r, mask) {
                        continue;
                    }
                }
                if let Some(g) = &inst.grp {
                    if self.group_row(sg, inst, g, mask) {
                        continue;
                    }
                }
                if let (Some(local), Some(op)) = (inst.local, inst.decoded) {
                    self.local(sg, inst, op, local, mask)
                        .map_err(|e| e.at(&inst.location()))?;
                    continue;
                }
                let leaves = leaves_block(inst.decoded);
                if leaves {
                    if let Some(f) = sg.frames.last_mut() {
                        f.cur = Some((block, pc, mask));
                    }
                }
                self.exec(sg, inst, block, mask)
                    .map_err(|e| e.at(&inst.location()))?;
                if leaves {
                    // A branch that left one block pending in this frame: that block is the
                    // one the outer loop would pick (the first pending in layout order), so it
                    // runs straight on.
                    if matches!(
                        inst.decoded,
                        Some(spirv::Op::Branch | spirv::Op::BranchConditional | spirv::Op::Switch)
                    ) {
                        if let Some(f) = sg.frames.last_mut() {
                            if f.pending.len() == 1 && f.cur.is_none() {
                                if let Some((b, m)) = f.pending.pop() {
                                    block = b;
                                    mask = m;
                                    pc = func.blocks[b as usize].start;
                                    end = func.blocks[b as usize].end;
                                    lane_count = u64::from(m.count_ones());
                                    f.cur = Some((b, pc, m));
                                    // Marked for zeroing, as where the outer loop picks it.
                                    sg.written.enter(&self.files.table, fidx as u32, b);
                                    continue;
                                }
                            }
                        }
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// For an `OpBranch`, or an `OpBranchConditional` whose condition (a register row) sends
    /// every lane of `mask` the same way, into a block without phis while no other block of
    /// the frame is pending: the target block, which then simply runs next with the same mask
    /// (what `exec`, `goto` and the executor's straight-on continuation would do, without the
    /// pending list or the phi staging). None, having changed nothing, otherwise: the general
    /// path then takes it. Its operands were resolved at translation (`Inst::branch`, none
    /// where the general path would fail on them, nor with the general paths only:
    /// `Module::with_general_paths_only`, so tests compare the two).
    #[inline]
    fn straight_branch(&self, sg: &Sg, inst: &Inst, mask: u128) -> Option<u32> {
        let br = inst.branch?;
        let to = match br.cond {
            None => br.to[0],
            Some(r) => {
                let n = self.lanes as usize;
                let row = sg.regs.get(r as usize * n..(r as usize + 1) * n)?;
                // The true lanes as the general path gathers them (`row_mask`).
                let taken = row_mask(row) & mask;
                if taken == mask {
                    br.to[0]
                } else if taken == 0 {
                    br.to[1]
                } else {
                    return None;
                }
            }
        };
        let frame = sg.frames.last()?;
        let target = self.p.funcs[frame.func as usize].blocks.get(to as usize)?;
        (mask != 0 && frame.pending.is_empty() && target.phis.is_empty()).then_some(to)
    }

    fn exec(&mut self, sg: &mut Sg, inst: &'p Inst, block: u32, mask: u128) -> Result<()> {
        use spirv::Op as O;
        let op = inst
            .decoded
            .ok_or_else(|| unsupported("an unknown opcode"))?;
        let arg = |k: usize| {
            inst.args
                .get(k)
                .copied()
                .ok_or_else(|| malformed("missing operand"))
        };
        match op {
            O::Branch => {
                let to = self.block(arg(0)?)?;
                self.end_block(sg);
                self.goto(sg, block, to, mask)?;
            }
            O::BranchConditional => {
                let c = self.val(arg(0)?)?;
                let (t, f) = (self.block(arg(1)?)?, self.block(arg(2)?)?);
                let mut tm = 0u128;
                let n = self.lanes as usize;
                match c.0 {
                    // The whole row at once (inactive lanes masked off after).
                    Src::Reg(r) => {
                        if let Some(row) = sg.regs.get(r as usize * n..(r as usize + 1) * n) {
                            tm = row_mask(row);
                        }
                        tm &= mask;
                    }
                    _ => {
                        for l in lanes(mask) {
                            if self.get(sg, c, 0, l) != 0 {
                                tm |= 1 << l;
                            }
                        }
                    }
                }
                self.end_block(sg);
                self.goto(sg, block, t, tm)?;
                self.goto(sg, block, f, mask & !tm)?;
            }
            O::Switch => {
                let sel = self.val(arg(0)?)?;
                let default = self.block(arg(1)?)?;
                let wide = sel.1.scalar_of().is_some_and(|s| s.width() > 32);
                let step = if wide { 3 } else { 2 };
                let mut targets: Vec<(u64, u32)> = Vec::new();
                for case in inst.args.get(2..).unwrap_or(&[]).chunks(step) {
                    if case.len() != step {
                        return Err(malformed("OpSwitch operands"));
                    }
                    let lit = if wide {
                        u64::from(case[0]) | (u64::from(case[1]) << 32)
                    } else {
                        u64::from(case[0])
                    };
                    targets.push((lit, self.block(case[step - 1])?));
                }
                let mut masks: Vec<(u32, u128)> = Vec::new();
                for l in lanes(mask) {
                    let v = self.get(sg, sel, 0, l);
                    let to = targets.iter().find(|t| t.0 == v).map_or(default, |t| t.1);
                    match masks.iter_mut().find(|m| m.0 == to) {
                        Some(m) => m.1 |= 1 << l,
                        None => masks.push((to, 1 << l)),
                    }
                }
                self.end_block(sg);
                for (to, m) in masks {
                    self.goto(sg, block, to, m)?;
                }
            }
            O::Return => self.end_block(sg),
            O::ReturnValue => {
                let v = self.val(arg(0)?)?;
                let ret = sg.frames.last().and_then(|f| f.ret);
                if let Some(res) = ret {
                    self.copy_value(sg, v, v.1.leaves, res, mask);
                }
                self.end_block(sg);
            }
            O::Unreachable => {
                return Err(unsupported("reached OpUnreachable (undefined behaviour)"))
            }
            O::Kill | O::TerminateInvocation => {
                return Err(unsupported("OpKill in a compute shader"))
            }
            O::FunctionCall => {
                let callee = match self.p.ids.get(arg(0)? as usize) {
                    Some(IdKind::Func(f)) => *f,
                    _ => return Err(malformed("OpFunctionCall of a non-function")),
                };
                let func = &self.p.funcs[callee as usize];
                if func.params.len() != inst.args.len() - 1 {
                    return Err(malformed("OpFunctionCall with the wrong argument count"));
                }
                if sg.frames.len() > 256 {
                    return Err(unsupported("calls nested more than 256 deep (recursion?)"));
                }
                self.bind_in(sg, &inst.bindings, mask);
                for (k, &(reg, leaves)) in func.params.iter().enumerate() {
                    if inst.bindings.iter().any(|b| b.param as usize == k) {
                        continue;
                    }
                    let v = self.val(inst.args[k + 1])?;
                    self.copy_value(sg, v, leaves, reg, mask);
                }
                sg.frames.push(Frame {
                    func: callee,
                    pending: vec![(0, mask)],
                    cur: None,
                    ret: (inst.res != u32::MAX).then_some(inst.res),
                    locals: Vec::new(),
                });
            }
            O::ControlBarrier => {
                let scope = self.constant(arg(0)?)?;
                if scope == spirv::Scope::Workgroup as u64 {
                    // Every invocation of the workgroup must execute the same dynamic instance
                    // of a workgroup barrier (SPIR-V, OpControlBarrier): one reached by some lanes
                    // of a subgroup only is undefined behaviour, reported rather than run.
                    if mask != sg.exists {
                        return Err(unsupported(format!(
                            "OpControlBarrier with Workgroup scope in non-uniform control flow: \
                             lanes {:#x} of this subgroup are here, lanes {:#x} are not \
                             (undefined behaviour)",
                            mask,
                            sg.exists & !mask
                        )));
                    }
                    sg.state = State::Barrier;
                    sg.waiting_at = Some(inst.location());
                } else if scope != spirv::Scope::Subgroup as u64
                    && scope != spirv::Scope::Invocation as u64
                {
                    return Err(unsupported(format!(
                        "OpControlBarrier with execution scope {scope}"
                    )));
                }
            }
            O::MemoryBarrier => {}
            _ => self.compute(sg, inst, op, mask)?,
        }
        Ok(())
    }

    fn end_block(&self, sg: &mut Sg) {
        if let Some(f) = sg.frames.last_mut() {
            f.cur = None;
        }
    }

    fn block(&self, id: u32) -> Result<u32> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Block(_, b)) => Ok(*b),
            _ => Err(malformed(format!("%{id} is not a block"))),
        }
    }

    /// Every lane of the subgroup.
    #[inline]
    pub fn full_mask(&self) -> u128 {
        self.full
    }

    /// Writes a result for one lane.
    pub fn put(&self, sg: &mut Sg, inst: &Inst, c: u32, lane: u32, v: u64) {
        if inst.res != u32::MAX {
            self.write(sg, inst.res, c, lane, v);
        }
    }
}

/// Whether an instruction may leave its block or suspend the subgroup (terminators, calls,
/// barriers): the executor records where the frame resumes before running one.
fn leaves_block(op: Option<spirv::Op>) -> bool {
    use spirv::Op as O;
    !matches!(op, Some(o) if !matches!(
        o,
        O::Branch
            | O::BranchConditional
            | O::Switch
            | O::Return
            | O::ReturnValue
            | O::FunctionCall
            | O::ControlBarrier
            | O::Unreachable
            | O::Kill
            | O::TerminateInvocation
    ))
}

/// Copies the lanes of `mask` from `src` to `dst` (the whole row when every lane is active).
pub fn copy_lanes(dst: &mut [u64], src: &[u64], mask: u128, full: u128) {
    if mask == full && dst.len() == src.len() {
        dst.copy_from_slice(src);
    } else {
        for l in lanes(mask) {
            if let (Some(d), Some(s)) = (dst.get_mut(l as usize), src.get(l as usize)) {
                *d = *s;
            }
        }
    }
}

/// The lanes of a row (at most 128) whose value is not zero (a condition's true lanes).
#[inline]
fn row_mask(row: &[u64]) -> u128 {
    // 8 lanes at a time into a byte, 64 into a word (a 128-bit shift per lane costs several
    // instructions).
    let half = |lanes: &[u64]| {
        let mut m = 0u64;
        let mut bytes = lanes.chunks_exact(8);
        for (k, eight) in (&mut bytes).enumerate() {
            let mut b = 0u64;
            for (i, &x) in eight.iter().enumerate() {
                b |= u64::from(x != 0) << i;
            }
            m |= b << (8 * k);
        }
        let done = lanes.len() - bytes.remainder().len();
        for (i, &x) in bytes.remainder().iter().enumerate() {
            m |= u64::from(x != 0) << (done + i);
        }
        u128::from(m)
    };
    let (lo, hi) = row.split_at(row.len().min(64));
    half(lo) | half(hi) << 64
}

/// The index of register slot `r + c` at `lane`.
fn slot(r: u32, c: u32, lanes: u32, lane: u32) -> usize {
    (r as usize + c as usize) * lanes as usize + lane as usize
}
