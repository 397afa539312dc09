//! Atomics over a row of lanes, lanes in order: every lane checked before anything changes (an
//! atomic done twice is not the same as once), on an object's bytes or fused with the access
//! chain of its pointer.

use crate::exec::{Machine, Sg};
use crate::num::{lanes, read_le, write_le};
use crate::translate::{ChainPlan, Src};
use crate::types::Scalar;

use super::element;

impl Machine<'_> {
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
