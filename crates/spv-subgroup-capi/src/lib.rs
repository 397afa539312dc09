//! The C interface of spv-subgroup: validate and lower SPIR-V subgroup operations from C and C++.
//!
//! Shaped after SPIRV-Tools' `libspirv.h`: a context object holds the options (target, subgroup
//! size, float partition mode), `spvsg_validate` returns a report of findings and `spvsg_lower`
//! returns new words, and every object handed out has a matching `*_destroy` function.
//! The header `include/spv_subgroup.h` is generated from this file by cbindgen (`cargo xtask codegen`).
//!
//! Rules every entry point keeps:
//! - every pointer argument is checked for null before use;
//! - no panic crosses into C: each body runs under `catch_unwind` and a caught panic becomes
//!   `SPVSG_ERROR_INTERNAL` with a diagnostic, printing nothing (a panic hook, installed once);
//! - an enum from C arrives as an integer and is checked, and `word_count` is checked before a
//!   word is read (a count no buffer has; a module that could not fit in memory);
//! - a result pointer (`*report`, `*binary`, `*diagnostic`) is written only on the paths the
//!   function's documentation names, and is NULL otherwise.
//!
//! Thread safety: a context may be shared by any number of threads calling `spvsg_validate` and
//! `spvsg_lower` at once (they only read it); the `spvsg_context_set_*` functions need exclusive
//! access, like any write. Reports, binaries and diagnostics belong to the caller that received them.
#![deny(missing_docs)]
#![allow(
    non_camel_case_types,
    reason = "C type names follow the C convention of the header (spvsg_result_t)"
)]

use std::borrow::Cow;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use spv_subgroup_lower::{lower_and_verify, FloatPartition, LowerError, LowerOptions, VerifyError};
use spv_subgroup_validate::target::Target;
use spv_subgroup_validate::target::TARGET_ENVS;
use spv_subgroup_validate::{validate, Diagnostic, Severity, ValidateOptions};

/// What a call did. Non-negative values are successes; negative values are errors, and a
/// diagnostic (when the caller asked for one) says more.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum spvsg_result_t {
    /// Done: for `spvsg_validate`, no finding at error level (warnings allowed).
    SPVSG_SUCCESS = 0,
    /// `spvsg_validate` only: the report has at least one finding at error level.
    SPVSG_FINDINGS = 1,
    /// A required pointer argument was NULL.
    SPVSG_ERROR_NULL_POINTER = -1,
    /// An option's value is not valid (unknown preset, subgroup size outside 1..128 or not a
    /// power of two, a string that is not UTF-8).
    SPVSG_ERROR_INVALID_ARGUMENT = -2,
    /// The words are not a readable SPIR-V module; the diagnostic has the word offset.
    SPVSG_ERROR_INVALID_BINARY = -3,
    /// `spvsg_lower`: the module breaks a rule of SPIR-V (run `spvsg_validate` for the findings).
    SPVSG_ERROR_INVALID_MODULE = -4,
    /// `spvsg_lower`: an instruction needs a feature the target lacks and no rewrite provides;
    /// the diagnostic names the instruction, its word offset and the missing feature.
    SPVSG_ERROR_UNSUPPORTED = -5,
    /// A bug in spv-subgroup (the lowered module failed verification, or a panic was caught);
    /// please report it with the input module.
    SPVSG_ERROR_INTERNAL = -6,
    /// The memory a module of `word_count` words needs (4 bytes per input byte plus 16 MiB)
    /// cannot be reserved; nothing was done.
    SPVSG_ERROR_OUT_OF_MEMORY = -7,
}

impl spvsg_result_t {
    /// Every code, for reading one back from a C integer.
    const ALL: [spvsg_result_t; 9] = [
        SPVSG_SUCCESS,
        SPVSG_FINDINGS,
        SPVSG_ERROR_NULL_POINTER,
        SPVSG_ERROR_INVALID_ARGUMENT,
        SPVSG_ERROR_INVALID_BINARY,
        SPVSG_ERROR_INVALID_MODULE,
        SPVSG_ERROR_UNSUPPORTED,
        SPVSG_ERROR_INTERNAL,
        SPVSG_ERROR_OUT_OF_MEMORY,
    ];

    /// The code a C integer holds, if it is one: C may pass any `int` for an enum, and a Rust
    /// enum holding a value it does not name is undefined behaviour.
    fn from_c(value: i32) -> Option<spvsg_result_t> {
        Self::ALL.into_iter().find(|&r| r as i32 == value)
    }
}

use spvsg_result_t::*;

/// The severity of a finding.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum spvsg_severity_t {
    /// The module breaks a rule of a specification.
    SPVSG_SEVERITY_ERROR = 0,
    /// Legal, but very likely wrong or undefined at run time.
    SPVSG_SEVERITY_WARNING = 1,
    /// Extra information.
    SPVSG_SEVERITY_NOTE = 2,
}

/// How the partition op compares floating-point keys when lowered.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum spvsg_float_partition_t {
    /// As the spec says: +0.0 and -0.0 share a subset, every NaN may stand alone (the default).
    SPVSG_FLOAT_PARTITION_SPEC = 0,
    /// Compare bit patterns, as NVIDIA's native implementation does.
    SPVSG_FLOAT_PARTITION_BITWISE = 1,
}

/// Options for validating and lowering. Create with `spvsg_context_create`, free with
/// `spvsg_context_destroy`. Opaque to C.
#[derive(Debug, Clone)]
pub struct spvsg_context_t {
    target: Target,
    /// Neither a target nor an environment was set: each module gets
    /// [`Target::default_for_version`] of its own version, as `spv-subgroup lower` does.
    target_from_module: bool,
    target_env: Option<String>,
    subgroup_size: Option<u32>,
    /// The subgroup size to emulate (`LowerOptions::emulate_subgroup_size`).
    emulated_subgroup_size: Option<u32>,
    float_partition: FloatPartition,
}

/// An error's details. Free with `spvsg_diagnostic_destroy`.
#[repr(C)]
#[derive(Debug)]
pub struct spvsg_diagnostic_t {
    /// The same code the function returned.
    pub code: spvsg_result_t,
    /// Word offset of the offending instruction or word in the input; 0 when not about one.
    pub word_offset: usize,
    /// Result id of the offending instruction; 0 when it has none or the error is not about one.
    pub result_id: u32,
    /// The message, UTF-8, NUL-terminated; owned by the diagnostic.
    pub message: *mut c_char,
}

