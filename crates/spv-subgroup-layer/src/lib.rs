//! `VK_LAYER_SPV_SUBGROUP_lower`: a Vulkan layer that gives unmodified applications
//! `VK_NV_shader_subgroup_partitioned`, `VK_EXT_shader_subgroup_partitioned` and
//! `VK_EXT_shader_subgroup_vote` on drivers without them (docs/layer.md).
//!
//! The loader opens `libVkLayer_spv_subgroup.so` through the manifest (`install.rs`) and calls
//! the three exported entry points here. The layer answers the application's questions about a
//! physical device as if it had the extensions (`instance.rs`), takes them out of the device
//! create info before the driver sees it, and lowers every module that uses them at shader
//! creation (`device.rs`, `shader.rs`) for the device's real target. A module the lowering
//! refuses goes down unchanged.
//!
//! Rules every entry point keeps: no panic crosses into the loader (each body runs under
//! `catch_unwind`; a caught panic becomes `VK_ERROR_UNKNOWN` or, for a command without a
//! result, does nothing more); every one may be called from many threads at once (the state is
//! behind locks in `dispatch.rs`); the application's structs are never written to, only copied.
#![allow(
    non_snake_case,
    reason = "the library and the loader's entry points have the names the loader looks up"
)]

pub mod chain;
pub mod device;
pub mod disk_cache;
pub mod dispatch;
pub mod host_memory;
pub mod install;
pub mod instance;
pub mod loader_abi;
pub mod settings;
pub mod shader;

use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use ash::vk;

use crate::loader_abi::{NegotiateLayerInterface, LAYER_NEGOTIATE_INTERFACE_STRUCT};

/// Every allocation of the layer's code goes through the route its entry point sets: the
/// application's callbacks, or the system allocator (`host_memory.rs`).
#[global_allocator]
static ALLOCATOR: host_memory::Router = host_memory::Router;

/// The layer's name, as the manifest and `VK_INSTANCE_LAYERS` spell it.
pub const LAYER_NAME: &CStr = c"VK_LAYER_SPV_SUBGROUP_lower";

/// The loader interface version the layer speaks.
const INTERFACE_VERSION: u32 = 2;

/// Runs `f`, turning a panic into `on_panic`.
///
/// Nothing the layer keeps outlives its last instance: the loader unloads the library after
/// that instance's `vkDestroyInstance` and loads it again (with fresh statics) at the next
/// `vkCreateInstance`, so any heap memory a static still owned then would be lost, once per
/// instance. The dispatch maps hold no memory while empty (`dispatch.rs`), and the validator's
/// and lowering's tables are statics in the library's image, not on the heap.
///
/// Nothing here may register a thread-exit destructor (`std::thread::current()` does, through a
/// pthread key): a destructor left in unmapped code crashes the thread when it exits (seen on
/// lavapipe). The layer's thread-locals have constant initializers and no destructors for that
/// reason.
fn guarded<R>(on_panic: R, f: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(on_panic)
}

