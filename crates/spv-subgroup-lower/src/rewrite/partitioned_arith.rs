//! Partitioned reduce and scans: the 16 arithmetic ops with group operation
//! `PartitionedReduceNV`/`PartitionedInclusiveScanNV`/`PartitionedExclusiveScanNV`.
//!
//! Three sequences, picked by the value type and the target:
//!
//! - **bool values** (`LogicalAnd/Or/Xor`): ballots only, no shuffle. Per component one ballot of
//!   the value (of its negation for `And`), masked by the subset (and by `lt`/`le` for scans):
//!   `And = none false`, `Or = any true`, `Xor = odd count of trues`.
//! - **integer and float values, shuffle targets**: pointer jumping over each lane's predecessor
//!   in its subset. `m = ballot & active`; `q = FindMSB(m & lt)`, or this lane's own index when
//!   it has no predecessor (so every shuffle reads an active lane, and `q == self` means "none");
//!   `log2(max lanes)` steps of `v = Shuffle(acc, q)`, `p = Shuffle(q, q)`,
//!   `acc = valid ? op(v, acc) : acc`, `valid = p != q`, `q = valid ? p : self` (a lane without
//!   predecessor reads back its own index, so validity needs no extra shuffle; the last step
//!   needs no `p`). Inclusive = `acc`;
//!   exclusive = `Shuffle(acc, first q)` or the identity; reduce = `Shuffle(acc, FindMSB(m))`.
//!   When the target has the core arithmetic op for the type, a *uniform* branch takes it instead
//!   when one subset holds every active lane (`m == active`: if it holds for one active lane of
//!   a valid partition it holds for all of them).
//! - **integer and float values, `SPV_KHR_shader_ballot` only**: a lane-serial uniform loop over
//!   the active lanes: `leader = FindLSB(rem)`, `v = ReadInvocation(x, leader)`, lanes whose subset
//!   holds the leader (and, for scans, whose index is above, or at, the leader's) accumulate,
//!   `rem &= ~bit(leader)`; the loop condition comes from the ballot, so the loop is uniform.
//!
//! Operand order is always `op(earlier, later)`, so float results round as a left-to-right scan
//! in lane order would group them (pointer jumping groups differently, as every tree scan does).
//! `FMin`/`FMax` use `GLSL.std.450 NMin/NMax`: when one operand is NaN the other is chosen, as the
//! core `OpGroupNonUniformFMin/FMax` specify.

use rspirv::dr::{Instruction, Operand};
use spirv::{Capability, GroupOperation, Op};

use crate::emit::{Code, Id, Scalar, Ty};
use crate::LowerError;

/// `GLSL.std.450` instruction numbers used here.
mod glsl {
    pub const UMIN: u32 = 38;
    pub const SMIN: u32 = 39;
    pub const UMAX: u32 = 41;
    pub const SMAX: u32 = 42;
    pub const NMIN: u32 = 79;
    pub const NMAX: u32 = 80;
}

/// The arithmetic of one partitioned op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arith {
    IAdd,
    FAdd,
    IMul,
    FMul,
    SMin,
    UMin,
    FMin,
    SMax,
    UMax,
    FMax,
    And,
    Or,
    Xor,
    LogicalAnd,
    LogicalOr,
    LogicalXor,
}

/// Which value types an [`Arith`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    Int,
    Float,
    Bool,
}

impl Arith {
    fn of(op: Op) -> Option<Arith> {
        Some(match op {
            Op::GroupNonUniformIAdd => Arith::IAdd,
            Op::GroupNonUniformFAdd => Arith::FAdd,
            Op::GroupNonUniformIMul => Arith::IMul,
            Op::GroupNonUniformFMul => Arith::FMul,
            Op::GroupNonUniformSMin => Arith::SMin,
            Op::GroupNonUniformUMin => Arith::UMin,
            Op::GroupNonUniformFMin => Arith::FMin,
            Op::GroupNonUniformSMax => Arith::SMax,
            Op::GroupNonUniformUMax => Arith::UMax,
            Op::GroupNonUniformFMax => Arith::FMax,
            Op::GroupNonUniformBitwiseAnd => Arith::And,
            Op::GroupNonUniformBitwiseOr => Arith::Or,
            Op::GroupNonUniformBitwiseXor => Arith::Xor,
            Op::GroupNonUniformLogicalAnd => Arith::LogicalAnd,
            Op::GroupNonUniformLogicalOr => Arith::LogicalOr,
            Op::GroupNonUniformLogicalXor => Arith::LogicalXor,
            _ => return None,
        })
    }

