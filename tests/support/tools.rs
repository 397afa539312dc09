//! Runs the external SPIR-V tools the tests need. A missing tool is a test failure that says how to
//! install it, never a silent skip.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

/// The Debian package that provides each tool.
fn package_of(tool: &str) -> &'static str {
    match tool {
        "glslangValidator" => "glslang-tools",
        _ => "spirv-tools",
    }
}

/// Panics (failing the test) with an install hint if `tool` is not on PATH.
pub fn require(tool: &str) {
    let found = version_of(tool).is_some();
    assert!(
        found,
        "`{tool}` is not installed: run `cargo xtask install-deps` or `apt-get install {}`",
        package_of(tool)
    );
}

/// What `tool --version` prints, or `None` when it does not start; asked once per tool and process
/// (the suites call the tools thousands of times).
fn version_of(tool: &str) -> Option<String> {
    static SEEN: Mutex<BTreeMap<String, Option<String>>> = Mutex::new(BTreeMap::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    seen.entry(tool.to_owned())
        .or_insert_with(|| {
            Command::new(tool).arg("--version").output().ok().map(|o| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                )
            })
        })
        .clone()
}

/// Reads a SPIR-V binary file into words (little-endian, as the tools write it).
pub fn read_words(path: &Path) -> Vec<u32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    assert_eq!(
        bytes.len() % 4,
        0,
        "{} is not a whole number of words",
        path.display()
    );
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Assembles SPIR-V assembly text with `spirv-as` for the given target env (e.g. `spv1.3`, `vulkan1.1`).
pub fn assemble(text: &str, target_env: &str) -> Result<Vec<u32>, String> {
    require("spirv-as");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let src = dir.path().join("in.spvasm");
    let out = dir.path().join("out.spv");
    std::fs::write(&src, text).map_err(|e| e.to_string())?;
    let o = Command::new("spirv-as")
        .args(["--preserve-numeric-ids", "--target-env", target_env, "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned());
    }
    Ok(read_words(&out))
}

/// Compiles a GLSL file with `glslangValidator` for Vulkan (`--target-env vulkan1.1` unless given).
///
/// The result is cached on disk (see `glsl_cache`): the conformance suite compiles the same
/// shaders in each of its lavapipe children, the simulator harness and the benchmark, and
/// glslang was a third of the suite's CPU time.
pub fn compile_glsl(path: &Path, target_env: &str) -> Result<Vec<u32>, String> {
    require("glslangValidator");
    let source = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // `#include` pulls in files the key would not cover: those compile every time.
    let cacheable = !source.windows(8).any(|w| w == b"#include");
    let key = cacheable.then(|| {
        let mut key = format!(
            "glslangValidator --target-env {target_env}\n{}\n",
            version_of("glslangValidator").unwrap_or_default()
        )
        .into_bytes();
        key.extend_from_slice(&source);
        key
    });
    if let Some(words) = key.as_deref().and_then(glsl_cache::get) {
        return Ok(words);
    }
    let words = compile_glsl_uncached(path, target_env)?;
    if let Some(key) = &key {
        glsl_cache::put(key, &words);
    }
    Ok(words)
}

/// A content-addressed store of glslang's outputs under the system temp dir. An entry holds its
/// whole key (the command, glslang's version and the source) and is used only when that key is
/// equal byte for byte, so a hash collision or a new glslang can only cost a compile; entries are
/// written to a temporary file and renamed, so concurrent test processes never see half of one.
mod glsl_cache {
    use std::hash::{Hash, Hasher};
    use std::path::PathBuf;

    fn path_of(key: &[u8]) -> PathBuf {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut h);
        std::env::temp_dir()
            .join("spv-subgroup-glslang-cache")
            .join(format!("{:016x}.bin", h.finish()))
    }

    /// Layout: key length (u64 LE), key, then the words (LE).
    pub fn get(key: &[u8]) -> Option<Vec<u32>> {
        let bytes = std::fs::read(path_of(key)).ok()?;
        let (len, rest) = bytes.split_at_checked(8)?;
        let len = usize::try_from(u64::from_le_bytes(len.try_into().ok()?)).ok()?;
        let (stored, words) = rest.split_at_checked(len)?;
        if stored != key || words.is_empty() || words.len() % 4 != 0 {
            return None;
        }
        Some(
            words
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }

    /// Best effort: a cache that cannot be written only costs compiles.
    pub fn put(key: &[u8], words: &[u32]) {
        let path = path_of(key);
        let Some(dir) = path.parent() else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let mut bytes = (key.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(key);
        bytes.extend(words.iter().flat_map(|w| w.to_le_bytes()));
        if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) {
            use std::io::Write;
            if tmp.write_all(&bytes).is_ok() {
                let _ = tmp.persist(&path);
            }
        }
    }
}

/// Runs `glslangValidator` (no cache).
fn compile_glsl_uncached(path: &Path, target_env: &str) -> Result<Vec<u32>, String> {
    compile_glsl_with(path, target_env, &[], None)
}

/// Compiles `path` with extra `glslangValidator` flags (`-g` for `OpLine`, `-gV` for
/// `NonSemantic.Shader.DebugInfo.100`), run in `cwd` when given so that the file name the
/// module records is `path` as given. Not cached.
pub fn compile_glsl_with(
    path: &Path,
    target_env: &str,
    flags: &[&str],
    cwd: Option<&Path>,
) -> Result<Vec<u32>, String> {
    require("glslangValidator");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = dir.path().join("out.spv");
    let mut cmd = Command::new("glslangValidator");
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    let o = cmd
        .args(["--target-env", target_env])
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(path)
        .output()
        .map_err(|e| e.to_string())?;
    if !o.status.success() {
        return Err(format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    Ok(read_words(&out))
}

/// Runs `spirv-val` on words; `Ok(())` when it accepts them, else its message.
///
/// `vulkan1.4` goes to a spirv-val that does not know it (SPIRV-Tools before 2024.4, Debian
/// 12's 2023.1) as `vulkan1.3`: the same SPIR-V 1.6 and, for what it checks, the same rules.
pub fn spirv_val(words: &[u32], target_env: &str) -> Result<(), String> {
    require("spirv-val");
    let target_env = spirv_val_env(target_env);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("m.spv");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).map_err(|e| e.to_string())?;
    let o = Command::new("spirv-val")
        .args(["--target-env", target_env])
        .arg(&path)
        .output()
        .map_err(|e| e.to_string())?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ))
    }
}

