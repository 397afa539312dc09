//! `OpGroupNonUniformPartitionNV/EXT`: the ballot of the active lanes whose value equals this
//! lane's, as a match over a normalised key.
//!
//! **Key.** The value split into 32-bit words ([`Code::to_words`]; narrow types zero-extended,
//! 64-bit types two words), with 8- and 16-bit vector components packed into shared words. Floats compare as the spec says
//! (unless [`FloatPartition::Bitwise`]): -0.0 becomes +0.0 before comparing, and a lane whose
//! value has a NaN component ends in a subset of its own. Both tests work on the bits, so
//! fast-math float folding in a driver cannot change them.
//!
//! **Bit-sliced form** (keys of at most 64 significant bits, and at most four per lane of the
//! subgroup: every scalar key and two-word vectors; and every key on a target that has ballots
//! but no way to read another lane; keys of more than [`FIRST_ROUND_MIN_BITS`] bits first try
//! one waterfall round, which answers alone when every active lane holds the same key):
//! `m = act`, then per key bit `j` with `b = Ballot(bit j)`: `m = bit j ? m & b : m & ~b`. No
//! loop, no shuffle: one ballot per key bit plus the active mask. A bool key is the one-bit
//! case: `m = p ? Ballot(p) : act & ~Ballot(p)`.
//!
//! **Differing bits** (keys of two words, such as 64-bit scalars, that the bit-sliced form would
//! take, on a target with the core `arithmetic` ops; it replaces the waterfall round and the full
//! slices there): the waterfall round's test first (the leader's words, one ballot: one key
//! among the active lanes is done), else per key word `d = Or(w ^ w_leader)`, the bits in which
//! the active lanes differ; no bit of `d`, nothing to separate; at most [`LOOP_MAX_BITS`] of
//! them, one ballot per bit of `d` in a uniform loop; more, every bit of the word in a straight
//! line. Its cost follows the number of differing bits (`log2` of the distinct keys for keys
//! like `lane % 4`), not the width. The loop's trip count is the bit count of `d`, whatever the
//! ballots return. One-word keys do not take it: measured on NVIDIA, the reduction costs about
//! a third of the 32 slices it would save, and it saves them only when the keys differ in at
//! most 3 bits (docs/PERFORMANCE.md).
//!
//! [`PartitionForm`] forces one of the forms (for measurement); `Auto` picks as above.
//!
//! **Subgroup size.** When the subgroup size is not known to be at most 32, the match is emitted
//! twice under a uniform branch on `SubgroupSize <= 32` ([`Code::by_subgroup_size`]): one-word
//! masks on devices with subgroups of at most 32 lanes, four-word masks above.
//!
//! **Uniform waterfall** (every other key): `rem = act`, `res = 0`; do { `leader = FindLSB(rem)`;
//! `eq = key == Shuffle(key, leader)` (all words); `b = Ballot(eq)`; `res = eq ? b : res`;
//! `rem &= ~b` } while `rem != 0`. Each round costs one shuffle per key word and one ballot, and
//! there is one round per distinct key among the active lanes. The loop is uniform: `rem` comes
//! from ballots, so every lane leaves it together (lavapipe miscompiles divergent exits).
//! It terminates for every input: `rem` starts non-empty (this lane is active), the leader is an
//! active lane of `rem` (so `FindLSB` never sees zero and the shuffle reads an active lane), and
//! the leader's own key equals itself bit for bit, so `b` holds the leader and `rem` shrinks.
//! The exit test also requires progress (`rem` changed), so even a driver whose ballot disagrees
//! with its shuffle leaves the loop instead of hanging (four scalar ops per round).
//! NaN lanes are not taken out of `rem` up front (that would cost a ballot on every float
//! partition); a NaN lane leads at most one round and is made a singleton afterwards.
//! On a target without shuffles (SPIR-V 1.0 with `SPV_KHR_shader_ballot`) the leader's key is
//! read with `OpSubgroupReadInvocationKHR`, which is legal because the leader is uniform.
//!
//! Ballot bits of inactive lanes are never set (ballots only see active lanes), so the result
//! needs no masking; it is widened to the `uvec4` result type.

