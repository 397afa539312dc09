//! The block builder's ballot masks ([`Code`]'s mask helpers): ballots, the lane id and
//! subgroup size, the relative masks, bitwise mask arithmetic and bit scans, each from the
//! target's own op where it has one, else from an equivalent sequence. A mask is a `uint` when
//! at most 32 lanes can exist and a `uvec4` otherwise.

use rspirv::dr::Operand;
use spirv::{BuiltIn, Capability, Op};

use super::{Code, Id, Ty};
use crate::LowerError;

impl Code<'_, '_> {
    /// A ballot of `pred` (a bool) over the active lanes, as a mask.
    pub(crate) fn ballot(&mut self, pred: Id) -> Result<Id, LowerError> {
        let v = if self.em.has_core_ballot() {
            self.em.need(Capability::GroupNonUniformBallot);
            let scope = self.em.subgroup_scope();
            self.op(Op::GroupNonUniformBallot, Ty::UVEC4, &[scope, pred])
        } else if self.em.target.ops.khr_ballot {
            self.em.need(Capability::SubgroupBallotKHR);
            self.em.exts.insert("SPV_KHR_shader_ballot");
            self.op(Op::SubgroupBallotKHR, Ty::UVEC4, &[pred])
        } else {
            return Err(self.missing("a ballot (GroupNonUniformBallot or SubgroupBallotKHR)"));
        };
        Ok(self.narrow_mask(v))
    }

    /// The mask of the lanes executing this instruction.
    pub(crate) fn active(&mut self) -> Result<Id, LowerError> {
        let t = self.em.constant(Ty::BOOL, 1);
        self.ballot(t)
    }

    /// A `uvec4` ballot as a mask (its first word when masks are single words).
    pub(crate) fn narrow_mask(&mut self, v: Id) -> Id {
        if self.em.single_word() {
            self.extract(Ty::U32, v, 0)
        } else {
            v
        }
    }

    /// A mask as the `uvec4` ballot form (the partitioned ops' operand type).
    pub(crate) fn widen_mask(&mut self, m: Id) -> Id {
        if self.em.single_word() {
            let z = self.em.u32(0);
            self.op(Op::CompositeConstruct, Ty::UVEC4, &[m, z, z, z])
        } else {
            m
        }
    }

    /// This lane's index in the subgroup.
    pub(crate) fn lane_id(&mut self) -> Result<Id, LowerError> {
        if self.em.has_core_ballot() || self.em.target.ops.basic {
            self.em.need(Capability::GroupNonUniform);
        } else if self.em.target.ops.khr_ballot {
            self.em.need(Capability::SubgroupBallotKHR);
            self.em.exts.insert("SPV_KHR_shader_ballot");
        } else {
            return Err(self.missing("the SubgroupLocalInvocationId built-in"));
        }
        if self.em.target.restrictions.naga_module && !self.em.size_builtin_ok {
            // naga's validator gives SubgroupInvocationId to the stages it gives SubgroupSize
            // (every one but vertex), so where SubgroupSize is refused the lane id is too.
            return Err(self.missing(
                "the lane id (SubgroupLocalInvocationId) in a function a vertex entry point reaches, which naga's validator refuses there, and the rewrite needs it",
            ));
        }
        if !self.em.lane_id_ok {
            return Err(self.missing(
                "the lane id (SubgroupLocalInvocationId) in a workgroup of more than one dimension, which naga's validator refuses, and the rewrite needs it",
            ));
        }
        Ok(self.load_builtin(BuiltIn::SubgroupLocalInvocationId, Ty::U32))
    }

    /// The `SubgroupSize` built-in; refused where the target cannot load it: without the core
    /// non-uniform built-ins, or in a function the stages of a naga-like consumer reach where
    /// naga refuses the built-in ([`Emitter::size_builtin_ok`]).
    pub(crate) fn subgroup_size(&mut self) -> Result<Id, LowerError> {
        if !(self.em.has_core_ballot() || self.em.target.ops.basic) || !self.em.size_builtin_ok {
            return Err(self.missing("the SubgroupSize built-in"));
        }
        self.em.need(Capability::GroupNonUniform);
        Ok(self.load_builtin(BuiltIn::SubgroupSize, Ty::U32))
    }

