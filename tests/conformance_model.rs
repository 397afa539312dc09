//! The host reference model of the conformance suite, written from the specs
//! (GL_NV_shader_subgroup_partitioned, SPV_KHR_subgroup_vote) and independent of the lowering code.
//!
//! Shaders write one *record* per invocation and slot (a slot is one call site, one loop iteration);
//! the record holds the driver's own layout (workgroup, subgroup id, lane, the active set taken with
//! `subgroupBallot(true)` next to the op), the ballot operand, the partition result, the key, the value
//! and the results. The model groups records by (workgroup, subgroup, slot, active set), so it never
//! assumes how the driver lays out subgroups or which lanes reconverge, and computes what the specs say:
//! partitions by key equality (+0.0 == -0.0, NaN may stand alone), reduce / inclusive / exclusive scans
//! per subset in lane order, votes over the active lanes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Words of a record before the key: marker, workgroup, subgroup, lane, gid, size, flags, tag,
/// active set (4), ballot operand (4), partition result (4).
pub const META: usize = 20;

/// A scalar component type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    /// Unsigned integer of the given width.
    U(u8),
    /// Signed integer of the given width.
    I(u8),
    /// Float of the given width (16, 32, 64).
    F(u8),
    /// Boolean.
    Bool,
}

impl Scalar {
    /// Bits of one component.
    pub fn width(self) -> u32 {
        match self {
            Scalar::U(w) | Scalar::I(w) | Scalar::F(w) => u32::from(w),
            Scalar::Bool => 1,
        }
    }
    /// Mask of a component's bits.
    pub fn mask(self) -> u64 {
        let w = self.width();
        if w >= 64 {
            u64::MAX
        } else {
            (1u64 << w) - 1
        }
    }
    /// Words per component in the buffers.
    pub fn words(self) -> usize {
        if self.width() == 64 {
            2
        } else {
            1
        }
    }
}

/// A value type: scalar or vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ty {
    /// Component type.
    pub scalar: Scalar,
    /// 1 for a scalar, else the vector size.
    pub comps: usize,
}

impl Ty {
    /// A scalar type.
    pub const fn s(scalar: Scalar) -> Ty {
        Ty { scalar, comps: 1 }
    }
    /// A vector type.
    pub const fn v(scalar: Scalar, comps: usize) -> Ty {
        Ty { scalar, comps }
    }
    /// Words of one value.
    pub fn words(self) -> usize {
        self.comps * self.scalar.words()
    }
    /// The GLSL scalar type name.
    pub fn glsl_scalar(self) -> &'static str {
        match self.scalar {
            Scalar::U(32) => "uint",
            Scalar::I(32) => "int",
            Scalar::F(32) => "float",
            Scalar::F(64) => "double",
            Scalar::U(64) => "uint64_t",
            Scalar::I(64) => "int64_t",
            Scalar::U(16) => "uint16_t",
            Scalar::I(16) => "int16_t",
            Scalar::F(16) => "float16_t",
            Scalar::U(8) => "uint8_t",
            Scalar::I(8) => "int8_t",
            Scalar::Bool => "bool",
            _ => "?",
        }
    }
    /// The GLSL type name.
    pub fn glsl(self) -> String {
        if self.comps == 1 {
            return self.glsl_scalar().to_owned();
        }
        let prefix = match self.scalar {
            Scalar::U(32) => "u",
            Scalar::I(32) => "i",
            Scalar::F(32) => "",
            Scalar::F(64) => "d",
            Scalar::U(64) => "u64",
            Scalar::I(64) => "i64",
            Scalar::U(16) => "u16",
            Scalar::I(16) => "i16",
            Scalar::F(16) => "f16",
            Scalar::U(8) => "u8",
            Scalar::I(8) => "i8",
            Scalar::Bool => "b",
            _ => "?",
        };
        format!("{prefix}vec{}", self.comps)
    }
    /// A short name for case names, e.g. `u32`, `f16x2`, `bool`.
    pub fn name(self) -> String {
        let s = match self.scalar {
            Scalar::U(w) => format!("u{w}"),
            Scalar::I(w) => format!("i{w}"),
            Scalar::F(w) => format!("f{w}"),
            Scalar::Bool => "bool".to_owned(),
        };
        if self.comps == 1 {
            s
        } else {
            format!("{s}x{}", self.comps)
        }
    }
    /// Whether the type is float-based.
    pub fn is_float(self) -> bool {
        matches!(self.scalar, Scalar::F(_))
    }
    /// Splits a value (component bits) into buffer words.
    pub fn to_words(self, comps: &[u64], out: &mut Vec<u32>) {
        for &c in comps {
            if self.scalar.words() == 2 {
                out.push(c as u32);
                out.push((c >> 32) as u32);
            } else {
                out.push((c & self.scalar.mask()) as u32);
            }
        }
    }
    /// Reads a value from buffer words.
    pub fn decode_words(self, words: &[u32]) -> Vec<u64> {
        let w = self.scalar.words();
        (0..self.comps)
            .map(|i| {
                let lo = u64::from(words.get(i * w).copied().unwrap_or(0));
                let v = if w == 2 {
                    lo | (u64::from(words.get(i * w + 1).copied().unwrap_or(0)) << 32)
                } else {
                    lo
                };
                v & self.scalar.mask()
            })
            .collect()
    }
}

