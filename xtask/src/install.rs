//! `cargo xtask install --prefix P`: lay out what a user installs, under `$DESTDIR$P`.
//!
//! The build ([`build_dist`]: the `dist` profile, optimised, without debug info, stripped) and
//! the layout ([`install`]) are apart, so a test can lay out artifacts it already has (the dev
//! profile's, `--artifacts DIR`) without a second, optimised build of the workspace.
//!
//! The layout is a list of file sets ([`FILE_SETS`]), each one function that copies or writes
//! its files through [`Install`]: to install something new (a Vulkan layer, say), write its
//! function and add it to the list. The installed files:
//!
//! | path under the prefix | file set |
//! |---|---|
//! | `bin/spv-subgroup` | [`binary`] |
//! | `lib/libspv_subgroup.so.0.1.0`, links `.so.0` and `.so`, `lib/libspv_subgroup.a`, `include/spv_subgroup.h` | [`c_library`] |
//! | `lib/pkgconfig/spv-subgroup.pc` | [`pkg_config`] |
//! | `lib/cmake/spv-subgroup/spv-subgroupConfig.cmake`, `spv-subgroupConfigVersion.cmake` | [`cmake_package`] |
//! | `share/man/man1/spv-subgroup*.1`, bash, zsh and fish completions | [`man_and_completions`] |
//! | `lib/libVkLayer_spv_subgroup.so`, `share/vulkan/explicit_layer.d/VkLayer_spv_subgroup.json` | [`vulkan_layer`] |
//!
//! The files name the prefix, never `DESTDIR` (which only stages them, as `make install` does);
//! the CMake package finds its files relative to itself, so it works wherever the tree is moved.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

/// The C interface's ABI version, the SONAME's number (`crates/spv-subgroup-capi/build.rs`
/// sets the same in the library; the install test reads the SONAME back).
pub const ABI_VERSION: u32 = 0;

/// The version of the packages, from the workspace (the crates share one version).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The system libraries a Rust static library needs on Linux (`rustc --print
/// native-static-libs` for `spv-subgroup-capi`), for `pkg-config --static` and CMake's static target.
const STATIC_LIBS: &[&str] = &["gcc_s", "util", "rt", "pthread", "m", "dl", "c"];

