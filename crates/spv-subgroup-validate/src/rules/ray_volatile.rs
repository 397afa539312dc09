//! Subgroup built-ins read in ray-tracing stages (SG0610): volatile reads, as Vulkan asks.
//!
//! "If the VulkanMemoryModel capability is not declared, the Volatile decoration must be used on
//! any variable declaration that includes one of the SMIDNV, WarpIDNV, SubgroupSize,
//! SubgroupLocalInvocationId, SubgroupEqMask, SubgroupGeMask, SubgroupGtMask, SubgroupLeMask, or
//! SubgroupLtMask BuiltIn decorations when used in the ray generation, closest hit, miss,
//! intersection, or callable shaders" (VUID-StandaloneSpirv-VulkanMemoryModel-04678); with the
//! capability, "the OpLoad instruction must use the Volatile memory semantics when it accesses
//! into any variable" of those (04679). A ray stage may resume on another invocation, so a cached
//! read would be stale. spirv-val 2023.1 checks neither.
//!
//! "Used in" such a stage: the variable is in a ray entry point's interface (SPIR-V 1.4, which ray
//! tracing needs, lists every global a stage uses there), and for 04679 the load is in a function
//! a ray entry point reaches.

use std::collections::{HashMap, HashSet};

use spirv::{BuiltIn, Capability, Decoration, ExecutionModel as M, Op};

use crate::module::Cx;
use crate::rules::Rule;
use crate::sink::Sink;

/// The execution models the VUIDs name.
const RAY_MODELS: [M; 5] = [
    M::RayGenerationKHR,
    M::ClosestHitKHR,
    M::MissKHR,
    M::IntersectionKHR,
    M::CallableKHR,
];

/// The built-ins the VUIDs name.
const BUILTINS: [BuiltIn; 9] = [
    BuiltIn::SMIDNV,
    BuiltIn::WarpIDNV,
    BuiltIn::SubgroupSize,
    BuiltIn::SubgroupLocalInvocationId,
    BuiltIn::SubgroupEqMask,
    BuiltIn::SubgroupGeMask,
    BuiltIn::SubgroupGtMask,
    BuiltIn::SubgroupLeMask,
    BuiltIn::SubgroupLtMask,
];

/// SG0610 over the module (Vulkan environments only).
pub(crate) fn check_module(cx: &Cx<'_>, out: &mut Sink) {
    if !cx.vulkan {
        return;
    }
    let m = &cx.m;
    let n = m.insts.len();
    let is = |i: usize, op: Op| m.opcode(i) == op as u32;
    // Ray entry points: their functions, and the variables their interfaces list.
    let (mut roots, mut interface) = (Vec::new(), HashSet::new());
    for i in (0..n).filter(|&i| is(i, Op::EntryPoint)) {
        let ray = m
            .word(i, 1)
            .is_some_and(|w| RAY_MODELS.iter().any(|&r| r as u32 == w));
        if !ray {
            continue;
        }
        roots.extend(m.word(i, 2));
        // The name is a nul-terminated string from word 3; the interface follows it.
        let mut k = 3;
        while m
            .word(i, k)
            .is_some_and(|w| w.to_le_bytes().iter().all(|&b| b != 0))
        {
            k += 1;
        }
        interface.extend((k + 1..m.wc(i)).filter_map(|k| m.word(i, k)));
    }
    if roots.is_empty() {
        return;
    }
    // The subgroup built-in variables those stages use, and which are decorated Volatile.
    let (mut vars, mut volatile) = (Vec::new(), HashSet::new());
    for i in (0..n).filter(|&i| is(i, Op::Decorate)) {
        let (Some(target), Some(dec)) = (m.word(i, 1), m.word(i, 2)) else {
            continue;
        };
        if dec == Decoration::Volatile as u32 {
            volatile.insert(target);
        } else if dec == Decoration::BuiltIn as u32
            && interface.contains(&target)
            && m.word(i, 3)
                .is_some_and(|b| BUILTINS.iter().any(|&x| x as u32 == b))
        {
            vars.push(target);
        }
    }
    if vars.is_empty() {
        return;
    }
    if !m.has_cap(Capability::VulkanMemoryModel) {
        for v in vars.into_iter().filter(|v| !volatile.contains(v)) {
            let at = m.def_inst(v).unwrap_or(0);
            out.emit(
                cx,
                Rule::RayBuiltinVolatile,
                at,
                format!(
                    "{}: a subgroup built-in a ray-tracing stage reads is not decorated Volatile (the module does not declare VulkanMemoryModel)",
                    m.id_text(v)
                ),
                vec![],
            );
        }
        return;
    }
    // With the Vulkan memory model: every load of them in code a ray stage reaches is volatile.
    let reached = reachable(cx, &roots);
    for i in (0..n).filter(|&i| is(i, Op::Load)) {
        let Some(ptr) = m.word(i, 3) else { continue };
        if !vars.contains(&m.root_pointer(ptr)) || !reached.contains(&m.func_of(i)) {
            continue;
        }
        let volatile_load = m.word(i, 4).is_some_and(|a| a & 1 != 0);
        if !volatile_load {
            out.emit(
                cx,
                Rule::RayBuiltinVolatile,
                i,
                format!(
                    "the load of {} in code a ray-tracing stage runs lacks the Volatile memory operand (the module declares VulkanMemoryModel: VUID-StandaloneSpirv-VulkanMemoryModel-04679)",
                    m.id_text(m.root_pointer(ptr))
                ),
                vec![],
            );
        }
    }
}

/// The functions `roots` reach through `OpFunctionCall`.
fn reachable(cx: &Cx<'_>, roots: &[u32]) -> HashSet<u32> {
    let m = &cx.m;
    let mut calls: HashMap<u32, Vec<u32>> = HashMap::new();
    for i in 0..m.insts.len() {
        if m.opcode(i) == Op::FunctionCall as u32 {
            if let Some(callee) = m.word(i, 3) {
                calls.entry(m.func_of(i)).or_default().push(callee);
            }
        }
    }
    let mut seen: HashSet<u32> = roots.iter().copied().collect();
    let mut todo = roots.to_vec();
    while let Some(f) = todo.pop() {
        for &g in calls.get(&f).into_iter().flatten() {
            if seen.insert(g) {
                todo.push(g);
            }
        }
    }
    seen
}