/// The 7 GLSL operation names (16 SPIR-V opcodes once split by type).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// IAdd / FAdd.
    Add,
    /// IMul / FMul.
    Mul,
    /// SMin / UMin / FMin.
    Min,
    /// SMax / UMax / FMax.
    Max,
    /// BitwiseAnd / LogicalAnd.
    And,
    /// BitwiseOr / LogicalOr.
    Or,
    /// BitwiseXor / LogicalXor.
    Xor,
}

impl Op {
    /// All ops.
    pub const ALL: [Op; 7] = [Op::Add, Op::Mul, Op::Min, Op::Max, Op::And, Op::Or, Op::Xor];
    /// GLSL spelling.
    pub fn glsl(self) -> &'static str {
        match self {
            Op::Add => "Add",
            Op::Mul => "Mul",
            Op::Min => "Min",
            Op::Max => "Max",
            Op::And => "And",
            Op::Or => "Or",
            Op::Xor => "Xor",
        }
    }
    /// Which ops a type accepts (the spec's genType/genIType/genUType/genDType/genBType lists).
    pub fn for_type(ty: Ty) -> Vec<Op> {
        match ty.scalar {
            Scalar::F(_) => vec![Op::Add, Op::Mul, Op::Min, Op::Max],
            Scalar::Bool => vec![Op::And, Op::Or, Op::Xor],
            _ => Op::ALL.to_vec(),
        }
    }
}

/// Reduce or scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// Whole subset.
    Reduce,
    /// Lanes up to and including this one.
    Inclusive,
    /// Lanes before this one (identity for the first).
    Exclusive,
}

impl Mode {
    /// All modes.
    pub const ALL: [Mode; 3] = [Mode::Reduce, Mode::Inclusive, Mode::Exclusive];
    /// GLSL infix.
    pub fn glsl(self) -> &'static str {
        match self {
            Mode::Reduce => "",
            Mode::Inclusive => "Inclusive",
            Mode::Exclusive => "Exclusive",
        }
    }
}

