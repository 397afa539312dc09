//! Loads, stores, atomics, access chains and `OpArrayLength` on buffers, push constants and
//! Workgroup memory over a whole row of lanes: the pointer row read once per lane, the memory
//! object looked up once per run of lanes on the same object, the bytes moved straight between
//! the object and the register rows, with no `Result`, layout walk or scratch vector per lane.
//!
//! Each function here is a fast path in front of the per-lane path of `ops.rs` and returns
//! false, having changed nothing that path would not change the same way, whenever a lane needs
//! that path: a pointer to no object, an access out of bounds (whose error the per-lane path
//! words), a read of uninitialised bytes (whose undefined value it reports, in order), a store or
//! atomic on a shared object of a parallel run (whose bytes are the overlay's), an `OpUndef`
//! operand (whose bits are drawn per lane). Loads from a shared object of a parallel run take
//! the row form where the workgroup reads the batch's base unchanged (it wrote nothing there and
//! no deferred atomic waits: `Overlay::clean`), marking each word read as the overlay's own
//! read does; from one the module never writes (`Overlay::frozen`, `crate::readonly`) they read
//! its bytes as a buffer of a sequential run is read, with no marks. A row whose lanes all
//! point into one object whose bytes are all written takes a plain loop specialised by width
//! (every lane active: straight over the rows). A load or an atomic whose pointer is an access
//! chain of its block that nothing else reads is done with the chain (`prepare`, `load_fused`,
//! `atomic_fused`): each lane's address from its index, no pointer row written and read back;
//! where a lane needs more, the chain's pointers are made then and the instruction goes on as
//! above. Loads and stores may have done part of their lanes before giving up: the per-lane
//! path then does those lanes again from the first, in the same order and with the same values,
//! so memory and registers end the same. Atomics are not idempotent, so they check every lane
//! before changing anything.

use crate::exec::{Machine, Sg};
use crate::num::{lanes, read_le, write_le};
use crate::translate::{ChainPlan, MemForm, Src};
use crate::types::Scalar;
use crate::vector::split_rows;

/// Whether `s` is a scalar the row forms move (pointers stored in memory keep the per-lane
/// path).
fn plain(s: Scalar) -> bool {
    !matches!(s, Scalar::Ptr)
}

/// The value of a scalar `s` read as the bytes `b` (bools are 0 or 1, as `Machine::load` makes
/// them).
#[inline]
fn decode(b: &[u8], s: Scalar) -> u64 {
    bits_of(read_le(b), s)
}

/// What a load of scalar `s` gives of the little-endian value `v` of its bytes.
#[inline]
fn bits_of(v: u64, s: Scalar) -> u64 {
    if s == Scalar::Bool {
        u64::from(v != 0)
    } else {
        v
    }
}

