//! wgpu end to end: modules lowered for the `naga` target are loaded with `wgpu` (so naga's
//! SPIR-V front end translates them, exactly as a wgpu user gets it), run as compute pipelines on
//! lavapipe through wgpu's Vulkan backend at subgroup sizes 4, 8 and 16, and checked.
//!
//! The shaders are the self-checking HLSL fixtures of `fixtures/lower/hlsl/` (real Slang output:
//! WaveMatch, WaveMultiPrefix*, WaveActiveAllEqual and friends; see `lower_hlsl_exec.rs` for the
//! record layout): every result must equal the brute-force reference the same shader computes.
//!
//! What wgpu 30 lacks and this test therefore does not do: wgpu has no way to ask for a subgroup
//! size (no `requiredSubgroupSize`) and no partial-subgroup control, so each size is lavapipe's
//! own, chosen by `LP_NATIVE_VECTOR_WIDTH` in a child process, as for the Vulkan runner.

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

use std::borrow::Cow;
use std::time::Duration;

use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::hlsl::{check_records, fixtures, keys, GROUPS, LOCAL, RECORD};
use spv_subgroup_tests::{lavapipe, tools};

/// A wgpu device on lavapipe with subgroup operations.
struct Gpu {
    device: wgpu::Device,
    queue: wgpu::Queue,
    subgroup_size: u32,
}

fn gpu() -> Gpu {
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
        required_features: wgpu::Features::SUBGROUP,
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

/// Loads `words` through wgpu (naga's SPIR-V front end), runs it once over `inputs` bound at
/// bindings 0..n of group 0, and returns the buffers' contents afterwards.
fn dispatch(gpu: &Gpu, words: &[u32], inputs: &[Vec<u32>], what: &str) -> Vec<Vec<u32>> {
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
    if let Some(e) = pollster::block_on(scope.pop()) {
        panic!("{what}: wgpu rejects the module: {e}");
    }
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
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(GROUPS, 1, 1);
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

/// The suite at one subgroup size; runs only inside `lavapipe_subgroup_size_*`.
#[test]
fn child_suite() {
    if std::env::var("SPV_WGPU_CHILD").is_err() {
        return;
    }
    let gpu = gpu();
    println!("subgroup size: {}", gpu.subgroup_size);
    let target = Target::preset("naga").expect("preset");
    for path in fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let input = tools::assemble(&text, "vulkan1.1").unwrap_or_else(|e| panic!("{name}: {e}"));
        let opts = LowerOptions {
            target: target.clone(),
            ..LowerOptions::default()
        };
        let (out, _) =
            lower_words(&input, &opts).unwrap_or_else(|e| panic!("{name}: lowering fails: {e}"));
        let float = name.contains("float");
        let mut compared = 0;
        for seed in 1..=3 {
            let inputs = vec![
                keys(float, seed),
                vec![0xdead_beef; (LOCAL * GROUPS) as usize * RECORD],
            ];
            let what = format!("{name} lowered:naga, seed {seed}");
            let results = dispatch(&gpu, &out, &inputs, &what);
            compared += check_records(&results[1], &what);
        }
        assert!(compared > 0, "{name}: no lane checked anything");
        println!("{name} lowered:naga through wgpu: {compared} results agree");
    }
}

fn at_size(size: u32) {
    let text = lavapipe::run_child(
        "child_suite",
        size,
        &[("SPV_WGPU_CHILD", "1")],
        Duration::from_secs(900),
    );
    println!("{text}");
}

#[test]
fn lavapipe_subgroup_size_4() {
    at_size(4);
}

#[test]
fn lavapipe_subgroup_size_8() {
    at_size(8);
}

#[test]
fn lavapipe_subgroup_size_16() {
    at_size(16);
}