    fn family(self) -> Family {
        match self {
            Arith::FAdd | Arith::FMul | Arith::FMin | Arith::FMax => Family::Float,
            Arith::LogicalAnd | Arith::LogicalOr | Arith::LogicalXor => Family::Bool,
            _ => Family::Int,
        }
    }

    /// The identity's bit pattern for a component of `width` bits.
    fn identity_bits(self, width: u32) -> u64 {
        let ones = if width >= 64 {
            u64::MAX
        } else {
            (1u64 << width) - 1
        };
        let sign = 1u64 << (width.clamp(1, 64) - 1);
        let float = |h: u64, s: u64, d: u64| match width {
            16 => h,
            64 => d,
            _ => s,
        };
        match self {
            Arith::IAdd | Arith::UMax | Arith::Or | Arith::Xor | Arith::FAdd => 0,
            Arith::IMul => 1,
            Arith::FMul => float(0x3c00, 0x3f80_0000, 0x3ff0_0000_0000_0000),
            Arith::SMin => ones >> 1,
            Arith::UMin | Arith::And => ones,
            Arith::SMax => sign,
            Arith::FMin => float(0x7c00, 0x7f80_0000, 0x7ff0_0000_0000_0000),
            Arith::FMax => float(0xfc00, 0xff80_0000, 0xfff0_0000_0000_0000),
            Arith::LogicalAnd => 1,
            Arith::LogicalOr | Arith::LogicalXor => 0,
        }
    }
}

/// Whether `op` is one of the 16 arithmetic ops.
pub(crate) fn is_arith_op(op: Op) -> bool {
    Arith::of(op).is_some()
}

/// Whether `inst` is one of the 16 arithmetic ops with a partitioned group operation.
pub(crate) fn is_partitioned_arith(inst: &Instruction) -> bool {
    Arith::of(inst.class.opcode).is_some()
        && matches!(
            inst.operands.get(1),
            Some(Operand::GroupOperation(
                GroupOperation::PartitionedReduceNV
                    | GroupOperation::PartitionedInclusiveScanNV
                    | GroupOperation::PartitionedExclusiveScanNV
            ))
        )
}

/// The scan kind of a partitioned group operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scan {
    Reduce,
    Inclusive,
    Exclusive,
}

/// Emits the replacement of a partitioned arithmetic instruction; returns the id of its result.
pub(crate) fn lower(code: &mut Code, inst: &Instruction) -> Result<Id, LowerError> {
    let result_id = inst.result_id.unwrap_or(0);
    let invalid = |message: &str| LowerError::Invalid {
        result_id,
        message: message.to_owned(),
    };
    let arith =
        Arith::of(inst.class.opcode).ok_or_else(|| invalid("not a partitioned arithmetic op"))?;
    let (scan, value, ballot) = match inst.operands.as_slice() {
        [Operand::IdScope(_) | Operand::IdRef(_), Operand::GroupOperation(g), Operand::IdRef(v), Operand::IdRef(b)] =>
        {
            let scan = match *g {
                GroupOperation::PartitionedReduceNV => Scan::Reduce,
                GroupOperation::PartitionedInclusiveScanNV => Scan::Inclusive,
                GroupOperation::PartitionedExclusiveScanNV => Scan::Exclusive,
                _ => return Err(invalid("the group operation is not a partitioned one")),
            };
            (scan, *v, *b)
        }
        _ => {
            return Err(invalid(
                "expected operands: scope, partitioned group operation, value, ballot",
            ))
        }
    };
    let ty = inst
        .result_type
        .and_then(|t| code.em.ty_of_id(t))
        .ok_or_else(|| invalid("the result type is not a scalar or vector"))?;
    if code.em.ty_of_value(value) != Some(ty) {
        return Err(invalid("the value's type differs from the result type"));
    }
    if code.em.ty_of_value(ballot) != Some(Ty::UVEC4) {
        return Err(invalid(
            "the ballot is not a vector of four 32-bit unsigned integers",
        ));
    }
    let family_ok = match (arith.family(), ty.scalar) {
        (Family::Bool, Scalar::Bool) => true,
        (Family::Int, Scalar::Int { .. }) => true,
        (Family::Float, Scalar::Float { width }) => matches!(width, 16 | 32 | 64),
        _ => false,
    };
    if !family_ok || ty.scalar.width() > 64 {
        return Err(invalid("the value type does not fit the opcode"));
    }
    let op = Step { arith, ty };
    if arith.family() == Family::Bool {
        return logical(code, op, scan, value, ballot);
    }
    if uses_bit_slices(code, arith, ty) {
        return bit_sliced(code, op, scan, value, ballot);
    }
    if code.em.has_core_ballot() && code.em.target.ops.shuffle {
        let fast = core_op_available(code, arith, scan, ty);
        if fast {
            return code.by_subgroup_size(ty, |code| {
                with_fast_path(code, inst, op, scan, value, ballot)
            });
        }
        return code.by_subgroup_size(ty, |code| {
            let ballot = code.narrow_mask(ballot);
            let act = code.active()?;
            let m = code.mask_and(ballot, act);
            pointer_jumping(code, op, scan, value, m)
        });
    }
    if code.em.target.ops.khr_ballot {
        return serial(code, op, scan, value, ballot);
    }
    Err(code.missing(
        "shuffles (GroupNonUniformShuffle) or SPV_KHR_shader_ballot for partitioned arithmetic",
    ))
}

