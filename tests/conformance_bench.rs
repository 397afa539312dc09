//! GPU timing of native versus lowered subgroup ops (run by `cargo xtask gpu` on the device machine).
//!
//! Each benchmark is a compute shader whose loop applies one op `ITERS` times in a dependent chain
//! (the next input needs the last result), so the time per iteration is the op's latency plus the
//! loop's own few instructions (the `loop-only` shader, timed again in every row). One subgroup per
//! workgroup, `GROUPS` workgroups (about one per multiprocessor), timestamps around each dispatch;
//! after a 3 s warm-up, `ROUNDS` round-robin rounds over baseline and variants, `reps` dispatches
//! each, and the median of all samples (GPU clocks moved times up to 5x between rows of one run
//! before this). Variants: the driver's native op, and the same module lowered for the
//! `vulkan1.1` preset with the subgroup size unknown and known (`--subgroup-size 32`); partition
//! rows also lower with `ops.arithmetic` off and, with `SPV_BENCH_FORMS=1`, with each
//! `PartitionForm` forced. `SPV_BENCH_FILTER` (comma list of substrings) selects rows,
//! `SPV_BENCH_ITERS` and `SPV_BENCH_GROUPS` set the chain length and the workgroups.
//! Integer outputs of native and every lowered variant must be bit-identical.
//!
//! The emulation table (`conformance_bench_emulated.rs`, issue 26): each row's module emulated at
//! half and a quarter of the device's subgroup size, lowered for the device's preset, timed in
//! the row's round robin against the same native op, its output checked against the simulator's
//! run of the original at the emulated size (`SPV_BENCH_EMULATE` sets the sizes).
//! `SPV_BENCH_WARMUP_S` sets the warm-up's seconds (0 for none: lavapipe runs the code path).

use std::fmt::Write as _;
use std::time::Duration;

use spv_subgroup_lower::{FloatPartition, LowerOptions, PartitionForm, Target};
use spv_subgroup_vk::{PipelineOptions, Runner};

/// One benchmark: a name, what it measures, and the loop body.
struct Bench {
    name: &'static str,
    class: &'static str,
    setup: String,
    body: String,
    float: bool,
}