impl Machine<'_> {
    /// Loads the scalar `s` at byte `o` of what each lane's pointer in register row `prow` points
    /// to into register row `orow` (`OpLoad` of a one-leaf type); false where a lane needs the
    /// per-lane path (see the module's doc).
    pub(crate) fn load_row(
        &mut self,
        sg: &mut Sg,
        prow: u32,
        o: u32,
        s: Scalar,
        orow: u32,
        mask: u128,
    ) -> bool {
        if self.p.memory_lane_by_lane {
            return false;
        }
        let n = self.lanes as usize;
        let (prow, orow) = (prow as usize * n, orow as usize * n);
        if !plain(s) || prow + n > sg.regs.len() || orow + n > sg.regs.len() {
            return false;
        }
        let Some(first) = lanes(mask).next() else {
            return true;
        };
        let obj = (sg.regs[prow + first as usize] >> 32) as usize;
        if obj < self.shared_below && self.ov.frozen(obj).is_none() {
            return self.load_row_shared(sg, (prow, orow), o, s, obj, mask);
        }
        // The usual row: every lane in one object whose bytes are all written (a buffer, or a
        // shared one the module never writes), read with no per-lane lookup, the width's
        // own read.
        if let Some(bytes) = self.plain_bytes(obj) {
            let at = (prow, orow, n, obj as u64, o);
            let done = match (s.bytes(), s == Scalar::Bool) {
                (4, false) => load_rows(&mut sg.regs, at, mask, self.full, |a| {
                    chunk::<4>(bytes, a).map(|b| u64::from(u32::from_le_bytes(*b)))
                }),
                (8, false) => load_rows(&mut sg.regs, at, mask, self.full, |a| {
                    chunk::<8>(bytes, a).map(|b| u64::from_le_bytes(*b))
                }),
                (w, _) => load_rows(&mut sg.regs, at, mask, self.full, |a| {
                    let b = bytes.get(usize::try_from(a).ok()?..)?.get(..w as usize)?;
                    Some(decode(b, s))
                }),
            };
            match done {
                RowEnd::All => return true,
                RowEnd::Stop => return false,
                // A lane in another object: the rows below, from the first lane again (loads
                // change nothing else, and the result row is not the pointer row).
                RowEnd::OtherObject => {}
            }
        }
        let shared_below = self.shared_below;
        let w = s.bytes() as u64;
        let mut cur = usize::MAX;
        let mut m = None;
        for l in lanes(mask) {
            let l = l as usize;
            let ptr = sg.regs[prow + l];
            let obj = (ptr >> 32) as usize;
            if obj != cur {
                if obj < shared_below {
                    return false;
                }
                m = self.mems.get(obj);
                cur = obj;
            }
            let Some(mem) = m else {
                return false;
            };
            let at = u64::from(ptr as u32) + u64::from(o);
            if at + w > mem.bytes.len() as u64 {
                return false;
            }
            let (a, b) = (at as usize, (at + w) as usize);
            if mem.uninit > 0 && mem.init.get(a..b).is_some_and(|i| i.contains(&false)) {
                return false;
            }
            sg.regs[orow + l] = decode(&mem.bytes[a..b], s);
        }
        true
    }

    /// Runs a memory form resolved at translation (`prepare`) for the lanes of `mask`, `res`
    /// the instruction's result register; false where the general path must run it (or, for a
    /// fused load, finish it: the chain's pointers made, the load row or lane by lane).
    pub(crate) fn mem_form(&mut self, sg: &mut Sg, form: &MemForm, res: u32, mask: u128) -> bool {
        match *form {
            // Its load makes what it needs (its straight-line form is `Fast::Nop`).
            MemForm::FusedChain => true,
            MemForm::FusedLoad {
                ref plan,
                at: (o, s),
                ..
            } => self.load_fused(sg, plan, o, s, res, mask),
            MemForm::ArrayLength {
                ptr,
                off,
                stride,
                uniform,
            } => self.array_length_row(sg, ptr, off, stride, res, mask, uniform),
            // Run where its operands are known (`ops.rs`'s atomics).
            MemForm::FusedAtomic { .. } => false,
        }
    }

    /// An atomic fused with its access chain (`MemForm::FusedAtomic`), as
    /// [`Self::atomic_row`] does it on one object of this machine whose bytes are all written,
    /// each lane's address from its index as [`Self::load_fused`] works it out; false, having
    /// changed nothing, where a lane needs more (then the chain's pointers and the atomic's
    /// other paths).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn atomic_fused(
        &mut self,
        sg: &mut Sg,
        op: spirv::Op,
        plan: &ChainPlan,
        s: Scalar,
        (v, cmp): (Src, Src),
        res: u32,
        mask: u128,
    ) -> bool {
        if self.p.memory_lane_by_lane {
            return false;
        }
        let w = match s {
            Scalar::Int { width, .. } if width == 32 || width == 64 => width,
            _ => return false,
        };
        let (&[(stride, count, Src::Reg(irow), is)], Src::Reg(brow)) =
            (plan.steps.as_slice(), plan.base.0)
        else {
            return false;
        };
        let (n, len) = (self.lanes as usize, sg.regs.len());
        let (irow, width) = (irow as usize * n, is.width());
        if irow + n > len || (res != u32::MAX && (res as usize + 1) * n > len) {
            return false;
        }
        let (Some(v), Some(c)) = (
            self.atomic_operand(v, n, len),
            self.atomic_operand(cmp, n, len),
        ) else {
            return false;
        };
        let Some(first) = lanes(mask).next() else {
            return true;
        };
        // The variable's pointer, the same in every lane (`prepare`).
        let Some(&ptr) = sg.regs.get(brow as usize * n + first as usize) else {
            return false;
        };
        let obj = (ptr >> 32) as usize;
        if obj < self.shared_below || width > 32 || plan.fixed >= 1 << 62 {
            return false;
        }
        let (mems, tmp) = (&mut self.mems, &mut self.row_tmp);
        let Some(mem) = mems.get_mut(obj).filter(|m| m.uninit == 0) else {
            return false;
        };
        // Within 4 GiB: every address below the chain's saturation (as `load_fused`).
        let size = mem.bytes.len() as u64;
        let Some(last) = size.checked_sub(u64::from(w / 8)) else {
            return false;
        };
        if size > u64::from(u32::MAX) {
            return false;
        }
        let base = u64::from(ptr as u32) + plan.fixed;
        let (count, stride) = (count.min(1 << 31), u64::from(stride));
        // Every lane's address first (`u64::MAX` where the index is out of range: above any
        // `last`), into the scratch row; nothing changes unless every one is in bounds.
        tmp.resize(n, 0);
        let mut fits = true;
        if mask == self.full {
            for (t, &x) in tmp.iter_mut().zip(&sg.regs[irow..irow + n]) {
                let a = element(width, x, count, base, stride);
                fits &= a <= last;
                *t = a;
            }
        } else {
            for l in lanes(mask) {
                let l = l as usize;
                let a = element(width, sg.regs[irow + l], count, base, stride);
                fits &= a <= last;
                tmp[l] = a;
            }
        }
        if !fits {
            return false;
        }
        let out = (res != u32::MAX).then_some(res as usize * n);
        let ops = Atomics { op, w, v, c, out };
        ops.run(&mut mem.bytes, &mut sg.regs, mask, |_, l| tmp[l] as usize);
        true
    }

    /// A load fused with its access chain (`MemForm::FusedLoad`): the scalar `s` at byte
    /// `o` past the element of each lane's index, `plan` one index into a variable of a
    /// uniform pointer (`prepare`), into row `orow`, with no pointer row between; false,
    /// having written only lanes of `orow`, where a lane needs the chain's pointers and the
    /// general load (an index out of range, an address past the object, an object not read
    /// straight).
    pub(crate) fn load_fused(
        &mut self,
        sg: &mut Sg,
        plan: &ChainPlan,
        o: u32,
        s: Scalar,
        orow: u32,
        mask: u128,
    ) -> bool {
        if self.p.memory_lane_by_lane || !plain(s) {
            return false;
        }
        let (&[(stride, count, Src::Reg(irow), is)], Src::Reg(brow)) =
            (plan.steps.as_slice(), plan.base.0)
        else {
            return false;
        };
        let n = self.lanes as usize;
        let width = is.width();
        let Some(first) = lanes(mask).next() else {
            return true;
        };
        // The variable's pointer, the same in every lane (`prepare`).
        let Some(&ptr) = sg.regs.get(brow as usize * n + first as usize) else {
            return false;
        };
        let Some(bytes) = self.plain_bytes((ptr >> 32) as usize) else {
            return false;
        };
        // An object within 4 GiB: an address in it is below the chain's saturation, so the
        // chain's pointer is the base plus the index's bytes, exactly.
        if width > 32 || plan.fixed >= 1 << 62 || bytes.len() as u64 > u64::from(u32::MAX) {
            return false;
        }
        let base = u64::from(ptr as u32) + plan.fixed + u64::from(o);
        let (count, stride) = (count.min(1 << 31), u64::from(stride));
        let Some((out, [Some(idx), _])) = split_rows(
            &mut sg.regs,
            orow as usize * n,
            [Some(irow as usize * n), None],
            n,
        ) else {
            return false;
        };
        let rows = (out, idx, mask, self.full);
        match (s.bytes(), s == Scalar::Bool) {
            (4, false) => gather(rows, width, count, base, stride, |a| {
                chunk::<4>(bytes, a).map(|b| u64::from(u32::from_le_bytes(*b)))
            }),
            (8, false) => gather(rows, width, count, base, stride, |a| {
                chunk::<8>(bytes, a).map(|b| u64::from_le_bytes(*b))
            }),
            (w, _) => gather(rows, width, count, base, stride, |a| {
                let b = bytes.get(usize::try_from(a).ok()?..)?.get(..w as usize)?;
                Some(decode(b, s))
            }),
        }
    }

    /// The bytes of object `obj` where a row reads them straight: an object of this machine
    /// with every byte written, or a shared object the module never writes (`Overlay::frozen`).
    #[inline]
    fn plain_bytes(&self, obj: usize) -> Option<&[u8]> {
        if obj < self.shared_below {
            return self.ov.frozen(obj);
        }
        let mem = self.mems.get(obj)?;
        (mem.uninit == 0).then_some(mem.bytes.as_slice())
    }

    /// [`Self::load_row`] where every lane reads shared object `obj` of a parallel run that
    /// this workgroup reads straight from the batch's base (`Overlay::clean`): each word read
    /// marked as `Overlay::read` marks it. False (having marked only words the per-lane path
    /// marks again) where a lane needs that path.
    fn load_row_shared(
        &mut self,
        sg: &mut Sg,
        (prow, orow): (usize, usize),
        o: u32,
        s: Scalar,
        obj: usize,
        mask: u128,
    ) -> bool {
        let Some((bytes, mut marks)) = self.ov.clean(obj) else {
            return false;
        };
        let w = s.bytes() as u64;
        for l in lanes(mask) {
            let l = l as usize;
            let ptr = sg.regs[prow + l];
            if (ptr >> 32) as usize != obj {
                return false;
            }
            let at = u64::from(ptr as u32) + u64::from(o);
            if at + w > bytes.len() as u64 {
                return false;
            }
            let (a, b) = (at as usize, (at + w) as usize);
            marks.mark(a, b - a);
            sg.regs[orow + l] = bits_of(bytes.read(a, b - a), s);
        }
        true
    }

    /// Stores the scalar `s` at byte `o` of what each lane's pointer in register row `prow`
    /// points to, the value from `v` (a register row or a constant); false where a lane needs
    /// the per-lane path (see the module's doc).
    pub(crate) fn store_row(
        &mut self,
        sg: &Sg,
        prow: u32,
        o: u32,
        s: Scalar,
        v: Src,
        mask: u128,
    ) -> bool {
        if self.p.memory_lane_by_lane {
            return false;
        }
        let n = self.lanes as usize;
        let prow = prow as usize * n;
        if !plain(s) || prow + n > sg.regs.len() {
            return false;
        }
        // The value: a row of registers, or one constant for every lane.
        let (vrow, konst) = match v {
            Src::Reg(r) if (r as usize + 1) * n <= sg.regs.len() => (Some(r as usize * n), 0),
            Src::Const(k) => (None, self.p.consts.get(k as usize).copied().unwrap_or(0)),
            _ => return false,
        };
        let w = s.bytes() as u64;
        let shared_below = self.shared_below;
        let mut cur = usize::MAX;
        let mut m = None;
        for l in lanes(mask) {
            let l = l as usize;
            let ptr = sg.regs[prow + l];
            let obj = (ptr >> 32) as usize;
            if obj != cur {
                if obj < shared_below {
                    return false;
                }
                m = self.mems.get_mut(obj);
                cur = obj;
            }
            let Some(mem) = m.as_deref_mut() else {
                return false;
            };
            let at = u64::from(ptr as u32) + u64::from(o);
            if at + w > mem.bytes.len() as u64 {
                return false;
            }
            let (a, b) = (at as usize, (at + w) as usize);
            let x = match vrow {
                Some(r) => sg.regs[r + l],
                None => konst,
            };
            write_le(&mut mem.bytes[a..b], x);
            if mem.uninit > 0 {
                for i in mem.init.get_mut(a..b).unwrap_or(&mut []) {
                    if !*i {
                        *i = true;
                        mem.uninit -= 1;
                    }
                }
            }
        }
        true
    }

    /// An access chain's pointers for every lane of `mask` into register row `res`, the plan's
    /// base and indices read from register rows; false where an operand is not a register row
    /// in range (the per-lane path reads those).
    pub(crate) fn chain_row(&self, sg: &mut Sg, plan: &ChainPlan, res: u32, mask: u128) -> bool {
        if self.p.memory_lane_by_lane {
            return false;
        }
        let n = self.lanes as usize;
        let len = sg.regs.len();
        let in_range = |s: Src| matches!(s, Src::Reg(r) if (r as usize + 1) * n <= len);
        if res == u32::MAX
            || (res as usize + 1) * n > len
            || !in_range(plan.base.0)
            || !plan.steps.iter().all(|st| in_range(st.2))
        {
            return false;
        }
        let row = |s: Src| match s {
            Src::Reg(r) => r as usize * n,
            _ => 0,
        };
        let (brow, out) = (row(plan.base.0), res as usize * n);
        let max = u64::from(u32::MAX);
        match (plan.all_out, plan.steps.as_slice()) {
            // The most frequent chain: one index into an array (a buffer's runtime array, a
            // shared array), a tight loop.
            (false, &[(stride, count, idx, s)]) => {
                let (irow, width) = (row(idx), s.width());
                if width == 32 && plan.fixed < 1 << 62 && mask == self.full {
                    // Every lane active, a 32-bit index: a plain loop over the rows (the sums
                    // as below).
                    let count = count.min(1 << 31);
                    let (fixed, stride) = (plan.fixed, u64::from(stride));
                    if let Some((res, [Some(base), Some(idx)])) =
                        split_rows(&mut sg.regs, out, [Some(brow), Some(irow)], n)
                    {
                        for ((r, &ptr), &x) in res.iter_mut().zip(base).zip(idx) {
                            let i = x as u32 as i32 as i64 as u64;
                            let off = if i >= count {
                                max
                            } else {
                                (u64::from(ptr as u32) + fixed + i * stride).min(max)
                            };
                            *r = (ptr & !0xffff_ffff) | off;
                        }
                        return true;
                    }
                }
                if width <= 32 && plan.fixed < 1 << 62 {
                    // No sum can saturate: the offset (< 2^32), the fixed part (< 2^62) and an
                    // in-range index (< 2^31) times a stride (< 2^32) stay under 2^64.
                    let count = count.min(1 << 31);
                    for l in lanes(mask) {
                        let l = l as usize;
                        let ptr = sg.regs[brow + l];
                        let i = crate::num::sext(width, sg.regs[irow + l]) as u64;
                        let off = if i >= count {
                            max
                        } else {
                            (u64::from(ptr as u32) + plan.fixed + i * u64::from(stride)).min(max)
                        };
                        sg.regs[out + l] = (ptr & !0xffff_ffff) | off;
                    }
                    return true;
                }
                for l in lanes(mask) {
                    let l = l as usize;
                    let ptr = sg.regs[brow + l];
                    let i = crate::num::sext(width, sg.regs[irow + l]);
                    let off = if i < 0 || (i as u64) >= count {
                        max
                    } else {
                        (u64::from(ptr as u32).saturating_add(plan.fixed))
                            .saturating_add((i as u64).saturating_mul(u64::from(stride)))
                            .min(max)
                    };
                    sg.regs[out + l] = (ptr & !0xffff_ffff) | off;
                }
            }
            _ => {
                for l in lanes(mask) {
                    let l = l as usize;
                    let ptr = sg.regs[brow + l];
                    let mut off = u64::from(ptr as u32).saturating_add(plan.fixed);
                    if plan.all_out {
                        off = max;
                    } else {
                        for &(stride, count, idx, s) in &plan.steps {
                            let i = crate::num::sext(s.width(), sg.regs[row(idx) + l]);
                            if i < 0 || (i as u64) >= count {
                                off = max;
                                break;
                            }
                            off = off.saturating_add((i as u64).saturating_mul(u64::from(stride)));
                        }
                    }
                    sg.regs[out + l] = (ptr & !0xffff_ffff) | off.min(max);
                }
            }
        }
        true
    }

    /// `OpArrayLength` for every lane of `mask`: the elements of `stride` bytes from byte `off`
    /// of each lane's pointer in register row `prow` to the end of its object, into row `res`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn array_length_row(
        &self,
        sg: &mut Sg,
        prow: u32,
        off: u32,
        stride: u32,
        res: u32,
        mask: u128,
        uniform: bool,
    ) -> bool {
        if self.p.memory_lane_by_lane {
            return false;
        }
        let n = self.lanes as usize;
        let (prow, out) = (prow as usize * n, res as usize * n);
        if res == u32::MAX || prow + n > sg.regs.len() || out + n > sg.regs.len() {
            return false;
        }
        let length = |ptr: u64| {
            let len = self.mem_len((ptr >> 32) as usize) as u64;
            let k = len.saturating_sub(u64::from(ptr as u32) + u64::from(off))
                / u64::from(stride.max(1));
            k & 0xffff_ffff
        };
        // A variable's pointer, the same in every lane (`prepare`): one length for the row.
        if uniform {
            let Some(first) = lanes(mask).next() else {
                return true;
            };
            let k = length(sg.regs[prow + first as usize]);
            if mask == self.full {
                sg.regs[out..out + n].fill(k);
            } else {
                for l in lanes(mask) {
                    sg.regs[out + l as usize] = k;
                }
            }
            return true;
        }
        // Every lane's pointer the same (the buffer's, the usual row): one length for all.
        if mask == self.full {
            if let Some((row, [Some(ptrs), _])) =
                split_rows(&mut sg.regs, out, [Some(prow), None], n)
            {
                let ptr = ptrs[0];
                // Without an early exit: the compiler checks several lanes at once.
                if ptrs.iter().fold(true, |same, &p| same & (p == ptr)) {
                    row.fill(length(ptr));
                    return true;
                }
            }
        }
        // The last pointer and its length (most rows have one pointer, the buffer's).
        let mut last: Option<(u64, u64)> = None;
        for l in lanes(mask) {
            let l = l as usize;
            let ptr = sg.regs[prow + l];
            let k = match last {
                Some((p, k)) if p == ptr => k,
                _ => {
                    let k = length(ptr);
                    last = Some((ptr, k));
                    k
                }
            };
            sg.regs[out + l] = k;
        }
        true
    }

    /// An atomic's value or comparator operand for the row forms: a register row's first slot
    /// (in a file of `len` slots, rows of `n`), or a constant's value (0 for none); None where
    /// the per-lane path must read it (an `OpUndef`, a row out of range).
    fn atomic_operand(&self, x: Src, n: usize, len: usize) -> Option<(Option<usize>, u64)> {
        match x {
            Src::Reg(r) if (r as usize + 1) * n <= len => Some((Some(r as usize * n), 0)),
            Src::Const(k) => Some((None, self.p.consts.get(k as usize).copied().unwrap_or(0))),
            Src::None => Some((None, 0)),
            _ => None,
        }
    }

    /// An atomic `op` on the integer scalar `s` at each lane's pointer in register row `prow`,
    /// lanes in order, operands `v` and `cmp` (register rows or constants, `Src::None` where the
    /// opcode has none), the old values into row `res`; false, having changed nothing, where a
    /// lane needs the per-lane path: every lane is checked first (an atomic done twice is not
    /// the same as once), and a deferrable atomic on a shared object of a parallel run is the
    /// overlay's.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn atomic_row(
        &mut self,
        sg: &mut Sg,
        op: spirv::Op,
        prow: u32,
        s: Scalar,
        v: Src,
        cmp: Src,
        res: u32,
        mask: u128,
    ) -> bool {
        if self.p.memory_lane_by_lane {
            return false;
        }
        let n = self.lanes as usize;
        let len = sg.regs.len();
        let prow = prow as usize * n;
        let w = match s {
            Scalar::Int { width, .. } if width == 32 || width == 64 => width,
            _ => return false,
        };
        if prow + n > len || (res != u32::MAX && (res as usize + 1) * n > len) {
            return false;
        }
        let (Some(v), Some(c)) = (
            self.atomic_operand(v, n, len),
            self.atomic_operand(cmp, n, len),
        ) else {
            return false;
        };
        let bytes = u64::from(w / 8);
        let at_lane = |x: (Option<usize>, u64), regs: &[u64], l: usize| match x.0 {
            Some(r) => regs[r + l],
            None => x.1,
        };
        let out = (res != u32::MAX).then_some(res as usize * n);
        // The usual row: every lane on one object of this machine whose bytes are all written
        // (a Workgroup array after its first barrier), checked in one pass, then done lane by
        // lane in order.
        let Some(first) = lanes(mask).next() else {
            return true;
        };
        let obj = sg.regs[prow + first as usize] >> 32;
        if obj >= self.shared_below as u64 {
            if let Some(mem) = self.mems.get_mut(obj as usize).filter(|m| m.uninit == 0) {
                let len = mem.bytes.len() as u64;
                let fits = |ptr: u64| ptr >> 32 == obj && u64::from(ptr as u32) + bytes <= len;
                let all = if mask == self.full {
                    // No early exit: the compiler checks several lanes at once.
                    sg.regs[prow..prow + n]
                        .iter()
                        .fold(true, |all, &p| all & fits(p))
                } else {
                    lanes(mask).all(|l| fits(sg.regs[prow + l as usize]))
                };
                if all {
                    let ops = Atomics { op, w, v, c, out };
                    ops.run(&mut mem.bytes, &mut sg.regs, mask, |regs, l| {
                        regs[prow + l] as u32 as usize
                    });
                    return true;
                }
            }
        }
        // Every lane first: an object of this machine, in bounds, its bytes written.
        let mut cur = usize::MAX;
        let mut m = None;
        for l in lanes(mask) {
            let ptr = sg.regs[prow + l as usize];
            let obj = (ptr >> 32) as usize;
            if obj != cur {
                if obj < self.shared_below {
                    return false;
                }
                m = self.mems.get(obj);
                cur = obj;
            }
            let Some(mem) = m else {
                return false;
            };
            let at = u64::from(ptr as u32);
            if at + bytes > mem.bytes.len() as u64 {
                return false;
            }
            let (a, b) = (at as usize, (at + bytes) as usize);
            if mem.uninit > 0 && mem.init.get(a..b).is_some_and(|i| i.contains(&false)) {
                return false;
            }
        }
        let mut cur = usize::MAX;
        let mut m = None;
        for l in lanes(mask) {
            let l = l as usize;
            let ptr = sg.regs[prow + l];
            let (obj, at) = ((ptr >> 32) as usize, ptr as u32 as usize);
            if obj != cur {
                m = self.mems.get_mut(obj);
                cur = obj;
            }
            // Every lane's object exists (checked above).
            let Some(mem) = m.as_deref_mut() else {
                continue;
            };
            let x = at_lane(v, &sg.regs, l);
            let old = if w == 32 {
                let b = &mut mem.bytes[at..at + 4];
                let old = u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                // The most frequent atomic, a 32-bit add, without the general match.
                let new = if op == spirv::Op::AtomicIAdd {
                    Some(old.wrapping_add(x) & 0xffff_ffff)
                } else {
                    crate::ops::atomic_result(op, w, old, x, at_lane(c, &sg.regs, l))
                };
                if let Some(new) = new {
                    b.copy_from_slice(&(new as u32).to_le_bytes());
                }
                old
            } else {
                let b = &mut mem.bytes[at..at + 8];
                let old = read_le(b);
                if let Some(new) = crate::ops::atomic_result(op, w, old, x, at_lane(c, &sg.regs, l))
                {
                    write_le(b, new);
                }
                old
            };
            if let Some(out) = out {
                sg.regs[out + l] = old;
            }
        }
        true
    }
}