/// Whether the target runs the core `OpGroupNonUniform<op>` with the non-partitioned form of
/// `scan` on values of `ty` (the fast path).
///
/// Consumers shaped like naga's front end have scans of `Add`/`Mul` only and bitwise ops of 32
/// bits or more (the target's restrictions say so).
fn core_op_available(code: &Code, arith: Arith, scan: Scan, ty: Ty) -> bool {
    let target = code.em.target;
    if !target.ops.arithmetic || !(ty.scalar.width() == 32 || target.extended_types) {
        return false;
    }
    let r = target.restrictions;
    let add_mul = matches!(arith, Arith::IAdd | Arith::FAdd | Arith::IMul | Arith::FMul);
    let bitwise = matches!(arith, Arith::And | Arith::Or | Arith::Xor);
    !(r.scans_add_mul_only && scan != Scan::Reduce && !add_mul
        || r.bitwise_32_bit_only && bitwise && ty.scalar.width() < 32)
}

/// The binary operation of one rewrite, on values of one type.
#[derive(Clone, Copy, Debug)]
struct Step {
    arith: Arith,
    ty: Ty,
}

impl Step {
    /// `op(a, b)`, `a` the earlier operand.
    fn apply(self, code: &mut Code, a: Id, b: Id) -> Id {
        let ty = self.ty;
        let direct = |code: &mut Code, op: Op| code.op(op, ty, &[a, b]);
        match self.arith {
            Arith::IAdd => direct(code, Op::IAdd),
            Arith::FAdd => direct(code, Op::FAdd),
            Arith::IMul => direct(code, Op::IMul),
            Arith::FMul => direct(code, Op::FMul),
            Arith::And => direct(code, Op::BitwiseAnd),
            Arith::Or => direct(code, Op::BitwiseOr),
            Arith::Xor => direct(code, Op::BitwiseXor),
            Arith::LogicalAnd => direct(code, Op::LogicalAnd),
            Arith::LogicalOr => direct(code, Op::LogicalOr),
            Arith::LogicalXor => direct(code, Op::LogicalNotEqual),
            Arith::SMin => code.glsl(glsl::SMIN, ty, &[a, b]),
            Arith::UMin => code.glsl(glsl::UMIN, ty, &[a, b]),
            Arith::SMax => code.glsl(glsl::SMAX, ty, &[a, b]),
            Arith::UMax => code.glsl(glsl::UMAX, ty, &[a, b]),
            Arith::FMin => code.glsl(glsl::NMIN, ty, &[a, b]),
            Arith::FMax => code.glsl(glsl::NMAX, ty, &[a, b]),
        }
    }

