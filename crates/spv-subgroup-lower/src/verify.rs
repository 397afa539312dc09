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

#[cfg(feature = "naga")]
use spirv::Op;
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
        return judge_by_consumer(input, output, changed, opts);
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
            errors: kept_errors(&input_report, &out_report),
        })
    } else {
        Err(VerifyError::Internal {
            errors: new_errors,
            unreadable: None,
        })
    }
}

/// For a target whose consumer is naga (`restrictions.naga_module`), naga's own judgement of an
/// output our validator accepts ([`crate::naga_judge`]); what it refuses is blamed on the input
/// when the input brings it (see [`naga_blames_input`]), else on the lowering.
#[cfg(feature = "naga")]
fn judge_by_consumer(
    input: &[u32],
    output: &[u32],
    changed: bool,
    opts: &LowerOptions,
) -> Result<(), VerifyError> {
    if !opts.target.restrictions.naga_module {
        return Ok(());
    }
    let Err(refusal) = crate::naga_judge::judge(output) else {
        return Ok(());
    };
    let mut notes = Vec::new();
    let mut at = None;
    let input_side = !changed || naga_blames_input(input, &refusal, &mut notes, &mut at);
    // Where naga points: in the input when the input is to blame (then the instruction is the
    // user's), else in the output, which the user does not have.
    let word = if changed { at } else { refusal.word };
    let location = word.and_then(|w| location_of(input, w)).unwrap_or_default();
    let mut d = Diagnostic::new(
        spv_subgroup_validate::Rule::TargetRestriction,
        format!("target `{}`: {refusal}", opts.target.name),
        location,
    );
    d.severity = Severity::Error;
    d.notes = notes;
    let errors = Report::from(vec![d]);
    if input_side {
        Err(VerifyError::Input { errors })
    } else {
        Err(VerifyError::Internal {
            errors,
            unreadable: None,
        })
    }
}

/// Without the `naga` feature the naga target is judged by our validator alone.
#[cfg(not(feature = "naga"))]
fn judge_by_consumer(
    _input: &[u32],
    _output: &[u32],
    _changed: bool,
    _opts: &LowerOptions,
) -> Result<(), VerifyError> {
    Ok(())
}

