//! Target fit for naga 30 (SG0704, with `restrictions.naga_module`): what the input itself brings
//! that naga refuses and no lowering rewrites.
//!
//! - an entry point of a stage naga's front end has no IR for (geometry, tessellation, ray
//!   tracing, NV mesh): it reads vertex, fragment, compute and EXT task/mesh shaders only;
//! - `SubgroupId` or `SubgroupLocalInvocationId` in the interface of an entry point whose
//!   `LocalSize` has more than one dimension (naga's validator: "Workgroup size is multi
//!   dimensional, `@builtin(subgroup_id)` and `@builtin(subgroup_invocation_id)` are not
//!   supported"; naga reads the workgroup size from `LocalSize` alone), and a subgroup built-in
//!   in a stage naga's validator does not give it (`SubgroupSize` and
//!   `SubgroupLocalInvocationId` in a vertex shader, `SubgroupId` and `NumSubgroups` outside
//!   compute, task and mesh shaders);
//! - `OpIsNan` and `OpIsInf`, which naga's WGSL writer cannot write out (the lowering rewrites
//!   them as tests on the float's bits, `rewrite/float_class.rs`);
//!
//! An `OpBitcast` that changes the component count is not reported although naga's IR keeps a
//! bitcast's vector size: naga 30 takes some (a `uvec2` through a `uint64_t` and back, as glslang
//! writes for a ballot, runs correctly through wgpu: tests/wgpu_conformance.rs) and refuses
//! others by a type error where the value is used, so `lower`'s verification lets naga decide
//! per module. Nor is a 16-bit float constant: naga 30 reads it (`Literal::F16`).
//!
//! `lower --target naga` refuses such an input by the same finding (its output keeps them), and
//! its verification runs naga itself on the output for everything else.

use spirv::{BuiltIn, Decoration, ExecutionMode, ExecutionModel, Op};

use crate::fit::naga_reads_stage;
use crate::module::Cx;
use crate::rules::Rule;
use crate::sink::Sink;

pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    let Some(t) = cx.target else { return };
    let r = t.restrictions;
    if !r.naga_module {
        return;
    }
    let m = &cx.m;
    let n = m.insts.len();
    // Variables decorated with a subgroup built-in, and each entry point's LocalSize
    // (function id, y, z).
    const BUILTINS: [BuiltIn; 4] = [
        BuiltIn::SubgroupId,
        BuiltIn::SubgroupLocalInvocationId,
        BuiltIn::SubgroupSize,
        BuiltIn::NumSubgroups,
    ];
    let mut subgroup_vars: Vec<(u32, BuiltIn)> = Vec::new();
    let mut local_size: Vec<(u32, u32, u32)> = Vec::new();
    for i in 0..n {
        let (op, w1, w2, w3) = (m.opcode(i), m.word(i, 1), m.word(i, 2), m.word(i, 3));
        if op == Op::Decorate as u32 && w2 == Some(Decoration::BuiltIn as u32) {
            let builtin = BUILTINS.iter().find(|&&b| w3 == Some(b as u32));
            if let (Some(&b), Some(id)) = (builtin, w1) {
                subgroup_vars.push((id, b));
            }
        } else if op == Op::ExecutionMode as u32 && w2 == Some(ExecutionMode::LocalSize as u32) {
            if let (Some(f), Some(y), Some(z)) = (w1, m.word(i, 4), m.word(i, 5)) {
                local_size.push((f, y, z));
            }
        } else if op == Op::IsNan as u32 || op == Op::IsInf as u32 {
            let name = if op == Op::IsNan as u32 {
                "IsNan"
            } else {
                "IsInf"
            };
            out.emit(
                cx,
                Rule::TargetRestriction,
                i,
                format!(
                    "`Op{name}`: target `{}` does not accept it (naga's WGSL writer cannot write it out)",
                    t.name
                ),
                vec!["run `spv-subgroup lower` to rewrite it as a test on the float's bits".into()],
            );
        }
    }
    if r.naga_module {
        for &i in &m.entry_points {
            let (Some(model), Some(f)) = (m.word(i, 1), m.word(i, 2)) else {
                continue;
            };
            let name = m.string(i, 3);
            if !naga_reads_stage(model) {
                let stage = ExecutionModel::from_u32(model)
                    .map_or_else(|| model.to_string(), |s| format!("{s:?}"));
                out.emit(
                    cx,
                    Rule::TargetRestriction,
                    i,
                    format!(
                        "entry point `{name}`: target `{}` does not accept the {stage} stage",
                        t.name
                    ),
                    vec!["naga's SPIR-V front end reads vertex, fragment, compute and task/mesh (EXT) shaders only".into()],
                );
                continue;
            }
            let multi = local_size
                .iter()
                .any(|&(g, y, z)| g == f && (y > 1 || z > 1));
            let compute_like = [
                ExecutionModel::GLCompute,
                ExecutionModel::TaskEXT,
                ExecutionModel::MeshEXT,
            ]
            .iter()
            .any(|&s| s as u32 == model);
            let vertex = model == ExecutionModel::Vertex as u32;
            // The interface ids follow the name's words.
            let first = 3 + name.len() / 4 + 1;
            for k in first..m.wc(i) {
                let Some(id) = m.word(i, k) else { break };
                let Some(&(_, b)) = subgroup_vars.iter().find(|(v, _)| *v == id) else {
                    continue;
                };
                let lane_or_subgroup_id =
                    matches!(b, BuiltIn::SubgroupId | BuiltIn::SubgroupLocalInvocationId);
                let per_workgroup = matches!(b, BuiltIn::SubgroupId | BuiltIn::NumSubgroups);
                if (per_workgroup && !compute_like)
                    || (vertex
                        && matches!(
                            b,
                            BuiltIn::SubgroupSize | BuiltIn::SubgroupLocalInvocationId
                        ))
                {
                    out.emit(
                        cx,
                        Rule::TargetRestriction,
                        i,
                        format!(
                            "entry point `{name}`: target `{}` does not accept the built-in `{b:?}` in this stage",
                            t.name
                        ),
                        vec!["naga's validator takes SubgroupSize and SubgroupLocalInvocationId in every stage but vertex, SubgroupId and NumSubgroups in compute, task and mesh shaders only".into()],
                    );
                } else if multi && lane_or_subgroup_id {
                    out.emit(
                        cx,
                        Rule::TargetRestriction,
                        i,
                        format!(
                            "entry point `{name}`: target `{}` does not accept the built-in `{b:?}` in a workgroup of more than one dimension",
                            t.name
                        ),
                        vec!["naga's validator takes SubgroupId and SubgroupLocalInvocationId only where the LocalSize is (x, 1, 1); flatten the workgroup and compute the 2D index from LocalInvocationIndex".into()],
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::rules::testutil::{messages, shader, Expect};

    /// The SG0704 messages of `src` validated for `target`.
    fn restrictions(src: &str, target: &str) -> Vec<String> {
        messages(src, target, "SG0704")
    }

    /// A compute module whose entry point lists `%lane`, a variable decorated `builtin`, with
    /// `LocalSize x y z`.
    fn with_builtin(builtin: &str, size: &str) -> String {
        format!(
            "OpCapability Shader\nOpCapability GroupNonUniform\nOpMemoryModel Logical GLSL450\n\
OpEntryPoint GLCompute %main \"main\" %lane\nOpExecutionMode %main LocalSize {size}\n\
OpDecorate %lane BuiltIn {builtin}\n\
%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%uint = OpTypeInt 32 0\n\
%ptr = OpTypePointer Input %uint\n%lane = OpVariable %ptr Input\n\
%main = OpFunction %void None %fn\n%entry = OpLabel\n%l = OpLoad %uint %lane\nOpReturn\nOpFunctionEnd\n"
        )
    }

    #[test]
    fn lane_id_in_a_multi_dimensional_workgroup() {
        for b in ["SubgroupLocalInvocationId", "SubgroupId"] {
            let flat = with_builtin(b, "64 1 1");
            let square = with_builtin(b, "8 8 1");
            let deep = with_builtin(b, "4 1 2");
            assert!(restrictions(&flat, "naga").is_empty(), "{b} in 64x1x1");
            for src in [&square, &deep] {
                let found = restrictions(src, "naga");
                assert_eq!(found.len(), 1, "{b}: {found:?}");
                assert!(found[0].contains("more than one dimension"), "{found:?}");
                // Only the naga consumer refuses it.
                crate::rules::testutil::check_target(
                    src,
                    "vulkan1.1",
                    Some("vulkan1.1"),
                    Expect::Lacks(&["SG0704"]),
                );
            }
        }
        // SubgroupSize is fine in any workgroup shape.
        assert!(restrictions(&with_builtin("SubgroupSize", "8 8 1"), "naga").is_empty());
    }

    /// A module with one entry point of `model` (and what that stage needs) whose interface
    /// lists a `builtin` variable.
    fn stage_with(model: &str, caps: &str, modes: &str, builtin: &str) -> String {
        format!(
            "OpCapability Shader\n{caps}OpCapability GroupNonUniform\nOpMemoryModel Logical GLSL450\n\
OpEntryPoint {model} %main \"main\" %b\n{modes}OpDecorate %b BuiltIn {builtin}\n\
%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%uint = OpTypeInt 32 0\n\
%ptr = OpTypePointer Input %uint\n%b = OpVariable %ptr Input\n\
%main = OpFunction %void None %fn\n%entry = OpLabel\n%l = OpLoad %uint %b\nOpReturn\nOpFunctionEnd\n"
        )
    }

    #[test]
    fn stages_naga_does_not_read() {
        let geom = stage_with(
            "Geometry",
            "OpCapability Geometry\n",
            "OpExecutionMode %main Triangles\nOpExecutionMode %main OutputTriangleStrip\nOpExecutionMode %main OutputVertices 3\nOpExecutionMode %main Invocations 1\n",
            "SubgroupSize",
        );
        let found = restrictions(&geom, "naga");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("Geometry stage"), "{found:?}");
        let tesc = stage_with(
            "TessellationControl",
            "OpCapability Tessellation\n",
            "OpExecutionMode %main OutputVertices 3\n",
            "SubgroupSize",
        );
        let found = restrictions(&tesc, "naga");
        assert!(
            found
                .iter()
                .any(|m| m.contains("TessellationControl stage")),
            "{found:?}"
        );
        assert!(restrictions(&geom, "lavapipe").is_empty());
        let frag = stage_with(
            "Fragment",
            "",
            "OpExecutionMode %main OriginUpperLeft\n",
            "SubgroupSize",
        );
        assert!(restrictions(&frag, "naga").is_empty());
    }

    #[test]
    fn subgroup_builtins_per_stage() {
        let vert = |b| stage_with("Vertex", "", "", b);
        for b in ["SubgroupSize", "SubgroupLocalInvocationId", "SubgroupId"] {
            let found = restrictions(&vert(b), "naga");
            assert_eq!(found.len(), 1, "{b}: {found:?}");
            assert!(found[0].contains("in this stage"), "{found:?}");
        }
        let frag = |b| stage_with("Fragment", "", "OpExecutionMode %main OriginUpperLeft\n", b);
        assert!(restrictions(&frag("SubgroupLocalInvocationId"), "naga").is_empty());
        assert_eq!(restrictions(&frag("NumSubgroups"), "naga").len(), 1);
    }

    #[test]
    fn float_class_tests() {
        let src = shader(
            "",
            "%n = OpIsNan %bool %float_1\n%i = OpIsInf %bool %float_1\n%f = OpIsFinite %bool %float_1",
        );
        let found = restrictions(&src, "naga");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].contains("OpIsNan") && found[1].contains("OpIsInf"),
            "{found:?}"
        );
        assert!(restrictions(&src, "vulkan1.1").is_empty());
    }

    #[test]
    fn resizing_bitcasts_are_left_to_naga() {
        let src = shader(
            "OpCapability Float64",
            "%d = OpBitcast %double %v2uint_c\n%w = OpBitcast %v2uint %d",
        )
        .replace(
            "%arr = OpTypeArray %uint %uint_2\n",
            "%arr = OpTypeArray %uint %uint_2\n%double = OpTypeFloat 64\n%v2uint_c = OpConstantComposite %v2uint %uint_1 %uint_0\n",
        );
        assert!(restrictions(&src, "naga").is_empty());
    }
}
