//! GLSL templates of the conformance suite: one generator per family (partition keys, partitioned
//! arithmetic, divergence shapes, votes), instantiated over a type x op grid, so a few hundred
//! variants come from a few templates. Every shader writes records in the layout of
//! `conformance_model.rs` (see [`super::model::META`]).

use super::model::{Layout, Mode, Op, ResultKind, Scalar, Ty};

/// Which features of the device a case needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// 64-bit integers.
    pub int64: bool,
    /// 64-bit floats.
    pub float64: bool,
    /// 16-bit integers.
    pub int16: bool,
    /// 8-bit integers.
    pub int8: bool,
    /// 16-bit floats.
    pub float16: bool,
}

/// The family a case belongs to (decides how inputs are generated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Partition keys of a type.
    Partition,
    /// Partitioned arithmetic over a value type (uint keys).
    Arith,
    /// The same grid with core subgroup ops over the whole active set, run natively: checks the model.
    CoreArith,
    /// Divergent control flow around partition and partitioned ops.
    Diverge,
    /// Votes (`GL_ARB_shader_group_vote`, i.e. `OpSubgroup*KHR`).
    Vote,
    /// Core votes (`subgroupAll/Any/AllEqual`), run natively: checks the model.
    CoreVote,
}

/// One conformance case: a GLSL source and how to read its output.
#[derive(Clone, Debug)]
pub struct Case {
    /// Unique name.
    pub name: String,
    /// Family.
    pub family: Family,
    /// GLSL source.
    pub glsl: String,
    /// Record layout.
    pub layout: Layout,
    /// Control words per invocation before the slots' keys and values.
    pub ctrl_words: usize,
    /// Workgroup sizes to run (specialization constant 0).
    pub local_sizes: Vec<u32>,
    /// Device features needed.
    pub needs: Needs,
    /// `glslangValidator --target-env` (`vulkan1.1`, or `vulkan1.0` for the SPIR-V 1.0 cases).
    pub env: &'static str,
    /// Lowering presets for this case instead of the device's default list.
    pub presets: Option<Vec<&'static str>>,
}

impl Case {
    /// Input words per invocation.
    pub fn in_stride(&self) -> usize {
        self.ctrl_words + self.layout.slots * (self.layout.key_words() + self.layout.value_words())
    }
}

fn needs_of(tys: &[Ty]) -> Needs {
    let mut n = Needs::default();
    for t in tys {
        match t.scalar {
            Scalar::U(64) | Scalar::I(64) => n.int64 = true,
            Scalar::F(64) => n.float64 = true,
            Scalar::U(16) | Scalar::I(16) => n.int16 = true,
            Scalar::U(8) | Scalar::I(8) => n.int8 = true,
            Scalar::F(16) => n.float16 = true,
            _ => {}
        }
    }
    n
}

fn extensions(
    tys: &[Ty],
    partitioned: bool,
    arb_vote: bool,
    core_vote: bool,
    core_arith: bool,
) -> String {
    let mut s = String::from(
        "#version 450\n#extension GL_KHR_shader_subgroup_basic : require\n#extension GL_KHR_shader_subgroup_ballot : require\n",
    );
    if partitioned {
        s.push_str("#extension GL_NV_shader_subgroup_partitioned : require\n");
    }
    if arb_vote {
        s.push_str("#extension GL_ARB_shader_group_vote : require\n");
    }
    if core_vote {
        s.push_str("#extension GL_KHR_shader_subgroup_vote : require\n");
    }
    if core_arith {
        s.push_str("#extension GL_KHR_shader_subgroup_arithmetic : require\n");
    }
    let n = needs_of(tys);
    if n.int64 || n.int16 || n.int8 || n.float16 {
        s.push_str("#extension GL_EXT_shader_explicit_arithmetic_types : require\n");
    }
    if n.int64 {
        s.push_str("#extension GL_EXT_shader_subgroup_extended_types_int64 : require\n");
    }
    if n.int16 {
        s.push_str("#extension GL_EXT_shader_subgroup_extended_types_int16 : require\n");
    }
    if n.int8 {
        s.push_str("#extension GL_EXT_shader_subgroup_extended_types_int8 : require\n");
    }
    if n.float16 {
        s.push_str("#extension GL_EXT_shader_subgroup_extended_types_float16 : require\n");
    }
    s
}