/// Whether naga's refusal of the lowered module is the input's doing (a note saying why is
/// pushed): the front end refuses something the lowering never emits (a stage, an image
/// format, a type width, an extended instruction set) or a capability, extension or
/// instruction the input has itself; the validator refuses a subgroup built-in in a
/// multi-dimensional workgroup (the input's entry point's shape: the rewrite needs the lane id,
/// which naga then refuses); or naga refuses the input itself in the same words, at the same
/// stage (its front end, validator or WGSL writer), the input read with what naga's front end
/// cannot read at all stubbed out (`refusal_matching`; `at` gets the input's word naga names).
#[cfg(feature = "naga")]
fn naga_blames_input(
    input: &[u32],
    refusal: &crate::naga_judge::NagaRefusal,
    notes: &mut Vec<String>,
    at: &mut Option<usize>,
) -> bool {
    use naga::front::spv::Error as E;
    let brought = match &refusal.front_end {
        Some(E::UnsupportedCapability(c)) => has_operand_word(input, Op::Capability, *c as u32),
        Some(E::UnsupportedInstruction(_, op)) => has_opcode(input, *op),
        Some(E::UnsupportedExtension(name)) => has_extension(input, name),
        Some(
            E::UnsupportedExecutionModel(_)
            | E::UnsupportedExecutionMode(_)
            | E::UnsupportedStorageClass(_)
            | E::UnsupportedImageDim(_)
            | E::UnsupportedImageFormat(_)
            | E::UnsupportedExtSet(_)
            | E::UnsupportedExtInstSet(_)
            | E::UnsupportedExtInst(_)
            | E::UnknownCapability(_)
            | E::InvalidTypeWidth(_)
            | E::UnsupportedRuntimeArrayStorageClass
            | E::UnsupportedMatrixStride { .. }
            | E::InvalidStorageImageWithoutFormat
            | E::InvalidImageDepthStorage,
        ) => true,
        _ => false,
    };
    if brought {
        notes.push("the input has it; the lowering does not rewrite it".to_owned());
        return true;
    }
    if let Some(width) = refused_scalar_width(&refusal.message) {
        if has_type_of_width(input, width) {
            notes.push(format!(
                "the input declares {width}-bit types, which naga does not take"
            ));
            return true;
        }
    }
    if (refusal.message.contains("Float literal is NaN")
        || refusal.message.contains("Float literal is infinite"))
        && has_non_finite_float_constant(input)
    {
        notes.push("the input has a NaN or infinite float constant, which naga's validator refuses; the lowering makes its own infinities at run time".to_owned());
        return true;
    }
    if refusal.message.contains("relational function")
        && [Op::IsNan, Op::IsInf, Op::IsFinite, Op::IsNormal]
            .iter()
            .any(|&op| has_opcode(input, op))
    {
        notes.push("the input tests a float with `OpIsNan`/`OpIsInf`, which naga's WGSL writer cannot spell; the lowering never emits them".to_owned());
        return true;
    }
    if refusal.stage == "validator" {
        if let Some(at) = resizing_bitcast(input) {
            notes.push(format!("the input has an `OpBitcast` that changes the component count (word {at}), whose result naga's IR types as its operand's vector, so the code that uses it fails naga's type checks"));
            return true;
        }
    }
    if refusal.stage == "validator"
        && refusal.message.starts_with("Entry point")
        && !refusal.message.to_lowercase().contains("subgroup")
    {
        // The lowering adds nothing to an entry point's interface but subgroup built-ins.
        notes.push("naga refuses the entry point's interface (its outputs, bindings or inputs), which the lowering does not change".to_owned());
        return true;
    }
    if refusal
        .message
        .contains("Initializer must be a const-expression")
        && instructions(input).any(|(o, _)| {
            [
                Op::SpecConstant,
                Op::SpecConstantTrue,
                Op::SpecConstantFalse,
                Op::SpecConstantComposite,
                Op::SpecConstantOp,
            ]
            .iter()
            .any(|&op| op as u32 == o)
        })
    {
        // The lowering emits no specialization constant; naga 30's validator refuses the
        // initializers of the ones the input has (a workgroup size by `local_size_x_id`).
        notes.push("the input has specialization constants (a workgroup size given by `local_size_x_id`, say), whose initializers naga 30's validator refuses; the lowering makes none".to_owned());
        return true;
    }
    if refusal.multi_dimensional_subgroup_builtin {
        notes.push("the rewrite reads the lane id (`SubgroupLocalInvocationId`), which naga takes only in a one-dimensional workgroup (y = z = 1)".to_owned());
        return true;
    }
    let same = |r: &crate::naga_judge::NagaRefusal| {
        r.stage == refusal.stage && same_words(&r.message, &refusal.message)
    };
    match crate::naga_judge::refusal_matching(input, same) {
        Some(r) => {
            notes.push(
                "naga refuses the input in the same words; the lowering does not make this defect"
                    .to_owned(),
            );
            *at = r.word;
            true
        }
        None => false,
    }
}

/// The location of the instruction starting at word `word` of `words`, if one does.
#[cfg(feature = "naga")]
fn location_of(words: &[u32], word: usize) -> Option<spv_subgroup_validate::Location> {
    let mut at = 5;
    for (inst_index, (op, rest)) in instructions(words).enumerate() {
        if at == word {
            let (typed, result) = crate::naga_judge::result_slots(op);
            let result_id = match (typed, result) {
                (true, true) => rest.get(1).copied(),
                (false, true) => rest.first().copied(),
                _ => None,
            };
            let mut location = spv_subgroup_validate::Location::default();
            location.word_offset = word;
            location.inst_index = inst_index;
            location.result_id = result_id;
            return Some(location);
        }
        at += rest.len() + 1;
    }
    None
}

/// The bit width of naga's validator's "The Sint scalar width 1 is not supported" (in bytes).
#[cfg(feature = "naga")]
fn refused_scalar_width(message: &str) -> Option<u32> {
    let rest = &message[message.find("scalar width ")? + "scalar width ".len()..];
    let bytes: u32 = rest.split(' ').next()?.parse().ok()?;
    rest.contains("is not supported").then_some(bytes * 8)
}

