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
//!
//! This module resolves the memory forms at translation and runs them; `loads.rs` has the loads
//! and stores, `atomics.rs` the atomics, `pointers.rs` the access chains and `OpArrayLength`.

use crate::exec::{Machine, Sg};
use crate::num::read_le;
use crate::translate::{MemForm, Src};
use crate::types::Scalar;

mod atomics;
mod loads;
mod pointers;

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
