//! The GLSL.std.450 extended instructions, per component.

use crate::error::{unsupported, Result};
use crate::exec::{Machine, Sg};
use crate::num::lanes;
use crate::num::{fget, fput, sext};
use crate::translate::Inst;
use crate::types::Scalar;

/// Most operands of a GLSL.std.450 instruction (`FMix`, `FClamp`, `Fma`, ...).
const MAX_OPERANDS: usize = 3;

impl Machine<'_> {
    /// Executes GLSL.std.450 instruction `ext` (operands after the set and number).
    pub fn glsl(&mut self, sg: &mut Sg, inst: &Inst, ext: u32, mask: u128) -> Result<()> {
        let rt = self.ty(inst.ty)?;
        // The operands without an allocation (at most three in GLSL.std.450; more only in an
        // ill-formed module, collected as before).
        let ids = inst.args.get(2..).unwrap_or(&[]);
        let mut arr = [(crate::translate::Src::None, &crate::exec::UNKNOWN); MAX_OPERANDS];
        let heap: Vec<_>;
        let vals: &[_] = if ids.len() <= MAX_OPERANDS {
            for (slot, id) in arr.iter_mut().zip(ids) {
                *slot = self.val(*id)?;
            }
            &arr[..ids.len()]
        } else {
            heap = ids
                .iter()
                .map(|id| self.val(*id))
                .collect::<Result<Vec<_>>>()?;
            &heap
        };
        // Packing: vectors to and from one wider scalar.
        if matches!(ext, 58 | 59 | 62 | 65) && !vals.is_empty() {
            for l in lanes(mask) {
                let v = vals[0];
                match ext {
                    // PackHalf2x16: vec2 -> uint of two halves.
                    58 => {
                        let lo = u64::from(crate::num::f64_to_f16(fget(32, self.get(sg, v, 0, l))));
                        let hi = u64::from(crate::num::f64_to_f16(fget(32, self.get(sg, v, 1, l))));
                        self.put(sg, inst, 0, l, lo | (hi << 16));
                    }
                    // PackDouble2x32: uvec2 -> double, low word first.
                    59 => {
                        let (lo, hi) = (self.get(sg, v, 0, l), self.get(sg, v, 1, l));
                        self.put(sg, inst, 0, l, (lo & 0xffff_ffff) | (hi << 32));
                    }
                    // UnpackHalf2x16: uint -> vec2.
                    62 => {
                        let x = self.get(sg, v, 0, l);
                        for c in 0..2u32 {
                            let h = crate::num::f16_to_f64((x >> (16 * c)) as u16);
                            self.put(sg, inst, c, l, fput(32, h));
                        }
                    }
                    // UnpackDouble2x32: double -> uvec2.
                    _ => {
                        let x = self.get(sg, v, 0, l);
                        self.put(sg, inst, 0, l, x & 0xffff_ffff);
                        self.put(sg, inst, 1, l, x >> 32);
                    }
                }
            }
            return Ok(());
        }
        // Geometric functions reduce vectors to scalars.
        if (66..=69).contains(&ext) && !vals.is_empty() {
            let w = vals[0].1.scalar_of().map_or(32, Scalar::width);
            for l in lanes(mask) {
                let n = vals[0].1.leaves;
                let comp = |m: &mut Self, k: usize, c: u32| fget(w, m.get(sg, vals[k], c, l));
                match ext {
                    66 | 67 => {
                        let mut s = 0.0;
                        for c in 0..n {
                            let d = if ext == 67 {
                                comp(self, 0, c) - comp(self, 1, c)
                            } else {
                                comp(self, 0, c)
                            };
                            s += d * d;
                        }
                        self.put(sg, inst, 0, l, fput(w, s.sqrt()));
                    }
                    68 => {
                        let a: Vec<f64> = (0..3).map(|c| comp(self, 0, c)).collect();
                        let b: Vec<f64> = (0..3).map(|c| comp(self, 1, c)).collect();
                        let r = [
                            a[1] * b[2] - b[1] * a[2],
                            a[2] * b[0] - b[2] * a[0],
                            a[0] * b[1] - b[0] * a[1],
                        ];
                        for (c, x) in r.iter().enumerate() {
                            self.put(sg, inst, c as u32, l, fput(w, *x));
                        }
                    }
                    _ => {
                        let xs: Vec<f64> = (0..n).map(|c| comp(self, 0, c)).collect();
                        let len = xs.iter().map(|x| x * x).sum::<f64>().sqrt();
                        for (c, x) in xs.iter().enumerate() {
                            self.put(sg, inst, c as u32, l, fput(w, x / len));
                        }
                    }
                }
            }
            return Ok(());
        }
        for l in lanes(mask) {
            for c in 0..rt.leaves {
                let rs = rt.layout.get(c as usize).map_or(Scalar::Bool, |x| x.1);
                let w = rs.width();
                // GLSL.std.450 takes at most three operands: no allocation per lane.
                let mut buf = [(0u64, rs); MAX_OPERANDS];
                for (x, v) in buf.iter_mut().zip(vals) {
                    let cc = if v.1.leaves > 1 { c } else { 0 };
                    *x = (
                        self.get(sg, *v, cc, l),
                        v.1.layout.get(cc as usize).map_or(rs, |x| x.1),
                    );
                }
                let xs = &buf[..vals.len().min(MAX_OPERANDS)];
                let f = |k: usize| xs.get(k).map_or(0.0, |x| fget(x.1.width(), x.0));
                let i = |k: usize| xs.get(k).map_or(0, |x| sext(x.1.width(), x.0));
                let u = |k: usize| xs.get(k).map_or(0, |x| x.0);
                let fr = |x: f64| Some(fput(w, x));
                let m = crate::num::mask(w);
                let r: Option<u64> = match ext {
                    1 => fr(f(0).round()),
                    2 => fr(f(0).round_ties_even()),
                    3 => fr(f(0).trunc()),
                    4 => fr(f(0).abs()),
                    5 => Some(i(0).unsigned_abs() & m),
                    6 => fr(if f(0) > 0.0 {
                        1.0
                    } else if f(0) < 0.0 {
                        -1.0
                    } else {
                        f(0)
                    }),
                    7 => Some((i(0).signum() as u64) & m),
                    8 => fr(f(0).floor()),
                    9 => fr(f(0).ceil()),
                    10 => fr(f(0) - f(0).floor()),
                    13 => fr(f(0).sin()),
                    14 => fr(f(0).cos()),
                    15 => fr(f(0).tan()),
                    16 => fr(f(0).asin()),
                    17 => fr(f(0).acos()),
                    18 => fr(f(0).atan()),
                    25 => fr(f(0).atan2(f(1))),
                    26 => fr(f(0).powf(f(1))),
                    27 => fr(f(0).exp()),
                    28 => fr(f(0).ln()),
                    29 => fr(f(0).exp2()),
                    30 => fr(f(0).log2()),
                    31 => fr(f(0).sqrt()),
                    32 => fr(1.0 / f(0).sqrt()),
                    37 | 79 => fr(if f(1) < f(0) || f(0).is_nan() {
                        f(1)
                    } else {
                        f(0)
                    }),
                    38 => Some(u(0).min(u(1))),
                    39 => Some(if i(1) < i(0) { u(1) } else { u(0) }),
                    40 | 80 => fr(if f(1) > f(0) || f(0).is_nan() {
                        f(1)
                    } else {
                        f(0)
                    }),
                    41 => Some(u(0).max(u(1))),
                    42 => Some(if i(1) > i(0) { u(1) } else { u(0) }),
                    43 | 81 => fr(f(0).max(f(1)).min(f(2))),
                    44 => Some(u(0).max(u(1)).min(u(2))),
                    45 => Some((i(0).max(i(1)).min(i(2)) as u64) & m),
                    46 => fr(f(0) * (1.0 - f(2)) + f(1) * f(2)),
                    48 => fr(if f(1) < f(0) { 0.0 } else { 1.0 }),
                    49 => {
                        let t = ((f(2) - f(0)) / (f(1) - f(0))).clamp(0.0, 1.0);
                        fr(t * t * (3.0 - 2.0 * t))
                    }
                    50 => fr(f(0).mul_add(f(1), f(2))),
                    53 => fr(f(0) * 2f64.powi(i(1) as i32)),
                    73 => {
                        let x = u(0) & m;
                        // -1 for zero, as GLSL.std.450 defines.
                        if x == 0 {
                            Some(m)
                        } else {
                            Some(u64::from(x.trailing_zeros()))
                        }
                    }
                    74 => {
                        // FindSMsb: highest bit differing from the sign; -1 and 0 give -1.
                        let x = i(0);
                        let y = if x < 0 { !x } else { x };
                        if y == 0 {
                            Some(m)
                        } else {
                            Some(u64::from(63 - y.leading_zeros()))
                        }
                    }
                    75 => {
                        let x = u(0);
                        if x == 0 {
                            Some(m)
                        } else {
                            Some(u64::from(63 - x.leading_zeros()))
                        }
                    }
                    _ => return Err(unsupported(format!("GLSL.std.450 instruction {ext}"))),
                };
                let r = match r {
                    Some(r) => r,
                    None => self.undefined(&format!("GLSL.std.450 {ext} of zero"), rs),
                };
                self.put(sg, inst, c, l, r);
            }
        }
        Ok(())
    }
}