/// How a row of loads from one object's bytes ended.
enum RowEnd {
    /// Every lane loaded.
    All,
    /// A lane needs the per-lane path (out of bounds).
    Stop,
    /// A lane points into another object.
    OtherObject,
}

/// The `W` bytes at byte `at` of `bytes`, if they are all there.
#[inline(always)]
fn chunk<const W: usize>(bytes: &[u8], at: u64) -> Option<&[u8; W]> {
    bytes.get(usize::try_from(at).ok()?..)?.first_chunk::<W>()
}

/// Loads `read` of byte `o` past each lane's pointer in row `prow` of `regs` into row `orow`
/// (`n` wide), every lane's pointer into object `obj`: a plain loop over the rows where every
/// lane is active (`full`), else over the lanes of `mask`.
#[inline(always)]
fn load_rows(
    regs: &mut [u64],
    (prow, orow, n, obj, o): (usize, usize, usize, u64, u32),
    mask: u128,
    full: u128,
    read: impl Fn(u64) -> Option<u64>,
) -> RowEnd {
    if mask == full {
        if let Some((out, [Some(ptrs), _])) = split_rows(regs, orow, [Some(prow), None], n) {
            for (x, &ptr) in out.iter_mut().zip(ptrs) {
                if ptr >> 32 != obj {
                    return RowEnd::OtherObject;
                }
                let Some(v) = read(u64::from(ptr as u32) + u64::from(o)) else {
                    return RowEnd::Stop;
                };
                *x = v;
            }
            return RowEnd::All;
        }
    }
    for l in lanes(mask) {
        let l = l as usize;
        let ptr = regs[prow + l];
        if ptr >> 32 != obj {
            return RowEnd::OtherObject;
        }
        let Some(v) = read(u64::from(ptr as u32) + u64::from(o)) else {
            return RowEnd::Stop;
        };
        regs[orow + l] = v;
    }
    RowEnd::All
}

