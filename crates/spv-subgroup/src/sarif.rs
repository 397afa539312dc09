//! `validate --format sarif`: one SARIF 2.1.0 log for the run, for CI viewers such as GitHub code scanning.
//!
//! The rules come from the rule table (code, name, one-line doc, `explain` text as help); each
//! finding is a result whose region is its instruction's bytes (`byteOffset` = word offset × 4)
//! with the disassembly as the snippet. A module that could not be read or is not SPIR-V is a
//! tool execution notification (SARIF results need a rule). Layout documented in `docs/cli.md`.

use serde_json::{json, Value};
use spv_subgroup_validate::{Report, Rule, Severity};

/// The schema URI the log names (the OASIS errata01 schema, committed as `fixtures/sarif/`).
pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The project's home (the workspace's `repository`; this crate's manifest does not inherit it).
const REPOSITORY: &str = "https://github.com/spv-subgroup/spv-subgroup";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// The artifact location of an input: a relative URI reference of its path, percent-encoded
/// byte by byte (so non-UTF-8 names survive); stdin has a description instead of a URI.
pub fn artifact(path: Option<&std::path::Path>) -> Value {
    let Some(p) = path else {
        return json!({ "description": { "text": "standard input" } });
    };
    #[cfg(unix)]
    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(p.as_os_str()).to_vec();
    #[cfg(not(unix))]
    let bytes = p.to_string_lossy().replace('\\', "/").into_bytes();
    let mut uri = String::with_capacity(bytes.len());
    for b in bytes {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    json!({ "uri": uri })
}

/// The results of one module. `inst_words[i]` is the word count of finding `i`'s instruction.
pub fn results(report: &Report, artifact: &Value, inst_words: &[u32]) -> Vec<Value> {
    report
        .diagnostics
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let loc = &d.location;
            let mut region = json!({
                // GitHub code scanning needs a line; a binary has none, so the byte range is
                // what says where, and line 1 only satisfies the viewer (docs/cli.md).
                "startLine": 1,
                "byteOffset": loc.word_offset * 4,
                "byteLength": inst_words.get(i).copied().unwrap_or(1) * 4,
            });
            if let Some(dis) = &d.disassembly {
                region["snippet"] = json!({ "text": dis });
            }
            json!({
                "ruleId": d.rule.code(),
                "ruleIndex": Rule::ALL.iter().position(|r| *r == d.rule),
                "level": level(d.severity),
                "message": { "text": d.message },
                "locations": [{
                    "physicalLocation": { "artifactLocation": artifact, "region": region }
                }],
                "properties": {
                    "name": d.rule.name(),
                    "wordOffset": loc.word_offset,
                    "instructionIndex": loc.inst_index,
                    "resultId": loc.result_id,
                    "function": loc.function,
                    "notes": d.notes,
                },
            })
        })
        .collect()
}

/// A module that could not be checked, as a notification.
pub fn notification(artifact: &Value, message: &str, word_offset: Option<usize>) -> Value {
    let mut location = json!({ "artifactLocation": artifact });
    if let Some(w) = word_offset {
        location["region"] = json!({ "startLine": 1, "byteOffset": w * 4 });
    }
    json!({
        "level": "error",
        "message": { "text": message },
        "locations": [{ "physicalLocation": location }],
    })
}

/// The whole log.
pub fn log(results: Vec<Value>, notifications: Vec<Value>, successful: bool) -> Value {
    let rules: Vec<Value> = Rule::ALL
        .iter()
        .map(|r| {
            json!({
                "id": r.code(),
                "name": r.name(),
                "shortDescription": { "text": r.doc() },
                "fullDescription": { "text": r.explain() },
                "help": { "text": format!("{}\n\nspv-subgroup explain {}", r.explain(), r.code()) },
                "helpUri": format!("{REPOSITORY}/blob/main/docs/rules.md"),
                "defaultConfiguration": { "level": level(r.severity()) },
                // The audit of the rule table travels with it: the specification sentence the
                // rule enforces (verbatim) and the Vulkan VUID where Vulkan names one.
                "properties": {
                    "family": r.family(),
                    "kind": r.kind().to_string(),
                    "spec": r.spec(),
                    "vuid": r.vuid(),
                },
            })
        })
        .collect();
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "spv-subgroup",
                    "semanticVersion": env!("CARGO_PKG_VERSION"),
                    "informationUri": REPOSITORY,
                    "rules": rules,
                }
            },
            "invocations": [{
                "executionSuccessful": successful,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }]
    })
}