/// One finding of `spvsg_validate`. Its strings belong to the report that holds it.
#[repr(C)]
#[derive(Debug)]
pub struct spvsg_finding_t {
    /// The rule's stable code, e.g. "SG0101".
    pub code: *const c_char,
    /// The rule's kebab-case name, e.g. "vote-missing-capability".
    pub name: *const c_char,
    /// The finding's severity.
    pub severity: spvsg_severity_t,
    /// One sentence, naming the operand or instruction.
    pub message: *const c_char,
    /// Word offset of the instruction the finding is about (the header is words 0-4).
    pub word_offset: usize,
    /// Index of that instruction, counting from 0 after the header.
    pub instruction_index: usize,
    /// Its result id, or 0 when it has none.
    pub result_id: u32,
    /// The instruction disassembled, or NULL when the finding is about the module as a whole.
    pub disassembly: *const c_char,
}

/// The findings of one `spvsg_validate` call. Free with `spvsg_report_destroy`.
#[derive(Debug)]
pub struct spvsg_report_t {
    findings: Vec<spvsg_finding_t>,
    /// The strings the findings point into; never moved while the report lives.
    #[allow(dead_code, reason = "owned only so the findings' pointers stay valid")]
    strings: Vec<CString>,
}

/// A lowered module. Free with `spvsg_binary_destroy`.
#[repr(C)]
#[derive(Debug)]
pub struct spvsg_binary_t {
    /// The module's words, in host byte order; owned by the binary.
    pub code: *mut u32,
    /// How many words `code` holds.
    pub word_count: usize,
    /// Whether the module differs from the input (false: the input fits the target as it is).
    pub changed: bool,
    /// How many instructions were rewritten.
    pub rewritten: usize,
}

/// The library's version, e.g. "0.1.0" (static storage; never free it).
#[no_mangle]
pub extern "C" fn spvsg_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// A short, static description of a result code, a `spvsg_result_t` value (never free it).
/// Any other value gives "unknown result code".
#[no_mangle]
pub extern "C" fn spvsg_result_string(result: i32) -> *const c_char {
    let s: &'static str = match spvsg_result_t::from_c(result) {
        Some(SPVSG_SUCCESS) => "success\0",
        Some(SPVSG_FINDINGS) => "the module has findings at error level\0",
        Some(SPVSG_ERROR_NULL_POINTER) => "a required pointer argument is NULL\0",
        Some(SPVSG_ERROR_INVALID_ARGUMENT) => "invalid argument\0",
        Some(SPVSG_ERROR_INVALID_BINARY) => "not a readable SPIR-V module\0",
        Some(SPVSG_ERROR_INVALID_MODULE) => "the module is invalid\0",
        Some(SPVSG_ERROR_UNSUPPORTED) => "the target cannot run an instruction of the module\0",
        Some(SPVSG_ERROR_INTERNAL) => "internal error in spv-subgroup\0",
        Some(SPVSG_ERROR_OUT_OF_MEMORY) => "out of memory\0",
        None => "unknown result code\0",
    };
    s.as_ptr().cast()
}

/// Creates a context with the defaults of `spv-subgroup lower`: Vulkan 1.1's core subgroup
/// features (preset "vulkan1.1") in the lowest Vulkan environment that takes each module's
/// SPIR-V version (1.0-1.3: vulkan1.1, 1.4-1.5: vulkan1.2, 1.6: vulkan1.3), subgroup size
/// unknown, spec float partitions. Returns NULL only if a panic was
/// caught. Free it with `spvsg_context_destroy`.
#[no_mangle]
pub extern "C" fn spvsg_context_create() -> *mut spvsg_context_t {
    catch_unwind(|| {
        Box::into_raw(Box::new(spvsg_context_t {
            target: Target::default(),
            target_from_module: true,
            target_env: None,
            subgroup_size: None,
            emulated_subgroup_size: None,
            float_partition: FloatPartition::Spec,
        }))
    })
    .unwrap_or(std::ptr::null_mut())
}

impl spvsg_context_t {
    /// The target a module of `words` is validated and lowered for: the one set, in the
    /// environment set (spirv-opt's meaning: the SPIR-V version it consumes follows it), or,
    /// when neither was set, the default for the module's own version.
    fn target_for(&self, words: &[u32]) -> Target {
        match (&self.target_env, self.target_from_module) {
            // An environment without a Vulkan version (OpenCL) leaves the target's own.
            (Some(env), _) => self
                .target
                .clone()
                .with_env(env)
                .unwrap_or_else(|_| self.target.clone()),
            (None, true) => Target::default_for_module(words).unwrap_or_default(),
            (None, false) => self.target.clone(),
        }
    }
}

/// Frees a context. NULL is ignored.
///
/// # Safety
/// `context` is NULL or a pointer returned by `spvsg_context_create` and not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn spvsg_context_destroy(context: *mut spvsg_context_t) {
    if !context.is_null() {
        // SAFETY: the caller passes a pointer from `Box::into_raw` that it owns.
        drop(unsafe { Box::from_raw(context) });
    }
}