use rspirv::dr::{Instruction, Operand};
use spirv::{Capability, GroupOperation, Op};

use super::{id_operand, invalid};
use crate::emit::{Code, Id, Scalar, Ty};
use crate::{FloatPartition, LowerError, PartitionForm};

/// Keys with at most this many significant bits use the bit-sliced form.
///
/// Measured on NVIDIA (docs/PERFORMANCE.md): a waterfall round is a dependent chain of about
/// 60 ns (FindLSB, shuffle, compare, ballot, mask update, loop branch), the first one about 450 ns
/// with the loop's set-up, while the ballots of the bit-sliced form are independent and pipeline
/// at about 2.5 ns per key bit. So even a 64-bit key is cheaper bit-sliced than a waterfall that
/// finds a single key, and the bit-sliced cost never grows with the number of distinct keys.
pub(crate) const BIT_SLICED_MAX_BITS: u32 = 64;

/// A waterfall round costs about this many key bits of the bit-sliced form (see above), so a
/// key with more bits than this many per lane is cheaper as a waterfall even at its worst case
/// (one round per lane): on small subgroups (4 lanes on lavapipe) wide keys loop.
const BITS_PER_ROUND: u32 = 4;

/// A partition key: 32-bit words with their significant bit counts, the bools themselves for
/// bool keys, and whether this lane's key holds a NaN.
struct Key {
    words: Vec<(Id, u32)>,
    bools: Option<Vec<Id>>,
    nan: Option<Id>,
}

impl Key {
    fn bits(&self) -> u32 {
        match &self.bools {
            Some(b) => b.len() as u32,
            None => self.words.iter().map(|w| w.1).sum(),
        }
    }
}

/// Which form a key of `bits` significant bits gets at `max_lanes` lanes.
pub(crate) fn uses_bit_slices(bits: u32, max_lanes: u32) -> bool {
    bits <= BIT_SLICED_MAX_BITS && bits <= BITS_PER_ROUND * max_lanes
}

/// Whether the target can read a value from a uniform lane (a shuffle, or the KHR read
/// invocation). Without either, every key takes the bit-sliced form: ballots only.
fn can_read_lanes(code: &Code) -> bool {
    let t = code.em.target;
    (t.ops.shuffle && code.em.has_core_ballot()) || t.ops.khr_ballot
}

/// Emits the match sequence for `inst`.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let value = id_operand(inst, 0, "Value")?;
    let ty = code.em.ty_of_value(value).ok_or_else(|| {
        invalid(
            inst,
            "the partition value must be a scalar or vector of int, float or bool",
        )
    })?;
    let result_ty = inst.result_type.and_then(|t| code.em.ty_of_id(t));
    let signed_result = match result_ty {
        Some(Ty {
            scalar: Scalar::Int { width: 32, signed },
            n: 4,
        }) => signed,
        _ => {
            return Err(invalid(
                inst,
                "the partition result type must be a 4-component vector of 32-bit integers",
            ))
        }
    };
    let key = make_key(code, ty, value);
    // The same match at 32 lanes when the device's subgroups turn out to have at most 32
    // (single-word masks), else at the largest size.
    let wide = code.by_subgroup_size(Ty::UVEC4, |code| {
        let mut res = match_mask(code, &key)?;
        if let Some(nan) = key.nan {
            let own = code.own_bit()?;
            res = code.mask_select(nan, own, res);
        }
        Ok(code.widen_mask(res))
    })?;
    Ok(if signed_result {
        let t = result_ty.unwrap_or(Ty::UVEC4);
        code.op(Op::Bitcast, t, &[wide])
    } else {
        wide
    })
}