fn common(layout: &Layout, ctrl_words: usize) -> String {
    common_with(layout, ctrl_words, false)
}

/// The declarations every shader shares; with `khr_ballot`, records are written with
/// `GL_ARB_shader_ballot` only (SPIR-V 1.0 + `SPV_KHR_shader_ballot`): the active set is
/// `ballotARB(true)`, the lane `gl_SubGroupInvocationARB`, and the subgroup id
/// `gl_LocalInvocationIndex / gl_SubGroupSizeARB` (the model then checks that the lanes that wrote a
/// slot are exactly that active set, so a wrong layout assumption fails loudly).
fn common_with(layout: &Layout, ctrl_words: usize, khr_ballot: bool) -> String {
    let kw = layout.key_words();
    let vw = layout.value_words();
    format!(
        r#"layout(local_size_x_id = 0) in;
layout(std430, binding = 0) readonly buffer In {{ uint inp[]; }};
layout(std430, binding = 1) buffer Out {{ uint outp[]; }};
const uint NSLOTS = {slots}u;
const uint OSTR = {ostr}u;
const uint ISTR = {istr}u;
const uint CW = {cw}u;
const uint KW = {kw}u;
const uint VW = {vw}u;
const uint RW = {rw}u;
uint gid;
uint ctrl(uint i) {{ return inp[gid * ISTR + i]; }}
uint kin(uint s) {{ return gid * ISTR + CW + s * (KW + VW); }}
uint vin(uint s) {{ return kin(s) + KW; }}
uint rec(uint s, uvec4 act, uvec4 b, uvec4 p, uint flags) {{
    uint o = (gid * NSLOTS + s) * OSTR;
    outp[o] = 1u; outp[o + 1u] = gl_WorkGroupID.x; outp[o + 2u] = {sgid};
    outp[o + 3u] = {lane}; outp[o + 4u] = gid; outp[o + 5u] = {size};
    outp[o + 6u] = flags; outp[o + 7u] = 0u;
    outp[o + 8u] = act.x; outp[o + 9u] = act.y; outp[o + 10u] = act.z; outp[o + 11u] = act.w;
    outp[o + 12u] = b.x; outp[o + 13u] = b.y; outp[o + 14u] = b.z; outp[o + 15u] = b.w;
    outp[o + 16u] = p.x; outp[o + 17u] = p.y; outp[o + 18u] = p.z; outp[o + 19u] = p.w;
    return o + 20u;
}}
"#,
        slots = layout.slots,
        ostr = layout.stride(),
        istr = ctrl_words + layout.slots * (kw + vw),
        cw = ctrl_words,
        rw = layout.result_words(),
        sgid = if khr_ballot {
            "gl_LocalInvocationIndex / gl_SubGroupSizeARB"
        } else {
            "gl_SubgroupID"
        },
        lane = if khr_ballot {
            "gl_SubGroupInvocationARB"
        } else {
            "gl_SubgroupInvocationID"
        },
        size = if khr_ballot {
            "gl_SubGroupSizeARB"
        } else {
            "gl_SubgroupSize"
        },
    )
}

fn ld_scalar(s: Scalar, x: &str) -> String {
    match s {
        Scalar::U(32) => format!("inp[{x}]"),
        Scalar::I(32) => format!("int(inp[{x}])"),
        Scalar::F(32) => format!("uintBitsToFloat(inp[{x}])"),
        Scalar::Bool => format!("(inp[{x}] != 0u)"),
        Scalar::F(64) => format!("packDouble2x32(uvec2(inp[{x}], inp[{x} + 1u]))"),
        Scalar::U(64) => format!("pack64(u32vec2(inp[{x}], inp[{x} + 1u]))"),
        Scalar::I(64) => format!("int64_t(pack64(u32vec2(inp[{x}], inp[{x} + 1u])))"),
        Scalar::U(16) => format!("uint16_t(inp[{x}])"),
        Scalar::I(16) => format!("int16_t(uint16_t(inp[{x}]))"),
        Scalar::F(16) => format!("uint16BitsToFloat16(uint16_t(inp[{x}]))"),
        Scalar::U(8) => format!("uint8_t(inp[{x}])"),
        Scalar::I(8) => format!("int8_t(uint8_t(inp[{x}]))"),
        _ => "0".into(),
    }
}