fn benches() -> Vec<Bench> {
    let mut v = Vec::new();
    let b = |name, class, setup: &str, body: &str| Bench {
        name,
        class,
        setup: setup.to_owned(),
        body: body.to_owned(),
        float: false,
    };
    v.push(b(
        "loop-only",
        "baseline",
        "",
        "v = v * 1664525u + 1013904223u + (v & z);",
    ));
    // Votes: the predicate comes from the last result, so the votes form a dependent chain. The
    // `core-*` rows are the core ops the lowering emits, written directly: their native time is
    // what the driver makes of OpGroupNonUniformAll/Any/AllEqual (nothing to lower in them).
    for (name, class, f) in [
        ("vote-all", "vote", "allInvocationsARB"),
        ("vote-any", "vote", "anyInvocationARB"),
        ("vote-allequal", "vote", "allInvocationsEqualARB"),
        ("core-subgroupAll", "reference", "subgroupAll"),
        ("core-subgroupAny", "reference", "subgroupAny"),
        ("core-subgroupAllEqual", "reference", "subgroupAllEqual"),
        ("ballot-all", "reference", "ballot_all"),
        ("ballot-any", "reference", "ballot_any"),
        ("ballot-allequal", "reference", "ballot_allequal"),
    ] {
        v.push(Bench {
            name,
            class,
            setup: String::new(),
            body: format!(
                "bool p = (v & 0x10000u) != 0u; v = v * 1664525u + ({f}(p) ? 1013904223u : 12345u);"
            ),
            float: false,
        });
    }
    // The subgroup ops the partition's forms are made of, each in the dependent chain (its cost
    // is the row's time less `loop-only`, in units of `loop-only`): what bounds the lowering.
    // `lid & z` (0 at run time) keeps `v` non-uniform to the compiler, as `v & z` does in
    // `loop-only`, so that it cannot fold an op of a uniform value.
    for (name, body) in [
        ("op-ballot", "v = v * 1664525u + subgroupBallot((v & 0x10000u) != 0u).x + (lid & z);"),
        ("op-ballot-findlsb-shuffle", "v = subgroupShuffle(v, findLSB(subgroupBallot(true).x)) * 1664525u + 1013904223u + (lid & z);"),
        ("op-broadcastfirst", "v = subgroupBroadcastFirst(v) * 1664525u + 1013904223u + (lid & z);"),
        ("op-shufflexor", "v = subgroupShuffleXor(v, 1u) * 1664525u + 1013904223u + (lid & z);"),
        ("op-or-u32", "v = subgroupOr(v) * 1664525u + 1013904223u + (lid & z);"),
        ("op-allequal-u32", "v = v * 1664525u + (subgroupAllEqual(v >> 20) ? 1013904223u : 12345u) + (lid & z);"),
        ("op-uniform-if", "if (subgroupAll((v & 1u) != 2u)) { v = v * 1664525u + 1013904223u; } else { v = v * 22695477u + 1u; }"),
        // Ops the emulation of a smaller subgroup rewrites in ways of their own (the emulation
        // table, `conformance_bench_emulated.rs`): a reduce becomes a clustered reduce, a scan
        // a partitioned scan, a shuffle's index is offset by the virtual subgroup's first lane,
        // a ballot bit count is masked to the virtual lanes.
        ("op-add-u32", "v = subgroupAdd(v) * 1664525u + 1013904223u + (lid & z);"),
        ("op-inclusiveadd-u32", "v = subgroupInclusiveAdd(v) * 1664525u + 1013904223u + (lid & z);"),
        ("op-shuffle", "v = subgroupShuffle(v, (lid + 1u) & (gl_SubgroupSize - 1u)) * 1664525u + 1013904223u + (lid & z);"),
        ("op-inclusivebitcount", "v = v * 1664525u + subgroupBallotInclusiveBitCount(subgroupBallot((v & 0x10000u) != 0u)) + (lid & z);"),
    ] {
        v.push(Bench {
            name,
            class: "reference",
            setup: "uint lid = gl_SubgroupInvocationID;".to_owned(),
            body: body.to_owned(),
            float: false,
        });
    }
    // The key of each round depends on the last round's result (`v & z` is 0 at run time but
    // unknown to the compiler), so the partitions form a dependent chain too. Keys `lane % d`
    // differ in log2(d) bits; the `spread` keys multiply them by an odd constant, so a few
    // distinct keys differ in most of the word's bits (hashes, say).
    for (ty, setup, body) in [
        (
            "u32",
            "uint k = gl_SubgroupInvocationID % {d}u;",
            "uvec4 b = subgroupPartitionNV(k + (v & z)); v += b.x;",
        ),
        (
            "f32",
            "float k = float(gl_SubgroupInvocationID % {d}u) - 1.5;",
            "uvec4 b = subgroupPartitionNV(k + float(v & z)); v += b.x;",
        ),
        (
            "u64",
            "uint64_t k = uint64_t(gl_SubgroupInvocationID % {d}u) << 40;",
            "uvec4 b = subgroupPartitionNV(k + uint64_t(v & z)); v += b.x;",
        ),
    ] {
        for d in [1, 2, 4, 8, 32] {
            let s = if d == 1 { "" } else { "s" };
            v.push(Bench {
                name: Box::leak(format!("partition-{ty}-{d}key{s}").into_boxed_str()),
                class: "partition",
                setup: setup.replace("{d}", &d.to_string()),
                body: body.to_owned(),
                float: false,
            });
        }
    }
    for (name, setup, body) in [
        (
            "partition-u32-4keys-spread",
            "uint k = (gl_SubgroupInvocationID % 4u) * 0x9e3779b1u;",
            "uvec4 b = subgroupPartitionNV(k + (v & z)); v += b.x;",
        ),
        (
            "partition-u32-32keys-spread",
            "uint k = gl_SubgroupInvocationID * 0x9e3779b1u;",
            "uvec4 b = subgroupPartitionNV(k + (v & z)); v += b.x;",
        ),
        (
            "partition-u8-4keys",
            "uint8_t k = uint8_t(gl_SubgroupInvocationID % 4u);",
            "uvec4 b = subgroupPartitionNV(k + uint8_t(v & z)); v += b.x;",
        ),
        (
            "partition-u16-4keys",
            "uint16_t k = uint16_t(gl_SubgroupInvocationID % 4u);",
            "uvec4 b = subgroupPartitionNV(k + uint16_t(v & z)); v += b.x;",
        ),
        (
            "partition-u8vec4-4keys",
            "u8vec4 k = u8vec4(uint8_t(gl_SubgroupInvocationID % 4u));",
            "uvec4 b = subgroupPartitionNV(k + u8vec4(uint8_t(v & z))); v += b.x;",
        ),
        (
            "partition-uvec2-4keys",
            "uvec2 k = uvec2(gl_SubgroupInvocationID % 4u, 7u);",
            "uvec4 b = subgroupPartitionNV(k + uvec2(v & z)); v += b.x;",
        ),
        (
            "partition-uvec4-4keys",
            "uvec4 k = uvec4(gl_SubgroupInvocationID % 4u, 7u, 8u, 9u);",
            "uvec4 b = subgroupPartitionNV(k + uvec4(v & z)); v += b.x;",
        ),
        (
            "partition-u16-1key",
            "uint16_t k = uint16_t(7u);",
            "uvec4 b = subgroupPartitionNV(k + uint16_t(v & z)); v += b.x;",
        ),
        (
            "partition-f16-1key",
            "float16_t k = float16_t(-1.5);",
            "uvec4 b = subgroupPartitionNV(k + float16_t(v & z)); v += b.x;",
        ),
        (
            "partition-uvec2-1key",
            "uvec2 k = uvec2(7u, 9u);",
            "uvec4 b = subgroupPartitionNV(k + uvec2(v & z)); v += b.x;",
        ),
        (
            "partition-f16-4keys",
            "float16_t k = float16_t(float(gl_SubgroupInvocationID % 4u) - 1.5);",
            "uvec4 b = subgroupPartitionNV(k + float16_t(v & z)); v += b.x;",
        ),
        (
            "partition-u64vec2-4keys",
            "u64vec2 k = u64vec2(gl_SubgroupInvocationID % 4u, 7u);",
            "uvec4 b = subgroupPartitionNV(k + u64vec2(v & z)); v += b.x;",
        ),
        (
            "partition-bool",
            "bool k = (gl_SubgroupInvocationID & 1u) != 0u;",
            "uvec4 b = subgroupPartitionNV(k != ((v & z) != 0u)); v += b.x;",
        ),
    ] {
        v.push(Bench {
            name,
            class: "partition",
            setup: setup.to_owned(),
            body: body.to_owned(),
            float: false,
        });
    }
    for (op, class) in [("Add", "u32"), ("Min", "u32"), ("Xor", "u32")] {
        for mode in ["", "Inclusive", "Exclusive"] {
            let name: &'static str = Box::leak(
                format!(
                    "partitioned-{}{}-{class}",
                    mode.to_lowercase(),
                    op.to_lowercase()
                )
                .into_boxed_str(),
            );
            let class: &'static str = if mode.is_empty() { "reduce" } else { "scan" };
            v.push(Bench {
                name,
                class,
                setup: "uvec4 b = subgroupPartitionNV(gl_SubgroupInvocationID % 4u);".into(),
                body: format!("v = subgroupPartitioned{mode}{op}NV(v, b) + 1u;"),
                float: false,
            });
        }
    }
    // The other opcodes of the 16, as inclusive scans (the modes cost alike, see above).
    let setup = "uvec4 b = subgroupPartitionNV(gl_SubgroupInvocationID % 4u);";
    for (name, body) in [
        ("partitioned-inclusivemul-u32 (IMul)", "v = subgroupPartitionedInclusiveMulNV(v | 1u, b) + 2u;"),
        ("partitioned-inclusivemax-u32 (UMax)", "v = subgroupPartitionedInclusiveMaxNV(v, b) + 1u;"),
        ("partitioned-inclusivemin-i32 (SMin)", "v = uint(subgroupPartitionedInclusiveMinNV(int(v), b) + 1);"),
        ("partitioned-inclusivemax-i32 (SMax)", "v = uint(subgroupPartitionedInclusiveMaxNV(int(v), b) + 1);"),
        ("partitioned-inclusiveand-u32 (BitwiseAnd)", "v = subgroupPartitionedInclusiveAndNV(v, b) + 0x9e3779b9u;"),
        ("partitioned-inclusiveor-u32 (BitwiseOr)", "v = subgroupPartitionedInclusiveOrNV(v, b) * 1664525u;"),
        ("partitioned-inclusivemul-f32 (FMul)", "f = fract(subgroupPartitionedInclusiveMulNV(f, b)) + 0.5; v += uint(f);"),
        ("partitioned-inclusivemin-f32 (FMin)", "f = subgroupPartitionedInclusiveMinNV(f, b) + 1.0; v += uint(f);"),
        ("partitioned-inclusivemax-f32 (FMax)", "f = subgroupPartitionedInclusiveMaxNV(f, b) - 1.0; v += uint(f);"),
        ("partitioned-inclusiveand-bool (LogicalAnd)", "q = subgroupPartitionedInclusiveAndNV(q, b) != ((v & 8u) != 0u); v = v * 1664525u + (q ? 1u : 7u);"),
        ("partitioned-inclusiveor-bool (LogicalOr)", "q = subgroupPartitionedInclusiveOrNV(q, b) != ((v & 8u) != 0u); v = v * 1664525u + (q ? 1u : 7u);"),
        ("partitioned-inclusivexor-bool (LogicalXor)", "q = subgroupPartitionedInclusiveXorNV(q, b) != ((v & 8u) != 0u); v = v * 1664525u + (q ? 1u : 7u);"),
    ] {
        let float = body.contains("f =");
        v.push(Bench {
            name,
            class: "scan",
            setup: format!("{setup} float f = float(v & 7u) + 0.5; bool q = (v & 1u) != 0u;"),
            body: body.to_owned(),
            float,
        });
    }
    v.push(Bench {
        name: "partitioned-inclusiveadd-u64",
        class: "scan",
        setup:
            "uvec4 b = subgroupPartitionNV(gl_SubgroupInvocationID % 4u); uint64_t w = uint64_t(v);"
                .into(),
        body: "w = subgroupPartitionedInclusiveAddNV(w, b) + 1ul; v += uint(w >> 7);".into(),
        float: false,
    });
    // Values the lowering moves differently: 8/16-bit (one shuffle each where the target has
    // the extended types), vectors (one sequence per component).
    for (name, body) in [
        ("partitioned-inclusiveadd-u8", "v = v * 1664525u + uint(subgroupPartitionedInclusiveAddNV(uint8_t(v >> 3), b));"),
        ("partitioned-inclusiveadd-u16", "v = v * 1664525u + uint(subgroupPartitionedInclusiveAddNV(uint16_t(v >> 3), b));"),
        ("partitioned-inclusiveadd-f16", "v = v * 1664525u + uint(subgroupPartitionedInclusiveAddNV(float16_t(v & 7u), b));"),
        ("partitioned-inclusiveadd-uvec2", "uvec2 r = subgroupPartitionedInclusiveAddNV(uvec2(v, v >> 5), b); v = v * 1664525u + r.x + r.y;"),
        ("partitioned-inclusiveadd-vec4", "vec4 r = subgroupPartitionedInclusiveAddNV(vec4(v & 7u, v & 3u, 1.0, 2.0), b); v = v * 1664525u + uint(r.x + r.y + r.z + r.w);"),
    ] {
        v.push(Bench {
            name,
            class: "scan",
            setup: "uvec4 b = subgroupPartitionNV(gl_SubgroupInvocationID % 4u);".into(),
            body: body.to_owned(),
            float: name.contains("f16") || name.contains("vec4"),
        });
    }
    for mode in ["", "Inclusive", "Exclusive"] {
        let name: &'static str =
            Box::leak(format!("partitioned-{}add-f32", mode.to_lowercase()).into_boxed_str());
        v.push(Bench {
            name,
            class: if mode.is_empty() { "reduce" } else { "scan" },
            setup: "uvec4 b = subgroupPartitionNV(gl_SubgroupInvocationID % 4u); float f = float(v & 7u);".into(),
            body: format!("f = subgroupPartitioned{mode}AddNV(f, b) * 0.03125; v += uint(f);"),
            float: true,
        });
    }
    v
}

