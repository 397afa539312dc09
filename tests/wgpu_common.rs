//! What the wgpu harnesses share (`wgpu_exec.rs`, `wgpu_conformance.rs`): a wgpu device on
//! lavapipe with the `SUBGROUP` feature, a compute pipeline of a SPIR-V module loaded through wgpu
//! (naga's SPIR-V front end), and its dispatch over storage buffers at bindings 0..n of group 0.

use std::borrow::Cow;
use std::time::Duration;

/// A wgpu device on lavapipe with subgroup operations.
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// The subgroup size wgpu reports (lavapipe's one size).
    pub subgroup_size: u32,
}

pub fn gpu() -> Gpu {
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::VULKAN,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapters = pollster::block_on(instance.enumerate_adapters(wgpu::Backends::VULKAN));
    let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
    let adapter = adapters
        .into_iter()
        .find(|a| a.get_info().name.contains("llvmpipe"))
        .unwrap_or_else(|| {
            panic!("wgpu finds no lavapipe adapter (adapters: {names:?}); install mesa-vulkan-drivers and libvulkan1 (cargo xtask install-deps)")
        });
    assert!(
        adapter.features().contains(wgpu::Features::SUBGROUP),
        "wgpu does not offer subgroup operations on lavapipe"
    );
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("spv-subgroup wgpu test"),
        // 64-bit and 16-bit types where the adapter has them: the modules lowered for `naga` use
        // them outside subgroup operations only (the target has no extended types).
        required_features: wgpu::Features::SUBGROUP
            | (adapter.features()
                & (wgpu::Features::SHADER_F64
                    | wgpu::Features::SHADER_INT64
                    | wgpu::Features::SHADER_I16
                    | wgpu::Features::SHADER_F16)),
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .expect("a wgpu device on lavapipe");
    let subgroup_size = adapter.get_info().subgroup_min_size;
    Gpu {
        device,
        queue,
        subgroup_size,
    }
}

/// Loads `words` through wgpu (naga's SPIR-V front end) and makes a compute pipeline of its
/// `main`, or returns wgpu's error when it rejects the module.
pub fn pipeline(gpu: &Gpu, words: &[u32], what: &str) -> Result<wgpu::ComputePipeline, String> {
    let device = &gpu.device;
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some(what),
        source: wgpu::ShaderSource::SpirV(Cow::Borrowed(words)),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(what),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    match pollster::block_on(scope.pop()) {
        Some(e) => Err(format!("{what}: wgpu rejects the module: {e}")),
        None => Ok(pipeline),
    }
}

/// Runs `groups` workgroups of `pipeline` once over `inputs` bound at bindings 0..n of group 0,
/// and returns the buffers' contents afterwards. A pipeline is made once and run per input set
/// because lavapipe's shader compile is most of a run's time.
pub fn run(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    inputs: &[Vec<u32>],
    groups: u32,
) -> Vec<Vec<u32>> {
    let device = &gpu.device;
    let storage: Vec<wgpu::Buffer> = inputs
        .iter()
        .map(|data| {
            let b = device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: (data.len() * 4) as u64,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let bytes: Vec<u8> = data.iter().flat_map(|w| w.to_le_bytes()).collect();
            gpu.queue.write_buffer(&b, 0, &bytes);
            b
        })
        .collect();
    let readback: Vec<wgpu::Buffer> = storage
        .iter()
        .map(|b| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: b.size(),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
        .collect();
    let entries: Vec<wgpu::BindGroupEntry> = storage
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(groups, 1, 1);
    }
    for (s, r) in storage.iter().zip(&readback) {
        encoder.copy_buffer_to_buffer(s, 0, r, 0, s.size());
    }
    gpu.queue.submit([encoder.finish()]);
    readback
        .iter()
        .map(|r| {
            let slice = r.slice(..);
            slice.map_async(wgpu::MapMode::Read, |res| res.expect("mapping the results"));
            device
                .poll(wgpu::PollType::Wait {
                    submission_index: None,
                    timeout: Some(Duration::from_secs(120)),
                })
                .expect("the dispatch finishes");
            let data = slice.get_mapped_range().expect("the mapped results");
            let words = data
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            drop(data);
            r.unmap();
            words
        })
        .collect()
}
