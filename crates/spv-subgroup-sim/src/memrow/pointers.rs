//! Pointers over a row of lanes: an access chain's pointers, lane by lane from its plan's base
//! and index rows, and `OpArrayLength` of each lane's pointer.

use crate::exec::{Machine, Sg};
use crate::num::lanes;
use crate::translate::{ChainPlan, Src};
use crate::vector::split_rows;

impl Machine<'_> {
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
}
