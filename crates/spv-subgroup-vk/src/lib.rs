//! A small Vulkan runner (compute, and a fragment path) for the execution tests and the GPU benchmark.
//!
//! [`Runner::new`] loads the Vulkan loader at run time (no link-time dependency), picks a device
//! (the first, or the first whose name contains `SPV_SUBGROUP_VK_DEVICE`), and creates a logical
//! device with every feature and extension a subgroup test shader may need that the device has:
//! 64/16/8-bit arithmetic types, 8/16-bit storage, subgroup extended types, subgroup size control,
//! `VK_EXT_shader_subgroup_vote`/`ballot` and `VK_NV_shader_subgroup_partitioned`.
//! [`Runner::pipeline`] turns SPIR-V words into a compute pipeline (a failure carries the `VkResult`),
//! [`Runner::run`] binds storage buffers, dispatches, waits with a timeout and reads the buffers back,
//! and [`Runner::time`] does the same with timestamp queries around each of several dispatches.
//! [`Runner::graphics_pipeline`] and [`Runner::draw`] (module [`graphics`]) do the same for a vertex
//! and a fragment shader drawn into one color attachment, with the same storage buffers, descriptor
//! set and read-back: fragment shaders are where subgroups are least like compute (quads, helper
//! invocations, partial subgroups at a primitive's edges).
//!
//! This crate is the only one of the workspace that uses `unsafe`: every such block is a Vulkan call
//! or a copy to or from mapped device memory whose size was checked just before.
#![deny(missing_docs)]

use std::cell::Cell;
use std::time::Duration;

use ash::vk;

mod buffers;
mod compute;
mod device;
pub mod graphics;

pub(crate) use buffers::Resources;
pub(crate) use compute::specialization;
pub use compute::PipelineOptions;
pub use device::{DeviceInfo, Features};
pub use graphics::{Draw, GraphicsOptions};

/// The device extensions of interest: enabled when present, and listed in [`DeviceInfo`].
pub const EXTENSIONS_OF_INTEREST: &[&str] = &[
    "VK_EXT_shader_subgroup_vote",
    "VK_EXT_shader_subgroup_ballot",
    "VK_NV_shader_subgroup_partitioned",
    "VK_EXT_subgroup_size_control",
    "VK_KHR_shader_subgroup_extended_types",
    "VK_KHR_8bit_storage",
    "VK_KHR_16bit_storage",
    "VK_KHR_shader_float16_int8",
    "VK_KHR_shader_maximal_reconvergence",
    "VK_KHR_shader_subgroup_uniform_control_flow",
    "VK_KHR_shader_subgroup_rotate",
    "VK_KHR_shader_quad_control",
];

/// The environment variable that chooses a device by a substring of its name.
pub const DEVICE_ENV: &str = "SPV_SUBGROUP_VK_DEVICE";

/// Everything that can go wrong; no function of this crate panics on driver or input errors.
#[derive(Debug, thiserror::Error)]
pub enum VkError {
    /// The Vulkan loader library could not be loaded.
    #[error("cannot load the Vulkan loader (libvulkan.so.1): {0}; install libvulkan1 and a driver (e.g. mesa-vulkan-drivers)")]
    Load(String),
    /// A Vulkan call returned an error.
    #[error("{call} failed: {result:?}")]
    Call {
        /// The Vulkan function.
        call: &'static str,
        /// What it returned.
        result: vk::Result,
    },
    /// No device matched.
    #[error("no Vulkan device{}; devices: [{}]", filter.as_ref().map(|f| format!(" whose name contains `{f}`")).unwrap_or_default(), available.join(", "))]
    NoDevice {
        /// The name filter, if any.
        filter: Option<String>,
        /// The names of the devices found.
        available: Vec<String>,
    },
    /// The device is older than Vulkan 1.1 or has no compute queue.
    #[error("device `{0}` cannot run the tests: {1}")]
    Unsuitable(String, String),
    /// `vkCreateComputePipelines` or `vkCreateGraphicsPipelines` (or a part: shader module,
    /// layouts, render pass) failed.
    #[error("creating the pipeline failed: {result:?} ({stage})")]
    Pipeline {
        /// What was being created.
        stage: &'static str,
        /// What the driver returned.
        result: vk::Result,
    },
    /// The request does not fit the pipeline or the device.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The dispatch did not finish in time; the device is no longer used after this.
    #[error("the dispatch did not finish within {0:?} (a shader that never ends?); this runner is now unusable")]
    Timeout(Duration),
    /// An earlier timeout or device loss made the runner unusable.
    #[error("the runner is unusable after an earlier timeout or device loss")]
    Poisoned,
}

fn call(call: &'static str) -> impl Fn(vk::Result) -> VkError {
    move |result| VkError::Call { call, result }
}

/// A compute pipeline ([`Runner::pipeline`]) or a graphics one ([`Runner::graphics_pipeline`]);
/// it cannot outlive its [`Runner`].
#[derive(Debug)]
pub struct Pipeline<'r> {
    runner: &'r Runner,
    modules: Vec<vk::ShaderModule>,
    set_layout: vk::DescriptorSetLayout,
    layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    /// Null for a compute pipeline.
    render_pass: vk::RenderPass,
    /// Whether the render pass has a color attachment (never for a compute pipeline).
    color_attachment: bool,
    bind_point: vk::PipelineBindPoint,
    buffers: u32,
}

impl Drop for Pipeline<'_> {
    fn drop(&mut self) {
        if self.runner.poisoned.get() {
            return;
        }
        let d = &self.runner.device;
        // SAFETY: the handles were created by this device (or are null, which every destroy
        // function accepts) and no submitted work uses them (every run waits for its fence).
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_render_pass(self.render_pass, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            for &m in &self.modules {
                d.destroy_shader_module(m, None);
            }
        }
    }
}

/// The Vulkan instance and device the tests run on.
pub struct Runner {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    queue: vk::Queue,
    command_pool: vk::CommandPool,
    memory: vk::PhysicalDeviceMemoryProperties,
    info: DeviceInfo,
    poisoned: Cell<bool>,
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runner")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::subgroup_op_names;

    #[test]
    fn op_names_cover_partitioned() {
        let names = subgroup_op_names(
            vk::SubgroupFeatureFlags::VOTE | vk::SubgroupFeatureFlags::PARTITIONED_NV,
        );
        assert_eq!(names, ["vote", "partitioned_nv"]);
    }

    #[test]
    fn bad_words_are_an_error_not_a_panic() {
        // Needs a device; lavapipe is installed where the tests run.
        let r = Runner::new().expect("a Vulkan device (install mesa-vulkan-drivers)");
        assert!(matches!(
            r.pipeline(&[1, 2, 3], &PipelineOptions::default()),
            Err(VkError::Invalid(_))
        ));
        // A module with the magic but garbage after it fails in the driver or is rejected: no panic.
        let _ = r.info().summary();
    }
}
