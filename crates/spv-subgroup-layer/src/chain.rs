//! Editing an application's `pNext` chain on a copy: the structs the driver must not see are
//! left out, a struct of ours may be put in front, and the application's own structs are never
//! written to (they may be `const` data in read-only memory, and the application may read them
//! while the call runs).
//!
//! To leave a struct out of the middle of a chain, every struct before it is copied (its
//! `pNext` then points at the copy of the next one). Copying needs the struct's size, which
//! only its sType tells: [`struct_size`] knows the structs that appear in the create infos the
//! layer edits. A chain where an unknown struct comes before one to leave out cannot be edited;
//! [`Edited::Unknown`] says so, and the caller passes the chain down as it was.

use std::ffi::c_void;
use std::mem::size_of;

use ash::vk;

/// `VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_PARTITIONED_FEATURES_EXT` from the Vulkan
/// registry (`vk.xml`, extension 663 `VK_EXT_shader_subgroup_partitioned`: 1000000000 +
/// (663 - 1) * 1000 + 0), which `ash` 0.38 (Vulkan 1.3.281) predates.
pub const PARTITIONED_FEATURES_EXT: vk::StructureType = vk::StructureType::from_raw(1_000_662_000);

/// `VkPhysicalDeviceShaderSubgroupPartitionedFeaturesEXT`.
#[repr(C)]
#[derive(Debug)]
pub struct PartitionedFeaturesExt {
    /// [`PARTITIONED_FEATURES_EXT`].
    pub s_type: vk::StructureType,
    /// The rest of the chain.
    pub p_next: *mut c_void,
    /// `shaderSubgroupPartitioned`.
    pub shader_subgroup_partitioned: vk::Bool32,
}

/// The first two members every extending struct has.
#[repr(C)]
#[derive(Debug)]
pub struct BaseHeader {
    /// The struct's type.
    pub s_type: vk::StructureType,
    /// The next struct.
    pub p_next: *const c_void,
}

/// The size of the struct of type `s_type`, for the structs the layer may have to copy.
pub fn struct_size(s_type: vk::StructureType) -> Option<usize> {
    use vk::StructureType as S;
    macro_rules! sizes {
        ($($st:ident => $ty:ty),* $(,)?) => {
            match s_type {
                $(S::$st => Some(size_of::<$ty>()),)*
                PARTITIONED_FEATURES_EXT => Some(size_of::<PartitionedFeaturesExt>()),
                _ => None,
            }
        };
    }
    sizes! {
        PHYSICAL_DEVICE_FEATURES_2 => vk::PhysicalDeviceFeatures2,
        PHYSICAL_DEVICE_VULKAN_1_1_FEATURES => vk::PhysicalDeviceVulkan11Features,
        PHYSICAL_DEVICE_VULKAN_1_2_FEATURES => vk::PhysicalDeviceVulkan12Features,
        PHYSICAL_DEVICE_VULKAN_1_3_FEATURES => vk::PhysicalDeviceVulkan13Features,
        PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES => vk::PhysicalDeviceSubgroupSizeControlFeatures,
        PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES => vk::PhysicalDeviceShaderSubgroupExtendedTypesFeatures,
        PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES => vk::PhysicalDevice8BitStorageFeatures,
        PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES => vk::PhysicalDevice16BitStorageFeatures,
        PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES => vk::PhysicalDeviceShaderFloat16Int8Features,
        PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES => vk::PhysicalDeviceBufferDeviceAddressFeatures,
        PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES => vk::PhysicalDeviceTimelineSemaphoreFeatures,
        PHYSICAL_DEVICE_SYNCHRONIZATION_2_FEATURES => vk::PhysicalDeviceSynchronization2Features,
        PHYSICAL_DEVICE_DYNAMIC_RENDERING_FEATURES => vk::PhysicalDeviceDynamicRenderingFeatures,
        PHYSICAL_DEVICE_DESCRIPTOR_INDEXING_FEATURES => vk::PhysicalDeviceDescriptorIndexingFeatures,
        PHYSICAL_DEVICE_SCALAR_BLOCK_LAYOUT_FEATURES => vk::PhysicalDeviceScalarBlockLayoutFeatures,
        PHYSICAL_DEVICE_VARIABLE_POINTERS_FEATURES => vk::PhysicalDeviceVariablePointersFeatures,
        PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES => vk::PhysicalDeviceMaintenance4Features,
        PHYSICAL_DEVICE_SHADER_DRAW_PARAMETERS_FEATURES => vk::PhysicalDeviceShaderDrawParametersFeatures,
        PHYSICAL_DEVICE_HOST_QUERY_RESET_FEATURES => vk::PhysicalDeviceHostQueryResetFeatures,
        PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES => vk::PhysicalDeviceVulkanMemoryModelFeatures,
        PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES => vk::PhysicalDeviceShaderIntegerDotProductFeatures,
        PHYSICAL_DEVICE_SHADER_ATOMIC_INT64_FEATURES => vk::PhysicalDeviceShaderAtomicInt64Features,
        PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT => vk::PhysicalDeviceRobustness2FeaturesEXT,
        PHYSICAL_DEVICE_SHADER_OBJECT_FEATURES_EXT => vk::PhysicalDeviceShaderObjectFeaturesEXT,
        PHYSICAL_DEVICE_SHADER_SUBGROUP_ROTATE_FEATURES_KHR => vk::PhysicalDeviceShaderSubgroupRotateFeaturesKHR,
        PHYSICAL_DEVICE_MAINTENANCE_5_FEATURES_KHR => vk::PhysicalDeviceMaintenance5FeaturesKHR,
        PHYSICAL_DEVICE_GRAPHICS_PIPELINE_LIBRARY_FEATURES_EXT => vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT,
        DEVICE_GROUP_DEVICE_CREATE_INFO => vk::DeviceGroupDeviceCreateInfo,
        DEVICE_PRIVATE_DATA_CREATE_INFO => vk::DevicePrivateDataCreateInfo,
        PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO => vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo,
        SHADER_MODULE_CREATE_INFO => vk::ShaderModuleCreateInfo,
        SHADER_MODULE_VALIDATION_CACHE_CREATE_INFO_EXT => vk::ShaderModuleValidationCacheCreateInfoEXT,
        DEBUG_UTILS_OBJECT_NAME_INFO_EXT => vk::DebugUtilsObjectNameInfoEXT,
        PIPELINE_ROBUSTNESS_CREATE_INFO_EXT => vk::PipelineRobustnessCreateInfoEXT,
        // The loader's own link structs lead every device create info's chain (they are read
        // below as the loader wrote them; the copy holds the link already advanced past us).
        LOADER_DEVICE_CREATE_INFO => crate::loader_abi::LayerDeviceCreateInfo,
    }
}

