//! Which functions the lowering copies per stage (`stages.rs`): the new integer built-ins are
//! `Flat` in a module with a fragment shader, which only a vertex shader may not list.
//!
//! `compute_and_fragment_share_code`: a compute and a fragment entry point share one function
//! (`fixtures/reliability/compute_fragment_shared.spvasm`); its lowering for each preset lavapipe
//! runs is not copied, the compute stage lists the fragment shader's `Flat` built-ins, and the
//! output passes `spirv-val`, our validator with the target, and (for `naga`) naga.
//! `vertex_and_fragment_still_copy`: for a vertex and a fragment entry point
//! (`vertex_fragment_shared.spvasm`) the copy is still made and the vertex stage lists no `Flat`
//! input. `child_suite` runs the compute stage of each lowering on lavapipe at subgroup sizes 4,
//! 8 and 16 against a host model of the shared function. `every_stage_is_emulated`: every stage
//! fixture emulated at a subgroup size passes the checks, and a vertex and fragment module is
//! refused.

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rspirv::dr::{Module, Operand};
use spirv::{Decoration, ExecutionModel, Op};
use spv_subgroup_lower::{lower_and_verify, LowerOptions, Target};
use spv_subgroup_tests::naga::through_naga;
use spv_subgroup_tests::{lavapipe, tools};
use spv_subgroup_vk::{PipelineOptions, Runner};

/// Presets whose output lavapipe runs.
const PRESETS: [&str; 3] = ["vulkan1.1", "lavapipe", "naga"];
/// Invocations of the compute stage (one workgroup of the fixture's `LocalSize`).
const LOCAL: usize = 37;

/// The fixture `name` in `fixtures/reliability`, assembled and accepted by `spirv-val`.
fn fixture(name: &str) -> Vec<u32> {
    let path = tools::workspace_root()
        .join("fixtures/reliability")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("fixture is readable");
    let words = tools::assemble(&text, "vulkan1.1").unwrap_or_else(|e| panic!("{name}: {e}"));
    tools::spirv_val(&words, "vulkan1.1").unwrap_or_else(|e| panic!("{name} input: {e}"));
    words
}

/// `words` lowered for `preset` and verified with our validator and the target, then checked
/// by `spirv-val` in the target's environment, and by naga for the `naga` preset when `naga`
/// (naga's validator takes subgroup built-ins in compute and fragment stages only).
fn lowered(words: &[u32], preset: &str, what: &str, naga: bool) -> Vec<u32> {
    let target = Target::preset(preset).expect("preset");
    let env = target.target_env.clone();
    let opts = LowerOptions::new(target);
    let (out, report) =
        lower_and_verify(words, &opts, None).unwrap_or_else(|e| panic!("{what} for {preset}: {e}"));
    assert!(report.changed, "{what} for {preset}: nothing lowered");
    tools::spirv_val(&out, &env).unwrap_or_else(|e| panic!("{what} for {preset}: {e}"));
    if naga && preset == "naga" {
        through_naga(&out, false).unwrap_or_else(|e| panic!("{what} for naga: {e}"));
    }
    out
}

/// Per entry point name: its execution model, its function, the functions that function calls,
/// and its interface.
struct Entry {
    model: ExecutionModel,
    root: u32,
    callees: Vec<u32>,
    interface: Vec<u32>,
}

fn entries(words: &[u32]) -> BTreeMap<String, Entry> {
    let m: Module = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("rspirv loads the output");
    let mut out = BTreeMap::new();
    for ep in &m.entry_points {
        let [Operand::ExecutionModel(model), Operand::IdRef(root), Operand::LiteralString(name), rest @ ..] =
            ep.operands.as_slice()
        else {
            panic!("an OpEntryPoint of an unexpected shape: {ep:?}");
        };
        let f = m
            .functions
            .iter()
            .find(|f| f.def.as_ref().and_then(|d| d.result_id) == Some(*root))
            .expect("the entry point's function");
        let callees = f
            .blocks
            .iter()
            .flat_map(|b| &b.instructions)
            .filter(|i| i.class.opcode == Op::FunctionCall)
            .filter_map(|i| match i.operands.first() {
                Some(Operand::IdRef(c)) => Some(*c),
                _ => None,
            })
            .collect();
        let interface = rest
            .iter()
            .filter_map(|o| match o {
                Operand::IdRef(v) => Some(*v),
                _ => None,
            })
            .collect();
        out.insert(
            name.clone(),
            Entry {
                model: *model,
                root: *root,
                callees,
                interface,
            },
        );
    }
    out
}

