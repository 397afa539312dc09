//! The graphics path: a vertex and a fragment shader drawn once into one color attachment.
//!
//! It exists to run fragment shaders, the stage where subgroups are least like compute: the
//! driver packs invocations by quads, helper invocations take part in subgroup operations but
//! cannot store, and subgroups are partial at a primitive's edges.
//! The pipeline has no vertex buffers (the vertex shader makes its positions from
//! `gl_VertexIndex`, e.g. one triangle covering the screen), a dynamic viewport and scissor of
//! the draw's size, and the compute path's storage buffers at bindings `0..buffers` of set 0,
//! visible to both stages. A draw creates a `R8G8B8A8_UNORM` attachment of its size, clears it,
//! draws, and reads the storage buffers back like [`Runner::run`]; the attachment itself is not
//! read back (the tests write what they check into storage buffers).
//! Without the attachment ([`GraphicsOptions::color_attachment`] false) the render pass has none
//! and the framebuffer only a size: lavapipe 22.3 crashes (in LLVM) compiling a pipeline with a
//! color attachment at `LP_NATIVE_VECTOR_WIDTH=512`, and runs one without.
//! Buffers, descriptor set, submission and read-back are the compute path's
//! (`Runner::prepare`, `Runner::finish`).

use std::ffi::CString;
use std::time::Duration;

use ash::vk;

use crate::{call, specialization, Pipeline, Resources, Runner, VkError};

/// The color attachment's format (any format will do: the tests read storage buffers).
const COLOR_FORMAT: vk::Format = vk::Format::R8G8B8A8_UNORM;

/// How to build a graphics pipeline.
#[derive(Clone, Debug)]
pub struct GraphicsOptions {
    /// The entry point name of both shaders.
    pub entry: String,
    /// How many storage buffers the shaders use: bindings `0..buffers` of descriptor set 0.
    pub buffers: u32,
    /// Specialization constants `(constant_id, 32-bit value)` of both stages.
    pub spec_constants: Vec<(u32, u32)>,
    /// Whether the render pass has the color attachment (else fragment outputs are dropped).
    pub color_attachment: bool,
}

impl Default for GraphicsOptions {
    fn default() -> Self {
        GraphicsOptions {
            entry: "main".to_owned(),
            buffers: 1,
            spec_constants: Vec::new(),
            color_attachment: true,
        }
    }
}

/// One draw: the color attachment's size (also the viewport and scissor) and the vertices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Draw {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// Vertices of the one `vkCmdDraw` (3 for one triangle).
    pub vertices: u32,
    /// The first `gl_VertexIndex` (a vertex shader without vertex buffers may hold several
    /// shapes, one pipeline drawing each in turn).
    pub first_vertex: u32,
}

impl Runner {
    /// Creates a graphics pipeline from a vertex and a fragment module (SPIR-V words): triangle
    /// list, no vertex input, no culling, one sample, one color attachment of `COLOR_FORMAT`
    /// (or none).
    /// Fails with [`VkError::Invalid`] when the queue has no graphics or the device lacks
    /// `fragmentStoresAndAtomics` while storage buffers are asked for.
    pub fn graphics_pipeline(
        &self,
        vertex: &[u32],
        fragment: &[u32],
        opts: &GraphicsOptions,
    ) -> Result<Pipeline<'_>, VkError> {
        self.check_alive()?;
        if !self.info.graphics {
            return Err(VkError::Invalid(
                "the runner's queue does not do graphics".into(),
            ));
        }
        if opts.buffers > 0 && !self.info.features.fragment_stores_and_atomics {
            return Err(VkError::Invalid(
                "the device lacks fragmentStoresAndAtomics (storage buffers in fragment shaders)"
                    .into(),
            ));
        }
        let entry = CString::new(opts.entry.as_str())
            .map_err(|_| VkError::Invalid("entry point name has a NUL".into()))?;
        let mut p = self.pipeline_shell(
            &[vertex, fragment],
            opts.buffers,
            vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT,
            vk::PipelineBindPoint::GRAPHICS,
        )?;
        let d = &self.device;
        p.render_pass = self.render_pass(opts.color_attachment)?;
        p.color_attachment = opts.color_attachment;
        let colors = usize::from(opts.color_attachment);

