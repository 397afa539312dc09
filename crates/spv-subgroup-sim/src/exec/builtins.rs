//! The variables of one invocation (Private, Input, Output objects) and the built-in Input
//! values: lane by lane, or a row at a time by their formulas into promoted built-ins' rows.

use crate::error::{malformed, unsupported, Error, ErrorKind, Result};
use crate::num::write_le;
use crate::translate::Src;
use crate::types::TypeInfo;

use super::{whole, BuiltinKey, Machine, MemName, Sg};

impl Machine<'_> {
    /// The object of a Private, Function-less Input or Output variable of one invocation;
    /// `(index, sgid, lane, nsg)`: its local invocation index, subgroup, lane, and the
    /// workgroup's subgroup count.
    pub(super) fn invocation_var(
        &mut self,
        g: &crate::translate::Global,
        (index, sgid, lane, nsg): (u32, u32, u32, u32),
        local: [u32; 3],
        wg: [u32; 3],
        nwg: [u32; 3],
    ) -> Result<u64> {
        let t = self.ty(g.pointee)?;
        let kind = g.builtin.and_then(spirv::BuiltIn::from_u32);
        if g.class == spirv::StorageClass::Input as u32 {
            let mut vals = std::mem::take(&mut self.scratch);
            vals.clear();
            let r = self.builtin(
                kind,
                g,
                (index, sgid, lane, nsg),
                local,
                wg,
                nwg,
                t,
                &mut vals,
            );
            let name = MemName::Variable(g.id);
            let ptr = r.and_then(|()| {
                if whole(t) {
                    // The built-in's bytes written straight into the object.
                    Ok(self.alloc_written(t, &vals, name))
                } else {
                    let ptr = self.alloc(t.size, name);
                    self.store(ptr, t, &vals).map(|()| ptr)
                }
            });
            self.scratch = vals;
            ptr
        } else if g.class == spirv::StorageClass::Private as u32
            || g.class == spirv::StorageClass::Output as u32
        {
            let init = match g.init {
                Some(Src::Const(k)) => {
                    let range = k as usize..k as usize + t.leaves as usize;
                    Some(
                        self.p
                            .consts
                            .get(range)
                            .ok_or_else(|| malformed("initialiser of the wrong size"))?,
                    )
                }
                _ => None,
            };
            match init {
                Some(v) if whole(t) => Ok(self.alloc_written(t, v, MemName::Variable(g.id))),
                Some(v) => {
                    let ptr = self.alloc(t.size, MemName::Variable(g.id));
                    self.store(ptr, t, v)?;
                    Ok(ptr)
                }
                // Uninitialised (an initialiser that is not a constant leaves it so too).
                None => Ok(self.alloc(t.size, MemName::Variable(g.id))),
            }
        } else {
            Err(unsupported(format!(
                "variables of storage class {}",
                g.class
            )))
        }
    }

    /// Fills the value and written-flag rows of a built-in Input variable kept in registers
    /// (`Global::promoted`) for the subgroup of `key` (its lanes below `key.n` exist): each
    /// existing lane's value, written; the other lanes 0. `kept`: where the rows are intact
    /// from this subgroup's previous set-up, for the same lanes of the same dispatch, the
    /// workgroup id they were filled for; rows that would be filled with the same values are
    /// left as they are.
    pub(super) fn builtin_rows(
        &mut self,
        sg: &mut Sg,
        g: &crate::translate::Global,
        key: BuiltinKey,
        kept: Option<[u32; 3]>,
    ) -> Result<()> {
        let Some(rows) = g.promoted else {
            return Ok(());
        };
        if let Some(from) = kept {
            // Only the rows that depend on the workgroup's id change, each by the change of
            // its component of the id; the others do not (the set-up that filled them
            // succeeded).
            if from != key.wg {
                let kind = g.builtin.and_then(spirv::BuiltIn::from_u32);
                let nl = self.lanes as usize;
                let n = key.n.min(self.lanes) as usize;
                let at = rows.value as usize * nl;
                let values = sg.regs.get_mut(at..at + rows.leaves as usize * nl);
                shift_workgroup_rows(kind, from, key, nl, n, values);
            }
            if self.files.check {
                self.check_builtin_rows(sg, g, key)?;
            }
            return Ok(());
        }
        let kind = g.builtin.and_then(spirv::BuiltIn::from_u32);
        let t = self.ty(g.pointee)?;
        let nl = self.lanes as usize;
        let (lanes, leaves) = (self.lanes, rows.leaves as usize);
        let n = key.n.min(lanes) as usize;
        let span = |row: u32| row as usize * nl..(row as usize + leaves) * nl;
        // Flags: written in the existing lanes, 0 in the others.
        let Some(flags) = sg.regs.get_mut(span(rows.written)) else {
            return Ok(());
        };
        for row in flags.chunks_exact_mut(nl) {
            row[..n].fill(crate::translate::WRITTEN);
            row[n..].fill(0);
        }
        // Values: one leaf per component (the 32-bit scalars and vectors) straight into the
        // rows by their formulas; the masks, spread over several leaves by their widths,
        // through `builtin`.
        if formula_comps(kind) == Some(leaves) {
            if let Some(values) = sg.regs.get_mut(span(rows.value)) {
                builtin_value_rows(kind, key, lanes, values);
            }
            return Ok(());
        }
        let mut vals = std::mem::take(&mut self.scratch);
        vals.clear();
        let mut result = Ok(());
        for l in 0..n as u32 {
            let ids = (key.first + l, key.sgi, l, key.nsg);
            result = self.builtin(kind, g, ids, key.local, key.wg, key.nwg, t, &mut vals);
            if result.is_err() {
                break;
            }
        }
        if let (Ok(()), Some(values)) = (&result, sg.regs.get_mut(span(rows.value))) {
            values.fill(0);
            for l in 0..n {
                for c in 0..leaves {
                    values[c * nl + l] = vals.get(l * leaves + c).copied().unwrap_or(0);
                }
            }
        }
        self.scratch = vals;
        result
    }

    /// With `Module::with_register_check`: the built-in rows of `g` that a subgroup's set-up
    /// kept from its previous workgroup (or shifted to this one's id) must be what filling
    /// them afresh gives.
    fn check_builtin_rows(
        &mut self,
        sg: &mut Sg,
        g: &crate::translate::Global,
        key: BuiltinKey,
    ) -> Result<()> {
        let Some(rows) = g.promoted else {
            return Ok(());
        };
        let nl = self.lanes as usize;
        let span = |r: u32| r as usize * nl..(r + rows.leaves) as usize * nl;
        let copy = |sg: &Sg| {
            let rows = [span(rows.value), span(rows.written)];
            rows.map(|s| sg.regs.get(s).map(<[u64]>::to_vec))
        };
        let kept = copy(sg);
        self.builtin_rows(sg, g, key, None)?;
        if copy(sg) != kept {
            return Err(Error::new(ErrorKind::Dispatch(format!(
                "register check: the rows of built-in %{} kept from the previous workgroup \
                 are not what filling them gives",
                g.id
            ))));
        }
        Ok(())
    }

    /// The value of the built-in Input variable `g` of type `t` for one invocation, as leaves
    /// appended to `vals`.
    #[allow(clippy::too_many_arguments)]
    fn builtin(
        &self,
        kind: Option<spirv::BuiltIn>,
        g: &crate::translate::Global,
        (index, sgid, lane, nsg): (u32, u32, u32, u32),
        local: [u32; 3],
        wg: [u32; 3],
        nwg: [u32; 3],
        t: &TypeInfo,
        vals: &mut Vec<u64>,
    ) -> Result<()> {
        let Some((comps, n)) =
            builtin_comps(kind, (index, sgid, lane, nsg), local, wg, nwg, self.lanes)
        else {
            return Err(unsupported(format!(
                "Input variable %{} with BuiltIn {:?}",
                g.id, g.builtin
            )));
        };
        let comps = &comps[..n];
        if comps.len() == t.leaves as usize {
            vals.extend(comps.iter().map(|c| *c as u64));
        } else {
            // One wide value over several leaves (uvec4 / uvec2 / u64 masks), by their widths.
            let mut v = comps.first().copied().unwrap_or(0);
            vals.extend(t.layout.iter().map(|(_, s)| {
                let w = s.width();
                let x = (v as u64) & crate::num::mask(w);
                v = if w >= 128 { 0 } else { v >> w };
                x
            }));
        }
        Ok(())
    }

    /// A new object of type `t` holding `vals` (one per leaf; `t` must be [`whole`]), as
    /// [`Machine::alloc`] then [`Machine::store`] leave it (the same object, every byte
    /// written), without the per-byte bookkeeping.
    fn alloc_written(&mut self, t: &TypeInfo, vals: &[u64], name: MemName) -> u64 {
        let ptr = self.alloc(t.size, name);
        if let Some(m) = self.mems.get_mut((ptr >> 32) as usize) {
            for (&(o, s), &v) in t.layout.iter().zip(vals) {
                let (a, b) = (o as usize, (o + s.bytes()) as usize);
                if let Some(bytes) = m.bytes.get_mut(a..b) {
                    write_le(bytes, v);
                }
            }
            // Every byte written: no byte's flag is read again (loads and stores skip them
            // once `uninit` is 0, and `alloc` resets both).
            m.init.clear();
            m.uninit = 0;
        }
        ptr
    }
}

