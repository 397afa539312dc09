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
use std::collections::HashMap;
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
    /// The word offset of the instruction naga names (its validator's narrowest span), in the
    /// module judged (for [`refusal_matching`]: in its input).
    pub word: Option<usize>,
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
                word: None,
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
                word: None,
            })
    })?;
    let info = guarded("validator", || {
        Validator::new(ValidationFlags::all(), capabilities())
            .validate(&module)
            .map_err(|e| {
                // naga's SPIR-V front end gives each expression the byte range of its
                // instruction, counted from the end of the five-word header; the narrowest span
                // is the one the error is about (the widest is the whole function's).
                let word = e
                    .spans()
                    .filter_map(|(span, _)| span.to_range())
                    .min_by_key(|r| r.len())
                    .map(|r| r.start / 4 + 5);
                let inner = e.into_inner();
                let message = chain(&inner);
                NagaRefusal {
                    stage: "validator",
                    multi_dimensional_subgroup_builtin: message
                        .contains("Workgroup size is multi dimensional"),
                    message,
                    front_end: None,
                    word,
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
                word: None,
            })
    })?;
    Ok(())
}

/// How many instructions, capabilities and extensions (each with all its uses) [`refusal_matching`]
/// stubs at most before it takes the refusal as it is.
const MAX_STUBS: usize = 16;

/// What [`refusal_matching`] takes out of a module: opcodes, capabilities and extension names
/// naga's front end refuses.
#[derive(Default)]
struct Stubs {
    ops: Vec<u32>,
    /// (opcode, word count) of forms the front end cannot read (a clustered reduction's
    /// cluster size is an operand more than it reads).
    forms: Vec<(u32, u32)>,
    /// Group operations (`ClusteredReduce`): every instruction with one is stubbed.
    group_operations: Vec<u32>,
    capabilities: Vec<u32>,
    extensions: Vec<String>,
    /// Extended instruction sets (`SPV_AMD_shader_ballot`): the import is dropped, its
    /// `OpExtInst`s stubbed.
    ext_sets: Vec<String>,
}

impl Stubs {
    /// Adds what `refusal` names, if it is something the front end cannot read at all; whether
    /// it was new.
    fn add(&mut self, refusal: &NagaRefusal) -> bool {
        use naga::front::spv::Error as E;
        fn new<T: PartialEq>(list: &mut Vec<T>, x: T) -> bool {
            let fresh = !list.contains(&x);
            if fresh {
                list.push(x);
            }
            fresh
        }
        match &refusal.front_end {
            Some(E::UnsupportedInstruction(_, op)) => new(&mut self.ops, *op as u32),
            Some(E::UnsupportedCapability(c)) => new(&mut self.capabilities, *c as u32),
            Some(E::UnknownCapability(c)) => new(&mut self.capabilities, *c),
            Some(E::UnsupportedExtension(name)) => new(&mut self.extensions, name.clone()),
            Some(E::InvalidOperandCount(op, count)) => {
                new(&mut self.forms, (*op as u32, u32::from(*count)))
            }
            Some(E::UnsupportedGroupOperation(g)) => new(&mut self.group_operations, *g),
            Some(E::UnsupportedExtSet(name)) => new(&mut self.ext_sets, name.clone()),
            _ => false,
        }
    }

