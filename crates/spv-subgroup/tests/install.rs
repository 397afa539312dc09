//! `cargo xtask install`'s layout, used as a user uses it: the files are laid out under a
//! temporary prefix (from this build's artifacts: the dev profile's binary and libraries, so the
//! test needs no second, optimised build; `cargo xtask install` builds the `dist` profile), then
//! a C and a C++ program are built against the prefix twice, with `pkg-config --cflags --libs`
//! and with CMake's `find_package(spv-subgroup)`, run on the README example, and their output
//! checked with `spirv-val`. The installed binary, man pages and completions are checked too, and
//! a `DESTDIR` install stages the files without naming the staging directory in them.
//!
//! Needs cc, c++, pkg-config, cmake and make (`cargo xtask install-deps`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use spv_subgroup_tests::tools;
use xtask::install::{self, Artifacts, Install};

/// This build's artifacts: the binary under test, and the C libraries cargo built for this
/// test (the crate dev-depends on `spv-subgroup-capi`, so they sit beside the test binary).
fn artifacts() -> Artifacts {
    let exe = std::env::current_exe().expect("the test binary has a path");
    let deps = exe.parent().expect("deps/");
    Artifacts {
        binary: PathBuf::from(common::EXE),
        shared_library: deps.join("libspv_subgroup.so"),
        static_library: deps.join("libspv_subgroup.a"),
        header: tools::workspace_root().join("crates/spv-subgroup-capi/include/spv_subgroup.h"),
        layer_library: deps.join("libVkLayer_spv_subgroup.so"),
    }
}

fn install_into(prefix: &Path, destdir: Option<PathBuf>) {
    let artifacts = artifacts();
    for f in [
        &artifacts.shared_library,
        &artifacts.static_library,
        &artifacts.layer_library,
    ] {
        assert!(f.is_file(), "{} was not built", f.display());
    }
    let i = Install::new(artifacts, prefix, destdir).expect("an install plan");
    install::install(&i).expect("the install succeeds");
}

/// Runs `cmd`; fails with its output unless it succeeds; returns stdout and stderr.
fn run(cmd: &mut Command, hint: &str) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {shown} ({e}); {hint}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{text}",
        out.status
    );
    text
}

const INSTALL_HINT: &str = "install the build tools (`cargo xtask install-deps`; Debian: apt-get install gcc g++ pkg-config cmake make)";

fn examples() -> PathBuf {
    tools::workspace_root().join("crates/spv-subgroup-capi/examples")
}

/// Runs a program built against the prefix on the README example; checks that it reports
/// success and that what it wrote passes spirv-val; `shared`: it links the SONAME.
fn check_program(exe: &Path, prefix: &Path, shared: bool, work: &Path) {
    let needed = run(Command::new("readelf").arg("-d").arg(exe), INSTALL_HINT);
    assert_eq!(
        needed.contains("Shared library: [libspv_subgroup.so.0]"),
        shared,
        "{} should {}link libspv_subgroup.so.0 (the SONAME):\n{needed}",
        exe.display(),
        if shared { "" } else { "not " }
    );
    let input = work.join("in.spv");
    std::fs::write(&input, common::example_bytes()).unwrap();
    let output = work.join(format!(
        "{}.spv",
        exe.file_name().unwrap().to_string_lossy()
    ));
    let text = run(
        Command::new(exe)
            .arg(&input)
            .arg(&output)
            .env("LD_LIBRARY_PATH", prefix.join("lib")),
        INSTALL_HINT,
    );
    assert!(
        text.contains("ok: spv-subgroup"),
        "{} did not finish:\n{text}",
        exe.display()
    );
    tools::spirv_val(&tools::read_words(&output), "vulkan1.1")
        .unwrap_or_else(|e| panic!("spirv-val rejects what {} wrote:\n{e}", exe.display()));
}

