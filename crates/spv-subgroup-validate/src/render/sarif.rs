//! The SARIF 2.1.0 log (`validate --format sarif`), for CI viewers such as GitHub code scanning.
//!
//! The rules come from the rule table (code, name, one-line doc, `explain` text as help); each
//! finding is a result at its shader source line where the module has line information, else
//! at its instruction (the instruction's number as the line, its bytes as `byteOffset` = word
//! offset × 4, the disassembly as the snippet); see [`results`]. A module that could not be read or is not SPIR-V is a
//! tool execution notification (SARIF results need a rule). Layout documented in `docs/cli.md`.
//!
//! A log is built in parts, so one log covers any number of modules: a [`Locator`] turns paths
//! into artifact locations, [`results`] gives one module's findings, [`notification`] one
//! module that could not be checked, and [`log`] puts them together under the caller's
//! [`Tool`]. What the parts need of the world (the working directory, the tool's name and
//! version) is given to them: nothing here reads the environment or touches a file.

use serde_json::{json, Value};

use crate::diag::Report;
use crate::rule_table::Severity;
use crate::rules::Rule;

/// The schema URI the log names (the OASIS errata01 schema, committed as `fixtures/sarif/`).
pub const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

/// The program a log names as its driver (`runs[0].tool.driver`): the caller's, which the
/// validator cannot know (a command line, a library's C interface, a Vulkan layer).
#[derive(Clone, Copy, Debug)]
pub struct Tool<'a> {
    /// `name`: the program's name.
    pub name: &'a str,
    /// `semanticVersion`: its version.
    pub version: &'a str,
    /// `informationUri`: its home.
    pub information_uri: &'a str,
    /// Every rule's `helpUri`: the page documenting the rules (`docs/rules.md`, generated from
    /// the rule table).
    pub rules_uri: &'a str,
}

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
    /// A locator for paths relative to `cwd` (the directory relative paths are taken from: the
    /// working directory), with [`SRCROOT`] at `root` (`--sarif-root`, or the working
    /// directory); both absolute.
    pub fn new(cwd: std::path::PathBuf, root: std::path::PathBuf) -> Locator {
        Locator { cwd, root }
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
fn source_path(src: &crate::SourceLocation) -> std::path::PathBuf {
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

/// The results of one module. `inst_words[i]` is the word count of finding `i`'s instruction
/// ([`instruction_words`]); `module` is the module's artifact location ([`Locator::artifact`]).
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

/// The word count of each finding's instruction in `words` (the module `report` is about), as
/// [`results`] takes them: 1 where the offset is past the module.
pub fn instruction_words(report: &Report, words: &[u32]) -> Vec<u32> {
    report
        .diagnostics
        .iter()
        .map(|d| {
            words
                .get(d.location.word_offset)
                .map_or(1, |w| (w >> 16).max(1))
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

/// The whole log: `tool`'s run, every rule of the table, the `results` and `notifications`
/// (of any number of modules), `successful` as the run's `executionSuccessful`.
pub fn log(
    tool: &Tool<'_>,
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
                "helpUri": tool.rules_uri,
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
                    "name": tool.name,
                    "semanticVersion": tool.version,
                    "informationUri": tool.information_uri,
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

#[cfg(test)]
mod tests {
    //! The parts of a log on a made-up report: where each finding lands, its fingerprint, and
    //! the caller's tool and paths in the log (the CLI's tests check whole logs on real modules
    //! against the SARIF schema).
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::diag::{Diagnostic, Location, SourceLocation};

    const TOOL: Tool<'static> = Tool {
        name: "a-tool",
        version: "9.8.7",
        information_uri: "https://example.org/a-tool",
        rules_uri: "https://example.org/a-tool/rules",
    };

    fn finding(message: &str, word_offset: usize, source: Option<SourceLocation>) -> Diagnostic {
        let mut d = Diagnostic::new(Rule::ALL[1], message, Location::default());
        d.location.word_offset = word_offset;
        d.location.inst_index = word_offset.saturating_sub(5);
        d.disassembly = Some("%7 = OpFoo".to_owned());
        d.source = source;
        d
    }

    #[test]
    fn a_log_places_each_finding_and_names_the_callers_tool() {
        // Working in /repo/build, the log's root at /repo.
        let locator = Locator::new(PathBuf::from("/repo/build"), PathBuf::from("/repo"));
        let artifact = |p: &str| locator.artifact(Some(Path::new(p)));
        let rel = |uri: &str| json!({ "uri": uri, "uriBaseId": SRCROOT });
        assert_eq!(artifact("a b#.spv"), rel("build/a%20b%23.spv"));
        assert_eq!(artifact("./../src/./x.comp"), rel("src/x.comp"));
        assert_eq!(
            artifact("/elsewhere/y.spv"),
            json!({ "uri": "file:///elsewhere/y.spv" })
        );
        assert_eq!(locator.artifact(None)["uri"], "stdin");

        // A 4-word instruction at word 5; two equal findings there, one with a source line,
        // one past the module's end.
        let words = [0x0723_0203, 0, 0, 8, 0, (4 << 16) | 17, 1, 2, 3];
        let src = SourceLocation {
            file: "../src/x.comp".to_owned(),
            file_bytes: b"../src/x.comp".to_vec(),
            line: 12,
            column: 5,
        };
        let report = Report::from(vec![
            finding("twice", 5, None),
            finding("twice", 5, None),
            finding("with a line", 5, Some(src)),
            finding("past the end", 100, None),
        ]);
        let inst = instruction_words(&report, &words);
        assert_eq!(inst, [4, 4, 4, 1]);
        let module = artifact("m.spv");
        let results = results(&report, &module, &inst, &locator);
        assert_eq!(results.len(), 4);
        let at = |i: usize| &results[i]["locations"][0]["physicalLocation"];
        assert_eq!(at(0)["artifactLocation"], rel("build/m.spv"));
        assert_eq!(
            at(0)["region"],
            json!({
                "startLine": 1,
                "byteOffset": 20,
                "byteLength": 16,
                "snippet": { "text": "%7 = OpFoo" },
            })
        );
        assert_eq!(results[0]["ruleId"], Rule::ALL[1].code());
        assert_eq!(results[0]["ruleIndex"], 1);
        // Equal findings share a fingerprint but for their count.
        let print = |i: usize| {
            results[i]["partialFingerprints"]["spvSubgroupFinding/v1"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        let (a, b) = (print(0), print(1));
        assert_eq!(a.strip_suffix(":1"), b.strip_suffix(":2"));
        assert_ne!(print(2).split(':').next(), a.split(':').next());
        // The source line is the location, the instruction a related one.
        assert_eq!(at(2)["artifactLocation"], rel("src/x.comp"));
        assert_eq!(
            at(2)["region"],
            json!({ "startLine": 12, "startColumn": 5 })
        );
        let related = &results[2]["relatedLocations"][0]["physicalLocation"];
        assert_eq!(related["artifactLocation"], rel("build/m.spv"));
        assert_eq!(related["region"]["byteOffset"], 20);
        assert_eq!(at(3)["region"]["byteLength"], 4);

        let note = notification(&module, "not SPIR-V", Some(3));
        assert_eq!(
            note["locations"][0]["physicalLocation"]["region"],
            json!({ "startLine": 1, "byteOffset": 12 })
        );
        let log = log(&TOOL, results, vec![note], false, &locator);
        assert_eq!(log["$schema"], SCHEMA);
        let run = &log["runs"][0];
        let driver = &run["tool"]["driver"];
        assert_eq!(driver["name"], TOOL.name);
        assert_eq!(driver["semanticVersion"], TOOL.version);
        assert_eq!(driver["informationUri"], TOOL.information_uri);
        let rules = driver["rules"].as_array().unwrap();
        assert_eq!(rules.len(), Rule::ALL.len());
        assert!(rules.iter().all(|r| r["helpUri"] == TOOL.rules_uri));
        assert_eq!(rules[1]["id"], Rule::ALL[1].code());
        assert_eq!(run["originalUriBaseIds"][SRCROOT]["uri"], "file:///repo/");
        let invocation = &run["invocations"][0];
        assert_eq!(invocation["executionSuccessful"], false);
        assert_eq!(
            invocation["toolExecutionNotifications"][0]["message"]["text"],
            "not SPIR-V"
        );
        assert_eq!(run["results"].as_array().map(Vec::len), Some(4));
    }
}
