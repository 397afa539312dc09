//! The checks of the pass: what a module must be for the target before anything is rewritten
//! (its id bound, environment, execution modes and version), and what the output must be (its
//! id bound). Both entry points ask them through [`super::Pass`] and the entry points in `entry`.

use rspirv::dr::{Module, Operand};

use crate::LowerError;

/// The largest id bound spirv-val accepts by default (SPIR-V's universal limit on result ids),
/// the validator's (which reports a larger one as SG0005).
/// An input above it is refused (it could not be valid output either), and an output that
/// would grow past it is refused instead of written.
pub use spv_subgroup_validate::MAX_ID_BOUND;

/// A refusal of the whole module for `target`, at `opcode` (an instruction's name or "the module
/// header") and `word_offset`, for lack of `missing`.
pub(crate) fn refuse(
    target: &crate::Target,
    opcode: &str,
    word_offset: usize,
    missing: String,
) -> LowerError {
    LowerError::Unsupported {
        result_id: 0,
        opcode: opcode.to_owned(),
        word_offset,
        target: target.name.clone(),
        missing,
    }
}

/// Refuses an input whose id bound is past [`MAX_ID_BOUND`]: its output would be past it too.
pub(crate) fn check_input_bound(bound: u32, target: &crate::Target) -> Result<(), LowerError> {
    if bound <= MAX_ID_BOUND {
        return Ok(());
    }
    Err(refuse(
        target,
        "the module header",
        3,
        format!(
            "an id bound of {bound} (the header's word 3); SPIR-V's universal limit, \
             which spirv-val enforces, is {MAX_ID_BOUND}"
        ),
    ))
}

/// Refuses a module whose memory model or `Kernel` capability the target's environment does not
/// allow: an OpenCL kernel "lowered for vulkan1.1" would be output Vulkan cannot consume.
pub(crate) fn check_environment(module: &Module, target: &crate::Target) -> Result<(), LowerError> {
    if !target.target_env.starts_with("vulkan") {
        return Ok(());
    }
    let refuse = |opcode: &str, missing: String| refuse(target, opcode, 0, missing);
    for c in &module.capabilities {
        if let Some(Operand::Capability(
            cap @ (spirv::Capability::Kernel | spirv::Capability::Addresses),
        )) = c.operands.first()
        {
            return Err(refuse(
                "OpCapability",
                format!(
                    "capability {cap:?}, which the target's environment ({}) does not allow \
                     (an OpenCL module cannot be lowered for a Vulkan target)",
                    target.target_env
                ),
            ));
        }
    }
    if let Some(mm) = &module.memory_model {
        if let [Operand::AddressingModel(a), Operand::MemoryModel(m)] = mm.operands.as_slice() {
            let addressing_ok = matches!(
                a,
                spirv::AddressingModel::Logical | spirv::AddressingModel::PhysicalStorageBuffer64
            );
            let memory_ok = matches!(m, spirv::MemoryModel::GLSL450 | spirv::MemoryModel::Vulkan);
            if !addressing_ok || !memory_ok {
                return Err(refuse(
                    "OpMemoryModel",
                    format!(
                        "the {a:?} addressing model and {m:?} memory model, which the target's \
                         environment ({}) does not allow",
                        target.target_env
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The execution modes that promise something of the device no rewrite can give
/// (`SPV_KHR_quad_control`: derivatives by quad, and full quads), with the capability that
/// declares them.
pub(crate) const DEVICE_MODES: [(spirv::ExecutionMode, spirv::Capability); 2] = [
    (
        spirv::ExecutionMode::QuadDerivativesKHR,
        spirv::Capability::QuadControlKHR,
    ),
    (
        spirv::ExecutionMode::RequireFullQuadsKHR,
        spirv::Capability::QuadControlKHR,
    ),
];

/// Refuses a module with one of [`DEVICE_MODES`] the target lacks the capability of: the quad
/// votes can be rewritten, but not the device's promise the mode asks for.
pub(crate) fn check_execution_modes(
    module: &Module,
    target: &crate::Target,
) -> Result<(), LowerError> {
    for inst in &module.execution_modes {
        let Some(Operand::ExecutionMode(mode)) = inst.operands.get(1) else {
            continue;
        };
        let Some(&(_, cap)) = DEVICE_MODES.iter().find(|(m, _)| m == mode) else {
            continue;
        };
        if !spv_subgroup_validate::fit::target_has(target, cap) {
            return Err(refuse(
                target,
                "OpExecutionMode",
                0,
                format!(
                    "the {cap:?} capability for the execution mode {mode:?}, a guarantee of the \
                     device that no rewrite gives"
                ),
            ));
        }
    }
    Ok(())
}

/// Refuses an output whose id bound would pass [`MAX_ID_BOUND`].
pub(crate) fn check_output_bound(bound: u32, target: &crate::Target) -> Result<(), LowerError> {
    // The input bound is at most 2^22, so counting new ids cannot wrap before memory runs out;
    // the output must still stay within the limit consumers are sure to accept.
    if bound <= MAX_ID_BOUND {
        return Ok(());
    }
    Err(refuse(
        target,
        "the module header",
        3,
        format!(
            "room for the new ids: the lowered module would need an id bound of {bound}, \
             past SPIR-V's universal limit of {MAX_ID_BOUND} that spirv-val enforces"
        ),
    ))
}

/// Refuses a module of a SPIR-V version past the target's (asked once something needs doing).
pub(crate) fn check_version(module: &Module, target: &crate::Target) -> Result<(), LowerError> {
    check_stages(module, target)?;
    if let Some(h) = module.header.as_ref() {
        let (major, minor) = h.version();
        if (major, minor) > target.spirv_version {
            return Err(refuse(
                target,
                "the module header",
                1,
                format!(
                    "SPIR-V {major}.{minor} (the target consumes up to {}.{})",
                    target.spirv_version.0, target.spirv_version.1
                ),
            ));
        }
    }
    Ok(())
}

pub(crate) use spv_subgroup_validate::fit::NAGA_STAGES;

/// For a naga-like consumer (`restrictions.naga_module`), an entry point of a stage naga's front
/// end has no IR for is refused before any rewrite, naming the stage (the rewrites would
/// otherwise fail on something that stage's code needs, such as the lane id, and say less).
fn check_stages(module: &Module, target: &crate::Target) -> Result<(), LowerError> {
    if !target.restrictions.naga_module {
        return Ok(());
    }
    for ep in &module.entry_points {
        if let Some(Operand::ExecutionModel(m)) = ep.operands.first() {
            if !NAGA_STAGES.contains(m) {
                return Err(refuse(target, "OpEntryPoint", 0, format!(
                        "the {m:?} stage (naga's SPIR-V front end reads vertex, fragment, compute, task and mesh shaders only)"
                    )));
            }
        }
    }
    Ok(())
}
