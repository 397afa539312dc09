//! Compute pipelines and their dispatch: the parts every pipeline has (shader modules,
//! descriptor set layout, pipeline layout; the graphics path shares them), a compute pipeline
//! from SPIR-V words ([`PipelineOptions`]: entry point, specialization constants, required
//! subgroup size), and a dispatch once ([`Runner::run`]) or timed several times
//! ([`Runner::time`]).

use std::ffi::CString;
use std::time::Duration;

use ash::vk;

use crate::{call, Pipeline, Runner, VkError};

/// The map entries and data of 32-bit specialization constants `(constant_id, value)`.
pub(crate) fn specialization(consts: &[(u32, u32)]) -> (Vec<vk::SpecializationMapEntry>, Vec<u8>) {
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

impl Runner {
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

    pub(crate) fn submit(
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
}