#[test]
fn c_and_cpp_programs_build_against_the_installed_prefix_with_pkg_config_and_cmake() {
    let tmp = tempfile::tempdir().unwrap();
    // The characters pkg-config reads specially (a space splits, `#` starts a comment, quotes):
    // each must reach the compiler as it is.
    let prefix = tmp.path().join("prefix with space it's #2");
    install_into(&prefix, None);

    // pkg-config: the flags it gives, as a build script passes them on.
    let flags = run(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "spv-subgroup"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        INSTALL_HINT,
    );
    let flags = shell_words(&flags);
    assert!(
        flags.iter().any(|f| f == "-lspv_subgroup"),
        "pkg-config flags: {flags:?}"
    );
    for dir in [
        format!("-I{}", prefix.join("include").display()),
        format!("-L{}", prefix.join("lib").display()),
    ] {
        assert!(
            flags.contains(&dir),
            "pkg-config flags {flags:?} do not name {dir}"
        );
    }
    let version = run(
        Command::new("pkg-config")
            .args(["--modversion", "spv-subgroup"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        INSTALL_HINT,
    );
    assert_eq!(version.trim(), install::VERSION);
    for (compiler, std, source, name) in [
        ("cc", "-std=c99", "lower_and_validate.c", "pc_c"),
        ("c++", "-std=c++11", "lower_and_validate.cpp", "pc_cpp"),
    ] {
        let exe = tmp.path().join(name);
        run(
            Command::new(compiler)
                .args([std, "-Wall", "-Wextra", "-Werror"])
                .arg(examples().join(source))
                .arg("-o")
                .arg(&exe)
                .args(&flags),
            INSTALL_HINT,
        );
        check_program(&exe, &prefix, true, tmp.path());
    }

    // CMake: one project, the C program on the shared library's target and the C++ program on
    // the static one's.
    let project = tmp.path().join("cmake-project");
    std::fs::create_dir(&project).unwrap();
    let cmake_path = |p: PathBuf| p.display().to_string().replace('\\', "/");
    std::fs::write(
        project.join("CMakeLists.txt"),
        format!(
            r#"cmake_minimum_required(VERSION 3.10)
project(spv_subgroup_consumer C CXX)
set(CMAKE_CXX_STANDARD 11)
find_package(spv-subgroup 0.1 REQUIRED CONFIG)
add_executable(cmake_c "{c}")
target_compile_options(cmake_c PRIVATE -Wall -Wextra -Werror)
target_link_libraries(cmake_c PRIVATE spv-subgroup::spv-subgroup)
add_executable(cmake_cpp "{cpp}")
target_compile_options(cmake_cpp PRIVATE -Wall -Wextra -Werror)
target_link_libraries(cmake_cpp PRIVATE spv-subgroup::static)
"#,
            c = cmake_path(examples().join("lower_and_validate.c")),
            cpp = cmake_path(examples().join("lower_and_validate.cpp")),
        ),
    )
    .unwrap();
    let build = tmp.path().join("cmake-build");
    run(
        Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(&build)
            .arg(format!(
                "-DCMAKE_PREFIX_PATH={}",
                cmake_path(prefix.clone())
            )),
        INSTALL_HINT,
    );
    run(
        Command::new("cmake").arg("--build").arg(&build),
        INSTALL_HINT,
    );
    check_program(&build.join("cmake_c"), &prefix, true, tmp.path());
    check_program(&build.join("cmake_cpp"), &prefix, false, tmp.path());
}

#[test]
fn the_cmake_package_checks_the_version_asked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("prefix");
    install_into(&prefix, None);
    let (major, minor) = {
        let mut v = install::VERSION.split('.');
        (v.next().unwrap().to_owned(), v.next().unwrap().to_owned())
    };
    // A project without languages configures in a fraction of a second: only find_package runs.
    let project = tmp.path().join("versions");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("CMakeLists.txt"),
        format!(
            r#"cmake_minimum_required(VERSION 3.10)
project(versions NONE)
find_package(spv-subgroup {version} EXACT REQUIRED CONFIG)
find_package(spv-subgroup {major}.{minor} REQUIRED CONFIG)
find_package(spv-subgroup {major}.{next_minor} QUIET CONFIG)
if(spv-subgroup_FOUND)
  message(FATAL_ERROR "a different minor version of a 0.x release was accepted")
endif()
find_package(spv-subgroup {next_major} QUIET CONFIG)
if(spv-subgroup_FOUND)
  message(FATAL_ERROR "a newer major version was accepted")
endif()
message(STATUS "versions checked")
"#,
            version = install::VERSION,
            next_minor = minor.parse::<u32>().unwrap() + 1,
            next_major = major.parse::<u32>().unwrap() + 1,
        ),
    )
    .unwrap();
    let text = run(
        Command::new("cmake")
            .arg("-S")
            .arg(&project)
            .arg("-B")
            .arg(tmp.path().join("versions-build"))
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())),
        INSTALL_HINT,
    );
    assert!(text.contains("versions checked"), "{text}");
}

