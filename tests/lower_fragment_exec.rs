//! Runs lowered fragment shaders on a real driver (lavapipe at subgroup sizes 4 and 8) and
//! checks every pixel against a host model, and the KHR votes also against the native module.
//!
//! The shaders are in `tests/fragment_exec/`, compiled at test time: `fullscreen.vert` draws one
//! triangle covering the viewport from `gl_VertexIndex`; `votes.frag` has the KHR votes and
//! `partitioned.frag` the partition op and partitioned reduce/inclusive/exclusive scans of uint,
//! int and float, each at the top of the shader and behind a branch on the pixel.
//! Every pixel writes a record into one storage buffer at `(y * WIDTH + x) * STRIDE`
//! (`WIDTH` is specialization constant 0): a marker, `gl_SubgroupInvocationID`,
//! `subgroupBallot(true).x`, the first active lane's coordinates (`subgroupBroadcastFirst`, an id
//! of the subgroup), then the results. Keys and values are functions of the coordinates, which
//! the model repeats. Draws are 32 x 32 and 37 x 23 (partial quads and subgroups at the
//! right and bottom edges), through `spv_subgroup_vk`'s graphics path.
//!
//! The model groups the pixels by subgroup id, orders each group by lane, and computes every
//! result from the group's members that the recorded ballots say were active at the op.
//! Helper invocations take part in subgroup ops but cannot store, so they leave no record: a
//! group whose ballot holds a lane no pixel recorded (a helper, or an invocation outside the
//! image) cannot be modelled and is skipped, and counted; the harness requires that at least 3/4
//! of the pixels are checked, and on lavapipe that no group is skipped.
//! Measured on lavapipe 22.3: the triangle is clipped into two along the image's diagonal, so the
//! subgroups there are partial inside the image too (at 8 lanes, 32 x 32 has 8 subgroups each of
//! 1, 3, 5 and 7 active lanes beside 112 full ones; 37 x 23 adds partial ones at the edges), and
//! lanes of uncovered pixels never appear in `subgroupBallot(true)` (no group is ever skipped):
//! lavapipe runs no helper lane as an active one in subgroup ops.
//!
//! What runs:
//! - `votes.frag` natively (lavapipe has `VK_EXT_shader_subgroup_vote`) and lowered for
//!   `vulkan1.1` (the KHR votes become core `OpGroupNonUniformAll`/`Any`/`AllEqual`),
//!   `lavapipe` and `naga`: each lowered output equals the native one word for word, and every
//!   output also matches the model;
//! - `partitioned.frag` lowered for `vulkan1.1`, `lavapipe` and `naga` against the model (and
//!   natively where the device has `partitioned_nv`, e.g. the GPU machine);
//! - every lowered module passes `spirv-val` for its target's environment and our validator
//!   (`lower_and_verify`).
//!
//! lavapipe's fragment subgroups follow `LP_NATIVE_VECTOR_WIDTH` as its compute ones do (the
//! fragment shader runs one SIMD vector of pixels, whole quads): 128 bits give 4 lanes (one quad),
//! 256 give 8 (two quads); each child prints the active lanes per subgroup it saw.
//! At 512 bits (16 lanes) lavapipe 22.3 with LLVM 15 crashes (SIGSEGV inside LLVM, from
//! `LLVMBuildBitCast`) while compiling any graphics pipeline, even a fragment shader that only
//! stores one word, so there is no size-16 child here (the compute harnesses run 16).
//! `lavapipe_subgroup_size_{4,8}` each run `child_suite` in a child with that width
//! (`spv_subgroup_tests::lavapipe`); on the GPU machine `cargo xtask gpu` runs `child_suite` with
//! `SPV_SUBGROUP_VK_DEVICE` naming the device.

#![allow(clippy::print_stdout, reason = "a test harness")]

use std::collections::BTreeMap;
use std::time::Duration;

use spv_subgroup_lower::{lower_and_verify, LowerOptions, Target};
use spv_subgroup_tests::{lavapipe, tools};
use spv_subgroup_vk::{Draw, GraphicsOptions, Runner};

