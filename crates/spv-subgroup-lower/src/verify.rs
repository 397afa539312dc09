//! Lowering with verification: the output is validated for the target before anyone uses it,
//! and a failure is blamed on the input or on us.
//!
//! The CLI (`spv-subgroup lower`, one file or a tree) and the C interface (`spvsg_lower`) both
//! call [`lower_and_verify`] (or [`lower_words`] then [`verify_lowered`]), so they judge every
//! output by the same rule (documented in `docs/cli.md`, "Verification"):
//! every output, also one written back unchanged, is validated with the target and its
//! environment; when it has an error, the input is judged with the same target, and the input is
//! to blame when it already has at least as many errors of each rule the output breaks (ids and
//! offsets move in a rewrite, the rule a construct breaks does not).
//! Only an error the input did not already have is a bug in the lowering.

use std::collections::HashMap;

use spv_subgroup_validate::{
    validate, Diagnostic, Kind, ParseError, Report, Severity, ValidateOptions,
};

use crate::{lower_words, LowerError, LowerOptions, LowerReport};

/// Why a module did not come out lowered and verified.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The lowering pass refused the module (malformed, invalid, or an instruction the target
    /// cannot get).
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The input is not a module our validator can read.
    #[error("not a readable SPIR-V module: {0}")]
    Binary(ParseError),
    /// The input is to blame: with the target it already has every error the output has
    /// (it is invalid, or uses something the target lacks that the lowering does not rewrite).
    /// `errors` holds the input's error-level findings with the target, in position order.
    #[error("{}", describe_input(.errors))]
    Input {
        /// The input's error-level findings with the target.
        errors: Report,
    },
    /// The lowered module fails verification although the input did not: a bug in the lowering.
    #[error("internal error, please report it with the input module: the lowered module {}", describe_internal(.errors, .unreadable.as_ref()))]
    Internal {
        /// The output's errors the input did not already have (empty when it does not parse).
        errors: Report,
        /// Why the output cannot be read at all, when it cannot.
        unreadable: Option<ParseError>,
    },
}

impl VerifyError {
    /// For [`VerifyError::Input`]: whether the input breaks a rule of SPIR-V itself (an
    /// [`Kind::Invalid`] error), rather than only using something the target lacks.
    pub fn input_is_invalid(&self) -> bool {
        match self {
            VerifyError::Input { errors } => errors
                .diagnostics
                .iter()
                .any(|d| d.rule.kind() != Kind::Unsupported),
            _ => false,
        }
    }

    /// For [`VerifyError::Input`] and [`VerifyError::Internal`]: the finding to name first (for
    /// an invalid input its first invalid-kind error, else the first error).
    pub fn first_finding(&self) -> Option<&Diagnostic> {
        match self {
            VerifyError::Input { errors } => errors
                .diagnostics
                .iter()
                .find(|d| d.rule.kind() != Kind::Unsupported)
                .or_else(|| errors.diagnostics.first()),
            VerifyError::Internal { errors, .. } => errors.diagnostics.first(),
            _ => None,
        }
    }
}

/// One finding on one line: `error[SG0701]: message (`disassembly` at word N)`.
pub fn describe(d: &Diagnostic) -> String {
    let at = d
        .disassembly
        .as_deref()
        .map(|dis| format!(" (`{dis}` at word {})", d.location.word_offset))
        .unwrap_or_else(|| format!(" (at word {})", d.location.word_offset));
    format!("{}[{}]: {}{at}", d.severity, d.rule.code(), d.message)
}

fn more(n: usize) -> String {
    match n {
        0 | 1 => String::new(),
        2 => " (and 1 more error)".to_owned(),
        n => format!(" (and {} more errors)", n - 1),
    }
}

fn describe_input(errors: &Report) -> String {
    let invalid = errors
        .diagnostics
        .iter()
        .find(|d| d.rule.kind() != Kind::Unsupported);
    let (what, first) = match invalid {
        Some(d) => ("the input is invalid", Some(d)),
        None => (
            "the target cannot run the module",
            errors.diagnostics.first(),
        ),
    };
    match first {
        Some(d) => format!("{what}: {}{}", describe(d), more(errors.diagnostics.len())),
        None => what.to_owned(),
    }
}

fn describe_internal(errors: &Report, unreadable: Option<&ParseError>) -> String {
    match (unreadable, errors.diagnostics.first()) {
        (Some(e), _) => format!("does not parse: {e}"),
        (None, Some(d)) => format!(
            "fails validation: {}{}",
            describe(d),
            more(errors.diagnostics.len())
        ),
        (None, None) => "fails validation".to_owned(),
    }
}

/// The validator options verification uses: the target, and `target_env` or the target's own.
fn check_options(opts: &LowerOptions, target_env: Option<&str>) -> ValidateOptions {
    ValidateOptions::default()
        .with_target_env(target_env.unwrap_or(&opts.target.target_env))
        .with_target(opts.target.clone())
}

