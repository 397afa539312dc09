//! Runs the external SPIR-V tools the tests need. A missing tool is a test failure that says how to
//! install it, never a silent skip.

use std::path::Path;
use std::process::Command;

/// The Debian package that provides each tool.
fn package_of(tool: &str) -> &'static str {
    match tool {
        "glslangValidator" => "glslang-tools",
        _ => "spirv-tools",
    }
}

/// Panics (failing the test) with an install hint if `tool` is not on PATH.
pub fn require(tool: &str) {
    let found = Command::new(tool).arg("--version").output().is_ok();
    assert!(
        found,
        "`{tool}` is not installed: run `cargo xtask install-deps` or `apt-get install {}`",
        package_of(tool)
    );
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
pub fn compile_glsl(path: &Path, target_env: &str) -> Result<Vec<u32>, String> {
    require("glslangValidator");
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let out = dir.path().join("out.spv");
    let o = Command::new("glslangValidator")
        .args(["--target-env", target_env, "-o"])
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
pub fn spirv_val(words: &[u32], target_env: &str) -> Result<(), String> {
    require("spirv-val");
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

/// The workspace root (the parent of `tests/`).
pub fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
}