/// The presets whose outputs run.
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];
/// Draw sizes: an even one and an odd one.
const SIZES: [(u32, u32); 2] = [(32, 32), (37, 23)];
/// What the storage buffer holds before the draw (words a pixel does not write keep it).
const FILL: u32 = 0xaaaa_aaaa;

/// Record words every shader writes first.
const MARK: usize = 0;
const LANE: usize = 1;
const ACT: usize = 2;
const LEADER: usize = 3;

/// One pixel's record, as the host model sees it.
#[derive(Clone, Copy, Debug)]
struct Px {
    x: u32,
    y: u32,
    lane: u32,
}

impl Px {
    fn bit(&self) -> u32 {
        1 << self.lane
    }
}

/// The lanes of `members` as a ballot word.
fn bits<'a>(members: impl IntoIterator<Item = &'a Px>) -> u32 {
    members.into_iter().fold(0, |a, m| a | m.bit())
}

/// A shader of `tests/fragment_exec/` and its model: the whole record of pixel `me`, given the
/// members of its subgroup (every pixel the ballot holds, in lane order) and whether float
/// partition keys compare by bits (NVIDIA's native partition op, see DESIGN.md) or as floats.
struct Shader {
    file: &'static str,
    stride: usize,
    model: fn(&[Px], &Px, bool) -> Vec<u32>,
}

const SHADERS: [Shader; 2] = [
    Shader {
        file: "votes.frag",
        stride: 13,
        model: votes_model,
    },
    Shader {
        file: "partitioned.frag",
        stride: 24,
        model: partitioned_model,
    },
];

/// The header every record starts with: marker, lane, ballot(true), subgroup id.
fn header(group: &[Px], me: &Px, stride: usize) -> Vec<u32> {
    let mut r = vec![FILL; stride];
    let first = group.first().unwrap_or(me);
    r[MARK] = 1;
    r[LANE] = me.lane;
    r[ACT] = bits(group);
    r[LEADER] = first.x | (first.y << 16);
    r
}

/// The branch both shaders take: it splits every quad.
fn branch(p: &Px) -> bool {
    !(p.x + 2 * p.y).is_multiple_of(3)
}

fn votes_model(group: &[Px], me: &Px, _float_bits: bool) -> Vec<u32> {
    let mut r = header(group, me, 13);
    let any = |s: &[Px], f: &dyn Fn(&Px) -> bool| u32::from(s.iter().any(f));
    let all = |s: &[Px], f: &dyn Fn(&Px) -> bool| u32::from(s.iter().all(f));
    let equal = |s: &[Px], f: &dyn Fn(&Px) -> bool| u32::from(s.iter().all(f) || !s.iter().any(f));
    r[4] = any(group, &|p| p.x % 5 == 0);
    r[5] = all(group, &|p| p.y % 7 != 3);
    r[6] = equal(group, &|p| (p.x >> 1) & 1 == 0);
    r[7] = equal(group, &|p| (p.x + p.y) % 4 == 0);
    if branch(me) {
        let inner: Vec<Px> = group.iter().copied().filter(branch).collect();
        r[8] = 1;
        r[9] = bits(&inner);
        r[10] = any(&inner, &|p| p.y & 1 == 1);
        r[11] = all(&inner, &|p| p.x % 3 != 0);
        r[12] = equal(&inner, &|p| p.x & 2 == 0);
    }
    r
}

