//! The layer's per-instance and per-device state: the next layer's entry points it calls down
//! to, the settings and the lowering, in two global maps keyed by the loader's dispatch key
//! (so a physical device finds its instance, a queue its device). Reads take a read lock and
//! clone an `Arc`, so calls from many threads never wait on each other for long; only create
//! and destroy write. The maps themselves belong to the library, not to an instance or device:
//! they are grown under no allocation route (`host_memory.rs`), while each `Arc` they hold was
//! made with its object's callbacks; a map with no entry holds no memory at all (the library is
//! unloaded after its last instance, and what it left on the heap would be lost).

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex, RwLock};

use ash::vk;

use crate::host_memory::{with_route, Callbacks};
use crate::settings::Settings;
use crate::shader::{DeviceFacts, LocalSizeX, Lowerer};

/// What the layer keeps for one instance.
#[derive(Debug)]
pub struct InstanceData {
    /// The instance handle (the application's and the next layer's: layers do not wrap it).
    pub instance: vk::Instance,
    /// The next layer's `vkGetInstanceProcAddr`.
    pub next_gipa: vk::PFN_vkGetInstanceProcAddr,
    /// `vkDestroyInstance` below.
    pub destroy_instance: vk::PFN_vkDestroyInstance,
    /// `vkGetPhysicalDeviceProperties` below.
    pub get_properties: vk::PFN_vkGetPhysicalDeviceProperties,
    /// `vkGetPhysicalDeviceProperties2` (or the KHR one) below, if there is one.
    pub get_properties2: Option<vk::PFN_vkGetPhysicalDeviceProperties2>,
    /// `vkGetPhysicalDeviceFeatures2` (or the KHR one) below, if there is one.
    pub get_features2: Option<vk::PFN_vkGetPhysicalDeviceFeatures2>,
    /// `vkEnumerateDeviceExtensionProperties` below.
    pub enumerate_device_extensions: vk::PFN_vkEnumerateDeviceExtensionProperties,
    /// `vkSubmitDebugUtilsMessageEXT` below, when the application enabled `VK_EXT_debug_utils`.
    pub submit_debug_message: Option<vk::PFN_vkSubmitDebugUtilsMessageEXT>,
    /// The settings read when the instance was created.
    pub settings: Settings,
    /// The application's allocation callbacks of `vkCreateInstance`, if any.
    pub callbacks: Option<Callbacks>,
    /// What each physical device reports below the layer, asked once.
    pub facts: Mutex<HashMap<vk::PhysicalDevice, Arc<DeviceFacts>>>,
}

/// What the layer keeps for one device.
#[derive(Debug)]
pub struct DeviceData {
    /// The device handle.
    pub device: vk::Device,
    /// The instance the device was created from.
    pub instance: Arc<InstanceData>,
    /// The next layer's `vkGetDeviceProcAddr`.
    pub next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    /// `vkDestroyDevice` below.
    pub destroy_device: vk::PFN_vkDestroyDevice,
    /// `vkCreateShaderModule` below.
    pub create_shader_module: vk::PFN_vkCreateShaderModule,
    /// `vkDestroyShaderModule` below.
    pub destroy_shader_module: vk::PFN_vkDestroyShaderModule,
    /// `vkCreateComputePipelines` below.
    pub create_compute_pipelines: vk::PFN_vkCreateComputePipelines,
    /// `vkCreateGraphicsPipelines` below.
    pub create_graphics_pipelines: vk::PFN_vkCreateGraphicsPipelines,
    /// `vkCreateShadersEXT` below, when the device has `VK_EXT_shader_object` enabled.
    pub create_shaders: Option<vk::PFN_vkCreateShadersEXT>,
    /// The lowering for this device's target.
    pub lowerer: Lowerer,
    /// The callbacks of `vkCreateDevice`, else the instance's, if any.
    pub callbacks: Option<Callbacks>,
    /// With an emulated subgroup size: the workgroup x size of each live shader module that
    /// gives it (`shader::local_size_x`), for the full-subgroups flag of the stages naming it
    /// (each stage resolves a specialization constant with its own specialization).
    pub module_local_x: Mutex<HashMap<vk::ShaderModule, LocalSizeX>>,
}

impl DeviceData {
    /// The route of the device's own state: its callbacks with `_DEVICE`.
    pub fn owner_route(&self) -> Option<crate::host_memory::Route> {
        self.callbacks
            .map(|c| c.scope(vk::SystemAllocationScope::DEVICE))
    }

    /// The workgroup x size recorded for `module`.
    pub fn local_x_of(&self, module: vk::ShaderModule) -> Option<LocalSizeX> {
        let map = self
            .module_local_x
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        map.get(&module).copied()
    }
}

/// A map from dispatch keys, `None` while it holds nothing: it owns no memory then, so that
/// nothing of the layer's outlives its last instance. The loader unloads the library after
/// `vkDestroyInstance` of the last instance that enabled it, and loads it anew (with new,
/// empty statics) for the next, so a map's table left allocated would be lost at every
/// unload.
type Map<T> = RwLock<Option<HashMap<usize, Arc<T>>>>;