/// Sets the target: a preset name ("vulkan1.1", "lavapipe", "nvidia", "khr-ballot", "naga") or
/// the text of a target description (our JSON format or a `vulkaninfo --json` report; the
/// library does no file IO, so read the file yourself). Also resets the environment to the
/// target's own (see `spvsg_context_set_target_env`).
/// On error the context keeps its previous target and `*diagnostic` (if `diagnostic` is not
/// NULL) receives the reason.
///
/// # Safety
/// `context` is a live context; `target` is NULL or a NUL-terminated string; `diagnostic` is
/// NULL or points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn spvsg_context_set_target(
    context: *mut spvsg_context_t,
    target: *const c_char,
    diagnostic: *mut *mut spvsg_diagnostic_t,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    unsafe { clear(diagnostic) };
    guard(diagnostic, || {
        // SAFETY: forwarded from this function's contract.
        let (Some(ctx), Some(text)) = (unsafe { context.as_mut() }, unsafe { text_arg(target) })
        else {
            return Err(null_pointer("context and target"));
        };
        let text = text.map_err(|e| Failure::argument(format!("the target is not UTF-8: {e}")))?;
        let parsed = match Target::preset(text) {
            Some(t) => t,
            None if text.trim_start().starts_with('{') => Target::from_any_json(text)
                .map_err(|e| Failure::argument(e.to_string()))?,
            None => {
                return Err(Failure::argument(format!(
                    "unknown target preset `{text}` (presets: {}); pass a preset name or the text of a JSON target description",
                    spv_subgroup_validate::target::PRESETS
                        .iter()
                        .map(|p| p.0)
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        };
        if let Some(n) = ctx.subgroup_size {
            check_size_fits(&parsed, n)?;
        }
        ctx.target = parsed;
        ctx.target_from_module = false;
        ctx.target_env = None;
        Ok(SPVSG_SUCCESS)
    })
}

/// Sets the environment spirv-val's `--target-env` would name ("vulkan1.1", "spv1.3", ...),
/// which decides the SPIR-V version and environment rules `spvsg_validate` applies.
/// NULL restores the default: the target's own environment.
///
/// # Safety
/// `context` is a live context; `env` is NULL or a NUL-terminated string; `diagnostic` is NULL
/// or points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn spvsg_context_set_target_env(
    context: *mut spvsg_context_t,
    env: *const c_char,
    diagnostic: *mut *mut spvsg_diagnostic_t,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    unsafe { clear(diagnostic) };
    guard(diagnostic, || {
        // SAFETY: forwarded from this function's contract.
        let Some(ctx) = (unsafe { context.as_mut() }) else {
            return Err(null_pointer("context"));
        };
        // SAFETY: forwarded from this function's contract.
        ctx.target_env = match unsafe { text_arg(env) } {
            None => None,
            Some(Err(e)) => {
                return Err(Failure::argument(format!(
                    "the environment is not UTF-8: {e}"
                )))
            }
            Some(Ok(name)) if TARGET_ENVS.contains(&name) => Some(name.to_owned()),
            Some(Ok(name)) => {
                return Err(Failure::argument(format!(
                    "unknown environment `{name}`; expected one of: {}",
                    TARGET_ENVS.join(", ")
                )))
            }
        };
        Ok(SPVSG_SUCCESS)
    })
}

/// Sets the subgroup size the lowered module will run with (a power of two the target allows,
/// 1 to 128), or 0 for "any size the target allows" (the default). A known size gives shorter
/// sequences.
///
/// # Safety
/// `context` is a live context; `diagnostic` is NULL or points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn spvsg_context_set_subgroup_size(
    context: *mut spvsg_context_t,
    size: u32,
    diagnostic: *mut *mut spvsg_diagnostic_t,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    unsafe { clear(diagnostic) };
    guard(diagnostic, || {
        // SAFETY: forwarded from this function's contract.
        let Some(ctx) = (unsafe { context.as_mut() }) else {
            return Err(null_pointer("context"));
        };
        if size != 0 {
            check_size_fits(&ctx.target, size)?;
        }
        ctx.subgroup_size = (size != 0).then_some(size);
        Ok(SPVSG_SUCCESS)
    })
}

/// Sets the subgroup size `spvsg_lower` emulates (a power of two from 1 to 64), or 0 for none
/// (the default): the lowered module behaves, on a device whose subgroup size is any multiple
/// of `size`, as the input does on a device of that size. Any other value returns
/// `SPVSG_ERROR_INVALID_ARGUMENT` and leaves the context as it was.
///
/// # Safety
/// `context` is a live context; `diagnostic` is NULL or points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn spvsg_context_set_emulated_subgroup_size(
    context: *mut spvsg_context_t,
    size: u32,
    diagnostic: *mut *mut spvsg_diagnostic_t,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    unsafe { clear(diagnostic) };
    guard(diagnostic, || {
        // SAFETY: forwarded from this function's contract.
        let Some(ctx) = (unsafe { context.as_mut() }) else {
            return Err(null_pointer("context"));
        };
        if size != 0 && !(size.is_power_of_two() && size <= 64) {
            return Err(Failure::argument(format!(
                "an emulated subgroup size is a power of two from 1 to 64 (or 0 for none), got {size}"
            )));
        }
        ctx.emulated_subgroup_size = (size != 0).then_some(size);
        Ok(SPVSG_SUCCESS)
    })
}

/// Sets how the lowered partition op compares floating-point keys: `mode` is a
/// `spvsg_float_partition_t` value; any other value returns `SPVSG_ERROR_INVALID_ARGUMENT` and
/// leaves the context as it was.
///
/// # Safety
/// `context` is a live context (or NULL, which returns `SPVSG_ERROR_NULL_POINTER`).
#[no_mangle]
pub unsafe extern "C" fn spvsg_context_set_float_partition(
    context: *mut spvsg_context_t,
    mode: i32,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    let Some(ctx) = (unsafe { context.as_mut() }) else {
        return SPVSG_ERROR_NULL_POINTER;
    };
    // Compared as integers: C may pass any `int`, which a Rust enum must never hold.
    const SPEC: i32 = spvsg_float_partition_t::SPVSG_FLOAT_PARTITION_SPEC as i32;
    const BITWISE: i32 = spvsg_float_partition_t::SPVSG_FLOAT_PARTITION_BITWISE as i32;
    ctx.float_partition = match mode {
        SPEC => FloatPartition::Spec,
        BITWISE => FloatPartition::Bitwise,
        _ => return SPVSG_ERROR_INVALID_ARGUMENT,
    };
    SPVSG_SUCCESS
}

