//! Shared pieces of the lowering harnesses: compiling a fixture for a target, lowering it, and
//! checking that the output uses nothing the target lacks.

#![allow(dead_code, reason = "each harness uses a different part")]

use std::path::Path;

use rspirv::dr::{Instruction, Module, Operand};
use spirv::{BuiltIn, Decoration, GroupOperation, Op};
use spv_subgroup_lower::{lower_words, LowerError, LowerOptions, LowerReport, Target};
use spv_subgroup_tests::tools;

/// The fixture file pattern under `fixtures/` (GLSL sources of every stage glslang compiles,
/// and SPIR-V assembly): the extensions of [`EXTENSIONS`].
pub const PATTERN: &str =
    "lower/**/*.{comp,frag,vert,tesc,tese,geom,mesh,task,rgen,rchit,rmiss,rint,rahit,rcall,spvasm}";

/// The file extensions of lowering fixtures, as [`PATTERN`] lists them.
pub const EXTENSIONS: [&str; 15] = [
    "comp", "frag", "vert", "tesc", "tese", "geom", "mesh", "task", "rgen", "rchit", "rmiss",
    "rint", "rahit", "rcall", "spvasm",
];

/// Whether `path` is a lowering fixture (by its extension; the harnesses that walk the folder
/// themselves use it, the insta globs use [`PATTERN`]).
pub fn is_fixture(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    debug_assert!(
        EXTENSIONS
            .iter()
            .all(|e| PATTERN.contains(&format!("{e},")) || PATTERN.contains(&format!("{e}}}"))),
        "PATTERN and EXTENSIONS list the same extensions"
    );
    EXTENSIONS.contains(&ext)
}

