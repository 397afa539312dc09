//! `spirv-val` as a subprocess: the judge of "valid input" for the properties.
//!
//! It is called only where a property needs it (an exit 3, or when the caller asks for output
//! checks), because a process per input would slow the fuzzing loop a hundredfold.

use std::io::Write;
use std::process::{Command, Stdio};

/// Whether `spirv-val --target-env ENV` accepts `words`. `Err` when spirv-val cannot be run
/// (the message says how to install it).
pub fn spirv_val_accepts(words: &[u32], target_env: &str) -> Result<bool, String> {
    let mut child = Command::new("spirv-val")
        .args(["--target-env", known_env(target_env), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            format!("cannot run `spirv-val` ({e}): run `cargo xtask install-deps` or `apt-get install spirv-tools`")
        })?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    if let Some(mut stdin) = child.stdin.take() {
        // A write error means spirv-val stopped reading (it rejected the header): its status says so.
        let _ = stdin.write_all(&bytes);
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for spirv-val: {e}"))?;
    Ok(status.success())
}

/// `vulkan1.4` as `vulkan1.3` for a spirv-val older than SPIRV-Tools 2024.4 (Debian 12's
/// 2023.1), which knows no `vulkan1.4`: both consume SPIR-V 1.6.
fn known_env(env: &str) -> &str {
    static HAS_14: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let has_14 = HAS_14.get_or_init(|| {
        Command::new("spirv-val")
            .arg("--help")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("vulkan1.4"))
    });
    match env {
        "vulkan1.4" if !has_14 => "vulkan1.3",
        _ => env,
    }
}

/// Whether `SPVSG_FUZZ_SPIRV_VAL` asks the fuzzing loop to run `spirv-val` on every changed output
/// (slow; the corpus replay always does).
pub fn spirv_val_in_loop() -> bool {
    std::env::var_os("SPVSG_FUZZ_SPIRV_VAL").is_some_and(|v| v != "0")
}
