//! Device-level commands: every door SPIR-V comes in by (`vkCreateShaderModule`, a
//! `VkShaderModuleCreateInfo` chained into a pipeline stage, `vkCreateShadersEXT`), where the
//! words are lowered on a copy of the create info before the driver sees them, and
//! `vkDestroyDevice`.

use std::ffi::{c_void, CString};
use std::sync::Arc;

use ash::vk;

use crate::chain;
use crate::dispatch::{self, DeviceData};
use crate::host_memory::{self, with_route, Callbacks};
use crate::instance::command_route;
use crate::shader::{local_size_x, LocalSizeX, Outcome, RequiredSize};

/// `vkDestroyDevice`.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn destroy_device(device: vk::Device, allocator: *const vk::AllocationCallbacks) {
    if device == vk::Device::null() {
        return;
    }
    // SAFETY: a live device.
    let key = unsafe { dispatch::key_of(device) };
    if let Some(data) = dispatch::remove_device(key) {
        // SAFETY: calling down with the application's arguments.
        unsafe { (data.destroy_device)(device, allocator) };
    }
}

/// The device data of `device`.
///
/// # Safety
/// `device` is a live device.
unsafe fn data_of(device: vk::Device) -> Option<Arc<DeviceData>> {
    // SAFETY: forwarded.
    dispatch::device(unsafe { dispatch::key_of(device) })
}

/// The words of `code_size` bytes at `code`, or `None` when they cannot be a module.
///
/// # Safety
/// `code` points at `code_size` readable bytes, 4-byte aligned (the spec's rule for `pCode`).
unsafe fn words<'a>(code: *const u32, code_size: usize) -> Option<&'a [u32]> {
    if code.is_null() || !code_size.is_multiple_of(4) || code_size < 20 || !code.is_aligned() {
        return None;
    }
    // SAFETY: forwarded from this function's contract.
    Some(unsafe { std::slice::from_raw_parts(code, code_size / 4) })
}

/// Lowers one module's words and reports a refusal; returns the words to send down instead,
/// if any.
fn lower(data: &DeviceData, words: &[u32], required_size: Option<u32>) -> Option<Arc<[u32]>> {
    match data.lowerer.lower(words, required_size) {
        Outcome::Unchanged => None,
        Outcome::Lowered(out) => Some(out),
        Outcome::Refused(message) => {
            data.lowerer.settings().error(&message);
            report_to_messengers(data, &message);
            None
        }
    }
}

/// Sends `message` to the application's `VK_EXT_debug_utils` messengers, as a warning (the
/// module goes down unchanged; the driver decides what becomes of it).
fn report_to_messengers(data: &DeviceData, message: &str) {
    let Some(submit) = data.instance.submit_debug_message else {
        return;
    };
    let Ok(text) = CString::new(message.replace('\0', " ")) else {
        return;
    };
    let info = vk::DebugUtilsMessengerCallbackDataEXT {
        p_message_id_name: c"VK_LAYER_SPV_SUBGROUP_lower-refused".as_ptr(),
        p_message: text.as_ptr(),
        ..Default::default()
    };
    // SAFETY: the instance is live while a device of it is; the callback data and its strings
    // live for the call.
    unsafe {
        submit(
            data.instance.instance,
            vk::DebugUtilsMessageSeverityFlagsEXT::WARNING,
            vk::DebugUtilsMessageTypeFlagsEXT::GENERAL,
            &info,
        )
    };
}

/// The required subgroup size a stage's (or shader's) chain names, if any.
///
/// # Safety
/// `head` is NULL or a valid chain.
unsafe fn required_size(head: *const c_void) -> Option<u32> {
    // SAFETY: a valid chain; the struct found has the type its sType names.
    unsafe {
        let found = chain::find(
            head,
            vk::StructureType::PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        ) as *const vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo;
        (!found.is_null()).then(|| (*found).required_subgroup_size)
    }
}