/// One group of installed files, written by one function.
pub type FileSet = (&'static str, fn(&Install) -> anyhow::Result<()>);

/// Every file set, in the order they are installed.
pub const FILE_SETS: &[FileSet] = &[
    ("binary", binary),
    ("C library and header", c_library),
    ("pkg-config file", pkg_config),
    ("CMake package", cmake_package),
    ("man pages and shell completions", man_and_completions),
    ("Vulkan layer", vulkan_layer),
];

/// The layer's installed layout, from the layer crate itself (one source for its paths and its
/// manifest template; included by path so that xtask does not build the layer and `ash`).
#[path = "../../crates/spv-subgroup-layer/src/install.rs"]
pub mod layer_layout;

/// Where the built files are.
#[derive(Clone, Debug)]
pub struct Artifacts {
    /// The `spv-subgroup` binary.
    pub binary: PathBuf,
    /// `libspv_subgroup.so`.
    pub shared_library: PathBuf,
    /// `libspv_subgroup.a`.
    pub static_library: PathBuf,
    /// `spv_subgroup.h`.
    pub header: PathBuf,
    /// The Vulkan layer, `libVkLayer_spv_subgroup.so`.
    pub layer_library: PathBuf,
}

impl Artifacts {
    /// The files cargo wrote into one profile's output directory (`target/dist`, `target/debug`),
    /// with the committed header; fails naming what is missing and how to build it.
    pub fn in_dir(root: &Path, dir: &Path) -> anyhow::Result<Artifacts> {
        let artifacts = Artifacts {
            binary: dir.join("spv-subgroup"),
            shared_library: dir.join("libspv_subgroup.so"),
            static_library: dir.join("libspv_subgroup.a"),
            header: root.join("crates/spv-subgroup-capi/include/spv_subgroup.h"),
            layer_library: dir.join(layer_layout::LIBRARY_FILE),
        };
        for file in [
            &artifacts.binary,
            &artifacts.shared_library,
            &artifacts.static_library,
            &artifacts.header,
            &artifacts.layer_library,
        ] {
            if !file.is_file() {
                bail!(
                    "{} is missing: build it first (`cargo build -p spv-subgroup -p spv-subgroup-capi \
                     -p spv-subgroup-layer`, with `--profile PROFILE` for another profile's directory)",
                    file.display()
                );
            }
        }
        Ok(artifacts)
    }
}

/// One installation: what is installed, where it will live, and where it is written now.
#[derive(Debug)]
pub struct Install {
    /// The built files.
    pub artifacts: Artifacts,
    /// The prefix the installed files name (absolute).
    pub prefix: PathBuf,
    /// Written under `DESTDIR/prefix` when set (staging for a package), else under `prefix`.
    pub destdir: Option<PathBuf>,
    /// A temporary directory for generated files (the man pages and completions).
    scratch: tempfile::TempDir,
}

impl Install {
    /// An installation of `artifacts` under `prefix` (made absolute), staged under `destdir`.
    pub fn new(
        artifacts: Artifacts,
        prefix: &Path,
        destdir: Option<PathBuf>,
    ) -> anyhow::Result<Install> {
        let prefix = std::path::absolute(prefix)
            .with_context(|| format!("cannot make {} absolute", prefix.display()))?;
        // Refused before anything is written: a half-made install is worse than none.
        pc_escape(&prefix)?;
        Ok(Install {
            artifacts,
            prefix,
            destdir: destdir.filter(|d| !d.as_os_str().is_empty()),
            scratch: tempfile::tempdir().context("cannot create a temporary directory")?,
        })
    }

    /// Where the file at `relative` under the prefix is written now.
    pub fn staged(&self, relative: &str) -> PathBuf {
        let installed = self.prefix.join(relative);
        match &self.destdir {
            // `join` would drop DESTDIR for an absolute path: append the prefix's components.
            Some(d) => d.join(installed.strip_prefix("/").unwrap_or(&installed)),
            None => installed,
        }
    }

    /// Copies `from` to `relative` under the prefix with the given mode, replacing what is there.
    pub fn copy(&self, from: &Path, relative: &str, mode: u32) -> anyhow::Result<()> {
        let bytes =
            std::fs::read(from).with_context(|| format!("cannot read {}", from.display()))?;
        self.write(relative, &bytes, mode)
    }

    /// Writes `bytes` to `relative` under the prefix with the given mode: into a temporary file
    /// beside it, then renamed over it, so a running program never sees a half-written file
    /// (replacing a library that a process has mapped must not change its pages).
    pub fn write(&self, relative: &str, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let to = self.staged(relative);
        let dir = to.parent().context("an installed file has a directory")?;
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        // A name of its own, created exclusively (never through a link someone planted), so
        // that installs running at once into one prefix each write their own file; dropped
        // (removed) on any failure, so a full disk leaves nothing behind.
        let mut tmp = tempfile::Builder::new()
            .prefix(".spv-subgroup-install.")
            .suffix(".tmp")
            .tempfile_in(dir)
            .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
        tmp.write_all(bytes)
            .and_then(|()| tmp.as_file().sync_all())
            .with_context(|| format!("cannot write {}", to.display()))?;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot set the mode of {}", to.display()))?;
        tmp.persist(&to).map_err(|e| {
            anyhow::Error::new(e.error).context(format!(
                "cannot rename a temporary file to {}",
                to.display()
            ))
        })?;
        eprintln!("  {}", to.display());
        Ok(())
    }

    /// Makes `relative` a symbolic link to `target` (a name in the same directory).
    pub fn symlink(&self, target: &str, relative: &str) -> anyhow::Result<()> {
        let link = self.staged(relative);
        if let Some(dir) = link.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        match std::fs::remove_file(&link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot replace {}", link.display())),
        }
        std::os::unix::fs::symlink(target, &link)
            .with_context(|| format!("cannot link {} to {target}", link.display()))?;
        eprintln!("  {} -> {target}", link.display());
        Ok(())
    }
}

/// Installs every file set.
pub fn install(install: &Install) -> anyhow::Result<()> {
    for (what, file_set) in FILE_SETS {
        eprintln!("install: {what}");
        file_set(install).with_context(|| format!("installing the {what}"))?;
    }
    Ok(())
}

/// Builds the binary and the C libraries with the `dist` profile and returns where they are.
pub fn build_dist(root: &Path) -> anyhow::Result<Artifacts> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root)
        .args(["build", "--locked", "--profile", "dist"])
        .args(["-p", "spv-subgroup", "-p", "spv-subgroup-capi"])
        .args(["-p", "spv-subgroup-layer"])
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("cargo build --profile dist failed ({status})");
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    Artifacts::in_dir(root, &target.join("dist"))
}

