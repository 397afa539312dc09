//! An application that knows nothing of spv-subgroup, run through the layer on lavapipe.
//!
//! The application part (`App`) uses `ash` and the system loader only: it requires
//! `VK_NV_shader_subgroup_partitioned` and `VK_EXT_shader_subgroup_vote` and the partitioned
//! feature, enables them, builds compute pipelines from the README example's unlowered SPIR-V
//! (`fixtures/examples/partitioned_vote.comp`, compiled by glslang here) and checks each result
//! against the host model (`spv_subgroup_tests::example`). lavapipe has no partitioned
//! operations, so every answer that comes back right was computed by the layer's lowering.
//!
//! The parent tests write a manifest pointing at the layer library cargo built next to this
//! binary, and re-run this binary's `child_suite` on lavapipe at subgroup sizes 4, 8 and 16 (the
//! layer enabled through `VK_LAYER_PATH` + `VK_INSTANCE_LAYERS`), and once at 8 with the layer
//! named in `ppEnabledLayerNames` instead. Each child runs the driver's vote natively and again
//! with `SPV_SUBGROUP_LAYER_FORCE=1` (both extensions lowered), and creates the pipeline from 8
//! threads at once. `vulkaninfo_lists_the_emulated_extensions` runs the real `vulkaninfo`.

#![allow(clippy::print_stdout)] // A test harness: its report is what it prints.

use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ash::vk;
use spv_subgroup_tests::{example, lavapipe, tools};

const LAYER: &CStr = c"VK_LAYER_SPV_SUBGROUP_lower";
const NV_PARTITIONED: &CStr = c"VK_NV_shader_subgroup_partitioned";
const EXT_PARTITIONED: &CStr = c"VK_EXT_shader_subgroup_partitioned";
const EXT_VOTE: &CStr = c"VK_EXT_shader_subgroup_vote";

/// The child's variable: enable the layer through `ppEnabledLayerNames`.
const BY_NAME_VAR: &str = "LAYER_APP_ENABLE_BY_NAME";
/// The child's variable: where the layer dumps modules (so the test sees what was lowered).
const DUMP_VAR: &str = "SPV_SUBGROUP_LAYER_DUMP";
/// The child's variable: which modes to run, `driver` (the layer lowers only what the driver
/// lacks) and/or `force` (`SPV_SUBGROUP_LAYER_FORCE=1`), comma-separated; both by default.
const MODES_VAR: &str = "LAYER_APP_MODES";
/// [`device_through_layer`]'s variable: a folder holding the layer's installed manifest (the GPU
/// bundle's); without it, a manifest for the library cargo built.
const LAYER_PATH_VAR: &str = "LAYER_APP_LAYER_PATH";
/// [`device_through_layer`]'s variable: the subgroup size the device must report.
const EXPECT_SIZE_VAR: &str = "LAYER_APP_EXPECT_SIZE";
/// [`device_through_layer`]'s variable: `1` where the driver has all three extensions natively,
/// so that without `SPV_SUBGROUP_LAYER_FORCE` the layer must emulate and lower nothing.
const EXPECT_NATIVE_VAR: &str = "LAYER_APP_EXPECT_NATIVE";
/// `SpvCapabilityGroupNonUniformPartitionedNV` (= `...EXT`).
const CAP_PARTITIONED: u32 = 5297;
/// `SpvCapabilitySubgroupVoteKHR`.
const CAP_VOTE_KHR: u32 = 4431;

// ---------------------------------------------------------------------------------------------
// The test's side: the layer library, its manifest, the children.

/// The layer library cargo built for this test binary: in `target/<profile>/deps` beside it
/// (`cargo test` builds the package's cdylib there before its integration tests, and copies it
/// up to `target/<profile>` only on `cargo build`).
fn layer_library() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe
        .parent()
        .expect("the test binary lives in target/<profile>/deps");
    let lib = deps.join("libVkLayer_spv_subgroup.so");
    assert!(
        lib.is_file(),
        "{} is missing: cargo builds the layer before this crate's tests; run them with \
         `cargo test -p spv-subgroup-layer`",
        lib.display()
    );
    lib
}

/// A folder with the layer's manifest, its `library_path` the library in `target/`.
fn manifest_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let template = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifest/VkLayer_spv_subgroup.json.in"),
    )
    .expect("the manifest template");
    let lib = layer_library();
    let text = template.replace("@LIBRARY_PATH@", lib.to_str().expect("a UTF-8 path"));
    std::fs::write(dir.path().join("VkLayer_spv_subgroup.json"), text).expect("writing it");
    dir
}

/// Fails with an install hint unless `tool` starts (`tools::require` knows the SPIR-V tools'
/// packages only).
fn require_tool(tool: &str, package: &str) {
    // Whether it starts at all: vulkaninfo has no `--version` and exits 1 on `--help`.
    let runs = Command::new(tool).arg("--help").output().is_ok();
    assert!(
        runs,
        "`{tool}` is not installed: run `cargo xtask install-deps` or `apt-get install {package}`"
    );
}

/// Runs `child_suite` at `size` with the layer enabled through the environment, or by name.
fn run_through_layer(size: u32, by_name: bool) -> String {
    let manifests = manifest_dir();
    let dumps = tempfile::tempdir().expect("a temporary folder");
    let path = manifests.path().to_str().expect("UTF-8").to_owned();
    let dump = dumps.path().to_str().expect("UTF-8").to_owned();
    let mut env = vec![("VK_LAYER_PATH", path.as_str()), (DUMP_VAR, dump.as_str())];
    if by_name {
        env.push((BY_NAME_VAR, "1"));
    } else {
        env.push(("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower"));
    }
    let out = lavapipe::run_suite(size, &env, Duration::from_secs(120));
    print!("{out}");
    // The layer took everything the driver must not see out of the device create info, and
    // refused no module.
    assert!(!out.contains("VK_LAYER_SPV_SUBGROUP_lower: error"), "{out}");
    // The layer lowered the module and did not only pass it through: one original and one
    // lowered module per target (vote native, then forced), the lowered ones valid SPIR-V
    // without the partitioned capability.
    let mut lowered = Vec::new();
    for entry in std::fs::read_dir(dumps.path()).expect("the dump folder") {
        let p = entry.expect("an entry").path();
        if p.to_string_lossy().ends_with(".lowered.spv") {
            lowered.push(tools::read_words(&p));
        }
    }
    assert_eq!(
        lowered.len(),
        2,
        "two lowered modules (native vote, forced):\n{out}"
    );
    for words in &lowered {
        tools::spirv_val(words, "vulkan1.3").expect("the lowered module passes spirv-val");
        let text = tools::disassemble(words);
        assert!(!text.contains("GroupNonUniformPartitionedNV"), "{text}");
    }
    assert!(
        lowered
            .iter()
            .any(|w| tools::disassemble(w).contains("SubgroupVoteKHR")),
        "the native-vote module keeps the driver's KHR votes"
    );
    assert!(
        lowered
            .iter()
            .any(|w| !tools::disassemble(w).contains("SubgroupVoteKHR")),
        "the forced module has its KHR votes lowered"
    );
    // With SPV_SUBGROUP_LAYER_SUBGROUP_SIZE=N below the hardware's size (`emulated_sizes`):
    // the models' answers, and the modules emulated at N (the example, and the size observer and
    // the full-subgroups shaders, which use no emulated extension) valid and marked so.
    for n in [4u32, 8].into_iter().filter(|&n| n < size) {
        assert!(
            out.contains(&format!("emulated {n} on {size}: model answers")),
            "{out}"
        );
        let dir = dumps.path().join(format!("emulated-{n}"));
        let mut emulated = 0;
        for entry in std::fs::read_dir(&dir).expect("the emulated modules' dump folder") {
            let p = entry.expect("an entry").path();
            if p.to_string_lossy().ends_with(".lowered.spv") {
                let words = tools::read_words(&p);
                tools::spirv_val(&words, "vulkan1.3")
                    .expect("the emulated module passes spirv-val");
                let text = tools::disassemble(&words);
                assert!(
                    text.contains(&format!("--emulate-subgroup-size {n}")),
                    "not emulated at {n}:\n{text}"
                );
                emulated += 1;
            }
        }
        // The full-subgroups shader in its four forms (`check_full_subgroups`).
        assert_eq!(
            emulated, 6,
            "the example, the observer and the full-subgroups shaders, emulated at {n}:\n{out}"
        );
    }
    out
}

#[test]
fn lavapipe_subgroup_size_4() {
    run_through_layer(4, false);
}

#[test]
fn lavapipe_subgroup_size_8() {
    run_through_layer(8, false);
}

#[test]
fn lavapipe_subgroup_size_16() {
    run_through_layer(16, false);
}

#[test]
fn enabled_by_name_in_pp_enabled_layer_names() {
    let out = run_through_layer(8, true);
    assert!(out.contains("layer enabled by name"), "{out}");
}