/// Whether the module declares an integer or float type of `width` bits.
#[cfg(feature = "naga")]
fn has_type_of_width(words: &[u32], width: u32) -> bool {
    instructions(words).any(|(o, rest)| {
        (o == Op::TypeInt as u32 || o == Op::TypeFloat as u32) && rest.get(1) == Some(&width)
    })
}

/// Whether the module has an `OpConstant`/`OpSpecConstant` of a float type whose bits are an
/// infinity or a NaN.
#[cfg(feature = "naga")]
fn has_non_finite_float_constant(words: &[u32]) -> bool {
    let floats: HashMap<u32, u32> = instructions(words)
        .filter(|(o, _)| *o == Op::TypeFloat as u32)
        .filter_map(|(_, rest)| Some((*rest.first()?, *rest.get(1)?)))
        .collect();
    instructions(words).any(|(o, rest)| {
        if o != Op::Constant as u32 && o != Op::SpecConstant as u32 {
            return false;
        }
        let (Some(ty), Some(&low)) = (rest.first(), rest.get(2)) else {
            return false;
        };
        match floats.get(ty) {
            Some(16) => low & 0x7c00 == 0x7c00,
            Some(32) => low & 0x7f80_0000 == 0x7f80_0000,
            Some(64) => rest
                .get(3)
                .is_some_and(|&high| high & 0x7ff0_0000 == 0x7ff0_0000),
            _ => false,
        }
    })
}

/// The word offset of the module's first `OpBitcast` whose result and operand have different
/// component counts (naga 30's IR keeps a bitcast's vector size), if it has one.
#[cfg(feature = "naga")]
fn resizing_bitcast(words: &[u32]) -> Option<usize> {
    // Component counts of the scalar and vector types, and the type of every result.
    let mut components: HashMap<u32, u32> = HashMap::new();
    let mut type_of: HashMap<u32, u32> = HashMap::new();
    let mut at = 5;
    for (o, rest) in instructions(words) {
        let here = at;
        at += rest.len() + 1;
        match o {
            o if o == Op::TypeInt as u32 || o == Op::TypeFloat as u32 => {
                components.insert(*rest.first()?, 1);
            }
            o if o == Op::TypeVector as u32 => {
                components.insert(*rest.first()?, *rest.get(2)?);
            }
            o if o == Op::Bitcast as u32 => {
                let (to, from) = (rest.first()?, type_of.get(rest.get(2)?));
                if let (Some(a), Some(b)) =
                    (components.get(to), from.and_then(|t| components.get(t)))
                {
                    if a != b {
                        return Some(here);
                    }
                }
            }
            _ => {}
        }
        // Every instruction with a result type: the grammar puts it first, the id second.
        if let (Some(&ty), Some(&id)) = (rest.first(), rest.get(1)) {
            if components.contains_key(&ty) {
                type_of.insert(id, ty);
            }
        }
    }
    None
}

/// Two naga messages equal but for numbers (expression handles and ids move in a rewrite).
#[cfg(feature = "naga")]
fn same_words(a: &str, b: &str) -> bool {
    // Every run of digits becomes one `#`.
    let strip = |s: &str| -> String {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if !c.is_ascii_digit() {
                out.push(c);
            } else if !out.ends_with('#') {
                out.push('#');
            }
        }
        out
    };
    strip(a) == strip(b)
}

/// The instructions of a module's words as (opcode, operand words); stops at a malformed one.
#[cfg(feature = "naga")]
fn instructions(words: &[u32]) -> impl Iterator<Item = (u32, &[u32])> {
    let mut at = 5;
    std::iter::from_fn(move || {
        let first = *words.get(at)?;
        let count = (first >> 16) as usize;
        let inst = words.get(at..at + count).filter(|_| count > 0)?;
        at += count;
        Some((first & 0xffff, &inst[1..]))
    })
}

#[cfg(feature = "naga")]
fn has_opcode(words: &[u32], op: Op) -> bool {
    instructions(words).any(|(o, _)| o == op as u32)
}

#[cfg(feature = "naga")]
fn has_operand_word(words: &[u32], op: Op, first: u32) -> bool {
    instructions(words).any(|(o, rest)| o == op as u32 && rest.first() == Some(&first))
}