/// Moves the value rows of built-in `b` (`values`, rows of `nl` slots, `n` lanes existing)
/// from workgroup `from` to the workgroup of `key`, when `b` is one whose rows depend on the
/// workgroup's id: `WorkgroupId`'s component rows filled again where the component changed,
/// `GlobalInvocationId`'s shifted by the change times the workgroup size (in 32 bits, as
/// [`builtin_comps`] computes it). Nothing for the other built-ins.
fn shift_workgroup_rows(
    b: Option<spirv::BuiltIn>,
    from: [u32; 3],
    key: BuiltinKey,
    nl: usize,
    n: usize,
    values: Option<&mut [u64]>,
) {
    use spirv::BuiltIn as B;
    let global = match b {
        Some(B::WorkgroupId) => false,
        Some(B::GlobalInvocationId) => true,
        _ => return,
    };
    let Some(values) = values else {
        return;
    };
    for (c, row) in values.chunks_exact_mut(nl.max(1)).enumerate().take(3) {
        if from[c] == key.wg[c] {
            continue;
        }
        let live = &mut row[..n.min(nl)];
        if global {
            let delta = key.wg[c].wrapping_sub(from[c]).wrapping_mul(key.local[c]);
            for v in live {
                *v = u64::from((*v as u32).wrapping_add(delta));
            }
        } else {
            live.fill(u64::from(key.wg[c]));
        }
    }
}