/// The application through the layer on another device, at that device's own subgroup size, as
/// `cargo xtask gpu`'s `run.sh` runs it on the NVIDIA GPU (`SPV_GPU_RUN=layer`):
///
/// ```text
/// SPV_SUBGROUP_ROOT=$PWD LAYER_APP_DEVICE=NVIDIA LAYER_APP_NV_ONLY=1 LAYER_APP_EXPECT_SIZE=32 \
///   LAYER_APP_EXPECT_NATIVE=1 LAYER_APP_LAYER_PATH=.gpu/layer/share/vulkan/explicit_layer.d \
///   app --exact device_through_layer --include-ignored --nocapture
/// ```
///
/// Two children, each with its own dump folder and the layer's `info` log: the driver's mode
/// (the layer emulates what the driver lacks; with `LAYER_APP_EXPECT_NATIVE=1` that must be
/// nothing: every module goes down untouched, none is dumped) and `SPV_SUBGROUP_LAYER_FORCE=1`
/// (both extensions emulated: the modules the layer lowered pass spirv-val and declare neither
/// capability). Each prints one `layer run:` line: device, subgroup size, mode, cases that match
/// the host model. `LAYER_APP_DEVICE` (default `llvmpipe`) picks the device by name.
#[test]
#[ignore = "for the GPU machine (cargo xtask gpu, SPV_GPU_RUN=layer) or another device by hand"]
fn device_through_layer() {
    let written;
    let layer_path = match std::env::var(LAYER_PATH_VAR) {
        Ok(dir) => dir,
        Err(_) => {
            written = manifest_dir();
            written.path().to_str().expect("UTF-8").to_owned()
        }
    };
    let expect_native = std::env::var(EXPECT_NATIVE_VAR).is_ok_and(|v| v == "1");
    let expect_size: Option<u32> = std::env::var(EXPECT_SIZE_VAR)
        .ok()
        .map(|v| v.parse().expect("LAYER_APP_EXPECT_SIZE: a number"));
    let mut summaries = Vec::new();
    let mut failures = Vec::new();
    for mode in ["driver", "force"] {
        let dumps = tempfile::tempdir().expect("a temporary folder");
        let dump = dumps.path().to_str().expect("UTF-8").to_owned();
        let env = [
            (lavapipe::CHILD_VAR, "1"),
            ("VK_LAYER_PATH", layer_path.as_str()),
            ("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower"),
            (DUMP_VAR, dump.as_str()),
            ("SPV_SUBGROUP_LAYER_LOG", "info"),
            (MODES_VAR, mode),
        ];
        let (ok, out) = run_child_on_device("child_suite", &env, Duration::from_secs(300));
        print!("{out}");
        // The child's lines (libtest may print `test child_suite ... ` before the first).
        let field = |prefix: &str| {
            out.lines()
                .find_map(|l| l.split_once(prefix).map(|(_, v)| v.trim().to_owned()))
        };
        let device = field("device: ").unwrap_or_else(|| "(none)".to_owned());
        let size = field("subgroup size: ").unwrap_or_else(|| "(none)".to_owned());
        let cases = out
            .lines()
            .find_map(|l| {
                l.split_once(": ")
                    .filter(|(_, r)| r.ends_with("cases match the host model"))
            })
            .and_then(|(_, r)| r.rsplit_once(": ").map(|(_, c)| c.to_owned()))
            .unwrap_or_else(|| "no count (the child stopped early)".to_owned());
        // What the layer emulated, from its own `info` line for the device.
        let emulating = out
            .lines()
            .find(|l| {
                l.contains("VK_LAYER_SPV_SUBGROUP_lower: device `") && l.contains("emulating")
            })
            .map(|l| (l.contains("partitioned: true"), l.contains("vote: true")));
        let mut lowered = Vec::new();
        for entry in std::fs::read_dir(dumps.path()).expect("the dump folder") {
            let p = entry.expect("an entry").path();
            if p.to_string_lossy().ends_with(".lowered.spv") {
                lowered.push(tools::read_words(&p));
            }
        }
        let mut problems = Vec::new();
        if !ok {
            problems.push("the child failed".to_owned());
        }
        if let Some(want) = expect_size {
            if size != want.to_string() {
                problems.push(format!("subgroup size {size}, not {want}"));
            }
        }
        let described = match (mode, emulating) {
            (_, None) => {
                problems.push("the layer logged no device (was it loaded?)".to_owned());
                "the layer not seen".to_owned()
            }
            ("driver", Some((false, false))) => {
                if !lowered.is_empty() {
                    problems.push(format!(
                        "{} modules lowered while the layer emulates nothing",
                        lowered.len()
                    ));
                }
                format!(
                    "pass-through (the driver has the extensions; modules lowered: {})",
                    lowered.len()
                )
            }
            ("driver", Some((partitioned, vote))) => {
                if expect_native {
                    problems.push(format!(
                        "the layer emulates partitioned: {partitioned}, vote: {vote} where the driver should have both"
                    ));
                }
                format!(
                    "the driver's (emulating partitioned: {partitioned}, vote: {vote}; modules lowered: {})",
                    lowered.len()
                )
            }
            (_, Some((partitioned, vote))) => {
                if !(partitioned && vote) {
                    problems.push("SPV_SUBGROUP_LAYER_FORCE=1 did not emulate both".to_owned());
                }
                format!(
                    "SPV_SUBGROUP_LAYER_FORCE=1 (modules lowered: {})",
                    lowered.len()
                )
            }
        };
        if let Some((partitioned, vote)) = emulating.filter(|e| e.0 || e.1) {
            if lowered.is_empty() {
                problems.push("the layer emulates an extension but lowered no module".to_owned());
            }
            for words in &lowered {
                if let Err(e) = tools::spirv_val(words, "vulkan1.3") {
                    problems.push(format!("a lowered module fails spirv-val: {e}"));
                }
                let caps = capabilities(words);
                if partitioned && caps.contains(&CAP_PARTITIONED)
                    || vote && caps.contains(&CAP_VOTE_KHR)
                {
                    problems.push(format!(
                        "a lowered module keeps an emulated capability: {caps:?}"
                    ));
                }
            }
        }
        let line = format!(
            "layer run: device {device}, subgroup size {size}, mode {described}: {cases}{}",
            if problems.is_empty() {
                String::new()
            } else {
                format!(" -- FAILED: {}", problems.join("; "))
            }
        );
        summaries.push(line);
        failures.extend(problems);
    }
    for line in &summaries {
        println!("{line}");
    }
    assert!(failures.is_empty(), "{}", summaries.join("\n"));
}

/// The capabilities a module declares.
fn capabilities(words: &[u32]) -> Vec<u32> {
    let mut caps = Vec::new();
    let mut at = 5;
    while let Some(&first) = words.get(at) {
        let count = (first >> 16) as usize;
        if first & 0xffff == 17 && count >= 2 {
            caps.extend(words.get(at + 1).copied());
        }
        at += count.max(1);
    }
    caps
}

/// Re-runs the test `child_test` of this binary with `env` (no lavapipe settings: the device is
/// the one `LAYER_APP_DEVICE` names), waits at most `limit`; returns whether it passed and what it
/// printed.
fn run_child_on_device(child_test: &str, env: &[(&str, &str)], limit: Duration) -> (bool, String) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args(["--exact", child_test, "--include-ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env_remove("SPV_SUBGROUP_LAYER_FORCE")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("re-running the test binary");
    // Read both pipes while waiting, so that a chatty child never blocks on a full pipe.
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = r.read_to_string(&mut text);
            text
        })
    };
    let (out, err) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let start = Instant::now();
    let status = loop {
        match child.try_wait().expect("waiting for the child") {
            Some(status) => break Some(status),
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(100)),
        }
    };
    let text = format!(
        "{}{}",
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default()
    );
    match status {
        Some(s) => (s.success(), text),
        None => (
            false,
            format!("{text}\n`{child_test}` ran past {limit:?}\n"),
        ),
    }
}