        let (entries, data) = specialization(&opts.spec_constants);
        let spec = vk::SpecializationInfo::default()
            .map_entries(&entries)
            .data(&data);
        let stage = |s: vk::ShaderStageFlags, m: vk::ShaderModule| {
            let info = vk::PipelineShaderStageCreateInfo::default()
                .stage(s)
                .module(m)
                .name(&entry);
            if entries.is_empty() {
                info
            } else {
                info.specialization_info(&spec)
            }
        };
        let stages = [
            stage(vk::ShaderStageFlags::VERTEX, p.modules[0]),
            stage(vk::ShaderStageFlags::FRAGMENT, p.modules[1]),
        ];
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let viewport = vk::PipelineViewportStateCreateInfo::default()
            .viewport_count(1)
            .scissor_count(1);
        let raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0);
        let multisample = vk::PipelineMultisampleStateCreateInfo::default()
            .rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let blend_attachments = [vk::PipelineColorBlendAttachmentState::default()
            .color_write_mask(vk::ColorComponentFlags::RGBA)];
        let blend = vk::PipelineColorBlendStateCreateInfo::default()
            .attachments(&blend_attachments[..colors]);
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let gpci = [vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(p.layout)
            .render_pass(p.render_pass)
            .subpass(0)];
        // SAFETY: valid create info; the modules, layout and render pass are live.
        let made = unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &gpci, None) };
        match made {
            Ok(v) => {
                p.pipeline = v.first().copied().unwrap_or_default();
                Ok(p)
            }
            Err((v, result)) => {
                for pl in v {
                    // SAFETY: a pipeline this call created (or null).
                    unsafe { d.destroy_pipeline(pl, None) };
                }
                Err(VkError::Pipeline {
                    stage: "vkCreateGraphicsPipelines",
                    result,
                })
            }
        }
    }

    /// A render pass of one color attachment (or none), cleared, whose shader writes to storage
    /// buffers are the only results that matter.
    fn render_pass(&self, color_attachment: bool) -> Result<vk::RenderPass, VkError> {
        let colors = usize::from(color_attachment);
        let attachments = [vk::AttachmentDescription::default()
            .format(COLOR_FORMAT)
            .samples(vk::SampleCountFlags::TYPE_1)
            .load_op(vk::AttachmentLoadOp::CLEAR)
            .store_op(vk::AttachmentStoreOp::DONT_CARE)
            .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
            .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
            .initial_layout(vk::ImageLayout::UNDEFINED)
            .final_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)];
        let color = [vk::AttachmentReference {
            attachment: 0,
            layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        }];
        let subpasses = [vk::SubpassDescription::default()
            .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
            .color_attachments(&color[..colors])];
        let rpci = vk::RenderPassCreateInfo::default()
            .attachments(&attachments[..colors])
            .subpasses(&subpasses);
        // SAFETY: valid create info.
        unsafe { self.device.create_render_pass(&rpci, None) }.map_err(|result| VkError::Pipeline {
            stage: "vkCreateRenderPass",
            result,
        })
    }

    /// Uploads `buffers` (binding i = `buffers[i]`, 32-bit words), draws once with the graphics
    /// pipeline `p` into a fresh color attachment of `draw`'s size, waits at most `timeout`, and
    /// reads every buffer back into `buffers`.
    pub fn draw(
        &self,
        p: &Pipeline<'_>,
        buffers: &mut [Vec<u32>],
        draw: Draw,
        timeout: Duration,
    ) -> Result<(), VkError> {
        let (max_w, max_h) = self.info.max_framebuffer;
        if draw.width == 0 || draw.height == 0 || draw.width > max_w || draw.height > max_h {
            return Err(VkError::Invalid(format!(
                "a {}x{} draw does not fit the device (1..={max_w} x 1..={max_h})",
                draw.width, draw.height
            )));
        }
        let mut res = self.prepare(p, vk::PipelineBindPoint::GRAPHICS, buffers)?;
        self.attachment(&mut res, p, draw)?;
        let d = &self.device;
        let cb = res.cmd;
        let area = vk::Rect2D {
            offset: vk::Offset2D { x: 0, y: 0 },
            extent: vk::Extent2D {
                width: draw.width,
                height: draw.height,
            },
        };
        let clear = [vk::ClearValue {
            color: vk::ClearColorValue {
                float32: [0.0, 0.0, 0.0, 0.0],
            },
        }];
        let rpbi = vk::RenderPassBeginInfo::default()
            .render_pass(p.render_pass)
            .framebuffer(res.framebuffer)
            .render_area(area)
            .clear_values(&clear[..usize::from(p.color_attachment)]);
        let viewport = [vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: draw.width as f32,
            height: draw.height as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        }];
        // SAFETY: recording into the command buffer `prepare` began, with live objects.
        unsafe {
            d.cmd_begin_render_pass(cb, &rpbi, vk::SubpassContents::INLINE);
            d.cmd_bind_pipeline(cb, vk::PipelineBindPoint::GRAPHICS, p.pipeline);
            d.cmd_bind_descriptor_sets(
                cb,
                vk::PipelineBindPoint::GRAPHICS,
                p.layout,
                0,
                &[res.set],
                &[],
            );
            d.cmd_set_viewport(cb, 0, &viewport);
            d.cmd_set_scissor(cb, 0, &[area]);
            d.cmd_draw(cb, draw.vertices, 1, draw.first_vertex, 0);
            d.cmd_end_render_pass(cb);
        }
        self.finish(
            &mut res,
            vk::PipelineStageFlags::VERTEX_SHADER | vk::PipelineStageFlags::FRAGMENT_SHADER,
            buffers,
            timeout,
        )
    }

    /// Creates the draw's color attachment (image, memory, view), if `p` has one, and its
    /// framebuffer in `res`.
    fn attachment(
        &self,
        res: &mut Resources<'_>,
        p: &Pipeline<'_>,
        draw: Draw,
    ) -> Result<(), VkError> {
        let d = &self.device;
        if p.color_attachment {
            self.color_image(res, draw)?;
        }
        let views = [res.view];
        let fci = vk::FramebufferCreateInfo::default()
            .render_pass(p.render_pass)
            .attachments(&views[..usize::from(p.color_attachment)])
            .width(draw.width)
            .height(draw.height)
            .layers(1);
        // SAFETY: valid create info; the views match the render pass's attachments.
        res.framebuffer =
            unsafe { d.create_framebuffer(&fci, None) }.map_err(call("vkCreateFramebuffer"))?;
        Ok(())
    }

    /// Creates the color attachment's image, memory and view in `res`.
    fn color_image(&self, res: &mut Resources<'_>, draw: Draw) -> Result<(), VkError> {
        let d = &self.device;
        let ici = vk::ImageCreateInfo::default()
            .image_type(vk::ImageType::TYPE_2D)
            .format(COLOR_FORMAT)
            .extent(vk::Extent3D {
                width: draw.width,
                height: draw.height,
                depth: 1,
            })
            .mip_levels(1)
            .array_layers(1)
            .samples(vk::SampleCountFlags::TYPE_1)
            .tiling(vk::ImageTiling::OPTIMAL)
            .usage(vk::ImageUsageFlags::COLOR_ATTACHMENT)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .initial_layout(vk::ImageLayout::UNDEFINED);
        // SAFETY: valid create info (the size was checked against the device's limits).
        res.image = unsafe { d.create_image(&ici, None) }.map_err(call("vkCreateImage"))?;
        // SAFETY: a live image.
        let req = unsafe { d.get_image_memory_requirements(res.image) };
        let ty = self
            .image_memory_type(req.memory_type_bits)
            .ok_or_else(|| VkError::Invalid("no memory type for the color attachment".into()))?;
        let mai = vk::MemoryAllocateInfo::default()
            .allocation_size(req.size)
            .memory_type_index(ty);
        // SAFETY: valid allocate info.
        res.image_memory =
            unsafe { d.allocate_memory(&mai, None) }.map_err(call("vkAllocateMemory"))?;
        // SAFETY: image and memory are live and the type fits.
        unsafe { d.bind_image_memory(res.image, res.image_memory, 0) }
            .map_err(call("vkBindImageMemory"))?;
        let ivci = vk::ImageViewCreateInfo::default()
            .image(res.image)
            .view_type(vk::ImageViewType::TYPE_2D)
            .format(COLOR_FORMAT)
            .subresource_range(vk::ImageSubresourceRange {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: 1,
            });
        // SAFETY: valid create info for a live image.
        res.view =
            unsafe { d.create_image_view(&ivci, None) }.map_err(call("vkCreateImageView"))?;
        Ok(())
    }

    /// A memory type for the attachment: device-local if one fits, else any that fits.
    fn image_memory_type(&self, bits: u32) -> Option<u32> {
        let n = self.memory.memory_type_count as usize;
        let types = self.memory.memory_types.get(..n)?;
        let fits = |i: &usize| bits & (1 << i) != 0;
        (0..n)
            .filter(fits)
            .find(|&i| {
                types[i]
                    .property_flags
                    .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
            })
            .or_else(|| (0..n).find(fits))
            .map(|i| i as u32)
    }
}