/// The partition forms timed beside the one the lowering picks, each forced at the known size
/// (`LowerOptions::partition_form`), with `SPV_BENCH_FORMS=1`.
fn partition_forms() -> Vec<(String, PartitionForm)> {
    if std::env::var("SPV_BENCH_FORMS").is_err() {
        return Vec::new();
    }
    [
        ("bit-sliced", PartitionForm::BitSliced),
        ("first round", PartitionForm::FirstRound),
        ("differing bits", PartitionForm::DifferingBits),
        ("waterfall", PartitionForm::Waterfall),
    ]
    .into_iter()
    .map(|(n, f)| (n.to_owned(), f))
    .collect()
}

/// The GLSL of the benchmark row `name` (for the tests of the benchmark's checks).
pub fn row_glsl(name: &str) -> Option<String> {
    benches().iter().find(|b| b.name == name).map(glsl)
}

fn glsl(b: &Bench) -> String {
    format!(
        r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_NV_shader_subgroup_partitioned : require
#extension GL_ARB_shader_group_vote : require
#extension GL_KHR_shader_subgroup_vote : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_subgroup_extended_types_int64 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require
#extension GL_EXT_shader_subgroup_extended_types_int8 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#extension GL_EXT_shader_subgroup_extended_types_int16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_subgroup_extended_types_float16 : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITERS = 1024u;
layout(std430, binding = 0) buffer Buf {{ uint zero; uint data[]; }};
// The ballot forms of the votes (what a target without vote ops gets).
bool ballot_all(bool p) {{ return subgroupBallot(!p) == uvec4(0u); }}
bool ballot_any(bool p) {{ return subgroupBallot(p) != uvec4(0u); }}
bool ballot_allequal(bool p) {{
    uvec4 b = subgroupBallot(p);
    return b == uvec4(0u) || b == subgroupBallot(true);
}}
void main() {{
    uint g = gl_GlobalInvocationID.x;
    uint v = data[g];
    uint z = zero;
    {setup}
    for (uint i = 0u; i < ITERS; i++) {{
        {body}
    }}
    data[g] = v;
}}
"#,
        setup = b.setup,
        body = b.body
    )
}