/// The library exports the loader's three entry points and nothing else (a Rust cdylib exports
/// only `#[no_mangle]` items: the export map Khronos' layers write by hand).
#[test]
fn the_library_exports_only_the_loader_entry_points() {
    require_tool("nm", "binutils");
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(layer_library())
        .output()
        .expect("running nm");
    assert!(out.status.success(), "nm failed: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut functions: Vec<&str> = text
        .lines()
        .filter_map(|l| {
            let mut parts = l.split_whitespace().skip(1);
            match (parts.next(), parts.next()) {
                (Some("T" | "W" | "i"), Some(name)) => Some(name),
                _ => None,
            }
        })
        .collect();
    functions.sort_unstable();
    assert_eq!(
        functions,
        [
            "vkGetDeviceProcAddr",
            "vkGetInstanceProcAddr",
            "vkNegotiateLoaderLayerInterfaceVersion"
        ],
        "{text}"
    );
}

#[test]
fn vulkaninfo_lists_the_emulated_extensions() {
    require_tool("vulkaninfo", "vulkan-tools");
    let manifests = manifest_dir();
    let run = |with_layer: bool| {
        let mut cmd = Command::new("vulkaninfo");
        cmd.env("VK_LAYER_PATH", manifests.path())
            .env_remove("VK_INSTANCE_LAYERS")
            .env("SPV_SUBGROUP_VK_DEVICE", "llvmpipe");
        if with_layer {
            cmd.env("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower");
        }
        let out = cmd.output().expect("running vulkaninfo");
        assert!(out.status.success(), "vulkaninfo failed: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let without = run(false);
    let with = run(true);
    // The device's extension list has one tab before each name; the layers' own lists (which
    // name ours whenever VK_LAYER_PATH finds it) have three.
    let device_lists = |text: &str, name: &CStr| {
        let name = name.to_str().expect("ASCII");
        text.lines().any(|l| {
            l.strip_prefix('\t')
                .is_some_and(|rest| rest.starts_with(name) && rest.contains(": extension revision"))
        })
    };
    // Without the layer lavapipe has no partitioned operations: the layer adds them.
    assert!(!device_lists(&without, NV_PARTITIONED), "{without}");
    assert!(!without.contains("PARTITIONED_BIT"));
    for name in [NV_PARTITIONED, EXT_PARTITIONED, EXT_VOTE] {
        assert!(
            device_lists(&with, name),
            "vulkaninfo lists no device extension {name:?}:\n{with}"
        );
    }
    assert!(
        with.contains("SUBGROUP_FEATURE_PARTITIONED_BIT_NV"),
        "{with}"
    );
    assert!(with.contains("VK_LAYER_SPV_SUBGROUP_lower"), "{with}");
}

/// The application at subgroup size 16 with Khronos' validation layer above ours (checking the
/// application's calls against the device the layer shows) and below it (checking what the layer
/// sends the driver: the create info without the emulated names and struct, the lowered
/// modules, and, in the child's runs with `SPV_SUBGROUP_LAYER_SUBGROUP_SIZE` 4 and 8, the
/// required subgroup size mapped to 16: unmapped, the layer below reports
/// `VUID-VkPipelineShaderStageRequiredSubgroupSizeCreateInfo-requiredSubgroupSize-02761`). It needs Debian's `vulkan-validationlayers` (`cargo xtask install-deps` installs it).
#[test]
fn khronos_validation_above_and_below_reports_nothing() {
    let system = Path::new("/usr/share/vulkan/explicit_layer.d");
    assert!(
        system.join("VkLayer_khronos_validation.json").is_file(),
        "Khronos' validation layer is not installed: apt install vulkan-validationlayers"
    );
    let manifests = manifest_dir();
    let path = format!("{}:{}", manifests.path().display(), system.display());
    for layers in [
        "VK_LAYER_KHRONOS_validation:VK_LAYER_SPV_SUBGROUP_lower",
        "VK_LAYER_SPV_SUBGROUP_lower:VK_LAYER_KHRONOS_validation",
    ] {
        let env = [
            ("VK_LAYER_PATH", path.as_str()),
            ("VK_INSTANCE_LAYERS", layers),
            ("VK_LOADER_DEBUG", "layer"),
        ];
        let out = lavapipe::run_suite(16, &env, Duration::from_secs(300));
        print!("{out}");
        // Both layers were in the device's chain (the loader says so at VK_LOADER_DEBUG=layer).
        for name in ["VK_LAYER_KHRONOS_validation", "VK_LAYER_SPV_SUBGROUP_lower"] {
            assert!(
                out.contains(&format!("Inserted device layer \"{name}\"")),
                "{name} not loaded:\n{out}"
            );
        }
        assert!(out.contains("force=true: model answers"), "{out}");
        assert!(out.contains("emulated 8 on 16: model answers"), "{out}");
        assert!(!out.contains("Validation Error"), "{layers}:\n{out}");
        assert!(!out.contains("Validation Warning"), "{layers}:\n{out}");
    }
}

/// The installed layout (docs/layer.md, `install.rs`): the library in `PREFIX/lib`, the manifest
/// in `PREFIX/share/vulkan/explicit_layer.d` naming it by the relative path
/// `../../../lib/libVkLayer_spv_subgroup.so`, which the loader resolves from the manifest's
/// folder; the prefix moved after installing still works.
#[test]
fn the_installed_layout_loads_through_its_relative_library_path() {
    require_tool("vulkaninfo", "vulkan-tools");
    let root = tempfile::tempdir().expect("a temporary folder");
    let prefix = root.path().join("prefix");
    let manifests = prefix.join("share/vulkan/explicit_layer.d");
    std::fs::create_dir_all(&manifests).expect("the manifest folder");
    std::fs::create_dir_all(prefix.join("lib")).expect("the library folder");
    std::fs::copy(
        layer_library(),
        prefix.join("lib/libVkLayer_spv_subgroup.so"),
    )
    .expect("copying the library");
    let template = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifest/VkLayer_spv_subgroup.json.in"),
    )
    .expect("the manifest template");
    std::fs::write(
        manifests.join("VkLayer_spv_subgroup.json"),
        template.replace("@LIBRARY_PATH@", "../../../lib/libVkLayer_spv_subgroup.so"),
    )
    .expect("writing the manifest");
    let moved = root.path().join("moved");
    std::fs::rename(&prefix, &moved).expect("moving the prefix");
    let out = Command::new("vulkaninfo")
        .env("VK_LAYER_PATH", moved.join("share/vulkan/explicit_layer.d"))
        .env("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower")
        .output()
        .expect("running vulkaninfo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "vulkaninfo failed: {out:?}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("\tVK_NV_shader_subgroup_partitioned")),
        "the installed layer was not loaded:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The same manifest in an `implicit_layer.d` folder: the loader then loads the layer only with
/// `SPV_SUBGROUP_LAYER_ENABLE=1` and never with `SPV_SUBGROUP_LAYER_DISABLE=1` (the manifest's
/// `enable_environment`/`disable_environment`; an explicit layer's loader ignores both).
#[test]
fn implicit_install_follows_enable_and_disable_environment() {
    require_tool("vulkaninfo", "vulkan-tools");
    let manifest = manifest_dir();
    let data_home = tempfile::tempdir().expect("a temporary folder");
    let implicit = data_home.path().join("vulkan/implicit_layer.d");
    std::fs::create_dir_all(&implicit).expect("the implicit layer folder");
    std::fs::copy(
        manifest.path().join("VkLayer_spv_subgroup.json"),
        implicit.join("VkLayer_spv_subgroup.json"),
    )
    .expect("copying the manifest");
    let lists_partitioned = |vars: &[(&str, &str)]| {
        let out = Command::new("vulkaninfo")
            .env("XDG_DATA_HOME", data_home.path())
            .env_remove("VK_INSTANCE_LAYERS")
            .env_remove("VK_LAYER_PATH")
            .env_remove("SPV_SUBGROUP_LAYER_ENABLE")
            .env_remove("SPV_SUBGROUP_LAYER_DISABLE")
            .envs(vars.iter().copied())
            .output()
            .expect("running vulkaninfo");
        assert!(out.status.success(), "vulkaninfo failed: {out:?}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with("\tVK_NV_shader_subgroup_partitioned"))
    };
    assert!(
        !lists_partitioned(&[]),
        "an implicit layer is off by default"
    );
    assert!(lists_partitioned(&[("SPV_SUBGROUP_LAYER_ENABLE", "1")]));
    assert!(!lists_partitioned(&[
        ("SPV_SUBGROUP_LAYER_ENABLE", "1"),
        ("SPV_SUBGROUP_LAYER_DISABLE", "1")
    ]));
}

/// A module the lowering refuses (`tests/shaders/dynamic_broadcast.spvasm`: invalid, a
/// broadcast whose Id is no constant) goes to the driver unchanged, which runs it, and the
/// refusal reaches stderr and the application's debug-utils messenger. At size 8, with the KHR
/// vote forced through the lowering (so that the layer takes the module up at all).
#[test]
fn a_refused_module_goes_down_unchanged_and_is_reported() {
    let manifests = manifest_dir();
    let path = manifests.path().to_str().expect("UTF-8").to_owned();
    let env = [
        (lavapipe::CHILD_VAR, "1"),
        ("VK_LAYER_PATH", path.as_str()),
        ("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower"),
        ("SPV_SUBGROUP_LAYER_FORCE", "1"),
        ("SPV_SUBGROUP_LAYER_LOG", "error"),
    ];
    let out = lavapipe::run_child("child_refusal", 8, &env, Duration::from_secs(120));
    print!("{out}");
    assert!(
        out.contains("VK_LAYER_SPV_SUBGROUP_lower: error: module ")
            && out.contains("goes to the driver unchanged"),
        "no refusal on stderr:\n{out}"
    );
    // An emulated size above the device's is refused, with why, and the device keeps its own.
    assert!(
        out.contains("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE=16 ignored: the device `llvmpipe")
            && out.contains("an emulated size must be at most 8"),
        "no refusal of the emulated size on stderr:\n{out}"
    );
    assert!(
        out.contains("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE=16: reported 8"),
        "{out}"
    );
}

#[test]
#[ignore = "runs inside a_refused_module_goes_down_unchanged_and_is_reported"]
fn child_refusal() {
    lavapipe::assert_child();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shaders/dynamic_broadcast.spvasm"),
    )
    .expect("the shader");
    let words = tools::assemble(&text, "vulkan1.1").expect("spirv-as assembles the shader");
    let app = App::open(false, true);
    println!("subgroup size: {}", app.subgroup_size);
    let pipeline = app.pipeline(&words);
    let (_, _, flags) = app.dispatch(pipeline, &example::keys());
    let size = app.subgroup_size;
    let want: Vec<u32> = (0..example::LANES as u32)
        .map(|i| i / size * size + 1000)
        .collect();
    assert_eq!(flags, want, "the driver ran the module it got unchanged");
    let messages = MESSAGES.lock().expect("the messages").clone();
    assert!(
        messages
            .iter()
            .any(|(id, text)| id == "VK_LAYER_SPV_SUBGROUP_lower-refused"
                && text.contains("goes to the driver unchanged")
                && text.contains("OpGroupNonUniformBroadcast")),
        "the messenger got no refusal: {messages:?}"
    );
    drop(app);
    // SAFETY (test): one test on one thread; read at vkCreateInstance.
    std::env::set_var("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE", "16");
    let app = App::open(false, false);
    let reported = app.reported_sizes();
    assert_eq!(reported, [size; 6]);
    println!(
        "SPV_SUBGROUP_LAYER_SUBGROUP_SIZE=16: reported {}",
        reported[0]
    );
}

/// `SPV_SUBGROUP_LAYER_CACHE` across processes, through the real layer: a child lowers the README
/// example in one instance and takes it from the disk in a second (a new device, an empty memory
/// cache); after one byte of the entry is changed (the SPIR-V header kept), the next child refuses
/// the entry, lowers again, replaces it and takes the new one from the disk, with the model's
/// answers every time. No temporary is left in the folder.
#[test]
fn the_disk_cache_checks_its_entries_across_processes() {
    let manifests = manifest_dir();
    let cache = tempfile::tempdir().expect("a temporary folder");
    let path = manifests.path().to_str().expect("UTF-8").to_owned();
    let dir = cache.path().to_str().expect("UTF-8").to_owned();
    let env = [
        (lavapipe::CHILD_VAR, "1"),
        ("VK_LAYER_PATH", path.as_str()),
        ("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower"),
        ("SPV_SUBGROUP_LAYER_CACHE", dir.as_str()),
        ("SPV_SUBGROUP_LAYER_LOG", "info"),
    ];
    let entries = || {
        let mut names: Vec<PathBuf> = std::fs::read_dir(cache.path())
            .expect("the cache folder")
            .map(|e| e.expect("an entry").path())
            .collect();
        names.sort();
        names
    };
    let run = || {
        let out = lavapipe::run_child("child_cache", 8, &env, Duration::from_secs(120));
        print!("{out}");
        assert!(out.contains("cache child: model answers twice"), "{out}");
        assert_eq!(
            out.matches(": lowered for `").count(),
            1,
            "one lowering:\n{out}"
        );
        assert_eq!(
            out.matches(": lowered (cached").count(),
            1,
            "one disk hit:\n{out}"
        );
        out
    };
    let out = run();
    assert!(!out.contains("error"), "{out}");
    let files = entries();
    assert_eq!(files.len(), 2, "the key and one entry: {files:?}");
    let entry = files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "spv"))
        .expect("an entry");
    let good = std::fs::read(entry).expect("the entry");
    let mut poisoned = good.clone();
    *poisoned.last_mut().expect("a byte") ^= 1;
    std::fs::write(entry, &poisoned).expect("poisoning the entry");
    let out = run();
    assert!(out.contains("does not verify"), "{out}");
    assert_eq!(entries(), files, "the entry replaced, no temporary left");
    assert_eq!(std::fs::read(entry).expect("the entry"), good);
}

#[test]
#[ignore = "runs inside the_disk_cache_checks_its_entries_across_processes"]
fn child_cache() {
    lavapipe::assert_child();
    let shader = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&shader, "vulkan1.1").expect("glslang compiles the example");
    let keys = example::keys();
    // Two instances, so two devices, each with a memory cache of its own: the second can only
    // find the module on the disk.
    for i in 0..2 {
        let app = App::open(false, false);
        if i == 0 {
            println!("subgroup size: {}", app.subgroup_size);
        }
        let want = example::model(&keys, app.subgroup_size as usize);
        let pipeline = app.pipeline(&words);
        let mut cases = Cases::default();
        cases.check("the example", app.dispatch(pipeline, &keys), &want);
        assert_eq!(cases.failed, 0, "the example differs from the host model");
    }
    println!("cache child: model answers twice");
}