/// Validates a module against the rules and the context's target (target fit included).
/// Returns `SPVSG_SUCCESS` (no error-level finding) or `SPVSG_FINDINGS`, and then `*report`
/// holds every finding (warnings too); or an error code, `*report` stays NULL and `*diagnostic`
/// (if `diagnostic` is not NULL) says why, e.g. the word offset of a malformed binary, or, before
/// a word is read, a `word_count` no buffer can have (`SPVSG_ERROR_INVALID_ARGUMENT`) or one whose
/// module would not fit in memory (`SPVSG_ERROR_OUT_OF_MEMORY`).
///
/// # Safety
/// `context` is a live context; `words` points to `word_count` readable words (it may be NULL
/// only when `word_count` is 0); `report` points to writable storage for one pointer;
/// `diagnostic` is NULL or points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn spvsg_validate(
    context: *const spvsg_context_t,
    words: *const u32,
    word_count: usize,
    report: *mut *mut spvsg_report_t,
    diagnostic: *mut *mut spvsg_diagnostic_t,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_module(
            context,
            (words, word_count),
            (report, "report"),
            diagnostic,
            |ctx, words| {
                let mut opts = ValidateOptions::default().with_target(ctx.target_for(words));
                opts.target_env = ctx.target_env.clone();
                let found = validate(words, &opts).map_err(|e| Failure {
                    code: SPVSG_ERROR_INVALID_BINARY,
                    word_offset: e.word_offset,
                    result_id: 0,
                    message: e.to_string(),
                })?;
                let code = if found.has_errors() {
                    SPVSG_FINDINGS
                } else {
                    SPVSG_SUCCESS
                };
                Ok((report_of(&found.diagnostics), code))
            },
        )
    }
}

/// How many findings a report holds (0 for NULL).
///
/// # Safety
/// `report` is NULL or a live report.
#[no_mangle]
pub unsafe extern "C" fn spvsg_report_count(report: *const spvsg_report_t) -> usize {
    // SAFETY: forwarded from this function's contract.
    unsafe { report.as_ref() }.map_or(0, |r| r.findings.len())
}

/// The findings of a report, ordered by position then rule code: an array of
/// `spvsg_report_count(report)` entries owned by the report (NULL for NULL or an empty report).
///
/// # Safety
/// `report` is NULL or a live report; the array is valid until the report is destroyed.
#[no_mangle]
pub unsafe extern "C" fn spvsg_report_findings(
    report: *const spvsg_report_t,
) -> *const spvsg_finding_t {
    // SAFETY: forwarded from this function's contract.
    match unsafe { report.as_ref() } {
        Some(r) if !r.findings.is_empty() => r.findings.as_ptr(),
        _ => std::ptr::null(),
    }
}

/// Frees a report and every string its findings point to. NULL is ignored.
///
/// # Safety
/// `report` is NULL or a report from `spvsg_validate` not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn spvsg_report_destroy(report: *mut spvsg_report_t) {
    if !report.is_null() {
        // SAFETY: the caller passes a pointer from `Box::into_raw` that it owns.
        drop(unsafe { Box::from_raw(report) });
    }
}

/// Lowers a module for the context's target: rewrites what the target lacks into operations it
/// has and checks the result with the validator. On `SPVSG_SUCCESS` `*binary` holds the new module
/// (the input's words again when nothing needed rewriting and the input fits the target).
/// On an error `*binary` stays NULL and `*diagnostic` (if `diagnostic` is not NULL) says why:
/// `SPVSG_ERROR_INVALID_BINARY` (word offset), `SPVSG_ERROR_INVALID_MODULE`,
/// `SPVSG_ERROR_UNSUPPORTED` (the instruction, its word offset and the missing feature),
/// `SPVSG_ERROR_INTERNAL`, or, before a word is read, `SPVSG_ERROR_INVALID_ARGUMENT` (a
/// `word_count` no buffer can have) or `SPVSG_ERROR_OUT_OF_MEMORY` (docs/capi.md).
///
/// # Safety
/// `context` is a live context; `words` points to `word_count` readable words (it may be NULL
/// only when `word_count` is 0); `binary` points to writable storage for one pointer;
/// `diagnostic` is NULL or points to writable storage for one pointer.
#[no_mangle]
pub unsafe extern "C" fn spvsg_lower(
    context: *const spvsg_context_t,
    words: *const u32,
    word_count: usize,
    binary: *mut *mut spvsg_binary_t,
    diagnostic: *mut *mut spvsg_diagnostic_t,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        with_module(
            context,
            (words, word_count),
            (binary, "binary"),
            diagnostic,
            |ctx, words| {
                let opts = LowerOptions::new(ctx.target_for(words))
                    .with_subgroup_size(ctx.subgroup_size)
                    .with_float_partition(ctx.float_partition)
                    .with_emulated_subgroup_size(ctx.emulated_subgroup_size);
                let (out, report) = lower_and_verify(words, &opts, ctx.target_env.as_deref())
                    .map_err(failure_of)?;
                let rewritten = report.rewrites.iter().map(|(_, n)| n).sum();
                let code = Box::into_raw(out.into_boxed_slice());
                let built = spvsg_binary_t {
                    code: code.cast(),
                    word_count: code.len(),
                    changed: report.changed,
                    rewritten,
                };
                Ok((built, SPVSG_SUCCESS))
            },
        )
    }
}

/// Frees a lowered module and its words. NULL is ignored.
///
/// # Safety
/// `binary` is NULL or a binary from `spvsg_lower` not yet destroyed, whose fields the caller
/// has not changed.
#[no_mangle]
pub unsafe extern "C" fn spvsg_binary_destroy(binary: *mut spvsg_binary_t) {
    if binary.is_null() {
        return;
    }
    // SAFETY: the caller passes a pointer from `Box::into_raw` that it owns.
    let b = unsafe { Box::from_raw(binary) };
    if !b.code.is_null() {
        let slice = std::ptr::slice_from_raw_parts_mut(b.code, b.word_count);
        // SAFETY: `code`/`word_count` came from `Box<[u32]>::into_raw` in `spvsg_lower`.
        drop(unsafe { Box::from_raw(slice) });
    }
}

/// Frees a diagnostic and its message. NULL is ignored.
///
/// # Safety
/// `diagnostic` is NULL or a diagnostic from this library not yet destroyed.
#[no_mangle]
pub unsafe extern "C" fn spvsg_diagnostic_destroy(diagnostic: *mut spvsg_diagnostic_t) {
    if diagnostic.is_null() {
        return;
    }
    // SAFETY: the caller passes a pointer from `Box::into_raw` that it owns.
    let d = unsafe { Box::from_raw(diagnostic) };
    if !d.message.is_null() {
        // SAFETY: `message` came from `CString::into_raw` in `diagnostic_of`.
        drop(unsafe { CString::from_raw(d.message) });
    }
}