/// A chain after editing.
#[derive(Debug)]
pub enum Edited {
    /// Nothing was left out: the original chain (behind the struct put in front, if any).
    Unchanged,
    /// The new chain's head; valid while this value lives (it owns the copies).
    Copied {
        /// The first struct of the new chain.
        head: *const c_void,
        /// The copies, 8-byte aligned (every Vulkan struct's alignment is at most 8).
        _copies: Vec<Box<[u64]>>,
    },
    /// An unknown struct comes before one to leave out (its sType is given).
    Unknown(vk::StructureType),
}

/// Finds the first struct of type `s_type` in the chain starting at `head`.
///
/// # Safety
/// `head` is NULL or the start of a valid `pNext` chain.
pub unsafe fn find(head: *const c_void, s_type: vk::StructureType) -> *const c_void {
    let mut at = head;
    while !at.is_null() {
        // SAFETY: every struct in a valid chain starts with sType and pNext.
        let base = unsafe { &*(at as *const BaseHeader) };
        if base.s_type == s_type {
            return at;
        }
        at = base.p_next;
    }
    std::ptr::null()
}

/// The chain starting at `head` without the structs `leave_out` picks. The structs before the
/// last one left out are copied; the rest is shared with the original.
///
/// # Safety
/// `head` is NULL or the start of a valid `pNext` chain, which lives as long as the result.
pub unsafe fn without(
    head: *const c_void,
    leave_out: impl Fn(vk::StructureType) -> bool,
) -> Edited {
    let mut nodes = Vec::new();
    let mut at = head;
    while !at.is_null() {
        // SAFETY: as in `find`.
        let base = unsafe { &*(at as *const BaseHeader) };
        nodes.push((at, base.s_type, base.p_next));
        at = base.p_next;
    }
    let Some(last) = nodes.iter().rposition(|(_, s, _)| leave_out(*s)) else {
        return Edited::Unchanged;
    };
    let kept: Vec<_> = nodes[..last]
        .iter()
        .filter(|(_, s, _)| !leave_out(*s))
        .collect();
    if let Some((_, unknown, _)) = kept.iter().find(|(_, s, _)| struct_size(*s).is_none()) {
        return Edited::Unknown(*unknown);
    }
    let tail = nodes[last].2;
    let mut copies: Vec<Box<[u64]>> = Vec::with_capacity(kept.len());
    for (ptr, s_type, _) in &kept {
        let size = struct_size(*s_type).unwrap_or(0);
        let mut copy = vec![0u64; size.div_ceil(8)].into_boxed_slice();
        // SAFETY: the original struct is `size` bytes (its sType says which struct it is) and
        // the copy has at least that many; the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(*ptr as *const u8, copy.as_mut_ptr().cast::<u8>(), size)
        };
        copies.push(copy);
    }
    // Link the copies in order, the last one to the rest of the original chain.
    let mut next = tail;
    for copy in copies.iter_mut().rev() {
        let base = copy.as_mut_ptr().cast::<BaseHeader>();
        // SAFETY: each copy begins with a `BaseHeader` (copied from a valid struct) and is
        // 8-byte aligned; we own it.
        unsafe { (*base).p_next = next };
        next = base as *const c_void;
    }
    Edited::Copied {
        head: next,
        _copies: copies,
    }
}