/// Half-precision bits to f64.
pub fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    match exp {
        0 => sign * man * 2f64.powi(-24),
        31 if man == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + man / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// f64 to half bits when exactly representable.
pub fn f64_to_f16_exact(x: f64) -> Option<u16> {
    if x == 0.0 {
        return Some(if x.is_sign_negative() { 0x8000 } else { 0 });
    }
    if x.is_infinite() {
        return Some(if x < 0.0 { 0xfc00 } else { 0x7c00 });
    }
    // Brute force over the 63488 finite halves of the same sign is fine at test scale, but a direct
    // construction is simple: try the exponent range.
    let sign: u16 = if x < 0.0 { 0x8000 } else { 0 };
    let a = x.abs();
    for exp in 1..31u16 {
        let base = 2f64.powi(i32::from(exp) - 15);
        let m = (a / base - 1.0) * 1024.0;
        if (0.0..1024.0).contains(&m) && m.fract() == 0.0 {
            return Some(sign | (exp << 10) | m as u16);
        }
    }
    let m = a / 2f64.powi(-24);
    if m < 1024.0 && m.fract() == 0.0 {
        return Some(sign | m as u16);
    }
    None
}

fn to_f64(s: Scalar, b: u64) -> f64 {
    match s {
        Scalar::F(16) => f16_to_f64(b as u16),
        Scalar::F(32) => f64::from(f32::from_bits(b as u32)),
        _ => f64::from_bits(b),
    }
}

/// f64 to bits of the width when exactly representable.
fn from_f64(s: Scalar, x: f64) -> Option<u64> {
    match s {
        Scalar::F(16) => f64_to_f16_exact(x).map(u64::from),
        Scalar::F(32) => {
            let f = x as f32;
            (f64::from(f) == x || x.is_nan()).then_some(u64::from(f.to_bits()))
        }
        _ => Some(x.to_bits()),
    }
}

fn sext(s: Scalar, b: u64) -> i64 {
    let w = s.width();
    if w >= 64 {
        b as i64
    } else {
        ((b << (64 - w)) as i64) >> (64 - w)
    }
}

/// The op's identity for a component type (SPIR-V's table).
pub fn identity(op: Op, s: Scalar) -> u64 {
    let m = s.mask();
    match (op, s) {
        (Op::Add | Op::Or | Op::Xor, _) => 0,
        (Op::Mul, Scalar::F(_)) => from_f64(s, 1.0).unwrap_or(0),
        (Op::Mul, _) => 1,
        (Op::Min, Scalar::F(_)) => from_f64(s, f64::INFINITY).unwrap_or(0),
        (Op::Max, Scalar::F(_)) => from_f64(s, f64::NEG_INFINITY).unwrap_or(0),
        (Op::Min, Scalar::I(_)) => m >> 1,
        (Op::Max, Scalar::I(_)) => (m >> 1) + 1,
        (Op::Min, _) => m,
        (Op::Max, _) => 0,
        (Op::And, _) => m,
    }
}

/// `a op b` on one component; `None` when a float result is not exactly representable
/// (the case then cannot be checked bit-exactly and is counted as unchecked).
pub fn apply(op: Op, s: Scalar, a: u64, b: u64) -> Option<u64> {
    let m = s.mask();
    Some(match s {
        Scalar::F(_) => {
            let (x, y) = (to_f64(s, a), to_f64(s, b));
            let r = match op {
                Op::Add => x + y,
                Op::Mul => x * y,
                Op::Min => {
                    if y < x {
                        y
                    } else {
                        x
                    }
                }
                Op::Max => {
                    if y > x {
                        y
                    } else {
                        x
                    }
                }
                _ => return None,
            };
            return from_f64(s, r);
        }
        _ => match op {
            Op::Add => a.wrapping_add(b) & m,
            Op::Mul => a.wrapping_mul(b) & m,
            Op::Min | Op::Max => {
                let less = if matches!(s, Scalar::I(_)) {
                    sext(s, b) < sext(s, a)
                } else {
                    b < a
                };
                let pick_b = if op == Op::Min { less } else { !less && a != b };
                if pick_b {
                    b
                } else {
                    a
                }
            }
            Op::And => a & b,
            Op::Or => a | b,
            Op::Xor => a ^ b,
        },
    })
}

/// Whether two result components are the same (floats by value: +0 == -0, NaN == NaN).
pub fn same(s: Scalar, a: u64, b: u64) -> bool {
    match s {
        Scalar::F(_) => {
            let (x, y) = (to_f64(s, a), to_f64(s, b));
            x == y || (x.is_nan() && y.is_nan())
        }
        _ => a & s.mask() == b & s.mask(),
    }
}

/// How float keys are compared by the implementation under test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyEq {
    /// The spec: equal values together (+0 with -0), NaN may stand alone (or join bit-identical NaNs).
    Spec,
    /// Bit patterns (NVIDIA's native op).
    Bitwise,
}