/// The work of one child: the application, twice (the driver's vote, then everything lowered),
/// or once where `LAYER_APP_MODES` names one mode (`driver` or `force`; [`device_through_layer`]).
/// Each mode prints one line per case that differs from the host model and a count of the cases
/// that match, then fails if any differs.
#[test]
#[ignore = "runs inside lavapipe_subgroup_size_*, enabled_by_name_* and device_through_layer"]
fn child_suite() {
    lavapipe::assert_child();
    let shader = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&shader, "vulkan1.1").expect("glslang compiles the example");
    let by_name = std::env::var_os(BY_NAME_VAR).is_some();
    if by_name {
        println!("layer enabled by name");
    }
    // The device's own size, as the first application reads it (before any emulation).
    let mut native = 0;
    let modes = std::env::var(MODES_VAR).unwrap_or_else(|_| "driver,force".to_owned());
    let modes: Vec<bool> = modes
        .split(',')
        .map(|m| match m {
            "driver" => false,
            "force" => true,
            other => panic!("{MODES_VAR}: `{other}` is no mode (driver, force)"),
        })
        .collect();
    let mut failed = 0;
    for (i, force) in modes.into_iter().enumerate() {
        // SAFETY (test): the child runs its one test on one thread; the layer reads its settings
        // when the instance is created.
        if force {
            std::env::set_var("SPV_SUBGROUP_LAYER_FORCE", "1");
        } else {
            std::env::remove_var("SPV_SUBGROUP_LAYER_FORCE");
        }
        let app = App::open(by_name, false);
        if i == 0 {
            println!("subgroup size: {}", app.subgroup_size);
            native = app.subgroup_size;
        }
        let keys = example::keys();
        let want = example::model(&keys, app.subgroup_size as usize);
        let mut cases = Cases::default();
        // Pipeline creation: the first lowers (the layer's share is in its `info` log), the
        // second finds the module in the layer's cache.
        let start = Instant::now();
        let pipeline = app.pipeline(&words);
        let first = start.elapsed();
        let start = Instant::now();
        let again = app.pipeline(&words);
        let cached = start.elapsed();
        println!("force={force}: pipeline creation {first:.2?} (lowered), {cached:.2?} (cached)");
        cases.check("first pipeline", app.dispatch(pipeline, &keys), &want);
        cases.check("second pipeline", app.dispatch(again, &keys), &want);
        // The example's keys leave every vote one way at 32 lanes (`all` false, `any` true,
        // `allEqual` false in both subgroups): keys with uniform halves turn them over.
        let halves = uniform_halves();
        cases.check(
            "uniform halves",
            app.dispatch(app.pipeline(&words), &halves),
            &example::model(&halves, app.subgroup_size as usize),
        );
        // The same pipeline from 8 threads at once, each checked.
        let pipelines: Vec<vk::Pipeline> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8).map(|_| s.spawn(|| app.pipeline(&words))).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a pipeline thread"))
                .collect()
        });
        for (t, p) in pipelines.into_iter().enumerate() {
            cases.check(&format!("thread {t}"), app.dispatch(p, &keys), &want);
        }
        let chained = app.pipeline_chained(&words);
        cases.check("chained module", app.dispatch(chained, &keys), &want);
        if !force {
            let observer = observer_words();
            let pipeline = app.pipeline(&observer);
            cases.check(
                "the size observer, natively",
                app.dispatch(pipeline, &keys),
                &observer_model(&keys, app.subgroup_size as usize),
            );
            if 8 % app.subgroup_size == 0 {
                check_full_subgroups(&app, app.subgroup_size, "natively");
            }
        }
        println!(
            "force={force}: device {}, subgroup size {}: {}/{} cases match the host model",
            app.device_name,
            app.subgroup_size,
            cases.passed,
            cases.passed + cases.failed
        );
        if cases.failed == 0 {
            println!("force={force}: model answers at size {}", app.subgroup_size);
        }
        failed += cases.failed;
    }
    assert_eq!(
        failed, 0,
        "cases differ from the host model (FAIL lines above)"
    );
    emulated_sizes(&words, native);
}

/// Keys for which every subgroup of up to 32 lanes votes one way: lanes 0-31 all above 100
/// (`all`, `any` and `allEqual` true), lanes 32-63 all below (`any` false, `allEqual` true).
fn uniform_halves() -> Vec<u32> {
    (0..example::LANES as u32)
        .map(|i| {
            if i < 32 {
                101 + (i * 29) % 97
            } else {
                (i * 13) % 97
            }
        })
        .collect()
}

/// What one mode of the child found: cases that match the host model, and cases that do not.
#[derive(Default)]
struct Cases {
    passed: usize,
    failed: usize,
}

type Answers = (Vec<[u32; 4]>, Vec<u32>, Vec<u32>);

impl Cases {
    /// Counts one case, printing its first differing invocation when it differs.
    fn check(&mut self, case: &str, got: Answers, want: &Answers) {
        if got == *want {
            self.passed += 1;
            return;
        }
        self.failed += 1;
        let lane = (0..want.0.len())
            .find(|&i| got.0[i] != want.0[i] || got.1[i] != want.1[i] || got.2[i] != want.2[i])
            .unwrap_or(0);
        println!(
            "FAIL {case}: invocation {lane}: mask {:x?} sum {} flags {} (the model: mask {:x?} sum {} flags {})",
            got.0[lane], got.1[lane], got.2[lane], want.0[lane], want.1[lane], want.2[lane]
        );
    }
}

/// The SPIR-V of `tests/shaders/subgroup_observer.comp`.
fn observer_words() -> Vec<u32> {
    let shader = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shaders/subgroup_observer.comp");
    tools::compile_glsl(&shader, "vulkan1.1").expect("glslang compiles the size observer")
}

/// What `tests/shaders/subgroup_observer.comp` computes for subgroups of `size` (one workgroup
/// of `example::LANES`, every lane active): per lane, (the ballot of `key > 100` in words 0 and 1,
/// the subgroup's sum, its first lane's key), the inclusive sum, and `gl_SubgroupSize`,
/// `gl_SubgroupInvocationID`, `gl_SubgroupID` and `gl_NumSubgroups` packed in bytes.
fn observer_model(keys: &[u32], size: usize) -> (Vec<[u32; 4]>, Vec<u32>, Vec<u32>) {
    let mut masks = Vec::new();
    let mut sums = Vec::new();
    let mut flags = Vec::new();
    for i in 0..keys.len() {
        let base = i / size * size;
        let group = &keys[base..(base + size).min(keys.len())];
        let mut ballot = [0u32; 2];
        for (lane, _) in group.iter().enumerate().filter(|(_, &k)| k > 100) {
            ballot[lane / 32] |= 1 << (lane % 32);
        }
        let total = group.iter().fold(0u32, |a, &k| a.wrapping_add(k));
        masks.push([ballot[0], ballot[1], total, group[0]]);
        sums.push(keys[base..=i].iter().fold(0u32, |a, &k| a.wrapping_add(k)));
        let (lane, id, count) = (i - base, i / size, keys.len().div_ceil(size));
        flags.push((size | lane << 8 | id << 16 | count << 24) as u32);
    }
    (masks, sums, flags)
}

/// `tests/shaders/full_subgroups.comp` (8 invocations) with full subgroups required at the
/// device's size `size`, through a module and chained in the stage: the model's answers. In
/// every form a module gives its workgroup's size, which the layer reads to take the flag off
/// when it emulates a size: compiled for Vulkan 1.1 (`LocalSize 8` literals, and glslang's
/// constant `WorkgroupSize` built-in) and for 1.3 (`LocalSizeId` naming a plain constant), and
/// with `local_size_x_id` (a specialization constant of default 16, which the stage specializes
/// to 8: a `WorkgroupSize` built-in of a specialization constant for 1.1, `LocalSizeId` naming it
/// for 1.3). Kept where 8 is no multiple of the hardware's size, the flag breaks
/// `VUID-VkPipelineShaderStageCreateInfo-pNext-02757` (Khronos' validation layer below ours says
/// so in `khronos_validation_above_and_below_reports_nothing`).
fn check_full_subgroups(app: &App, size: u32, how: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shaders/full_subgroups.comp");
    let text = std::fs::read_to_string(&path).expect("the shader");
    let fixed = "layout(local_size_x = 8) in;";
    assert!(text.contains(fixed), "{text}");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let specialized = dir.path().join("full_subgroups_specialized.comp");
    std::fs::write(
        &specialized,
        text.replace(fixed, "layout(local_size_x_id = 0, local_size_x = 16) in;"),
    )
    .expect("writing the specialized shader");
    let x = 8u32.to_ne_bytes();
    let entry = [vk::SpecializationMapEntry {
        constant_id: 0,
        offset: 0,
        size: 4,
    }];
    let spec = vk::SpecializationInfo::default()
        .map_entries(&entry)
        .data(&x);
    let want = full_subgroups_model(size as usize);
    for (source, specialization) in [(&path, None), (&specialized, Some(&spec))] {
        for env in ["vulkan1.1", "vulkan1.3"] {
            let words = tools::compile_glsl(source, env).expect("glslang compiles the shader");
            for chained in [false, true] {
                let pipeline = app.pipeline_full_subgroups(&words, chained, specialization);
                assert_eq!(
                    app.dispatch(pipeline, &example::keys()),
                    want,
                    "full subgroups {how}, {env}, specialized: {}, chained: {chained}",
                    specialization.is_some()
                );
            }
        }
    }
}

/// What `tests/shaders/full_subgroups.comp` writes at subgroup size `size` (a divisor of 8):
/// full subgroups, each lane's ballot of all of them, their count, and the size built-ins; the
/// lanes past the workgroup's 8 stay 0.
fn full_subgroups_model(size: usize) -> (Vec<[u32; 4]>, Vec<u32>, Vec<u32>) {
    let mut masks = vec![[0u32; 4]; example::LANES];
    let mut sums = vec![0u32; example::LANES];
    let mut flags = vec![0u32; example::LANES];
    for i in 0..8 {
        masks[i][0] = (1u32 << size) - 1;
        sums[i] = size as u32;
        flags[i] = (size | (i % size) << 8 | (i / size) << 16 | (8 / size) << 24) as u32;
    }
    (masks, sums, flags)
}

/// The application again with `SPV_SUBGROUP_LAYER_SUBGROUP_SIZE=N` for every N of 4 and 8 below
/// the hardware's size, in this child (its Vulkan start-up is already paid): the device must
/// report N everywhere the application reads a subgroup size, and the README example (through a
/// module and chained behind a required size of N) and the size observer must give the host
/// models' answers at N, the answers the same application gets on lavapipe at N natively
/// (`lavapipe_subgroup_size_N`). The layer dumps these modules in `DUMP/emulated-N`.
fn emulated_sizes(example_words: &[u32], hardware: u32) {
    let dump = std::env::var_os(DUMP_VAR);
    let observer = observer_words();
    let keys = example::keys();
    for n in [4u32, 8].into_iter().filter(|&n| n < hardware) {
        // SAFETY (test): one test on one thread; the layer reads its settings at
        // vkCreateInstance.
        std::env::set_var("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE", n.to_string());
        if let Some(dump) = &dump {
            std::env::set_var(DUMP_VAR, Path::new(dump).join(format!("emulated-{n}")));
        }
        let app = App::open(std::env::var_os(BY_NAME_VAR).is_some(), false);
        assert_eq!(app.reported_sizes(), [n; 6], "the sizes the device reports");
        let want = example::model(&keys, n as usize);
        let module = app.pipeline(example_words);
        assert_eq!(
            app.dispatch(module, &keys),
            want,
            "emulated {n}: the example"
        );
        let chained = app.pipeline_chained(example_words);
        assert_eq!(app.dispatch(chained, &keys), want, "emulated {n}: chained");
        let pipeline = app.pipeline(&observer);
        assert_eq!(
            app.dispatch(pipeline, &keys),
            observer_model(&keys, n as usize),
            "emulated {n}: the size observer"
        );
        check_full_subgroups(&app, n, &format!("emulated {n}"));
        println!("emulated {n} on {hardware}: model answers");
    }
    std::env::remove_var("SPV_SUBGROUP_LAYER_SUBGROUP_SIZE");
    if let Some(dump) = dump {
        std::env::set_var(DUMP_VAR, dump);
    }
}