fn st_scalar(s: Scalar, x: &str, e: &str) -> String {
    match s {
        Scalar::U(32) => format!("outp[{x}] = {e};"),
        Scalar::I(32) => format!("outp[{x}] = uint({e});"),
        Scalar::F(32) => format!("outp[{x}] = floatBitsToUint({e});"),
        Scalar::Bool => format!("outp[{x}] = ({e}) ? 1u : 0u;"),
        Scalar::F(64) => {
            format!("{{ uvec2 t = unpackDouble2x32({e}); outp[{x}] = t.x; outp[{x} + 1u] = t.y; }}")
        }
        Scalar::U(64) => {
            format!("{{ u32vec2 t = unpack32({e}); outp[{x}] = t.x; outp[{x} + 1u] = t.y; }}")
        }
        Scalar::I(64) => format!(
            "{{ u32vec2 t = unpack32(uint64_t({e})); outp[{x}] = t.x; outp[{x} + 1u] = t.y; }}"
        ),
        Scalar::U(16) | Scalar::U(8) => format!("outp[{x}] = uint({e});"),
        Scalar::I(16) => format!("outp[{x}] = uint(uint16_t({e}));"),
        Scalar::I(8) => format!("outp[{x}] = uint(uint8_t({e}));"),
        Scalar::F(16) => format!("outp[{x}] = uint(float16BitsToUint16({e}));"),
        _ => String::new(),
    }
}

/// `T name_ld(uint b)` and `void name_st(uint o, T v)` for a type.
fn io_fns(name: &str, t: Ty) -> String {
    let w = t.scalar.words();
    let g = t.glsl();
    let ld = if t.comps == 1 {
        ld_scalar(t.scalar, "b")
    } else {
        let parts: Vec<String> = (0..t.comps)
            .map(|i| ld_scalar(t.scalar, &format!("(b + {}u)", i * w)))
            .collect();
        format!("{g}({})", parts.join(", "))
    };
    let st: Vec<String> = if t.comps == 1 {
        vec![st_scalar(t.scalar, "o", "v")]
    } else {
        (0..t.comps)
            .map(|i| st_scalar(t.scalar, &format!("(o + {}u)", i * w), &format!("v[{i}]")))
            .collect()
    };
    format!(
        "{g} {name}_ld(uint b) {{ return {ld}; }}\nvoid {name}_st(uint o, {g} v) {{ {} }}\n",
        st.join(" ")
    )
}

fn arith_results(ty: Ty, ops: &[Op]) -> Vec<ResultKind> {
    let mut r = Vec::new();
    for &op in ops {
        for mode in Mode::ALL {
            r.push(ResultKind::Arith(op, mode));
        }
    }
    let _ = ty;
    r
}

/// Lines that store every result of `results` for value `v` and ballot `b`, at `o + KW + VW + k*RW`.
fn arith_calls(results: &[ResultKind], core: bool) -> String {
    let mut s = String::new();
    for (k, r) in results.iter().enumerate() {
        if let ResultKind::Arith(op, mode) = r {
            let call = if core {
                format!("subgroup{}{}(v)", mode.glsl(), op.glsl())
            } else {
                format!("subgroupPartitioned{}{}NV(v, b)", mode.glsl(), op.glsl())
            };
            s.push_str(&format!("    v_st(o + KW + VW + {k}u * RW, {call});\n"));
        }
    }
    s
}

/// The key types of the partition family.
pub fn key_types() -> Vec<Ty> {
    use Scalar::*;
    vec![
        Ty::s(U(32)),
        Ty::s(I(32)),
        Ty::s(F(32)),
        Ty::s(Bool),
        Ty::s(U(64)),
        Ty::s(I(64)),
        Ty::s(F(64)),
        Ty::s(U(16)),
        Ty::s(I(16)),
        Ty::s(F(16)),
        Ty::s(U(8)),
        Ty::s(I(8)),
        Ty::v(I(32), 2),
        Ty::v(U(32), 3),
        Ty::v(F(32), 4),
        Ty::v(Bool, 2),
        Ty::v(F(64), 2),
        Ty::v(U(64), 2),
        Ty::v(F(16), 3),
    ]
}

