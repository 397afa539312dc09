//! naga 30 as the judge of the `naga` target: its SPIR-V front end, its validator with the
//! capabilities a wgpu device with subgroups grants, and its WGSL writer.
//!
//! spirv-val and our validator accept modules that naga refuses (a stage naga has no IR for,
//! `SubgroupLocalInvocationId` in a workgroup of more than one dimension, an `OpIsNan` its WGSL
//! writer cannot spell), so for a target with `restrictions.naga_module` the verification
//! ([`crate::lower_and_verify`]) also runs the module through naga and exits 0 only when every stage
//! accepts it. Only with the `naga` cargo feature (on by default).
//!
//! **Capabilities.** What wgpu 30 grants a device with `Features::SUBGROUP`,
//! `SUBGROUP_BARRIER` and `SUBGROUP_VERTEX` (`wgpu-naga-bridge`'s
//! `features_to_naga_capabilities`: `SUBGROUP`, `SUBGROUP_BARRIER`, `SUBGROUP_VERTEX_STAGE`;
//! naga's validator then takes every subgroup operation set in the compute, fragment and vertex
//! stages), and every other capability. Vertex is granted because the lowering has a path for
//! it (no `SubgroupSize` or lane id where a vertex entry point reaches, `stages.rs`) and an input
//! with subgroup operations in a vertex shader is asking for `SUBGROUP_VERTEX`; the other
//! capabilities (`FLOAT64`, `SHADER_INT64`, ...) follow device features the input's own code asks
//! for and the lowering never adds, so granting them judges only what the lowering changes.

use std::cell::Cell;
use std::sync::Once;

use naga::valid::{Capabilities, ValidationFlags, Validator};

/// naga's refusal of a module: the stage that refused it and naga's words.
#[derive(Clone, Debug)]
pub struct NagaRefusal {
    /// `front end`, `validator` or `WGSL writer`.
    pub stage: &'static str,
    /// naga's error with its causes, `: `-separated.
    pub message: String,
    /// The front end's error, when the front end refused the module (for blame).
    pub front_end: Option<naga::front::spv::Error>,
    /// Whether the validator refused a subgroup built-in in a multi-dimensional workgroup.
    pub multi_dimensional_subgroup_builtin: bool,
}

impl std::fmt::Display for NagaRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "naga 30's {} refuses it: {}", self.stage, self.message)
    }
}

/// A `fmt::Write` that keeps nothing: only whether the WGSL writer can write the module counts.
struct Discard;

impl std::fmt::Write for Discard {
    fn write_str(&mut self, _: &str) -> std::fmt::Result {
        Ok(())
    }
}

/// The capabilities [`judge`] validates with (see the module doc).
pub fn capabilities() -> Capabilities {
    Capabilities::all()
}

/// An error and its `source()` chain on one line.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}

thread_local! {
    /// Whether this thread is inside [`guarded`]: its panics are naga's and become refusals.
    static JUDGING: Cell<bool> = const { Cell::new(false) };
}

/// Installs, once per process, a panic hook that says nothing about a panic inside [`guarded`]
/// and hands every other panic to the hook that was there before (the default one prints it).
/// Without it a naga bug caught and reported as a refusal would also print Rust's panic message
/// (`thread 'main' panicked at ...`) on the user's terminal. An embedder who sets a hook later
/// replaces this one; then its own hook sees naga's panics too.
fn silence_caught_naga_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !JUDGING.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Clears [`JUDGING`] when [`guarded`] ends, however it ends.
struct Judging;

impl Judging {
    fn enter() -> Judging {
        JUDGING.with(|j| j.set(true));
        Judging
    }
}

impl Drop for Judging {
    fn drop(&mut self) {
        JUDGING.with(|j| j.set(false));
    }
}

/// Runs `f`, turning a panic inside naga (a naga bug) into a refusal by `stage`, silently.
fn guarded<T>(
    stage: &'static str,
    f: impl FnOnce() -> Result<T, NagaRefusal>,
) -> Result<T, NagaRefusal> {
    silence_caught_naga_panics();
    let caught = {
        let _judging = Judging::enter();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
    };
    match caught {
        Ok(r) => r,
        Err(p) => {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            Err(NagaRefusal {
                stage,
                message: format!("naga panicked: {why}"),
                front_end: None,
                multi_dimensional_subgroup_builtin: false,
            })
        }
    }
}

/// Runs `words` through naga's front end, validator and WGSL writer.
pub fn judge(words: &[u32]) -> Result<(), NagaRefusal> {
    // The words go to the front end as they are (no byte copy), and the WGSL text to a sink that
    // keeps none of it: naga's IR is the only large thing held.
    let module = guarded("front end", || {
        let options = naga::front::spv::Options::default();
        naga::front::spv::Frontend::new(words.iter().copied(), &options)
            .parse()
            .map_err(|e| NagaRefusal {
                stage: "front end",
                message: chain(&e),
                front_end: Some(e),
                multi_dimensional_subgroup_builtin: false,
            })
    })?;
    let info = guarded("validator", || {
        Validator::new(ValidationFlags::all(), capabilities())
            .validate(&module)
            .map_err(|e| {
                let inner = e.into_inner();
                let message = chain(&inner);
                NagaRefusal {
                    stage: "validator",
                    multi_dimensional_subgroup_builtin: message
                        .contains("Workgroup size is multi dimensional"),
                    message,
                    front_end: None,
                }
            })
    })?;
    guarded("WGSL writer", || {
        naga::back::wgsl::Writer::new(Discard, naga::back::wgsl::WriterFlags::empty())
            .write(&module, &info)
            .map_err(|e| NagaRefusal {
                stage: "WGSL writer",
                message: chain(&e),
                front_end: None,
                multi_dimensional_subgroup_builtin: false,
            })
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The child of [`a_caught_naga_panic_prints_nothing`]: a panic inside `guarded` (standing
    /// for a naga bug), then one outside it.
    #[test]
    #[ignore = "run by a_caught_naga_panic_prints_nothing in its own process"]
    fn child_panics_inside_and_outside_the_judge() {
        let refused = guarded("front end", || -> Result<(), NagaRefusal> {
            panic!("a naga bug stands here")
        });
        let refusal = refused.expect_err("the panic becomes a refusal");
        assert_eq!(refusal.message, "naga panicked: a naga bug stands here");
        let outside = std::panic::catch_unwind(|| panic!("a panic of ours"));
        assert!(outside.is_err());
    }

    /// A panic naga raises inside the judge becomes a refusal and prints nothing; a panic
    /// anywhere else still reaches the hook that was there before (here: the default one,
    /// which prints it). Run in a child process: panic hooks are the whole process's.
    #[test]
    fn a_caught_naga_panic_prints_nothing() {
        let exe = std::env::current_exe().expect("the test binary");
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "naga_judge::tests::child_panics_inside_and_outside_the_judge",
                "--include-ignored",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .output()
            .expect("the test binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "the child failed:\n{stdout}\n{stderr}"
        );
        assert!(
            stdout.contains("1 passed"),
            "the child test did not run:\n{stdout}"
        );
        assert!(
            !stderr.contains("a naga bug stands here"),
            "the caught naga panic was printed:\n{stderr}"
        );
        assert!(
            stderr.contains("a panic of ours"),
            "a panic outside the judge no longer reaches the previous hook:\n{stderr}"
        );
    }
}