    /// The mask of lanes with a lower index than this one (`SubgroupLtMask`).
    pub(crate) fn lt_mask(&mut self) -> Result<Id, LowerError> {
        self.rel_mask(BuiltIn::SubgroupLtMask, false)
    }

    /// The mask of lanes with an index at most this one's (`SubgroupLeMask`).
    pub(crate) fn le_mask(&mut self) -> Result<Id, LowerError> {
        self.rel_mask(BuiltIn::SubgroupLeMask, true)
    }

    fn rel_mask(&mut self, b: BuiltIn, inclusive: bool) -> Result<Id, LowerError> {
        if !self.em.target.restrictions.no_mask_builtins {
            if self.em.has_core_ballot() {
                self.em.need(Capability::GroupNonUniformBallot);
            } else if self.em.target.ops.khr_ballot {
                self.em.need(Capability::SubgroupBallotKHR);
                self.em.exts.insert("SPV_KHR_shader_ballot");
            } else {
                return Err(self.missing("the subgroup mask built-ins"));
            }
            let v = self.load_builtin(b, Ty::UVEC4);
            return Ok(self.narrow_mask(v));
        }
        // Computed from the lane id: word w holds bits below (lane - 32 w), all of them, or none.
        let lane = self.lane_id()?;
        let lane = if inclusive {
            let one = self.em.u32(1);
            self.op(Op::IAdd, Ty::U32, &[lane, one])
        } else {
            lane
        };
        let words = if self.em.single_word() { 1 } else { 4 };
        let mut out = Vec::new();
        for w in 0..words {
            out.push(self.low_bits_word(lane, w)?);
        }
        Ok(if words == 1 {
            out[0]
        } else {
            self.op(Op::CompositeConstruct, Ty::UVEC4, &out)
        })
    }

    /// Word `w` of the mask with the low `count` bits set (count from 0 to 128).
    pub(crate) fn low_bits_word(&mut self, count: Id, w: u32) -> Result<Id, LowerError> {
        let base = self.em.u32(32 * w);
        let top = self.em.u32(32 * w + 32);
        let ones = self.em.u32(u32::MAX);
        let zero = self.em.u32(0);
        let one = self.em.u32(1);
        let thirty_one = self.em.u32(31);
        let full = self.op(Op::UGreaterThanEqual, Ty::BOOL, &[count, top]);
        let empty = self.op(Op::ULessThanEqual, Ty::BOOL, &[count, base]);
        let k = self.op(Op::BitwiseAnd, Ty::U32, &[count, thirty_one]);
        let bit = self.op(Op::ShiftLeftLogical, Ty::U32, &[one, k]);
        let partial = self.op(Op::ISub, Ty::U32, &[bit, one]);
        let v = self.select(Ty::U32, empty, zero, partial);
        Ok(self.select(Ty::U32, full, ones, v))
    }

    /// `a & b` on masks.
    pub(crate) fn mask_and(&mut self, a: Id, b: Id) -> Id {
        let t = self.em.mask_ty();
        self.op(Op::BitwiseAnd, t, &[a, b])
    }

    /// `a | b` on masks.
    #[allow(dead_code, reason = "part of the helper API the rewrites build on")]
    pub(crate) fn mask_or(&mut self, a: Id, b: Id) -> Id {
        let t = self.em.mask_ty();
        self.op(Op::BitwiseOr, t, &[a, b])
    }

    /// `!a` on masks.
    pub(crate) fn mask_not(&mut self, a: Id) -> Id {
        let t = self.em.mask_ty();
        self.op(Op::Not, t, &[a])
    }

    /// `a & !b` on masks.
    pub(crate) fn mask_and_not(&mut self, a: Id, b: Id) -> Id {
        let nb = self.mask_not(b);
        self.mask_and(a, nb)
    }

    /// Whether a mask has any bit set.
    pub(crate) fn mask_nonzero(&mut self, m: Id) -> Id {
        let t = self.em.mask_ty();
        let z = self.em.splat(t, 0);
        if t.n == 1 {
            self.op(Op::INotEqual, Ty::BOOL, &[m, z])
        } else {
            let ne = self.op(Op::INotEqual, Ty::BOOL.with_n(4), &[m, z]);
            self.op(Op::Any, Ty::BOOL, &[ne])
        }
    }

