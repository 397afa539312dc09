//! Instance and device setup: the Vulkan loader loaded at run time, a device chosen (by
//! `SPV_SUBGROUP_VK_DEVICE`), every feature and extension of interest it has enabled, what it is
//! and supports ([`DeviceInfo`], [`Features`]), and the runner's poisoning after a timeout or a
//! device loss.

use std::cell::Cell;
use std::ffi::{CStr, CString};

use ash::vk;

use crate::{call, Runner, VkError, DEVICE_ENV, EXTENSIONS_OF_INTEREST};

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

fn cstr_to_string(r: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    r.map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_default()
}

pub(crate) fn subgroup_op_names(f: vk::SubgroupFeatureFlags) -> Vec<&'static str> {
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

    pub(crate) fn open(
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

    pub(crate) fn check_alive(&self) -> Result<(), VkError> {
        if self.poisoned.get() {
            Err(VkError::Poisoned)
        } else {
            Ok(())
        }
    }

    pub(crate) fn lost(&self, e: vk::Result, what: &'static str) -> VkError {
        if e == vk::Result::ERROR_DEVICE_LOST {
            self.poisoned.set(true);
        }
        VkError::Call {
            call: what,
            result: e,
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