/// `bin/spv-subgroup`.
pub fn binary(i: &Install) -> anyhow::Result<()> {
    i.copy(&i.artifacts.binary, "bin/spv-subgroup", 0o755)
}

/// The shared library under its full version with the SONAME's link and the development link,
/// the static library and the header.
pub fn c_library(i: &Install) -> anyhow::Result<()> {
    let real = format!("libspv_subgroup.so.{VERSION}");
    let soname = format!("libspv_subgroup.so.{ABI_VERSION}");
    i.copy(&i.artifacts.shared_library, &format!("lib/{real}"), 0o755)?;
    i.symlink(&real, &format!("lib/{soname}"))?;
    i.symlink(&soname, "lib/libspv_subgroup.so")?;
    i.copy(&i.artifacts.static_library, "lib/libspv_subgroup.a", 0o644)?;
    i.copy(&i.artifacts.header, "include/spv_subgroup.h", 0o644)
}

/// `lib/pkgconfig/spv-subgroup.pc`: `pkg-config --cflags --libs spv-subgroup` links the shared
/// library; with `--static`, the static one's system libraries come too.
pub fn pkg_config(i: &Install) -> anyhow::Result<()> {
    let private: Vec<String> = STATIC_LIBS.iter().map(|l| format!("-l{l}")).collect();
    let text = format!(
        "prefix={prefix}\n\
         exec_prefix=${{prefix}}\n\
         libdir=${{exec_prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: spv-subgroup\n\
         Description: Validate and lower SPIR-V subgroup vote and partitioned operations\n\
         URL: https://github.com/spv-subgroup/spv-subgroup\n\
         Version: {VERSION}\n\
         Libs: -L${{libdir}} -lspv_subgroup\n\
         Libs.private: {private}\n\
         Cflags: -I${{includedir}}\n",
        prefix = pc_escape(&i.prefix)?,
        private = private.join(" "),
    );
    i.write("lib/pkgconfig/spv-subgroup.pc", text.as_bytes(), 0o644)
}

/// The prefix as a pkg-config value: pkg-config (pkgconf) reads `#` as a comment and splits at
/// spaces, and its `--cflags`/`--libs` output is read by a shell (make, meson), so a space, `#`,
/// a quote or a backslash is escaped with a backslash. A prefix that no escape carries through
/// pkgconf to the shell unchanged (`$` is expanded, `(` and `)` are dropped or break the
/// shell's parse, a control character ends the line or the word) is refused, as is one that is
/// not UTF-8: better no install than a `.pc` file that names another prefix.
pub fn pc_escape(path: &Path) -> anyhow::Result<String> {
    let text = path.to_str().with_context(|| {
        format!(
            "the prefix {} is not UTF-8, which a pkg-config file cannot carry",
            path.display()
        )
    })?;
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            ' ' | '#' | '\'' | '"' | '\\' => {
                escaped.push('\\');
                escaped.push(c);
            }
            '$' | '(' | ')' => bail!(
                "the prefix {text} holds `{c}`, which a pkg-config file cannot carry to the \
                 shell that reads its flags: choose a prefix without `$`, `(` and `)`"
            ),
            c if c.is_control() => bail!(
                "the prefix {text:?} holds the control character {c:?}, which a pkg-config \
                 file cannot carry: choose another prefix"
            ),
            c => escaped.push(c),
        }
    }
    Ok(escaped)
}

