//! Runs lowered fragment shaders on a real driver (lavapipe at subgroup sizes 4, 8 and 16) and
//! checks every pixel against a host model, and the KHR votes also against the native module.
//!
//! The shaders are in `tests/fragment_exec/`, compiled at test time: `fullscreen.vert` makes
//! its triangles from `gl_VertexIndex` (vertices 0 to 2 cover the viewport, 3 to 5 part of it
//! with a slanted edge across the image); `votes.frag` has the KHR votes and `partitioned.frag`
//! the partition op and partitioned reduce/inclusive/exclusive scans of uint, int and float, each
//! at the top of the shader and behind a branch on the pixel.
//! Every pixel writes a record into storage buffer 0 at `(y * 64 + x) * STRIDE`: a marker,
//! `gl_SubgroupInvocationID`, `subgroupBallot(true).x`, the first active lane's coordinates
//! (`subgroupBroadcastFirst`, an id of the subgroup), then the results; and into buffer 1, at
//! `(y * 64 + x) * 32`, the coordinates of every lane of its subgroup (`subgroupShuffle` of
//! `x | y << 16` from lanes 0 to 31), the lane map. Keys and values are functions of the
//! coordinates, which the model repeats. One pipeline per module draws three scenes through
//! `spv_subgroup_vk`'s graphics path: 32 x 32 and 37 x 23 covered whole (partial quads and
//! subgroups at the odd size's right and bottom edges), and 37 x 23 covered in part (partly
//! covered quads along the slanted edge, where a driver may run helper invocations).
//!
//! The model groups the pixels by subgroup id and computes every result from the lanes that the
//! recorded ballots say were active at the op, each lane's coordinates read from the lane map.
//! Helper invocations take part in subgroup ops but cannot store: they leave no record, but
//! they are in the ballots and the lane maps their quad neighbours wrote, so the model counts
//! their keys and values like any other lane's (and reports how many it met).
//! The harness checks that the members of a subgroup agree on the ballot and the map and that
//! each sits at its own coordinates; `helper_lanes_take_part_in_the_model` checks that a helper
//! lane changes the expected results.
//! Measured on lavapipe 22.3: it clips the full-screen triangle into two along the image's
//! diagonal, so subgroups there are partial inside the image too (at 8 lanes, 32 x 32 has 8
//! subgroups each of 1, 3, 5 and 7 active lanes beside 112 full ones), and no lane of an
//! uncovered pixel ever appears in `subgroupBallot(true)`: lavapipe runs no helper lane as an
//! active one in subgroup ops (0 helper lanes in every scene at 4 and 8).
//!
//! What runs:
//! - `votes.frag` natively (lavapipe has `VK_EXT_shader_subgroup_vote`) and lowered for
//!   `vulkan1.1` (the KHR votes become core `OpGroupNonUniformAll`/`Any`/`AllEqual`),
//!   `lavapipe` and `naga`: each lowered output equals the native one word for word, and every
//!   output also matches the model;
//! - `partitioned.frag` lowered for `vulkan1.1`, `lavapipe` and `naga` against the model (and
//!   natively where the device has `partitioned_nv`, e.g. the GPU machine, against the model
//!   with NVIDIA's rule for float keys: it compares their bits, so +0.0 and -0.0 fall in
//!   different subsets; the native output is then no word-for-word reference for the lowered
//!   ones, each side matching its own model, as in the conformance suite);
//! - both shaders emulated at a quarter and a half of the device's subgroup size, at least 4
//!   (`--emulate-subgroup-size`, issue 26; lavapipe: 4 at 8 lanes, 4 and 8 at 16; the GPU
//!   machine: 8 and 16 at 32), lowered for `vulkan1.1`, against the same model (which the virtual
//!   subgroups' own records drive), and each ballot within the N lanes, the widest subgroup N
//!   lanes wide, the quads laid out as Vulkan says;
//! - a preset whose subgroup sizes exclude the device's is not run there (`lavapipe`'s 4 to 16
//!   on a 32-lane GPU: its lowering may assume 16 lanes at most), and says so;
//! - every lowered module passes `spirv-val` for its target's environment and our validator
//!   (`lower_and_verify`).
//!
//! lavapipe's fragment subgroups follow `LP_NATIVE_VECTOR_WIDTH` as its compute ones do (the
//! fragment shader runs one SIMD vector of pixels, whole quads): 128 bits give 4 lanes (one quad),
//! 256 give 8 (two quads), 512 give 16 (four quads); each child checks that its widest subgroup
//! has the reported size and that the active lanes of every subgroup are laid out in quads as
//! Vulkan specifies for fragment shaders (lanes `4n` to `4n + 3` one 2 x 2 quad: top left, top
//! right, bottom left, bottom right), and prints the active lanes per subgroup it saw.
//! At 512 bits lavapipe 22.3 with LLVM 15 crashes (SIGSEGV inside LLVM, from
//! `LLVMBuildBitCast`) compiling any graphics pipeline with a color attachment, even one whose
//! fragment shader only stores one word; without the attachment it runs, so the size-16 child
//! draws without one (the shaders' color output is then dropped) and the others with one.
//! `lavapipe_subgroup_size_{4,8,16}` each run `child_suite` in a child with that width
//! (`spv_subgroup_tests::lavapipe`); on the GPU machine `cargo xtask gpu` runs `child_suite` with
//! `SPV_SUBGROUP_VK_DEVICE` naming the device.
//! `graphics_errors_are_typed` checks, on the default device, that the graphics path's failures
//! are `VkError`s (the un-lowered `partitioned.frag` is refused by a driver without the ops).