/// An error on its way to C: the code and what the diagnostic will say.
#[derive(Debug)]
struct Failure {
    code: spvsg_result_t,
    word_offset: usize,
    result_id: u32,
    message: String,
}

impl Failure {
    fn argument(message: String) -> Failure {
        Failure {
            code: SPVSG_ERROR_INVALID_ARGUMENT,
            word_offset: 0,
            result_id: 0,
            message,
        }
    }
}

fn null_pointer(what: &str) -> Failure {
    Failure {
        code: SPVSG_ERROR_NULL_POINTER,
        word_offset: 0,
        result_id: 0,
        message: format!("NULL passed for {what} (which must not be NULL)"),
    }
}

fn check_size_fits(target: &Target, size: u32) -> Result<(), Failure> {
    if !size.is_power_of_two()
        || !(target.min_subgroup_size..=target.max_subgroup_size).contains(&size)
    {
        return Err(Failure::argument(format!(
            "subgroup size {size} is not a power of two that target `{}` runs with ({}..={})",
            target.name, target.min_subgroup_size, target.max_subgroup_size
        )));
    }
    Ok(())
}

fn failure_of(f: VerifyError) -> Failure {
    let (code, word_offset, result_id) = match &f {
        VerifyError::Lower(LowerError::Parse(_)) => (SPVSG_ERROR_INVALID_BINARY, 0, 0),
        VerifyError::Lower(LowerError::Unsupported {
            word_offset,
            result_id,
            ..
        }) => (SPVSG_ERROR_UNSUPPORTED, *word_offset, *result_id),
        VerifyError::Lower(LowerError::Invalid { result_id, .. }) => {
            (SPVSG_ERROR_INVALID_MODULE, 0, *result_id)
        }
        VerifyError::Binary(e) => (SPVSG_ERROR_INVALID_BINARY, e.word_offset, 0),
        VerifyError::Input { .. } => {
            let code = if f.input_is_invalid() {
                SPVSG_ERROR_INVALID_MODULE
            } else {
                SPVSG_ERROR_UNSUPPORTED
            };
            let (at, id) = f.first_finding().map_or((0, 0), |d| {
                (d.location.word_offset, d.location.result_id.unwrap_or(0))
            });
            (code, at, id)
        }
        VerifyError::Internal { .. } => (SPVSG_ERROR_INTERNAL, 0, 0),
        // The error enums are `#[non_exhaustive]`: a kind added later than this mapping is
        // reported as ours to fix until it gets its own code here.
        _ => (SPVSG_ERROR_INTERNAL, 0, 0),
    };
    Failure {
        code,
        word_offset,
        result_id,
        message: f.to_string(),
    }
}

/// The frame of an entry point that takes a context and a module and hands back one object:
/// clears the out-pointers, refuses NULLs, runs `body` with no panic crossing the boundary, and
/// stores the object `body` built in `*out` (boxed; the matching destroy function frees it).
///
/// # Safety
/// `context` is NULL or a live context; `words` is `(pointer, count)` with the pointer NULL or
/// pointing to `count` readable words; `out.0` and `diagnostic` are NULL or point to writable
/// storage for one pointer.
unsafe fn with_module<T>(
    context: *const spvsg_context_t,
    (words, word_count): (*const u32, usize),
    (out, out_name): (*mut *mut T, &str),
    diagnostic: *mut *mut spvsg_diagnostic_t,
    body: impl FnOnce(&spvsg_context_t, &[u32]) -> Result<(T, spvsg_result_t), Failure>,
) -> spvsg_result_t {
    // SAFETY: forwarded from this function's contract.
    unsafe {
        clear(diagnostic);
        clear(out);
    }
    guard(diagnostic, || {
        // Before the words are touched: a count no buffer can have, or one whose module would
        // not fit in memory, is refused (an allocation that fails aborts the process).
        check_word_count(word_count)?;
        // SAFETY: forwarded from this function's contract; the count fits `isize` in bytes.
        let (Some(ctx), Some(words)) = (unsafe { context.as_ref() }, unsafe {
            words_arg(words, word_count)
        }) else {
            return Err(null_pointer("context and words"));
        };
        if out.is_null() {
            return Err(null_pointer(out_name));
        }
        let (built, code) = body(ctx, &words)?;
        // SAFETY: checked non-null above; the caller provides storage for one pointer.
        unsafe { *out = Box::into_raw(Box::new(built)) };
        Ok(code)
    })
}

/// The most memory a call may need per input byte, and on top (the CLI's stated bounds, which
/// the library shares: docs/cli.md, "Memory").
const BYTES_PER_INPUT_BYTE: usize = 4;
const MEMORY_SLACK: usize = 16 << 20;

/// Refuses a word count that no buffer can hold (more than `isize::MAX` bytes, which a Rust
/// slice cannot be), and one whose module needs more memory than can be reserved now: Rust
/// aborts the process when an allocation fails, so the call asks first, with a reservation that
/// is released at once (untouched pages cost nothing).
fn check_word_count(word_count: usize) -> Result<(), Failure> {
    let bytes = word_count
        .checked_mul(4)
        .filter(|&b| isize::try_from(b).is_ok())
        .ok_or_else(|| {
            Failure::argument(format!(
                "word_count {word_count} is larger than any buffer can be"
            ))
        })?;
    let need = bytes
        .checked_mul(BYTES_PER_INPUT_BYTE)
        .and_then(|b| b.checked_add(MEMORY_SLACK));
    let reserved = need.is_some_and(|n| Vec::<u8>::new().try_reserve_exact(n).is_ok());
    if !reserved {
        return Err(Failure {
            code: SPVSG_ERROR_OUT_OF_MEMORY,
            word_offset: 0,
            result_id: 0,
            message: format!(
                "a module of {word_count} words needs up to {BYTES_PER_INPUT_BYTE} bytes per input byte plus \
                 {} MiB, and that much memory cannot be reserved",
                MEMORY_SLACK >> 20
            ),
        });
    }
    Ok(())
}

thread_local! {
    /// Whether this thread is inside an entry point's body (how deep), where a panic is caught
    /// and becomes a code: the panic hook prints nothing for it.
    static IN_GUARD: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Installs, once per process, a panic hook that is silent for panics inside [`guard`] (they
/// become `SPVSG_ERROR_INTERNAL` and a diagnostic; the host's stderr is the host's) and hands
/// every other panic to the hook that was there before.
fn install_quiet_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_GUARD.with(|depth| depth.get()) == 0 {
                previous(info);
            }
        }));
    });
}