fn key_must_same(ty: Ty, a: &[u64], b: &[u64], eq: KeyEq) -> bool {
    match eq {
        KeyEq::Bitwise => a == b,
        KeyEq::Spec => a.iter().zip(b).all(|(&x, &y)| match ty.scalar {
            Scalar::F(_) => to_f64(ty.scalar, x) == to_f64(ty.scalar, y),
            _ => x == y,
        }),
    }
}

fn key_may_same(ty: Ty, a: &[u64], b: &[u64], eq: KeyEq) -> bool {
    a == b || key_must_same(ty, a, b, eq)
}

/// One record as read back.
#[derive(Clone, Debug, Default)]
pub struct Rec {
    /// Slot (call site / iteration) index.
    pub slot: usize,
    /// Workgroup id (x).
    pub wg: u32,
    /// `gl_SubgroupID`.
    pub sg: u32,
    /// `gl_SubgroupInvocationID`.
    pub lane: u32,
    /// Global invocation id (x).
    pub gid: u32,
    /// `gl_SubgroupSize`.
    pub size: u32,
    /// Bit 0: the partition result of this slot was computed at this slot (check it).
    pub flags: u32,
    /// `subgroupBallot(true)` at the op.
    pub act: [u32; 4],
    /// The ballot operand of the partitioned ops.
    pub ballot: [u32; 4],
    /// The partition op's result.
    pub part: [u32; 4],
    /// The key.
    pub key: Vec<u64>,
    /// The value.
    pub value: Vec<u64>,
    /// Results, one per (op, mode) or per vote.
    pub results: Vec<Vec<u64>>,
}

/// The shape of a family's records.
#[derive(Clone, Debug)]
pub struct Layout {
    /// Slots per invocation.
    pub slots: usize,
    /// Key type (None: no key).
    pub key: Option<Ty>,
    /// Value type (None: no value).
    pub value: Option<Ty>,
    /// What each result is.
    pub results: Vec<ResultKind>,
}

/// What a result slot of a record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultKind {
    /// A partitioned (or, for the native self-check, whole-active-set) op.
    Arith(Op, Mode),
    /// `allInvocationsARB` / `subgroupAll`.
    VoteAll,
    /// `anyInvocationARB` / `subgroupAny`.
    VoteAny,
    /// `allInvocationsEqualARB` / `subgroupAllEqual`.
    VoteAllEqual,
}

impl ResultKind {
    /// A short name.
    pub fn name(self) -> String {
        match self {
            ResultKind::Arith(op, mode) => format!("{}{}", mode.glsl(), op.glsl()),
            ResultKind::VoteAll => "All".into(),
            ResultKind::VoteAny => "Any".into(),
            ResultKind::VoteAllEqual => "AllEqual".into(),
        }
    }
}

impl Layout {
    /// Words of a key.
    pub fn key_words(&self) -> usize {
        self.key.map_or(0, Ty::words)
    }
    /// Words of a value (and of each result, except votes: one word).
    pub fn value_words(&self) -> usize {
        self.value.map_or(0, Ty::words)
    }
    /// Words of one result.
    pub fn result_words(&self) -> usize {
        self.value_words().max(1)
    }
    /// Words per record.
    pub fn stride(&self) -> usize {
        META + self.key_words() + self.value_words() + self.results.len() * self.result_words()
    }
    /// Output words for `invocations`.
    pub fn out_words(&self, invocations: usize) -> usize {
        invocations * self.slots * self.stride()
    }

    /// Decodes the written records.
    pub fn decode(&self, out: &[u32]) -> Vec<Rec> {
        let stride = self.stride();
        let mut recs = Vec::new();
        for (i, r) in out.chunks_exact(stride).enumerate() {
            if r[0] != 1 {
                continue;
            }
            let arr = |o: usize| [r[o], r[o + 1], r[o + 2], r[o + 3]];
            let mut p = META;
            let key = self
                .key
                .map(|t| t.decode_words(&r[p..p + t.words()]))
                .unwrap_or_default();
            p += self.key_words();
            let value = self
                .value
                .map(|t| t.decode_words(&r[p..p + t.words()]))
                .unwrap_or_default();
            p += self.value_words();
            let rw = self.result_words();
            let results = (0..self.results.len())
                .map(|k| {
                    let w = &r[p + k * rw..p + (k + 1) * rw];
                    match self.value {
                        Some(t) if matches!(self.results[k], ResultKind::Arith(..)) => {
                            t.decode_words(w)
                        }
                        _ => vec![u64::from(w[0])],
                    }
                })
                .collect();
            recs.push(Rec {
                slot: i % self.slots,
                wg: r[1],
                sg: r[2],
                lane: r[3],
                gid: r[4],
                size: r[5],
                flags: r[6],
                act: arr(8),
                ballot: arr(12),
                part: arr(16),
                key,
                value,
                results,
            });
        }
        recs
    }
}

