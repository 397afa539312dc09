//! Loads and stores over a row of lanes: the pointer row read once per lane, the object looked
//! up once per run of lanes on it, the width's own loop where every lane reads one object whose
//! bytes are all written, and a load fused with its access chain gathered by index.

use crate::exec::{Machine, Sg};
use crate::num::{lanes, write_le};
use crate::translate::{ChainPlan, Src};
use crate::types::Scalar;
use crate::vector::split_rows;

use super::{bits_of, decode, plain};

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