/// [`Machine::load_fused`]'s loop: for each lane of `mask` (every lane of the rows where it is
/// `full`), `read` of byte `base + i * stride`, `i` the lane's index (`width` bits, signed),
/// below `count`; false at the first lane that is not.
#[inline(always)]
fn gather(
    (out, idx, mask, full): (&mut [u64], &[u64], u128, u128),
    width: u32,
    count: u64,
    base: u64,
    stride: u64,
    read: impl Fn(u64) -> Option<u64>,
) -> bool {
    let lane = |x: u64| {
        let i = crate::num::sext(width, x) as u64;
        if i >= count {
            return None;
        }
        read(base + i * stride)
    };
    if mask == full && width == 32 {
        for (r, &x) in out.iter_mut().zip(idx) {
            let i = x as u32 as i32 as i64 as u64;
            if i >= count {
                return false;
            }
            let Some(v) = read(base + i * stride) else {
                return false;
            };
            *r = v;
        }
        return true;
    }
    for l in lanes(mask) {
        let l = l as usize;
        let Some(v) = idx.get(l).and_then(|&x| lane(x)) else {
            return false;
        };
        if let Some(r) = out.get_mut(l) {
            *r = v;
        }
    }
    true
}

/// The memory forms of `funcs` resolved once (`Inst::mem`):
/// - a one-leaf `OpLoad` whose pointer is an access chain earlier in its block with one index
///   in a register (no `OpUndef`: its bits are drawn where the chain runs) into a buffer,
///   push-constant or Workgroup variable (whose pointer is the same in every lane), the chain's
///   result read by nothing else (no other operand, no phi), and nothing between them that may
///   write a register row the chain reads (a promoted variable's rows, which a forwarded load's
///   uses read: an instruction on a promoted variable, a call): [`MemForm::FusedLoad`] and
///   [`MemForm::FusedChain`], run by [`Machine::load_fused`]; an atomic likewise
///   ([`MemForm::FusedAtomic`], [`Machine::atomic_fused`]);
/// - `OpArrayLength` of a pointer in a register: its member's offset and stride, and whether
///   the pointer is such a variable's ([`MemForm::ArrayLength`]).
///
/// Everything else keeps the general path; so does everything with the general paths only or
/// memory lane by lane.
pub(crate) fn prepare(p: &mut crate::translate::Program) {
    let mut funcs = std::mem::take(&mut p.funcs);
    prepare_funcs(p, &mut funcs);
    p.funcs = funcs;
}