/// `vkNegotiateLoaderLayerInterfaceVersion`: agrees on interface version 2 and hands the loader
/// the layer's `vkGetInstanceProcAddr` and `vkGetDeviceProcAddr`.
///
/// # Safety
/// `negotiate` is NULL or the loader's negotiation struct.
#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(
    negotiate: *mut NegotiateLayerInterface,
) -> vk::Result {
    guarded(vk::Result::ERROR_UNKNOWN, || {
        if negotiate.is_null() {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        // SAFETY: the loader's struct, ours to fill.
        let n = unsafe { &mut *negotiate };
        if n.s_type != LAYER_NEGOTIATE_INTERFACE_STRUCT || n.loader_layer_interface_version < 2 {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        n.loader_layer_interface_version = INTERFACE_VERSION;
        n.pfn_get_instance_proc_addr = Some(vkGetInstanceProcAddr);
        n.pfn_get_device_proc_addr = Some(vkGetDeviceProcAddr);
        n.pfn_get_physical_device_proc_addr = None;
        vk::Result::SUCCESS
    })
}

/// Casts one of our entry points to the `PFN_vkVoidFunction` the loader takes.
macro_rules! void_fn {
    ($f:expr, $ty:ty) => {{
        let f: $ty = $f;
        // SAFETY: function pointers all have one representation; the caller casts it back to
        // the command's type, which `$ty` is.
        Some(unsafe { std::mem::transmute::<$ty, unsafe extern "system" fn()>(f) })
    }};
}

/// Our entry point for the device-level command `name`, if we intercept it.
fn device_command(name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkGetDeviceProcAddr" => void_fn!(vkGetDeviceProcAddr, vk::PFN_vkGetDeviceProcAddr),
        b"vkDestroyDevice" => void_fn!(layer_destroy_device, vk::PFN_vkDestroyDevice),
        b"vkCreateShaderModule" => {
            void_fn!(layer_create_shader_module, vk::PFN_vkCreateShaderModule)
        }
        b"vkDestroyShaderModule" => {
            void_fn!(layer_destroy_shader_module, vk::PFN_vkDestroyShaderModule)
        }
        b"vkCreateComputePipelines" => {
            void_fn!(
                layer_create_compute_pipelines,
                vk::PFN_vkCreateComputePipelines
            )
        }
        b"vkCreateGraphicsPipelines" => {
            void_fn!(
                layer_create_graphics_pipelines,
                vk::PFN_vkCreateGraphicsPipelines
            )
        }
        b"vkCreateShadersEXT" => void_fn!(layer_create_shaders_ext, vk::PFN_vkCreateShadersEXT),
        _ => None,
    }
}

/// Our entry point for the instance-level command `name`, if we intercept it.
fn instance_command(name: &[u8]) -> vk::PFN_vkVoidFunction {
    match name {
        b"vkGetInstanceProcAddr" => {
            void_fn!(vkGetInstanceProcAddr, vk::PFN_vkGetInstanceProcAddr)
        }
        b"vkCreateInstance" => void_fn!(layer_create_instance, vk::PFN_vkCreateInstance),
        b"vkDestroyInstance" => void_fn!(layer_destroy_instance, vk::PFN_vkDestroyInstance),
        b"vkEnumerateDeviceExtensionProperties" => void_fn!(
            layer_enumerate_device_extension_properties,
            vk::PFN_vkEnumerateDeviceExtensionProperties
        ),
        b"vkGetPhysicalDeviceFeatures2" | b"vkGetPhysicalDeviceFeatures2KHR" => void_fn!(
            layer_get_physical_device_features2,
            vk::PFN_vkGetPhysicalDeviceFeatures2
        ),
        b"vkGetPhysicalDeviceProperties2" | b"vkGetPhysicalDeviceProperties2KHR" => void_fn!(
            layer_get_physical_device_properties2,
            vk::PFN_vkGetPhysicalDeviceProperties2
        ),
        b"vkCreateDevice" => void_fn!(layer_create_device, vk::PFN_vkCreateDevice),
        _ => None,
    }
}

/// `vkGetInstanceProcAddr`: our commands, else the next layer's.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `instance` is NULL or a live instance.
#[no_mangle]
pub unsafe extern "system" fn vkGetInstanceProcAddr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    guarded(None, || {
        if name.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated name.
        let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
        if let Some(f) = instance_command(bytes) {
            return Some(f);
        }
        if let Some(f) = device_command(bytes) {
            return Some(f);
        }
        if instance == vk::Instance::null() {
            return None;
        }
        // SAFETY: a live instance.
        let data = dispatch::instance(unsafe { dispatch::key_of(instance) })?;
        // SAFETY: the next layer's vkGetInstanceProcAddr with the application's arguments.
        unsafe { (data.next_gipa)(instance, name) }
    })
}