/// The built-in variables decorated `Flat` (the fixtures' own `Flat` variables are not built-ins).
fn flat(words: &[u32]) -> BTreeSet<u32> {
    let m: Module = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("rspirv loads the output");
    let decorated = |d: Decoration| -> BTreeSet<u32> {
        m.annotations
            .iter()
            .filter_map(|a| match a.operands.as_slice() {
                [Operand::IdRef(v), Operand::Decoration(x), ..] if *x == d => Some(*v),
                _ => None,
            })
            .collect()
    };
    let builtins = decorated(Decoration::BuiltIn);
    decorated(Decoration::Flat)
        .intersection(&builtins)
        .copied()
        .collect()
}

#[test]
fn compute_and_fragment_share_code() {
    let input = fixture("compute_fragment_shared.spvasm");
    let before = entries(&input);
    for preset in PRESETS {
        let out = lowered(&input, preset, "compute_fragment_shared", true);
        let after = entries(&out);
        let (main, fs) = (&after["main"], &after["fs"]);
        assert_eq!(main.model, ExecutionModel::GLCompute);
        assert_eq!(
            main.root, before["main"].root,
            "{preset}: the compute entry point was moved to a copy"
        );
        assert_eq!(
            main.callees, fs.callees,
            "{preset}: both stages call the same shared function (no copy)"
        );
        let flat = flat(&out);
        let shared: Vec<&u32> = main
            .interface
            .iter()
            .filter(|v| flat.contains(v) && fs.interface.contains(v))
            .collect();
        assert!(
            !shared.is_empty(),
            "{preset}: the compute stage lists the fragment shader's Flat built-ins"
        );
    }
}

#[test]
fn vertex_and_fragment_still_copy() {
    let input = fixture("vertex_fragment_shared.spvasm");
    for preset in PRESETS {
        if preset == "naga" {
            // The shared function's rewrite reads the lane id, which naga's validator refuses in
            // a vertex shader: the naga preset refuses the module (exit 1) rather than write an
            // output naga rejects, as it did before naga judged the naga target.
            let opts = spv_subgroup_lower::LowerOptions::default()
                .with_target(Target::preset(preset).expect("preset"));
            match lower_and_verify(&input, &opts, None) {
                Err(spv_subgroup_lower::VerifyError::Lower(e)) => assert!(
                    e.to_string().contains("a vertex entry point reaches"),
                    "naga: refused for another reason: {e}"
                ),
                r => panic!("naga: expected the lane id in a vertex stage refused, got {r:?}"),
            }
            continue;
        }
        let out = lowered(&input, preset, "vertex_fragment_shared", false);
        let after = entries(&out);
        let (vs, fs) = (&after["vs"], &after["fs"]);
        assert_eq!(vs.model, ExecutionModel::Vertex);
        assert_ne!(
            vs.callees, fs.callees,
            "{preset}: the vertex stage calls a copy of the shared function"
        );
        let flat = flat(&out);
        assert!(
            vs.interface.iter().all(|v| !flat.contains(v)),
            "{preset}: the vertex stage lists a Flat built-in (VUID-StandaloneSpirv-Flat-06202)"
        );
        assert!(
            fs.interface.iter().any(|v| flat.contains(v)),
            "{preset}: the fragment stage lists Flat built-ins"
        );
    }
}