/// The child's variable: how many instances [`child_instance_cycles`] creates and destroys.
const CYCLES_VAR: &str = "LAYER_APP_CYCLES";
/// Instances [`layer_memory_is_flat_over_instance_cycles`] creates and destroys: about 2 ms each
/// on lavapipe (about 9 s for all, measured under load).
const CYCLES: usize = 10_000;
/// Of those, the ones with a device and a module each (about 9 ms each: a lowering each).
const DEVICE_CYCLES: usize = 50;
/// The most heap the process may hold more after the cycles than before them, per cycle (it
/// holds exactly as much, with glibc's per-thread cache off; the leak this guards against was
/// 395 KB).
const BYTES_PER_CYCLE: usize = 16;

/// The layer's memory does not grow with instances. The loader unloads the layer after
/// `vkDestroyInstance` of the last instance that enabled it and loads it again at the next
/// `vkCreateInstance`, so heap memory a static of the library still owned at the unload is lost
/// once per instance (it was about 395 KB). The child, an application with the layer enabled
/// through the environment, creates and destroys [`CYCLES`] instances, then [`DEVICE_CYCLES`]
/// with a device and a shader module the layer lowers (which runs the validator and the
/// lowering), and compares glibc's count of live heap bytes (`mallinfo2`, with the per-thread
/// cache off, whose freed blocks it counts as live) before and after each: at most
/// [`BYTES_PER_CYCLE`] more per cycle. It checks that the library really leaves the process at
/// `vkDestroyInstance` (`/proc/self/maps`). `LAYER_APP_CYCLES` sets another count for a run by
/// hand.
#[test]
fn layer_memory_is_flat_over_instance_cycles() {
    let manifests = manifest_dir();
    let path = manifests.path().to_str().expect("UTF-8").to_owned();
    let cycles = std::env::var(CYCLES_VAR).unwrap_or_else(|_| CYCLES.to_string());
    let env = [
        (lavapipe::CHILD_VAR, "1"),
        ("VK_LAYER_PATH", path.as_str()),
        ("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower"),
        (CYCLES_VAR, cycles.as_str()),
    ];
    // lavapipe alone (the loader would open every driver installed at every instance), and
    // without Mesa's implicit device-select layer: what is measured is ours.
    let icd = lavapipe_icd();
    let icd = icd.to_str().expect("a UTF-8 path");
    let env = [
        &env[..],
        &[
            ("VK_ICD_FILENAMES", icd),
            ("NODEVICE_SELECT", "1"),
            ("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0"),
        ],
    ]
    .concat();
    let out = lavapipe::run_child("child_instance_cycles", 8, &env, Duration::from_secs(600));
    print!("{out}");
    assert!(out.contains("instance cycles: heap"), "{out}");
    assert!(out.contains("device and module cycles: heap"), "{out}");
    // The module was lowered (the validator and the lowering ran in each such cycle).
    assert!(out.contains("lowered for `llvmpipe"), "{out}");
}

/// lavapipe's driver manifest.
fn lavapipe_icd() -> PathBuf {
    let dirs = [
        "/usr/share/vulkan/icd.d",
        "/usr/local/share/vulkan/icd.d",
        "/etc/vulkan/icd.d",
    ];
    dirs.iter()
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flatten()
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("lvp_icd"))
        })
        .expect("no lavapipe driver manifest (lvp_icd*.json): apt install mesa-vulkan-drivers")
}

/// Keeps the driver of the manifest `icd` loaded for the rest of the process. The loader opens
/// the driver at every `vkCreateInstance` and closes it at `vkDestroyInstance`; lavapipe loads
/// LLVM with it, which takes most of a cycle's time and leaves some memory behind of its own
/// each time (about 40 bytes). Opened here once, the loader's opens and closes only count.
fn keep_driver_loaded(icd: &Path) {
    extern "C" {
        fn dlopen(filename: *const std::ffi::c_char, flags: std::ffi::c_int) -> *mut c_void;
    }
    const RTLD_NOW: std::ffi::c_int = 2;
    let manifest = std::fs::read_to_string(icd).expect("the driver manifest");
    let library = manifest
        .split("\"library_path\"")
        .nth(1)
        .and_then(|rest| rest.split('"').nth(1))
        .expect("the manifest's library_path");
    let name = std::ffi::CString::new(library).expect("a path without NUL");
    // SAFETY (test): a NUL-terminated path; the handle is kept (never closed) on purpose.
    let handle = unsafe { dlopen(name.as_ptr(), RTLD_NOW) };
    assert!(!handle.is_null(), "cannot load the driver {library}");
}

/// glibc's count of the heap bytes in use (small blocks in the arenas and mmapped large ones).
fn live_heap_bytes() -> usize {
    /// glibc's `struct mallinfo2`.
    #[repr(C)]
    struct MallInfo2 {
        arena: usize,
        ordblks: usize,
        smblks: usize,
        hblks: usize,
        hblkhd: usize,
        usmblks: usize,
        fsmblks: usize,
        uordblks: usize,
        fordblks: usize,
        keepcost: usize,
    }
    extern "C" {
        fn mallinfo2() -> MallInfo2;
    }
    // SAFETY (test): glibc's function, no arguments, returns the struct by value.
    let info = unsafe { mallinfo2() };
    info.uordblks + info.hblkhd
}

/// Whether the layer's library is mapped into this process.
fn layer_is_loaded() -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .expect("/proc/self/maps")
        .contains("libVkLayer_spv_subgroup.so")
}

#[test]
#[ignore = "runs inside layer_memory_is_flat_over_instance_cycles"]
fn child_instance_cycles() {
    lavapipe::assert_child();
    let cycles: usize = std::env::var(CYCLES_VAR)
        .expect("the parent sets the cycle count")
        .parse()
        .expect("a count");
    keep_driver_loaded(Path::new(
        &std::env::var_os("VK_ICD_FILENAMES").expect("the parent names the driver"),
    ));
    let shader = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&shader, "vulkan1.1").expect("glslang compiles the example");
    // SAFETY (test): the system loader, as any application loads it.
    let entry = unsafe { ash::Entry::load() }.expect("the Vulkan loader");
    let app_info = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let info = vk::InstanceCreateInfo::default().application_info(&app_info);
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(0)
        .queue_priorities(&priorities)];
    let extensions = [NV_PARTITIONED.as_ptr()];
    let device_info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&extensions);
    let module_info = vk::ShaderModuleCreateInfo::default().code(&words);
    // One instance, and with `with_module` its device's subgroup size, a device of it and a
    // module the layer lowers (what runs the validator and the lowering), all destroyed before
    // the next.
    // SAFETY (test): valid create infos; each object is destroyed before its parent.
    let cycle = |with_module: bool| unsafe {
        let instance = entry.create_instance(&info, None).expect("an instance");
        let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
        if with_module {
            let pd = instance.enumerate_physical_devices().expect("devices")[0];
            let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup);
            instance.get_physical_device_properties2(pd, &mut props);
            let device = instance
                .create_device(pd, &device_info, None)
                .expect("a device with the emulated extension");
            let module = device
                .create_shader_module(&module_info, None)
                .expect("a shader module");
            device.destroy_shader_module(module, None);
            device.destroy_device(None);
        }
        instance.destroy_instance(None);
        subgroup.subgroup_size
    };
    // The first cycles set up what the loader, lavapipe and glibc keep for the process; the
    // first module's lowering is said on stderr.
    // SAFETY (test): one test on one thread; the layer reads its settings at vkCreateInstance.
    std::env::set_var("SPV_SUBGROUP_LAYER_LOG", "info");
    println!("subgroup size: {}", cycle(true));
    std::env::remove_var("SPV_SUBGROUP_LAYER_LOG");
    // SAFETY (test): a valid create info; the instance is destroyed at once.
    unsafe {
        let instance = entry.create_instance(&info, None).expect("an instance");
        assert!(
            layer_is_loaded(),
            "the layer is not in the instance's chain"
        );
        instance.destroy_instance(None);
    }
    assert!(
        !layer_is_loaded(),
        "the loader keeps the layer loaded after vkDestroyInstance: the test needs the unload"
    );
    for with_module in [false, true] {
        for _ in 0..10 {
            cycle(with_module);
        }
        // Instances alone, and fewer with a device and a module each (those cost more time).
        let (n, what) = if with_module {
            (DEVICE_CYCLES.min(cycles), "device and module")
        } else {
            (cycles, "instance")
        };
        let before = live_heap_bytes();
        let start = Instant::now();
        for _ in 0..n {
            cycle(with_module);
        }
        let elapsed = start.elapsed();
        let after = live_heap_bytes();
        println!(
            "{n} {what} cycles: heap {before} -> {after} bytes ({:+.1} per cycle) in {:.1} s",
            (after as f64 - before as f64) / n as f64,
            elapsed.as_secs_f64()
        );
        let growth = after.saturating_sub(before);
        assert!(
            growth <= n * BYTES_PER_CYCLE,
            "the heap grew by {growth} bytes over {n} {what} cycles"
        );
    }
}

/// The application's allocation callbacks (docs/layer.md, "Host memory"), at subgroup size 8:
/// a counting allocator sees every block it frees come from itself and none left after
/// `vkDestroyDevice` (command, object and device scope) and `vkDestroyInstance` (all), the layer's
/// included; an allocator failing from its k-th allocation on, for every k until the command
/// succeeds, gets `VK_ERROR_OUT_OF_HOST_MEMORY` or success, never a crash, and nothing left
/// allocated, for `vkCreateInstance` (without the layer too), `vkCreateDevice`,
/// `vkCreateShaderModule` and `vkCreateComputePipelines`; the layer says on stderr that its own
/// allocation failed in the first three (so the failures reached the layer's code, not only the
/// loader's and the driver's).
#[test]
fn allocation_callbacks_are_honoured_and_a_null_is_out_of_host_memory() {
    let manifests = manifest_dir();
    let path = manifests.path().to_str().expect("UTF-8").to_owned();
    let env = [
        (lavapipe::CHILD_VAR, "1"),
        ("VK_LAYER_PATH", path.as_str()),
        ("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower"),
        ("SPV_SUBGROUP_LAYER_LOG", "error"),
    ];
    let out = lavapipe::run_child("child_allocation", 8, &env, Duration::from_secs(300));
    print!("{out}");
    assert!(out.contains("allocation callbacks: balanced"), "{out}");
    for place in [
        "in vkCreateInstance: VK_ERROR_OUT_OF_HOST_MEMORY",
        "in vkCreateDevice: VK_ERROR_OUT_OF_HOST_MEMORY",
        "while the layer prepared a module: VK_ERROR_OUT_OF_HOST_MEMORY",
    ] {
        assert!(
            out.contains(&format!(
                "VK_LAYER_SPV_SUBGROUP_lower: error: the application's allocation callbacks \
                 returned NULL {place}"
            )),
            "the layer's own allocation never failed {place}:\n{out}"
        );
    }
}