/// Lowers `words` for `opts.target` and verifies the result (see the module doc); the
/// environment is `target_env`, or the target's own when `None`.
///
/// ```
/// use spv_subgroup_lower::{lower_and_verify, LowerOptions, Target, VerifyError};
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
/// // Lowered for naga's SPIR-V front end (wgpu), and checked for it.
/// let opts = LowerOptions::new(Target::preset("naga").unwrap());
/// let (words, report) = lower_and_verify(&example_module(), &opts, None)?;
/// assert!(report.changed && words != example_module());
///
/// // A failure says whose fault it is.
/// fn whose(e: &VerifyError) -> &'static str {
///     match e {
///         // Malformed, or an instruction the target cannot get.
///         VerifyError::Lower(_) | VerifyError::Binary(_) => "the input cannot be lowered",
///         // Invalid for the target in a way the lowering does not repair.
///         VerifyError::Input { .. } => "the input is invalid for the target",
///         // A bug in the lowering: please report it with the input.
///         _ => "ours",
///     }
/// }
/// let err = lower_and_verify(&[0x0723_0203], &opts, None).unwrap_err();
/// assert_eq!(whose(&err), "the input cannot be lowered");
/// # Ok::<(), VerifyError>(())
/// ```
pub fn lower_and_verify(
    words: &[u32],
    opts: &LowerOptions,
    target_env: Option<&str>,
) -> Result<(Vec<u32>, LowerReport), VerifyError> {
    let (out, report) = lower_words(words, opts)?;
    verify_lowered(words, &out, report.changed, opts, target_env)?;
    Ok((out, report))
}

/// Verifies `output`, the lowering of `input` (`changed` as the pass reported it), for
/// `opts.target` in `target_env` (or the target's own environment).
pub fn verify_lowered(
    input: &[u32],
    output: &[u32],
    changed: bool,
    opts: &LowerOptions,
    target_env: Option<&str>,
) -> Result<(), VerifyError> {
    let vopts = check_options(opts, target_env);
    let out_report = match validate(output, &vopts) {
        Ok(r) => r,
        // An unchanged output is the input itself: the input is unreadable.
        Err(e) if !changed => return Err(VerifyError::Binary(e)),
        Err(e) => {
            return Err(VerifyError::Internal {
                errors: Report::default(),
                unreadable: Some(e),
            })
        }
    };
    if !out_report.has_errors() {
        return Ok(());
    }
    // An input with errors of its own, without any target, is to blame whatever rule its lowered
    // form breaks: a rewrite can turn one rule's violation into another's (a partitioned `UMin`
    // on a signed type, SG0305, becomes a core one, SG0603). Found by fuzzing (docs/fuzzing.md).
    let mut alone = vopts.clone();
    alone.target = None;
    if let Ok(r) = validate(input, &alone) {
        if r.has_errors() {
            return Err(VerifyError::Input {
                errors: errors_only(&r),
            });
        }
    }
    let input_report = if changed {
        validate(input, &vopts).map_err(VerifyError::Binary)?
    } else {
        out_report.clone()
    };
    let new_errors = errors_not_in(&out_report, &input_report);
    if new_errors.diagnostics.is_empty() {
        Err(VerifyError::Input {
            errors: errors_only(&input_report),
        })
    } else {
        Err(VerifyError::Internal {
            errors: new_errors,
            unreadable: None,
        })
    }
}

/// The report's error-level findings.
fn errors_only(report: &Report) -> Report {
    report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .cloned()
        .collect::<Vec<_>>()
        .into()
}

/// The output's errors beyond what the input already has, counted per rule.
fn errors_not_in(output: &Report, input: &Report) -> Report {
    let mut budget: HashMap<spv_subgroup_validate::Rule, usize> = HashMap::new();
    for d in input
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
    {
        *budget.entry(d.rule).or_insert(0) += 1;
    }
    let mut r = errors_only(output);
    r.diagnostics.retain(|d| match budget.get_mut(&d.rule) {
        Some(n) if *n > 0 => {
            *n -= 1;
            false
        }
        _ => true,
    });
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module whose header claims version 1.0 and has nothing else: malformed for the validator.
    #[test]
    fn an_unreadable_input_is_not_blamed_on_us() {
        let words = [0x0723_0203, 0x0001_0000, 0, 8, 0];
        let err = lower_and_verify(&words, &LowerOptions::default(), None).unwrap_err();
        assert!(
            matches!(err, VerifyError::Lower(_) | VerifyError::Binary(_)),
            "{err:?}"
        );
    }

    #[test]
    fn errors_are_counted_per_rule() {
        let d = |rule| {
            let mut d = Diagnostic::new(rule, "", Default::default());
            d.severity = Severity::Error;
            d
        };
        let a = spv_subgroup_validate::Rule::from_code("SG0101");
        let b = spv_subgroup_validate::Rule::from_code("SG0201");
        let (Some(a), Some(b)) = (a, b) else {
            panic!("the rule codes SG0101 and SG0201 exist");
        };
        let input = Report::from(vec![d(a)]);
        let output = Report::from(vec![d(a), d(a), d(b)]);
        let new = errors_not_in(&output, &input);
        let rules: Vec<_> = new.diagnostics.iter().map(|d| d.rule).collect();
        assert_eq!(rules, vec![a, b]);
    }
}
