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
use crate::translate::{ChainPlan, IdKind, Inst, Program, RowOp, Src};
use crate::types::{Scalar, Shape, TypeInfo};
use crate::vector::{row, split_rows, MAX_LANES};

/// Marks the instructions that take the row form.
pub fn prepare(p: &mut Program) {
    let mut funcs = std::mem::take(&mut p.funcs);
    for f in &mut funcs {
        for inst in &mut f.insts {
            inst.row = resolve(p, inst);
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
    p.funcs = funcs;
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