    /// The identity, splatted over the type's components.
    ///
    /// The infinities of `FMin`/`FMax` are made at run time, as a bitcast of an integer
    /// constant: naga's validator rejects non-finite float constants.
    fn identity(self, code: &mut Code) -> Id {
        let width = self.ty.scalar.width();
        let bits = self.arith.identity_bits(width);
        if !matches!(self.arith, Arith::FMin | Arith::FMax) {
            return code.em.splat(self.ty, bits);
        }
        let ity = Ty {
            scalar: Scalar::Int {
                width: width as u8,
                signed: false,
            },
            n: self.ty.n,
        };
        let ints = code.em.splat(ity, bits);
        code.op(Op::Bitcast, self.ty, &[ints])
    }
}

/// `cond ? a : b` for values of `ty`, with a scalar bool condition (splatted for vectors, as
/// SPIR-V before 1.4 requires).
fn pick(code: &mut Code, ty: Ty, cond: Id, a: Id, b: Id) -> Id {
    let cond = if ty.n > 1 {
        let conds = vec![cond; usize::from(ty.n)];
        code.op(Op::CompositeConstruct, Ty::BOOL.with_n(ty.n), &conds)
    } else {
        cond
    };
    code.select(ty, cond, a, b)
}

/// The lanes of subset `m` whose values a lane's result covers: all of them for a reduce, those
/// up to this lane for an inclusive scan, those below it for an exclusive one.
fn counted_lanes(code: &mut Code, scan: Scan, m: Id) -> Result<Id, LowerError> {
    Ok(match scan {
        Scan::Reduce => m,
        Scan::Inclusive => {
            let le = code.le_mask()?;
            code.mask_and(m, le)
        }
        Scan::Exclusive => {
            let lt = code.lt_mask()?;
            code.mask_and(m, lt)
        }
    })
}

/// Logical ops on bools: one ballot per component, no shuffle.
fn logical(code: &mut Code, op: Step, scan: Scan, value: Id, ballot: Id) -> Result<Id, LowerError> {
    // Ballots of the value only hold active lanes, so the partition ballot needs no `& active`.
    let m = code.narrow_mask(ballot);
    let m = counted_lanes(code, scan, m)?;
    let mut comps = Vec::with_capacity(usize::from(op.ty.n));
    for c in 0..op.ty.n {
        let x = if op.ty.n == 1 {
            value
        } else {
            code.extract(Ty::BOOL, value, u32::from(c))
        };
        let r = match op.arith {
            Arith::LogicalAnd => {
                let not_x = code.op(Op::LogicalNot, Ty::BOOL, &[x]);
                let b = code.ballot(not_x)?;
                let falses = code.mask_and(b, m);
                let any = code.mask_nonzero(falses);
                code.op(Op::LogicalNot, Ty::BOOL, &[any])
            }
            Arith::LogicalOr => {
                let b = code.ballot(x)?;
                let trues = code.mask_and(b, m);
                code.mask_nonzero(trues)
            }
            _ => {
                let b = code.ballot(x)?;
                let trues = code.mask_and(b, m);
                let count = code.bit_count(trues)?;
                let one = code.em.u32(1);
                let odd = code.op(Op::BitwiseAnd, Ty::U32, &[count, one]);
                let zero = code.em.u32(0);
                code.op(Op::INotEqual, Ty::BOOL, &[odd, zero])
            }
        };
        comps.push(r);
    }
    Ok(if op.ty.n == 1 {
        comps[0]
    } else {
        code.op(Op::CompositeConstruct, op.ty, &comps)
    })
}

/// Whether `IAdd`/`BitwiseAnd/Or/Xor` of `ty` go by bit slices: one ballot per bit, no shuffle.
///
/// Scalar 8-bit integers everywhere (8 independent ballots against 9 to 14 dependent shuffles),
/// and scalar integers up to 32 bits where the alternative is the lane-serial loop of a
/// `SPV_KHR_shader_ballot` target (at most 32 ballots against one round per active lane).
fn uses_bit_slices(code: &Code, arith: Arith, ty: Ty) -> bool {
    let Scalar::Int { width, .. } = ty.scalar else {
        return false;
    };
    let sliceable = matches!(arith, Arith::IAdd | Arith::And | Arith::Or | Arith::Xor);
    let serial = !(code.em.has_core_ballot() && code.em.target.ops.shuffle);
    sliceable && ty.n == 1 && (width <= 8 || (serial && width <= 32))
}