/// Emulating a subgroup size (issue 26) in every stage glslang writes: each stage fixture
/// (`fixtures/lower/stages/`, tessellation, geometry, mesh, task and the six ray stages) emulated
/// at 4 and 8 for `vulkan1.1` (in the fixture's environment) is emulated (the report says so), passes our validator with the
/// target and spirv-val in its environment (SG0610's `Volatile` in the ray stages included; from
/// SPIR-V 1.4 on spirv-val also wants every built-in the new code loads in the entry point's
/// interface); fragment shaders run on
/// lavapipe (tests/lower_fragment_exec.rs). A vertex entry point beside a fragment one in the
/// same module is refused, naming why (the copies the ordinary lowering makes for it are not
/// made by the emulation).
#[test]
fn every_stage_is_emulated() {
    let dir = tools::workspace_root().join("fixtures/lower/stages");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/lower/stages")
        .map(|e| e.expect("entry").path())
        .collect();
    names.sort();
    assert!(names.len() >= 11, "the stage fixtures: {names:?}");
    let target = Target::preset("vulkan1.1").expect("preset");
    for path in &names {
        let text = std::fs::read_to_string(path).expect("fixture is readable");
        let env = text
            .lines()
            .find_map(|l| l.strip_prefix("// target-env: ").map(str::trim))
            .unwrap_or("vulkan1.1");
        let input =
            tools::compile_glsl(path, env).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for n in [4, 8] {
            let what = format!("{} emulated at {n}", path.display());
            let in_env = target
                .clone()
                .with_env(env)
                .expect("the fixture's environment");
            let opts = LowerOptions::new(in_env).with_emulated_subgroup_size(Some(n));
            let (out, report) =
                lower_and_verify(&input, &opts, None).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                report
                    .rewrites
                    .iter()
                    .any(|(k, _)| k == &format!("emulated at subgroup size {n}")),
                "{what}: not emulated: {:?}",
                report.rewrites
            );
            tools::spirv_val(&out, env).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
    let mixed = fixture("vertex_fragment_shared.spvasm");
    let opts = LowerOptions::new(target).with_emulated_subgroup_size(Some(4));
    match lower_and_verify(&mixed, &opts, None) {
        Err(spv_subgroup_lower::VerifyError::Lower(e)) => assert!(
            e.to_string()
                .contains("a Vertex entry point beside a fragment one"),
            "refused for another reason: {e}"
        ),
        r => panic!("a vertex and a fragment stage in one module: expected a refusal, got {r:?}"),
    }
}

/// The key of invocation `i` for `seed`.
fn key(i: usize, seed: u32) -> u32 {
    let mut h = (i as u32).wrapping_mul(0x9e37_79b9) ^ seed.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^ (h >> 12)
}

/// The shared function's result per invocation, from the keys and each invocation's subgroup:
/// the sum of the keys of its subgroup's invocations with the same `key & 3`, top bit flipped
/// unless some invocation of its subgroup has `key & 0x30 == 0`.
fn model(keys: &[u32], subgroup: &[u32]) -> Vec<u32> {
    (0..keys.len())
        .map(|i| {
            let members = (0..keys.len()).filter(|&j| subgroup[j] == subgroup[i]);
            let sum = members
                .clone()
                .filter(|&j| keys[j] & 3 == keys[i] & 3)
                .fold(0u32, |a, j| a.wrapping_add(keys[j]));
            let any = members.clone().any(|j| keys[j] & 0x30 == 0);
            if any {
                sum
            } else {
                sum ^ 0x8000_0000
            }
        })
        .collect()
}

/// The compute stage of each lowering, against the host model; runs only inside
/// `lavapipe_subgroup_size_*`.
#[test]
#[ignore = "the suite of a child process: lavapipe_subgroup_size_* run it at their size"]
fn child_suite() {
    lavapipe::assert_child();
    let runner = Runner::new().unwrap_or_else(|e| panic!("no Vulkan device: {e}"));
    let size = runner.info().subgroup_size;
    println!("subgroup size: {size}");
    let input = fixture("compute_fragment_shared.spvasm");
    for preset in PRESETS {
        let out = lowered(&input, preset, "compute_fragment_shared", true);
        let opts = PipelineOptions {
            buffers: 2,
            ..PipelineOptions::default()
        };
        let pipeline = runner
            .pipeline(&out, &opts)
            .unwrap_or_else(|e| panic!("{preset}: lavapipe refuses the module: {e}"));
        for seed in 1..=3 {
            let keys: Vec<u32> = (0..LOCAL).map(|i| key(i, seed)).collect();
            let mut buffers = vec![keys.clone(), vec![0xdead_beef; 2 * LOCAL]];
            runner
                .run(&pipeline, &mut buffers, [1, 1, 1], Duration::from_secs(120))
                .unwrap_or_else(|e| panic!("{preset}: dispatch failed: {e}"));
            let got: Vec<u32> = buffers[1].iter().step_by(2).copied().collect();
            let subgroup: Vec<u32> = buffers[1].iter().skip(1).step_by(2).copied().collect();
            let subgroups: BTreeSet<u32> = subgroup.iter().copied().collect();
            assert_eq!(
                subgroups.len(),
                LOCAL.div_ceil(size as usize),
                "{preset}, seed {seed}: the invocations' SubgroupId"
            );
            assert_eq!(
                got,
                model(&keys, &subgroup),
                "{preset}, seed {seed}: results against the host model"
            );
        }
        println!("compute_fragment_shared lowered:{preset}: {LOCAL} x 3 results agree");
    }
}

spv_subgroup_tests::lavapipe_size_tests!(600);