/// The value a stage's specialization gives the specialization constant of `SpecId` `spec_id`,
/// if it gives one: its map entry's 4 bytes at its offset in `pData` (a workgroup size is a
/// 32-bit integer, and `VUID-VkSpecializationMapEntry-constantID-00776` has the entry's size be
/// the constant's). An entry of another size, or outside `dataSize`, is invalid usage the layer
/// does not guess at: `None`, the module's default then.
///
/// # Safety
/// `info` is NULL or a valid `VkSpecializationInfo` (its entries and `dataSize` bytes of data
/// readable).
unsafe fn specialized(info: *const vk::SpecializationInfo, spec_id: u32) -> Option<u32> {
    if info.is_null() {
        return None;
    }
    // SAFETY: a valid struct.
    let info = unsafe { &*info };
    if info.p_map_entries.is_null() || info.p_data.is_null() {
        return None;
    }
    // SAFETY: `mapEntryCount` entries at `pMapEntries`.
    let entries =
        unsafe { std::slice::from_raw_parts(info.p_map_entries, info.map_entry_count as usize) };
    let entry = entries.iter().find(|e| e.constant_id == spec_id)?;
    let offset = entry.offset as usize;
    if entry.size != 4 || offset.checked_add(4)? > info.data_size {
        return None;
    }
    // SAFETY: 4 bytes inside the `dataSize` bytes at `pData`, read without alignment.
    Some(unsafe {
        info.p_data
            .cast::<u8>()
            .add(offset)
            .cast::<u32>()
            .read_unaligned()
    })
}

/// The x size a stage's workgroup has, its specialization applied.
///
/// # Safety
/// As for [`specialized`].
unsafe fn stage_local_x(x: LocalSizeX, info: *const vk::SpecializationInfo) -> u32 {
    // SAFETY: forwarded.
    x.resolve(|id| unsafe { specialized(info, id) })
}

/// The body of [`create_shader_module`], under its allocation route.
///
/// # Safety
/// As for [`create_shader_module`].
unsafe fn create_shader_module_inner(
    device: vk::Device,
    create_info: *const vk::ShaderModuleCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    module: *mut vk::ShaderModule,
) -> vk::Result {
    // SAFETY: a live device.
    let Some(data) = (unsafe { data_of(device) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    if create_info.is_null() {
        // SAFETY: passed down as it is; the driver answers as it would without us.
        return unsafe { (data.create_shader_module)(device, create_info, allocator, module) };
    }
    // SAFETY: the application's create info, with `codeSize` bytes at `pCode`.
    let ci = unsafe { &*create_info };
    // SAFETY: as above.
    let code = unsafe { words(ci.p_code, ci.code_size) };
    let lowered = code.and_then(|w| lower(&data, w, None));
    let local_x = code
        .filter(|_| data.lowerer.emulation().subgroup_size.is_some())
        .and_then(local_size_x);
    if out_of_memory(&data) {
        // SAFETY: the application's output handle.
        unsafe { null_handles(module, 1) };
        return vk::Result::ERROR_OUT_OF_HOST_MEMORY;
    }
    let result = match lowered {
        None => {
            // SAFETY: passed down as it is.
            unsafe { (data.create_shader_module)(device, create_info, allocator, module) }
        }
        Some(out) => {
            let mut copy = *ci;
            copy.p_code = out.as_ptr();
            copy.code_size = out.len() * 4;
            // SAFETY: a copy whose code lives for the call.
            unsafe { (data.create_shader_module)(device, &copy, allocator, module) }
        }
    };
    if let (vk::Result::SUCCESS, Some(x), false) = (result, local_x, module.is_null()) {
        // The map lives with the device: its memory too.
        with_route(data.owner_route(), || {
            let mut map = data
                .module_local_x
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            // SAFETY: the handle the driver just wrote.
            map.insert(unsafe { *module }, x);
        });
    }
    result
}

/// `vkDestroyShaderModule`: forgets the module's workgroup size.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn destroy_shader_module(
    device: vk::Device,
    module: vk::ShaderModule,
    allocator: *const vk::AllocationCallbacks,
) {
    // SAFETY: a live device.
    let Some(data) = (unsafe { data_of(device) }) else {
        return;
    };
    data.module_local_x
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&module);
    // SAFETY: calling down with the application's arguments.
    unsafe { (data.destroy_shader_module)(device, module, allocator) };
}