/// `vkGetDeviceProcAddr`: our device commands, else the next layer's.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `device` is a live device.
#[no_mangle]
pub unsafe extern "system" fn vkGetDeviceProcAddr(
    device: vk::Device,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    guarded(None, || {
        if name.is_null() || device == vk::Device::null() {
            return None;
        }
        // SAFETY: a live device.
        let data = dispatch::device(unsafe { dispatch::key_of(device) })?;
        // SAFETY: a NUL-terminated name.
        let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
        // vkCreateShadersEXT is ours only where the driver has it (the device enabled
        // VK_EXT_shader_object); elsewhere NULL says the command is not there.
        if bytes != b"vkCreateShadersEXT" || data.create_shaders.is_some() {
            if let Some(f) = device_command(bytes) {
                return Some(f);
            }
        }
        // SAFETY: the next layer's vkGetDeviceProcAddr with the application's arguments.
        unsafe { (data.next_gdpa)(device, name) }
    })
}

unsafe extern "system" fn layer_create_instance(
    create_info: *const vk::InstanceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    instance: *mut vk::Instance,
) -> vk::Result {
    // SAFETY: forwarded from the loader's call.
    guarded(vk::Result::ERROR_UNKNOWN, || unsafe {
        instance::create_instance(create_info, allocator, instance)
    })
}

unsafe extern "system" fn layer_destroy_instance(
    instance: vk::Instance,
    allocator: *const vk::AllocationCallbacks,
) {
    // SAFETY: forwarded.
    guarded((), || unsafe {
        instance::destroy_instance(instance, allocator)
    })
}

unsafe extern "system" fn layer_enumerate_device_extension_properties(
    pd: vk::PhysicalDevice,
    layer_name: *const c_char,
    count: *mut u32,
    properties: *mut vk::ExtensionProperties,
) -> vk::Result {
    // SAFETY: forwarded.
    guarded(vk::Result::ERROR_UNKNOWN, || unsafe {
        instance::enumerate_device_extension_properties(pd, layer_name, count, properties)
    })
}

unsafe extern "system" fn layer_get_physical_device_features2(
    pd: vk::PhysicalDevice,
    features: *mut vk::PhysicalDeviceFeatures2,
) {
    // SAFETY: forwarded.
    guarded((), || unsafe {
        instance::get_physical_device_features2(pd, features)
    })
}

unsafe extern "system" fn layer_get_physical_device_properties2(
    pd: vk::PhysicalDevice,
    properties: *mut vk::PhysicalDeviceProperties2,
) {
    // SAFETY: forwarded.
    guarded((), || unsafe {
        instance::get_physical_device_properties2(pd, properties)
    })
}

unsafe extern "system" fn layer_create_device(
    pd: vk::PhysicalDevice,
    create_info: *const vk::DeviceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    device: *mut vk::Device,
) -> vk::Result {
    // SAFETY: forwarded.
    guarded(vk::Result::ERROR_UNKNOWN, || unsafe {
        instance::create_device(pd, create_info, allocator, device)
    })
}

unsafe extern "system" fn layer_destroy_device(
    device: vk::Device,
    allocator: *const vk::AllocationCallbacks,
) {
    // SAFETY: forwarded.
    guarded((), || unsafe { device::destroy_device(device, allocator) })
}

unsafe extern "system" fn layer_create_shader_module(
    device: vk::Device,
    create_info: *const vk::ShaderModuleCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    module: *mut vk::ShaderModule,
) -> vk::Result {
    // SAFETY: forwarded.
    guarded(vk::Result::ERROR_UNKNOWN, || unsafe {
        device::create_shader_module(device, create_info, allocator, module)
    })
}

unsafe extern "system" fn layer_destroy_shader_module(
    device: vk::Device,
    module: vk::ShaderModule,
    allocator: *const vk::AllocationCallbacks,
) {
    // SAFETY: forwarded.
    guarded((), || unsafe {
        device::destroy_shader_module(device, module, allocator)
    })
}

