//! The loader's layer interface types (`vk_layer.h`), which `vk.xml` and so `ash` do not have.
//!
//! Laid out as the Vulkan loader's "Layer Interface" document describes them: the negotiation
//! struct the loader passes to `vkNegotiateLoaderLayerInterfaceVersion`, and the link structs it
//! chains into `VkInstanceCreateInfo`/`VkDeviceCreateInfo` (sTypes 47 and 48, which `ash` does
//! name) so that each layer finds the next one's `vkGetInstanceProcAddr`/`vkGetDeviceProcAddr`.

use std::ffi::{c_char, c_void};

use ash::vk;

/// `VkNegotiateLayerStructType::LAYER_NEGOTIATE_INTERFACE_STRUCT`.
pub const LAYER_NEGOTIATE_INTERFACE_STRUCT: u32 = 1;

/// `VkLayerFunction::VK_LAYER_LINK_INFO`: the create info carries the next layer's entry points.
pub const VK_LAYER_LINK_INFO: u32 = 0;

/// The loader's `PFN_GetPhysicalDeviceProcAddr` (interface version 2 and later).
pub type PfnGetPhysicalDeviceProcAddr =
    unsafe extern "system" fn(vk::Instance, *const c_char) -> vk::PFN_vkVoidFunction;

/// `VkNegotiateLayerInterface`.
#[repr(C)]
#[derive(Debug)]
pub struct NegotiateLayerInterface {
    /// `LAYER_NEGOTIATE_INTERFACE_STRUCT`.
    pub s_type: u32,
    /// Unused, NULL.
    pub p_next: *mut c_void,
    /// In: the newest version the loader speaks; out: the version the layer speaks.
    pub loader_layer_interface_version: u32,
    /// Out: the layer's `vkGetInstanceProcAddr`.
    pub pfn_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    /// Out: the layer's `vkGetDeviceProcAddr`.
    pub pfn_get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    /// Out: the layer's `vk_layerGetPhysicalDeviceProcAddr`, NULL when it has none.
    pub pfn_get_physical_device_proc_addr: Option<PfnGetPhysicalDeviceProcAddr>,
}

/// `VkLayerInstanceLink`: one element of the loader's list of layers below.
#[repr(C)]
#[derive(Debug)]
pub struct LayerInstanceLink {
    /// The link of the layer below the next one.
    pub p_next: *mut LayerInstanceLink,
    /// The next layer's `vkGetInstanceProcAddr`.
    pub pfn_next_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    /// The next layer's `vk_layerGetPhysicalDeviceProcAddr`.
    pub pfn_next_get_physical_device_proc_addr: Option<PfnGetPhysicalDeviceProcAddr>,
}

/// `VkLayerInstanceCreateInfo` (sType `LOADER_INSTANCE_CREATE_INFO`). Its last member is a
/// union; only the `pLayerInfo` arm (a pointer, first in the union) is read here, and the
/// struct is only ever reached through the loader's pointer, never built, so the union's larger
/// arms need no room.
#[repr(C)]
#[derive(Debug)]
pub struct LayerInstanceCreateInfo {
    /// `LOADER_INSTANCE_CREATE_INFO`.
    pub s_type: vk::StructureType,
    /// The rest of the chain.
    pub p_next: *const c_void,
    /// Which arm of the union is set (`VK_LAYER_LINK_INFO` for ours).
    pub function: u32,
    /// `u.pLayerInfo`.
    pub p_layer_info: *mut LayerInstanceLink,
}

/// `VkLayerDeviceLink`.
#[repr(C)]
#[derive(Debug)]
pub struct LayerDeviceLink {
    /// The link of the layer below the next one.
    pub p_next: *mut LayerDeviceLink,
    /// The next layer's `vkGetInstanceProcAddr`.
    pub pfn_next_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    /// The next layer's `vkGetDeviceProcAddr`.
    pub pfn_next_get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
}

/// `VkLayerDeviceCreateInfo` (sType `LOADER_DEVICE_CREATE_INFO`), read as
/// [`LayerInstanceCreateInfo`] is.
#[repr(C)]
#[derive(Debug)]
pub struct LayerDeviceCreateInfo {
    /// `LOADER_DEVICE_CREATE_INFO`.
    pub s_type: vk::StructureType,
    /// The rest of the chain.
    pub p_next: *const c_void,
    /// Which arm of the union is set.
    pub function: u32,
    /// `u.pLayerInfo`.
    pub p_layer_info: *mut LayerDeviceLink,
}

/// The loader's dispatch key of a dispatchable handle (`VkInstance`, `VkPhysicalDevice`,
/// `VkDevice`, `VkQueue`, `VkCommandBuffer`): the pointer to its dispatch table that the loader
/// writes in the object's first word. A physical device's is its instance's, a queue's its
/// device's, so one map entry serves them all.
///
/// # Safety
/// `handle` is a live dispatchable handle the loader created (non-null).
pub unsafe fn dispatch_key(handle: *const c_void) -> usize {
    // SAFETY: every dispatchable object the loader hands a layer begins with its dispatch table
    // pointer (the loader's "Dispatchable Object Creation" rule); the caller passes a live one.
    unsafe { *(handle as *const usize) }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;

    #[test]
    fn the_layouts_are_those_of_vk_layer_h() {
        // sType, pNext, function, then the union (one pointer in the device struct).
        assert_eq!(std::mem::size_of::<LayerDeviceCreateInfo>(), 32);
        assert_eq!(
            std::mem::offset_of!(LayerDeviceCreateInfo, p_layer_info),
            24
        );
        assert_eq!(
            std::mem::offset_of!(LayerInstanceCreateInfo, p_layer_info),
            24
        );
        assert_eq!(std::mem::size_of::<NegotiateLayerInterface>(), 48);
        assert_eq!(std::mem::size_of::<LayerDeviceLink>(), 24);
    }
}