/// Runs an entry point's body: a `Failure` or a caught panic becomes its code and, when the
/// caller asked for one, a diagnostic. Nothing is printed for a caught panic.
fn guard(
    diagnostic: *mut *mut spvsg_diagnostic_t,
    body: impl FnOnce() -> Result<spvsg_result_t, Failure>,
) -> spvsg_result_t {
    install_quiet_panic_hook();
    IN_GUARD.with(|depth| depth.set(depth.get() + 1));
    let caught = catch_unwind(AssertUnwindSafe(body));
    IN_GUARD.with(|depth| depth.set(depth.get() - 1));
    let failure = match caught {
        Ok(Ok(code)) => return code,
        Ok(Err(f)) => f,
        Err(panic) => Failure {
            code: SPVSG_ERROR_INTERNAL,
            word_offset: 0,
            result_id: 0,
            message: format!(
                "internal error, please report it with the input module: {}",
                panic
                    .downcast_ref::<&str>()
                    .copied()
                    .or(panic.downcast_ref::<String>().map(String::as_str))
                    .unwrap_or("a panic")
            ),
        },
    };
    if !diagnostic.is_null() {
        let d = Box::into_raw(Box::new(spvsg_diagnostic_t {
            code: failure.code,
            word_offset: failure.word_offset,
            result_id: failure.result_id,
            message: c_string(failure.message).into_raw(),
        }));
        // SAFETY: the caller's contract: `diagnostic` points to storage for one pointer.
        unsafe { *diagnostic = d };
    }
    failure.code
}

/// Sets `*out` to NULL when `out` is not NULL.
///
/// # Safety
/// `out` is NULL or points to writable storage for one pointer.
unsafe fn clear<T>(out: *mut *mut T) {
    if !out.is_null() {
        // SAFETY: forwarded from this function's contract.
        unsafe { *out = std::ptr::null_mut() };
    }
}

/// The string argument, or `None` for NULL.
///
/// # Safety
/// `s` is NULL or a NUL-terminated string that outlives the call.
unsafe fn text_arg<'a>(s: *const c_char) -> Option<Result<&'a str, std::str::Utf8Error>> {
    // SAFETY: forwarded from this function's contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_str())
}

/// The words argument, or `None` for NULL with a nonzero count. A pointer that is not aligned
/// for `uint32_t` (C code reading a module at a byte offset) is read word by word into a copy:
/// a Rust slice must be aligned, and building one from it aborts the process.
///
/// # Safety
/// `words` points to `count` readable words, or is NULL; `count * 4` fits `isize`.
unsafe fn words_arg<'a>(words: *const u32, count: usize) -> Option<Cow<'a, [u32]>> {
    if count == 0 {
        return Some(Cow::Borrowed(&[]));
    }
    if words.is_null() {
        return None;
    }
    if words.is_aligned() {
        // SAFETY: forwarded from this function's contract; aligned and not NULL.
        return Some(Cow::Borrowed(unsafe {
            std::slice::from_raw_parts(words, count)
        }));
    }
    // SAFETY: forwarded from this function's contract: `count` readable words from `words`,
    // each read without assuming alignment.
    Some(Cow::Owned(
        (0..count)
            .map(|i| unsafe { words.add(i).read_unaligned() })
            .collect(),
    ))
}

/// A C string from any text (a NUL inside, impossible in our messages, becomes U+FFFD).
fn c_string(s: String) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let text = String::from_utf8_lossy(&e.into_vec()).replace('\0', "\u{fffd}");
        CString::new(text).unwrap_or_default()
    })
}