fn partitioned_model(group: &[Px], me: &Px, float_bits: bool) -> Vec<u32> {
    let mut r = header(group, me, 24);
    let key = |p: &Px| ((p.x * 7 + p.y * 13) >> 1) % 3;
    let u = |p: &Px| p.x * 31 + p.y * 17 + 1;
    let i = |p: &Px| p.x as i32 - 2 * p.y as i32;
    let f = |p: &Px| p.x as f32 * 0.5 - p.y as f32;
    let fkey = |p: &Px| match p.x % 3 {
        0 => 0.0f32,
        1 => -0.0,
        _ => 1.5,
    };
    // The members of `set` before me, and up to me, in lane order.
    let before =
        |set: &[Px]| -> Vec<Px> { set.iter().copied().filter(|p| p.lane < me.lane).collect() };
    let upto =
        |set: &[Px]| -> Vec<Px> { set.iter().copied().filter(|p| p.lane <= me.lane).collect() };
    let usum = |s: &[Px]| s.iter().fold(0u32, |a, p| a.wrapping_add(u(p)));
    let isum = |s: &[Px]| s.iter().fold(0i32, |a, p| a.wrapping_add(i(p))) as u32;
    let fsum = |s: &[Px]| s.iter().fold(0.0f32, |a, p| a + f(p)).to_bits();
    let part: Vec<Px> = group
        .iter()
        .copied()
        .filter(|p| key(p) == key(me))
        .collect();
    r[4] = bits(&part);
    r[5] = usum(&part);
    r[6] = usum(&upto(&part));
    r[7] = usum(&before(&part));
    r[8] = upto(&part).iter().fold(0, |a, p| a ^ u(p));
    r[9] = part.iter().map(i).min().unwrap_or(i32::MAX) as u32;
    r[10] = upto(&part).iter().map(i).max().unwrap_or(i32::MIN) as u32;
    r[11] = isum(&before(&part));
    r[12] = fsum(&part);
    r[13] = fsum(&upto(&part));
    r[14] = fsum(&before(&part));
    r[15] = before(&part)
        .iter()
        .map(f)
        .fold(f32::NEG_INFINITY, f32::max)
        .to_bits();
    // Float keys compare as floats (+0.0 and -0.0 share a subset), unless `float_bits`.
    let same = |a: f32, b: f32| {
        if float_bits {
            a.to_bits() == b.to_bits()
        } else {
            a == b
        }
    };
    let fpart: Vec<Px> = group
        .iter()
        .copied()
        .filter(|p| same(fkey(p), fkey(me)))
        .collect();
    r[16] = bits(&fpart);
    r[17] = fsum(&upto(&fpart));
    if branch(me) {
        let inner: Vec<Px> = group.iter().copied().filter(branch).collect();
        r[18] = 1;
        r[19] = bits(&inner);
        let pb: Vec<Px> = inner
            .iter()
            .copied()
            .filter(|p| (p.x >> 1) & 1 == (me.x >> 1) & 1)
            .collect();
        r[20] = bits(&pb);
        r[21] = usum(&upto(&pb));
        // The ballot made before the branch, used inside it: only its active members count.
        let part_in: Vec<Px> = part.iter().copied().filter(branch).collect();
        r[22] = isum(&part_in);
        r[23] = before(&part_in)
            .iter()
            .map(f)
            .fold(f32::INFINITY, f32::min)
            .to_bits();
    }
    r
}

/// What one check saw.
#[derive(Default)]
struct Seen {
    pixels: usize,
    groups: usize,
    skipped_groups: usize,
    /// Group sizes (active lanes at the top of the shader) and how often each occurred.
    sizes: BTreeMap<u32, usize>,
}