/// How many components built-in `b` has where [`builtin_value_rows`] fills its rows by their
/// formulas (the 32-bit scalars and vectors; not the masks, nor built-ins the simulator does
/// not know).
fn formula_comps(b: Option<spirv::BuiltIn>) -> Option<usize> {
    use spirv::BuiltIn as B;
    Some(match b {
        Some(
            B::LocalInvocationId
            | B::WorkgroupId
            | B::NumWorkgroups
            | B::WorkgroupSize
            | B::GlobalInvocationId,
        ) => 3,
        Some(
            B::LocalInvocationIndex
            | B::SubgroupSize
            | B::SubgroupLocalInvocationId
            | B::SubgroupId
            | B::NumSubgroups,
        ) => 1,
        _ => return None,
    })
}

/// Fills `values` (a row of `lanes` slots per component, [`formula_comps`]) with built-in `b`
/// of the subgroup of `key`: each component's row by its formula, the same values as
/// [`builtin_comps`] gives lane by lane, 0 in the lanes that do not exist.
fn builtin_value_rows(b: Option<spirv::BuiltIn>, key: BuiltinKey, lanes: u32, values: &mut [u64]) {
    use spirv::BuiltIn as B;
    let nl = lanes as usize;
    let n = key.n.min(lanes) as usize;
    let [lx, ly, _] = key.local.map(|x| x.max(1));
    for (c, row) in values.chunks_exact_mut(nl.max(1)).enumerate().take(3) {
        let (live, dead) = row.split_at_mut(n);
        dead.fill(0);
        let same = |v: u32| u64::from(v);
        match b {
            Some(B::LocalInvocationId | B::GlobalInvocationId) => {
                // The local id's component `c` of each lane, stepped from the first lane's
                // (x fastest, then y, then z), plus the workgroup's offset for the global id.
                let base = match b {
                    Some(B::GlobalInvocationId) => key.wg[c].wrapping_mul(key.local[c]),
                    _ => 0,
                };
                let f = key.first;
                let (mut x, mut y, mut z) = (f % lx, (f / lx) % ly, f / (lx * ly));
                for slot in live.iter_mut() {
                    *slot = same(base.wrapping_add([x, y, z][c]));
                    x += 1;
                    if x == lx {
                        x = 0;
                        y += 1;
                        if y == ly {
                            y = 0;
                            z += 1;
                        }
                    }
                }
            }
            Some(B::WorkgroupId) => live.fill(same(key.wg[c])),
            Some(B::NumWorkgroups) => live.fill(same(key.nwg[c])),
            Some(B::WorkgroupSize) => live.fill(same(key.local[c])),
            Some(B::LocalInvocationIndex) => {
                for (l, slot) in live.iter_mut().enumerate() {
                    *slot = same(key.first.wrapping_add(l as u32));
                }
            }
            Some(B::SubgroupLocalInvocationId) => {
                for (l, slot) in live.iter_mut().enumerate() {
                    *slot = l as u64;
                }
            }
            Some(B::SubgroupSize) => live.fill(same(lanes)),
            Some(B::SubgroupId) => live.fill(same(key.sgi)),
            Some(B::NumSubgroups) => live.fill(same(key.nsg)),
            _ => {}
        }
    }
}