    /// Whether a mask has no bit set.
    pub(crate) fn mask_is_zero(&mut self, m: Id) -> Id {
        let t = self.em.mask_ty();
        let z = self.em.splat(t, 0);
        if t.n == 1 {
            self.op(Op::IEqual, Ty::BOOL, &[m, z])
        } else {
            let eq = self.op(Op::IEqual, Ty::BOOL.with_n(4), &[m, z]);
            self.op(Op::All, Ty::BOOL, &[eq])
        }
    }

    /// `cond ? a : b` on masks (`cond` a scalar bool).
    pub(crate) fn mask_select(&mut self, cond: Id, a: Id, b: Id) -> Id {
        let t = self.em.mask_ty();
        self.select(t, cond, a, b)
    }

    /// The all-zero mask.
    pub(crate) fn mask_zero(&mut self) -> Id {
        let t = self.em.mask_ty();
        self.em.splat(t, 0)
    }

    /// The mask with only this lane's bit set.
    ///
    /// The `SubgroupEqMask` built-in where the target has mask built-ins (one load), else
    /// computed from the lane id.
    pub(crate) fn own_bit(&mut self) -> Result<Id, LowerError> {
        let t = self.em.target;
        if !t.restrictions.no_mask_builtins && (self.em.has_core_ballot() || t.ops.khr_ballot) {
            if self.em.has_core_ballot() {
                self.em.need(Capability::GroupNonUniformBallot);
            } else {
                self.em.need(Capability::SubgroupBallotKHR);
                self.em.exts.insert("SPV_KHR_shader_ballot");
            }
            let v = self.load_builtin(BuiltIn::SubgroupEqMask, Ty::UVEC4);
            return Ok(self.narrow_mask(v));
        }
        let lane = self.lane_id()?;
        Ok(self.lane_bit(lane))
    }

    /// Whether two masks are equal.
    pub(crate) fn mask_eq(&mut self, a: Id, b: Id) -> Id {
        let t = self.em.mask_ty();
        if t.n == 1 {
            self.op(Op::IEqual, Ty::BOOL, &[a, b])
        } else {
            let eq = self.op(Op::IEqual, Ty::BOOL.with_n(4), &[a, b]);
            self.op(Op::All, Ty::BOOL, &[eq])
        }
    }

    /// Index of the lowest set bit of a mask. Never an undefined value: when the mask is zero it
    /// is some fixed index (callers that can see an empty mask select on `mask_nonzero`).
    pub(crate) fn find_lsb(&mut self, m: Id) -> Result<Id, LowerError> {
        self.find_bit(m, false)
    }

    /// Index of the highest set bit of a mask; as `find_lsb`, defined when the mask is zero.
    pub(crate) fn find_msb(&mut self, m: Id) -> Result<Id, LowerError> {
        self.find_bit(m, true)
    }

    fn find_bit(&mut self, m: Id, msb: bool) -> Result<Id, LowerError> {
        // GLSL.std.450 FindILsb = 73, FindUMsb = 75.
        let glsl_op = if msb { 75 } else { 73 };
        if self.em.single_word() {
            return Ok(self.glsl(glsl_op, Ty::U32, &[m]));
        }
        if self.em.has_core_ballot() && !self.em.target.restrictions.no_ballot_bit_ops {
            let scope = self.em.subgroup_scope();
            // The core ops leave an empty ballot's result undefined (the spec's "undefined
            // value"), and the pointer-jumping scans ask before knowing the mask is non-empty.
            // A guard bit at the far end cannot change the answer for a non-empty mask, so it
            // makes the result defined for an empty one at the cost of one OR.
            let (op, guard) = if msb {
                (Op::GroupNonUniformBallotFindMSB, [1, 0, 0, 0])
            } else {
                (Op::GroupNonUniformBallotFindLSB, [0, 0, 0, 1 << 31])
            };
            let guard = self.em.vector(Ty::U32.with_n(4), &guard);
            let guarded = self.mask_or(m, guard);
            return Ok(self.op(op, Ty::U32, &[scope, guarded]));
        }
        // Per word, then pick the lowest (highest) non-zero word with a select chain.
        let zero = self.em.u32(0);
        // Words at or beyond the largest subgroup are always zero and are skipped.
        let used = self.em.mask_words();
        let order: Vec<u32> = if msb {
            (0..used).collect()
        } else {
            (0..used).rev().collect()
        };
        let mut result = self.em.u32(u32::MAX);
        for w in order {
            let word = self.extract(Ty::U32, m, w);
            let bit = self.glsl(glsl_op, Ty::U32, &[word]);
            let off = self.em.u32(32 * w);
            let idx = self.op(Op::IAdd, Ty::U32, &[bit, off]);
            let nz = self.op(Op::INotEqual, Ty::BOOL, &[word, zero]);
            result = self.select(Ty::U32, nz, idx, result);
        }
        Ok(result)
    }