/// Checks the records of one draw of `shader` at `w` x `h` against the model; `Err` names the
/// first differences.
fn check_records(
    words: &[u32],
    shader: &Shader,
    (w, h): (u32, u32),
    float_bits: bool,
) -> Result<Seen, String> {
    let stride = shader.stride;
    let mut groups: BTreeMap<u32, Vec<(Px, &[u32])>> = BTreeMap::new();
    for y in 0..h {
        for x in 0..w {
            let at = (y * w + x) as usize * stride;
            let rec = &words[at..at + stride];
            if rec[MARK] != 1 {
                return Err(format!(
                    "pixel ({x}, {y}) wrote no record: the draw covers every pixel"
                ));
            }
            if rec[LANE] >= 32 {
                return Err(format!(
                    "pixel ({x}, {y}): lane {} (this harness records one ballot word)",
                    rec[LANE]
                ));
            }
            let px = Px {
                x,
                y,
                lane: rec[LANE],
            };
            groups.entry(rec[LEADER]).or_default().push((px, rec));
        }
    }
    let mut seen = Seen::default();
    let mut errors = Vec::new();
    for (leader, mut members) in groups {
        members.sort_by_key(|(p, _)| p.lane);
        let lanes: Vec<Px> = members.iter().map(|(p, _)| *p).collect();
        let act = members[0].1[ACT];
        *seen.sizes.entry(act.count_ones()).or_default() += 1;
        if lanes.windows(2).any(|p| p[0].lane == p[1].lane) {
            return Err(format!(
                "subgroup {leader:#x}: two pixels on one lane: {lanes:?}"
            ));
        }
        if members.iter().any(|(_, r)| r[ACT] != act) || bits(&lanes) & !act != 0 {
            return Err(format!(
                "subgroup {leader:#x}: its pixels disagree on ballot(true) or lie outside it: {:?}",
                members.iter().map(|(p, r)| (p, r[ACT])).collect::<Vec<_>>()
            ));
        }
        if bits(&lanes) != act {
            // A lane that left no record: a helper invocation (or one outside the image).
            seen.skipped_groups += 1;
            continue;
        }
        seen.groups += 1;
        for (me, rec) in &members {
            seen.pixels += 1;
            let want = (shader.model)(&lanes, me, float_bits);
            for (k, (&g, &e)) in rec.iter().zip(&want).enumerate() {
                if g != e && errors.len() < 8 {
                    errors.push(format!(
                        "pixel ({}, {}) lane {} word {k}: {g:#x}, model {e:#x} (subgroup lanes {:#x})",
                        me.x, me.y, me.lane, act
                    ));
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(seen)
    } else {
        Err(errors.join("\n"))
    }
}

/// Draws `fragment` once at `w` x `h`; returns the storage buffer.
fn draw(
    runner: &Runner,
    vertex: &[u32],
    fragment: &[u32],
    stride: usize,
    (w, h): (u32, u32),
) -> Result<Vec<u32>, String> {
    let opts = GraphicsOptions {
        spec_constants: vec![(0, w)],
        ..Default::default()
    };
    let pipeline = runner
        .graphics_pipeline(vertex, fragment, &opts)
        .map_err(|e| e.to_string())?;
    let mut bufs = vec![vec![FILL; (w * h) as usize * stride]];
    let one = Draw {
        width: w,
        height: h,
        vertices: 3,
    };
    runner
        .draw(&pipeline, &mut bufs, one, Duration::from_secs(120))
        .map_err(|e| e.to_string())?;
    Ok(bufs.swap_remove(0))
}

/// Whether the device runs `shader` natively.
fn runs_natively(runner: &Runner, shader: &Shader) -> bool {
    let info = runner.info();
    if shader.file == "partitioned.frag" {
        info.has_subgroup_op("partitioned_nv")
    } else {
        info.has_extension("VK_EXT_shader_subgroup_vote")
    }
}

/// Runs and checks one shader at every size; pushes a line per failure.
fn check_shader(runner: &Runner, vertex: &[u32], shader: &Shader, failures: &mut Vec<String>) {
    let path = tools::workspace_root()
        .join("tests/fragment_exec")
        .join(shader.file);
    let native = tools::compile_glsl(&path, "vulkan1.1")
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut variants = Vec::new();
    if runs_natively(runner, shader) {
        variants.push(("native".to_owned(), native.clone()));
    }
    for preset in PRESETS {
        let target = Target::preset(preset).expect("preset");
        let env = target.target_env.clone();
        let opts = LowerOptions {
            target,
            ..Default::default()
        };
        match lower_and_verify(&native, &opts, None) {
            Ok((words, report)) => {
                if let Err(e) = tools::spirv_val(&words, &env) {
                    failures.push(format!(
                        "{} for {preset}: spirv-val --target-env {env}: {e}",
                        shader.file
                    ));
                    continue;
                }
                let what: Vec<String> = report
                    .rewrites
                    .iter()
                    .map(|(k, n)| format!("{n} {k}"))
                    .collect();
                if report.changed {
                    println!("{} for {preset}: lowered {}", shader.file, what.join(", "));
                } else {
                    println!("{} for {preset}: unchanged", shader.file);
                }
                variants.push((preset.to_owned(), words));
            }
            Err(e) => failures.push(format!("{} for {preset}: {e}", shader.file)),
        }
    }
    for size in SIZES {
        let mut reference: Option<Vec<u32>> = None;
        for (name, words) in &variants {
            let what = format!("{} {name} at {}x{}", shader.file, size.0, size.1);
            let out = match draw(runner, vertex, words, shader.stride, size) {
                Ok(o) => o,
                Err(e) => {
                    failures.push(format!("{what}: {e}"));
                    continue;
                }
            };
            // NVIDIA's native partition op compares float keys by bits (DESIGN.md, section 5).
            let float_bits = name == "native" && runner.info().vendor_id == 0x10de;
            match check_records(&out, shader, size, float_bits) {
                Ok(seen) => {
                    println!(
                        "{what}: {} pixels in {} subgroups match the model ({} skipped); active lanes per subgroup: {:?}",
                        seen.pixels, seen.groups, seen.skipped_groups, seen.sizes
                    );
                    let all = (size.0 * size.1) as usize;
                    if seen.pixels * 4 < all * 3 {
                        failures.push(format!(
                            "{what}: only {} of {all} pixels could be checked",
                            seen.pixels
                        ));
                    }
                    let widest = seen.sizes.keys().max().copied().unwrap_or(0);
                    let size_now = runner.info().subgroup_size;
                    if widest > size_now || (is_lavapipe(runner) && widest != size_now) {
                        failures.push(format!(
                            "{what}: subgroups of up to {widest} active lanes, the device reports {size_now}"
                        ));
                    }
                    if is_lavapipe(runner) && seen.skipped_groups > 0 {
                        failures.push(format!(
                            "{what}: {} subgroups with lanes that left no record on lavapipe",
                            seen.skipped_groups
                        ));
                    }
                }
                Err(e) => failures.push(format!("{what}: differs from the model:\n{e}")),
            }
            // The native votes are the reference of their lowered forms, word for word.
            if name == "native" {
                reference = Some(out);
            } else if let Some(want) = &reference {
                if let Some(i) = (0..out.len()).find(|&i| out[i] != want[i]) {
                    let n = (0..out.len()).filter(|&i| out[i] != want[i]).count();
                    failures.push(format!(
                        "{what}: {n} words differ from native; first {i}: {:#x} against {:#x}",
                        out[i], want[i]
                    ));
                }
            }
        }
    }
}

fn is_lavapipe(runner: &Runner) -> bool {
    runner.info().name.contains("llvmpipe")
}

/// The suite at one subgroup size: `lavapipe_subgroup_size_*` runs it in a child process.
#[test]
#[ignore = "the suite of a child process: lavapipe_subgroup_size_* run it at each size"]
fn child_suite() {
    lavapipe::assert_child();
    let runner = Runner::new()
        .unwrap_or_else(|e| panic!("{e} (lavapipe: apt-get install mesa-vulkan-drivers)"));
    let info = runner.info();
    println!("{}", info.summary());
    println!("subgroup size: {}", info.subgroup_size);
    assert!(
        info.subgroup_stages.contains(&"fragment"),
        "the device has no subgroup operations in fragment shaders"
    );
    let vertex = tools::compile_glsl(
        &tools::workspace_root().join("tests/fragment_exec/fullscreen.vert"),
        "vulkan1.1",
    )
    .expect("fullscreen.vert compiles");
    let mut failures = Vec::new();
    for shader in &SHADERS {
        check_shader(&runner, &vertex, shader, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "subgroup size {}: {} failures:\n{}",
        info.subgroup_size,
        failures.len(),
        failures.join("\n")
    );
}

/// One child at lavapipe subgroup `size` (see the module doc for why not 16).
fn lavapipe_size(size: u32) {
    let text = lavapipe::run_suite(size, &[], Duration::from_secs(300));
    println!("{text}");
    assert!(
        text.contains("match the model"),
        "the child checked nothing at size {size}:\n{text}"
    );
}

#[test]
fn lavapipe_subgroup_size_4() {
    lavapipe_size(4);
}

#[test]
fn lavapipe_subgroup_size_8() {
    lavapipe_size(8);
}
