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
use std::ffi::{CStr, CString};
use std::time::Duration;

use ash::vk;

pub mod graphics;

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

/// The map entries and data of 32-bit specialization constants `(constant_id, value)`.
fn specialization(consts: &[(u32, u32)]) -> (Vec<vk::SpecializationMapEntry>, Vec<u8>) {
    let entries = consts
        .iter()
        .enumerate()
        .map(|(i, (id, _))| vk::SpecializationMapEntry {
            constant_id: *id,
            offset: (i * 4) as u32,
            size: 4,
        })
        .collect();
    let data = consts.iter().flat_map(|(_, v)| v.to_le_bytes()).collect();
    (entries, data)
}

/// Optional device features that matter to subgroup shaders, as the device reports them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// `shaderInt64`.
    pub int64: bool,
    /// `shaderFloat64`.
    pub float64: bool,
    /// `shaderInt16`.
    pub int16: bool,
    /// `shaderInt8`.
    pub int8: bool,
    /// `shaderFloat16`.
    pub float16: bool,
    /// `storageBuffer8BitAccess`.
    pub storage8: bool,
    /// `storageBuffer16BitAccess`.
    pub storage16: bool,
    /// `shaderSubgroupExtendedTypes` (8/16/64-bit operands of subgroup ops).
    pub subgroup_extended_types: bool,
    /// `subgroupSizeControl`.
    pub subgroup_size_control: bool,
    /// `computeFullSubgroups`.
    pub compute_full_subgroups: bool,
    /// `shaderSubgroupRotate` (`VK_KHR_shader_subgroup_rotate`).
    pub subgroup_rotate: bool,
    /// `shaderSubgroupRotateClustered`.
    pub subgroup_rotate_clustered: bool,
    /// `shaderQuadControl` (`VK_KHR_shader_quad_control`).
    pub quad_control: bool,
    /// `fragmentStoresAndAtomics` (storage buffer writes from fragment shaders).
    pub fragment_stores_and_atomics: bool,
}

/// What the chosen device is and what it supports.
#[derive(Clone, Debug, Default)]
pub struct DeviceInfo {
    /// `deviceName`.
    pub name: String,
    /// `driverName` and `driverInfo` (e.g. `llvmpipe`, `Mesa 22.3.6`), when the device reports them.
    pub driver: String,
    /// Vendor id (0x10de NVIDIA, 0x10005 Mesa).
    pub vendor_id: u32,
    /// Vulkan version of the device, `(major, minor, patch)`.
    pub api_version: (u32, u32, u32),
    /// The default subgroup size.
    pub subgroup_size: u32,
    /// The smallest subgroup size selectable with subgroup size control (else the default).
    pub min_subgroup_size: u32,
    /// The largest subgroup size selectable with subgroup size control (else the default).
    pub max_subgroup_size: u32,
    /// Whether a compute pipeline may require a subgroup size.
    pub required_subgroup_size_compute: bool,
    /// Supported subgroup operation classes (`basic`, `vote`, ..., `partitioned_nv`).
    pub subgroup_ops: Vec<&'static str>,
    /// Stages that support subgroup operations (`compute`, `fragment`, ...).
    pub subgroup_stages: Vec<&'static str>,
    /// The [`EXTENSIONS_OF_INTEREST`] the device has.
    pub extensions: Vec<String>,
    /// Optional features the device has (all of them are enabled).
    pub features: Features,
    /// Whether the compute queue supports timestamps.
    pub timestamps: bool,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f64,
    /// Whether the queue the runner uses also does graphics ([`Runner::draw`] needs it).
    pub graphics: bool,
    /// `maxFramebufferWidth` and `maxFramebufferHeight`.
    pub max_framebuffer: (u32, u32),
}

impl DeviceInfo {
    /// Whether the device has an extension (and it was enabled).
    pub fn has_extension(&self, name: &str) -> bool {
        self.extensions.iter().any(|e| e == name)
    }

    /// Whether the device supports a subgroup operation class by the name used in `subgroup_ops`.
    pub fn has_subgroup_op(&self, op: &str) -> bool {
        self.subgroup_ops.contains(&op)
    }

    /// A multi-line human summary.
    pub fn summary(&self) -> String {
        let (a, b, c) = self.api_version;
        format!(
            "device: {} ({}), Vulkan {a}.{b}.{c}, vendor 0x{:x}\n\
             subgroup size: {} (range {}..={}, required size for compute: {})\n\
             subgroup ops: {}\nsubgroup stages: {}\nextensions: {}\nfeatures: {:?}\ntimestamps: {} ({} ns/tick)",
            self.name,
            self.driver,
            self.vendor_id,
            self.subgroup_size,
            self.min_subgroup_size,
            self.max_subgroup_size,
            self.required_subgroup_size_compute,
            self.subgroup_ops.join(" "),
            self.subgroup_stages.join(" "),
            self.extensions.join(" "),
            self.features,
            self.timestamps,
            self.timestamp_period_ns
        )
    }
}