fn bit(m: &[u32; 4], lane: u32) -> bool {
    lane < 128 && m[(lane / 32) as usize] & (1 << (lane % 32)) != 0
}

fn and(a: &[u32; 4], b: &[u32; 4]) -> [u32; 4] {
    [a[0] & b[0], a[1] & b[1], a[2] & b[2], a[3] & b[3]]
}

fn size_mask(size: u32) -> [u32; 4] {
    let mut m = [0u32; 4];
    for (w, word) in m.iter_mut().enumerate() {
        let below = size.min(128).saturating_sub(32 * w as u32);
        *word = if below >= 32 {
            u32::MAX
        } else {
            (1u32 << below) - 1
        };
    }
    m
}

/// The lanes of a mask, lowest first (by set bits: the check runs after every dispatch).
fn lanes(m: &[u32; 4]) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, &word) in m.iter().enumerate() {
        let mut b = word;
        while b != 0 {
            out.push(32 * w as u32 + b.trailing_zeros());
            b &= b - 1;
        }
    }
    out
}

fn hex4(m: &[u32; 4]) -> String {
    format!("{:08x}_{:08x}_{:08x}_{:08x}", m[3], m[2], m[1], m[0])
}

/// The outcome of checking one run.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Records checked.
    pub records: usize,
    /// Result values compared.
    pub checked: usize,
    /// Float results whose exact value is not representable (not compared).
    pub unchecked: usize,
    /// Mismatches (the count, all of them).
    pub mismatches: usize,
    /// The first mismatches, described.
    pub details: Vec<String>,
    /// Per result name: how many mismatches.
    pub by_result: BTreeMap<String, usize>,
}

impl Outcome {
    fn fail(&mut self, what: &str, msg: String) {
        self.mismatches += 1;
        *self.by_result.entry(what.to_owned()).or_default() += 1;
        if self.details.len() < 6 {
            self.details.push(msg);
        }
    }
}

/// Where a group of records is, for failure messages.
struct Ctx {
    wg: u32,
    sg: u32,
    slot: usize,
    act: [u32; 4],
}

impl std::fmt::Display for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "wg {} sg {} slot {} act {}",
            self.wg,
            self.sg,
            self.slot,
            hex4(&self.act)
        )
    }
}

/// The fold of a subset's values up to one lane, per component (None: not representable).
type Scan = Vec<Option<u64>>;