/// pkg-config's output split as a shell would (it escapes spaces in paths with `\`).
fn shell_words(text: &str) -> Vec<String> {
    let mut words = vec![];
    let mut word = String::new();
    let mut chars = text.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[test]
fn the_installed_binary_man_pages_and_completions_work() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("usr");
    install_into(&prefix, None);
    let version = run(
        Command::new(prefix.join("bin/spv-subgroup")).arg("--version"),
        INSTALL_HINT,
    );
    assert!(version.contains(install::VERSION), "{version}");
    let lib = prefix.join("lib");
    assert_eq!(
        std::fs::read_link(lib.join("libspv_subgroup.so")).unwrap(),
        Path::new("libspv_subgroup.so.0")
    );
    assert_eq!(
        std::fs::read_link(lib.join("libspv_subgroup.so.0")).unwrap(),
        Path::new(&format!("libspv_subgroup.so.{}", install::VERSION))
    );
    // One page per subcommand, each a roff page that names it.
    for page in ["", "-validate", "-lower", "-explain", "-targets", "-run"] {
        let path = prefix.join(format!("share/man/man1/spv-subgroup{page}.1"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            text.starts_with(".ie \\n(.g") || text.contains(".TH"),
            "{} is no man page",
            path.display()
        );
        assert!(
            text.contains(&format!("spv\\-subgroup{}", page.replace('-', "\\-"))),
            "{} does not name its command",
            path.display()
        );
    }
    let hidden = prefix.join("share/man/man1/spv-subgroup-generate-assets.1");
    assert!(!hidden.exists(), "the hidden subcommand got a page");
    // Completions: each names the subcommands; bash's parses.
    for file in [
        "share/bash-completion/completions/spv-subgroup",
        "share/zsh/site-functions/_spv-subgroup",
        "share/fish/vendor_completions.d/spv-subgroup.fish",
    ] {
        let text = std::fs::read_to_string(prefix.join(file)).unwrap();
        for sub in ["validate", "lower", "explain", "targets"] {
            assert!(text.contains(sub), "{file} lacks {sub}");
        }
        assert!(
            !text.contains("generate-assets"),
            "{file} completes the hidden subcommand"
        );
    }
    run(
        Command::new("bash")
            .arg("-n")
            .arg(prefix.join("share/bash-completion/completions/spv-subgroup")),
        "bash is needed",
    );
}

#[test]
fn destdir_stages_the_files_and_they_name_the_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    install_into(Path::new("/opt/spv-subgroup"), Some(stage.clone()));
    let staged = stage.join("opt/spv-subgroup");
    for file in [
        "bin/spv-subgroup",
        "include/spv_subgroup.h",
        "lib/libspv_subgroup.a",
        "lib/cmake/spv-subgroup/spv-subgroupConfigVersion.cmake",
    ] {
        assert!(staged.join(file).is_file(), "{file} is not staged");
    }
    let pc = std::fs::read_to_string(staged.join("lib/pkgconfig/spv-subgroup.pc")).unwrap();
    assert!(pc.starts_with("prefix=/opt/spv-subgroup\n"), "{pc}");
    let stage_name = stage.to_string_lossy();
    for file in [
        "lib/pkgconfig/spv-subgroup.pc",
        "lib/cmake/spv-subgroup/spv-subgroupConfig.cmake",
    ] {
        let text = std::fs::read_to_string(staged.join(file)).unwrap();
        assert!(
            !text.contains(&*stage_name),
            "{file} names DESTDIR:\n{text}"
        );
    }
}

#[test]
fn the_installed_vulkan_layer_loads_from_its_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("usr");
    install_into(&prefix, None);
    let manifests = prefix.join("share/vulkan/explicit_layer.d");
    let manifest = std::fs::read_to_string(manifests.join("VkLayer_spv_subgroup.json"))
        .expect("the manifest is installed");
    assert!(manifest.contains(r#""library_path": "../../../lib/libVkLayer_spv_subgroup.so""#));
    assert!(prefix.join("lib/libVkLayer_spv_subgroup.so").is_file());
    // The loader finds the library through the manifest's relative path: the device lavapipe
    // offers now lists the partitioned extension, which lavapipe itself lacks.
    let out = Command::new("vulkaninfo")
        .env("VK_LAYER_PATH", &manifests)
        .env("VK_INSTANCE_LAYERS", "VK_LAYER_SPV_SUBGROUP_lower")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run vulkaninfo ({e}): `cargo xtask install-deps` installs vulkan-tools")
        });
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("VK_NV_shader_subgroup_partitioned"),
        "the layer's extension is not listed: {text}"
    );
}