/// How to build a compute pipeline.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    /// The entry point name.
    pub entry: String,
    /// How many storage buffers the shader uses: bindings `0..buffers` of descriptor set 0.
    pub buffers: u32,
    /// Specialization constants `(constant_id, 32-bit value)`, e.g. a `local_size_x_id`.
    pub spec_constants: Vec<(u32, u32)>,
    /// Require this subgroup size (needs subgroup size control and a size in the device's range).
    pub required_subgroup_size: Option<u32>,
    /// Require full subgroups (`REQUIRE_FULL_SUBGROUPS`; the local size x must be a multiple of the size).
    pub full_subgroups: bool,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            entry: "main".to_owned(),
            buffers: 1,
            spec_constants: Vec::new(),
            required_subgroup_size: None,
            full_subgroups: false,
        }
    }
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

fn cstr_to_string(r: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    r.map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn subgroup_op_names(f: vk::SubgroupFeatureFlags) -> Vec<&'static str> {
    let table = [
        (vk::SubgroupFeatureFlags::BASIC, "basic"),
        (vk::SubgroupFeatureFlags::VOTE, "vote"),
        (vk::SubgroupFeatureFlags::ARITHMETIC, "arithmetic"),
        (vk::SubgroupFeatureFlags::BALLOT, "ballot"),
        (vk::SubgroupFeatureFlags::SHUFFLE, "shuffle"),
        (
            vk::SubgroupFeatureFlags::SHUFFLE_RELATIVE,
            "shuffle_relative",
        ),
        (vk::SubgroupFeatureFlags::CLUSTERED, "clustered"),
        (vk::SubgroupFeatureFlags::QUAD, "quad"),
        (vk::SubgroupFeatureFlags::PARTITIONED_NV, "partitioned_nv"),
    ];
    table
        .iter()
        .filter(|(b, _)| f.contains(*b))
        .map(|(_, n)| *n)
        .collect()
}

fn stage_names(f: vk::ShaderStageFlags) -> Vec<&'static str> {
    let table = [
        (vk::ShaderStageFlags::VERTEX, "vertex"),
        (vk::ShaderStageFlags::TESSELLATION_CONTROL, "tess_control"),
        (vk::ShaderStageFlags::TESSELLATION_EVALUATION, "tess_eval"),
        (vk::ShaderStageFlags::GEOMETRY, "geometry"),
        (vk::ShaderStageFlags::FRAGMENT, "fragment"),
        (vk::ShaderStageFlags::COMPUTE, "compute"),
        (vk::ShaderStageFlags::TASK_EXT, "task"),
        (vk::ShaderStageFlags::MESH_EXT, "mesh"),
    ];
    table
        .iter()
        .filter(|(b, _)| f.contains(*b))
        .map(|(_, n)| *n)
        .collect()
}

impl Runner {
    /// Loads Vulkan and opens the device named by `SPV_SUBGROUP_VK_DEVICE` (a substring), else the first.
    pub fn new() -> Result<Runner, VkError> {
        let filter = std::env::var(DEVICE_ENV).ok().filter(|s| !s.is_empty());
        Runner::with_device(filter.as_deref())
    }