#![allow(clippy::print_stdout, reason = "a test harness")]

use std::collections::BTreeMap;
use std::time::Duration;

use spv_subgroup_lower::{lower_and_verify, LowerOptions, Target};
use spv_subgroup_tests::{lavapipe, tools};
use spv_subgroup_vk::{Draw, GraphicsOptions, Runner};

/// The presets whose outputs run.
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];
/// What the storage buffers hold before the draw (words a pixel does not write keep it).
const FILL: u32 = 0xaaaa_aaaa;
/// The row pitch of the records and lane maps, in pixels (`ROW` in the shaders).
const ROW: u32 = 64;
/// Words per pixel of the lane map: the lanes a ballot word holds.
const MAP: usize = 32;

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
    /// Lanes active in a subgroup op that left no record (helper invocations).
    helpers: usize,
    /// Subgroups whose active lanes are not laid out in quads (see [`in_quads`]).
    not_quads: usize,
    /// Group sizes (active lanes at the top of the shader) and how often each occurred.
    sizes: BTreeMap<u32, usize>,
    /// The highest lane any `subgroupBallot(true)` held.
    highest_lane: u32,
}

/// Whether active `lanes` are laid out as Vulkan lays out quads in fragment shaders: lanes
/// `4n` to `4n + 3` are one 2 x 2 quad, in the order top left, top right, bottom left, bottom right.
fn in_quads(lanes: &[Px]) -> bool {
    let quad = |p: &Px| (p.lane >> 2, p.x >> 1, p.y >> 1);
    lanes.iter().all(|p| {
        p.x & 1 == p.lane & 1
            && p.y & 1 == (p.lane >> 1) & 1
            && lanes
                .iter()
                .filter(|q| q.lane >> 2 == p.lane >> 2)
                .all(|q| quad(q) == quad(p))
    })
}

/// What one draw wrote: the records (buffer 0) and the lane maps (buffer 1).
struct Output {
    records: Vec<u32>,
    map: Vec<u32>,
}

/// A pixel that wrote, with its record and lane map.
struct Written<'a> {
    px: Px,
    rec: &'a [u32],
    map: &'a [u32],
}

/// The coordinates packed as the shaders pack them (`x | y << 16`).
fn coords(p: &Px) -> u32 {
    p.x | (p.y << 16)
}