/// The components of built-in `b` (and how many) for one invocation: `(index, sgid, lane, nsg)`
/// are its local invocation index, subgroup, lane and the workgroup's subgroup count, `local`
/// the workgroup size, `wg` its id, `nwg` the workgroup counts, `lanes` the subgroup size.
/// None for a built-in the simulator does not know.
#[inline]
fn builtin_comps(
    b: Option<spirv::BuiltIn>,
    (index, sgid, lane, nsg): (u32, u32, u32, u32),
    local: [u32; 3],
    wg: [u32; 3],
    nwg: [u32; 3],
    lanes: u32,
) -> Option<([u128; 3], usize)> {
    use spirv::BuiltIn as B;
    // Each part computed only for the built-ins that use it (this runs per lane and built-in).
    let lid = || {
        [
            index % local[0],
            (index / local[0]) % local[1],
            index / (local[0] * local[1]),
        ]
    };
    let bit = 1u128 << lane;
    let size_mask = || {
        if lanes == 128 {
            u128::MAX
        } else {
            (1u128 << lanes) - 1
        }
    };
    let three = |v: [u32; 3]| ([v[0].into(), v[1].into(), v[2].into()], 3);
    let one = |v: u128| ([v, 0, 0], 1);
    Some(match b? {
        B::LocalInvocationId => three(lid()),
        B::WorkgroupId => three(wg),
        B::NumWorkgroups => three(nwg),
        B::WorkgroupSize => three(local),
        B::GlobalInvocationId => {
            let lid = lid();
            three(std::array::from_fn(|k| {
                wg[k].wrapping_mul(local[k]).wrapping_add(lid[k])
            }))
        }
        B::LocalInvocationIndex => one(u128::from(index)),
        B::SubgroupSize => one(u128::from(lanes)),
        B::SubgroupLocalInvocationId => one(u128::from(lane)),
        B::SubgroupId => one(u128::from(sgid)),
        B::NumSubgroups => one(u128::from(nsg)),
        B::SubgroupEqMask => one(bit),
        B::SubgroupGeMask => one(!(bit - 1) & size_mask()),
        B::SubgroupGtMask => one(!(bit - 1) & !bit & size_mask()),
        B::SubgroupLeMask => one((bit - 1) | bit),
        B::SubgroupLtMask => one(bit - 1),
        _ => return None,
    })
}