    /// Loads Vulkan and opens the first device whose name contains `filter` (any device if `None`).
    pub fn with_device(filter: Option<&str>) -> Result<Runner, VkError> {
        // SAFETY: loading the system's Vulkan loader; its initialisers are trusted like any driver.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| VkError::Load(e.to_string()))?;
        // SAFETY: plain Vulkan calls on a loaded entry.
        let loader_version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(call("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        let api = if loader_version >= vk::API_VERSION_1_3 {
            vk::API_VERSION_1_3
        } else {
            loader_version
        };
        let app_name = c"spv-subgroup-vk";
        let app = vk::ApplicationInfo::default()
            .application_name(app_name)
            .engine_name(app_name)
            .api_version(api);
        let ici = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: valid create info.
        let instance =
            unsafe { entry.create_instance(&ici, None) }.map_err(call("vkCreateInstance"))?;
        match Runner::open(entry, instance.clone(), filter) {
            Ok(r) => Ok(r),
            Err(e) => {
                // SAFETY: nothing created from the instance survives a failed open.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn open(
        entry: ash::Entry,
        instance: ash::Instance,
        filter: Option<&str>,
    ) -> Result<Runner, VkError> {
        // SAFETY: plain queries on a live instance.
        let pdevs = unsafe { instance.enumerate_physical_devices() }
            .map_err(call("vkEnumeratePhysicalDevices"))?;
        let mut names = Vec::new();
        let mut chosen = None;
        for &pd in &pdevs {
            // SAFETY: pd comes from this instance.
            let props = unsafe { instance.get_physical_device_properties(pd) };
            let name = cstr_to_string(props.device_name_as_c_str());
            if chosen.is_none() && filter.is_none_or(|f| name.contains(f)) {
                chosen = Some((pd, props));
            }
            names.push(name);
        }
        let (pdev, props) = chosen.ok_or_else(|| VkError::NoDevice {
            filter: filter.map(str::to_owned),
            available: names,
        })?;
        let name = cstr_to_string(props.device_name_as_c_str());
        let api = props.api_version;
        if api < vk::API_VERSION_1_1 {
            return Err(VkError::Unsuitable(
                name,
                "Vulkan 1.1 or later is needed for subgroup operations".into(),
            ));
        }
        let api_version = (
            vk::api_version_major(api),
            vk::api_version_minor(api),
            vk::api_version_patch(api),
        );

        // Extensions.
        // SAFETY: plain query.
        let exts = unsafe { instance.enumerate_device_extension_properties(pdev) }
            .map_err(call("vkEnumerateDeviceExtensionProperties"))?;
        let ext_names: Vec<String> = exts
            .iter()
            .map(|e| cstr_to_string(e.extension_name_as_c_str()))
            .collect();
        let extensions: Vec<String> = EXTENSIONS_OF_INTEREST
            .iter()
            .filter(|e| ext_names.iter().any(|n| n == *e))
            .map(|e| (*e).to_owned())
            .collect();

        // Properties: subgroups, driver, subgroup size control.
        let mut sg = vk::PhysicalDeviceSubgroupProperties::default();
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut size_ctl = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
        let has_size_ctl = api >= vk::API_VERSION_1_3
            || extensions
                .iter()
                .any(|e| e == "VK_EXT_subgroup_size_control");
        let has_driver_props = api >= vk::API_VERSION_1_2;
        {
            let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut sg);
            if has_driver_props {
                p2 = p2.push_next(&mut driver);
            }
            if has_size_ctl {
                p2 = p2.push_next(&mut size_ctl);
            }
            // SAFETY: the chain holds structs that exist at this device's version / extensions.
            unsafe { instance.get_physical_device_properties2(pdev, &mut p2) };
        }
        let driver_text = if has_driver_props {
            format!(
                "{} {}",
                cstr_to_string(driver.driver_name_as_c_str()),
                cstr_to_string(driver.driver_info_as_c_str())
            )
        } else {
            String::new()
        };

        // Features: query, then enable what we use of what is there.
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let has12 = api >= vk::API_VERSION_1_2;
        let has13 = api >= vk::API_VERSION_1_3;
        let has_ext = |name: &str| extensions.iter().any(|e| e == name);
        let has_rotate = has_ext("VK_KHR_shader_subgroup_rotate");
        // Quad control needs maximal reconvergence (the extension's dependency).
        let has_quad =
            has_ext("VK_KHR_shader_quad_control") && has_ext("VK_KHR_shader_maximal_reconvergence");
        let mut f_rotate = vk::PhysicalDeviceShaderSubgroupRotateFeaturesKHR::default();
        let mut f_quad = vk::PhysicalDeviceShaderQuadControlFeaturesKHR::default();
        let mut f_reconverge = vk::PhysicalDeviceShaderMaximalReconvergenceFeaturesKHR::default();
        let core = {
            let mut f2 = vk::PhysicalDeviceFeatures2::default();
            if has12 {
                f2 = f2.push_next(&mut f11).push_next(&mut f12);
            }
            if has13 {
                f2 = f2.push_next(&mut f13);
            }
            if has_rotate {
                f2 = f2.push_next(&mut f_rotate);
            }
            if has_quad {
                f2 = f2.push_next(&mut f_quad).push_next(&mut f_reconverge);
            }
            // SAFETY: the chain matches the device version.
            unsafe { instance.get_physical_device_features2(pdev, &mut f2) };
            f2.features
        };
        let features = Features {
            int64: core.shader_int64 == vk::TRUE,
            float64: core.shader_float64 == vk::TRUE,
            int16: core.shader_int16 == vk::TRUE,
            int8: f12.shader_int8 == vk::TRUE,
            float16: f12.shader_float16 == vk::TRUE,
            storage8: f12.storage_buffer8_bit_access == vk::TRUE,
            storage16: f11.storage_buffer16_bit_access == vk::TRUE,
            subgroup_extended_types: f12.shader_subgroup_extended_types == vk::TRUE,
            subgroup_size_control: f13.subgroup_size_control == vk::TRUE,
            compute_full_subgroups: f13.compute_full_subgroups == vk::TRUE,
            subgroup_rotate: f_rotate.shader_subgroup_rotate == vk::TRUE,
            subgroup_rotate_clustered: f_rotate.shader_subgroup_rotate_clustered == vk::TRUE,
            quad_control: f_quad.shader_quad_control == vk::TRUE
                && f_reconverge.shader_maximal_reconvergence == vk::TRUE,
            fragment_stores_and_atomics: core.fragment_stores_and_atomics == vk::TRUE,
        };

        // Queue.
        // SAFETY: plain query.
        let families = unsafe { instance.get_physical_device_queue_family_properties(pdev) };
        // A family that does compute and graphics (for `draw`), else one that does compute.
        let both = vk::QueueFlags::COMPUTE | vk::QueueFlags::GRAPHICS;
        let (qfi, qf) = families
            .iter()
            .enumerate()
            .find(|(_, q)| q.queue_flags.contains(both))
            .or_else(|| {
                families
                    .iter()
                    .enumerate()
                    .find(|(_, q)| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            })
            .ok_or_else(|| VkError::Unsuitable(name.clone(), "no compute queue".into()))?;
        let qfi = u32::try_from(qfi).map_err(|_| VkError::Invalid("queue family index".into()))?;

        let en_core = vk::PhysicalDeviceFeatures {
            shader_int64: core.shader_int64,
            shader_float64: core.shader_float64,
            shader_int16: core.shader_int16,
            fragment_stores_and_atomics: core.fragment_stores_and_atomics,
            ..Default::default()
        };
        let mut e11 = vk::PhysicalDeviceVulkan11Features {
            storage_buffer16_bit_access: f11.storage_buffer16_bit_access,
            uniform_and_storage_buffer16_bit_access: f11.uniform_and_storage_buffer16_bit_access,
            ..Default::default()
        };
        let mut e12 = vk::PhysicalDeviceVulkan12Features {
            storage_buffer8_bit_access: f12.storage_buffer8_bit_access,
            uniform_and_storage_buffer8_bit_access: f12.uniform_and_storage_buffer8_bit_access,
            shader_int8: f12.shader_int8,
            shader_float16: f12.shader_float16,
            shader_subgroup_extended_types: f12.shader_subgroup_extended_types,
            shader_buffer_int64_atomics: f12.shader_buffer_int64_atomics,
            vulkan_memory_model: f12.vulkan_memory_model,
            vulkan_memory_model_device_scope: f12.vulkan_memory_model_device_scope,
            ..Default::default()
        };
        let mut e13 = vk::PhysicalDeviceVulkan13Features {
            subgroup_size_control: f13.subgroup_size_control,
            compute_full_subgroups: f13.compute_full_subgroups,
            maintenance4: f13.maintenance4,
            ..Default::default()
        };
        let ext_c: Vec<CString> = extensions
            .iter()
            .filter_map(|e| CString::new(e.as_str()).ok())
            .collect();
        let ext_ptrs: Vec<*const std::ffi::c_char> = ext_c.iter().map(|c| c.as_ptr()).collect();
        let prio = [1.0f32];
        let qci = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(qfi)
            .queue_priorities(&prio)];
        let mut e_rotate = vk::PhysicalDeviceShaderSubgroupRotateFeaturesKHR {
            shader_subgroup_rotate: f_rotate.shader_subgroup_rotate,
            shader_subgroup_rotate_clustered: f_rotate.shader_subgroup_rotate_clustered,
            ..Default::default()
        };
        let mut e_quad = vk::PhysicalDeviceShaderQuadControlFeaturesKHR {
            shader_quad_control: vk::Bool32::from(features.quad_control),
            ..Default::default()
        };
        let mut e_reconverge = vk::PhysicalDeviceShaderMaximalReconvergenceFeaturesKHR {
            shader_maximal_reconvergence: vk::Bool32::from(features.quad_control),
            ..Default::default()
        };
        let mut ef2 = vk::PhysicalDeviceFeatures2::default().features(en_core);
        if has12 {
            ef2 = ef2.push_next(&mut e11).push_next(&mut e12);
        }
        if has13 {
            ef2 = ef2.push_next(&mut e13);
        }
        if has_rotate {
            ef2 = ef2.push_next(&mut e_rotate);
        }
        if has_quad {
            ef2 = ef2.push_next(&mut e_quad).push_next(&mut e_reconverge);
        }
        let dci = vk::DeviceCreateInfo::default()
            .queue_create_infos(&qci)
            .enabled_extension_names(&ext_ptrs)
            .push_next(&mut ef2);
        // SAFETY: every enabled feature was reported supported; every extension was listed.
        let device =
            unsafe { instance.create_device(pdev, &dci, None) }.map_err(call("vkCreateDevice"))?;
        // SAFETY: queue 0 of a family we created.
        let queue = unsafe { device.get_device_queue(qfi, 0) };
        let cpi = vk::CommandPoolCreateInfo::default()
            .queue_family_index(qfi)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create info.
        let command_pool = match unsafe { device.create_command_pool(&cpi, None) } {
            Ok(p) => p,
            Err(e) => {
                // SAFETY: the device has no children yet.
                unsafe { device.destroy_device(None) };
                return Err(call("vkCreateCommandPool")(e));
            }
        };
        // SAFETY: plain query.
        let memory = unsafe { instance.get_physical_device_memory_properties(pdev) };

        let (min_sg, max_sg, req_compute) = if has_size_ctl && features.subgroup_size_control {
            (
                size_ctl.min_subgroup_size,
                size_ctl.max_subgroup_size,
                size_ctl
                    .required_subgroup_size_stages
                    .contains(vk::ShaderStageFlags::COMPUTE),
            )
        } else {
            (sg.subgroup_size, sg.subgroup_size, false)
        };
        let info = DeviceInfo {
            name,
            driver: driver_text.trim().to_owned(),
            vendor_id: props.vendor_id,
            api_version,
            subgroup_size: sg.subgroup_size,
            min_subgroup_size: min_sg,
            max_subgroup_size: max_sg,
            required_subgroup_size_compute: req_compute,
            subgroup_ops: subgroup_op_names(sg.supported_operations),
            subgroup_stages: stage_names(sg.supported_stages),
            extensions,
            features,
            timestamps: qf.timestamp_valid_bits > 0 && props.limits.timestamp_period > 0.0,
            timestamp_period_ns: f64::from(props.limits.timestamp_period),
            graphics: qf.queue_flags.contains(vk::QueueFlags::GRAPHICS),
            max_framebuffer: (
                props.limits.max_framebuffer_width,
                props.limits.max_framebuffer_height,
            ),
        };
        Ok(Runner {
            _entry: entry,
            instance,
            device,
            queue,
            command_pool,
            memory,
            info,
            poisoned: Cell::new(false),
        })
    }

    /// What the device is and supports.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// Whether a timeout or device loss made this runner unusable (make a new one to go on; the old
    /// one leaks its device on purpose, since work may still run on it).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.get()
    }

    fn check_alive(&self) -> Result<(), VkError> {
        if self.poisoned.get() {
            Err(VkError::Poisoned)
        } else {
            Ok(())
        }
    }

    /// The parts every pipeline has: a shader module per stage (in order), a descriptor set layout
    /// of `buffers` storage buffers (bindings `0..buffers` of set 0) visible to `stages`, and the
    /// pipeline layout; the pipeline itself (and a render pass) is the caller's to add.
    pub(crate) fn pipeline_shell(
        &self,
        modules: &[&[u32]],
        buffers: u32,
        stages: vk::ShaderStageFlags,
        bind_point: vk::PipelineBindPoint,
    ) -> Result<Pipeline<'_>, VkError> {
        if modules.iter().any(|w| w.len() < 5 || w[0] != 0x0723_0203) {
            return Err(VkError::Invalid(
                "not a SPIR-V module (bad magic or too short)".into(),
            ));
        }
        let d = &self.device;
        // Every handle goes into `p` as soon as it exists, so its Drop frees it on any error.
        let mut p = Pipeline {
            runner: self,
            modules: Vec::new(),
            set_layout: vk::DescriptorSetLayout::null(),
            layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            render_pass: vk::RenderPass::null(),
            color_attachment: false,
            bind_point,
            buffers,
        };
        for words in modules {
            let smci = vk::ShaderModuleCreateInfo::default().code(words);
            // SAFETY: words is a whole number of words with the SPIR-V magic.
            let module = unsafe { d.create_shader_module(&smci, None) }.map_err(|result| {
                VkError::Pipeline {
                    stage: "vkCreateShaderModule",
                    result,
                }
            })?;
            p.modules.push(module);
        }
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = (0..buffers)
            .map(|b| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .descriptor_count(1)
                    .stage_flags(stages)
            })
            .collect();
        let dslci = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY: valid create info.
        p.set_layout =
            unsafe { d.create_descriptor_set_layout(&dslci, None) }.map_err(|result| {
                VkError::Pipeline {
                    stage: "vkCreateDescriptorSetLayout",
                    result,
                }
            })?;
        let layouts = [p.set_layout];
        let plci = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
        // SAFETY: valid create info.
        p.layout = unsafe { d.create_pipeline_layout(&plci, None) }.map_err(|result| {
            VkError::Pipeline {
                stage: "vkCreatePipelineLayout",
                result,
            }
        })?;
        Ok(p)
    }

    /// Creates a compute pipeline from SPIR-V words.
    pub fn pipeline(&self, words: &[u32], opts: &PipelineOptions) -> Result<Pipeline<'_>, VkError> {
        self.check_alive()?;
        let entry = CString::new(opts.entry.as_str())
            .map_err(|_| VkError::Invalid("entry point name has a NUL".into()))?;
        if let Some(size) = opts.required_subgroup_size {
            let i = &self.info;
            if !i.required_subgroup_size_compute
                || size < i.min_subgroup_size
                || size > i.max_subgroup_size
                || !size.is_power_of_two()
            {
                return Err(VkError::Invalid(format!(
                    "required subgroup size {size} unsupported (range {}..={}, compute: {})",
                    i.min_subgroup_size, i.max_subgroup_size, i.required_subgroup_size_compute
                )));
            }
        }
        let mut p = self.pipeline_shell(
            &[words],
            opts.buffers,
            vk::ShaderStageFlags::COMPUTE,
            vk::PipelineBindPoint::COMPUTE,
        )?;
        let module = p.modules[0];
        let d = &self.device;
        let (entries, data) = specialization(&opts.spec_constants);
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        let mut req = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(opts.required_subgroup_size.unwrap_or(0));
        let mut flags = vk::PipelineShaderStageCreateFlags::empty();
        if opts.full_subgroups {
            if !self.info.features.compute_full_subgroups {
                return Err(VkError::Invalid(
                    "the device lacks computeFullSubgroups".into(),
                ));
            }
            flags |= vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS;
        }
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(&entry)
            .flags(flags);
        if !entries.is_empty() {
            stage = stage.specialization_info(&spec);
        }
        if opts.required_subgroup_size.is_some() {
            stage = stage.push_next(&mut req);
        }
        let cpci = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(p.layout)];
        // SAFETY: valid create info; the module and layout are live.
        let made = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &cpci, None) };
        match made {
            Ok(v) => {
                p.pipeline = v.first().copied().unwrap_or_default();
                Ok(p)
            }
            Err((v, result)) => {
                for pl in v {
                    if pl != vk::Pipeline::null() {
                        // SAFETY: a pipeline this call created.
                        unsafe { d.destroy_pipeline(pl, None) };
                    }
                }
                Err(VkError::Pipeline {
                    stage: "vkCreateComputePipelines",
                    result,
                })
            }
        }
    }

    /// Uploads `buffers` (binding i = `buffers[i]`, 32-bit words), dispatches `groups` once,
    /// waits at most `timeout`, and reads every buffer back into `buffers`.
    pub fn run(
        &self,
        pipeline: &Pipeline<'_>,
        buffers: &mut [Vec<u32>],
        groups: [u32; 3],
        timeout: Duration,
    ) -> Result<(), VkError> {
        self.submit(pipeline, buffers, groups, 1, false, timeout)
            .map(|_| ())
    }

    /// Like [`Runner::run`] but dispatches `reps` times in one command buffer (each after the previous
    /// one finished: a barrier between), with timestamps around each; returns each dispatch's time in ns.
    pub fn time(
        &self,
        pipeline: &Pipeline<'_>,
        buffers: &mut [Vec<u32>],
        groups: [u32; 3],
        reps: u32,
        timeout: Duration,
    ) -> Result<Vec<f64>, VkError> {
        if !self.info.timestamps {
            return Err(VkError::Invalid(
                "the compute queue has no timestamps".into(),
            ));
        }
        self.submit(pipeline, buffers, groups, reps.max(1), true, timeout)
    }

    fn memory_type(&self, bits: u32) -> Option<u32> {
        let want = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let n = self.memory.memory_type_count as usize;
        let types = self.memory.memory_types.get(..n)?;
        let ok = |i: usize, f: vk::MemoryPropertyFlags| {
            bits & (1 << i) != 0 && types[i].property_flags.contains(f)
        };
        // Prefer device-local host-visible memory (resizable BAR); else any host-visible coherent.
        (0..n)
            .find(|&i| ok(i, want | vk::MemoryPropertyFlags::DEVICE_LOCAL))
            .or_else(|| (0..n).find(|&i| ok(i, want)))
            .map(|i| i as u32)
    }

    /// The start of every submission: checks that `p` is this runner's pipeline of `bind_point`
    /// with as many storage buffers as given, uploads `buffers` (host-visible, coherent),
    /// writes them into a descriptor set of `p`'s layout, and begins a one-time command buffer.
    /// Everything made is in the returned [`Resources`], freed when it drops.
    pub(crate) fn prepare(
        &self,
        p: &Pipeline<'_>,
        bind_point: vk::PipelineBindPoint,
        buffers: &[Vec<u32>],
    ) -> Result<Resources<'_>, VkError> {
        self.check_alive()?;
        if !std::ptr::eq(p.runner, self) {
            return Err(VkError::Invalid(
                "the pipeline belongs to another runner".into(),
            ));
        }
        if p.bind_point != bind_point {
            return Err(VkError::Invalid(format!(
                "a {:?} pipeline given where a {bind_point:?} one is needed",
                p.bind_point
            )));
        }
        if buffers.len() != p.buffers as usize {
            return Err(VkError::Invalid(format!(
                "the pipeline has {} storage buffers, {} given",
                p.buffers,
                buffers.len()
            )));
        }
        let mut res = Resources {
            runner: self,
            buffers: Vec::new(),
            pool: vk::DescriptorPool::null(),
            set: vk::DescriptorSet::null(),
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            queries: vk::QueryPool::null(),
            image: vk::Image::null(),
            image_memory: vk::DeviceMemory::null(),
            view: vk::ImageView::null(),
            framebuffer: vk::Framebuffer::null(),
        };
        let d = &self.device;
        for data in buffers {
            let size = (data.len().max(1) * 4) as u64;
            let bci = vk::BufferCreateInfo::default()
                .size(size)
                .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
                .sharing_mode(vk::SharingMode::EXCLUSIVE);
            // SAFETY: valid create info.
            let buffer = unsafe { d.create_buffer(&bci, None) }.map_err(call("vkCreateBuffer"))?;
            res.buffers
                .push((buffer, vk::DeviceMemory::null(), std::ptr::null_mut()));
            // SAFETY: a live buffer.
            let req = unsafe { d.get_buffer_memory_requirements(buffer) };
            let ty = self
                .memory_type(req.memory_type_bits)
                .ok_or_else(|| VkError::Invalid("no host-visible coherent memory type".into()))?;
            let mai = vk::MemoryAllocateInfo::default()
                .allocation_size(req.size)
                .memory_type_index(ty);
            // SAFETY: valid allocate info.
            let mem = unsafe { d.allocate_memory(&mai, None) }.map_err(call("vkAllocateMemory"))?;
            if let Some(last) = res.buffers.last_mut() {
                last.1 = mem;
            }
            // SAFETY: buffer and memory are live and the type fits.
            unsafe { d.bind_buffer_memory(buffer, mem, 0) }.map_err(call("vkBindBufferMemory"))?;
            // SAFETY: host-visible memory, mapped whole.
            let ptr = unsafe { d.map_memory(mem, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
                .map_err(call("vkMapMemory"))?;
            if let Some(last) = res.buffers.last_mut() {
                last.2 = ptr;
            }
            // SAFETY: the mapping is at least `size` >= data.len()*4 bytes; u32 source, byte copy.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    data.as_ptr().cast::<u8>(),
                    ptr.cast::<u8>(),
                    data.len() * 4,
                )
            };
        }
        let n = buffers.len().max(1) as u32;
        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: n,
        }];
        let dpci = vk::DescriptorPoolCreateInfo::default()
            .max_sets(1)
            .pool_sizes(&sizes);
        // SAFETY: valid create info.
        res.pool = unsafe { d.create_descriptor_pool(&dpci, None) }
            .map_err(call("vkCreateDescriptorPool"))?;
        let layouts = [p.set_layout];
        let dsai = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(res.pool)
            .set_layouts(&layouts);
        // SAFETY: valid allocate info.
        let sets = unsafe { d.allocate_descriptor_sets(&dsai) }
            .map_err(call("vkAllocateDescriptorSets"))?;
        res.set = sets
            .first()
            .copied()
            .ok_or(VkError::Invalid("no descriptor set".into()))?;
        let infos: Vec<[vk::DescriptorBufferInfo; 1]> = res
            .buffers
            .iter()
            .map(|(b, _, _)| {
                [vk::DescriptorBufferInfo {
                    buffer: *b,
                    offset: 0,
                    range: vk::WHOLE_SIZE,
                }]
            })
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .enumerate()
            .map(|(i, info)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(res.set)
                    .dst_binding(i as u32)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(info)
            })
            .collect();
        // SAFETY: the set and buffers are live.
        unsafe { d.update_descriptor_sets(&writes, &[]) };

        let cbai = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: valid allocate info.
        let cbs = unsafe { d.allocate_command_buffers(&cbai) }
            .map_err(call("vkAllocateCommandBuffers"))?;
        res.cmd = cbs
            .first()
            .copied()
            .ok_or(VkError::Invalid("no command buffer".into()))?;
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: a fresh command buffer.
        unsafe { d.begin_command_buffer(res.cmd, &begin) }.map_err(call("vkBeginCommandBuffer"))?;
        Ok(res)
    }

    /// The end of every submission: makes the shader writes of `stage` visible to the host, ends
    /// the command buffer, submits it, waits at most `timeout`, and reads every buffer back.
    pub(crate) fn finish(
        &self,
        res: &mut Resources<'_>,
        stage: vk::PipelineStageFlags,
        buffers: &mut [Vec<u32>],
        timeout: Duration,
    ) -> Result<(), VkError> {
        let d = &self.device;
        let cb = res.cmd;
        let host_barrier = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ)];
        // SAFETY: recording into the command buffer `prepare` began.
        unsafe {
            d.cmd_pipeline_barrier(
                cb,
                stage,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &host_barrier,
                &[],
                &[],
            );
            d.end_command_buffer(cb)
                .map_err(call("vkEndCommandBuffer"))?;
        }
        // SAFETY: valid create info.
        res.fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }
            .map_err(call("vkCreateFence"))?;
        let cbs_submit = [cb];
        let si = [vk::SubmitInfo::default().command_buffers(&cbs_submit)];
        // SAFETY: a recorded command buffer, an unsignalled fence.
        unsafe { d.queue_submit(self.queue, &si, res.fence) }
            .map_err(|e| self.lost(e, "vkQueueSubmit"))?;
        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: a live fence.
        match unsafe { d.wait_for_fences(&[res.fence], true, ns) } {
            Ok(()) => {}
            Err(vk::Result::TIMEOUT) => {
                self.poisoned.set(true);
                return Err(VkError::Timeout(timeout));
            }
            Err(e) => return Err(self.lost(e, "vkWaitForFences")),
        }
        for (data, (_, _, ptr)) in buffers.iter_mut().zip(&res.buffers) {
            // SAFETY: the mapping holds at least data.len()*4 bytes and the GPU has finished.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    ptr.cast::<u8>(),
                    data.as_mut_ptr().cast::<u8>(),
                    data.len() * 4,
                )
            };
        }
        Ok(())
    }

    fn submit(
        &self,
        p: &Pipeline<'_>,
        buffers: &mut [Vec<u32>],
        groups: [u32; 3],
        reps: u32,
        timed: bool,
        timeout: Duration,
    ) -> Result<Vec<f64>, VkError> {
        let mut res = self.prepare(p, vk::PipelineBindPoint::COMPUTE, buffers)?;
        let d = &self.device;
        if timed {
            let qpci = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2 * reps);
            // SAFETY: valid create info.
            res.queries =
                unsafe { d.create_query_pool(&qpci, None) }.map_err(call("vkCreateQueryPool"))?;
        }
        let cb = res.cmd;
        let barrier = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)];
        // SAFETY: recording into the command buffer `prepare` began, with live objects.
        unsafe {
            if timed {
                d.cmd_reset_query_pool(cb, res.queries, 0, 2 * reps);
            }
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, p.pipeline);
            d.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                p.layout,
                0,
                &[res.set],
                &[],
            );
            for r in 0..reps {
                if r > 0 {
                    d.cmd_pipeline_barrier(
                        cb,
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        vk::DependencyFlags::empty(),
                        &barrier,
                        &[],
                        &[],
                    );
                }
                if timed {
                    d.cmd_write_timestamp(
                        cb,
                        vk::PipelineStageFlags::COMPUTE_SHADER,
                        res.queries,
                        2 * r,
                    );
                }
                d.cmd_dispatch(cb, groups[0], groups[1], groups[2]);
                if timed {
                    d.cmd_write_timestamp(
                        cb,
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                        res.queries,
                        2 * r + 1,
                    );
                }
            }
        }
        self.finish(
            &mut res,
            vk::PipelineStageFlags::COMPUTE_SHADER,
            buffers,
            timeout,
        )?;
        let mut times = Vec::new();
        if timed {
            let mut ticks = vec![0u64; 2 * reps as usize];
            // SAFETY: the queries were written by the finished submission.
            unsafe {
                d.get_query_pool_results(
                    res.queries,
                    0,
                    &mut ticks,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
            }
            .map_err(call("vkGetQueryPoolResults"))?;
            for pair in ticks.chunks_exact(2) {
                let dt = pair[1].wrapping_sub(pair[0]);
                times.push(dt as f64 * self.info.timestamp_period_ns);
            }
        }
        Ok(times)
    }

    fn lost(&self, e: vk::Result, what: &'static str) -> VkError {
        if e == vk::Result::ERROR_DEVICE_LOST {
            self.poisoned.set(true);
        }
        VkError::Call {
            call: what,
            result: e,
        }
    }
}

