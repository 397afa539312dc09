//! Findings: [`Diagnostic`], its [`Location`] and [`Severity`], and the [`Report`] that holds them.

use serde::{Deserialize, Serialize};

use crate::rules::Rule;

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The module breaks a rule of a specification ("must"): consumers may reject or miscompile it.
    Error,
    /// The module is legal but very likely wrong or wasteful.
    Warning,
    /// Extra information.
    Note,
}

impl Severity {
    /// The lowercase name, as printed (`error`, `warning`, `note`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a finding is: the instruction it is about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[non_exhaustive]
pub struct Location {
    /// Offset of the instruction's first word from the start of the module (the header is words 0-4).
    pub word_offset: usize,
    /// Index of the instruction, counting from 0 after the header.
    pub inst_index: usize,
    /// The instruction's result id, if it has one.
    pub result_id: Option<u32>,
    /// The result id of the function the instruction is in, if any.
    pub function: Option<u32>,
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// The rule that found it.
    pub rule: Rule,
    /// Its severity (the rule's default severity).
    pub severity: Severity,
    /// One sentence, naming the operand or the instruction.
    pub message: String,
    /// The instruction it is about.
    pub location: Location,
    /// Extra lines: the spec sentence, how to fix it.
    pub notes: Vec<String>,
    /// The instruction, disassembled (`%12 = OpGroupNonUniformPartitionNV %7 %11`).
    pub disassembly: Option<String>,
}

/// All findings on one module, ordered by position, then rule code.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Report {
    /// The findings.
    pub diagnostics: Vec<Diagnostic>,
}

impl From<Vec<Diagnostic>> for Report {
    fn from(diagnostics: Vec<Diagnostic>) -> Report {
        Report { diagnostics }
    }
}

impl Diagnostic {
    /// A finding of `rule` at `location`, at the rule's severity, with no notes or disassembly
    /// (for tools that report their own findings alongside the validator's).
    pub fn new(rule: Rule, message: impl Into<String>, location: Location) -> Diagnostic {
        Diagnostic {
            rule,
            severity: rule.severity(),
            message: message.into(),
            location,
            notes: Vec::new(),
            disassembly: None,
        }
    }
}

impl Report {
    /// Whether any finding is at error level (the CLI exits 1 then).
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// How many findings have the given severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }

    /// Whether there are no findings at all.
    pub fn is_empty(&self) -> bool {
        self.diagnostics.is_empty()
    }
}

/// What the specification makes of a module a rule flags: the audit outcome of each rule
/// (issue 13). Only `Invalid` and `Unsupported` rules are errors; undefined behaviour at run time
/// and advice are warnings, so a valid module never fails validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum Kind {
    /// The specification (or a Vulkan VUID for the environment) says "must" about the module.
    Invalid,
    /// The module is valid; executing the instruction is undefined behaviour.
    Undefined,
    /// The module is valid and defined, but very likely not what was meant.
    Advice,
    /// Valid SPIR-V that the chosen target's consumer rejects (only with `--target`).
    Unsupported,
}

impl Kind {
    /// The name as docs/rules.md prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Invalid => "invalid",
            Kind::Undefined => "undefined behaviour",
            Kind::Advice => "advice",
            Kind::Unsupported => "unsupported by the target",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
