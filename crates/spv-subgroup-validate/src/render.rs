//! Rendering a [`Report`]: rustc-like text for people, stable JSON for tools. Both deterministic.
//! The SARIF log, which spans a run's modules, is built in [`sarif`].

pub mod sarif;

use std::borrow::Cow;
use std::fmt::Write;

use serde_json::{json, Value};

use crate::diag::Report;
use crate::rule_table::Severity;

/// The report as the CLI prints it; empty when there are no findings.
///
/// ```text
/// error[SG0101]: `OpSubgroupAllKHR` needs `OpCapability SubgroupVoteKHR`
///   --> shader.spv:word 123 (instruction #45, %12, in function %4)
///    |
///    |     %12 = OpSubgroupAllKHR %2 %11
///    |
///    = note: ...
///
/// shader.spv: 1 error, 0 warnings
/// ```
///
/// Where the module carries line information ([`crate::SourceLocation`]), the arrow names the
/// source first: `--> vote.comp:12:5 (shader.spv:word 123, instruction #45, ...)`.
pub fn render_human(report: &Report, file_name: &str) -> String {
    let mut s = String::new();
    if report.diagnostics.is_empty() {
        return s;
    }
    // Messages and notes may quote module strings (an extension name, a debug name), and a
    // terminal would act on their control characters; the disassembly escapes its own.
    let file_name = escape_controls(file_name);
    for d in &report.diagnostics {
        let loc = &d.location;
        let message = escape_controls(&d.message);
        let _ = writeln!(s, "{}[{}]: {message}", d.severity, d.rule.code());
        let mut at = if loc.word_offset < crate::binary::HEADER_WORDS {
            "header".to_owned()
        } else {
            format!("instruction #{}", loc.inst_index)
        };
        if let Some(r) = loc.result_id {
            let _ = write!(at, ", %{r}");
        }
        if let Some(f) = loc.function {
            let _ = write!(at, ", in function %{f}");
        }
        match &d.source {
            Some(src) => {
                let src = escape_controls(&src.to_string()).into_owned();
                let _ = writeln!(
                    s,
                    "  --> {src} ({file_name}:word {}, {at})",
                    loc.word_offset
                );
            }
            None => {
                let _ = writeln!(s, "  --> {file_name}:word {} ({at})", loc.word_offset);
            }
        }
        if let Some(dis) = &d.disassembly {
            let _ = writeln!(s, "   |");
            let _ = writeln!(s, "   |     {dis}");
            let _ = writeln!(s, "   |");
        }
        for n in &d.notes {
            let _ = writeln!(s, "   = note: {}", escape_controls(n));
        }
        let _ = writeln!(
            s,
            "   = help: `spv-subgroup explain {}` ({})",
            d.rule.code(),
            d.rule.name()
        );
        s.push('\n');
    }
    let errors = report.count(Severity::Error);
    let warnings = report.count(Severity::Warning);
    let _ = writeln!(
        s,
        "{file_name}: {errors} error{}, {warnings} warning{}",
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    );
    s
}

/// `text` with every control character (C0, DEL, C1; newlines and tabs too) written as `\u{..}`,
/// the way the disassembly shows string literals; borrowed when there is none.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The report one line per finding, as editors and CI problem matchers read compiler output:
/// `vote.comp:12:5: error[SG0101]: MESSAGE (shader.spv word 123)`. Without line information
/// the module is the file and the instruction's number (from 1 after the header, the count
/// spirv-val's messages use) the line: `shader.spv:46: error[SG0101]: MESSAGE (word 123)`.
pub fn render_short(report: &Report, file_name: &str) -> String {
    let mut s = String::new();
    let file_name = escape_controls(file_name);
    for d in &report.diagnostics {
        let message = escape_controls(&d.message);
        let (severity, code) = (d.severity, d.rule.code());
        let word = d.location.word_offset;
        match &d.source {
            Some(src) => {
                let src = escape_controls(&src.to_string()).into_owned();
                let _ = writeln!(
                    s,
                    "{src}: {severity}[{code}]: {message} ({file_name} word {word})"
                );
            }
            None => {
                let line = d.location.inst_index + 1;
                let _ = writeln!(
                    s,
                    "{file_name}:{line}: {severity}[{code}]: {message} (word {word})"
                );
            }
        }
    }
    s
}

/// The report as JSON: an array with one object per finding (schema in `docs/rules.md`).
pub fn render_json(report: &Report, file_name: &str) -> Value {
    Value::Array(
        report
            .diagnostics
            .iter()
            .map(|d| {
                let mut finding = json!({
                    "code": d.rule.code(),
                    "name": d.rule.name(),
                    "severity": d.severity.as_str(),
                    "message": d.message,
                    "file": file_name,
                    "word_offset": d.location.word_offset,
                    "instruction_index": d.location.inst_index,
                    "result_id": d.location.result_id,
                    "function": d.location.function,
                    "instruction": d.disassembly,
                    "notes": d.notes,
                });
                // Only where the module has line information: older consumers see no change.
                if let Some(src) = &d.source {
                    finding["source"] = json!(src);
                }
                finding
            })
            .collect(),
    )
}