/// The value types of the arithmetic family.
pub fn value_types() -> Vec<Ty> {
    use Scalar::*;
    vec![
        Ty::s(U(32)),
        Ty::s(I(32)),
        Ty::s(F(32)),
        Ty::s(Bool),
        Ty::s(U(64)),
        Ty::s(I(64)),
        Ty::s(F(64)),
        Ty::s(U(16)),
        Ty::s(I(16)),
        Ty::s(F(16)),
        Ty::s(U(8)),
        Ty::s(I(8)),
        Ty::v(I(32), 2),
        Ty::v(U(32), 4),
        Ty::v(F(32), 3),
        Ty::v(Bool, 3),
        Ty::v(F(64), 2),
        Ty::v(I(64), 2),
        Ty::v(F(16), 2),
    ]
}

/// Partition family: the key's partition at the top and inside a branch.
pub fn partition_case(kt: Ty) -> Case {
    let layout = Layout {
        slots: 2,
        key: Some(kt),
        value: None,
        results: vec![],
    };
    let mut g = extensions(&[kt], true, false, false, false);
    g.push_str(&common(&layout, 4));
    g.push_str(&io_fns("k", kt));
    let kg = kt.glsl();
    g.push_str(&format!(
        r#"void site(uint s) {{
    {kg} k = k_ld(kin(s));
    uvec4 act = subgroupBallot(true);
    uvec4 p = subgroupPartitionNV(k);
    uint o = rec(s, act, p, p, 1u);
    k_st(o, k);
}}
void main() {{
    gid = gl_GlobalInvocationID.x;
    site(0u);
    if ((ctrl(0u) & 3u) != 0u) {{
        site(1u);
    }}
}}
"#
    ));
    Case {
        name: format!("partition/{}", kt.name()),
        family: Family::Partition,
        glsl: g,
        layout,
        ctrl_words: 4,
        local_sizes: vec![37],
        needs: needs_of(&[kt]),
        env: "vulkan1.1",
        presets: None,
    }
}

/// Arithmetic family: every op the type accepts x reduce/inclusive/exclusive, ballot from a uint key.
/// With `core`, the same grid with core subgroup ops over the whole active set (a native check of
/// the model; the ballot operand recorded is the active set).
pub fn arith_case(vt: Ty, core: bool) -> Case {
    let results = arith_results(vt, &Op::for_type(vt));
    let kt = Ty::s(Scalar::U(32));
    let layout = Layout {
        slots: 1,
        key: Some(kt),
        value: Some(vt),
        results: results.clone(),
    };
    let mut g = extensions(&[vt], !core, false, false, core);
    g.push_str(&common(&layout, 4));
    g.push_str(&io_fns("v", vt));
    let (ballot, flags) = if core {
        ("act", "0u")
    } else {
        ("subgroupPartitionNV(key)", "1u")
    };
    g.push_str(&format!(
        r#"void main() {{
    gid = gl_GlobalInvocationID.x;
    uint key = inp[kin(0u)];
    {vg} v = v_ld(vin(0u));
    uvec4 act = subgroupBallot(true);
    uvec4 b = {ballot};
    uint o = rec(0u, act, b, b, {flags});
    outp[o] = key;
    v_st(o + KW, v);
{calls}}}
"#,
        vg = vt.glsl(),
        calls = arith_calls(&results, core),
    ));
    Case {
        name: format!(
            "{}/{}",
            if core { "core-arith" } else { "arith" },
            vt.name()
        ),
        family: if core {
            Family::CoreArith
        } else {
            Family::Arith
        },
        glsl: g,
        layout,
        ctrl_words: 4,
        local_sizes: if vt == Ty::s(Scalar::U(32)) {
            vec![3, 37, 64]
        } else {
            vec![37]
        },
        needs: needs_of(&[vt]),
        env: "vulkan1.1",
        presets: None,
    }
}