/// What a changed pipeline create info points at, kept alive for the call down.
#[derive(Debug, Default)]
struct Keep {
    code: Vec<Arc<[u32]>>,
    #[allow(
        clippy::vec_box,
        reason = "a stage's pNext points at the box, which must not move when the Vec grows"
    )]
    module_infos: Vec<Box<vk::ShaderModuleCreateInfo<'static>>>,
    #[allow(clippy::vec_box, reason = "as above")]
    sizes: Vec<Box<vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo<'static>>>,
    chains: Vec<chain::Edited>,
    stages: Vec<Vec<vk::PipelineShaderStageCreateInfo<'static>>>,
}

impl Keep {
    /// Puts a required-size struct of `size` in front of the chain `head` and returns the new
    /// head.
    fn required_size_in_front(&mut self, size: u32, head: *const c_void) -> *const c_void {
        let mut info = Box::new(
            vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
                .required_subgroup_size(size),
        );
        info.p_next = head.cast_mut();
        let new_head = (&*info as *const vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo)
            .cast::<c_void>();
        self.sizes.push(info);
        new_head
    }
}

/// How a stage's (or shader's) required subgroup size goes down, and the hardware size its
/// module is lowered for: `(mapping, hardware size)`.
///
/// # Safety
/// `head` is NULL or a valid chain.
unsafe fn map_required_size(
    data: &DeviceData,
    stage: vk::ShaderStageFlags,
    head: *const c_void,
) -> (RequiredSize, Option<u32>) {
    // SAFETY: forwarded.
    let Some(required) = (unsafe { required_size(head) }) else {
        return (RequiredSize::Keep, None);
    };
    match data.lowerer.required_size(stage.as_raw(), required) {
        RequiredSize::Keep => (RequiredSize::Keep, Some(required)),
        RequiredSize::Replace(h) => (RequiredSize::Replace(h), Some(h)),
        RequiredSize::Remove => (RequiredSize::Remove, None),
    }
}

/// The stage with its chained `VkShaderModuleCreateInfo` lowered and its required subgroup size
/// mapped to the driver's (with an emulated size), or `None` to keep the stage as it is (a
/// stage naming a module was lowered when the module was created).
///
/// # Safety
/// `stage` is a valid stage create info.
unsafe fn lower_stage(
    data: &DeviceData,
    stage: &vk::PipelineShaderStageCreateInfo<'static>,
    keep: &mut Keep,
) -> Option<vk::PipelineShaderStageCreateInfo<'static>> {
    // SAFETY: the stage's valid chain.
    let (mapping, hardware_size) = unsafe { map_required_size(data, stage.stage, stage.p_next) };
    let smci = if stage.module == vk::ShaderModule::null() {
        // SAFETY: the stage's valid chain.
        let found =
            unsafe { chain::find(stage.p_next, vk::StructureType::SHADER_MODULE_CREATE_INFO) };
        found.cast::<vk::ShaderModuleCreateInfo<'static>>()
    } else {
        std::ptr::null()
    };
    let lowered = if smci.is_null() {
        None
    } else {
        // SAFETY: the struct of this sType, with its code.
        let ci = unsafe { &*smci };
        // SAFETY: as above.
        unsafe { words(ci.p_code, ci.code_size) }.and_then(|w| lower(data, w, hardware_size))
    };
    let full = vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS;
    let drop_full = stage.flags.contains(full) && {
        let local_x = if smci.is_null() {
            data.local_x_of(stage.module)
        } else {
            // SAFETY: as above.
            let ci = unsafe { &*smci };
            // SAFETY: as above.
            unsafe { words(ci.p_code, ci.code_size) }.and_then(local_size_x)
        };
        // SAFETY: the stage's specialization info, NULL or valid.
        let local_x = local_x.map(|x| unsafe { stage_local_x(x, stage.p_specialization_info) });
        data.lowerer.drops_full_subgroups(local_x, hardware_size)
    };
    if lowered.is_none() && mapping == RequiredSize::Keep {
        return drop_full.then(|| {
            let mut new_stage = *stage;
            new_stage.flags &= !full;
            new_stage
        });
    }
    let size_changes = mapping != RequiredSize::Keep;
    // SAFETY: the stage's valid chain, which outlives the call.
    let rest = unsafe {
        chain::without(stage.p_next, |s| {
            (lowered.is_some() && s == vk::StructureType::SHADER_MODULE_CREATE_INFO)
                || (size_changes
                    && s == vk::StructureType::PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO)
        })
    };
    if let chain::Edited::Unknown(s) = rest {
        data.lowerer.settings().error(&format!(
            "a pipeline stage goes to the driver as it is (its module unlowered, its required \
             subgroup size unmapped): a struct of sType {} the layer cannot copy comes before \
             the structs it changes",
            s.as_raw()
        ));
        return None;
    }
    let mut head = rest.head(stage.p_next);
    if let RequiredSize::Replace(size) = mapping {
        head = keep.required_size_in_front(size, head);
    }
    if let Some(out) = lowered {
        // SAFETY: checked non-null above (`lowered` comes from it).
        let mut module_info = Box::new(unsafe { *smci });
        module_info.p_code = out.as_ptr();
        module_info.code_size = out.len() * 4;
        module_info.p_next = head;
        head = (&*module_info as *const vk::ShaderModuleCreateInfo).cast();
        keep.code.push(out);
        keep.module_infos.push(module_info);
    }
    let mut new_stage = *stage;
    new_stage.p_next = head;
    if drop_full {
        new_stage.flags &= !full;
    }
    keep.chains.push(rest);
    Some(new_stage)
}