fn report_of(diagnostics: &[Diagnostic]) -> spvsg_report_t {
    let mut strings = Vec::with_capacity(diagnostics.len() * 4);
    let mut findings = Vec::with_capacity(diagnostics.len());
    for d in diagnostics {
        // A CString's heap buffer never moves, so the pointers stay valid as `strings` grows.
        let mut keep = |s: String| {
            let c = c_string(s);
            let p = c.as_ptr();
            strings.push(c);
            p
        };
        findings.push(spvsg_finding_t {
            code: keep(d.rule.code().to_owned()),
            name: keep(d.rule.name().to_owned()),
            severity: match d.severity {
                Severity::Error => spvsg_severity_t::SPVSG_SEVERITY_ERROR,
                Severity::Warning => spvsg_severity_t::SPVSG_SEVERITY_WARNING,
                Severity::Note => spvsg_severity_t::SPVSG_SEVERITY_NOTE,
            },
            message: keep(d.message.clone()),
            word_offset: d.location.word_offset,
            instruction_index: d.location.inst_index,
            result_id: d.location.result_id.unwrap_or(0),
            disassembly: d.disassembly.clone().map_or(std::ptr::null(), &mut keep),
        });
    }
    spvsg_report_t { findings, strings }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal valid compute module with one `OpSubgroupAnyKHR` (SPIR-V 1.3), assembled by hand.
    fn vote_module() -> Vec<u32> {
        let w = |op: u32, operands: &[u32]| {
            let mut v = vec![((operands.len() as u32 + 1) << 16) | op];
            v.extend_from_slice(operands);
            v
        };
        let mut m = vec![0x0723_0203, 0x0001_0300, 0, 20, 0];
        m.extend(w(17, &[1])); // OpCapability Shader
        m.extend(w(17, &[4431])); // OpCapability SubgroupVoteKHR
                                  // OpExtension "SPV_KHR_subgroup_vote"
        let name = b"SPV_KHR_subgroup_vote\0\0\0";
        let words: Vec<u32> = name
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        m.extend(w(10, &words));
        m.extend(w(14, &[0, 1])); // OpMemoryModel Logical GLSL450
        m.extend(w(15, &[5, 1, 0x6e69_616d, 0])); // OpEntryPoint GLCompute %1 "main"
        m.extend(w(16, &[1, 17, 1, 1, 1])); // OpExecutionMode %1 LocalSize 1 1 1
        m.extend(w(19, &[2])); // %2 = OpTypeVoid
        m.extend(w(33, &[3, 2])); // %3 = OpTypeFunction %2
        m.extend(w(20, &[4])); // %4 = OpTypeBool
        m.extend(w(41, &[4, 5])); // %5 = OpConstantTrue %4
        m.extend(w(54, &[2, 1, 0, 3])); // %1 = OpFunction %2 None %3
        m.extend(w(248, &[6])); // %6 = OpLabel
        m.extend(w(4429, &[4, 7, 5])); // %7 = OpSubgroupAnyKHR %4 %5
        m.extend(w(253, &[])); // OpReturn
        m.extend(w(56, &[])); // OpFunctionEnd
        m
    }

    fn lower_with(
        ctx: *const spvsg_context_t,
        words: &[u32],
    ) -> (spvsg_result_t, Option<Vec<u32>>, Option<String>) {
        let mut binary = std::ptr::null_mut();
        let mut diag = std::ptr::null_mut();
        // SAFETY: valid pointers to live storage.
        let r = unsafe { spvsg_lower(ctx, words.as_ptr(), words.len(), &mut binary, &mut diag) };
        // SAFETY: the library hands out these pointers and we free them once.
        unsafe {
            let out = binary
                .as_ref()
                .map(|b| std::slice::from_raw_parts(b.code, b.word_count).to_vec());
            let msg = diag
                .as_ref()
                .map(|d| CStr::from_ptr(d.message).to_string_lossy().into_owned());
            spvsg_binary_destroy(binary);
            spvsg_diagnostic_destroy(diag);
            (r, out, msg)
        }
    }

    #[test]
    fn lowers_and_reports_errors_with_codes() {
        let ctx = spvsg_context_create();
        let module = vote_module();
        let (r, out, msg) = lower_with(ctx, &module);
        assert_eq!((r, msg), (SPVSG_SUCCESS, None));
        let out = out.unwrap();
        assert_ne!(out, module, "the KHR vote op is rewritten for vulkan1.1");
        let (r, out, msg) = lower_with(ctx, &module[..8]);
        assert_eq!(r, SPVSG_ERROR_INVALID_BINARY);
        assert!(out.is_none() && msg.is_some_and(|m| m.contains("word")));
        // SAFETY: a live context, destroyed once.
        unsafe { spvsg_context_destroy(ctx) };
    }

    #[test]
    fn emulated_subgroup_size_is_checked_and_applied() {
        let ctx = spvsg_context_create();
        let module = vote_module();
        let (r, plain, _) = lower_with(ctx, &module);
        assert_eq!(r, SPVSG_SUCCESS);
        // SAFETY: a live context.
        unsafe {
            for bad in [3, 65, 128] {
                assert_eq!(
                    spvsg_context_set_emulated_subgroup_size(ctx, bad, std::ptr::null_mut()),
                    SPVSG_ERROR_INVALID_ARGUMENT,
                    "{bad}"
                );
                assert_eq!(
                    (*ctx).emulated_subgroup_size,
                    None,
                    "a refused size changes nothing"
                );
            }
            assert_eq!(
                spvsg_context_set_emulated_subgroup_size(ctx, 8, std::ptr::null_mut()),
                SPVSG_SUCCESS
            );
        }
        let (r, emulated, msg) = lower_with(ctx, &module);
        assert_eq!((r, msg), (SPVSG_SUCCESS, None));
        assert_ne!(emulated, plain, "the vote is emulated over 8 lanes");
        // SAFETY: a live context, destroyed once.
        unsafe {
            assert_eq!(
                spvsg_context_set_emulated_subgroup_size(ctx, 0, std::ptr::null_mut()),
                SPVSG_SUCCESS
            );
            assert_eq!(lower_with(ctx, &module).1, plain, "0 turns emulation off");
            spvsg_context_destroy(ctx);
        }
    }

    #[test]
    fn default_context_takes_every_spirv_version_and_a_set_target_does_not() {
        let ctx = spvsg_context_create();
        for version in [0x0001_0300, 0x0001_0500, 0x0001_0600] {
            let mut module = vote_module();
            module[1] = version;
            let (r, out, msg) = lower_with(ctx, &module);
            assert_eq!((r, msg), (SPVSG_SUCCESS, None), "version {version:#x}");
            assert_eq!(out.unwrap()[1], version, "the version is kept");
        }
        let mut module = vote_module();
        module[1] = 0x0001_0600;
        // SAFETY: a live context and NUL-terminated strings.
        unsafe {
            let name = c"vulkan1.1";
            let r = spvsg_context_set_target(ctx, name.as_ptr(), std::ptr::null_mut());
            assert_eq!(r, SPVSG_SUCCESS);
        }
        let (r, _, msg) = lower_with(ctx, &module);
        assert_eq!(r, SPVSG_ERROR_UNSUPPORTED, "{msg:?}");
        assert!(msg.is_some_and(|m| m.contains("SPIR-V 1.6")));
        // SAFETY: as above.
        unsafe {
            let env = c"vulkan1.3";
            assert_eq!(
                spvsg_context_set_target_env(ctx, env.as_ptr(), std::ptr::null_mut()),
                SPVSG_SUCCESS
            );
        }
        let (r, _, msg) = lower_with(ctx, &module);
        assert_eq!((r, msg), (SPVSG_SUCCESS, None), "the environment takes 1.6");
        // SAFETY: a live context, destroyed once.
        unsafe { spvsg_context_destroy(ctx) };
    }

    #[test]
    fn null_pointers_are_refused_not_dereferenced() {
        let mut report = std::ptr::null_mut();
        let mut diag = std::ptr::null_mut();
        // SAFETY: every pointer is NULL or valid; NULLs must be refused.
        unsafe {
            assert_eq!(
                spvsg_validate(
                    std::ptr::null(),
                    std::ptr::null(),
                    5,
                    &mut report,
                    &mut diag
                ),
                SPVSG_ERROR_NULL_POINTER
            );
            assert!(report.is_null() && !diag.is_null());
            assert_eq!((*diag).code, SPVSG_ERROR_NULL_POINTER);
            spvsg_diagnostic_destroy(diag);
            let ctx = spvsg_context_create();
            let words = vote_module();
            assert_eq!(
                spvsg_validate(
                    ctx,
                    words.as_ptr(),
                    words.len(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut()
                ),
                SPVSG_ERROR_NULL_POINTER
            );
            assert_eq!(
                spvsg_context_set_target(ctx, std::ptr::null(), std::ptr::null_mut()),
                SPVSG_ERROR_NULL_POINTER
            );
            assert_eq!(
                spvsg_context_set_float_partition(
                    std::ptr::null_mut(),
                    spvsg_float_partition_t::SPVSG_FLOAT_PARTITION_BITWISE as i32
                ),
                SPVSG_ERROR_NULL_POINTER
            );
            assert_eq!(spvsg_report_count(std::ptr::null()), 0);
            assert!(spvsg_report_findings(std::ptr::null()).is_null());
            spvsg_context_destroy(ctx);
            spvsg_context_destroy(std::ptr::null_mut());
            spvsg_binary_destroy(std::ptr::null_mut());
            spvsg_report_destroy(std::ptr::null_mut());
            spvsg_diagnostic_destroy(std::ptr::null_mut());
        }
    }

    #[test]
    fn options_are_checked() {
        let ctx = spvsg_context_create();
        // SAFETY: a live context and NUL-terminated strings.
        unsafe {
            assert_eq!(
                spvsg_context_set_subgroup_size(ctx, 3, std::ptr::null_mut()),
                SPVSG_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                spvsg_context_set_subgroup_size(ctx, 256, std::ptr::null_mut()),
                SPVSG_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                spvsg_context_set_subgroup_size(ctx, 64, std::ptr::null_mut()),
                SPVSG_SUCCESS
            );
            // lavapipe runs 4..16 lanes: a context already set to 64 cannot move to it.
            assert_eq!(
                spvsg_context_set_target(ctx, c"lavapipe".as_ptr(), std::ptr::null_mut()),
                SPVSG_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                spvsg_context_set_subgroup_size(ctx, 0, std::ptr::null_mut()),
                SPVSG_SUCCESS
            );
            assert_eq!(
                spvsg_context_set_target(ctx, c"lavapipe".as_ptr(), std::ptr::null_mut()),
                SPVSG_SUCCESS
            );
            assert_eq!((*ctx).target.name, "lavapipe");
            assert_eq!(
                spvsg_context_set_target(
                    ctx,
                    c"{\"spirv_version\": 7".as_ptr(),
                    std::ptr::null_mut()
                ),
                SPVSG_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                (*ctx).target.name,
                "lavapipe",
                "a refused target leaves the old one"
            );
            assert_eq!(
                spvsg_context_set_target_env(ctx, c"vulkan9.9".as_ptr(), std::ptr::null_mut()),
                SPVSG_ERROR_INVALID_ARGUMENT
            );
            assert_eq!(
                spvsg_context_set_target_env(ctx, c"vulkan1.2".as_ptr(), std::ptr::null_mut()),
                SPVSG_SUCCESS
            );
            spvsg_context_destroy(ctx);
        }
    }

    #[test]
    fn garbage_never_panics() {
        let ctx = spvsg_context_create();
        let base = vote_module();
        // Every single-word corruption of a small module: a code, never a panic or abort.
        for at in 0..base.len() {
            for value in [0, 1, 0xffff_ffff, 0x0001_0000, base.len() as u32] {
                let mut m = base.clone();
                m[at] = value;
                let (r, out, msg) = lower_with(ctx, &m);
                assert_ne!(r, SPVSG_ERROR_INTERNAL, "word {at} = {value:#x}: {msg:?}");
                assert_eq!(out.is_some(), r == SPVSG_SUCCESS);
            }
        }
        // SAFETY: a live context, destroyed once.
        unsafe { spvsg_context_destroy(ctx) };
    }

    /// A panic inside an entry point becomes `SPVSG_ERROR_INTERNAL` with the panic's text in the
    /// diagnostic, and nothing reaches the host's stderr. Checked in a child process (this test
    /// binary again, running only this test), whose stderr the parent reads.
    #[test]
    fn a_caught_panic_prints_nothing_on_stderr() {
        const TEXT: &str = "a panic text that must not reach stderr";
        if std::env::var_os("SPVSG_TEST_PANIC_CHILD").is_some() {
            let mut diag = std::ptr::null_mut();
            let r = guard(&mut diag, || panic!("{TEXT}"));
            assert_eq!(r, SPVSG_ERROR_INTERNAL);
            // SAFETY: the guard wrote a diagnostic it owns; destroyed once.
            unsafe {
                let message = CStr::from_ptr((*diag).message)
                    .to_string_lossy()
                    .into_owned();
                assert!(message.contains(TEXT), "{message}");
                spvsg_diagnostic_destroy(diag);
            }
            // A panic outside the entry points still reaches the previous hook.
            let outside = std::panic::catch_unwind(|| panic!("outside the guard"));
            assert!(outside.is_err());
            eprintln!("child done");
            return;
        }
        let exe = std::env::current_exe().expect("the test binary has a path");
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "tests::a_caught_panic_prints_nothing_on_stderr",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("SPVSG_TEST_PANIC_CHILD", "1")
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("the test binary runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");
        assert!(
            stderr.contains("child done"),
            "the child ran the checks:\n{stderr}"
        );
        assert!(
            !stderr.contains(TEXT),
            "the caught panic was printed:\n{stderr}"
        );
        assert!(
            stderr.contains("outside the guard"),
            "a panic outside the guard goes to the previous hook:\n{stderr}"
        );
    }

    #[test]
    fn one_context_serves_many_threads() {
        struct Shared(*const spvsg_context_t);
        // SAFETY: the context is only read while the threads run (the documented contract).
        unsafe impl Sync for Shared {}
        impl Shared {
            fn get(&self) -> *const spvsg_context_t {
                self.0
            }
        }
        let ctx = spvsg_context_create();
        let shared = Shared(ctx);
        let module = vote_module();
        let outputs: Vec<Vec<u32>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| lower_with(shared.get(), &module).1.expect("lowered")))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("no panic"))
                .collect()
        });
        assert!(
            outputs.windows(2).all(|w| w[0] == w[1]),
            "same input, same words"
        );
        // SAFETY: the threads have ended; destroyed once.
        unsafe { spvsg_context_destroy(ctx) };
    }
}