/// Checks all records of one run against the model.
pub fn check(layout: &Layout, recs: &[Rec], eq: KeyEq) -> Outcome {
    let mut out = Outcome {
        records: recs.len(),
        ..Outcome::default()
    };
    // Group by (wg, sg, slot, active set).
    let mut groups: BTreeMap<(u32, u32, usize, [u32; 4]), Vec<&Rec>> = BTreeMap::new();
    for r in recs {
        groups
            .entry((r.wg, r.sg, r.slot, r.act))
            .or_default()
            .push(r);
    }
    for ((wg, sg, slot, act), mut members) in groups {
        members.sort_by_key(|r| r.lane);
        let size = members[0].size;
        let by_lane: BTreeMap<u32, &Rec> = members.iter().map(|r| (r.lane, *r)).collect();
        // The same map as an array for the lookups of the scans (the last record of a lane
        // wins, as in `by_lane`).
        let mut lane_rec: [Option<&Rec>; 128] = [None; 128];
        for r in &members {
            if let Some(x) = lane_rec.get_mut(r.lane as usize) {
                *x = Some(*r);
            }
        }
        // Formatted only into failure messages (this runs for every group of every dispatch).
        let ctx = Ctx { wg, sg, slot, act };
        // The active set must be exactly the lanes that recorded this instance.
        let act_lanes = lanes(&act);
        if act_lanes != by_lane.keys().copied().collect::<Vec<_>>() {
            out.fail(
                "active-set",
                format!(
                    "{ctx}: active set lanes {act_lanes:?} but records from lanes {:?}",
                    by_lane.keys().collect::<Vec<_>>()
                ),
            );
            continue;
        }
        // Partition results.
        if let Some(kt) = layout.key {
            for r in members.iter().filter(|r| r.flags & 1 != 0) {
                let p = r.part;
                let mut bad = Vec::new();
                if !bit(&p, r.lane) {
                    bad.push("own bit not set".to_owned());
                }
                if and(&p, &act) != p {
                    bad.push("bits outside the active set".to_owned());
                }
                for (&l, o) in &by_lane {
                    let inside = bit(&p, l);
                    if key_must_same(kt, &r.key, &o.key, eq) && !inside {
                        bad.push(format!(
                            "lane {l} has an equal key but is not in the subset"
                        ));
                    }
                    if inside && !key_may_same(kt, &r.key, &o.key, eq) {
                        bad.push(format!("lane {l} is in the subset with a different key"));
                    }
                    if inside && o.part != p {
                        bad.push(format!(
                            "lane {l} is in the subset but has ballot {}",
                            hex4(&o.part)
                        ));
                    }
                }
                out.checked += 1;
                if !bad.is_empty() {
                    let keys: Vec<String> = by_lane
                        .iter()
                        .map(|(l, o)| format!("{l}:{:x?}", o.key))
                        .collect();
                    out.fail(
                        "partition",
                        format!(
                            "{ctx}: partition of lane {} ({}) = {}: {}; keys {}",
                            r.lane,
                            kt.name(),
                            hex4(&p),
                            bad.join("; "),
                            keys.join(" ")
                        ),
                    );
                }
            }
        }
        // Results. What depends only on the group (the votes) or on a subset (its validity, its
        // scan) is computed once and shared by the lanes, so a 128-lane group costs O(n), not
        // O(n^2) or O(n^3): the suite runs this check after every simulated dispatch.
        let vt = layout.value;
        let sizem = size_mask(size);
        let preds: Vec<bool> = members
            .iter()
            .map(|o| o.value.first().copied().unwrap_or(0) != 0)
            .collect();
        let mut subsets: BTreeMap<[u32; 4], bool> = BTreeMap::new();
        for (k, kind) in layout.results.iter().enumerate() {
            // Per subset: its lanes, and the inclusive fold up to each of them (None where a
            // float result is not representable).
            let mut scans: BTreeMap<[u32; 4], Vec<(u32, Scan)>> = BTreeMap::new();
            for r in &members {
                let got = &r.results[k];
                let expected: Option<Vec<u64>> = match *kind {
                    ResultKind::VoteAll | ResultKind::VoteAny | ResultKind::VoteAllEqual => {
                        let v = match kind {
                            ResultKind::VoteAll => preds.iter().all(|&p| p),
                            ResultKind::VoteAny => preds.iter().any(|&p| p),
                            _ => preds.iter().all(|&p| p == preds[0]),
                        };
                        Some(vec![u64::from(v)])
                    }
                    ResultKind::Arith(op, mode) => {
                        let Some(t) = vt else { continue };
                        let subset = and(&and(&r.ballot, &act), &sizem);
                        // The ballot must be a valid partition for the result to be defined:
                        // this lane is in the subset, and every lane of it has the same subset.
                        let same_everywhere = *subsets.entry(subset).or_insert_with(|| {
                            lanes(&subset).iter().all(|&l| {
                                lane_rec
                                    .get(l as usize)
                                    .copied()
                                    .flatten()
                                    .is_some_and(|o| and(&and(&o.ballot, &act), &sizem) == subset)
                            })
                        });
                        if !(bit(&subset, r.lane) && same_everywhere) {
                            out.fail(
                                "ballot",
                                format!(
                                    "{ctx}: lane {} ballot operand {} is not a valid partition",
                                    r.lane,
                                    hex4(&r.ballot)
                                ),
                            );
                            continue;
                        }
                        // A reduction needs only the whole subset's fold: one entry.
                        let scan = scans.entry(subset).or_insert_with(|| {
                            let mut acc: Vec<Option<u64>> =
                                vec![Some(identity(op, t.scalar)); t.comps];
                            let subset_lanes = lanes(&subset);
                            let mut folds = Vec::new();
                            for (k, &l) in subset_lanes.iter().enumerate() {
                                let value = lane_rec
                                    .get(l as usize)
                                    .copied()
                                    .flatten()
                                    .map_or(&[][..], |o| o.value.as_slice());
                                for (a, &x) in acc.iter_mut().zip(value) {
                                    *a = a.and_then(|a| apply(op, t.scalar, a, x));
                                }
                                if mode != Mode::Reduce || k + 1 == subset_lanes.len() {
                                    folds.push((l, acc.clone()));
                                }
                            }
                            folds
                        });
                        // The lane is in the subset (checked above), so it has a scan entry.
                        let at = match mode {
                            Mode::Reduce => scan.len().saturating_sub(1),
                            _ => match scan.binary_search_by_key(&r.lane, |e| e.0) {
                                Ok(at) => at,
                                Err(_) => continue,
                            },
                        };
                        let acc = match mode {
                            Mode::Reduce => match scan.last() {
                                Some(e) => e.1.clone(),
                                None => continue,
                            },
                            Mode::Inclusive => scan[at].1.clone(),
                            Mode::Exclusive if at == 0 => {
                                vec![Some(identity(op, t.scalar)); t.comps]
                            }
                            Mode::Exclusive => scan[at - 1].1.clone(),
                        };
                        if acc.iter().any(Option::is_none) {
                            out.unchecked += 1;
                            continue;
                        }
                        Some(acc.into_iter().map(|a| a.unwrap_or(0)).collect())
                    }
                };
                let Some(exp) = expected else { continue };
                out.checked += 1;
                let scalar = match kind {
                    ResultKind::Arith(..) => vt.map_or(Scalar::U(32), |t| t.scalar),
                    _ => Scalar::U(32),
                };
                let ok = exp.len() == got.len()
                    && exp.iter().zip(got).all(|(&e, &g)| same(scalar, e, g));
                if !ok {
                    let mut msg = format!(
                        "{ctx}: lane {} (gid {}) {}: expected {:x?}, got {:x?}",
                        r.lane,
                        r.gid,
                        kind.name(),
                        exp,
                        got
                    );
                    if let ResultKind::Arith(..) = kind {
                        let subset = and(&and(&r.ballot, &act), &sizem);
                        let _ = write!(msg, "; ballot {} subset", hex4(&r.ballot));
                        for l in lanes(&subset) {
                            let _ = write!(msg, " {l}:{:x?}", by_lane[&l].value);
                        }
                    } else {
                        let _ = write!(msg, "; predicates");
                        for o in &members {
                            let _ = write!(
                                msg,
                                " {}:{}",
                                o.lane,
                                o.value.first().copied().unwrap_or(0)
                            );
                        }
                    }
                    out.fail(&kind.name(), msg);
                }
            }
        }
    }
    out
}