/// `IAdd`/`BitwiseAnd/Or/Xor` by bit slices: per bit `b` of the value, one ballot masked by the
/// subset (and `lt`/`le` for scans): `IAdd` sums `bitCount << b`, `Or` sets the bit when any lane
/// has it, `Xor` when an odd number has it, `And` when no lane lacks it. The identities come out
/// by themselves (no lane: sum 0, `Or`/`Xor` 0, `And` all ones). Ballots hold active lanes only,
/// so the partition ballot needs no `& active`.
fn bit_sliced(
    code: &mut Code,
    op: Step,
    scan: Scan,
    value: Id,
    ballot: Id,
) -> Result<Id, LowerError> {
    let width = op.ty.scalar.width();
    let m = code.narrow_mask(ballot);
    let sel = counted_lanes(code, scan, m)?;
    let words = code.to_words(op.ty, value);
    let word = words
        .first()
        .copied()
        .ok_or_else(|| code.missing("a value word"))?;
    let (zero, one) = (code.em.u32(0), code.em.u32(1));
    let mut acc = zero;
    for b in 0..width {
        let shift = code.em.u32(b);
        let shifted = code.op(Op::ShiftRightLogical, Ty::U32, &[word, shift]);
        let low = code.op(Op::BitwiseAnd, Ty::U32, &[shifted, one]);
        let set = code.op(Op::INotEqual, Ty::BOOL, &[low, zero]);
        let term = match op.arith {
            Arith::IAdd => {
                let ballot_b = code.ballot(set)?;
                let lanes = code.mask_and(ballot_b, sel);
                let count = code.bit_count(lanes)?;
                code.op(Op::ShiftLeftLogical, Ty::U32, &[count, shift])
            }
            _ => {
                let pred = if op.arith == Arith::And {
                    code.op(Op::LogicalNot, Ty::BOOL, &[set])
                } else {
                    set
                };
                let ballot_b = code.ballot(pred)?;
                let lanes = code.mask_and(ballot_b, sel);
                let bit_on = match op.arith {
                    Arith::And => code.mask_is_zero(lanes),
                    Arith::Or => code.mask_nonzero(lanes),
                    _ => {
                        let count = code.bit_count(lanes)?;
                        let odd = code.op(Op::BitwiseAnd, Ty::U32, &[count, one]);
                        code.op(Op::INotEqual, Ty::BOOL, &[odd, zero])
                    }
                };
                let bit = code.em.u32(1 << b);
                code.select(Ty::U32, bit_on, bit, zero)
            }
        };
        // Sums of counts overlap in their bits: they add; the other ops' bits are disjoint.
        let join = if op.arith == Arith::IAdd {
            Op::IAdd
        } else {
            Op::BitwiseOr
        };
        acc = if b == 0 {
            term
        } else {
            code.op(join, Ty::U32, &[acc, term])
        };
    }
    Ok(code.from_words(op.ty, &[acc]))
}

/// Pointer jumping over the predecessor chain of each lane's subset (`m`: the subset's mask,
/// inactive lanes already removed).
fn pointer_jumping(
    code: &mut Code,
    op: Step,
    scan: Scan,
    value: Id,
    m: Id,
) -> Result<Id, LowerError> {
    let ty = op.ty;
    let lane = code.lane_id()?;
    let lt = code.lt_mask()?;
    let below = code.mask_and(m, lt);
    let has_pred = code.mask_nonzero(below);
    let msb = code.find_msb(below)?;
    let first = code.select(Ty::U32, has_pred, msb, lane);
    let steps = code.em.log2_lanes();
    let (mut acc, mut q, mut valid) = (value, first, has_pred);
    for step in 0..steps {
        let v = code.shuffle(ty, acc, q)?;
        let combined = op.apply(code, v, acc);
        acc = pick(code, ty, valid, combined, acc);
        if step + 1 < steps {
            let p = code.shuffle(Ty::U32, q, q)?;
            // A lane without predecessor holds its own index, so `p == q` exactly when the
            // predecessor has none at this distance (or this lane had none already).
            valid = code.op(Op::INotEqual, Ty::BOOL, &[p, q]);
            q = code.select(Ty::U32, valid, p, lane);
        }
    }
    match scan {
        Scan::Inclusive => Ok(acc),
        Scan::Exclusive => {
            let before = code.shuffle(ty, acc, first)?;
            let identity = op.identity(code);
            Ok(pick(code, ty, has_pred, before, identity))
        }
        Scan::Reduce => {
            let any = code.mask_nonzero(m);
            let top = code.find_msb(m)?;
            let last = code.select(Ty::U32, any, top, lane);
            code.shuffle(ty, acc, last)
        }
    }
}