/// `lib/cmake/spv-subgroup/`: `find_package(spv-subgroup 0.1 CONFIG)` gives the imported
/// targets `spv-subgroup::spv-subgroup` (the shared library) and `spv-subgroup::static`.
pub fn cmake_package(i: &Install) -> anyhow::Result<()> {
    let libs = STATIC_LIBS
        .iter()
        .filter(|l| **l != "c")
        .copied()
        .collect::<Vec<_>>()
        .join(";");
    let config = format!(
        r#"# CMake package of spv-subgroup {VERSION}, written by `cargo xtask install`.
# Imported targets:
#   spv-subgroup::spv-subgroup   the shared library (libspv_subgroup.so.{ABI_VERSION}) and its header
#   spv-subgroup::static         the static library, with the system libraries it needs
# Paths are found relative to this file, so an installed tree may be moved.
cmake_minimum_required(VERSION 3.10)
get_filename_component(_spvsg_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)

if(NOT TARGET spv-subgroup::spv-subgroup)
  add_library(spv-subgroup::spv-subgroup SHARED IMPORTED)
  set_target_properties(spv-subgroup::spv-subgroup PROPERTIES
    IMPORTED_LOCATION "${{_spvsg_prefix}}/lib/libspv_subgroup.so.{VERSION}"
    IMPORTED_SONAME "libspv_subgroup.so.{ABI_VERSION}"
    INTERFACE_INCLUDE_DIRECTORIES "${{_spvsg_prefix}}/include")
endif()

if(NOT TARGET spv-subgroup::static)
  add_library(spv-subgroup::static STATIC IMPORTED)
  set_target_properties(spv-subgroup::static PROPERTIES
    IMPORTED_LOCATION "${{_spvsg_prefix}}/lib/libspv_subgroup.a"
    INTERFACE_INCLUDE_DIRECTORIES "${{_spvsg_prefix}}/include"
    INTERFACE_LINK_LIBRARIES "{libs}")
endif()

unset(_spvsg_prefix)
"#
    );
    let (major, minor) = major_minor(VERSION)?;
    let version = format!(
        r#"# Version check of the spv-subgroup CMake package, written by `cargo xtask install`.
# Compatible as Cargo's semver is: the same major version, and for 0.x the same minor version,
# at least the version asked for.
set(PACKAGE_VERSION "{VERSION}")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif(NOT PACKAGE_FIND_VERSION_MAJOR EQUAL {major})
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
elseif({major} EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL {minor})
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
# A 64-bit library: refuse a 32-bit project rather than fail at link time.
if(CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P EQUAL 8)
  set(PACKAGE_VERSION "${{PACKAGE_VERSION}} (64-bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
"#
    );
    let dir = "lib/cmake/spv-subgroup";
    i.write(
        &format!("{dir}/spv-subgroupConfig.cmake"),
        config.as_bytes(),
        0o644,
    )?;
    i.write(
        &format!("{dir}/spv-subgroupConfigVersion.cmake"),
        version.as_bytes(),
        0o644,
    )
}

fn major_minor(version: &str) -> anyhow::Result<(u32, u32)> {
    let mut parts = version.split('.').map(str::parse::<u32>);
    match (parts.next(), parts.next()) {
        (Some(Ok(major)), Some(Ok(minor))) => Ok((major, minor)),
        _ => bail!("version {version} is not MAJOR.MINOR.PATCH"),
    }
}

/// The man pages and the bash, zsh and fish completions, generated by the binary being installed
/// (its hidden `generate-assets` subcommand), where each tool looks for them under the prefix.
pub fn man_and_completions(i: &Install) -> anyhow::Result<()> {
    let out = i.scratch.path().join("assets");
    let status = Command::new(&i.artifacts.binary)
        .arg("generate-assets")
        .arg("--out")
        .arg(&out)
        .status()
        .with_context(|| format!("cannot run {}", i.artifacts.binary.display()))?;
    if !status.success() {
        bail!("spv-subgroup generate-assets failed ({status})");
    }
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&out)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    pages.retain(|p| p.extension().is_some_and(|e| e == "1"));
    pages.sort();
    if pages.is_empty() {
        bail!("generate-assets wrote no man page");
    }
    for page in &pages {
        let name = page
            .file_name()
            .context("a page has a name")?
            .to_string_lossy();
        i.copy(page, &format!("share/man/man1/{name}"), 0o644)?;
    }
    for (file, to) in [
        (
            "spv-subgroup.bash",
            "share/bash-completion/completions/spv-subgroup",
        ),
        ("_spv-subgroup", "share/zsh/site-functions/_spv-subgroup"),
        (
            "spv-subgroup.fish",
            "share/fish/vendor_completions.d/spv-subgroup.fish",
        ),
    ] {
        i.copy(&out.join(file), to, 0o644)?;
    }
    Ok(())
}