/// A small deterministic PRNG (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// A seed derived from several numbers.
    pub fn derive(parts: &[u64]) -> Rng {
        let mut r = Rng(0x5eed);
        for &p in parts {
            r.0 ^= p.wrapping_mul(0x2545_f491_4f6c_dd1d);
            r.next();
        }
        r
    }
}

/// Special component values of a scalar type (bits): zeros of both signs, NaNs with payloads,
/// infinities, denormals, extremes, values that differ only in a high word.
pub fn specials(s: Scalar) -> Vec<u64> {
    match s {
        Scalar::F(16) => vec![
            0, 0x8000, 0x3c00, 0xbc00, 0x7e00, 0x7c01, 0xfe23, 0x7c00, 0xfc00, 0x0001, 0x4100,
        ],
        Scalar::F(32) => vec![
            0,
            0x8000_0000,
            0x3f80_0000,
            0xbf80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            0xffc0_0123,
            0x7f80_0000,
            0xff80_0000,
            0x0000_0001,
            0x4020_0000,
        ],
        Scalar::F(_) => vec![
            0,
            1 << 63,
            0x3ff0_0000_0000_0000,
            0x3ff0_0000_0000_0001,
            0xbff0_0000_0000_0000,
            0x7ff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
            0xfff8_0000_0000_0123,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            1,
            0x4004_0000_0000_0000,
        ],
        Scalar::Bool => vec![0, 1],
        Scalar::U(w) | Scalar::I(w) => {
            let m = s.mask();
            let mut v = vec![0, 1, m, 1u64 << (w - 1), m >> 1, 2];
            if w == 64 {
                v.extend([1 << 32, (1 << 32) | 1, 0xffff_ffff]);
            }
            v
        }
    }
}