#[cfg(feature = "naga")]
fn has_extension(words: &[u32], name: &str) -> bool {
    instructions(words).any(|(o, rest)| {
        o == Op::Extension as u32 && {
            let bytes: Vec<u8> = rest.iter().flat_map(|w| w.to_le_bytes()).collect();
            bytes.split(|&b| b == 0).next() == Some(name.as_bytes())
        }
    })
}

/// The input's errors that its lowered form still has: what the lowering rewrote (an 8-bit
/// reduce, a partition) is no reason, and naming it first would mislead. A finding is kept when
/// the output has one of the same rule and message (messages name no ids); when none matches
/// so (a rewrite changed the wording), every error of a rule the output breaks; when none of
/// those either, all of the input's errors.
fn kept_errors(input: &Report, output: &Report) -> Report {
    let all = errors_only(input);
    let out = errors_only(output);
    let by_message: Vec<Diagnostic> = all
        .diagnostics
        .iter()
        .filter(|d| {
            out.diagnostics
                .iter()
                .any(|o| o.rule == d.rule && o.message == d.message)
        })
        .cloned()
        .collect();
    if !by_message.is_empty() {
        return Report::from(by_message);
    }
    let by_rule: Vec<Diagnostic> = all
        .diagnostics
        .iter()
        .filter(|d| out.diagnostics.iter().any(|o| o.rule == d.rule))
        .cloned()
        .collect();
    if by_rule.is_empty() {
        all
    } else {
        Report::from(by_rule)
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

    /// A module's words from instructions given as (opcode, operands).
    #[cfg(feature = "naga")]
    fn module(insts: &[(Op, &[u32])]) -> Vec<u32> {
        let mut w = vec![0x0723_0203, 0x0001_0300, 0, 100, 0];
        for (op, operands) in insts {
            w.push(((operands.len() as u32 + 1) << 16) | *op as u32);
            w.extend_from_slice(operands);
        }
        w
    }

    #[cfg(feature = "naga")]
    #[test]
    fn naga_words_name_what_the_input_brings() {
        assert_eq!(
            refused_scalar_width(
                "Type [12] '' is invalid: The Sint scalar width 1 is not supported"
            ),
            Some(8)
        );
        assert_eq!(refused_scalar_width("Expression [3] is invalid"), None);
        assert!(same_words(
            "Expression [14] is invalid: [11] and [13]",
            "Expression [140] is invalid: [7] and [2]"
        ));
        assert!(!same_words(
            "Expression [1] is invalid",
            "Type [1] is invalid"
        ));
        // %1 = float 32, %2 = double; constants %3 = +inf (32), %4 = 1.0 (32), %5 = NaN (64).
        let finite = module(&[
            (Op::TypeFloat, &[1, 32]),
            (Op::Constant, &[1, 4, 0x3f80_0000]),
        ]);
        assert!(!has_non_finite_float_constant(&finite));
        let inf = module(&[
            (Op::TypeFloat, &[1, 32]),
            (Op::Constant, &[1, 3, 0xff80_0000]),
        ]);
        assert!(has_non_finite_float_constant(&inf));
        let nan64 = module(&[
            (Op::TypeFloat, &[2, 64]),
            (Op::Constant, &[2, 5, 1, 0x7ff0_0000]),
        ]);
        assert!(has_non_finite_float_constant(&nan64));
        // An integer with infinity's bits is no float constant.
        let int = module(&[
            (Op::TypeInt, &[1, 32, 0]),
            (Op::Constant, &[1, 3, 0x7f80_0000]),
        ]);
        assert!(!has_non_finite_float_constant(&int));
        // %1 uint, %2 uvec2, %3 double, %4 a uvec2 constant; %5 = bitcast double of it.
        let types: [(Op, &[u32]); 4] = [
            (Op::TypeInt, &[1, 32, 0]),
            (Op::TypeVector, &[2, 1, 2]),
            (Op::TypeFloat, &[3, 64]),
            (Op::ConstantNull, &[2, 4]),
        ];
        let mut resized = types.to_vec();
        resized.push((Op::Bitcast, &[3, 5, 4]));
        assert_eq!(resizing_bitcast(&module(&resized)), Some(5 + 4 + 4 + 3 + 3));
        let mut same = types.to_vec();
        same.push((Op::Bitcast, &[2, 5, 4]));
        assert_eq!(resizing_bitcast(&module(&same)), None);
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
