//! naga 30 as the judge of the `naga` target: its SPIR-V front end, its validator with the
//! capabilities a wgpu device with subgroups grants, and its WGSL writer.
//!
//! spirv-val and our validator accept modules that naga refuses (a stage naga has no IR for,
//! `SubgroupLocalInvocationId` in a workgroup of more than one dimension, an `OpIsNan` its WGSL
//! writer cannot spell), so for a target with `restrictions.naga_module` the verification
//! ([`crate::lower_and_verify`]) also runs the module through naga and exits 0 only when every stage
//! accepts it. Only with the `naga` cargo feature (on by default).
//!
//! **Capabilities.** What wgpu 30 grants a device with `Features::SUBGROUP`,
//! `SUBGROUP_BARRIER` and `SUBGROUP_VERTEX` (`wgpu-naga-bridge`'s
//! `features_to_naga_capabilities`: `SUBGROUP`, `SUBGROUP_BARRIER`, `SUBGROUP_VERTEX_STAGE`;
//! naga's validator then takes every subgroup operation set in the compute, fragment and vertex
//! stages), and every other capability. Vertex is granted because the lowering has a path for
//! it (no `SubgroupSize` or lane id where a vertex entry point reaches, `stages.rs`) and an input
//! with subgroup operations in a vertex shader is asking for `SUBGROUP_VERTEX`; the other
//! capabilities (`FLOAT64`, `SHADER_INT64`, ...) follow device features the input's own code asks
//! for and the lowering never adds, so granting them judges only what the lowering changes.

use naga::valid::{Capabilities, ValidationFlags, Validator};

/// naga's refusal of a module: the stage that refused it and naga's words.
#[derive(Clone, Debug)]
pub struct NagaRefusal {
    /// `front end`, `validator` or `WGSL writer`.
    pub stage: &'static str,
    /// naga's error with its causes, `: `-separated.
    pub message: String,
    /// The front end's error, when the front end refused the module (for blame).
    pub front_end: Option<naga::front::spv::Error>,
    /// Whether the validator refused a subgroup built-in in a multi-dimensional workgroup.
    pub multi_dimensional_subgroup_builtin: bool,
}

impl std::fmt::Display for NagaRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "naga 30's {} refuses it: {}", self.stage, self.message)
    }
}

/// A `fmt::Write` that keeps nothing: only whether the WGSL writer can write the module counts.
struct Discard;

impl std::fmt::Write for Discard {
    fn write_str(&mut self, _: &str) -> std::fmt::Result {
        Ok(())
    }
}

/// The capabilities [`judge`] validates with (see the module doc).
pub fn capabilities() -> Capabilities {
    Capabilities::all()
}

/// An error and its `source()` chain on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}

/// Runs `f`, turning a panic inside naga (a naga bug) into a refusal by `stage`.
fn guarded<T>(
    stage: &'static str,
    f: impl FnOnce() -> Result<T, NagaRefusal>,
) -> Result<T, NagaRefusal> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Err(NagaRefusal {
                stage,
                message: format!("naga panicked: {why}"),
                front_end: None,
                multi_dimensional_subgroup_builtin: false,
            })
        }
    }
}

/// Runs `words` through naga's front end, validator and WGSL writer.
pub fn judge(words: &[u32]) -> Result<(), NagaRefusal> {
    // The words go to the front end as they are (no byte copy), and the WGSL text to a sink that
    // keeps none of it: naga's IR is the only large thing held.
    let module = guarded("front end", || {
        let options = naga::front::spv::Options::default();
        naga::front::spv::Frontend::new(words.iter().copied(), &options)
            .parse()
            .map_err(|e| NagaRefusal {
                stage: "front end",
                message: chain(&e),
                front_end: Some(e),
                multi_dimensional_subgroup_builtin: false,
            })
    })?;
    let info = guarded("validator", || {
        Validator::new(ValidationFlags::all(), capabilities())
            .validate(&module)
            .map_err(|e| {
                let inner = e.into_inner();
                let message = chain(&inner);
                NagaRefusal {
                    stage: "validator",
                    multi_dimensional_subgroup_builtin: message
                        .contains("Workgroup size is multi dimensional"),
                    message,
                    front_end: None,
                }
            })
    })?;
    guarded("WGSL writer", || {
        naga::back::wgsl::Writer::new(Discard, naga::back::wgsl::WriterFlags::empty())
            .write(&module, &info)
            .map_err(|e| NagaRefusal {
                stage: "WGSL writer",
                message: chain(&e),
                front_end: None,
                multi_dimensional_subgroup_builtin: false,
            })
    })?;
    Ok(())
}
