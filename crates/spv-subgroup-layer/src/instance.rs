//! Instance-level commands: creating and destroying the instance, and what the application
//! learns about a physical device (extensions, features, subgroup properties) and how its device
//! is created, with the emulated extensions added on the way up and taken out on the way down.

use std::ffi::{c_char, CStr};
use std::sync::Arc;

use ash::vk;

use crate::chain::{self, PartitionedFeaturesExt, PARTITIONED_FEATURES_EXT};
use crate::dispatch::{self, load_device_fn, load_instance_fn, DeviceData, InstanceData};
use crate::host_memory::{self, with_route, Callbacks, Route};
use crate::loader_abi::{LayerDeviceCreateInfo, LayerInstanceCreateInfo, VK_LAYER_LINK_INFO};
use crate::settings::Settings;
use crate::shader::{bits, DeviceFacts, Emulation, Lowerer};
use crate::LAYER_NAME;

/// The device extensions the layer can provide, with their spec versions.
pub const EMULATED_EXTENSIONS: [(&CStr, u32); 3] = [
    (c"VK_NV_shader_subgroup_partitioned", 1),
    (c"VK_EXT_shader_subgroup_partitioned", 1),
    (c"VK_EXT_shader_subgroup_vote", 1),
];

/// Whether the extension `name` is one the layer provides under `emulation`.
fn emulated(name: &CStr, emulation: Emulation) -> bool {
    match name.to_bytes() {
        b"VK_NV_shader_subgroup_partitioned" | b"VK_EXT_shader_subgroup_partitioned" => {
            emulation.partitioned
        }
        b"VK_EXT_shader_subgroup_vote" => emulation.vote,
        _ => false,
    }
}

/// The route of a command's temporaries: `callbacks` with `VK_SYSTEM_ALLOCATION_SCOPE_COMMAND`.
pub fn command_route(callbacks: Option<Callbacks>) -> Option<Route> {
    callbacks.map(|c| c.scope(vk::SystemAllocationScope::COMMAND))
}

/// `vkCreateInstance`: the layer's temporaries through the application's callbacks with
/// `_COMMAND`, its state for the instance with `_INSTANCE`; a NULL from them gives
/// `VK_ERROR_OUT_OF_HOST_MEMORY` (the instance below destroyed again).
///
/// # Safety
/// The loader's contract for `vkCreateInstance` in a layer.
pub unsafe fn create_instance(
    create_info: *const vk::InstanceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    instance_out: *mut vk::Instance,
) -> vk::Result {
    // SAFETY: the application's allocator, valid for the instance's lifetime.
    let callbacks = unsafe { Callbacks::from_app(allocator) };
    host_memory::take_failure();
    with_route(command_route(callbacks), || {
        // SAFETY: forwarded.
        unsafe { create_instance_routed(create_info, allocator, instance_out, callbacks) }
    })
}