/// [`prepare`] of the functions `funcs`, taken out of `p`.
fn prepare_funcs(p: &crate::translate::Program, funcs: &mut [crate::translate::Func]) {
    use spirv::Op as O;
    use spirv::StorageClass as C;
    for inst in funcs.iter_mut().flat_map(|f| &mut f.insts) {
        // A chain fused before has its own form back (`Fast::Nop` was this pass's).
        if matches!(inst.mem.as_deref(), Some(MemForm::FusedChain)) {
            inst.fast = None;
        }
        inst.mem = None;
    }
    if p.general_only || p.memory_lane_by_lane {
        return;
    }
    // Uses of each id as an operand anywhere (a literal equal to it counts: it only stops a
    // fusion), and the registers phis read.
    let mut uses = vec![0u32; p.ids.len()];
    for inst in funcs.iter().flat_map(|f| &f.insts) {
        for &a in &inst.args {
            if let Some(u) = uses.get_mut(a as usize) {
                *u = u.saturating_add(1);
            }
        }
    }
    let phi_inputs: std::collections::HashSet<u32> = funcs
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.phis)
        .flat_map(|phi| &phi.incoming)
        .filter_map(|(_, src)| match src {
            Src::Reg(r) => Some(*r),
            _ => None,
        })
        .collect();
    let uniform_var = |id: u32| {
        p.globals.iter().any(|g| {
            g.id == id
                && [C::StorageBuffer, C::Uniform, C::PushConstant, C::Workgroup]
                    .iter()
                    .any(|&c| g.class == c as u32)
        })
    };
    for f in funcs.iter_mut() {
        for inst in &mut f.insts {
            if inst.decoded == Some(O::ArrayLength) && inst.res != u32::MAX {
                inst.mem = array_length_form(p, inst, &uniform_var).map(Box::new);
            }
        }
        for b in 0..f.blocks.len() {
            let (start, end) = (f.blocks[b].start as usize, f.blocks[b].end as usize);
            for j in start..end.min(f.insts.len()) {
                let user = &f.insts[j];
                let atomic = user.decoded.is_some_and(crate::opclass::is_atomic);
                let plain_load = user.decoded == Some(O::Load) && user.res != u32::MAX;
                if !(plain_load || atomic) || user.local.is_some() {
                    continue;
                }
                let leaf = match p.types.get(user.ty as usize).and_then(Option::as_ref) {
                    _ if atomic => None,
                    Some(t) => match t.layout.as_slice() {
                        &[at] => Some(at),
                        _ => continue,
                    },
                    None => continue,
                };
                let Some(&ptr) = user.args.first() else {
                    continue;
                };
                // The chain: in this block, before the load or atomic.
                let Some(i) = (start..j).find(|&i| f.insts[i].id == ptr) else {
                    continue;
                };
                let chain = &f.insts[i];
                let Some(plan) = chain.chain.as_deref() else {
                    continue;
                };
                let quiet_between = f.insts[i + 1..j]
                    .iter()
                    .all(|x| x.local.is_none() && x.decoded != Some(O::FunctionCall));
                let fusable = quiet_between
                    && matches!(chain.decoded, Some(O::AccessChain | O::InBoundsAccessChain))
                    && chain.local.is_none()
                    && chain.fast.is_none()
                    && chain.res != u32::MAX
                    && uses.get(ptr as usize) == Some(&1)
                    && !phi_inputs.contains(&chain.res)
                    && !plan.all_out
                    && matches!(plan.base.0, Src::Reg(_))
                    && chain.args.first().is_some_and(|&base| uniform_var(base))
                    && matches!(plan.steps.as_slice(), [(_, _, Src::Reg(_), s)] if s.width() <= 32);
                if fusable {
                    let (plan, chain) = (plan.clone(), chain.res);
                    let form = match leaf {
                        Some(at) => MemForm::FusedLoad { plan, chain, at },
                        None => MemForm::FusedAtomic { plan, chain },
                    };
                    // The chain does nothing when it runs (its step still counts): the load or
                    // atomic makes its pointers where it needs them.
                    f.insts[i].fast = Some(crate::translate::Fast::Nop);
                    f.insts[i].mem = Some(Box::new(MemForm::FusedChain));
                    f.insts[j].mem = Some(Box::new(form));
                }
            }
        }
    }
}