/// Compiles (GLSL) or assembles (`.spvasm`) a fixture for `target`. GLSL is compiled for
/// Vulkan 1.0 (SPIR-V 1.0) when the target consumes only SPIR-V 1.0 and glslang can, else
/// for Vulkan 1.1. A fixture may name its env on a `; target-env: ENV` line (`// target-env:`
/// in GLSL: ray-tracing and mesh stages need Vulkan 1.2's SPIR-V 1.5).
pub fn build(path: &Path, target: &Target) -> Vec<u32> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let text = std::fs::read_to_string(path).expect("fixture is readable");
    let env = text.lines().find_map(|l| {
        l.strip_prefix("; target-env: ")
            .or_else(|| l.strip_prefix("// target-env: "))
            .map(str::trim)
    });
    if ext == "spvasm" {
        return tools::assemble(&text, env.unwrap_or("vulkan1.1"))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    if let Some(env) = env {
        return tools::compile_glsl(path, env)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    if target.spirv_version < (1, 3) {
        if let Ok(words) = tools::compile_glsl(path, "vulkan1.0") {
            return words;
        }
    }
    tools::compile_glsl(path, "vulkan1.1").unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The targets a fixture runs for: all presets, unless a `; targets: A B` (or `// targets: A B`)
/// line lists some (for inputs that only make sense where they are rewritten).
pub fn wants(path: &Path, target: &Target) -> bool {
    let text = std::fs::read_to_string(path).expect("fixture is readable");
    let listed = text.lines().find_map(|l| {
        l.strip_prefix("; targets: ")
            .or_else(|| l.strip_prefix("// targets: "))
    });
    listed.is_none_or(|l| l.split_whitespace().any(|t| t == target.name))
}

/// Lowers with default options for `target`.
pub fn lower(words: &[u32], target: &Target) -> Result<(Vec<u32>, LowerReport), LowerError> {
    let opts = LowerOptions::new(target.clone());
    lower_words(words, &opts)
}

/// Every use of something `target` lacks in `words`, as readable lines (empty when it fits).
pub fn misfits(words: &[u32], target: &Target) -> Vec<String> {
    let m: Module = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("output loads");
    let mut out = Vec::new();
    if let Some(h) = &m.header {
        if h.version() > target.spirv_version {
            out.push(format!("SPIR-V version {:?}", h.version()));
        }
    }
    for c in &m.capabilities {
        if let Some(Operand::Capability(cap)) = c.operands.first() {
            if !target.has_capability(*cap) {
                out.push(format!("capability {cap:?}"));
            }
        }
    }
    let r = &target.restrictions;
    for a in &m.annotations {
        if let [Operand::IdRef(_), Operand::Decoration(Decoration::BuiltIn), Operand::BuiltIn(b)] =
            a.operands.as_slice()
        {
            let mask = matches!(
                b,
                BuiltIn::SubgroupEqMask
                    | BuiltIn::SubgroupGeMask
                    | BuiltIn::SubgroupGtMask
                    | BuiltIn::SubgroupLeMask
                    | BuiltIn::SubgroupLtMask
            );
            if mask && r.no_mask_builtins {
                out.push(format!("built-in {b:?}"));
            }
        }
    }
    let types = type_table(&m);
    for inst in m
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
    {
        if let Some(why) = inst_misfit(inst, target, &types) {
            out.push(format!(
                "%{} Op{:?}: {why}",
                inst.result_id.unwrap_or(0),
                inst.class.opcode
            ));
        }
    }
    out
}

/// Result ids of bool types (scalar or vector).
fn type_table(m: &Module) -> Vec<u32> {
    let mut bools = Vec::new();
    for t in &m.types_global_values {
        match (t.class.opcode, t.result_id, t.operands.first()) {
            (Op::TypeBool, Some(id), _) => bools.push(id),
            (Op::TypeVector, Some(id), Some(Operand::IdRef(e))) if bools.contains(e) => {
                bools.push(id)
            }
            _ => {}
        }
    }
    bools
}

fn inst_misfit(inst: &Instruction, t: &Target, bools: &[u32]) -> Option<&'static str> {
    let o = &t.ops;
    let r = &t.restrictions;
    let group_op = inst.operands.iter().find_map(|op| match op {
        Operand::GroupOperation(g) => Some(*g),
        _ => None,
    });
    let is_bool = inst.result_type.is_some_and(|ty| bools.contains(&ty));
    match inst.class.opcode {
        Op::SubgroupAllKHR | Op::SubgroupAnyKHR | Op::SubgroupAllEqualKHR if !o.khr_vote => {
            Some("KHR vote")
        }
        Op::GroupNonUniformPartitionEXT if !o.partitioned => Some("partitioned"),
        Op::SubgroupBallotKHR | Op::SubgroupReadInvocationKHR | Op::SubgroupFirstInvocationKHR
            if !o.khr_ballot =>
        {
            Some("KHR ballot")
        }
        Op::GroupNonUniformElect if !o.basic || r.no_elect => Some("elect"),
        Op::GroupNonUniformAll | Op::GroupNonUniformAny | Op::GroupNonUniformAllEqual
            if !o.vote =>
        {
            Some("core vote")
        }
        Op::GroupNonUniformBallot
        | Op::GroupNonUniformBroadcast
        | Op::GroupNonUniformBroadcastFirst
            if !o.ballot =>
        {
            Some("core ballot")
        }
        Op::GroupNonUniformBroadcast | Op::GroupNonUniformBroadcastFirst
            if is_bool && r.no_bool_shuffle =>
        {
            Some("bool broadcast")
        }
        Op::GroupNonUniformInverseBallot
        | Op::GroupNonUniformBallotBitExtract
        | Op::GroupNonUniformBallotBitCount
        | Op::GroupNonUniformBallotFindLSB
        | Op::GroupNonUniformBallotFindMSB
            if !o.ballot || r.no_ballot_bit_ops =>
        {
            Some("ballot bit op")
        }
        Op::GroupNonUniformShuffle | Op::GroupNonUniformShuffleXor if !o.shuffle => Some("shuffle"),
        Op::GroupNonUniformShuffleUp | Op::GroupNonUniformShuffleDown if !o.shuffle_relative => {
            Some("relative shuffle")
        }
        Op::GroupNonUniformShuffle
        | Op::GroupNonUniformShuffleXor
        | Op::GroupNonUniformShuffleUp
        | Op::GroupNonUniformShuffleDown
            if is_bool && r.no_bool_shuffle =>
        {
            Some("bool shuffle")
        }
        Op::GroupNonUniformQuadBroadcast | Op::GroupNonUniformQuadSwap if !o.quad => Some("quad"),
        Op::GroupNonUniformRotateKHR if !o.rotate => Some("rotate"),
        Op::GroupNonUniformRotateKHR if inst.operands.len() > 3 && !o.rotate_clustered => {
            Some("clustered rotate")
        }
        Op::GroupNonUniformQuadAllKHR | Op::GroupNonUniformQuadAnyKHR if !o.quad_control => {
            Some("quad control")
        }
        _ => match group_op {
            Some(
                GroupOperation::PartitionedReduceEXT
                | GroupOperation::PartitionedInclusiveScanEXT
                | GroupOperation::PartitionedExclusiveScanEXT,
            ) if !o.partitioned => Some("partitioned group operation"),
            Some(GroupOperation::ClusteredReduce) if !o.clustered => Some("clustered"),
            Some(
                GroupOperation::Reduce
                | GroupOperation::InclusiveScan
                | GroupOperation::ExclusiveScan,
            ) if !o.arithmetic && inst.class.opcode != Op::GroupNonUniformBallotBitCount => {
                Some("arithmetic")
            }
            _ => None,
        },
    }
}

/// The preset targets, in their listed order.
pub fn presets() -> Vec<Target> {
    spv_subgroup_validate::target::PRESETS
        .iter()
        .map(|(name, _)| Target::preset(name).expect("preset exists"))
        .collect()
}

/// A target no preset describes, for the rewrites only such a device needs: `vulkan1.1`
/// without quad ops and shuffle relative (`no-quad-relative`), or without any shuffle at all
/// (`ballot-only`: ballots stand in for every lane read).
pub fn test_target(name: &str) -> Option<Target> {
    let mut t = Target::preset("vulkan1.1").expect("preset exists");
    t.name = name.to_owned();
    match name {
        "no-quad-relative" => {
            t.ops.quad = false;
            t.ops.shuffle_relative = false;
        }
        "ballot-only" => {
            t.ops.quad = false;
            t.ops.shuffle_relative = false;
            t.ops.shuffle = false;
        }
        // Rotates without clusters (`shaderSubgroupRotate` but not `...Clustered`).
        "rotate-unclustered" => {
            t.ops.rotate = true;
            t.ops.rotate_clustered = false;
        }
        // The `vulkan1.1` preset's subgroup features on a Vulkan 1.2 device (SPIR-V 1.5): what
        // the ray-tracing and mesh stages, which need SPIR-V 1.4, are lowered for.
        "vulkan1.2" => {
            t.target_env = "vulkan1.2".to_owned();
            t.spirv_version = (1, 5);
        }
        _ => return None,
    }
    Some(t)
}

/// The test targets a fixture opts in to with a `// test-targets: A B` line (`; test-targets:`
/// in assembly; none without it).
pub fn test_targets(path: &Path) -> Vec<Target> {
    let text = std::fs::read_to_string(path).expect("fixture is readable");
    text.lines()
        .find_map(|l| {
            l.strip_prefix("// test-targets: ")
                .or_else(|| l.strip_prefix("; test-targets: "))
        })
        .map(|l| {
            l.split_whitespace()
                .map(|n| {
                    test_target(n)
                        .unwrap_or_else(|| panic!("{}: unknown test target `{n}`", path.display()))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The quad votes of `SPV_KHR_quad_control`, which neither glslang 12 nor spirv-as 2023.1 can
/// write: this GLSL has `subgroupAll`/`subgroupAny` standing in, and [`quad_vote_module`] turns
/// their `OpGroupNonUniformAll/Any` into `OpGroupNonUniformQuadAllKHR/AnyKHR` (which take no
/// scope). Votes at top level and in divergent flow, over predicates true in about half and
/// three quarters of the lanes; the last subgroup and the last quad of a workgroup are partial.
pub const QUAD_VOTE_GLSL: &str = r#"#version 450
#extension GL_KHR_shader_subgroup_vote : require
layout(local_size_x = 37) in;
layout(std430, binding = 0) buffer Buf { uint data[]; } buf;
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint v = buf.data[i];
    bool p = (v & 1u) != 0u;
    bool q = (v & 6u) != 0u;
    uint r = 0u;
    r |= subgroupAll(p) ? 1u : 0u;
    r |= subgroupAny(p) ? 2u : 0u;
    r |= subgroupAll(q) ? 4u : 0u;
    r |= subgroupAny(q) ? 8u : 0u;
    if ((v & 8u) != 0u) {
        r |= subgroupAll(q) ? 16u : 0u;
        r |= subgroupAny(p) ? 32u : 0u;
    }
    buf.data[i] = r;
}
"#;

/// [`QUAD_VOTE_GLSL`] compiled, with its votes made quad votes.
pub fn quad_vote_module() -> Vec<u32> {
    use rspirv::binary::Assemble;
    use rspirv::dr::{Instruction, Operand};
    use spirv::{Capability, Op};
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("quad_vote.comp");
    std::fs::write(&src, QUAD_VOTE_GLSL).expect("write the shader");
    let words = tools::compile_glsl(&src, "vulkan1.1").expect("glslang compiles the shader");
    let mut m = spv_subgroup_lower::load(&words)
        .map(|l| l.module)
        .expect("glslang's output loads");
    for c in &mut m.capabilities {
        if c.operands == [Operand::Capability(Capability::GroupNonUniformVote)] {
            c.operands = vec![Operand::Capability(Capability::QuadControlKHR)];
        }
    }
    m.extensions.push(Instruction::new(
        Op::Extension,
        None,
        None,
        vec![Operand::LiteralString("SPV_KHR_quad_control".into())],
    ));
    let mut votes = 0;
    for inst in m
        .functions
        .iter_mut()
        .flat_map(|f| &mut f.blocks)
        .flat_map(|b| &mut b.instructions)
    {
        let quad = match inst.class.opcode {
            Op::GroupNonUniformAll => Op::GroupNonUniformQuadAllKHR,
            Op::GroupNonUniformAny => Op::GroupNonUniformQuadAnyKHR,
            _ => continue,
        };
        let pred = inst.operands[1].clone();
        *inst = Instruction::new(quad, inst.result_type, inst.result_id, vec![pred]);
        votes += 1;
    }
    assert_eq!(votes, 6, "the shader's six votes");
    m.assemble()
}