/// The divergence shapes.
pub const SHAPES: [&str; 3] = ["branches", "loops", "returns"];

/// Divergence family: partition and partitioned ops under branches, loops, early returns; the
/// ballot computed outside a branch and used inside; ops inside functions called from loops.
pub fn diverge_case(shape: &str, vt: Ty) -> Case {
    // The arithmetic family covers the whole op grid; here the point is control flow, and each op
    // is a separate lowered sequence that lavapipe compiles at every (inlined) call site, so a few
    // (op, mode) pairs keep the suite fast: order-sensitive ops, every mode at least once.
    let pairs: Vec<(Op, Mode)> = match vt.scalar {
        Scalar::F(_) => vec![(Op::Add, Mode::Inclusive)],
        Scalar::Bool => vec![
            (Op::Xor, Mode::Reduce),
            (Op::Xor, Mode::Inclusive),
            (Op::And, Mode::Exclusive),
        ],
        Scalar::U(32) => vec![
            (Op::Add, Mode::Reduce),
            (Op::Add, Mode::Inclusive),
            (Op::Max, Mode::Exclusive),
        ],
        _ => vec![(Op::Add, Mode::Exclusive)],
    };
    let results: Vec<ResultKind> = pairs
        .into_iter()
        .map(|(o, m)| ResultKind::Arith(o, m))
        .collect();
    let slots = match shape {
        "branches" => 6,
        "loops" => 9,
        _ => 4,
    };
    let kt = Ty::s(Scalar::U(32));
    let layout = Layout {
        slots,
        key: Some(kt),
        value: Some(vt),
        results: results.clone(),
    };
    let mut g = extensions(&[vt], true, false, false, false);
    g.push_str(&common(&layout, 4));
    g.push_str(&io_fns("v", vt));
    g.push_str(&format!(
        r#"void ops(uint s, uvec4 act, uvec4 b, uvec4 p, uint flags) {{
    uint key = inp[kin(s)];
    {vg} v = v_ld(vin(s));
    uint o = rec(s, act, b, p, flags);
    outp[o] = key;
    v_st(o + KW, v);
{calls}}}
void site_in(uint s) {{
    uint key = inp[kin(s)];
    uvec4 act = subgroupBallot(true);
    uvec4 p = subgroupPartitionNV(key);
    ops(s, act, p, p, 1u);
}}
void site_out(uint s, uvec4 b) {{
    uvec4 act = subgroupBallot(true);
    ops(s, act, b, b, 0u);
}}
uvec4 beyond() {{
    uvec4 r = uvec4(0u);
    uint n = gl_SubgroupSize;
    for (uint w = 0u; w < 4u; w++) {{
        uint lo = w * 32u;
        r[w] = n >= lo + 32u ? 0u : (n <= lo ? 0xffffffffu : (0xffffffffu << (n - lo)));
    }}
    return r & uvec4(0xa5a5a5a5u, 0x0f0f0f0fu, 0x80000001u, 0xffff0000u);
}}
"#,
        vg = vt.glsl(),
        calls = arith_calls(&results, false),
    ));
    let main = match shape {
        "branches" => {
            r#"void main() {
    gid = gl_GlobalInvocationID.x;
    uint c = ctrl(0u);
    uvec4 b = subgroupPartitionNV(inp[kin(0u)]);
    if ((c & 1u) != 0u) {
        site_out(0u, b);
    }
    if ((c & 6u) != 0u) {
        if ((c & 8u) != 0u) {
            site_out(1u, b | beyond());
        } else {
            site_in(2u);
        }
        site_in(3u);
    } else {
        switch ((c >> 4u) & 3u) {
            case 0u: site_in(4u); break;
            case 1u: site_out(4u, b); break;
            default: break;
        }
    }
    site_in(5u);
}
"#
        }
        "loops" => {
            r#"void body(uint i, uvec4 b) {
    if (((ctrl(2u) >> i) & 1u) != 0u) {
        site_out(4u + i, b);
    }
    site_in(i);
}
void main() {
    gid = gl_GlobalInvocationID.x;
    if ((ctrl(3u) & 7u) == 0u) {
        return;
    }
    uint c = ctrl(1u);
    uint trip = c % 5u;
    uvec4 b = subgroupPartitionNV(inp[kin(8u)]);
    for (uint i = 0u; i < trip; i++) {
        if (i == ((c >> 3u) & 3u) && (c & 0x80u) != 0u) {
            break;
        }
        if (((c >> (8u + i)) & 1u) != 0u) {
            continue;
        }
        body(i, b);
    }
    site_in(8u);
}
"#
        }
        _ => {
            r#"void f(uvec4 b) {
    if ((ctrl(0u) & 1u) != 0u) {
        return;
    }
    site_in(0u);
    if ((ctrl(0u) & 2u) != 0u) {
        return;
    }
    site_out(1u, b);
}
void main() {
    gid = gl_GlobalInvocationID.x;
    uvec4 b = subgroupPartitionNV(inp[kin(3u)]);
    f(b);
    if ((ctrl(0u) & 4u) != 0u) {
        return;
    }
    site_in(2u);
    site_out(3u, b);
}
"#
        }
    };
    g.push_str(main);
    Case {
        name: format!("diverge-{shape}/{}", vt.name()),
        family: Family::Diverge,
        glsl: g,
        layout,
        ctrl_words: 4,
        local_sizes: vec![3, 37],
        needs: needs_of(&[vt]),
        env: "vulkan1.1",
        presets: None,
    }
}