/// The per-submission objects; freed on every path (unless the runner was poisoned by a timeout,
/// when the GPU may still use them and they are leaked on purpose). The image, its view and the
/// framebuffer are a draw's color attachment (null for a dispatch).
pub(crate) struct Resources<'r> {
    runner: &'r Runner,
    buffers: Vec<(vk::Buffer, vk::DeviceMemory, *mut std::ffi::c_void)>,
    pool: vk::DescriptorPool,
    pub(crate) set: vk::DescriptorSet,
    pub(crate) cmd: vk::CommandBuffer,
    fence: vk::Fence,
    queries: vk::QueryPool,
    pub(crate) image: vk::Image,
    pub(crate) image_memory: vk::DeviceMemory,
    pub(crate) view: vk::ImageView,
    pub(crate) framebuffer: vk::Framebuffer,
}

impl Drop for Resources<'_> {
    fn drop(&mut self) {
        if self.runner.poisoned.get() {
            return;
        }
        let d = &self.runner.device;
        // SAFETY: every handle was made by this device (or is null, which every destroy and
        // free function accepts); the submission (if any) finished.
        unsafe {
            d.destroy_fence(self.fence, None);
            if self.cmd != vk::CommandBuffer::null() {
                d.free_command_buffers(self.runner.command_pool, &[self.cmd]);
            }
            d.destroy_query_pool(self.queries, None);
            d.destroy_descriptor_pool(self.pool, None);
            d.destroy_framebuffer(self.framebuffer, None);
            d.destroy_image_view(self.view, None);
            d.destroy_image(self.image, None);
            d.free_memory(self.image_memory, None);
            for (b, m, p) in &self.buffers {
                if !p.is_null() {
                    d.unmap_memory(*m);
                }
                d.free_memory(*m, None);
                d.destroy_buffer(*b, None);
            }
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if self.poisoned.get() {
            // A dispatch may still run: destroying the device under it is undefined. Leak it.
            return;
        }
        // SAFETY: all children (pipelines, resources) borrow the runner, so they are gone.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_command_pool(self.command_pool, None);
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
