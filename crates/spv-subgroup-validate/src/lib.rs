//! Validator for SPIR-V subgroup vote and partitioned operations.
//!
//! [`validate`] reads SPIR-V words (never mutates, never does IO), checks them against the rules
//! of `SPV_KHR_subgroup_vote`, `SPV_NV/EXT_shader_subgroup_partitioned`, the core non-uniform
//! instructions our lowering emits, and optionally a [`target::Target`], and returns a [`Report`].
//! A binary that cannot be read at all is a [`ParseError`] with its word offset.
//! [`render_human`] and [`render_json`] turn a report into what the CLI prints.
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
pub mod rules;

pub use binary::{words_from_bytes, ParseError, ParseErrorKind};
pub use diag::{Diagnostic, Kind, Location, Report, Severity};
pub use render::{escape_controls, render_human, render_json};
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
    let mut sink = Sink::default();
    rules::wellformed::check(&cx, &mut sink);
    rules::run(&cx, &mut sink);
    let mut diagnostics = sink.diags;
    diagnostics.sort_by(|a, b| {
        (a.location.inst_index, a.location.word_offset, a.rule).cmp(&(
            b.location.inst_index,
            b.location.word_offset,
            b.rule,
        ))
    });
    Ok(Report { diagnostics })
}

/// Collects findings, plus facts the module-level rules need from the per-instruction pass.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub diags: Vec<Diagnostic>,
    /// A vote KHR instruction was seen.
    pub used_vote: bool,
    /// A barrier or atomic with a Subgroup memory scope was seen in a Vulkan environment, which
    /// VUID-StandaloneSpirv-SubgroupVoteKHR-07951 allows only with SubgroupVoteKHR,
    /// GroupNonUniform or SubgroupBallotKHR declared: such a declaration is not unused.
    pub subgroup_memory_scope: bool,
    /// A partition op or partitioned group operation was seen.
    pub used_partition: bool,
    /// The first partition-related instruction and how many there are.
    pub partition_insts: Option<(usize, usize)>,
    /// The first core non-uniform instruction and how many there are.
    pub core_insts: Option<(usize, usize)>,
    /// Ballot values the provenance rule has proven to come from partition ops.
    pub proven: std::collections::HashSet<u32>,
    /// Ballot values the provenance rule could not prove, with the reason.
    pub unproven: std::collections::HashMap<u32, rules::provenance::Unproven>,
}

impl Sink {
    /// Reports a finding about instruction `i`; disassembles it only now.
    pub(crate) fn emit(
        &mut self,
        cx: &module::Cx<'_>,
        rule: Rule,
        i: usize,
        message: String,
        mut notes: Vec<String>,
    ) {
        // The VUID travels with every finding of a rule Vulkan names, in human and JSON output.
        // Only in a Vulkan environment, where the VUID applies.
        if let Some(v) = rule.vuid() {
            if cx.vulkan {
                notes.push(format!("Vulkan: {v}"));
            }
        }
        self.diags.push(Diagnostic {
            rule,
            severity: rule.severity(),
            message,
            location: cx.m.location(i),
            notes,
            disassembly: Some(disasm::instruction(&cx.m, i)),
        });
    }

    pub(crate) fn count_partition(&mut self, i: usize) {
        self.used_partition = true;
        let e = self.partition_insts.get_or_insert((i, 0));
        e.1 += 1;
    }

    pub(crate) fn count_core(&mut self, i: usize) {
        let e = self.core_insts.get_or_insert((i, 0));
        e.1 += 1;
    }
}