/// The core arithmetic op when one subset holds every active lane, else pointer jumping; as a
/// structured `if`, whose condition is uniform over the active lanes of a valid partition.
fn with_fast_path(
    code: &mut Code,
    inst: &Instruction,
    op: Step,
    scan: Scan,
    value: Id,
    ballot: Id,
) -> Result<Id, LowerError> {
    let ballot = code.narrow_mask(ballot);
    let act = code.active()?;
    let m = code.mask_and(ballot, act);
    let whole = code.mask_eq(m, act);
    let group_op = match scan {
        Scan::Reduce => GroupOperation::Reduce,
        Scan::Inclusive => GroupOperation::InclusiveScan,
        Scan::Exclusive => GroupOperation::ExclusiveScan,
    };
    code.uniform_if(
        whole,
        op.ty,
        |code| {
            code.em.need(Capability::GroupNonUniformArithmetic);
            let scope = code.em.subgroup_scope();
            let t = code.em.ty(op.ty);
            Ok(code.emit(
                inst.class.opcode,
                t,
                vec![
                    Operand::IdRef(scope),
                    Operand::GroupOperation(group_op),
                    Operand::IdRef(value),
                ],
            ))
        },
        |code| pointer_jumping(code, op, scan, value, m),
    )
}

/// `OpSubgroupReadInvocationKHR` of any value (32-bit words for other widths and bools).
fn read_invocation(code: &mut Code, ty: Ty, value: Id, lane: Id) -> Id {
    code.em.need(Capability::SubgroupBallotKHR);
    code.em.exts.insert("SPV_KHR_shader_ballot");
    if ty.scalar != Scalar::Bool && ty.scalar.width() == 32 {
        return code.op(Op::SubgroupReadInvocationKHR, ty, &[value, lane]);
    }
    let words = code.to_words(ty, value);
    let mut moved = Vec::with_capacity(words.len());
    for w in words {
        moved.push(code.op(Op::SubgroupReadInvocationKHR, Ty::U32, &[w, lane]));
    }
    code.from_words(ty, &moved)
}

/// The lane-serial uniform loop of `SPV_KHR_shader_ballot` targets: one iteration per active lane.
fn serial(code: &mut Code, op: Step, scan: Scan, value: Id, ballot: Id) -> Result<Id, LowerError> {
    let ty = op.ty;
    let ballot = code.narrow_mask(ballot);
    let act = code.active()?;
    let m = code.mask_and(ballot, act);
    let lane = code.lane_id()?;
    let identity = op.identity(code);
    let no = code.em.constant(Ty::BOOL, 0);
    let mask_ty = code.em.mask_ty();
    let out = code.do_while(
        &[(ty, identity), (Ty::BOOL, no), (mask_ty, act)],
        |code, phis| {
            let (acc, started, rem) = (phis[0], phis[1], phis[2]);
            let leader = code.find_lsb(rem)?;
            let v = read_invocation(code, ty, value, leader);
            let in_subset = code.bit_test(m, leader)?;
            let take = match scan {
                Scan::Reduce => in_subset,
                Scan::Inclusive => {
                    let at_or_below = code.op(Op::ULessThanEqual, Ty::BOOL, &[leader, lane]);
                    code.op(Op::LogicalAnd, Ty::BOOL, &[in_subset, at_or_below])
                }
                Scan::Exclusive => {
                    let below = code.op(Op::ULessThan, Ty::BOOL, &[leader, lane]);
                    code.op(Op::LogicalAnd, Ty::BOOL, &[in_subset, below])
                }
            };
            // The first value taken starts the accumulator (an identity start would turn a lone -0.0
            // into +0.0 for FAdd, and an all-NaN FMin into +inf).
            let combined = op.apply(code, acc, v);
            let next = pick(code, ty, started, combined, v);
            let acc_next = pick(code, ty, take, next, acc);
            let started_next = code.op(Op::LogicalOr, Ty::BOOL, &[started, take]);
            let bit = code.lane_bit(leader);
            let rem_next = code.mask_and_not(rem, bit);
            let again = code.mask_nonzero(rem_next);
            Ok((vec![acc_next, started_next, rem_next], again))
        },
    )?;
    Ok(out[0])
}