/// Disassembles words with `spirv-dis` (no header, raw ids), for snapshots.
pub fn disassemble(words: &[u32]) -> String {
    require("spirv-dis");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("m.spv");
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&path, bytes).expect("write");
    let o = Command::new("spirv-dis")
        .args(["--no-header", "--raw-id"])
        .arg(&path)
        .output()
        .expect("spirv-dis runs");
    assert!(
        o.status.success(),
        "spirv-dis failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The workspace root: `SPV_SUBGROUP_ROOT` when set (a test binary run from another checkout,
/// as on the GPU machine), else the parent of `tests/` where the binary was built.
pub fn workspace_root() -> &'static Path {
    static ROOT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| match std::env::var_os("SPV_SUBGROUP_ROOT") {
        Some(dir) => dir.into(),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("tests/ has a parent")
            .to_path_buf(),
    })
}

/// The environment to hand the installed spirv-val for `env` (see [`spirv_val`]).
fn spirv_val_env(env: &str) -> &str {
    static KNOWS_VULKAN14: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let knows = || {
        let help = Command::new("spirv-val").arg("--help").output();
        help.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("vulkan1.4"))
    };
    if env == "vulkan1.4" && !*KNOWS_VULKAN14.get_or_init(knows) {
        "vulkan1.3"
    } else {
        env
    }
}
