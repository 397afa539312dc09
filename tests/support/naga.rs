//! Runs a lowered module through naga: its SPIR-V front end, its validator (all capabilities)
//! and its WGSL, MSL and HLSL back ends, as a toolchain embedding our output would.

use ::naga::valid::{Capabilities, ValidationFlags, Validator};

/// Runs one stage, turning a naga panic (a naga bug) into an error of that stage.
fn stage<T>(name: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| format!("{name}: {e}")),
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
            Err(format!(
                "{name}: naga panicked: {}",
                msg.unwrap_or_default()
            ))
        }
    }
}

/// Runs one lowered module through naga; `Err` names the stage that refused it. With `no_msl`
/// (the module uses doubles, which Metal lacks) the MSL back end must refuse it instead.
pub fn through_naga(words: &[u32], no_msl: bool) -> Result<(), String> {
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let opts = naga::front::spv::Options {
        adjust_coordinate_space: false,
        ..Default::default()
    };
    let module = stage("spv front end", || {
        naga::front::spv::parse_u8_slice(&bytes, &opts).map_err(|e| format!("{e:?}"))
    })?;
    let info = stage("validator", || {
        Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .map_err(|e| format!("{:?}", e.into_inner()))
    })?;
    stage("wgsl", || {
        naga::back::wgsl::write_string(&module, &info, naga::back::wgsl::WriterFlags::empty())
            .map_err(|e| format!("{e:?}"))
    })?;
    let msl = stage("msl", || {
        let msl_opts = naga::back::msl::Options {
            lang_version: (2, 4),
            ..Default::default()
        };
        naga::back::msl::write_string(
            &module,
            &info,
            &msl_opts,
            &naga::back::msl::PipelineOptions::default(),
        )
        .map_err(|e| format!("{e:?}"))
    });
    match (msl, no_msl) {
        (Ok(_), false) | (Err(_), true) => {}
        (Err(e), false) => return Err(e),
        (Ok(_), true) => return Err("msl: expected Metal to refuse doubles".into()),
    }
    stage("hlsl", || {
        let hlsl_opts = naga::back::hlsl::Options {
            shader_model: naga::back::hlsl::ShaderModel::V6_0,
            ..Default::default()
        };
        let mut hlsl = String::new();
        naga::back::hlsl::Writer::new(
            &mut hlsl,
            &hlsl_opts,
            &naga::back::hlsl::PipelineOptions::default(),
        )
        .write(&module, &info, None)
        .map_err(|e| format!("{e:?}"))
    })?;
    Ok(())
}