    /// `words` with the stubs applied, and for each instruction written (its offset there, its
    /// offset in `words`). An instruction of a stubbed opcode with a result type becomes an
    /// `OpUndef` of it (naga reads that as the type's zero value), one without is dropped; a
    /// stubbed capability becomes `Shader` (which every module naga reads declares); a
    /// stubbed extension is dropped.
    fn apply(&self, words: &[u32]) -> (Vec<u32>, Vec<(usize, usize)>) {
        let mut out = words.get(..5).unwrap_or(words).to_vec();
        let mut map = Vec::new();
        let mut dropped_sets = Vec::new();
        let mut group_operation_at = GroupOperationAt::default();
        let mut at = 5;
        while let Some(&first) = words.get(at) {
            let count = (first >> 16) as usize;
            let Some(inst) = words.get(at..at + count).filter(|_| count > 0) else {
                // Malformed: the rest as it is, for the front end to refuse.
                map.push((out.len(), at));
                out.extend_from_slice(&words[at..]);
                break;
            };
            let op = first & 0xffff;
            map.push((out.len(), at));
            let stubbed = self.ops.contains(&op)
                || self.forms.contains(&(op, count as u32))
                || (op == spirv::Op::ExtInst as u32
                    && inst.get(3).is_some_and(|set| dropped_sets.contains(set)))
                || (!self.group_operations.is_empty()
                    && group_operation_at
                        .word(op)
                        .and_then(|k| inst.get(k))
                        .is_some_and(|g| self.group_operations.contains(g)));
            if op == spirv::Op::ExtInstImport as u32
                && inst.len() > 2
                && self
                    .ext_sets
                    .iter()
                    .any(|e| string_at(inst, 2) == e.as_bytes())
            {
                dropped_sets.push(inst[1]);
                map.pop();
            } else if op == spirv::Op::Capability as u32
                && inst.get(1).is_some_and(|c| self.capabilities.contains(c))
            {
                out.extend([(2 << 16) | op, spirv::Capability::Shader as u32]);
            } else if op == spirv::Op::Extension as u32
                && self
                    .extensions
                    .iter()
                    .any(|e| string_at(inst, 1) == e.as_bytes())
            {
                map.pop();
            } else if stubbed {
                match result_slots(op) {
                    (true, true) if count >= 3 => {
                        out.extend([(3 << 16) | spirv::Op::Undef as u32, inst[1], inst[2]])
                    }
                    _ => {
                        map.pop();
                    }
                }
            } else {
                out.extend_from_slice(inst);
            }
            at += count;
        }
        (out, map)
    }
}

/// The bytes of the literal string at word `k` of `inst`, up to its terminating zero.
fn string_at(inst: &[u32], k: usize) -> Vec<u8> {
    inst.get(k..)
        .unwrap_or_default()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .take_while(|&b| b != 0)
        .collect()
}

/// Per opcode, the word of its `GroupOperation` operand, looked up in rspirv's grammar once.
#[derive(Default)]
struct GroupOperationAt {
    known: HashMap<u32, Option<usize>>,
}

impl GroupOperationAt {
    fn word(&mut self, opcode: u32) -> Option<usize> {
        use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
        *self.known.entry(opcode).or_insert_with(|| {
            let g = INSTRUCTION_TABLE.lookup_opcode(opcode)?;
            // Operands before it are single words (result type, result id, the scope id).
            let i = g
                .operands
                .iter()
                .position(|o| o.kind == OperandKind::GroupOperation)?;
            Some(i + 1)
        })
    }
}

/// Whether instructions of `opcode` have a result type and a result id, by rspirv's grammar.
pub(crate) fn result_slots(opcode: u32) -> (bool, bool) {
    use rspirv::grammar::{OperandKind, INSTRUCTION_TABLE};
    INSTRUCTION_TABLE
        .lookup_opcode(opcode)
        .map_or((false, false), |g| {
            let has = |k| g.operands.iter().any(|o| o.kind == k);
            (has(OperandKind::IdResultType), has(OperandKind::IdResult))
        })
}

/// naga's refusal of a module it may not be able to read as it is (the input of the lowering,
/// which holds the very instructions the lowering rewrites: naga's front end has no partitioned,
/// clustered or KHR-vote operations) that `wanted` takes, if naga refuses it so. While the
/// front end refuses an instruction, a form of one, a capability, an extension or an
/// instruction set that it cannot read at all, that one is stubbed (`Stubs::apply`) and the
/// module judged again: each refusal on the way is naga's on what the module holds. The word
/// offset naga names is mapped back to `words`.
pub fn refusal_matching(
    words: &[u32],
    wanted: impl Fn(&NagaRefusal) -> bool,
) -> Option<NagaRefusal> {
    let mut stubs = Stubs::default();
    let mut judged = judge(words);
    let mut map = Vec::new();
    for _ in 0..=MAX_STUBS {
        let mut refusal = judged.err()?;
        if wanted(&refusal) {
            if !map.is_empty() {
                refusal.word = refusal.word.map(|w| {
                    let i = map.partition_point(|&(new, _): &(usize, usize)| new <= w);
                    map.get(i.wrapping_sub(1)).map_or(w, |&(_, old)| old)
                });
            }
            return Some(refusal);
        }
        if !stubs.add(&refusal) {
            return None;
        }
        let stubbed;
        (stubbed, map) = stubs.apply(words);
        judged = judge(&stubbed);
    }
    None
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