/// The body of [`create_compute_pipelines`], under its allocation route.
///
/// # Safety
/// As for [`create_compute_pipelines`].
unsafe fn create_compute_pipelines_inner(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::ComputePipelineCreateInfo<'static>,
    allocator: *const vk::AllocationCallbacks,
    pipelines: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: a live device.
    let Some(data) = (unsafe { data_of(device) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let down = data.create_compute_pipelines;
    if infos.is_null() || count == 0 {
        // SAFETY: passed down as it is.
        return unsafe { down(device, cache, count, infos, allocator, pipelines) };
    }
    // SAFETY: the application's array of `count` create infos.
    let mut copies = unsafe { std::slice::from_raw_parts(infos, count as usize) }.to_vec();
    let mut keep = Keep::default();
    let mut changed = false;
    for info in &mut copies {
        // SAFETY: a valid stage.
        if let Some(stage) = unsafe { lower_stage(&data, &info.stage, &mut keep) } {
            info.stage = stage;
            changed = true;
        }
    }
    if out_of_memory(&data) {
        // SAFETY: the application's array of `count` handles.
        unsafe { null_handles(pipelines, count) };
        return vk::Result::ERROR_OUT_OF_HOST_MEMORY;
    }
    let passed = if changed { copies.as_ptr() } else { infos };
    // SAFETY: the create infos (the application's, or copies whose pointers `keep` holds alive).
    unsafe { down(device, cache, count, passed, allocator, pipelines) }
}

/// The body of [`create_graphics_pipelines`], under its allocation route.
///
/// # Safety
/// As for [`create_graphics_pipelines`].
unsafe fn create_graphics_pipelines_inner(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo<'static>,
    allocator: *const vk::AllocationCallbacks,
    pipelines: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: a live device.
    let Some(data) = (unsafe { data_of(device) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let down = data.create_graphics_pipelines;
    if infos.is_null() || count == 0 {
        // SAFETY: passed down as it is.
        return unsafe { down(device, cache, count, infos, allocator, pipelines) };
    }
    // SAFETY: the application's array of `count` create infos.
    let mut copies = unsafe { std::slice::from_raw_parts(infos, count as usize) }.to_vec();
    let mut keep = Keep::default();
    let mut changed = false;
    for info in &mut copies {
        if info.p_stages.is_null() || info.stage_count == 0 {
            continue;
        }
        // SAFETY: the create info's array of `stageCount` stages.
        let mut stages =
            unsafe { std::slice::from_raw_parts(info.p_stages, info.stage_count as usize) }
                .to_vec();
        let mut any = false;
        for stage in &mut stages {
            // SAFETY: a valid stage.
            if let Some(new) = unsafe { lower_stage(&data, stage, &mut keep) } {
                *stage = new;
                any = true;
            }
        }
        if any {
            info.p_stages = stages.as_ptr();
            keep.stages.push(stages);
            changed = true;
        }
    }
    if out_of_memory(&data) {
        // SAFETY: the application's array of `count` handles.
        unsafe { null_handles(pipelines, count) };
        return vk::Result::ERROR_OUT_OF_HOST_MEMORY;
    }
    let passed = if changed { copies.as_ptr() } else { infos };
    // SAFETY: as in `create_compute_pipelines`.
    unsafe { down(device, cache, count, passed, allocator, pipelines) }
}

/// The body of [`create_shaders_ext`], under its allocation route.
///
/// # Safety
/// As for [`create_shaders_ext`].
unsafe fn create_shaders_ext_inner(
    device: vk::Device,
    count: u32,
    infos: *const vk::ShaderCreateInfoEXT<'static>,
    allocator: *const vk::AllocationCallbacks,
    shaders: *mut vk::ShaderEXT,
) -> vk::Result {
    // SAFETY: a live device.
    let Some(data) = (unsafe { data_of(device) }) else {
        return vk::Result::ERROR_INITIALIZATION_FAILED;
    };
    let Some(down) = data.create_shaders else {
        return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
    };
    if infos.is_null() || count == 0 {
        // SAFETY: passed down as it is.
        return unsafe { down(device, count, infos, allocator, shaders) };
    }
    // SAFETY: the application's array of `count` create infos.
    let mut copies = unsafe { std::slice::from_raw_parts(infos, count as usize) }.to_vec();
    let mut keep = Keep::default();
    let mut changed = false;
    for info in &mut copies {
        if info.code_type != vk::ShaderCodeTypeEXT::SPIRV {
            continue;
        }
        // SAFETY: `codeSize` bytes of SPIR-V at `pCode`, and the create info's valid chain.
        let (code, (mapping, size)) = unsafe {
            (
                words(info.p_code.cast(), info.code_size),
                map_required_size(&data, info.stage, info.p_next),
            )
        };
        let full = vk::ShaderCreateFlagsEXT::REQUIRE_FULL_SUBGROUPS;
        // SAFETY: the shader's specialization info, NULL or valid.
        let local_x = code
            .and_then(local_size_x)
            .map(|x| unsafe { stage_local_x(x, info.p_specialization_info) });
        if info.flags.contains(full) && data.lowerer.drops_full_subgroups(local_x, size) {
            info.flags &= !full;
            changed = true;
        }
        if let Some(out) = code.and_then(|w| lower(&data, w, size)) {
            info.p_code = out.as_ptr().cast();
            info.code_size = out.len() * 4;
            keep.code.push(out);
            changed = true;
        }
        if mapping != RequiredSize::Keep {
            // SAFETY: the create info's valid chain, which outlives the call.
            let rest = unsafe {
                chain::without(info.p_next, |s| {
                    s == vk::StructureType::PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO
                })
            };
            if let chain::Edited::Unknown(s) = rest {
                data.lowerer.settings().error(&format!(
                    "a shader's required subgroup size goes to the driver unmapped: a struct of \
                     sType {} the layer cannot copy comes before it",
                    s.as_raw()
                ));
                continue;
            }
            let mut head = rest.head(info.p_next);
            if let RequiredSize::Replace(h) = mapping {
                head = keep.required_size_in_front(h, head);
            }
            info.p_next = head;
            keep.chains.push(rest);
            changed = true;
        }
    }
    if out_of_memory(&data) {
        // SAFETY: the application's array of `count` handles.
        unsafe { null_handles(shaders, count) };
        return vk::Result::ERROR_OUT_OF_HOST_MEMORY;
    }
    let passed = if changed { copies.as_ptr() } else { infos };
    // SAFETY: as in `create_compute_pipelines`.
    unsafe { down(device, count, passed, allocator, shaders) }
}

/// Runs a device command that creates objects with `allocator`: the layer's temporaries (the
/// lowering's, the copies of create infos) go through the most specific callbacks there are,
/// the command's, else the device's (or its instance's), with `_COMMAND`.
///
/// # Safety
/// `device` is a live device; `allocator` is NULL or valid for the call.
unsafe fn in_command<R>(
    device: vk::Device,
    allocator: *const vk::AllocationCallbacks,
    f: impl FnOnce() -> R,
) -> R {
    // SAFETY: forwarded.
    let callbacks = unsafe { Callbacks::from_app(allocator) }
        .or_else(|| unsafe { data_of(device) }.and_then(|d| d.callbacks));
    host_memory::take_failure();
    with_route(command_route(callbacks), f)
}

/// Whether the application's callbacks returned NULL during this command (said at the `error`
/// level): the command then answers `VK_ERROR_OUT_OF_HOST_MEMORY` before calling down.
fn out_of_memory(data: &DeviceData) -> bool {
    let failed = host_memory::take_failure();
    if failed {
        data.lowerer.settings().error(
            "the application's allocation callbacks returned NULL while the layer prepared a \
             module: VK_ERROR_OUT_OF_HOST_MEMORY",
        );
    }
    failed
}

/// Writes `VK_NULL_HANDLE` to the `count` handles at `out` (what a failed creation leaves).
///
/// # Safety
/// `out` is NULL or the application's array of `count` handles.
unsafe fn null_handles<H: vk::Handle>(out: *mut H, count: u32) {
    if out.is_null() {
        return;
    }
    for i in 0..count as usize {
        // SAFETY: within the application's array.
        unsafe { out.add(i).write(H::from_raw(0)) };
    }
}

/// `vkCreateShaderModule`.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn create_shader_module(
    device: vk::Device,
    create_info: *const vk::ShaderModuleCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    module: *mut vk::ShaderModule,
) -> vk::Result {
    // SAFETY: forwarded.
    unsafe {
        in_command(device, allocator, || {
            create_shader_module_inner(device, create_info, allocator, module)
        })
    }
}

/// `vkCreateComputePipelines`.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn create_compute_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::ComputePipelineCreateInfo<'static>,
    allocator: *const vk::AllocationCallbacks,
    pipelines: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: forwarded.
    unsafe {
        in_command(device, allocator, || {
            create_compute_pipelines_inner(device, cache, count, infos, allocator, pipelines)
        })
    }
}

/// `vkCreateGraphicsPipelines`.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn create_graphics_pipelines(
    device: vk::Device,
    cache: vk::PipelineCache,
    count: u32,
    infos: *const vk::GraphicsPipelineCreateInfo<'static>,
    allocator: *const vk::AllocationCallbacks,
    pipelines: *mut vk::Pipeline,
) -> vk::Result {
    // SAFETY: forwarded.
    unsafe {
        in_command(device, allocator, || {
            create_graphics_pipelines_inner(device, cache, count, infos, allocator, pipelines)
        })
    }
}

/// `vkCreateShadersEXT`.
///
/// # Safety
/// The spec's contract for the command.
pub unsafe fn create_shaders_ext(
    device: vk::Device,
    count: u32,
    infos: *const vk::ShaderCreateInfoEXT<'static>,
    allocator: *const vk::AllocationCallbacks,
    shaders: *mut vk::ShaderEXT,
) -> vk::Result {
    // SAFETY: forwarded.
    unsafe {
        in_command(device, allocator, || {
            create_shaders_ext_inner(device, count, infos, allocator, shaders)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_specialization_gives_the_value_of_its_entry_and_nothing_it_cannot_hold() {
        let data: [u8; 12] = [0, 0, 1, 2, 3, 4, 8, 0, 0, 0, 9, 9];
        let entries = [
            // At an odd offset: read without alignment.
            vk::SpecializationMapEntry {
                constant_id: 3,
                offset: 2,
                size: 4,
            },
            vk::SpecializationMapEntry {
                constant_id: 5,
                offset: 6,
                size: 4,
            },
            // A 2-byte entry, and one past `dataSize`.
            vk::SpecializationMapEntry {
                constant_id: 6,
                offset: 0,
                size: 2,
            },
            vk::SpecializationMapEntry {
                constant_id: 7,
                offset: 10,
                size: 4,
            },
        ];
        let info = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        // SAFETY (test): a valid struct over live arrays, or NULL.
        let get = |id| unsafe { specialized(&info, id) };
        assert_eq!(get(3), Some(u32::from_ne_bytes([1, 2, 3, 4])));
        assert_eq!(get(5), Some(8));
        assert_eq!((get(6), get(7), get(4)), (None, None, None));
        // SAFETY (test): NULL is never read.
        assert_eq!(unsafe { specialized(std::ptr::null(), 3) }, None);
        let spec = LocalSizeX {
            value: 16,
            spec_id: Some(5),
        };
        // SAFETY (test): as above.
        assert_eq!(unsafe { stage_local_x(spec, &info) }, 8);
        // SAFETY (test): as above.
        assert_eq!(unsafe { stage_local_x(spec, std::ptr::null()) }, 16);
    }
}