/// Key patterns, chosen per (workgroup, slot) so one dispatch covers all of them.
pub const KEY_PATTERNS: usize = 6;

/// Generates the keys of one group of `n` invocations (one workgroup, one slot) for `pattern`.
pub fn gen_keys(ty: Ty, n: usize, pattern: usize, rng: &mut Rng) -> Vec<Vec<u64>> {
    let sp = specials(ty.scalar);
    let pick = |rng: &mut Rng| -> Vec<u64> {
        (0..ty.comps)
            .map(|_| sp[rng.below(sp.len() as u64) as usize])
            .collect()
    };
    let pool: Vec<Vec<u64>> = match pattern % KEY_PATTERNS {
        0 => vec![pick(rng)],
        1 => vec![pick(rng), pick(rng)],
        2 => (0..4).map(|_| pick(rng)).collect(),
        3 => {
            return (0..n)
                .map(|_| {
                    (0..ty.comps)
                        .map(|_| rng.next() & ty.scalar.mask())
                        .collect()
                })
                .collect()
        }
        4 => return (0..n).map(|_| pick(rng)).collect(),
        _ => {
            // A base value and near twins: one component changed, or the sign of a zero flipped.
            let base = pick(rng);
            let mut twin = base.clone();
            let c = rng.below(ty.comps as u64) as usize;
            twin[c] = sp[rng.below(sp.len() as u64) as usize];
            let mut zeros = base.clone();
            if ty.is_float() {
                zeros[c] = if rng.below(2) == 0 {
                    0
                } else {
                    1u64 << (ty.scalar.width() - 1)
                };
            }
            let mut nz = zeros.clone();
            if ty.is_float() {
                nz[c] ^= 1u64 << (ty.scalar.width() - 1);
            }
            vec![base, twin, zeros, nz]
        }
    };
    (0..n)
        .map(|_| pool[rng.below(pool.len() as u64) as usize].clone())
        .collect()
}

/// Generates one value for the arithmetic tests: exact under every op in any order.
pub fn gen_value(ty: Ty, rng: &mut Rng) -> Vec<u64> {
    (0..ty.comps)
        .map(|_| match ty.scalar {
            Scalar::F(w) => {
                let r = rng.below(16);
                let mag = if w == 16 {
                    match r {
                        0..=11 => 1.0,
                        12 | 13 => 2.0,
                        _ => 0.5,
                    }
                } else {
                    match r {
                        0..=7 => 1.0,
                        8..=11 => 2.0,
                        _ => 0.5,
                    }
                };
                let x = if rng.below(2) == 0 { mag } else { -mag };
                from_f64(ty.scalar, x).unwrap_or(0)
            }
            Scalar::Bool => rng.below(2),
            _ => {
                // Mostly small magnitudes (so Min/Max/Mul see ties and signs), sometimes full width.
                if rng.below(4) == 0 {
                    rng.next() & ty.scalar.mask()
                } else {
                    (rng.below(7) as i64 - 3) as u64 & ty.scalar.mask()
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_round_trips() {
        for h in [0u16, 0x8000, 0x3c00, 0xbc00, 0x4100, 0x0001, 0x7bff] {
            assert_eq!(f64_to_f16_exact(f16_to_f64(h)), Some(h));
        }
    }
}