/// The mask of the active lanes whose key equals this lane's, by the form the key and the
/// target call for (see the module doc).
fn match_mask(code: &mut Code, key: &Key) -> Result<Id, LowerError> {
    let words_key = key.bools.is_none();
    let reads = can_read_lanes(code);
    match code.em.partition_form {
        PartitionForm::BitSliced => return bit_sliced(code, key),
        PartitionForm::FirstRound if words_key && reads => {
            return first_round_then_bit_sliced(code, key)
        }
        PartitionForm::DifferingBits if words_key && reads && can_reduce_words(code) => {
            return differing_bits(code, key)
        }
        PartitionForm::Waterfall if reads => return waterfall(code, key),
        _ => {}
    }
    let wide = key.bits() > FIRST_ROUND_MIN_BITS && words_key;
    let sliceable = uses_bit_slices(key.bits(), code.em.max_lanes);
    if !reads {
        bit_sliced(code, key)
    } else if !sliceable {
        waterfall(code, key)
    } else if !wide {
        bit_sliced(code, key)
    } else if key.words.len() > 1 && can_reduce_words(code) {
        differing_bits(code, key)
    } else {
        first_round_then_bit_sliced(code, key)
    }
}

fn make_key(code: &mut Code, ty: Ty, value: Id) -> Key {
    if ty.scalar == Scalar::Bool {
        let bools: Vec<Id> = (0..ty.n)
            .map(|c| {
                if ty.n == 1 {
                    value
                } else {
                    code.extract(Ty::BOOL, value, u32::from(c))
                }
            })
            .collect();
        return Key {
            words: Vec::new(),
            bools: Some(bools),
            nan: None,
        };
    }
    let raw = code.to_words(ty, value);
    let width = ty.scalar.width();
    let per_word = width.min(32);
    let mut words: Vec<(Id, u32)> = raw.iter().map(|&w| (w, per_word)).collect();
    let spec_float = matches!(ty.scalar, Scalar::Float { .. })
        && code.em.float_partition == FloatPartition::Spec;
    let mut nan: Option<Id> = None;
    let step = if width == 64 { 2 } else { 1 };
    let float_words = if spec_float { words.len() } else { 0 };
    for c in (0..float_words).step_by(step) {
        let (this_nan, zero_at) = if width == 64 {
            let (lo, hi) = (words[c].0, words[c + 1].0);
            let abs_mask = code.em.u32(0x7fff_ffff);
            let inf_hi = code.em.u32(0x7ff0_0000);
            let z = code.em.u32(0);
            let a = code.op(Op::BitwiseAnd, Ty::U32, &[hi, abs_mask]);
            let above = code.op(Op::UGreaterThan, Ty::BOOL, &[a, inf_hi]);
            let at = code.op(Op::IEqual, Ty::BOOL, &[a, inf_hi]);
            let lo_nz = code.op(Op::INotEqual, Ty::BOOL, &[lo, z]);
            let at_nan = code.and(at, lo_nz);
            let is_nan = code.or(above, at_nan);
            let either = code.op(Op::BitwiseOr, Ty::U32, &[a, lo]);
            let is_zero = code.op(Op::IEqual, Ty::BOOL, &[either, z]);
            (is_nan, (c + 1, is_zero))
        } else {
            let (abs, inf) = if width == 16 {
                (0x7fff, 0x7c00)
            } else {
                (0x7fff_ffff, 0x7f80_0000)
            };
            let w = words[c].0;
            let abs_mask = code.em.u32(abs);
            let inf = code.em.u32(inf);
            let z = code.em.u32(0);
            let a = code.op(Op::BitwiseAnd, Ty::U32, &[w, abs_mask]);
            let is_nan = code.op(Op::UGreaterThan, Ty::BOOL, &[a, inf]);
            let is_zero = code.op(Op::IEqual, Ty::BOOL, &[a, z]);
            (is_nan, (c, is_zero))
        };
        // -0.0 -> +0.0: clear the word holding the sign (the other word of a zero is zero).
        let (i, is_zero) = zero_at;
        let z = code.em.u32(0);
        words[i].0 = code.select(Ty::U32, is_zero, z, words[i].0);
        nan = Some(match nan {
            None => this_nan,
            Some(n) => code.or(n, this_nan),
        });
    }
    Key {
        words: pack(code, words, width),
        bools: None,
        nan,
    }
}