    /// Number of set bits of a mask.
    pub(crate) fn bit_count(&mut self, m: Id) -> Result<Id, LowerError> {
        if self.em.single_word() {
            return Ok(self.op(Op::BitCount, Ty::U32, &[m]));
        }
        if self.em.has_core_ballot() && !self.em.target.restrictions.no_ballot_bit_ops {
            let scope = self.em.subgroup_scope();
            let t = self.em.ty(Ty::U32);
            return Ok(self.emit(
                Op::GroupNonUniformBallotBitCount,
                t,
                vec![
                    Operand::IdRef(scope),
                    Operand::GroupOperation(spirv::GroupOperation::Reduce),
                    Operand::IdRef(m),
                ],
            ));
        }
        let counts = self.op(Op::BitCount, Ty::UVEC4, &[m]);
        let mut sum = self.extract(Ty::U32, counts, 0);
        for w in 1..self.em.mask_words() {
            let c = self.extract(Ty::U32, counts, w);
            sum = self.op(Op::IAdd, Ty::U32, &[sum, c]);
        }
        Ok(sum)
    }

    /// Whether bit `lane` of a mask is set (`lane` below the subgroup size).
    pub(crate) fn bit_test(&mut self, m: Id, lane: Id) -> Result<Id, LowerError> {
        let one = self.em.u32(1);
        let zero = self.em.u32(0);
        let word = if self.em.single_word() {
            m
        } else if self.em.has_core_ballot() && !self.em.target.restrictions.no_ballot_bit_ops {
            let scope = self.em.subgroup_scope();
            return Ok(self.op(
                Op::GroupNonUniformBallotBitExtract,
                Ty::BOOL,
                &[scope, m, lane],
            ));
        } else {
            let five = self.em.u32(5);
            let w = self.op(Op::ShiftRightLogical, Ty::U32, &[lane, five]);
            self.op(Op::VectorExtractDynamic, Ty::U32, &[m, w])
        };
        let thirty_one = self.em.u32(31);
        let k = self.op(Op::BitwiseAnd, Ty::U32, &[lane, thirty_one]);
        let shifted = self.op(Op::ShiftRightLogical, Ty::U32, &[word, k]);
        let bit = self.op(Op::BitwiseAnd, Ty::U32, &[shifted, one]);
        Ok(self.op(Op::INotEqual, Ty::BOOL, &[bit, zero]))
    }

    /// The mask with only bit `lane` set.
    pub(crate) fn lane_bit(&mut self, lane: Id) -> Id {
        let one = self.em.u32(1);
        let thirty_one = self.em.u32(31);
        let k = self.op(Op::BitwiseAnd, Ty::U32, &[lane, thirty_one]);
        let bit = self.op(Op::ShiftLeftLogical, Ty::U32, &[one, k]);
        if self.em.single_word() {
            return bit;
        }
        let zero = self.em.u32(0);
        let five = self.em.u32(5);
        let w = self.op(Op::ShiftRightLogical, Ty::U32, &[lane, five]);
        let mut words = Vec::new();
        for i in 0..4 {
            let wi = self.em.u32(i);
            let here = self.op(Op::IEqual, Ty::BOOL, &[w, wi]);
            words.push(self.select(Ty::U32, here, bit, zero));
        }
        self.op(Op::CompositeConstruct, Ty::UVEC4, &words)
    }
}
