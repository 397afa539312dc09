//! What every submission (a dispatch or a draw) goes through: the storage buffers uploaded to
//! host-visible memory and bound in a descriptor set, a one-time command buffer begun
//! ([`Runner::prepare`]); then the shader writes made visible, the command buffer submitted and
//! waited for, and the buffers read back ([`Runner::finish`]). [`Resources`] frees it all.

use std::time::Duration;

use ash::vk;

use crate::{call, Pipeline, Runner, VkError};

impl Runner {
    pub(crate) fn memory_type(&self, bits: u32) -> Option<u32> {
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
    pub(crate) queries: vk::QueryPool,
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