/// Packs the zero-extended words of 8- and 16-bit components into as few 32-bit words as hold
/// them (an `i8vec4` or `f16vec2` key is one word: one shuffle per round, not four or two).
fn pack(code: &mut Code, words: Vec<(Id, u32)>, width: u32) -> Vec<(Id, u32)> {
    if width >= 32 || words.len() < 2 {
        return words;
    }
    let per = (32 / width) as usize;
    let mut out = Vec::new();
    for group in words.chunks(per) {
        let mut acc = group[0].0;
        for (k, &(w, _)) in group.iter().enumerate().skip(1) {
            let shift = code.em.u32(width * k as u32);
            let moved = code.op(Op::ShiftLeftLogical, Ty::U32, &[w, shift]);
            acc = code.op(Op::BitwiseOr, Ty::U32, &[acc, moved]);
        }
        out.push((acc, width * group.len() as u32));
    }
    out
}

/// Keys with more bits than this try one waterfall round before the bit slices (and keys of two
/// words slice only their differing bits, with the target's bitwise reductions); keys of at most
/// this many bits take the plain bit slices.
/// Measured on NVIDIA (docs/PERFORMANCE.md, in units of the benchmark's `loop-only` time): the
/// round's test costs about 12 (the whole one-key case), about 9 more than the slices when it
/// fails, and a slice about 0.7 per key bit, so 16 slices (12) cost what the one-key test does
/// and the round pays only for wider keys.
const FIRST_ROUND_MIN_BITS: u32 = 16;

/// Whether the target reduces 32-bit words with the core `BitwiseOr`/`BitwiseAnd` (the
/// `arithmetic` feature), which the differing-bits form needs.
fn can_reduce_words(code: &Code) -> bool {
    code.em.has_core_ballot() && code.em.target.ops.arithmetic
}

/// `OpGroupNonUniform<op>` with group operation `Reduce` over a 32-bit word.
fn reduce_word(code: &mut Code, op: Op, w: Id) -> Id {
    code.em.need(Capability::GroupNonUniformArithmetic);
    let scope = code.em.subgroup_scope();
    let t = code.em.ty(Ty::U32);
    code.emit(
        op,
        t,
        vec![
            Operand::IdRef(scope),
            Operand::GroupOperation(GroupOperation::Reduce),
            Operand::IdRef(w),
        ],
    )
}

/// A key word whose active lanes differ in more bits than this is sliced in a straight line
/// over all its bits (independent ballots, which pipeline) instead of in the loop over the
/// differing bits (one dependent round each): keys spread over the word, such as hashes, differ
/// in most of its bits even when there are only a few of them.
/// Measured on NVIDIA (docs/PERFORMANCE.md, in units of the benchmark's `loop-only` time): a
/// loop round costs about 3.3, the 32 straight-line slices about 22, so the break-even is 6 bits.
pub(crate) const LOOP_MAX_BITS: u32 = 6;

/// Bit slices of the differing bits only: per key word `d = Or(w ^ w_leader)` over the active
/// lanes (the leader's word read once, one reduction) holds the bits that are not the same on
/// every active lane; the other
/// bits cannot separate any two lanes. With `d == 0` the word is done; with at most
/// [`LOOP_MAX_BITS`] bits in `d`, one ballot per set bit of `d` in a uniform loop that takes the
/// lowest remaining bit (`low = d ^ (d & (d - 1))`) until `d` is empty:
/// `m &= (w & low) != 0 ? b : ~b`; with more, every bit of the word in a straight line.
/// Keys in `lane % 4` differ in 2 bits and one key in none, so the cost follows the keys, not
/// their width. `d` comes from reductions, so it is the same on every active lane and both the
/// branches and the loop are uniform; the loop ends because each round clears one bit of `d`.
fn differing_bits(code: &mut Code, key: &Key) -> Result<Id, LowerError> {
    let mt = code.em.mask_ty();
    // The leader's words, read once: first the waterfall round's test (measured on NVIDIA, a
    // ballot and a compare decide the one-key case for less than the reduction), then the
    // reductions use them.
    let (act, leader_words, one_key) = leader_round(code, key)?;
    code.uniform_if(
        one_key,
        mt,
        |_| Ok(act),
        |code| differing_words(code, key, act, &leader_words),
    )
}