/// Vote family: `allInvocationsARB`, `anyInvocationARB`, `allInvocationsEqualARB`
/// (`OpSubgroupAllKHR`/`AnyKHR`/`AllEqualKHR`), or with `core` the core `subgroupAll/Any/AllEqual`,
/// at the top level, in both arms of a branch, in loop iterations with breaks, in nested branches,
/// after early returns.
pub fn vote_case(core: bool) -> Case {
    vote_case_styled(if core {
        VoteStyle::Core
    } else {
        VoteStyle::Arb
    })
}

/// How the vote family is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteStyle {
    /// `GL_ARB_shader_group_vote` with core-subgroup records (SPIR-V 1.3).
    Arb,
    /// Core `subgroupAll/Any/AllEqual` (native only: checks the model).
    Core,
    /// `GL_ARB_shader_group_vote` with `GL_ARB_shader_ballot` records, compiled for Vulkan 1.0
    /// (SPIR-V 1.0): what the `khr-ballot` preset's lowering must handle.
    KhrBallot,
}

/// [`vote_case`] in any [`VoteStyle`].
pub fn vote_case_styled(style: VoteStyle) -> Case {
    let core = style == VoteStyle::Core;
    let khr = style == VoteStyle::KhrBallot;
    let bt = Ty::s(Scalar::Bool);
    let layout = Layout {
        slots: 8,
        key: None,
        value: Some(bt),
        results: vec![
            ResultKind::VoteAll,
            ResultKind::VoteAny,
            ResultKind::VoteAllEqual,
        ],
    };
    let mut g = if khr {
        "#version 450\n#extension GL_ARB_shader_ballot : require\n#extension GL_ARB_shader_group_vote : require\n#extension GL_ARB_gpu_shader_int64 : require\n".to_owned()
    } else {
        extensions(&[], false, !core, core, false)
    };
    g.push_str(&common_with(&layout, 4, khr));
    let active = if khr {
        "uvec4(unpackUint2x32(ballotARB(true)), 0u, 0u)"
    } else {
        "subgroupBallot(true)"
    };
    let (all, any, eq) = if core {
        ("subgroupAll", "subgroupAny", "subgroupAllEqual")
    } else {
        (
            "allInvocationsARB",
            "anyInvocationARB",
            "allInvocationsEqualARB",
        )
    };
    g.push_str(&format!(
        r#"void vote(uint s) {{
    bool p = inp[vin(s)] != 0u;
    uvec4 act = {active};
    bool a = {all}(p);
    bool y = {any}(p);
    bool e = {eq}(p);
    uint o = rec(s, act, uvec4(0u), uvec4(0u), 0u);
    outp[o] = p ? 1u : 0u;
    outp[o + 1u] = a ? 1u : 0u;
    outp[o + 2u] = y ? 1u : 0u;
    outp[o + 3u] = e ? 1u : 0u;
}}
void main() {{
    gid = gl_GlobalInvocationID.x;
    uint c = ctrl(0u);
    if ((ctrl(3u) % 5u) == 0u) {{
        return;
    }}
    vote(0u);
    if ((c & 1u) != 0u) {{
        vote(1u);
    }} else {{
        vote(2u);
    }}
    uint trip = (c >> 1u) & 3u;
    for (uint i = 0u; i < trip; i++) {{
        if (((c >> (4u + i)) & 1u) != 0u) {{
            break;
        }}
        vote(3u + i);
    }}
    if ((c & 0x40u) != 0u) {{
        if ((c & 0x80u) != 0u) {{
            vote(6u);
        }}
    }}
    vote(7u);
}}
"#
    ));
    Case {
        name: if core {
            "core-vote".into()
        } else {
            "vote".into()
        },
        family: if core { Family::CoreVote } else { Family::Vote },
        glsl: g,
        layout,
        ctrl_words: 4,
        local_sizes: vec![5, 64],
        needs: Needs {
            int64: khr,
            ..Needs::default()
        },
        env: if khr { "vulkan1.0" } else { "vulkan1.1" },
        presets: khr.then(|| vec!["khr-ballot"]),
    }
}