/// Checks the records (`words`) and lane maps (`map`) of one draw of `shader` in `scene`
/// against the model; `Err` names the first differences.
fn check_records(
    words: &[u32],
    map: &[u32],
    shader: &Shader,
    scene: &Scene,
    float_bits: bool,
) -> Result<Seen, String> {
    let stride = shader.stride;
    let mut groups: BTreeMap<u32, Vec<Written<'_>>> = BTreeMap::new();
    for y in 0..scene.height {
        for x in 0..scene.width {
            let at = (y * ROW + x) as usize;
            let rec = &words[at * stride..(at + 1) * stride];
            let lanes = &map[at * MAP..(at + 1) * MAP];
            if rec[MARK] != 1 {
                if scene.full {
                    return Err(format!(
                        "pixel ({x}, {y}) wrote no record: the draw covers every pixel"
                    ));
                }
                continue;
            }
            if rec[LANE] as usize >= MAP {
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
            groups.entry(rec[LEADER]).or_default().push(Written {
                px,
                rec,
                map: lanes,
            });
        }
    }
    let mut seen = Seen::default();
    let mut errors = Vec::new();
    for (leader, members) in groups {
        let (act, first_map) = (members[0].rec[ACT], members[0].map);
        *seen.sizes.entry(act.count_ones()).or_default() += 1;
        seen.highest_lane = seen.highest_lane.max(31 - act.leading_zeros().min(31));
        // Every member agrees on the ballot and on where each active lane is, and is itself
        // an active lane at its own coordinates (so no two members share a lane).
        for Written {
            px: p,
            rec,
            map: lanes,
        } in &members
        {
            let same_map = (0..MAP).all(|j| act & (1 << j) == 0 || lanes[j] == first_map[j]);
            if rec[ACT] != act
                || act & p.bit() == 0
                || !same_map
                || lanes[p.lane as usize] != coords(p)
            {
                return Err(format!(
                    "subgroup {leader:#x}: pixel ({}, {}) lane {} disagrees with the others on ballot(true) {:#x} or the lane map",
                    p.x, p.y, p.lane, rec[ACT]
                ));
            }
        }
        // Every active lane, those that left no record (helpers) included, from the map.
        let lanes: Vec<Px> = (0..MAP as u32)
            .filter(|j| act & (1 << j) != 0)
            .map(|j| {
                let c = first_map[j as usize];
                Px {
                    x: c & 0xffff,
                    y: c >> 16,
                    lane: j,
                }
            })
            .collect();
        seen.helpers += lanes.len() - members.len();
        seen.not_quads += usize::from(!in_quads(&lanes));
        seen.groups += 1;
        for Written { px: me, rec, .. } in &members {
            seen.pixels += 1;
            let want = (shader.model)(&lanes, me, float_bits);
            for (k, (&g, &e)) in rec.iter().zip(&want).enumerate() {
                if g != e && errors.len() < 8 {
                    errors.push(format!(
                        "pixel ({}, {}) lane {} word {k}: {g:#x}, model {e:#x} (subgroup lanes {act:#x})",
                        me.x, me.y, me.lane
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

/// A draw: its size, which triangle of `fullscreen.vert`, and whether it covers every pixel.
struct Scene {
    width: u32,
    height: u32,
    first_vertex: u32,
    full: bool,
}

const SCENES: [Scene; 3] = [
    Scene {
        width: 32,
        height: 32,
        first_vertex: 0,
        full: true,
    },
    Scene {
        width: 37,
        height: 23,
        first_vertex: 0,
        full: true,
    },
    Scene {
        width: 37,
        height: 23,
        first_vertex: 3,
        full: false,
    },
];

impl Scene {
    fn name(&self) -> String {
        let what = if self.full { "full" } else { "partial" };
        format!("{}x{} {what}", self.width, self.height)
    }
}

/// Draws `fragment` in every scene; returns each scene's records and lane maps.
fn draw_scenes(
    runner: &Runner,
    vertex: &[u32],
    fragment: &[u32],
    stride: usize,
) -> Result<Vec<Output>, String> {
    let opts = GraphicsOptions {
        buffers: 2,
        color_attachment: color_attachment(runner),
        ..Default::default()
    };
    let pipeline = runner
        .graphics_pipeline(vertex, fragment, &opts)
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for scene in &SCENES {
        let pixels = (ROW * scene.height) as usize;
        let mut bufs = vec![vec![FILL; pixels * stride], vec![FILL; pixels * MAP]];
        let one = Draw {
            width: scene.width,
            height: scene.height,
            vertices: 3,
            first_vertex: scene.first_vertex,
        };
        runner
            .draw(&pipeline, &mut bufs, one, Duration::from_secs(120))
            .map_err(|e| e.to_string())?;
        let map = bufs.pop().unwrap_or_default();
        let records = bufs.pop().unwrap_or_default();
        out.push(Output { records, map });
    }
    Ok(out)
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

/// Runs and checks one shader in every scene; pushes a line per failure.
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
    let size_now = runner.info().subgroup_size;
    for preset in PRESETS {
        let target = Target::preset(preset).expect("preset");
        // A target's lowering may assume its subgroup sizes (`lavapipe`'s 4 to 16 gives one-word
        // masks): on a device outside them it is not that target's device.
        if !(target.min_subgroup_size..=target.max_subgroup_size).contains(&size_now) {
            println!(
                "{} for {preset}: not run, the target's subgroup sizes are {} to {}, the device's {size_now}",
                shader.file, target.min_subgroup_size, target.max_subgroup_size
            );
            continue;
        }
        let env = target.target_env.clone();
        let opts = LowerOptions::new(target);
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
    // The subgroup size each variant's shader sees: the device's, but for the emulated ones.
    let mut sizes: Vec<u32> = vec![size_now; variants.len()];
    // Emulation (issue 26) at a quarter and a half of the device's size, of at least 4 lanes
    // (a virtual subgroup of fewer would split the quads the harness checks): on lavapipe's 8
    // lanes at 4, on its 16 at 4 and 8, on the GPU machine's 32 at 8 and 16. The model is the
    // one every variant meets, computed from what the virtual subgroups record; on top, every
    // ballot must stay below N and the widest subgroup be N lanes.
    for n in [size_now / 4, size_now / 2] {
        if n < 4 {
            continue;
        }
        let target = Target::preset("vulkan1.1").expect("preset");
        let env = target.target_env.clone();
        let opts = LowerOptions::new(target).with_emulated_subgroup_size(Some(n));
        let name = format!("emulated:vulkan1.1@{n}");
        match lower_and_verify(&native, &opts, None) {
            Ok((words, report)) => {
                if let Err(e) = tools::spirv_val(&words, &env) {
                    failures.push(format!(
                        "{} {name}: spirv-val --target-env {env}: {e}",
                        shader.file
                    ));
                    continue;
                }
                let emulated = report.rewrites.iter().any(|(k, _)| k.contains("emulat"));
                println!(
                    "{} {name}: {}",
                    shader.file,
                    if emulated {
                        "emulated and lowered"
                    } else {
                        "NOT emulated"
                    }
                );
                if !emulated {
                    failures.push(format!(
                        "{} {name}: the report names no emulation: {:?}",
                        shader.file, report.rewrites
                    ));
                }
                variants.push((name, words));
                sizes.push(n);
            }
            Err(e) => failures.push(format!("{} {name}: {e}", shader.file)),
        }
    }
    let mut reference: Option<Vec<Output>> = None;
    for ((name, words), &size_seen) in variants.iter().zip(&sizes) {
        let outs = match draw_scenes(runner, vertex, words, shader.stride) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{} {name}: {e}", shader.file));
                continue;
            }
        };
        for (i, (scene, Output { records, map })) in SCENES.iter().zip(&outs).enumerate() {
            let what = format!("{} {name} at {}", shader.file, scene.name());
            // NVIDIA's native partition op compares float keys by bits (DESIGN.md, section 5).
            let float_bits = name == "native" && runner.info().vendor_id == 0x10de;
            match check_records(records, map, shader, scene, float_bits) {
                Ok(seen) => {
                    println!(
                        "{what}: {} pixels in {} subgroups match the model ({} helper lanes, {} subgroups not in quads); active lanes per subgroup: {:?}",
                        seen.pixels, seen.groups, seen.helpers, seen.not_quads, seen.sizes
                    );
                    if is_lavapipe(runner) && seen.not_quads > 0 {
                        failures.push(format!(
                            "{what}: {} subgroups whose lanes are not laid out in quads",
                            seen.not_quads
                        ));
                    }
                    let all = (scene.width * scene.height) as usize;
                    if seen.pixels * 3 < all || (!scene.full && seen.pixels == all) {
                        failures.push(format!(
                            "{what}: {} of {all} pixels drawn, not what the scene covers",
                            seen.pixels
                        ));
                    }
                    let widest = seen.sizes.keys().max().copied().unwrap_or(0);
                    let emulated = size_seen != size_now;
                    if widest > size_seen
                        || ((is_lavapipe(runner) || emulated) && widest != size_seen)
                    {
                        failures.push(format!(
                            "{what}: subgroups of up to {widest} active lanes, the shader's size is {size_seen}"
                        ));
                    }
                    if seen.highest_lane >= size_seen {
                        failures.push(format!(
                            "{what}: a ballot holds lane {}, the shader's size is {size_seen}",
                            seen.highest_lane
                        ));
                    }
                }
                Err(e) => failures.push(format!("{what}: differs from the model:\n{e}")),
            }
            // The native votes are the reference of their lowered forms, word for word (not of
            // the emulated ones: their subgroups are others).
            let reference = reference.as_ref().filter(|_| size_seen == size_now);
            if let Some(Output { records: want, .. }) = reference.and_then(|r| r.get(i)) {
                if let Some(k) = (0..records.len()).find(|&k| records[k] != want[k]) {
                    let n = (0..records.len())
                        .filter(|&k| records[k] != want[k])
                        .count();
                    failures.push(format!(
                        "{what}: {n} words differ from native; first {k}: {:#x} against {:#x}",
                        records[k], want[k]
                    ));
                }
            }
        }
        // Native output is the word-for-word reference only where it follows the spec in every
        // word: NVIDIA's native partition compares float keys by bits, so there each side is
        // checked against its own model only (as in the conformance suite).
        let native_is_spec =
            !(shader.file == "partitioned.frag" && runner.info().vendor_id == 0x10de);
        if name == "native" && native_is_spec {
            reference = Some(outs);
        }
    }
}

/// Whether draws have a color attachment: not on lavapipe at 16 lanes, which crashes compiling
/// a pipeline with one (see the module doc).
fn color_attachment(runner: &Runner) -> bool {
    !(is_lavapipe(runner) && runner.info().subgroup_size == 16)
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
    println!("color attachment: {}", color_attachment(&runner));
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

/// The model counts lanes that left no record: a synthetic 2 x 2 quad on lanes 0 to 3 whose
/// lane 3 is a helper (in the ballot and the lane map, without a record). The records the model
/// writes with the helper pass; one computed as if the helper had not taken part fails.
#[test]
fn helper_lanes_take_part_in_the_model() {
    let shader = &SHADERS[1];
    let stride = shader.stride;
    let scene = Scene {
        width: 2,
        height: 2,
        first_vertex: 0,
        full: false,
    };
    let quad: Vec<Px> = [(0, 0), (1, 0), (0, 1), (1, 1)]
        .iter()
        .zip(0..)
        .map(|(&(x, y), lane)| Px { x, y, lane })
        .collect();
    let mut words = vec![FILL; (ROW * 2) as usize * stride];
    let mut map = vec![FILL; (ROW * 2) as usize * MAP];
    for me in &quad[..3] {
        let at = (me.y * ROW + me.x) as usize;
        words[at * stride..(at + 1) * stride].copy_from_slice(&(shader.model)(&quad, me, false));
        for q in &quad {
            map[at * MAP + q.lane as usize] = coords(q);
        }
    }
    let seen = check_records(&words, &map, shader, &scene, false).expect("the model's records");
    assert_eq!((seen.pixels, seen.groups, seen.helpers), (3, 1, 1));
    assert_eq!(seen.not_quads, 0);
    let mut swapped = quad.clone();
    swapped.swap(1, 2);
    swapped[1].lane = 1;
    swapped[2].lane = 2;
    assert!(
        !in_quads(&swapped),
        "lane 1 below lane 0 is not Vulkan's quad order"
    );
    // Pixel (0, 0) as if lane 3 had not taken part (its float key -0.0 joins lane 0's +0.0).
    let mut without = (shader.model)(&quad[..3], &quad[0], false);
    without[ACT] = 0b1111;
    words[..stride].copy_from_slice(&without);
    let err = check_records(&words, &map, shader, &scene, false)
        .err()
        .expect("a record that leaves the helper out must fail");
    assert!(err.contains("pixel (0, 0) lane 0 word 16"), "{err}");
}

/// The graphics path's failures are typed errors, never panics: words that are not SPIR-V, the
/// un-lowered partitioned shader on a driver without the ops (the driver refuses the pipeline),
/// a draw of no pixels, the wrong number of buffers, and a graphics pipeline given to `run`.
#[test]
fn graphics_errors_are_typed() {
    use spv_subgroup_vk::VkError;
    let runner =
        Runner::new().unwrap_or_else(|e| panic!("{e} (apt-get install mesa-vulkan-drivers)"));
    let dir = tools::workspace_root().join("tests/fragment_exec");
    let vertex = tools::compile_glsl(&dir.join("fullscreen.vert"), "vulkan1.1").expect("compiles");
    let votes = tools::compile_glsl(&dir.join("votes.frag"), "vulkan1.1").expect("compiles");
    let opts = GraphicsOptions {
        buffers: 2,
        ..Default::default()
    };
    assert!(matches!(
        runner.graphics_pipeline(&vertex, &[1, 2, 3], &opts),
        Err(VkError::Invalid(_))
    ));
    if !runner.info().has_subgroup_op("partitioned_nv") {
        let partitioned =
            tools::compile_glsl(&dir.join("partitioned.frag"), "vulkan1.1").expect("compiles");
        let r = runner.graphics_pipeline(&vertex, &partitioned, &opts);
        assert!(matches!(r, Err(VkError::Pipeline { .. })), "{r:?}");
    }
    let p = runner
        .graphics_pipeline(&vertex, &votes, &opts)
        .expect("the votes pipeline");
    let mut two = vec![vec![0u32; 64 * 13], vec![0u32; 64 * 32]];
    let none = Draw {
        width: 0,
        height: 1,
        vertices: 3,
        first_vertex: 0,
    };
    let r = runner.draw(&p, &mut two, none, Duration::from_secs(60));
    assert!(matches!(r, Err(VkError::Invalid(_))), "{r:?}");
    let one = Draw { width: 1, ..none };
    let r = runner.draw(&p, &mut two[..1], one, Duration::from_secs(60));
    assert!(matches!(r, Err(VkError::Invalid(_))), "{r:?}");
    let r = runner.run(&p, &mut two, [1, 1, 1], Duration::from_secs(60));
    assert!(matches!(r, Err(VkError::Invalid(_))), "{r:?}");
    // And the same pipeline still draws.
    runner
        .draw(&p, &mut two, one, Duration::from_secs(60))
        .expect("a 1 x 1 draw");
    assert_eq!(two[0][0], 1, "pixel (0, 0) wrote its marker");
}

/// One child at lavapipe subgroup `size`.
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

#[test]
fn lavapipe_subgroup_size_16() {
    lavapipe_size(16);
}