/// # Safety
/// As for [`create_instance`].
unsafe fn create_instance_routed(
    create_info: *const vk::InstanceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    instance_out: *mut vk::Instance,
    callbacks: Option<Callbacks>,
) -> vk::Result {
    if create_info.is_null() || instance_out.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    // SAFETY: the loader passes a valid create info whose chain holds its link info.
    let ci = unsafe { &*create_info };
    let mut link_info = ci.p_next;
    // SAFETY: a valid chain; the loader's link struct has the layout of `LayerInstanceCreateInfo`.
    let layer_info = unsafe {
        loop {
            let found = chain::find(link_info, vk::StructureType::LOADER_INSTANCE_CREATE_INFO)
                as *mut LayerInstanceCreateInfo;
            if found.is_null() || (*found).function == VK_LAYER_LINK_INFO {
                break found;
            }
            link_info = (*found).p_next;
        }
    };
    if layer_info.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    // SAFETY: the loader's link info is ours to advance: each layer moves `pLayerInfo` on to
    // the next link before calling down (the loader's layer interface).
    let Some(next_gipa) = (unsafe {
        let link = (*layer_info).p_layer_info;
        if link.is_null() {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        (*layer_info).p_layer_info = (*link).p_next;
        (*link).pfn_next_get_instance_proc_addr
    }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // SAFETY: vkCreateInstance is loaded with a null instance, as the spec allows.
    let Some(create) = (unsafe {
        load_instance_fn::<vk::PFN_vkCreateInstance>(
            next_gipa,
            vk::Instance::null(),
            c"vkCreateInstance",
        )
    }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // Everything the instance's state needs from the allocator is taken before calling down: a
    // NULL then fails the command with nothing created. Failing it after the layers below
    // succeeded would need their instance destroyed again, and the loader (1.3.239) then frees
    // some of its own blocks twice, once in vkDestroyInstance and once when the failed
    // vkCreateInstance unwinds (seen with a counting allocator).
    let owner = callbacks.map(|c| c.scope(vk::SystemAllocationScope::INSTANCE));
    let (settings, mut slot) = with_route(owner, || {
        (Settings::from_env(), Arc::<InstanceData>::new_uninit())
    });
    if host_memory::take_failure() {
        settings.error(
            "the application's allocation callbacks returned NULL in vkCreateInstance: \
             VK_ERROR_OUT_OF_HOST_MEMORY",
        );
        return vk::Result::ERROR_OUT_OF_HOST_MEMORY;
    }
    // SAFETY: calling down with the application's arguments.
    let result = unsafe { create(create_info, allocator, instance_out) };
    if result != vk::Result::SUCCESS {
        return result;
    }
    // SAFETY: the call succeeded, so the handle is live.
    let instance = unsafe { *instance_out };
    let debug_utils = (0..ci.enabled_extension_count as usize).any(|i| {
        // SAFETY: the application's array of `enabledExtensionCount` NUL-terminated names.
        unsafe { CStr::from_ptr(*ci.pp_enabled_extension_names.add(i)) }
            .to_bytes()
            .eq(b"VK_EXT_debug_utils")
    });
    // SAFETY: each name is loaded as its registry type.
    let loaded = unsafe {
        let load = |name: &CStr| -> Option<unsafe extern "system" fn()> {
            next_gipa(instance, name.as_ptr())
        };
        (
            load_instance_fn::<vk::PFN_vkDestroyInstance>(
                next_gipa,
                instance,
                c"vkDestroyInstance",
            ),
            load_instance_fn::<vk::PFN_vkGetPhysicalDeviceProperties>(
                next_gipa,
                instance,
                c"vkGetPhysicalDeviceProperties",
            ),
            load_instance_fn::<vk::PFN_vkEnumerateDeviceExtensionProperties>(
                next_gipa,
                instance,
                c"vkEnumerateDeviceExtensionProperties",
            ),
            load(c"vkGetPhysicalDeviceProperties2")
                .or_else(|| load(c"vkGetPhysicalDeviceProperties2KHR"))
                .map(|f| std::mem::transmute::<_, vk::PFN_vkGetPhysicalDeviceProperties2>(f)),
            load(c"vkGetPhysicalDeviceFeatures2")
                .or_else(|| load(c"vkGetPhysicalDeviceFeatures2KHR"))
                .map(|f| std::mem::transmute::<_, vk::PFN_vkGetPhysicalDeviceFeatures2>(f)),
            if debug_utils {
                load_instance_fn::<vk::PFN_vkSubmitDebugUtilsMessageEXT>(
                    next_gipa,
                    instance,
                    c"vkSubmitDebugUtilsMessageEXT",
                )
            } else {
                None
            },
        )
    };
    let (Some(destroy), Some(get_properties), Some(enumerate), props2, features2, submit) = loaded
    else {
        // The instance exists below but the layer cannot serve it: destroy it rather than leak
        // it, and fail the application's call.
        if let Some(destroy) = loaded.0 {
            // SAFETY: the instance just created, with the application's allocator.
            unsafe { destroy(instance, allocator) };
        }
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // Filling the slot allocates nothing (the settings are built, an empty map takes no memory).
    let Some(uninit) = Arc::get_mut(&mut slot) else {
        // Unreachable: the slot was just made and never shared.
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    uninit.write(InstanceData {
        instance,
        next_gipa,
        destroy_instance: destroy,
        get_properties,
        get_properties2: props2,
        get_features2: features2,
        enumerate_device_extensions: enumerate,
        submit_debug_message: submit,
        settings,
        facts: Default::default(),
        callbacks,
    });
    // SAFETY: written just above.
    let data = unsafe { slot.assume_init() };
    data.settings.info(&format!(
        "layer active on a new instance (application allocation callbacks: {}; blocks from \
         them so far in this process: {})",
        if callbacks.is_some() { "yes" } else { "no" },
        host_memory::blocks_from_callbacks()
    ));
    // A NULL since the call down (the line above) cannot fail the command any more (see
    // above): that block came from the system allocator instead.
    host_memory::take_failure();
    // SAFETY: a live instance.
    let key = unsafe { dispatch::key_of(instance) };
    dispatch::insert_instance(key, data);
    vk::Result::SUCCESS
}

/// `vkDestroyInstance`.
///
/// # Safety
/// The spec's contract for `vkDestroyInstance`.
pub unsafe fn destroy_instance(instance: vk::Instance, allocator: *const vk::AllocationCallbacks) {
    if instance == vk::Instance::null() {
        return;
    }
    // SAFETY: a live instance.
    let key = unsafe { dispatch::key_of(instance) };
    if let Some(data) = dispatch::remove_instance(key) {
        // SAFETY: calling down with the application's arguments.
        unsafe { (data.destroy_instance)(instance, allocator) };
    }
}

/// The instance a physical device belongs to.
///
/// # Safety
/// `pd` is a live physical device.
unsafe fn instance_of(pd: vk::PhysicalDevice) -> Option<Arc<InstanceData>> {
    // SAFETY: forwarded.
    dispatch::instance(unsafe { dispatch::key_of(pd) })
}

/// The driver's own answers for `pd`, asked once per instance.
///
/// # Safety
/// `pd` is a live physical device of `inst`.
pub unsafe fn facts(inst: &InstanceData, pd: vk::PhysicalDevice) -> Arc<DeviceFacts> {
    let mut map = inst.facts.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(f) = map.get(&pd) {
        return f.clone();
    }
    // What the driver reports lives as long as the instance: made with its callbacks.
    let owner = inst
        .callbacks
        .map(|c| c.scope(vk::SystemAllocationScope::INSTANCE));
    // SAFETY: forwarded.
    let f = with_route(owner, || Arc::new(unsafe { query_facts(inst, pd) }));
    // An emulated size this device cannot run is said once per device and instance; the device
    // then reports and runs its own sizes.
    if let Some(n) = inst.settings.subgroup_size {
        if let Err(why) = f.can_emulate_size(n) {
            inst.settings.error(&format!(
                "SPV_SUBGROUP_LAYER_SUBGROUP_SIZE={n} ignored: {why}"
            ));
        }
    }
    with_route(owner, || map.insert(pd, f.clone()));
    f
}

/// # Safety
/// As for [`facts`].
unsafe fn query_facts(inst: &InstanceData, pd: vk::PhysicalDevice) -> DeviceFacts {
    let mut props = vk::PhysicalDeviceProperties::default();
    // SAFETY: a live physical device and an output struct of the right type.
    unsafe { (inst.get_properties)(pd, &mut props) };
    // SAFETY: forwarded.
    let extensions = unsafe { driver_extensions(inst, pd) };
    let has = |n: &str| extensions.iter().any(|e| e.to_bytes() == n.as_bytes());
    let name = props
        .device_name_as_c_str()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut facts = DeviceFacts {
        name,
        api_version: props.api_version,
        has_partitioned: has("VK_NV_shader_subgroup_partitioned")
            || has("VK_EXT_shader_subgroup_partitioned"),
        has_vote: has("VK_EXT_shader_subgroup_vote"),
        has_ballot: has("VK_EXT_shader_subgroup_ballot"),
        ..DeviceFacts::default()
    };
    let version = (
        props.api_version >> 22 & 0x7f,
        props.api_version >> 12 & 0x3ff,
    );
    if let (Some(props2), true) = (inst.get_properties2, version >= (1, 1)) {
        let size_control = version >= (1, 3) || has("VK_EXT_subgroup_size_control");
        let mut sizes = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        if size_control {
            subgroup.p_next =
                (&mut sizes as *mut vk::PhysicalDeviceSubgroupSizeControlProperties).cast();
        }
        let mut p2 = vk::PhysicalDeviceProperties2 {
            p_next: (&mut subgroup as *mut vk::PhysicalDeviceSubgroupProperties).cast(),
            ..Default::default()
        };
        // SAFETY: a chain of live structs of the types their sTypes name.
        unsafe { props2(pd, &mut p2) };
        facts.supported_operations = subgroup.supported_operations.as_raw();
        facts.subgroup_size = subgroup.subgroup_size;
        (facts.min_subgroup_size, facts.max_subgroup_size) = if size_control {
            (sizes.min_subgroup_size, sizes.max_subgroup_size)
        } else {
            (subgroup.subgroup_size, subgroup.subgroup_size)
        };
        facts.required_size_stages = if size_control {
            sizes.required_subgroup_size_stages.as_raw()
        } else {
            0
        };
    }
    if let (Some(features2), true) = (
        inst.get_features2,
        version >= (1, 2) || has("VK_KHR_shader_subgroup_extended_types"),
    ) {
        let mut ext = vk::PhysicalDeviceShaderSubgroupExtendedTypesFeatures::default();
        let mut f2 = vk::PhysicalDeviceFeatures2 {
            p_next: (&mut ext as *mut vk::PhysicalDeviceShaderSubgroupExtendedTypesFeatures).cast(),
            ..Default::default()
        };
        // SAFETY: as above.
        unsafe { features2(pd, &mut f2) };
        facts.extended_types = ext.shader_subgroup_extended_types == vk::TRUE;
    }
    facts
}

/// The driver's device extensions (and those of the layers below), by name.
///
/// # Safety
/// As for [`facts`].
unsafe fn driver_extensions(inst: &InstanceData, pd: vk::PhysicalDevice) -> Vec<std::ffi::CString> {
    // SAFETY: the two-call idiom with a live physical device.
    let props = unsafe { enumerate_below(inst, pd, std::ptr::null()) };
    props
        .iter()
        .filter_map(|p| p.extension_name_as_c_str().ok().map(CStr::to_owned))
        .collect()
}

/// Every extension the next layer lists for `pd` and `layer_name`.
///
/// # Safety
/// As for [`facts`]; `layer_name` is NULL or a NUL-terminated string.
unsafe fn enumerate_below(
    inst: &InstanceData,
    pd: vk::PhysicalDevice,
    layer_name: *const c_char,
) -> Vec<vk::ExtensionProperties> {
    // The list may grow between the two calls (another layer changing its mind): retry then.
    for _ in 0..4 {
        let mut count = 0u32;
        // SAFETY: the count query.
        let r = unsafe {
            (inst.enumerate_device_extensions)(pd, layer_name, &mut count, std::ptr::null_mut())
        };
        if r != vk::Result::SUCCESS {
            return Vec::new();
        }
        let mut props = vec![vk::ExtensionProperties::default(); count as usize];
        // SAFETY: an array of `count` elements.
        let r = unsafe {
            (inst.enumerate_device_extensions)(pd, layer_name, &mut count, props.as_mut_ptr())
        };
        if r == vk::Result::SUCCESS {
            props.truncate(count as usize);
            return props;
        }
        if r != vk::Result::INCOMPLETE {
            return Vec::new();
        }
    }
    Vec::new()
}

/// Writes `list` to the application's `count`/`properties` by the two-call idiom.
///
/// # Safety
/// `count` is valid; `properties` is NULL or has `*count` elements.
unsafe fn answer<T: Copy>(list: &[T], count: *mut u32, properties: *mut T) -> vk::Result {
    if count.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    if properties.is_null() {
        // SAFETY: checked non-null above.
        unsafe { *count = list.len() as u32 };
        return vk::Result::SUCCESS;
    }
    // SAFETY: the application's array holds `*count` elements.
    let room = unsafe { *count } as usize;
    let n = room.min(list.len());
    // SAFETY: `n` elements fit in both.
    unsafe {
        std::ptr::copy_nonoverlapping(list.as_ptr(), properties, n);
        *count = n as u32;
    }
    if n < list.len() {
        vk::Result::INCOMPLETE
    } else {
        vk::Result::SUCCESS
    }
}

/// The `VkExtensionProperties` of one of [`EMULATED_EXTENSIONS`].
fn extension_properties(name: &CStr, spec_version: u32) -> vk::ExtensionProperties {
    let mut p = vk::ExtensionProperties {
        spec_version,
        ..Default::default()
    };
    for (dst, &b) in p.extension_name.iter_mut().zip(name.to_bytes()) {
        *dst = b as c_char;
    }
    p
}

/// The body of [`enumerate_device_extension_properties`], under its allocation route.
///
/// # Safety
/// As for [`enumerate_device_extension_properties`].
unsafe fn enumerate_device_extension_properties_inner(
    pd: vk::PhysicalDevice,
    layer_name: *const c_char,
    count: *mut u32,
    properties: *mut vk::ExtensionProperties,
) -> vk::Result {
    let ours = !layer_name.is_null()
        // SAFETY: a NUL-terminated name.
        && unsafe { CStr::from_ptr(layer_name) } == LAYER_NAME;
    if ours {
        let list: Vec<_> = EMULATED_EXTENSIONS
            .iter()
            .map(|&(n, v)| extension_properties(n, v))
            .collect();
        // SAFETY: forwarded.
        return unsafe { answer(&list, count, properties) };
    }
    // SAFETY: a live physical device.
    let Some(inst) = (unsafe { instance_of(pd) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    if !layer_name.is_null() {
        // SAFETY: another layer's list: passed down as it is.
        return unsafe { (inst.enumerate_device_extensions)(pd, layer_name, count, properties) };
    }
    // SAFETY: a live physical device of this instance.
    let (mut list, emulation) = unsafe {
        let facts = facts(&inst, pd);
        (
            enumerate_below(&inst, pd, std::ptr::null()),
            facts.emulation(&inst.settings),
        )
    };
    for (name, version) in EMULATED_EXTENSIONS {
        let listed = list
            .iter()
            .any(|p| p.extension_name_as_c_str().is_ok_and(|n| n == name));
        if emulated(name, emulation) && !listed {
            list.push(extension_properties(name, version));
        }
    }
    // SAFETY: forwarded.
    unsafe { answer(&list, count, properties) }
}

/// The body of [`get_physical_device_features2`], under its allocation route.
///
/// # Safety
/// As for [`get_physical_device_features2`].
unsafe fn get_physical_device_features2_inner(
    pd: vk::PhysicalDevice,
    features: *mut vk::PhysicalDeviceFeatures2,
) {
    // SAFETY: a live physical device.
    let Some(inst) = (unsafe { instance_of(pd) }) else {
        return;
    };
    let Some(down) = inst.get_features2 else {
        return;
    };
    // SAFETY: calling down with the application's arguments.
    unsafe { down(pd, features) };
    // SAFETY: as above.
    let emulation = unsafe { facts(&inst, pd) }.emulation(&inst.settings);
    if features.is_null() || !emulation.partitioned {
        return;
    }
    // SAFETY: the application's output chain; the struct of this sType is ours to fill.
    unsafe {
        let found = chain::find((*features).p_next, PARTITIONED_FEATURES_EXT)
            as *mut PartitionedFeaturesExt;
        if !found.is_null() {
            (*found).shader_subgroup_partitioned = vk::TRUE;
        }
    }
}

/// The body of [`get_physical_device_properties2`], under its allocation route.
///
/// # Safety
/// As for [`get_physical_device_properties2`].
unsafe fn get_physical_device_properties2_inner(
    pd: vk::PhysicalDevice,
    properties: *mut vk::PhysicalDeviceProperties2,
) {
    // SAFETY: a live physical device.
    let Some(inst) = (unsafe { instance_of(pd) }) else {
        return;
    };
    let Some(down) = inst.get_properties2 else {
        return;
    };
    // SAFETY: calling down with the application's arguments.
    unsafe { down(pd, properties) };
    // SAFETY: as above.
    let emulation = unsafe { facts(&inst, pd) }.emulation(&inst.settings);
    if properties.is_null() || !(emulation.partitioned || emulation.subgroup_size.is_some()) {
        return;
    }
    // SAFETY: the application's output chain, filled by the driver; each struct is read as the
    // type its sType names.
    unsafe {
        let head = (*properties).p_next;
        let s = chain::find(head, vk::StructureType::PHYSICAL_DEVICE_SUBGROUP_PROPERTIES)
            as *mut vk::PhysicalDeviceSubgroupProperties;
        if !s.is_null() {
            (*s).supported_operations = reported_operations((*s).supported_operations, emulation);
            if let Some(n) = emulation.subgroup_size {
                (*s).subgroup_size = n;
                if n < 4 {
                    (*s).quad_operations_in_all_stages = vk::FALSE;
                }
            }
        }
        let v = chain::find(
            head,
            vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES,
        ) as *mut vk::PhysicalDeviceVulkan11Properties;
        if !v.is_null() {
            (*v).subgroup_supported_operations =
                reported_operations((*v).subgroup_supported_operations, emulation);
            if let Some(n) = emulation.subgroup_size {
                (*v).subgroup_size = n;
                if n < 4 {
                    (*v).subgroup_quad_operations_in_all_stages = vk::FALSE;
                }
            }
        }
        if let Some(n) = emulation.subgroup_size {
            let c = chain::find(
                head,
                vk::StructureType::PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES,
            ) as *mut vk::PhysicalDeviceSubgroupSizeControlProperties;
            if !c.is_null() {
                let c = &mut *c;
                size_control_for(
                    n,
                    &mut c.min_subgroup_size,
                    &mut c.max_subgroup_size,
                    &mut c.max_compute_workgroup_subgroups,
                );
            }
            let c = chain::find(
                head,
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES,
            ) as *mut vk::PhysicalDeviceVulkan13Properties;
            if !c.is_null() {
                let c = &mut *c;
                size_control_for(
                    n,
                    &mut c.min_subgroup_size,
                    &mut c.max_subgroup_size,
                    &mut c.max_compute_workgroup_subgroups,
                );
            }
        }
    }
}

/// The subgroup operations the application is told of: the driver's `ops`, with the partitioned
/// bit where the layer emulates it, and without the quad bit at an emulated size below 4 (a quad
/// needs 4 lanes; the emulation refuses quad operations there).
fn reported_operations(
    ops: vk::SubgroupFeatureFlags,
    emulation: Emulation,
) -> vk::SubgroupFeatureFlags {
    let mut ops = ops;
    if emulation.partitioned {
        ops |= vk::SubgroupFeatureFlags::from_raw(bits::PARTITIONED);
    }
    if emulation.subgroup_size.is_some_and(|n| n < 4) {
        ops &= !vk::SubgroupFeatureFlags::QUAD;
    }
    ops
}

/// The size-control limits (of `VkPhysicalDeviceSubgroupSizeControlProperties` or
/// `VkPhysicalDeviceVulkan13Properties`) of a device that runs subgroups of `n` lanes only: the
/// range `n` to `n`, and as many more subgroups per workgroup as the driver's smallest subgroup
/// holds virtual ones. `requiredSubgroupSizeStages` stays the driver's: requiring `n` there is
/// accepted and mapped to a size the driver runs (`Lowerer::required_size`).
fn size_control_for(n: u32, min: &mut u32, max: &mut u32, workgroup_subgroups: &mut u32) {
    let per_hardware_subgroup = (*min / n.max(1)).max(1);
    *workgroup_subgroups = workgroup_subgroups.saturating_mul(per_hardware_subgroup);
    *min = n;
    *max = n;
}

/// Runs `f` under the route of a command on `pd`: the temporaries through its instance's
/// callbacks with `_COMMAND`.
///
/// # Safety
/// `pd` is a live physical device.
unsafe fn on_physical_device<R>(pd: vk::PhysicalDevice, f: impl FnOnce() -> R) -> R {
    // SAFETY: forwarded.
    let route = unsafe { instance_of(pd) }.and_then(|inst| command_route(inst.callbacks));
    with_route(route, f)
}

/// `vkEnumerateDeviceExtensionProperties`; `VK_ERROR_OUT_OF_HOST_MEMORY` when the instance's
/// callbacks returned NULL on the way.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn enumerate_device_extension_properties(
    pd: vk::PhysicalDevice,
    layer_name: *const c_char,
    count: *mut u32,
    properties: *mut vk::ExtensionProperties,
) -> vk::Result {
    host_memory::take_failure();
    // SAFETY: forwarded.
    let result = unsafe {
        on_physical_device(pd, || {
            enumerate_device_extension_properties_inner(pd, layer_name, count, properties)
        })
    };
    if host_memory::take_failure() {
        return vk::Result::ERROR_OUT_OF_HOST_MEMORY;
    }
    result
}

/// `vkGetPhysicalDeviceFeatures2` (and the KHR alias). A NULL from the callbacks cannot be
/// reported by a command without a result: the layer's memory then comes from the system.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn get_physical_device_features2(
    pd: vk::PhysicalDevice,
    features: *mut vk::PhysicalDeviceFeatures2,
) {
    // SAFETY: forwarded.
    unsafe { on_physical_device(pd, || get_physical_device_features2_inner(pd, features)) };
    host_memory::take_failure();
}

/// `vkGetPhysicalDeviceProperties2` (and the KHR alias); memory as for
/// [`get_physical_device_features2`].
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn get_physical_device_properties2(
    pd: vk::PhysicalDevice,
    properties: *mut vk::PhysicalDeviceProperties2,
) {
    // SAFETY: forwarded.
    unsafe { on_physical_device(pd, || get_physical_device_properties2_inner(pd, properties)) };
    host_memory::take_failure();
}

/// `vkCreateDevice`: the layer's temporaries through the device's callbacks (else the
/// instance's) with `_COMMAND`, its state for the device with `_DEVICE`; a NULL from them gives
/// `VK_ERROR_OUT_OF_HOST_MEMORY` (the device below destroyed again).
///
/// # Safety
/// The loader's contract for `vkCreateDevice` in a layer.
pub unsafe fn create_device(
    pd: vk::PhysicalDevice,
    create_info: *const vk::DeviceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    device_out: *mut vk::Device,
) -> vk::Result {
    // SAFETY: the application's allocator, valid for the device's lifetime; a live physical
    // device.
    let callbacks = unsafe { Callbacks::from_app(allocator) }
        .or_else(|| unsafe { instance_of(pd) }.and_then(|inst| inst.callbacks));
    host_memory::take_failure();
    with_route(command_route(callbacks), || {
        // SAFETY: forwarded.
        unsafe { create_device_routed(pd, create_info, allocator, device_out, callbacks) }
    })
}

/// # Safety
/// As for [`create_device`].
unsafe fn create_device_routed(
    pd: vk::PhysicalDevice,
    create_info: *const vk::DeviceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    device_out: *mut vk::Device,
    callbacks: Option<Callbacks>,
) -> vk::Result {
    if create_info.is_null() || device_out.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    // SAFETY: a live physical device.
    let Some(inst) = (unsafe { instance_of(pd) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // SAFETY: the loader passes a valid create info whose chain holds its link info.
    let ci = unsafe { &*create_info };
    let mut link_info = ci.p_next;
    // SAFETY: as in `create_instance`.
    let layer_info = unsafe {
        loop {
            let found = chain::find(link_info, vk::StructureType::LOADER_DEVICE_CREATE_INFO)
                as *mut LayerDeviceCreateInfo;
            if found.is_null() || (*found).function == VK_LAYER_LINK_INFO {
                break found;
            }
            link_info = (*found).p_next;
        }
    };
    if layer_info.is_null() {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    }
    // SAFETY: advancing the loader's link info, as in `create_instance`.
    let (Some(next_gipa), Some(next_gdpa)) = (unsafe {
        let link = (*layer_info).p_layer_info;
        if link.is_null() {
            return vk::Result::ERROR_INITIALIZATION_FAILED;
        }
        (*layer_info).p_layer_info = (*link).p_next;
        (
            (*link).pfn_next_get_instance_proc_addr,
            (*link).pfn_next_get_device_proc_addr,
        )
    }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // SAFETY: loaded as its registry type.
    let Some(create) = (unsafe {
        load_instance_fn::<vk::PFN_vkCreateDevice>(next_gipa, inst.instance, c"vkCreateDevice")
    }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // SAFETY: a live physical device of this instance.
    let facts = unsafe { facts(&inst, pd) };
    let emulation = facts.emulation(&inst.settings);
    // The driver sees neither the emulated names nor the partitioned feature struct: on a copy.
    let names: Vec<*const c_char> = (0..ci.enabled_extension_count as usize)
        // SAFETY: the application's array of `enabledExtensionCount` names.
        .map(|i| unsafe { *ci.pp_enabled_extension_names.add(i) })
        // SAFETY: each a NUL-terminated name.
        .filter(|&n| !emulated(unsafe { CStr::from_ptr(n) }, emulation))
        .collect();
    // SAFETY: the application's valid chain, which outlives the call.
    let edited = unsafe {
        chain::without(ci.p_next, |s| {
            s == PARTITIONED_FEATURES_EXT && emulation.partitioned
        })
    };
    if let chain::Edited::Unknown(s) = edited {
        inst.settings.error(&format!(
            "cannot take VkPhysicalDeviceShaderSubgroupPartitionedFeaturesEXT out of the device \
             create info: a struct of sType {} the layer cannot copy comes before it; the \
             driver gets it and must ignore it",
            s.as_raw()
        ));
    }
    let mut down_ci = *ci;
    down_ci.p_next = edited.head(ci.p_next);
    down_ci.enabled_extension_count = names.len() as u32;
    down_ci.pp_enabled_extension_names = names.as_ptr();
    // The device's state is allocated before calling down, as the instance's is (see
    // `create_instance_routed`): a NULL fails the command with nothing created below.
    let owner = callbacks.map(|c| c.scope(vk::SystemAllocationScope::DEVICE));
    let settings = inst.settings.clone();
    let (lowerer, mut slot) = with_route(owner, || {
        (
            Lowerer::new(&facts, settings.clone()).with_owner(owner),
            Arc::<DeviceData>::new_uninit(),
        )
    });
    if host_memory::take_failure() {
        settings.error(
            "the application's allocation callbacks returned NULL in vkCreateDevice: \
             VK_ERROR_OUT_OF_HOST_MEMORY",
        );
        return vk::Result::ERROR_OUT_OF_HOST_MEMORY;
    }
    // SAFETY: calling down with a create info whose every pointer is live for the call.
    let result = unsafe { create(pd, &down_ci, allocator, device_out) };
    if result != vk::Result::SUCCESS {
        return result;
    }
    // SAFETY: the call succeeded.
    let device = unsafe { *device_out };
    // SAFETY: each loaded as its registry type.
    let loaded = unsafe {
        (
            load_device_fn::<vk::PFN_vkDestroyDevice>(next_gdpa, device, c"vkDestroyDevice"),
            load_device_fn::<vk::PFN_vkCreateShaderModule>(
                next_gdpa,
                device,
                c"vkCreateShaderModule",
            ),
            load_device_fn::<vk::PFN_vkDestroyShaderModule>(
                next_gdpa,
                device,
                c"vkDestroyShaderModule",
            ),
            load_device_fn::<vk::PFN_vkCreateComputePipelines>(
                next_gdpa,
                device,
                c"vkCreateComputePipelines",
            ),
            load_device_fn::<vk::PFN_vkCreateGraphicsPipelines>(
                next_gdpa,
                device,
                c"vkCreateGraphicsPipelines",
            ),
            load_device_fn::<vk::PFN_vkCreateShadersEXT>(next_gdpa, device, c"vkCreateShadersEXT"),
        )
    };
    let (Some(destroy), Some(module), Some(destroy_module), Some(compute), Some(graphics), shaders) =
        loaded
    else {
        // As for an instance: destroy what the layer cannot serve.
        if let Some(destroy) = loaded.0 {
            // SAFETY: the device just created, with the application's allocator.
            unsafe { destroy(device, allocator) };
        }
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(uninit) = Arc::get_mut(&mut slot) else {
        // Unreachable: the slot was just made and never shared.
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    // Allocates nothing: the lowering is built, an empty map takes no memory.
    uninit.write(DeviceData {
        device,
        instance: inst,
        next_gdpa,
        destroy_device: destroy,
        create_shader_module: module,
        destroy_shader_module: destroy_module,
        create_compute_pipelines: compute,
        create_graphics_pipelines: graphics,
        create_shaders: shaders,
        lowerer,
        callbacks,
        module_local_x: Default::default(),
    });
    // SAFETY: written just above.
    let data = unsafe { slot.assume_init() };
    settings.info(&format!(
        "device `{}`: emulating partitioned: {}, vote: {}, subgroup size: {}",
        facts.name,
        emulation.partitioned,
        emulation.vote,
        emulation
            .subgroup_size
            .map_or("no".to_owned(), |n| n.to_string())
    ));
    // A NULL since the call down cannot fail the command any more: that block came from the
    // system allocator instead.
    host_memory::take_failure();
    // SAFETY: a live device.
    let key = unsafe { dispatch::key_of(device) };
    dispatch::insert_device(key, data);
    vk::Result::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operations_reported_gain_partitioned_and_lose_quads_below_4_lanes() {
        let lavapipe = vk::SubgroupFeatureFlags::from_raw(0xbf);
        let e = |partitioned, subgroup_size| Emulation {
            partitioned,
            vote: false,
            subgroup_size,
        };
        let quad = vk::SubgroupFeatureFlags::QUAD;
        let partitioned = vk::SubgroupFeatureFlags::from_raw(bits::PARTITIONED);
        assert_eq!(reported_operations(lavapipe, e(false, None)), lavapipe);
        assert_eq!(
            reported_operations(lavapipe, e(true, Some(4))),
            lavapipe | partitioned
        );
        for n in [1, 2] {
            let ops = reported_operations(lavapipe, e(true, Some(n)));
            assert!(
                !ops.contains(quad) && ops.contains(partitioned),
                "{n}: {ops:?}"
            );
        }
    }

    #[test]
    fn the_size_control_range_is_the_emulated_size_with_more_subgroups_per_workgroup() {
        // lavapipe at 16 lanes emulating 4: four virtual subgroups in each of its subgroups.
        let (mut min, mut max, mut subgroups) = (16, 16, 64);
        size_control_for(4, &mut min, &mut max, &mut subgroups);
        assert_eq!((min, max, subgroups), (4, 4, 256));
        let (mut min, mut max, mut subgroups) = (8, 64, 128);
        size_control_for(8, &mut min, &mut max, &mut subgroups);
        assert_eq!((min, max, subgroups), (8, 8, 128));
    }
}