/// One allocator for the whole child: what it has handed out, by address (size, alignment,
/// scope), how many allocations it was asked for, from which one on it fails, and how many
/// frees named a block it never made.
struct Counter {
    live: std::sync::Mutex<std::collections::BTreeMap<usize, (usize, usize, i32)>>,
    asked: std::sync::atomic::AtomicUsize,
    fail_from: std::sync::atomic::AtomicUsize,
    foreign_frees: std::sync::atomic::AtomicUsize,
}

static COUNTER: Counter = Counter {
    live: std::sync::Mutex::new(std::collections::BTreeMap::new()),
    asked: std::sync::atomic::AtomicUsize::new(0),
    fail_from: std::sync::atomic::AtomicUsize::new(usize::MAX),
    foreign_frees: std::sync::atomic::AtomicUsize::new(0),
};

impl Counter {
    fn live(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeMap<usize, (usize, usize, i32)>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts counting again, failing from allocation `fail_from` on (`usize::MAX`: never).
    fn reset(&self, fail_from: usize) {
        use std::sync::atomic::Ordering::SeqCst;
        assert!(self.live().is_empty(), "blocks left: {:?}", self.live());
        self.asked.store(0, SeqCst);
        self.fail_from.store(fail_from, SeqCst);
    }

    /// The blocks alive of the scopes `scopes`.
    fn live_in(&self, scopes: &[vk::SystemAllocationScope]) -> usize {
        self.live()
            .values()
            .filter(|(_, _, s)| scopes.iter().any(|x| x.as_raw() == *s))
            .count()
    }
}

unsafe extern "system" fn counting_allocation(
    _user: *mut c_void,
    size: usize,
    alignment: usize,
    scope: vk::SystemAllocationScope,
) -> *mut c_void {
    use std::sync::atomic::Ordering::SeqCst;
    let n = COUNTER.asked.fetch_add(1, SeqCst);
    if n >= COUNTER.fail_from.load(SeqCst) {
        return std::ptr::null_mut();
    }
    let Ok(layout) = std::alloc::Layout::from_size_align(size.max(1), alignment) else {
        return std::ptr::null_mut();
    };
    // SAFETY (test): a non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    if !p.is_null() {
        COUNTER
            .live()
            .insert(p as usize, (layout.size(), alignment, scope.as_raw()));
    }
    p.cast()
}

unsafe extern "system" fn counting_reallocation(
    user: *mut c_void,
    original: *mut c_void,
    size: usize,
    alignment: usize,
    scope: vk::SystemAllocationScope,
) -> *mut c_void {
    if original.is_null() {
        // SAFETY (test): forwarded.
        return unsafe { counting_allocation(user, size, alignment, scope) };
    }
    if size == 0 {
        // SAFETY (test): forwarded.
        unsafe { counting_free(user, original) };
        return std::ptr::null_mut();
    }
    let Some((old_size, _, _)) = COUNTER.live().get(&(original as usize)).copied() else {
        COUNTER
            .foreign_frees
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        return std::ptr::null_mut();
    };
    // SAFETY (test): forwarded.
    let new = unsafe { counting_allocation(user, size, alignment, scope) };
    if !new.is_null() {
        // SAFETY (test): both blocks hold at least the smaller size; the old one is ours.
        unsafe {
            std::ptr::copy_nonoverlapping(
                original.cast::<u8>(),
                new.cast::<u8>(),
                old_size.min(size),
            );
            counting_free(user, original);
        }
    }
    new
}

unsafe extern "system" fn counting_free(_user: *mut c_void, memory: *mut c_void) {
    if memory.is_null() {
        return;
    }
    let entry = COUNTER.live().remove(&(memory as usize));
    match entry {
        Some((size, alignment, _)) => {
            let layout = std::alloc::Layout::from_size_align(size, alignment).expect("its layout");
            // SAFETY (test): a block `counting_allocation` made with this layout.
            unsafe { std::alloc::dealloc(memory.cast(), layout) }
        }
        None => {
            COUNTER
                .foreign_frees
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

fn counting_callbacks() -> vk::AllocationCallbacks<'static> {
    vk::AllocationCallbacks {
        pfn_allocation: Some(counting_allocation),
        pfn_reallocation: Some(counting_reallocation),
        pfn_free: Some(counting_free),
        ..Default::default()
    }
}

/// Runs `attempt` with the counting allocator failing from its k-th allocation on, for k = 0,
/// 1, ... until it succeeds: each try must succeed or fail with
/// `VK_ERROR_OUT_OF_HOST_MEMORY`, leaving no block of the allocator behind. Returns how many
/// tries failed.
fn until_success(
    what: &str,
    mut attempt: impl FnMut(&vk::AllocationCallbacks) -> vk::Result,
) -> usize {
    let callbacks = counting_callbacks();
    for k in 0..100_000 {
        COUNTER.reset(k);
        let result = attempt(&callbacks);
        let left = COUNTER.live().len();
        assert_eq!(
            left, 0,
            "{what}, failing from allocation {k} ({result:?}): blocks left"
        );
        match result {
            vk::Result::SUCCESS => return k,
            vk::Result::ERROR_OUT_OF_HOST_MEMORY => {}
            other => panic!("{what}, failing from allocation {k}: {other:?}"),
        }
    }
    panic!("{what} never succeeded");
}

#[test]
#[ignore = "runs inside allocation_callbacks_are_honoured_and_a_null_is_out_of_host_memory"]
fn child_allocation() {
    use vk::SystemAllocationScope as Scope;
    lavapipe::assert_child();
    let shader = tools::workspace_root().join("fixtures/examples/partitioned_vote.comp");
    let words = tools::compile_glsl(&shader, "vulkan1.1").expect("glslang compiles the example");
    let callbacks = counting_callbacks();

    // Counting: every object through the callbacks, then each scope empty when its object goes.
    COUNTER.reset(usize::MAX);
    let mut app = App::open_with(false, false, Some(callbacks));
    println!("subgroup size: {}", app.subgroup_size);
    let pipeline = app.pipeline_with(&words, Some(&callbacks));
    // SAFETY (test): the pipeline was made with the callbacks on this live device.
    unsafe { app.device.destroy_pipeline(pipeline, Some(&callbacks)) };
    let made = COUNTER.asked.load(std::sync::atomic::Ordering::SeqCst);
    // (lavapipe 22.3 keeps two object-scope blocks of a destroyed pipeline until the device
    // goes, so object scope is checked after vkDestroyDevice.)
    assert_eq!(
        COUNTER.live_in(&[Scope::COMMAND]),
        0,
        "{:?}",
        COUNTER.live()
    );
    app.destroy_device_now();
    assert_eq!(
        COUNTER.live_in(&[Scope::COMMAND, Scope::OBJECT, Scope::DEVICE]),
        0,
        "device-scope blocks after vkDestroyDevice: {:?}",
        COUNTER.live()
    );
    drop(app);
    assert!(
        COUNTER.live().is_empty(),
        "blocks after vkDestroyInstance: {:?}",
        COUNTER.live()
    );
    assert_eq!(
        COUNTER
            .foreign_frees
            .load(std::sync::atomic::Ordering::SeqCst),
        0
    );
    println!("allocation callbacks: balanced ({made} allocations)");

    // Failing: every allocation of each command in turn.
    let entry = App::open(false, false);
    let app_info = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let foreign = || {
        COUNTER
            .foreign_frees
            .load(std::sync::atomic::Ordering::SeqCst)
    };
    // vkCreateInstance without the layer, then with it: the layer's own allocations add tries.
    // (A layer that fails vkCreateInstance after the layers below succeeded, destroying their
    // instance again, makes the Debian loader 1.3.239 free some of its blocks twice: 15 frees of
    // blocks no longer allocated, from libvulkan.so.1, seen with gdb before the layer took its
    // memory before calling down. The counter leaves such frees alone and counts them.)
    let step_instances = || {
        let before = foreign();
        let failed = until_success("vkCreateInstance", |cb| {
            let info = vk::InstanceCreateInfo::default().application_info(&app_info);
            // SAFETY (test): a valid create info; the instance is destroyed with the same
            // callbacks.
            match unsafe { entry._entry.create_instance(&info, Some(cb)) } {
                Ok(instance) => {
                    unsafe { instance.destroy_instance(Some(cb)) };
                    vk::Result::SUCCESS
                }
                Err(e) => e,
            }
        });
        (failed, foreign() - before)
    };
    let layers = std::env::var_os("VK_INSTANCE_LAYERS").expect("the layer enabled by the parent");
    // SAFETY (test): one test on one thread; the loader reads it at vkCreateInstance.
    std::env::remove_var("VK_INSTANCE_LAYERS");
    let (failed_alone, foreign_alone) = step_instances();
    std::env::set_var("VK_INSTANCE_LAYERS", &layers);
    let (failed, foreign_with_layer) = step_instances();
    println!(
        "vkCreateInstance: {failed} failing allocations answered ({failed_alone} without the \
         layer); frees of blocks not allocated: {foreign_with_layer} ({foreign_alone} without \
         the layer)"
    );
    assert!(
        failed > failed_alone,
        "the layer allocated nothing through the callbacks"
    );
    assert_eq!(
        (foreign_alone, foreign_with_layer),
        (0, 0),
        "frees of blocks the allocator never made (or had freed), without and with the layer"
    );
    let foreign_after_instances = foreign();
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(entry.queue_family)
        .queue_priorities(&priorities)];
    // The emulated extensions: the layer copies the create info without them.
    let enabled = [NV_PARTITIONED.as_ptr(), EXT_VOTE.as_ptr()];
    let failed = until_success("vkCreateDevice", |cb| {
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&enabled);
        // SAFETY (test): as above.
        match unsafe {
            entry
                .instance
                .create_device(entry.physical_device, &info, Some(cb))
        } {
            Ok(device) => {
                unsafe { device.destroy_device(Some(cb)) };
                vk::Result::SUCCESS
            }
            Err(e) => e,
        }
    });
    println!("vkCreateDevice: {failed} failing allocations answered");
    let failed = until_success("vkCreateShaderModule", |cb| {
        let info = vk::ShaderModuleCreateInfo::default().code(&words);
        // SAFETY (test): as above.
        match unsafe { entry.device.create_shader_module(&info, Some(cb)) } {
            Ok(module) => {
                unsafe { entry.device.destroy_shader_module(module, Some(cb)) };
                vk::Result::SUCCESS
            }
            Err(e) => e,
        }
    });
    println!("vkCreateShaderModule: {failed} failing allocations answered");
    // A pipeline whose stage chains the module: lowered during vkCreateComputePipelines. A
    // failed creation leaves VK_NULL_HANDLE in the output.
    let failed = until_success("vkCreateComputePipelines", |cb| {
        let mut module_info = vk::ShaderModuleCreateInfo::default().code(&words);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .name(c"main");
        stage.p_next = (&mut module_info as *mut vk::ShaderModuleCreateInfo).cast();
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(entry.pipeline_layout);
        // SAFETY (test): as above; the chain lives for the call.
        match unsafe {
            entry
                .device
                .create_compute_pipelines(vk::PipelineCache::null(), &[info], Some(cb))
        } {
            Ok(pipelines) => {
                unsafe { entry.device.destroy_pipeline(pipelines[0], Some(cb)) };
                vk::Result::SUCCESS
            }
            Err((pipelines, e)) => {
                assert!(
                    pipelines.iter().all(|p| *p == vk::Pipeline::null()),
                    "{pipelines:?}"
                );
                e
            }
        }
    });
    println!("vkCreateComputePipelines: {failed} failing allocations answered");
    assert_eq!(
        foreign(),
        foreign_after_instances,
        "frees of blocks the allocator never made (or had freed), in vkCreateDevice, \
         vkCreateShaderModule or vkCreateComputePipelines"
    );
}

