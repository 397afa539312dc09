//! Lowering with the checks `spv-subgroup lower` makes: the output is validated with the target
//! (also when nothing was rewritten), and a failure is blamed on the input or on us.

use spv_subgroup_lower::{lower_words, LowerError, LowerOptions, LowerReport};
use spv_subgroup_validate::{validate, Diagnostic, ParseError, Report, Severity, ValidateOptions};

/// Why a module did not come out lowered.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LowerFailure {
    /// The lowering pass refused the module.
    #[error("{0}")]
    Lower(LowerError),
    /// The input is not a readable module.
    #[error("not a readable SPIR-V module: {0}")]
    Binary(ParseError),
    /// The input breaks a rule of SPIR-V already, without any target.
    #[error("the input is invalid: {}", describe(.0))]
    InvalidInput(Diagnostic),
    /// The input uses something the target lacks that the lowering does not rewrite.
    #[error("the target cannot run the module: {}", describe(.0))]
    TargetLacks(Diagnostic),
    /// The lowered module fails validation although the input was fine: our bug.
    #[error("internal error, please report it with the input module: the lowered module fails validation: {}", describe(.0))]
    Internal(Diagnostic),
}

fn describe(d: &Diagnostic) -> String {
    let at = d
        .disassembly
        .as_deref()
        .map(|dis| format!(" (`{dis}` at word {})", d.location.word_offset))
        .unwrap_or_default();
    format!("{}[{}]: {}{at}", d.severity, d.rule.code(), d.message)
}

fn first_error(r: &Report) -> Option<&Diagnostic> {
    r.diagnostics.iter().find(|d| d.severity == Severity::Error)
}

/// Lowers `words` and validates the result for the target in `opts` (environment `env`, or
/// the target's own when `None`).
pub(crate) fn lower_verified(
    words: &[u32],
    opts: &LowerOptions,
    env: Option<&str>,
) -> Result<(Vec<u32>, LowerReport), LowerFailure> {
    let (out, report) = lower_words(words, opts).map_err(LowerFailure::Lower)?;
    let check = |module: &[u32], with_target: bool| {
        validate(
            module,
            &ValidateOptions {
                target_env: Some(env.unwrap_or(&opts.target.target_env).to_owned()),
                target: with_target.then(|| opts.target.clone()),
            },
        )
    };
    let lowered = check(&out, true).map_err(LowerFailure::Binary)?;
    let Some(bad) = first_error(&lowered) else {
        return Ok((out, report));
    };
    let input_alone = check(words, false).map_err(LowerFailure::Binary)?;
    if let Some(d) = first_error(&input_alone) {
        return Err(LowerFailure::InvalidInput(d.clone()));
    }
    // The input is valid SPIR-V. If it already has, for this target, an error of the rule the
    // output breaks, the target lacks something the lowering does not provide: the input's
    // instruction is the one to name.
    let input_on_target = check(words, true).map_err(LowerFailure::Binary)?;
    match input_on_target
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error && d.rule == bad.rule)
    {
        Some(d) => Err(LowerFailure::TargetLacks(d.clone())),
        None => Err(LowerFailure::Internal(bad.clone())),
    }
}