unsafe extern "system" fn layer_create_compute_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::ComputePipelineCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    pipelines: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: forwarded; the lifetime parameter of the create infos is a Rust-side marker.
    guarded(vk::Result::ERROR_UNKNOWN, || unsafe {
        device::create_compute_pipelines(device, cache, count, infos.cast(), allocator, pipelines)
    })
}

unsafe extern "system" fn layer_create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    pipelines: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: as above.
    guarded(vk::Result::ERROR_UNKNOWN, || unsafe {
        device::create_graphics_pipelines(device, cache, count, infos.cast(), allocator, pipelines)
    })
}

unsafe extern "system" fn layer_create_shaders_ext(
    device: vk::Device,
    count: u32,
    infos: *const vk::ShaderCreateInfoEXT,
    allocator: *const vk::AllocationCallbacks,
    shaders: *mut vk::ShaderEXT,
) -> vk::Result {
    // SAFETY: as above.
    guarded(vk::Result::ERROR_UNKNOWN, || unsafe {
        device::create_shaders_ext(device, count, infos.cast(), allocator, shaders)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_fallback_value() {
        assert_eq!(
            guarded(vk::Result::ERROR_UNKNOWN, || -> vk::Result {
                panic!("a bug in the layer")
            }),
            vk::Result::ERROR_UNKNOWN
        );
        assert_eq!(guarded(0, || 7), 7);
    }

    #[test]
    fn the_manifest_names_this_layer() {
        let name = LAYER_NAME.to_str().expect("ASCII");
        assert!(install::MANIFEST_TEMPLATE.contains(&format!("\"name\": \"{name}\"")));
        for (ext, _) in instance::EMULATED_EXTENSIONS {
            assert!(install::MANIFEST_TEMPLATE.contains(ext.to_str().expect("ASCII")));
        }
    }

    #[test]
    fn every_command_we_intercept_is_answered_by_name() {
        for name in [
            "vkGetInstanceProcAddr",
            "vkCreateInstance",
            "vkDestroyInstance",
            "vkEnumerateDeviceExtensionProperties",
            "vkGetPhysicalDeviceFeatures2KHR",
            "vkGetPhysicalDeviceProperties2",
            "vkCreateDevice",
        ] {
            assert!(instance_command(name.as_bytes()).is_some(), "{name}");
        }
        for name in [
            "vkGetDeviceProcAddr",
            "vkDestroyDevice",
            "vkCreateShaderModule",
            "vkDestroyShaderModule",
            "vkCreateComputePipelines",
            "vkCreateGraphicsPipelines",
            "vkCreateShadersEXT",
        ] {
            assert!(device_command(name.as_bytes()).is_some(), "{name}");
        }
        assert!(device_command(b"vkQueueSubmit").is_none());
    }

    #[test]
    fn negotiation_agrees_on_version_2_and_refuses_older_loaders() {
        let mut n = NegotiateLayerInterface {
            s_type: LAYER_NEGOTIATE_INTERFACE_STRUCT,
            p_next: std::ptr::null_mut(),
            loader_layer_interface_version: 5,
            pfn_get_instance_proc_addr: None,
            pfn_get_device_proc_addr: None,
            pfn_get_physical_device_proc_addr: None,
        };
        // SAFETY: a live negotiation struct.
        assert_eq!(
            unsafe { vkNegotiateLoaderLayerInterfaceVersion(&mut n) },
            vk::Result::SUCCESS
        );
        assert_eq!(n.loader_layer_interface_version, 2);
        assert!(n.pfn_get_instance_proc_addr.is_some() && n.pfn_get_device_proc_addr.is_some());
        n.loader_layer_interface_version = 1;
        // SAFETY: as above.
        assert_eq!(
            unsafe { vkNegotiateLoaderLayerInterfaceVersion(&mut n) },
            vk::Result::ERROR_INITIALIZATION_FAILED
        );
        // SAFETY: NULL is refused, not read.
        assert_eq!(
            unsafe { vkNegotiateLoaderLayerInterfaceVersion(std::ptr::null_mut()) },
            vk::Result::ERROR_INITIALIZATION_FAILED
        );
    }
}
