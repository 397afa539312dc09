//! The block builder's lane crossing ([`Code`]'s shuffle helpers): a value as read from another
//! lane (by shuffle, broadcast or, where the target has neither, by ballots), and the splitting
//! of any value into 32-bit words and back that those reads go through.

use spirv::{Capability, Op};

use super::{Code, Id, Scalar, Ty};
use crate::LowerError;

impl Code<'_, '_> {
    /// `value` as read from lane `lane` (any type [`Ty`] describes). The result is undefined when
    /// that lane is inactive or out of range: callers consume it only under a validity select.
    pub(crate) fn shuffle(&mut self, ty: Ty, value: Id, lane: Id) -> Result<Id, LowerError> {
        if !self.em.has_shuffle() {
            return Err(self.missing("shuffles (GroupNonUniformShuffle)"));
        }
        self.em.need(Capability::GroupNonUniformShuffle);
        let scope = self.em.subgroup_scope();
        let direct = match ty.scalar {
            Scalar::Bool => !self.em.target.restrictions.no_bool_shuffle,
            s => s.width() == 32 || self.em.target.extended_types,
        };
        if direct {
            return Ok(self.op(Op::GroupNonUniformShuffle, ty, &[scope, value, lane]));
        }
        let words = self.to_words(ty, value);
        let mut moved = Vec::with_capacity(words.len());
        for w in words {
            moved.push(self.op(Op::GroupNonUniformShuffle, Ty::U32, &[scope, w, lane]));
        }
        Ok(self.from_words(ty, &moved))
    }

    /// `value` as read from lane `lane` (any lane, chosen per invocation): a shuffle where the
    /// target has one, else one ballot per bit of the value ([`Code::read_lane_by_ballots`]).
    /// Undefined, as for [`Code::shuffle`], when that lane is inactive or out of range.
    pub(crate) fn read_lane(&mut self, ty: Ty, value: Id, lane: Id) -> Result<Id, LowerError> {
        if self.em.has_shuffle() {
            return self.shuffle(ty, value, lane);
        }
        self.read_lane_by_ballots(ty, value, lane)
    }

    /// `value` as read from lane `lane` without a shuffle: for every bit of every 32-bit word
    /// of the value, a ballot of that bit, and the source lane's bit of that ballot.
    ///
    /// Cost: one ballot per bit (32 per 32-bit word, the width for 8/16-bit values, 1 for a
    /// bool), and per bit about six scalar ops. A ballot has no bit for an inactive lane, so an
    /// inactive or out-of-range source reads zeros: a defined value where the original was
    /// undefined. The lane's word index is masked to the four words of a ballot, so no
    /// out-of-range vector index is ever computed.
    pub(crate) fn read_lane_by_ballots(
        &mut self,
        ty: Ty,
        value: Id,
        lane: Id,
    ) -> Result<Id, LowerError> {
        let bits = match ty.scalar {
            Scalar::Bool => 1,
            s => s.width().min(32),
        };
        let words = self.to_words(ty, value);
        let zero = self.em.u32(0);
        let one = self.em.u32(1);
        let thirty_one = self.em.u32(31);
        let shift = self.op(Op::BitwiseAnd, Ty::U32, &[lane, thirty_one]);
        let word_index = if self.em.single_word() {
            None
        } else {
            let five = self.em.u32(5);
            let three = self.em.u32(3);
            let w = self.op(Op::ShiftRightLogical, Ty::U32, &[lane, five]);
            Some(self.op(Op::BitwiseAnd, Ty::U32, &[w, three]))
        };
        let mut out = Vec::with_capacity(words.len());
        for w in words {
            let mut acc = zero;
            for b in 0..bits {
                let set = if bits == 1 {
                    self.op(Op::INotEqual, Ty::BOOL, &[w, zero])
                } else {
                    let bit = self.em.u32(1 << b);
                    let masked = self.op(Op::BitwiseAnd, Ty::U32, &[w, bit]);
                    self.op(Op::INotEqual, Ty::BOOL, &[masked, zero])
                };
                let ballot = self.ballot(set)?;
                let word = match word_index {
                    Some(i) => self.op(Op::VectorExtractDynamic, Ty::U32, &[ballot, i]),
                    None => ballot,
                };
                let shifted = self.op(Op::ShiftRightLogical, Ty::U32, &[word, shift]);
                let got = self.op(Op::BitwiseAnd, Ty::U32, &[shifted, one]);
                acc = if b == 0 {
                    got
                } else {
                    let at = self.em.u32(b);
                    let placed = self.op(Op::ShiftLeftLogical, Ty::U32, &[got, at]);
                    self.op(Op::BitwiseOr, Ty::U32, &[acc, placed])
                };
            }
            out.push(acc);
        }
        Ok(self.from_words(ty, &out))
    }