/// [`MemForm::ArrayLength`] of an `OpArrayLength`, where its pointer is in a register and the
/// types give the member (else the general path, with its error).
fn array_length_form(
    p: &crate::translate::Program,
    inst: &crate::translate::Inst,
    uniform_var: &impl Fn(u32) -> bool,
) -> Option<MemForm> {
    use crate::types::Shape;
    let (&base, &k) = (inst.args.first()?, inst.args.get(1)?);
    let (Src::Reg(ptr), t) = p.val(base).ok()? else {
        return None;
    };
    let Shape::Pointer { pointee, .. } = &t.shape else {
        return None;
    };
    let Shape::Struct { members, offsets } = &p.ty(*pointee).ok()?.shape else {
        return None;
    };
    let k = k as usize;
    let Shape::Array { stride, .. } = p.ty(*members.get(k)?).ok()?.shape else {
        return None;
    };
    Some(MemForm::ArrayLength {
        ptr,
        off: *offsets.get(k)?,
        stride,
        uniform: uniform_var(base),
    })
}

/// A row of atomics on one object's bytes, every lane's address in bounds (checked before):
/// the opcode, the width, the operand and comparator (a register row or a constant), the
/// result row.
struct Atomics {
    op: spirv::Op,
    w: u32,
    v: (Option<usize>, u64),
    c: (Option<usize>, u64),
    out: Option<usize>,
}

