//! Tidy checks over the repository's sources (run as an ordinary test, so CI enforces them):
//! every `.rs` file outside `target/` starts with a `//!` doc comment, and the validator's rule
//! files share helpers only through `rules/common.rs` (issue 9, item 6).

use std::path::{Path, PathBuf};

use spv_subgroup_tests::tools::workspace_root;

/// The workspace's packages and, for each, its dependencies on other members: (name, kind),
/// kind `normal`, `dev` or `build`, from `cargo metadata`.
fn member_dependencies() -> std::collections::BTreeMap<String, Vec<(String, String)>> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let names: Vec<&str> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| names.contains(&d["name"].as_str().unwrap()))
                .map(|d| {
                    let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
                    (d["name"].as_str().unwrap().to_owned(), kind)
                })
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

/// Whether `to` is reached from `from` through normal and build dependencies.
fn depends_on(
    graph: &std::collections::BTreeMap<String, Vec<(String, String)>>,
    from: &str,
    to: &str,
) -> bool {
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![from.to_owned()];
    while let Some(p) = stack.pop() {
        if p == to {
            return true;
        }
        if seen.insert(p.clone()) {
            for (d, kind) in graph.get(&p).into_iter().flatten() {
                if kind != "dev" {
                    stack.push(d.clone());
                }
            }
        }
    }
    false
}

/// A dev-dependency points down: the package a crate's tests use must not itself depend on
/// that crate (else the crate is built twice, once as the dependency of its own test helper,
/// and the two copies' types differ).
#[test]
fn dev_dependencies_point_down() {
    let graph = member_dependencies();
    assert!(
        graph.len() >= 8,
        "the workspace's members: {:?}",
        graph.keys()
    );
    let mut up = Vec::new();
    for (package, deps) in &graph {
        for (dep, kind) in deps {
            if kind == "dev" && depends_on(&graph, dep, package) {
                up.push(format!(
                    "{package} dev-depends on {dep}, which depends on {package}"
                ));
            }
        }
    }
    assert!(
        up.is_empty(),
        "dev-dependencies pointing up:\n{}",
        up.join("\n")
    );
    // The check can fail: a made-up graph where it must.
    let mut fake = graph.clone();
    fake.entry("spv-subgroup-tests".into())
        .or_default()
        .push(("spv-subgroup".into(), "normal".into()));
    assert!(depends_on(&fake, "spv-subgroup-tests", "spv-subgroup"));
}

/// Collects the `.rs` files below `dir`, skipping build output, VCS data and hidden folders.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.expect("directory entry");
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ty = entry.file_type().expect("file type");
        if ty.is_dir() {
            if name == "target" || name.starts_with('.') || name == "bench-out" {
                continue;
            }
            rust_files(&path, out);
        } else if ty.is_file() && name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(root, &mut files);
    assert!(
        files.len() > 5,
        "found only {} .rs files under {}",
        files.len(),
        root.display()
    );
    let bad: Vec<String> = files
        .iter()
        .filter(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            !text.trim_start_matches('\u{feff}').starts_with("//!")
        })
        .map(|p| p.strip_prefix(root).unwrap_or(p).display().to_string())
        .collect();
    assert!(
        bad.is_empty(),
        "these files do not start with a `//!` doc comment:\n  {}",
        bad.join("\n  ")
    );
}

/// The rule files of the validator that are not rule families: the dispatcher, the shared
/// helpers and the unit-test helper.
const NOT_RULE_FAMILIES: &[&str] = &["mod", "common", "testutil"];

/// The modules a line of code names after `rules::` or `super::` (`rules::vote::x`,
/// `super::vote`, `rules::{common, vote}`).
fn modules_named(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for prefix in ["rules::", "super::"] {
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            match rest.strip_prefix('{') {
                Some(inner) => {
                    let list = inner.split('}').next().unwrap_or("");
                    out.extend(list.split(',').map(ident));
                }
                None => out.push(ident(rest)),
            }
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// Issue 9, item 6: no rule file imports from another rule file; what several families share
/// lives in `rules/common.rs` (names, type predicates) and `module.rs` (the module's index).
/// A path naming a sibling rule file (`rules::vote::`, `super::vote::`) is what is refused.
#[test]
fn no_rule_file_imports_another_rule_file() {
    let dir = workspace_root().join("crates/spv-subgroup-validate/src/rules");
    let mut stems: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".rs").map(str::to_owned)
        })
        .collect();
    stems.sort();
    let families: Vec<&String> = stems
        .iter()
        .filter(|s| !NOT_RULE_FAMILIES.contains(&s.as_str()))
        .collect();
    assert!(
        families.len() >= 8 && stems.iter().any(|s| s == "common"),
        "expected the rule families and common.rs in {}, found {stems:?}",
        dir.display()
    );
    let mut bad = Vec::new();
    for file in &families {
        let text = std::fs::read_to_string(dir.join(format!("{file}.rs"))).expect("readable");
        for line in text.lines() {
            let code = line.split("//").next().unwrap_or("");
            let named = modules_named(code);
            if let Some(other) = named.iter().find(|n| {
                n.as_str() != file.as_str() && families.iter().any(|f| f.as_str() == n.as_str())
            }) {
                bad.push(format!(
                    "rules/{file}.rs names rules/{other}.rs: {}",
                    line.trim()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "rule files importing from other rule files (move the shared part to rules/common.rs):\n  {}",
        bad.join("\n  ")
    );
}
