//! Validator for SPIR-V subgroup vote and partitioned operations.
//!
//! [`validate`] reads SPIR-V words (never mutates, never does IO), checks them against the rules
//! of `SPV_KHR_subgroup_vote`, `SPV_NV/EXT_shader_subgroup_partitioned`, the core non-uniform
//! instructions our lowering emits, and optionally a [`target::Target`], and returns a [`Report`].
//! A binary that cannot be read at all is a [`ParseError`] with its word offset.
//! [`render_human`], [`render_short`] and [`render_json`] turn a report into what the CLI prints,
//! [`sarif`] a whole run's reports into one SARIF log.
//!
//! The rules are listed once, in [`Rule`] (see `docs/rules.md`).
#![deny(missing_docs)]

pub mod fit;
pub mod target;

mod binary;
mod diag;
mod disasm;
mod module;
mod render;
mod rule_docs;
mod rule_table;
pub mod rules;
mod sink;
mod source_map;

/// The text of the generated opcode grammar (`cargo xtask codegen` writes it).
#[doc(hidden)]
pub use binary::grammar_source;
pub use binary::{words_from_bytes, ParseError, ParseErrorKind};
pub use diag::{Diagnostic, Location, Report, SourceLocation};
pub use render::{escape_controls, render_human, render_json, render_short, sarif};
pub use rule_table::{Kind, Severity};
pub use rules::Rule;
/// The `spirv` crate, whose types (`spirv::Op`, `spirv::Capability`) appear in this crate's API
/// (the fit table, [`target::Target::has_capability`]): re-exported so callers use the same version.
pub use spirv;

use target::Target;

/// What to validate against: [`ValidateOptions::default`] (universal SPIR-V, no target), then
/// [`with_target`](Self::with_target) and [`with_target_env`](Self::with_target_env).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ValidateOptions {
    /// The environment, as spirv-val's `--target-env` means it (`vulkan1.1`, `spv1.3`, ...).
    /// `None`: the target's environment when a target is given, else universal SPIR-V.
    pub target_env: Option<String>,
    /// The device the module must run on; `None` skips the target-fit rules (SG07xx).
    pub target: Option<Target>,
}

impl ValidateOptions {
    /// These options with `target`: the module must run on it (enables the target-fit rules).
    pub fn with_target(mut self, target: Target) -> Self {
        self.target = Some(target);
        self
    }

    /// These options with the environment `target_env`, as spirv-val's `--target-env` names it.
    pub fn with_target_env(mut self, target_env: impl Into<String>) -> Self {
        self.target_env = Some(target_env.into());
        self
    }
}

/// Checks only that `words` are a readable SPIR-V module (the fail-fast phase of [`validate`]:
/// header, word counts, opcodes, ids within the bound, results defined once), for tools that
/// load the module with another reader afterwards and want a located error instead of its.
pub fn check_structure(words: &[u32]) -> Result<(), ParseError> {
    binary::parse(words).map(|_| ())
}

/// The largest id bound SPIR-V's universal limits allow (2.17, "Result `<id>` bound": 4,194,303),
/// which spirv-val enforces by default: `validate` reports a larger one (SG0005) and `lower`
/// refuses it.
pub const MAX_ID_BOUND: u32 = 0x3F_FFFF;

/// Validates a module. `Err` only when the words are not a readable SPIR-V module; every
/// rule violation is a [`Diagnostic`] in the [`Report`].
///
/// ```
/// use spv_subgroup_validate::{target::Target, validate, Rule, Severity, ValidateOptions};
///
/// # fn example_module() -> Vec<u32> {
/// #     // A compute shader with one `OpSubgroupAllKHR` (SPV_KHR_subgroup_vote), built with rspirv.
/// #     use rspirv::spirv::{AddressingModel, Capability, ExecutionMode, ExecutionModel, FunctionControl, MemoryModel};
/// #     use rspirv::binary::Assemble;
/// #     let mut b = rspirv::dr::Builder::new();
/// #     b.set_version(1, 3);
/// #     b.capability(Capability::Shader);
/// #     b.capability(Capability::SubgroupVoteKHR);
/// #     b.extension("SPV_KHR_subgroup_vote");
/// #     b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
/// #     let void = b.type_void();
/// #     let void_fn = b.type_function(void, vec![]);
/// #     let bool_ty = b.type_bool();
/// #     let yes = b.constant_true(bool_ty);
/// #     let main = b.begin_function(void, None, FunctionControl::NONE, void_fn).unwrap();
/// #     b.begin_block(None).unwrap();
/// #     b.subgroup_all_khr(bool_ty, None, yes).unwrap();
/// #     b.ret().unwrap();
/// #     b.end_function().unwrap();
/// #     b.entry_point(ExecutionModel::GLCompute, main, "main", vec![]);
/// #     b.execution_mode(main, ExecutionMode::LocalSize, vec![64, 1, 1]);
/// #     b.module().assemble()
/// # }
/// // A module that uses `OpSubgroupAllKHR`, which core Vulkan 1.1 lacks.
/// let words: Vec<u32> = example_module();
///
/// // Without a target, only the rules of the extensions and the core spec apply: it is valid.
/// let report = validate(&words, &ValidateOptions::default())?;
/// assert!(!report.diagnostics.iter().any(|d| d.severity == Severity::Error));
///
/// // Against Vulkan 1.1's core subgroup features, the vote instruction does not fit.
/// let opts = ValidateOptions::default().with_target(Target::preset("vulkan1.1").unwrap());
/// let report = validate(&words, &opts)?;
/// let finding = &report.diagnostics[0];
/// assert_eq!(finding.rule.code(), "SG0701");
/// println!("{}[{}]: {}", finding.severity, finding.rule.code(), finding.message);
///
/// // Words that are not SPIR-V are an error with a location, never a panic.
/// assert!(validate(&[0xdead_beef], &opts).is_err());
/// # Ok::<(), spv_subgroup_validate::ParseError>(())
/// ```
pub fn validate(words: &[u32], opts: &ValidateOptions) -> Result<Report, ParseError> {
    let parsed = binary::parse(words)?;
    let m = module::Module::build(words, parsed);
    let env = opts
        .target_env
        .as_deref()
        .or(opts.target.as_ref().map(|t| t.target_env.as_str()))
        .unwrap_or("");
    let cx = module::Cx {
        m,
        target: opts.target.as_ref(),
        vulkan: env.starts_with("vulkan"),
        env_max_version: opts
            .target_env
            .as_deref()
            .and_then(|e| module::env_max_spirv_version(e).map(|v| (e, v))),
    };
    let mut sink = sink::Sink::default();
    rules::wellformed::check(&cx, &mut sink);
    rules::run(&cx, &mut sink);
    let mut diagnostics = sink.diags;
    source_map::attach(&cx.m, &mut diagnostics);
    diagnostics.sort_by(|a, b| {
        (a.location.inst_index, a.location.word_offset, a.rule).cmp(&(
            b.location.inst_index,
            b.location.word_offset,
            b.rule,
        ))
    });
    Ok(Report { diagnostics })
}