static INSTANCES: Map<InstanceData> = RwLock::new(None);
static DEVICES: Map<DeviceData> = RwLock::new(None);

fn get<T>(map: &Map<T>, key: usize) -> Option<Arc<T>> {
    // A panic never happens while a map's lock is held (inserts and removes only), so a
    // poisoned lock still guards a whole map.
    with_route(None, || {
        map.read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()?
            .get(&key)
            .cloned()
    })
}

/// The instance of the dispatch key `key`.
pub fn instance(key: usize) -> Option<Arc<InstanceData>> {
    get(&INSTANCES, key)
}

/// The device of the dispatch key `key`.
pub fn device(key: usize) -> Option<Arc<DeviceData>> {
    get(&DEVICES, key)
}

fn insert<T>(map: &Map<T>, key: usize, data: Arc<T>) {
    with_route(None, || {
        let mut map = map.write().unwrap_or_else(|p| p.into_inner());
        map.get_or_insert_with(HashMap::new).insert(key, data);
    })
}

/// Takes `key` out of `map`; the map's table goes with its last entry. The entry is returned,
/// not dropped here: its memory may belong to the application's callbacks, which the caller
/// frees it under (and the object's own destruction below may still need it).
fn remove<T>(map: &Map<T>, key: usize) -> Option<Arc<T>> {
    with_route(None, || {
        let mut guard = map.write().unwrap_or_else(|p| p.into_inner());
        let entries = guard.as_mut()?;
        let removed = entries.remove(&key);
        if entries.is_empty() {
            *guard = None;
        }
        removed
    })
}

/// Records an instance under its dispatch key (`data` made under the instance's route).
pub fn insert_instance(key: usize, data: Arc<InstanceData>) {
    insert(&INSTANCES, key, data);
}

/// Forgets an instance.
pub fn remove_instance(key: usize) -> Option<Arc<InstanceData>> {
    remove(&INSTANCES, key)
}

/// Records a device under its dispatch key (`data` made under the device's route).
pub fn insert_device(key: usize, data: Arc<DeviceData>) {
    insert(&DEVICES, key, data);
}

/// Forgets a device.
pub fn remove_device(key: usize) -> Option<Arc<DeviceData>> {
    remove(&DEVICES, key)
}

/// Looks up `name` through `gipa` for `instance` and casts it to the function type `F`.
///
/// # Safety
/// `F` is the function pointer type the Vulkan registry gives the command `name`.
pub unsafe fn load_instance_fn<F: Copy>(
    gipa: vk::PFN_vkGetInstanceProcAddr,
    instance: vk::Instance,
    name: &CStr,
) -> Option<F> {
    // SAFETY: `gipa` is the next layer's vkGetInstanceProcAddr, called with a live instance and
    // a NUL-terminated name.
    let f = unsafe { gipa(instance, name.as_ptr()) }?;
    // SAFETY: the caller names `F` as the command's type; function pointers all have one size.
    Some(unsafe { std::mem::transmute_copy::<unsafe extern "system" fn(), F>(&f) })
}

/// Looks up `name` through `gdpa` for `device` and casts it to `F`.
///
/// # Safety
/// As for [`load_instance_fn`].
pub unsafe fn load_device_fn<F: Copy>(
    gdpa: vk::PFN_vkGetDeviceProcAddr,
    device: vk::Device,
    name: &CStr,
) -> Option<F> {
    // SAFETY: `gdpa` is the next layer's vkGetDeviceProcAddr, called with a live device.
    let f = unsafe { gdpa(device, name.as_ptr()) }?;
    // SAFETY: as in `load_instance_fn`.
    Some(unsafe { std::mem::transmute_copy::<unsafe extern "system" fn(), F>(&f) })
}

/// The dispatch key of a handle of any dispatchable type.
///
/// # Safety
/// `handle` is a live dispatchable handle from the loader.
pub unsafe fn key_of<H: vk::Handle>(handle: H) -> usize {
    // SAFETY: forwarded from this function's contract.
    unsafe { crate::loader_abi::dispatch_key(handle.as_raw() as usize as *const c_void) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_holds_no_memory_once_its_last_entry_is_removed() {
        static MAP: Map<u32> = RwLock::new(None);
        insert(&MAP, 1, Arc::new(10));
        insert(&MAP, 2, Arc::new(20));
        assert_eq!(get(&MAP, 2).as_deref(), Some(&20));
        assert_eq!(remove(&MAP, 1).as_deref(), Some(&10));
        assert!(MAP.read().unwrap().is_some(), "one entry left");
        assert_eq!(remove(&MAP, 3), None);
        assert_eq!(remove(&MAP, 2).as_deref(), Some(&20));
        assert!(
            MAP.read().unwrap().is_none(),
            "the table went with its last entry"
        );
        assert_eq!((get(&MAP, 2), remove(&MAP, 2)), (None, None));
    }
}