/// The Vulkan layer (docs/layer.md): the library in `lib/`, and its manifest in
/// `share/vulkan/explicit_layer.d/`, whose `library_path` names the library relative to the
/// manifest so that the installed tree may move. `VK_LAYER_PATH=PREFIX/share/vulkan/explicit_layer.d`
/// and `VK_INSTANCE_LAYERS=VK_LAYER_SPV_SUBGROUP_lower` enable it.
pub fn vulkan_layer(i: &Install) -> anyhow::Result<()> {
    let library = format!(
        "{}/{}",
        layer_layout::LIBRARY_DIR,
        layer_layout::LIBRARY_FILE
    );
    i.copy(&i.artifacts.layer_library, &library, 0o755)?;
    let manifest = layer_layout::manifest_json(layer_layout::INSTALLED_LIBRARY_PATH);
    let at = format!(
        "{}/{}",
        layer_layout::MANIFEST_DIR,
        layer_layout::MANIFEST_FILE
    );
    i.write(&at, manifest.as_bytes(), 0o644)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An install plan into `prefix` whose artifacts are never read (the tests write by hand).
    fn plan(prefix: &Path) -> anyhow::Result<Install> {
        let none = PathBuf::from("/nonexistent");
        let artifacts = Artifacts {
            binary: none.clone(),
            shared_library: none.clone(),
            static_library: none.clone(),
            header: none.clone(),
            layer_library: none,
        };
        Install::new(artifacts, prefix, None)
    }

    /// The files under `dir` whose names are temporary ones (what a failed write would leave).
    fn temporaries(dir: &Path) -> Vec<PathBuf> {
        let mut found = vec![];
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                found.extend(temporaries(&path));
            } else if path.to_string_lossy().ends_with(".tmp") {
                found.push(path);
            }
        }
        found
    }

    #[test]
    fn the_pkg_config_prefix_escapes_what_pkg_config_reads_specially() {
        assert_eq!(
            pc_escape(Path::new("/opt/it's #2 \"a\\b\"/ö")).unwrap(),
            "/opt/it\\'s\\ \\#2\\ \\\"a\\\\b\\\"/ö"
        );
        assert_eq!(pc_escape(Path::new("/usr/local")).unwrap(), "/usr/local");
    }

    #[test]
    fn a_prefix_pkg_config_cannot_carry_is_refused_before_anything_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        for bad in ["$HOME", "a(b", "a)b", "line\nbreak", "tab\there"] {
            let prefix = tmp.path().join(bad);
            let e = plan(&prefix).expect_err(bad);
            let text = format!("{e:#}");
            assert!(
                text.contains("pkg-config file cannot carry"),
                "{bad:?}: {text}"
            );
            assert!(!prefix.exists(), "{bad:?}: the prefix was made");
        }
    }

    #[test]
    fn installs_into_one_prefix_at_once_each_write_their_own_file() {
        let tmp = tempfile::tempdir().unwrap();
        let plans: Vec<Install> = (0..4).map(|_| plan(tmp.path()).unwrap()).collect();
        std::thread::scope(|s| {
            for (n, plan) in plans.iter().enumerate() {
                s.spawn(move || {
                    for round in 0..50 {
                        let bytes = vec![n as u8; 4096 + round];
                        plan.write("bin/tool", &bytes, 0o755)
                            .unwrap_or_else(|e| panic!("install {n}, round {round}: {e:#}"));
                    }
                });
            }
        });
        let bytes = std::fs::read(tmp.path().join("bin/tool")).unwrap();
        assert!(bytes.len() == 4096 + 49 && bytes.iter().all(|&b| b == bytes[0]));
        assert_eq!(temporaries(tmp.path()), Vec::<PathBuf>::new());
    }

    /// Every failure after the temporary file is made drops (removes) it; a full disk is checked
    /// by hand (../shared/repro/probe4/Q10 on a tmpfs), a failed rename here.
    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        let i = plan(tmp.path()).unwrap();
        // The rename fails: a directory that is not empty stands where the file goes.
        std::fs::create_dir_all(tmp.path().join("lib/occupied/inside")).unwrap();
        let e = i.write("lib/occupied", b"bytes", 0o644).unwrap_err();
        assert!(format!("{e:#}").contains("cannot rename"), "{e:#}");
        assert_eq!(temporaries(tmp.path()), Vec::<PathBuf>::new());
    }
}
