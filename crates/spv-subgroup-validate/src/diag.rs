//! Findings: [`Diagnostic`], its [`Location`] and [`Severity`], and the [`Report`] that holds them.

use serde::Serialize;

use crate::rule_table::{Rule, Severity};

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

/// Where a finding is in the shader source, from the module's debug information (`OpLine`,
/// or `NonSemantic.Shader.DebugInfo.100`'s `DebugLine`): what `glslangValidator -g`/`-gV` and
/// `dxc -Zi` write.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct SourceLocation {
    /// The file name as the compiler recorded it (often relative to where it ran), its bytes
    /// that are not UTF-8 shown as U+FFFD.
    pub file: String,
    /// The file name's bytes exactly as recorded (SPIR-V asks for UTF-8, compilers write what
    /// the file system holds), for file URIs that name the file itself.
    #[serde(skip)]
    pub file_bytes: Vec<u8>,
    /// The line, counting from 1.
    pub line: u32,
    /// The column, counting from 1; 0 when the compiler did not record one.
    pub column: u32,
}

impl std::fmt::Display for SourceLocation {
    /// `FILE:LINE:COLUMN`, or `FILE:LINE` when the column is not known.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if self.column > 0 {
            write!(f, ":{}", self.column)?;
        }
        Ok(())
    }
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
    /// Where the instruction came from in the shader source, when the module says.
    pub source: Option<SourceLocation>,
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
            source: None,
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