impl Atomics {
    /// The operand `x` at lane `l`.
    #[inline(always)]
    fn at_lane(x: (Option<usize>, u64), regs: &[u64], l: usize) -> u64 {
        match x.0 {
            Some(r) => regs[r + l],
            None => x.1,
        }
    }

    /// Runs the atomics of the lanes of `mask` in lane order on `bytes`, lane `l` at byte
    /// `addr(regs, l)`.
    #[inline(always)]
    fn run(
        &self,
        bytes: &mut [u8],
        regs: &mut [u64],
        mask: u128,
        addr: impl Fn(&[u64], usize) -> usize,
    ) {
        let (op, w, v, c, out) = (self.op, self.w, self.v, self.c, self.out);
        if w == 32 && op == spirv::Op::AtomicIAdd {
            // The most frequent atomic (a histogram's bins), in a loop of its own.
            for l in lanes(mask) {
                let l = l as usize;
                let at = addr(regs, l);
                let x = Self::at_lane(v, regs, l) as u32;
                let Some(b) = bytes.get_mut(at..).and_then(|b| b.first_chunk_mut::<4>()) else {
                    continue;
                };
                let old = u32::from_le_bytes(*b);
                *b = old.wrapping_add(x).to_le_bytes();
                if let Some(out) = out {
                    regs[out + l] = u64::from(old);
                }
            }
            return;
        }
        for l in lanes(mask) {
            let l = l as usize;
            let at = addr(regs, l);
            let x = Self::at_lane(v, regs, l);
            let cmp = Self::at_lane(c, regs, l);
            let n = w as usize / 8;
            let Some(b) = bytes.get_mut(at..at + n) else {
                continue;
            };
            let old = read_le(b);
            if let Some(new) = crate::ops::atomic_result(op, w, old, x, cmp) {
                write_le(b, new);
            }
            if let Some(out) = out {
                regs[out + l] = old;
            }
        }
    }
}

/// The byte of element `x` (an index of `width` bits, signed) of an array of `count` elements
/// of `stride` bytes from byte `base`; `u64::MAX` where the index is out of range. No sum
/// overflows: `base` below 2^62 plus 2^32, an in-range index below 2^31, `stride` below 2^32.
#[inline(always)]
fn element(width: u32, x: u64, count: u64, base: u64, stride: u64) -> u64 {
    let i = if width == 32 {
        x as u32 as i32 as i64 as u64
    } else {
        crate::num::sext(width, x) as u64
    };
    if i < count {
        base + i * stride
    } else {
        u64::MAX
    }
}