// ---------------------------------------------------------------------------------------------
// The application: plain ash, no spv-subgroup crate.

/// `VkPhysicalDeviceShaderSubgroupPartitionedFeaturesEXT` (sType 1000662000 in the Vulkan
/// registry), which ash 0.38 predates.
#[repr(C)]
struct PartitionedFeatures {
    s_type: vk::StructureType,
    p_next: *mut c_void,
    shader_subgroup_partitioned: vk::Bool32,
}

const PARTITIONED_FEATURES: vk::StructureType = vk::StructureType::from_raw(1_000_662_000);

struct App {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    queue: std::sync::Mutex<vk::Queue>,
    queue_family: u32,
    memory: vk::PhysicalDeviceMemoryProperties,
    set_layout: vk::DescriptorSetLayout,
    pipeline_layout: vk::PipelineLayout,
    subgroup_size: u32,
    device_name: String,
    messenger: Option<(ash::ext::debug_utils::Instance, vk::DebugUtilsMessengerEXT)>,
    physical_device: vk::PhysicalDevice,
    /// The callbacks the instance and the device were made with.
    allocator: Option<vk::AllocationCallbacks<'static>>,
    /// Whether `destroy_device_now` ran.
    device_destroyed: bool,
}

/// What the application's debug-utils messenger received: (message id name, message).
static MESSAGES: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// The application's messenger callback: records every message.
unsafe extern "system" fn record_message(
    _severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    // SAFETY (test): the callback data and its strings are valid for the call.
    let text = |p: *const std::ffi::c_char| {
        if p.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    if !data.is_null() {
        // SAFETY (test): as above.
        let data = unsafe { &*data };
        MESSAGES
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((text(data.p_message_id_name), text(data.p_message)));
    }
    vk::FALSE
}

/// Buffers: keys, masks (uvec4), sums, flags.
const BUFFER_SIZES: [usize; 4] = [
    example::LANES * 4,
    example::LANES * 16,
    example::LANES * 4,
    example::LANES * 4,
];

impl App {
    fn open(layer_by_name: bool, debug_utils: bool) -> App {
        App::open_with(layer_by_name, debug_utils, None)
    }

    /// [`App::open`] with the instance and the device made (and destroyed) with `allocator`.
    fn open_with(
        layer_by_name: bool,
        debug_utils: bool,
        allocator: Option<vk::AllocationCallbacks<'static>>,
    ) -> App {
        // For a run by hand on another device (the GPU machine): its name, and whether to require
        // the NV extension alone (a driver with VK_NV_shader_subgroup_partitioned natively, which
        // the layer passes through, need not have the EXT one or its feature struct).
        let device_wanted =
            std::env::var("LAYER_APP_DEVICE").unwrap_or_else(|_| "llvmpipe".to_owned());
        let nv_only = std::env::var_os("LAYER_APP_NV_ONLY").is_some();
        // SAFETY (test): the system loader, as any application loads it.
        let entry = unsafe { ash::Entry::load() }.expect("the Vulkan loader");
        let app_info = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let layers = [LAYER.as_ptr()];
        let mut info = vk::InstanceCreateInfo::default().application_info(&app_info);
        if layer_by_name {
            info = info.enabled_layer_names(&layers);
        }
        let extensions = [ash::ext::debug_utils::NAME.as_ptr()];
        if debug_utils {
            info = info.enabled_extension_names(&extensions);
        }
        // SAFETY (test): a valid create info.
        let instance =
            unsafe { entry.create_instance(&info, allocator.as_ref()) }.expect("an instance");
        let messenger = debug_utils.then(|| {
            let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                        | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION,
                )
                .pfn_user_callback(Some(record_message));
            // SAFETY (test): a live instance with VK_EXT_debug_utils enabled.
            let messenger = unsafe { loader.create_debug_utils_messenger(&info, None) }
                .expect("a debug-utils messenger");
            (loader, messenger)
        });
        // SAFETY (test): calls on a live instance throughout.
        unsafe {
            let pd = instance
                .enumerate_physical_devices()
                .expect("physical devices")
                .into_iter()
                .find(|&pd| {
                    let p = instance.get_physical_device_properties(pd);
                    p.device_name_as_c_str()
                        .is_ok_and(|n| n.to_string_lossy().contains(&device_wanted))
                })
                .unwrap_or_else(|| {
                    panic!(
                        "no device named *{device_wanted}* (lavapipe: install mesa-vulkan-drivers)"
                    )
                });
            // What the application requires: the extensions...
            let extensions = instance
                .enumerate_device_extension_properties(pd)
                .expect("device extensions");
            let names: Vec<&CStr> = extensions
                .iter()
                .filter_map(|e| e.extension_name_as_c_str().ok())
                .collect();
            let required: &[&CStr] = if nv_only {
                &[NV_PARTITIONED, EXT_VOTE]
            } else {
                &[NV_PARTITIONED, EXT_PARTITIONED, EXT_VOTE]
            };
            for required in required {
                assert!(
                    names.contains(required),
                    "{required:?} missing in {names:?}"
                );
            }
            // ... the feature ...
            let mut partitioned = PartitionedFeatures {
                s_type: PARTITIONED_FEATURES,
                p_next: std::ptr::null_mut(),
                shader_subgroup_partitioned: vk::FALSE,
            };
            let mut features = vk::PhysicalDeviceFeatures2 {
                p_next: (&mut partitioned as *mut PartitionedFeatures).cast(),
                ..Default::default()
            };
            instance.get_physical_device_features2(pd, &mut features);
            if !nv_only {
                assert_eq!(partitioned.shader_subgroup_partitioned, vk::TRUE);
            }
            // ... and the operations in both property structs.
            let mut v11 = vk::PhysicalDeviceVulkan11Properties::default();
            let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
            let mut props = vk::PhysicalDeviceProperties2::default()
                .push_next(&mut subgroup)
                .push_next(&mut v11);
            instance.get_physical_device_properties2(pd, &mut props);
            for ops in [
                subgroup.supported_operations,
                v11.subgroup_supported_operations,
            ] {
                assert!(
                    ops.contains(vk::SubgroupFeatureFlags::PARTITIONED_NV),
                    "{ops:?}"
                );
            }
            let subgroup_size = subgroup.subgroup_size;
            let device_name = instance
                .get_physical_device_properties(pd)
                .device_name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            println!("device: {device_name}");
            let queue_family = instance
                .get_physical_device_queue_family_properties(pd)
                .iter()
                .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
                .expect("a compute queue") as u32;
            let priorities = [1.0];
            let queues = [vk::DeviceQueueCreateInfo::default()
                .queue_family_index(queue_family)
                .queue_priorities(&priorities)];
            // graphicsPipelineLibrary makes a stage without a module valid in Vulkan 1.3.239
            // (VUID-VkPipelineShaderStageCreateInfo-stage-06847; maintenance5 later), for
            // `pipeline_chained`.
            let enabled = [
                NV_PARTITIONED.as_ptr(),
                EXT_VOTE.as_ptr(),
                c"VK_KHR_pipeline_library".as_ptr(),
                c"VK_EXT_graphics_pipeline_library".as_ptr(),
            ];
            // The feature struct behind another one: the layer must take it out of the middle.
            let mut want_partitioned = PartitionedFeatures {
                s_type: PARTITIONED_FEATURES,
                p_next: std::ptr::null_mut(),
                shader_subgroup_partitioned: vk::TRUE,
            };
            // Not where only the NV extension is required: the struct belongs to the EXT one,
            // which a driver with the operations natively need not have.
            let partitioned_next: *mut c_void = if nv_only {
                std::ptr::null_mut()
            } else {
                (&mut want_partitioned as *mut PartitionedFeatures).cast()
            };
            let mut library = vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT {
                p_next: partitioned_next,
                graphics_pipeline_library: vk::TRUE,
                ..Default::default()
            };
            // subgroupSizeControl, for the stage that names its size (`pipeline_chained`).
            let v13_features = vk::PhysicalDeviceVulkan13Features {
                p_next: (&mut library as *mut vk::PhysicalDeviceGraphicsPipelineLibraryFeaturesEXT)
                    .cast(),
                subgroup_size_control: vk::TRUE,
                // For `pipeline_full_subgroups`, and its modules' `LocalSizeId`
                // (`VUID-RuntimeSpirv-LocalSizeId-06434`).
                compute_full_subgroups: vk::TRUE,
                maintenance4: vk::TRUE,
                ..Default::default()
            };
            let mut device_info = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&enabled);
            device_info.p_next =
                (&v13_features as *const vk::PhysicalDeviceVulkan13Features).cast();
            let device = instance
                .create_device(pd, &device_info, allocator.as_ref())
                .expect("a device with the emulated extensions");
            // The application's chain is as it was.
            assert_eq!(library.p_next, partitioned_next);
            let queue = device.get_device_queue(queue_family, 0);
            let bindings: Vec<_> = (0..4)
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let set_layout = device
                .create_descriptor_set_layout(
                    &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
                    None,
                )
                .expect("a set layout");
            let layouts = [set_layout];
            let pipeline_layout = device
                .create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts),
                    None,
                )
                .expect("a pipeline layout");
            App {
                memory: instance.get_physical_device_memory_properties(pd),
                _entry: entry,
                instance,
                device,
                queue: std::sync::Mutex::new(queue),
                queue_family,
                set_layout,
                pipeline_layout,
                subgroup_size,
                device_name,
                messenger,
                physical_device: pd,
                allocator,
                device_destroyed: false,
            }
        }
    }

    /// Every subgroup size the device reports: `subgroupSize` of
    /// `VkPhysicalDeviceSubgroupProperties` and `VkPhysicalDeviceVulkan11Properties`, and
    /// `minSubgroupSize`, `maxSubgroupSize` of `VkPhysicalDeviceSubgroupSizeControlProperties` and
    /// `VkPhysicalDeviceVulkan13Properties`, each asked in a chain of its own.
    fn reported_sizes(&self) -> [u32; 6] {
        let pd = self.physical_device;
        // SAFETY (test): queries on a live physical device with output chains on the stack.
        unsafe {
            let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
            let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup);
            self.instance
                .get_physical_device_properties2(pd, &mut props);
            let mut v11 = vk::PhysicalDeviceVulkan11Properties::default();
            let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut v11);
            self.instance
                .get_physical_device_properties2(pd, &mut props);
            let mut control = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
            let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut control);
            self.instance
                .get_physical_device_properties2(pd, &mut props);
            let mut v13 = vk::PhysicalDeviceVulkan13Properties::default();
            let mut props = vk::PhysicalDeviceProperties2::default().push_next(&mut v13);
            self.instance
                .get_physical_device_properties2(pd, &mut props);
            [
                subgroup.subgroup_size,
                v11.subgroup_size,
                control.min_subgroup_size,
                control.max_subgroup_size,
                v13.min_subgroup_size,
                v13.max_subgroup_size,
            ]
        }
    }

    /// A compute pipeline from unlowered SPIR-V, through `vkCreateShaderModule`.
    fn pipeline(&self, words: &[u32]) -> vk::Pipeline {
        self.pipeline_with(words, None)
    }

    /// [`App::pipeline`] with the application's allocation `callbacks` for the module and the
    /// pipeline (the caller destroys the pipeline with the same callbacks).
    fn pipeline_with(
        &self,
        words: &[u32],
        callbacks: Option<&vk::AllocationCallbacks<'_>>,
    ) -> vk::Pipeline {
        // SAFETY (test): calls on a live device with valid create infos.
        unsafe {
            let module = self
                .device
                .create_shader_module(
                    &vk::ShaderModuleCreateInfo::default().code(words),
                    callbacks,
                )
                .expect("a shader module");
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            let info = vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(self.pipeline_layout);
            let pipeline = self
                .device
                .create_compute_pipelines(vk::PipelineCache::null(), &[info], callbacks)
                .map_err(|(_, e)| e)
                .expect("a compute pipeline")[0];
            self.device.destroy_shader_module(module, callbacks);
            pipeline
        }
    }

    /// A compute pipeline whose stage has no module but its `VkShaderModuleCreateInfo` in its
    /// `pNext`, behind a `VkPipelineShaderStageRequiredSubgroupSizeCreateInfo` naming the device's
    /// size (the way pipeline libraries and maintenance5 hand SPIR-V straight to the pipeline).
    fn pipeline_chained(&self, words: &[u32]) -> vk::Pipeline {
        let mut module_info = vk::ShaderModuleCreateInfo::default().code(words);
        let mut size = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(self.subgroup_size);
        size.p_next = (&mut module_info as *mut vk::ShaderModuleCreateInfo).cast();
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .name(c"main");
        stage.p_next =
            (&size as *const vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo).cast();
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(self.pipeline_layout);
        // SAFETY (test): a live device and a create info whose chain lives for the call.
        let pipeline = unsafe {
            self.device
                .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
                .map_err(|(_, e)| e)
                .expect("a compute pipeline from a chained module")[0]
        };
        // The application's chain is as it was.
        assert_eq!(
            size.p_next,
            (&mut module_info as *mut vk::ShaderModuleCreateInfo).cast()
        );
        pipeline
    }

    /// A compute pipeline whose stage requires full subgroups of the device's size
    /// (`VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT` with a
    /// `VkPipelineShaderStageRequiredSubgroupSizeCreateInfo`), its module made by
    /// `vkCreateShaderModule` or chained behind the size.
    fn pipeline_full_subgroups(
        &self,
        words: &[u32],
        chained: bool,
        specialization: Option<&vk::SpecializationInfo>,
    ) -> vk::Pipeline {
        let mut module_info = vk::ShaderModuleCreateInfo::default().code(words);
        let mut size = vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default()
            .required_subgroup_size(self.subgroup_size);
        // SAFETY (test): calls on a live device with create infos whose chains live for them.
        unsafe {
            let mut module = vk::ShaderModule::null();
            if chained {
                size.p_next = (&mut module_info as *mut vk::ShaderModuleCreateInfo).cast();
            } else {
                module = self
                    .device
                    .create_shader_module(&module_info, None)
                    .expect("a shader module");
            }
            let mut stage = vk::PipelineShaderStageCreateInfo::default()
                .flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS)
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(module)
                .name(c"main");
            if let Some(specialization) = specialization {
                stage = stage.specialization_info(specialization);
            }
            stage.p_next =
                (&size as *const vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo).cast();
            let info = vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(self.pipeline_layout);
            let pipeline = self
                .device
                .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
                .map_err(|(_, e)| e)
                .expect("a compute pipeline with full subgroups")[0];
            if !chained {
                self.device.destroy_shader_module(module, None);
            }
            pipeline
        }
    }

    /// Runs `pipeline` on `keys` (one workgroup) and reads back masks, sums and flags.
    #[allow(clippy::type_complexity)]
    fn dispatch(
        &self,
        pipeline: vk::Pipeline,
        keys: &[u32],
    ) -> (Vec<[u32; 4]>, Vec<u32>, Vec<u32>) {
        let d = &self.device;
        // SAFETY (test): calls on a live device; mapped memory is read and written within the
        // sizes it was allocated with, after the fence says the GPU is done.
        unsafe {
            let mut buffers = Vec::new();
            for size in BUFFER_SIZES {
                let buffer = d
                    .create_buffer(
                        &vk::BufferCreateInfo::default()
                            .size(size as u64)
                            .usage(vk::BufferUsageFlags::STORAGE_BUFFER),
                        None,
                    )
                    .expect("a buffer");
                let req = d.get_buffer_memory_requirements(buffer);
                let flags =
                    vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
                let type_index = (0..self.memory.memory_type_count)
                    .find(|&i| {
                        req.memory_type_bits & (1 << i) != 0
                            && self.memory.memory_types[i as usize]
                                .property_flags
                                .contains(flags)
                    })
                    .expect("host-visible memory");
                let memory = d
                    .allocate_memory(
                        &vk::MemoryAllocateInfo::default()
                            .allocation_size(req.size)
                            .memory_type_index(type_index),
                        None,
                    )
                    .expect("memory");
                d.bind_buffer_memory(buffer, memory, 0).expect("bind");
                let ptr = d
                    .map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty())
                    .expect("map") as *mut u8;
                std::ptr::write_bytes(ptr, 0, size);
                buffers.push((buffer, memory, ptr));
            }
            std::ptr::copy_nonoverlapping(keys.as_ptr(), buffers[0].2.cast::<u32>(), keys.len());
            let sizes = [vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: 4,
            }];
            let pool = d
                .create_descriptor_pool(
                    &vk::DescriptorPoolCreateInfo::default()
                        .max_sets(1)
                        .pool_sizes(&sizes),
                    None,
                )
                .expect("a descriptor pool");
            let layouts = [self.set_layout];
            let set = d
                .allocate_descriptor_sets(
                    &vk::DescriptorSetAllocateInfo::default()
                        .descriptor_pool(pool)
                        .set_layouts(&layouts),
                )
                .expect("a descriptor set")[0];
            let infos: Vec<[vk::DescriptorBufferInfo; 1]> = buffers
                .iter()
                .map(|(b, _, _)| {
                    [vk::DescriptorBufferInfo::default()
                        .buffer(*b)
                        .range(vk::WHOLE_SIZE)]
                })
                .collect();
            let writes: Vec<_> = infos
                .iter()
                .enumerate()
                .map(|(i, info)| {
                    vk::WriteDescriptorSet::default()
                        .dst_set(set)
                        .dst_binding(i as u32)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .buffer_info(info)
                })
                .collect();
            d.update_descriptor_sets(&writes, &[]);
            let command_pool = d
                .create_command_pool(
                    &vk::CommandPoolCreateInfo::default().queue_family_index(self.queue_family),
                    None,
                )
                .expect("a command pool");
            let cmd = d
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(command_pool)
                        .command_buffer_count(1),
                )
                .expect("a command buffer")[0];
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .expect("begin");
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            d.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.pipeline_layout,
                0,
                &[set],
                &[],
            );
            d.cmd_dispatch(cmd, 1, 1, 1);
            d.end_command_buffer(cmd).expect("end");
            let fence = d
                .create_fence(&vk::FenceCreateInfo::default(), None)
                .expect("a fence");
            let cmds = [cmd];
            let submit = vk::SubmitInfo::default().command_buffers(&cmds);
            {
                let queue = self.queue.lock().expect("the queue");
                d.queue_submit(*queue, &[submit], fence).expect("submit");
            }
            d.wait_for_fences(&[fence], true, u64::MAX).expect("wait");
            let read = |i: usize| -> Vec<u32> {
                let n = BUFFER_SIZES[i] / 4;
                std::slice::from_raw_parts(buffers[i].2.cast::<u32>(), n).to_vec()
            };
            let masks = read(1)
                .chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect();
            let result = (masks, read(2), read(3));
            d.destroy_fence(fence, None);
            d.destroy_command_pool(command_pool, None);
            d.destroy_descriptor_pool(pool, None);
            for (buffer, memory, _) in buffers {
                d.destroy_buffer(buffer, None);
                d.free_memory(memory, None);
            }
            d.destroy_pipeline(pipeline, None);
            result
        }
    }
}

impl App {
    /// Destroys the device (and what it made) before the instance, which `drop` destroys.
    fn destroy_device_now(&mut self) {
        if self.device_destroyed {
            return;
        }
        self.device_destroyed = true;
        // SAFETY (test): every object was made by this device, which is idle after the fences.
        unsafe {
            self.device
                .destroy_pipeline_layout(self.pipeline_layout, None);
            self.device
                .destroy_descriptor_set_layout(self.set_layout, None);
            self.device.destroy_device(self.allocator.as_ref());
        }
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.destroy_device_now();
        // SAFETY (test): the device is gone; the instance made nothing else still alive.
        unsafe {
            if let Some((loader, messenger)) = self.messenger.take() {
                loader.destroy_debug_utils_messenger(messenger, None);
            }
            self.instance.destroy_instance(self.allocator.as_ref());
        }
    }
}