    /// `value` as read from lane `lane`, where `lane` is subgroup-uniform (e.g. chosen from a
    /// ballot). Uses a shuffle where the target has one, else `OpSubgroupReadInvocationKHR`
    /// (`SPV_KHR_shader_ballot`, which requires the uniform index), one per 32-bit word.
    pub(crate) fn read_lane_uniform(
        &mut self,
        ty: Ty,
        value: Id,
        lane: Id,
    ) -> Result<Id, LowerError> {
        if self.em.has_shuffle() {
            return self.shuffle(ty, value, lane);
        }
        if !self.em.target.ops.khr_ballot {
            return Err(
                self.missing("shuffles (GroupNonUniformShuffle) or OpSubgroupReadInvocationKHR")
            );
        }
        self.em.need(Capability::SubgroupBallotKHR);
        self.em.exts.insert("SPV_KHR_shader_ballot");
        let words = self.to_words(ty, value);
        let mut moved = Vec::with_capacity(words.len());
        for w in words {
            moved.push(self.op(Op::SubgroupReadInvocationKHR, Ty::U32, &[w, lane]));
        }
        Ok(self.from_words(ty, &moved))
    }

    /// Splits a value into 32-bit unsigned words (bools become 0/1; narrow types are zero-extended).
    #[allow(
        clippy::wrong_self_convention,
        reason = "a builder method: it emits the conversion"
    )]
    pub(crate) fn to_words(&mut self, ty: Ty, value: Id) -> Vec<Id> {
        let mut out = Vec::new();
        for c in 0..ty.n {
            let comp = if ty.n == 1 {
                value
            } else {
                self.extract(ty.component(), value, u32::from(c))
            };
            match ty.scalar {
                Scalar::Bool => {
                    let one = self.em.u32(1);
                    let zero = self.em.u32(0);
                    out.push(self.select(Ty::U32, comp, one, zero));
                }
                Scalar::Int { width: 32, .. } | Scalar::Float { width: 32 } => {
                    out.push(if ty.scalar == Ty::U32.scalar {
                        comp
                    } else {
                        self.op(Op::Bitcast, Ty::U32, &[comp])
                    });
                }
                Scalar::Int { width: 64, .. } | Scalar::Float { width: 64 } => {
                    let (lo, hi) = self.split64(ty.component(), comp);
                    out.push(lo);
                    out.push(hi);
                }
                Scalar::Float { width: 16 } if self.em.int16_words => {
                    // Bitcast to a 16-bit integer keeps every bit (NaN payloads included);
                    // UConvert then zero-extends it.
                    let half = self.op(Op::Bitcast, Ty::U16, &[comp]);
                    out.push(self.op(Op::UConvert, Ty::U32, &[half]));
                }
                Scalar::Float { width: 16 } => {
                    // Through a half vector: no 16-bit integer type (and no Int16 capability) needed.
                    let zero = self.em.constant(ty.component(), 0);
                    let pair = self.op(
                        Op::CompositeConstruct,
                        ty.component().with_n(2),
                        &[comp, zero],
                    );
                    out.push(self.op(Op::Bitcast, Ty::U32, &[pair]));
                }
                Scalar::Int { .. } | Scalar::Float { .. } => {
                    // UConvert zero-extends any integer operand, signed or not.
                    out.push(self.op(Op::UConvert, Ty::U32, &[comp]));
                }
            }
        }
        out
    }

    /// The inverse of [`Code::to_words`].
    #[allow(
        clippy::wrong_self_convention,
        reason = "a builder method: it emits the conversion"
    )]
    pub(crate) fn from_words(&mut self, ty: Ty, words: &[Id]) -> Id {
        let mut comps = Vec::new();
        let mut it = words.iter().copied();
        for _ in 0..ty.n {
            let c = ty.component();
            let comp = match ty.scalar {
                Scalar::Bool => {
                    let w = it.next().unwrap_or(0);
                    let zero = self.em.u32(0);
                    self.op(Op::INotEqual, Ty::BOOL, &[w, zero])
                }
                Scalar::Int { width: 32, .. } | Scalar::Float { width: 32 } => {
                    let w = it.next().unwrap_or(0);
                    if ty.scalar == Ty::U32.scalar {
                        w
                    } else {
                        self.op(Op::Bitcast, c, &[w])
                    }
                }
                Scalar::Int { width: 64, .. } | Scalar::Float { width: 64 } => {
                    let lo = it.next().unwrap_or(0);
                    let hi = it.next().unwrap_or(0);
                    self.join64(c, lo, hi)
                }
                Scalar::Float { width: 16 } if self.em.int16_words => {
                    let w = it.next().unwrap_or(0);
                    let half = self.op(Op::UConvert, Ty::U16, &[w]);
                    self.op(Op::Bitcast, c, &[half])
                }
                Scalar::Float { width: 16 } => {
                    let w = it.next().unwrap_or(0);
                    let pair = self.op(Op::Bitcast, c.with_n(2), &[w]);
                    self.extract(c, pair, 0)
                }
                Scalar::Int { signed, .. } => {
                    // Truncation: UConvert needs an unsigned result, SConvert takes either.
                    let w = it.next().unwrap_or(0);
                    self.op(if signed { Op::SConvert } else { Op::UConvert }, c, &[w])
                }
                Scalar::Float { .. } => {
                    // No other IEEE width exists; an odd width is rejected where the type is indexed.
                    let w = it.next().unwrap_or(0);
                    self.op(Op::Bitcast, c, &[w])
                }
            };
            comps.push(comp);
        }
        if ty.n == 1 {
            comps[0]
        } else {
            self.op(Op::CompositeConstruct, ty, &comps)
        }
    }

    /// The low and high 32-bit words of a 64-bit scalar. Integers are split with conversions
    /// and a shift (valid everywhere, naga included); a double is bitcast to a `uvec2`, or to a
    /// 64-bit integer first where the module has `Int64` or the consumer cannot take the vector
    /// bitcast.
    fn split64(&mut self, ty: Ty, v: Id) -> (Id, Id) {
        if let Scalar::Float { .. } = ty.scalar {
            if !self.em.int64_words {
                let pair = self.op(Op::Bitcast, Ty::U32.with_n(2), &[v]);
                return (
                    self.extract(Ty::U32, pair, 0),
                    self.extract(Ty::U32, pair, 1),
                );
            }
        }
        let u64t = Ty {
            scalar: Scalar::Int {
                width: 64,
                signed: false,
            },
            n: 1,
        };
        let bits = if ty == u64t {
            v
        } else {
            self.op(Op::Bitcast, u64t, &[v])
        };
        let shift = self.em.constant(u64t, 32);
        let lo = self.op(Op::UConvert, Ty::U32, &[bits]);
        let high = self.op(Op::ShiftRightLogical, u64t, &[bits, shift]);
        let hi = self.op(Op::UConvert, Ty::U32, &[high]);
        (lo, hi)
    }

    /// The inverse of [`Code::split64`].
    fn join64(&mut self, ty: Ty, lo: Id, hi: Id) -> Id {
        if let Scalar::Float { .. } = ty.scalar {
            if !self.em.int64_words {
                let pair = self.op(Op::CompositeConstruct, Ty::U32.with_n(2), &[lo, hi]);
                return self.op(Op::Bitcast, ty, &[pair]);
            }
        }
        let u64t = Ty {
            scalar: Scalar::Int {
                width: 64,
                signed: false,
            },
            n: 1,
        };
        let shift = self.em.constant(u64t, 32);
        let lo64 = self.op(Op::UConvert, u64t, &[lo]);
        let hi64 = self.op(Op::UConvert, u64t, &[hi]);
        let high = self.op(Op::ShiftLeftLogical, u64t, &[hi64, shift]);
        let bits = self.op(Op::BitwiseOr, u64t, &[high, lo64]);
        if ty == u64t {
            bits
        } else {
            self.op(Op::Bitcast, ty, &[bits])
        }
    }

    /// The mask of the lanes below the subgroup size: the bits a ballot bit op considers.
    ///
    /// All ones for the words a mask holds when the subgroup size is fixed at the mask's
    /// width, else computed from the `SubgroupSize` built-in per word (shifts stay below 32).
    pub(crate) fn size_mask(&mut self) -> Result<Id, LowerError> {
        let size = self.subgroup_size()?;
        if self.em.single_word() {
            return self.low_bits_word(size, 0);
        }
        let mut words = Vec::with_capacity(4);
        for w in 0..4 {
            words.push(self.low_bits_word(size, w)?);
        }
        Ok(self.op(Op::CompositeConstruct, Ty::UVEC4, &words))
    }
}