impl Edited {
    /// The new chain's head, given the original head.
    pub fn head(&self, original: *const c_void) -> *const c_void {
        match self {
            Edited::Copied { head, .. } => *head,
            Edited::Unchanged | Edited::Unknown(_) => original,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_struct_in_the_middle_is_left_out_and_the_original_stays_as_it_was() {
        let mut last = vk::PhysicalDeviceVulkan12Features::default();
        let mut partitioned = PartitionedFeaturesExt {
            s_type: PARTITIONED_FEATURES_EXT,
            p_next: (&mut last as *mut vk::PhysicalDeviceVulkan12Features).cast(),
            shader_subgroup_partitioned: vk::TRUE,
        };
        let mut first = vk::PhysicalDeviceVulkan11Features {
            p_next: (&mut partitioned as *mut PartitionedFeaturesExt).cast(),
            storage_buffer16_bit_access: vk::TRUE,
            ..Default::default()
        };
        let head = (&mut first as *mut vk::PhysicalDeviceVulkan11Features) as *const c_void;
        // SAFETY: a chain of live structs on this stack.
        let edited = unsafe { without(head, |s| s == PARTITIONED_FEATURES_EXT) };
        let new_head = edited.head(head);
        assert_ne!(new_head, head);
        // SAFETY: the copies live in `edited`.
        unsafe {
            let copy = &*(new_head as *const vk::PhysicalDeviceVulkan11Features);
            assert_eq!(copy.storage_buffer16_bit_access, vk::TRUE);
            assert_eq!(
                copy.p_next,
                (&last as *const vk::PhysicalDeviceVulkan12Features) as *mut c_void
            );
            assert!(find(new_head, PARTITIONED_FEATURES_EXT).is_null());
            assert!(!find(head, PARTITIONED_FEATURES_EXT).is_null());
        }
        assert_eq!(
            first.p_next,
            (&mut partitioned as *mut PartitionedFeaturesExt).cast()
        );
    }

    #[test]
    fn a_chain_without_the_struct_is_unchanged_and_an_unknown_struct_in_front_stops_the_edit() {
        let mut partitioned = PartitionedFeaturesExt {
            s_type: PARTITIONED_FEATURES_EXT,
            p_next: std::ptr::null_mut(),
            shader_subgroup_partitioned: vk::TRUE,
        };
        let unknown = BaseHeader {
            s_type: vk::StructureType::from_raw(1_999_999_000),
            p_next: (&mut partitioned as *mut PartitionedFeaturesExt).cast(),
        };
        let head = (&unknown as *const BaseHeader).cast::<c_void>();
        // SAFETY: live structs on this stack.
        unsafe {
            assert!(matches!(
                without(head, |s| s == vk::StructureType::PHYSICAL_DEVICE_FEATURES_2),
                Edited::Unchanged
            ));
            assert!(matches!(
                without(head, |s| s == PARTITIONED_FEATURES_EXT),
                Edited::Unknown(s) if s.as_raw() == 1_999_999_000
            ));
            // The struct itself at the head is left out without copying anything.
            let p = (&partitioned as *const PartitionedFeaturesExt).cast::<c_void>();
            match without(p, |s| s == PARTITIONED_FEATURES_EXT) {
                Edited::Copied { head, .. } => assert!(head.is_null()),
                other => panic!("expected a copy, got {other:?}"),
            }
        }
    }
}