/// The benchmark's input buffer for `lanes` invocations: the zero word the chains read, then one
/// word per invocation.
pub fn input(lanes: usize) -> Vec<u32> {
    let mut input = vec![0u32];
    input.extend((0..lanes as u32).map(|i| i.wrapping_mul(2_654_435_761)));
    input
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Rounds of the round robin (each `reps` dispatches per variant).
const ROUNDS: usize = 5;

/// Times every benchmark natively and lowered; prints a table (and writes it to `SPV_CONFORMANCE_OUT`).
pub fn run(runner: &Runner) {
    // 32768 iterations: dispatches of 0.2 to 10 ms keep the GPU busy between the host's
    // submissions (with 4096, 25 to 120 us each, its clock fell to a third in the middle of runs
    // after the warm-up had raised it, and rows timed across the change were unusable).
    let iters: u32 = std::env::var("SPV_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(32768);
    let groups: u32 = std::env::var("SPV_BENCH_GROUPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(132);
    let reps: u32 = 3;
    let size = runner.info().subgroup_size;
    let mut table = format!(
        "GPU benchmark on {} ({}), subgroup size {size}: ns per op per subgroup (dependent chain of {iters}, \
         {groups} workgroups of one subgroup, median of {rounds} round-robin rounds x {reps} dispatches, after a 3 s warm-up)\n\n\
         | op | class | loop-only | native | lowered (size unknown) | ratio | op-only ratio | lowered (size known) | ratio | op-only ratio | no `arithmetic`, size known (op-only ratio) | outputs equal |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
        runner.info().name,
        runner.info().driver,
        rounds = ROUNDS,
    );
    let mut failures = Vec::new();
    // The loop-only shader, timed in every row as that row's baseline.
    let all = benches();
    let base_words = super::compile(&glsl(&all[0]), "vulkan1.1").ok();
    let n = (groups * size) as usize;
    let base_opts = PipelineOptions {
        buffers: 1,
        spec_constants: vec![(0, size), (1, iters)],
        ..PipelineOptions::default()
    };
    let base_pipe = base_words
        .as_ref()
        .and_then(|w| runner.pipeline(w, &base_opts).ok());
    // Warm-up: about three seconds of full-chip work in long dispatches (2^20 iterations: with
    // the benchmark's own short dispatches the GPU idled between them and its clock was still
    // ramping up during the first rows), so the clocks leave their idle state.
    let warm_pipe = base_words.as_ref().and_then(|w| {
        let opts = PipelineOptions {
            spec_constants: vec![(0, size), (1, 1 << 20)],
            ..base_opts.clone()
        };
        runner.pipeline(w, &opts).ok()
    });
    // `SPV_BENCH_WARMUP_S` (default 3) sets it: 0 on lavapipe, where one such dispatch runs for
    // minutes (a test of the benchmark's code path, not of its times).
    let warmup = std::env::var("SPV_BENCH_WARMUP_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    if let (Some(p), true) = (&warm_pipe, warmup > 0) {
        let start = std::time::Instant::now();
        let mut input = vec![0u32; 1 + n * 64];
        while start.elapsed() < Duration::from_secs(warmup) {
            if runner
                .run(
                    p,
                    std::slice::from_mut(&mut input),
                    [groups * 64, 1, 1],
                    Duration::from_secs(60),
                )
                .is_err()
            {
                break;
            }
        }
    }
    // `SPV_BENCH_FILTER`: a comma list of substrings of row names (all rows when unset).
    let filter: Vec<String> = std::env::var("SPV_BENCH_FILTER")
        .map(|f| {
            f.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let forms = partition_forms();
    let mut forms_table = format!(
        "\nPartition forms at size {size}, each forced with `LowerOptions::partition_form` (op-only ratio to native; `loop-only` and native as above)\n\n| op | {} |\n|---|{}\n",
        forms.iter().map(|f| f.0.as_str()).collect::<Vec<_>>().join(" | "),
        "---|".repeat(forms.len())
    );
    let mut emulation = super::bench_emulated::Table::new(runner.info());
    for b in all {
        if !filter.is_empty() && !filter.iter().any(|f| b.name.contains(f.as_str())) {
            continue;
        }
        let src = glsl(&b);
        let native = match super::compile(&src, "vulkan1.1") {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{}: compile: {e}", b.name));
                continue;
            }
        };
        let mut variants: Vec<(&str, Option<Vec<u32>>)> = Vec::new();
        variants.push((
            "native",
            super::native_blocker(&native, runner)
                .is_none()
                .then(|| native.clone()),
        ));
        for (label, sz) in [("lowered", None), ("lowered-32", Some(size))] {
            match super::lower_checked_sized(&native, "vulkan1.1", FloatPartition::Spec, sz) {
                Ok(w) => variants.push((label, Some(w))),
                Err(e) => {
                    failures.push(format!("{} {label}: {e}", b.name));
                    variants.push((label, None));
                }
            }
        }
        // The partition's other forms: a target without `arithmetic` gets one waterfall round
        // and then every bit slice (no `Or ^ And` of the keys), at the known size.
        if b.class == "partition" {
            let label = "lowered-32-no-arithmetic";
            match Target::preset("vulkan1.1")
                .ok_or_else(|| "no preset vulkan1.1".to_owned())
                .and_then(|mut t| {
                    t.ops.arithmetic = false;
                    super::lower_checked_target(&native, t, FloatPartition::Spec, Some(size))
                }) {
                Ok(w) => variants.push((label, Some(w))),
                Err(e) => {
                    failures.push(format!("{} {label}: {e}", b.name));
                    variants.push((label, None));
                }
            }
            for (label, form) in &forms {
                let opts = Target::preset("vulkan1.1")
                    .ok_or_else(|| "no preset vulkan1.1".to_owned())
                    .map(|target| {
                        LowerOptions::new(target)
                            .with_subgroup_size(Some(size))
                            .with_float_partition(FloatPartition::Spec)
                            .with_partition_form(*form)
                    });
                match opts.and_then(|o| super::lower_checked_opts(&native, o)) {
                    Ok(w) => variants.push((label.as_str(), Some(w))),
                    Err(e) => {
                        failures.push(format!("{} {label}: {e}", b.name));
                        variants.push((label.as_str(), None));
                    }
                }
            }
        }
        // The emulated sizes come last: their outputs are checked against the simulator, not
        // against the others (they run the program of a smaller subgroup).
        let emulated_from = variants.len();
        for &en in &emulation.sizes {
            match super::bench_emulated::emulate(&native, emulation.preset, en) {
                Ok(w) => variants.push(("emulated", Some(w))),
                Err(e) => {
                    failures.push(format!("{} emulated at {en}: {e}", b.name));
                    variants.push(("emulated", None));
                }
            }
        }
        let opts = PipelineOptions {
            buffers: 1,
            spec_constants: vec![(0, size), (1, iters)],
            ..PipelineOptions::default()
        };
        let input = input((groups * size) as usize);
        // Build every variant's pipeline and keep its output of one dispatch.
        let mut pipes = Vec::new();
        let mut outputs: Vec<Option<Vec<u32>>> = Vec::new();
        for (label, words) in &variants {
            let made = words.as_ref().map(|w| {
                runner.pipeline(w, &opts).and_then(|p| {
                    let mut once = vec![input.clone()];
                    runner.run(&p, &mut once, [groups, 1, 1], Duration::from_secs(60))?;
                    Ok((p, once.remove(0)))
                })
            });
            match made {
                Some(Ok((p, out))) => {
                    pipes.push(Some(p));
                    outputs.push(Some(out));
                }
                Some(Err(e)) => {
                    failures.push(format!("{} {label}: {e}", b.name));
                    pipes.push(None);
                    outputs.push(None);
                }
                None => {
                    pipes.push(None);
                    outputs.push(None);
                }
            }
        }
        // Round robin over the loop-only baseline and the variants, so a change of the GPU's
        // clocks during a row hits them alike (measured here: clocks moved times up to 5x between
        // rows of one run); the median of all samples of each.
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); pipes.len() + 1];
        for _round in 0..ROUNDS {
            for (k, p) in std::iter::once(base_pipe.as_ref())
                .chain(pipes.iter().map(Option::as_ref))
                .enumerate()
            {
                let Some(p) = p else { continue };
                let mut bufs = vec![input.clone()];
                match runner.time(p, &mut bufs, [groups, 1, 1], reps, Duration::from_secs(120)) {
                    Ok(t) => samples[k].extend(t.iter().map(|t| t / f64::from(iters))),
                    Err(e) => failures.push(format!("{} timing: {e}", b.name)),
                }
            }
        }
        let med = |v: &Vec<f64>| (!v.is_empty()).then(|| median(v.clone()));
        let base = med(&samples[0]);
        let results: Vec<(Option<f64>, Option<Vec<u32>>)> = (0..pipes.len())
            .map(|k| (med(&samples[k + 1]), outputs[k].take()))
            .collect();
        let sub = |t: Option<f64>| t.map(|t| t - base.unwrap_or(0.0));
        let fmt = |t: Option<f64>| t.map_or("n/a".to_owned(), |t| format!("{t:.2}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if a > 0.0 && b > 0.0 => format!("{:.2}x", b / a),
            _ => "n/a".to_owned(),
        };
        // Every variant's output against the others (native's where the driver has the op).
        let outs: Vec<&Vec<u32>> = results[..emulated_from]
            .iter()
            .filter_map(|r| r.1.as_ref())
            .filter(|o| !o.is_empty())
            .collect();
        let equal = if outs.len() < 2 {
            "n/a".to_owned()
        } else if b.float {
            "float (not compared)".to_owned()
        } else if outs.iter().all(|o| *o == outs[0]) {
            "yes".to_owned()
        } else {
            failures.push(format!("{}: native and lowered outputs differ", b.name));
            "NO".to_owned()
        };
        let no_arith = match (b.class, results.get(3)) {
            ("partition", Some(r)) => {
                format!("{} ({})", fmt(r.0), ratio(sub(results[0].0), sub(r.0)))
            }
            _ => "-".to_owned(),
        };
        if b.class == "partition" && !forms.is_empty() {
            let cells: Vec<String> = results[4..emulated_from]
                .iter()
                .map(|r| ratio(sub(results[0].0), sub(r.0)))
                .collect();
            let _ = writeln!(forms_table, "| {} | {} |", b.name, cells.join(" | "));
        }
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {no_arith} | {equal} |",
            b.name,
            b.class,
            fmt(base),
            fmt(results[0].0),
            fmt(results[1].0),
            ratio(results[0].0, results[1].0),
            ratio(sub(results[0].0), sub(results[1].0)),
            fmt(results[2].0),
            ratio(results[0].0, results[2].0),
            ratio(sub(results[0].0), sub(results[2].0)),
        );
        let measured: Vec<super::bench_emulated::Measured> = variants[emulated_from..]
            .iter()
            .zip(&results[emulated_from..])
            .zip(&emulation.sizes)
            .map(|(((_, words), r), &en)| super::bench_emulated::Measured {
                time: r.0,
                check: match words {
                    Some(w) => super::bench_emulated::check(runner, w, &native, en, b.float),
                    None => super::bench_emulated::Check::NotChecked("not emulated".into()),
                },
            })
            .collect();
        failures.extend(emulation.row((b.name, b.class), base, results[0].0, &measured));
    }
    if !forms.is_empty() {
        table.push_str(&forms_table);
    }
    table.push_str(&emulation.render());
    if std::env::var("SPV_BENCH_NO_WORKLOADS").is_err() {
        workloads(runner, &mut table, &mut failures);
    }
    println!("{table}");
    println!("{}", emulation.summary());
    for f in &failures {
        println!("BENCH FAIL {f}");
    }
    if let Ok(dir) = std::env::var("SPV_CONFORMANCE_OUT") {
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(
            format!("{dir}/bench.md"),
            format!(
                "{table}\n{}\n{}\n",
                emulation.summary(),
                failures.join("\n")
            ),
        );
    }
}

/// Keys of the workloads (a power of two: the scatter wraps its index with `N - 1`).
const WORK_N: u32 = 1 << 24;

/// One-pass radix-sort multisplit over `WORK_N` keys, 8-bit digit: partition by digit, per-subset
/// count and rank (partitioned add and exclusive add of 1), the subset's leader reserves room in
/// the digit's bucket (a global atomic), scatter. The index wraps so that repeated dispatches
/// (the timing) stay in bounds; the first dispatch writes every key to its bucket.
const MULTISPLIT: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_NV_shader_subgroup_partitioned : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MASK = 0u;
layout(std430, binding = 0) readonly buffer Keys { uint keys[]; };
layout(std430, binding = 1) buffer Offsets { uint offsets[256]; };
layout(std430, binding = 2) buffer Sorted { uint sorted[]; };
void main() {
    uint key = keys[gl_GlobalInvocationID.x];
    uint d = key & 255u;
    uvec4 b = subgroupPartitionNV(d);
    uint count = subgroupPartitionedAddNV(1u, b);
    uint rank = subgroupPartitionedExclusiveAddNV(1u, b);
    uint leader = subgroupBallotFindLSB(b);
    uint base = 0u;
    if (gl_SubgroupInvocationID == leader) {
        base = atomicAdd(offsets[d], count);
    }
    base = subgroupShuffle(base, leader);
    sorted[(base + rank) & MASK] = key;
}
"#;

/// Segmented (partitioned) inclusive scan over `WORK_N` values: the segment key of each value is
/// one of 16 (the top bits of a random word), the scan runs over the lanes with the same key.
const SEGMENTED_SCAN: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_NV_shader_subgroup_partitioned : require
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint MASK = 0u;
layout(std430, binding = 0) readonly buffer Keys { uint keys[]; };
layout(std430, binding = 1) buffer Values { uint values[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    uvec4 b = subgroupPartitionNV(keys[g] >> 28);
    values[g] = subgroupPartitionedInclusiveAddNV(values[g], b);
}
"#;

/// The two workloads natively and lowered (size unknown and known), in keys per second: the
/// median of `ROUNDS` round-robin rounds of 3 dispatches each. Outputs compared: the bucket
/// counters and each bucket's keys (sorted on the host: their order in a bucket depends on the
/// atomics) for the multisplit, every value for the scan.
fn workloads(runner: &Runner, table: &mut String, failures: &mut Vec<String>) {
    let size = runner.info().subgroup_size;
    let local = 256u32.max(size);
    let n = WORK_N as usize;
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let keys: Vec<u32> = (0..n)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 32) as u32
        })
        .collect();
    let mut hist = [0u32; 256];
    for k in &keys {
        hist[(k & 255) as usize] += 1;
    }
    let mut offsets = vec![0u32; 256];
    let mut acc = 0;
    for d in 0..256 {
        offsets[d] = acc;
        acc += hist[d];
    }
    let values: Vec<u32> = (0..WORK_N)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 8)
        .collect();
    let _ = writeln!(
        table,
        "\nWorkloads over {n} keys ({local} invocations per workgroup, {} workgroups), median of {ROUNDS} rounds x 3 dispatches: time per dispatch in microseconds and keys per second\n\n\
         | workload | native | lowered (size unknown) | ratio | lowered (size known) | ratio | native keys/s | lowered keys/s (size unknown) | outputs equal |\n\
         |---|---|---|---|---|---|---|---|---|",
        WORK_N / local
    );
    for (name, src, buffers) in [
        ("radix multisplit, 8-bit digit", MULTISPLIT, 3usize),
        ("segmented inclusive scan, 16 keys", SEGMENTED_SCAN, 2),
    ] {
        let native = match super::compile(src, "vulkan1.1") {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{name}: compile: {e}"));
                continue;
            }
        };
        let mut variants = vec![("native", Some(native.clone()))];
        for (label, sz) in [("lowered", None), ("lowered-32", Some(size))] {
            match super::lower_checked_sized(&native, "vulkan1.1", FloatPartition::Spec, sz) {
                Ok(w) => variants.push((label, Some(w))),
                Err(e) => {
                    failures.push(format!("{name} {label}: {e}"));
                    variants.push((label, None));
                }
            }
        }
        let opts = PipelineOptions {
            buffers: buffers as u32,
            spec_constants: vec![(0, local), (1, WORK_N - 1)],
            ..PipelineOptions::default()
        };
        let inputs = || -> Vec<Vec<u32>> {
            if buffers == 3 {
                vec![keys.clone(), offsets.clone(), vec![0xdead_beef; n]]
            } else {
                vec![keys.clone(), values.clone()]
            }
        };
        let mut pipes = Vec::new();
        let mut outputs = Vec::new();
        for (label, words) in &variants {
            let made = words.as_ref().map(|w| {
                runner.pipeline(w, &opts).and_then(|p| {
                    let mut once = inputs();
                    runner.run(
                        &p,
                        &mut once,
                        [WORK_N / local, 1, 1],
                        Duration::from_secs(60),
                    )?;
                    Ok((p, once))
                })
            });
            match made {
                Some(Ok((p, mut out))) => {
                    if buffers == 3 {
                        // Each bucket's keys in key order (the atomics order them at random).
                        for d in 0..256 {
                            let lo = offsets[d] as usize;
                            out[2][lo..lo + hist[d] as usize].sort_unstable();
                        }
                    }
                    pipes.push(Some(p));
                    outputs.push(Some(out));
                }
                Some(Err(e)) => {
                    failures.push(format!("{name} {label}: {e}"));
                    pipes.push(None);
                    outputs.push(None);
                }
                None => {
                    pipes.push(None);
                    outputs.push(None);
                }
            }
        }
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); pipes.len()];
        for _round in 0..ROUNDS {
            for (k, p) in pipes.iter().enumerate() {
                let Some(p) = p else { continue };
                let mut bufs = inputs();
                match runner.time(
                    p,
                    &mut bufs,
                    [WORK_N / local, 1, 1],
                    3,
                    Duration::from_secs(60),
                ) {
                    Ok(t) => samples[k].extend(t.iter().map(|t| t / 1000.0)),
                    Err(e) => failures.push(format!("{name} timing: {e}")),
                }
            }
        }
        let med: Vec<Option<f64>> = samples
            .iter()
            .map(|v| (!v.is_empty()).then(|| median(v.clone())))
            .collect();
        let fmt = |t: Option<f64>| t.map_or("n/a".to_owned(), |t| format!("{t:.1}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:.2}x", b / a),
            _ => "n/a".to_owned(),
        };
        let rate = |t: Option<f64>| {
            t.map_or("n/a".to_owned(), |t| {
                format!("{:.2e}", f64::from(WORK_N) / (t * 1e-6))
            })
        };
        let equal = match (&outputs[0], &outputs[1], &outputs[2]) {
            (Some(a), Some(l), Some(c)) => {
                if a == l && a == c {
                    "yes".to_owned()
                } else {
                    failures.push(format!("{name}: native and lowered outputs differ"));
                    "NO".to_owned()
                }
            }
            _ => "n/a".to_owned(),
        };
        let _ = writeln!(
            table,
            "| {name} | {} | {} | {} | {} | {} | {} | {} | {equal} |",
            fmt(med[0]),
            fmt(med[1]),
            ratio(med[0], med[1]),
            fmt(med[2]),
            ratio(med[0], med[2]),
            rate(med[0]),
            rate(med[1]),
        );
    }
}