/// The differing-bits slices of every key word, from `act`, given the leader's words.
fn differing_words(
    code: &mut Code,
    key: &Key,
    act: Id,
    leader_words: &[Id],
) -> Result<Id, LowerError> {
    let mt = code.em.mask_ty();
    let zero = code.em.u32(0);
    let one = code.em.u32(1);
    let mut m = act;
    for (&(w, bits), &lw) in key.words.iter().zip(leader_words) {
        // The bits where some active lane differs from the leader: one reduction (measured on
        // NVIDIA, `Or(w) ^ And(w)` took two, each about a waterfall round).
        let x = code.op(Op::BitwiseXor, Ty::U32, &[w, lw]);
        let diff = reduce_word(code, Op::GroupNonUniformBitwiseOr, x);
        let start = m;
        let in_loop = |code: &mut Code| {
            let differs = code.op(Op::INotEqual, Ty::BOOL, &[diff, zero]);
            code.uniform_if(
                differs,
                mt,
                |code| {
                    let out = code.do_while(&[(mt, start), (Ty::U32, diff)], |c, phis| {
                        let (m, d) = (phis[0], phis[1]);
                        let d1 = c.op(Op::ISub, Ty::U32, &[d, one]);
                        let rest = c.op(Op::BitwiseAnd, Ty::U32, &[d, d1]);
                        let low = c.op(Op::BitwiseXor, Ty::U32, &[d, rest]);
                        let hit = c.op(Op::BitwiseAnd, Ty::U32, &[w, low]);
                        let p = c.op(Op::INotEqual, Ty::BOOL, &[hit, zero]);
                        let b = c.ballot(p)?;
                        let m2 = narrow(c, m, p, b);
                        let again = c.op(Op::INotEqual, Ty::BOOL, &[rest, zero]);
                        Ok((vec![m2, rest], again))
                    })?;
                    Ok(out[0])
                },
                |_| Ok(start),
            )
        };
        m = if bits > LOOP_MAX_BITS {
            let count = code.op(Op::BitCount, Ty::U32, &[diff]);
            let limit = code.em.u32(LOOP_MAX_BITS);
            let many = code.op(Op::UGreaterThan, Ty::BOOL, &[count, limit]);
            code.uniform_if(many, mt, |code| slice_word(code, start, w, bits), in_loop)?
        } else {
            in_loop(code)?
        };
    }
    Ok(m)
}

/// One slice: `m` narrowed to the lanes on this lane's side of the ballot `b` of `p`,
/// `p ? m & b : m & ~b`.
/// Measured on NVIDIA (docs/PERFORMANCE.md), with each bit's test right before its ballot:
/// 0.7 units of `loop-only` per key bit, against 0.88 for `m & (p ? b : ~b)` with all tests
/// emitted first, and 1.0 for `m & ~(b ^ s)` with `s` the bit sign-extended by
/// `OpBitFieldSExtract`.
fn narrow(code: &mut Code, m: Id, p: Id, b: Id) -> Id {
    let with = code.mask_and(m, b);
    let without = code.mask_and_not(m, b);
    code.mask_select(p, with, without)
}

/// Whether bit `j` of the word `w` is set: `(w & (1 << j)) != 0`.
fn bit_of(code: &mut Code, w: Id, j: u32) -> Id {
    let zero = code.em.u32(0);
    let bit = code.em.u32(1 << j);
    let hit = code.op(Op::BitwiseAnd, Ty::U32, &[w, bit]);
    code.op(Op::INotEqual, Ty::BOOL, &[hit, zero])
}

/// `m` narrowed by every bit of one key word, one ballot per bit, in a straight line.
fn slice_word(code: &mut Code, m: Id, w: Id, bits: u32) -> Result<Id, LowerError> {
    let mut m = m;
    for j in 0..bits {
        let p = bit_of(code, w, j);
        let b = code.ballot(p)?;
        m = narrow(code, m, p, b);
    }
    Ok(m)
}

/// One waterfall round first: when every active lane holds the leader's key (the common,
/// uniform-ish case) the answer is the active mask, for one shuffle per key word and one ballot;
/// otherwise the bit slices, whose cost does not grow with the number of distinct keys.
/// The branch condition compares two ballots, so it is the same on every active lane.
fn first_round_then_bit_sliced(code: &mut Code, key: &Key) -> Result<Id, LowerError> {
    let (act, _, one_key) = leader_round(code, key)?;
    let mt = code.em.mask_ty();
    code.uniform_if(one_key, mt, |_| Ok(act), |code| bit_sliced(code, key))
}

