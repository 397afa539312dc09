//! `validate --format sarif`: one SARIF 2.1.0 log for the run, for CI viewers such as GitHub code scanning.
//!
//! The rules come from the rule table (code, name, one-line doc, `explain` text as help); each
//! finding is a result at its shader source line where the module has line information, else
//! at its instruction (the instruction's number as the line, its bytes as `byteOffset` = word
//! offset × 4, the disassembly as the snippet); see [`results`]. A module that could not be read or is not SPIR-V is a
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

/// The base the log's relative URIs are against: `%SRCROOT%`, the `--sarif-root` directory or
/// the working directory, given in the log's `originalUriBaseIds` (what GitHub code scanning
/// maps to the repository's root).
pub const SRCROOT: &str = "%SRCROOT%";

/// Turns paths into artifact locations: relative to the root where they lie below it (with
/// [`SRCROOT`] as their base), else absolute `file://` URIs. Relative paths (the inputs as
/// given, the source file names compilers record) are taken from the working directory.
#[derive(Debug)]
pub struct Locator {
    cwd: std::path::PathBuf,
    root: std::path::PathBuf,
}

impl Locator {
    /// A locator for `--sarif-root` (`None`: the working directory).
    pub fn new(root: Option<&std::path::Path>) -> anyhow::Result<Locator> {
        let cwd = std::env::current_dir()?;
        let root = match root {
            Some(r) => std::path::absolute(r)?,
            None => cwd.clone(),
        };
        Ok(Locator { cwd, root })
    }

    /// The artifact location of an input (`None`: stdin, named `stdin`, with a description).
    pub fn artifact(&self, path: Option<&std::path::Path>) -> Value {
        let Some(p) = path else {
            return json!({
                "uri": "stdin",
                "uriBaseId": SRCROOT,
                "description": { "text": "standard input (no file)" },
            });
        };
        let abs = self.cwd.join(p);
        let abs = normalize(&abs);
        match abs.strip_prefix(&self.root) {
            Ok(rel) => json!({ "uri": encode(rel), "uriBaseId": SRCROOT }),
            Err(_) => json!({ "uri": format!("file://{}", encode(&abs)) }),
        }
    }

    /// `originalUriBaseIds` of the log: where [`SRCROOT`] is.
    pub fn base_ids(&self) -> Value {
        let mut uri = format!("file://{}", encode(&self.root));
        if !uri.ends_with('/') {
            uri.push('/');
        }
        json!({ SRCROOT: { "uri": uri } })
    }
}

/// `path` without `.` and with `..` applied, lexically (a link is not followed: the URI names
/// the path as given).
fn normalize(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let mut out = std::path::PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path of a finding's source file: its name's bytes as the module records them (on Unix,
/// where a path is bytes), so that a name that is not UTF-8 keeps them in the URI.
fn source_path(src: &spv_subgroup_validate::SourceLocation) -> std::path::PathBuf {
    #[cfg(unix)]
    if !src.file_bytes.is_empty() {
        use std::os::unix::ffi::OsStrExt;
        return std::ffi::OsStr::from_bytes(&src.file_bytes).into();
    }
    std::path::PathBuf::from(&src.file)
}

/// A path as a URI path, percent-encoded byte by byte (so non-UTF-8 names survive).
fn encode(p: &std::path::Path) -> String {
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
    uri
}

/// The results of one module. `inst_words[i]` is the word count of finding `i`'s instruction.
///
/// A finding with a source line is placed there (the source file's artifact, `startLine` and
/// `startColumn`), with the instruction's bytes in the module as a related location; one
/// without is placed in the module, at the instruction's number (from 1 after the header, the
/// count spirv-val's messages use) as its line and at its bytes. Every result has a
/// `partialFingerprints` entry that stays the same while the finding does (rule, file,
/// message and how many equal findings came before it), so a viewer can follow it across runs.
pub fn results(
    report: &Report,
    module: &Value,
    inst_words: &[u32],
    locator: &Locator,
) -> Vec<Value> {
    let mut seen: std::collections::HashMap<u64, u32> = std::collections::HashMap::new();
    report
        .diagnostics
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let loc = &d.location;
            let mut bytes = json!({
                "byteOffset": loc.word_offset * 4,
                "byteLength": inst_words.get(i).copied().unwrap_or(1) * 4,
            });
            if let Some(dis) = &d.disassembly {
                bytes["snippet"] = json!({ "text": dis });
            }
            let (primary, related) = match &d.source {
                Some(src) => {
                    let mut region = json!({ "startLine": src.line.max(1) });
                    if src.column > 0 {
                        region["startColumn"] = json!(src.column);
                    }
                    let artifact = locator.artifact(Some(&source_path(src)));
                    let related = json!([{
                        "id": 1,
                        "message": { "text": "the instruction in the module" },
                        "physicalLocation": { "artifactLocation": module, "region": bytes },
                    }]);
                    (
                        json!({ "artifactLocation": artifact, "region": region }),
                        related,
                    )
                }
                None => {
                    let mut region = bytes;
                    region["startLine"] = json!(loc.inst_index + 1);
                    (
                        json!({ "artifactLocation": module, "region": region }),
                        Value::Null,
                    )
                }
            };
            let fingerprint = {
                let file = primary["artifactLocation"]["uri"].as_str().unwrap_or("");
                let key = fnv1a(&[d.rule.code(), file, &d.message]);
                let n = seen.entry(key).or_insert(0);
                *n += 1;
                format!("{key:016x}:{n}")
            };
            let mut result = json!({
                "ruleId": d.rule.code(),
                "ruleIndex": Rule::ALL.iter().position(|r| *r == d.rule),
                "level": level(d.severity),
                "message": { "text": d.message },
                "locations": [{ "physicalLocation": primary }],
                "partialFingerprints": { "spvSubgroupFinding/v1": fingerprint },
                "properties": {
                    "name": d.rule.name(),
                    "wordOffset": loc.word_offset,
                    "instructionIndex": loc.inst_index,
                    "resultId": loc.result_id,
                    "function": loc.function,
                    "notes": d.notes,
                },
            });
            if !related.is_null() {
                result["relatedLocations"] = related;
            }
            result
        })
        .collect()
}

/// FNV-1a over the parts (each followed by a 0 byte): small, stable across releases and
/// platforms, which is all a fingerprint needs.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
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
pub fn log(
    results: Vec<Value>,
    notifications: Vec<Value>,
    successful: bool,
    locator: &Locator,
) -> Value {
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
            "originalUriBaseIds": locator.base_ids(),
            "invocations": [{
                "executionSuccessful": successful,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }]
    })
}