/// Every generic case of the suite.
pub fn all_cases() -> Vec<Case> {
    let mut v = Vec::new();
    v.push(vote_case(false));
    v.push(vote_case(true));
    v.push(vote_case_styled(VoteStyle::KhrBallot));
    for t in key_types() {
        v.push(partition_case(t));
    }
    for t in value_types() {
        v.push(arith_case(t, false));
        v.push(arith_case(t, true));
    }
    for shape in SHAPES {
        for t in [
            Ty::s(Scalar::U(32)),
            Ty::s(Scalar::F(32)),
            Ty::s(Scalar::Bool),
            Ty::s(Scalar::I(64)),
        ] {
            v.push(diverge_case(shape, t));
        }
    }
    v
}

/// Radix-sort multisplit, pass 1: per-digit histogram. Each subset's lowest lane adds the subset
/// size (a partitioned reduce) to the digit's counter.
pub const RADIX_HIST: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_NV_shader_subgroup_partitioned : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint SHIFT = 0u;
layout(std430, binding = 0) readonly buffer Keys { uint n; uint keys[]; };
layout(std430, binding = 1) buffer Hist { uint hist[16]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    if (g >= n) {
        return;
    }
    uint d = (keys[g] >> SHIFT) & 15u;
    uvec4 b = subgroupPartitionNV(d);
    uint count = subgroupPartitionedAddNV(1u, b);
    if (gl_SubgroupInvocationID == subgroupBallotFindLSB(b)) {
        atomicAdd(hist[d], count);
    }
}
"#;

/// Radix-sort multisplit, pass 2: scatter. The subset leader reserves room in the digit's bucket,
/// shares the offset by a shuffle, and each element writes to offset + its rank in the subset
/// (a partitioned exclusive scan).
pub const RADIX_SCATTER: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_NV_shader_subgroup_partitioned : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint SHIFT = 0u;
layout(std430, binding = 0) readonly buffer Keys { uint n; uint keys[]; };
layout(std430, binding = 1) buffer Offsets { uint offsets[16]; };
layout(std430, binding = 2) buffer Sorted { uint sorted[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    if (g >= n) {
        return;
    }
    uint key = keys[g];
    uint d = (key >> SHIFT) & 15u;
    uvec4 b = subgroupPartitionNV(d);
    uint count = subgroupPartitionedAddNV(1u, b);
    uint rank = subgroupPartitionedExclusiveAddNV(1u, b);
    uint leader = subgroupBallotFindLSB(b);
    uint base = 0u;
    if (gl_SubgroupInvocationID == leader) {
        base = atomicAdd(offsets[d], count);
    }
    base = subgroupShuffle(base, leader);
    sorted[base + rank] = key;
}
"#;