/// The waterfall round's test: the active mask, the leader's (lowest active lane's) key words,
/// and whether every active lane holds the leader's key (two ballots compared, so the same on
/// every active lane).
fn leader_round(code: &mut Code, key: &Key) -> Result<(Id, Vec<Id>, Id), LowerError> {
    let act = code.active()?;
    let leader = code.find_lsb(act)?;
    let mut leader_words = Vec::with_capacity(key.words.len());
    let mut eq: Option<Id> = None;
    for &(w, _) in &key.words {
        let lw = code.read_lane_uniform(Ty::U32, w, leader)?;
        let e = code.op(Op::IEqual, Ty::BOOL, &[w, lw]);
        eq = Some(match eq {
            None => e,
            Some(prev) => code.and(prev, e),
        });
        leader_words.push(lw);
    }
    let eq = match eq {
        Some(e) => e,
        None => code.em.constant(Ty::BOOL, 1),
    };
    let b = code.ballot(eq)?;
    let one_key = code.mask_eq(b, act);
    Ok((act, leader_words, one_key))
}

/// One ballot per key bit; no loop. Each bit's test is emitted right before its ballot and
/// slice: measured on NVIDIA (docs/PERFORMANCE.md), all tests first and then all ballots cost
/// 25% more (28 against 22 units of `loop-only` for a 32-bit key).
fn bit_sliced(code: &mut Code, key: &Key) -> Result<Id, LowerError> {
    let mut m = code.active()?;
    if let Some(bools) = &key.bools {
        for &p in bools {
            let b = code.ballot(p)?;
            m = narrow(code, m, p, b);
        }
        return Ok(m);
    }
    for &(w, bits) in &key.words {
        m = slice_word(code, m, w, bits)?;
    }
    Ok(m)
}

/// One round per distinct key: a uniform loop whose trip condition is a ballot.
fn waterfall(code: &mut Code, key: &Key) -> Result<Id, LowerError> {
    let mt = code.em.mask_ty();
    let act = code.active()?;
    let zero = code.mask_zero();
    let words: Vec<Id> = match &key.bools {
        // Bool components packed into one word: bit c is component c.
        Some(bools) => {
            let zero = code.em.u32(0);
            let mut packed = zero;
            for (c, &b) in bools.iter().enumerate() {
                let bit = code.em.u32(1 << c);
                let v = code.select(Ty::U32, b, bit, zero);
                packed = if c == 0 {
                    v
                } else {
                    code.op(Op::BitwiseOr, Ty::U32, &[packed, v])
                };
            }
            vec![packed]
        }
        None => key.words.iter().map(|w| w.0).collect(),
    };
    let out = code.do_while(&[(mt, act), (mt, zero)], |c, phis| {
        let (rem, res) = (phis[0], phis[1]);
        let leader = c.find_lsb(rem)?;
        let mut eq: Option<Id> = None;
        for &w in &words {
            let lw = c.read_lane_uniform(Ty::U32, w, leader)?;
            let e = c.op(Op::IEqual, Ty::BOOL, &[w, lw]);
            eq = Some(match eq {
                None => e,
                Some(prev) => c.and(prev, e),
            });
        }
        let eq = match eq {
            Some(e) => e,
            None => c.em.constant(Ty::BOOL, 1),
        };
        let b = c.ballot(eq)?;
        let res2 = c.mask_select(eq, b, res);
        let rem2 = c.mask_and_not(rem, b);
        // Round again while lanes remain and this round made progress: a driver whose ballot
        // disagreed with its shuffle (a phantom lane in a partial subgroup, say) ends the loop
        // instead of hanging it. With a conforming driver `b` holds the leader, so the second
        // test never decides.
        let left = c.mask_nonzero(rem2);
        let same = c.mask_eq(rem2, rem);
        let moved = c.not(same);
        let again = c.and(left, moved);
        Ok((vec![rem2, res2], again))
    })?;
    Ok(out[1])
}
