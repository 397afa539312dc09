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

/// One crate's module graph: every `.rs` file below its `src/` is a module, named by its path
/// (`rules/core.rs` is `rules::core`, `rules/mod.rs` is `rules`, `lib.rs`/`main.rs` the root ``).
struct Crate {
    /// Module path -> the source, with `#[cfg(test)]` items cut out.
    modules: std::collections::BTreeMap<String, String>,
}

impl Crate {
    fn load(src: &Path) -> Crate {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut modules = std::collections::BTreeMap::new();
        for f in files {
            let rel = f.strip_prefix(src).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                parts.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                parts.pop();
            }
            let text = std::fs::read_to_string(&f).unwrap();
            modules.insert(parts.join("::"), without_test_code(&text));
        }
        Crate { modules }
    }

    /// The modules `module` names in its code: every `crate::a::b`, `super::x` and `self::x`
    /// path, use trees expanded, resolved to the longest module prefix. A module's use of its
    /// own submodules (the crate root's of every module, `rules/mod.rs`'s of `rules::vote`) is
    /// its structure, pointing down, and is not counted; everything else is, upward (`super::`)
    /// and sideways alike. So a circle is a set of modules none of which contains the others,
    /// each reaching the next.
    fn uses(&self, module: &str) -> std::collections::BTreeSet<String> {
        let code = &self.modules[module];
        let mut out = std::collections::BTreeSet::new();
        for path in paths_in(code) {
            let mut segs: Vec<String> = Vec::new();
            let mut rest = path.split("::").peekable();
            match rest.next() {
                Some("crate") => {}
                Some("super") => {
                    // `super` of `a::b` (a file `a/b.rs`) is `a`; of the root, nothing.
                    segs = module.split("::").map(str::to_owned).collect();
                    segs.pop();
                    while rest.peek() == Some(&"super") {
                        rest.next();
                        segs.pop();
                    }
                }
                Some("self") => segs = module.split("::").map(str::to_owned).collect(),
                _ => continue,
            }
            segs.retain(|s| !s.is_empty());
            let mut target = segs.join("::");
            for seg in rest {
                let next = if target.is_empty() {
                    seg.to_owned()
                } else {
                    format!("{target}::{seg}")
                };
                if self.modules.contains_key(&next) {
                    target = next;
                } else {
                    break;
                }
            }
            let below = module.is_empty() || target.starts_with(&format!("{module}::"));
            if target != module && !below {
                out.insert(target);
            }
        }
        out
    }

    /// Every strongly connected set of two or more modules (Tarjan's algorithm, iteratively
    /// small enough to be recursive here: a crate has tens of modules).
    fn circles(&self) -> Vec<Vec<String>> {
        let names: Vec<&String> = self.modules.keys().collect();
        let index_of = |n: &str| names.iter().position(|m| *m == n);
        let edges: Vec<Vec<usize>> = names
            .iter()
            .map(|n| self.uses(n).iter().filter_map(|u| index_of(u)).collect())
            .collect();
        struct State {
            index: Vec<Option<usize>>,
            low: Vec<usize>,
            on_stack: Vec<bool>,
            stack: Vec<usize>,
            next: usize,
            found: Vec<Vec<usize>>,
        }
        fn visit(v: usize, edges: &[Vec<usize>], s: &mut State) {
            s.index[v] = Some(s.next);
            s.low[v] = s.next;
            s.next += 1;
            s.stack.push(v);
            s.on_stack[v] = true;
            for &w in &edges[v] {
                match s.index[w] {
                    None => {
                        visit(w, edges, s);
                        s.low[v] = s.low[v].min(s.low[w]);
                    }
                    Some(i) if s.on_stack[w] => s.low[v] = s.low[v].min(i),
                    Some(_) => {}
                }
            }
            if Some(s.low[v]) == s.index[v] {
                let mut set = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack[w] = false;
                    set.push(w);
                    if w == v {
                        break;
                    }
                }
                if set.len() > 1 {
                    s.found.push(set);
                }
            }
        }
        let n = names.len();
        let mut s = State {
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            next: 0,
            found: Vec::new(),
        };
        for v in 0..n {
            if s.index[v].is_none() {
                visit(v, &edges, &mut s);
            }
        }
        s.found
            .into_iter()
            .map(|set| {
                let mut m: Vec<String> = set.into_iter().map(|i| names[i].clone()).collect();
                m.sort();
                m
            })
            .collect()
    }
}

/// `code` without the items under `#[cfg(test)]` (test modules may use the crate's root API,
/// which is not a dependency of the production code): the attribute and the braced item or
/// the `mod x;` line after it.
fn without_test_code(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        let (semi, brace) = (after.find(';'), after.find('{'));
        let end = match (semi, brace) {
            (Some(s), Some(b)) if s < b => s + 1,
            (_, Some(b)) => {
                let mut depth = 0;
                let mut end = after.len();
                for (i, c) in after[b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = b + i + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (Some(s), None) => s + 1,
            (None, None) => after.len(),
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every path starting with `crate::`, `super::` or `self::` in `code`, outside comments, with
/// `use` trees (`crate::a::{b, c::d}`) expanded into one path each.
fn paths_in(code: &str) -> Vec<String> {
    paths_in_with(code, &["crate", "super", "self"])
}

/// Every path in `code` whose first segment is one of `starts` (followed by `::`), not itself
/// part of a longer path, outside comments, with use trees expanded.
fn paths_in_with(code: &str, starts: &[&str]) -> Vec<String> {
    let code: String = code
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = starts
            .iter()
            // Bytes, not `str` slices: `i` steps through bytes and may sit inside a character
            // (a `−` in a string); a path starts at an ASCII byte, so `code[i..]` below is whole.
            .find(|p| {
                bytes[i..].starts_with(p.as_bytes()) && bytes[i + p.len()..].starts_with(b"::")
            });
        let boundary = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        if let (Some(_), true) = (starts, boundary) {
            let (paths, len) = use_tree(&code[i..]);
            out.extend(paths);
            i += len.max(1);
        } else {
            i += 1;
        }
    }
    out
}

/// The paths of one use tree at the start of `text`, and how many bytes it spans.
fn use_tree(text: &str) -> (Vec<String>, usize) {
    let mut prefix = String::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_alphanumeric() || c == b'_' || c == b':' {
            prefix.push(c as char);
            i += 1;
        } else if c == b'{' && prefix.ends_with("::") {
            // A group: each member, split at top-level commas, is a tree of its own.
            let mut depth = 0;
            let mut start = i + 1;
            let mut out = Vec::new();
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'{' => depth += 1,
                    b'}' | b',' if depth == 1 => {
                        let member = text[start..j].trim();
                        if !member.is_empty() {
                            let (sub, _) = use_tree(member);
                            out.extend(sub.into_iter().map(|s| format!("{prefix}{s}")));
                            if sub_is_plain(member) {
                                out.push(format!("{prefix}{member}"));
                            }
                        }
                        start = j + 1;
                        if b[j] == b'}' {
                            return (out, j + 1);
                        }
                    }
                    b'}' => depth -= 1,
                    _ => {}
                }
                j += 1;
            }
            return (out, j);
        } else {
            break;
        }
    }
    (vec![prefix.trim_end_matches("::").to_owned()], i)
}

/// Whether a use-group member is a plain name (`b`, `c::d`, `self`) rather than a tree.
fn sub_is_plain(member: &str) -> bool {
    !member.contains('{')
        && member.split(" as ").next().is_some_and(|m| {
            m.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
        })
}

/// The workspace's crates: each `src/` folder of a package (the `tests` package's is `support/`).
fn crate_sources() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.extend(["xtask/src", "fuzz/src", "tests/support"].map(|d| root.join(d)));
    dirs.sort();
    dirs
}

/// The path reader steps over characters of more than one byte (it panicked on a `−` in a
/// string before).
#[test]
fn paths_are_read_around_non_ascii_text() {
    let code = "let minus = \"\u{2212}\"; use crate::emit::{Code, Emitter};\n\
                let x = super::\u{e9}t\u{e9};";
    let paths = paths_in_with(code, &["crate", "super"]);
    for want in ["crate::emit::Code", "crate::emit::Emitter"] {
        assert!(paths.iter().any(|p| p == want), "{want} in {paths:?}");
    }
}

#[test]
fn no_import_circle_inside_any_crate() {
    let mut report = String::new();
    let mut modules = 0;
    for src in crate_sources() {
        let krate = Crate::load(&src);
        modules += krate.modules.len();
        for circle in krate.circles() {
            report.push_str(&format!("{}: {}\n", src.display(), circle.join(" <-> ")));
            for m in &circle {
                let uses: Vec<String> = krate
                    .uses(m)
                    .into_iter()
                    .filter(|u| circle.contains(u))
                    .collect();
                report.push_str(&format!("    {m} uses {}\n", uses.join(", ")));
            }
        }
    }
    assert!(
        modules > 100,
        "only {modules} modules found: the walk is broken"
    );
    assert!(
        report.is_empty(),
        "import circles (production code):\n{report}"
    );
}

#[test]
fn the_checker_finds_a_circle_and_resolves_use_trees() {
    let mut modules = std::collections::BTreeMap::new();
    modules.insert(String::new(), "mod a; mod b; use crate::a::y;".to_owned());
    modules.insert("a".to_owned(), "use crate::{b::{f, g as h}, c};".to_owned());
    modules.insert("b".to_owned(), "fn x() { super::a::y(); }".to_owned());
    modules.insert(
        "c".to_owned(),
        "// use crate::a;\n#[cfg(test)]\nmod t { use crate::a; }".to_owned(),
    );
    let k = Crate {
        modules: modules
            .into_iter()
            .map(|(k, v)| (k, without_test_code(&v)))
            .collect(),
    };
    assert_eq!(k.uses("a").into_iter().collect::<Vec<_>>(), ["b", "c"]);
    assert!(
        k.uses("").is_empty(),
        "the root's use of its modules points down"
    );
    assert_eq!(k.circles(), vec![vec!["a".to_owned(), "b".to_owned()]]);
    assert!(
        k.uses("c").is_empty(),
        "comments and test code are not uses"
    );
}

/// `docs/ARCHITECTURE.md` names every source file: each `.rs` file of the repository is
/// named (its path inside its package, in backticks) in the section of its package
/// (`### \`crates/NAME\``, `### \`tests\``, `### \`fuzz\``, `### \`xtask\``).
#[test]
fn architecture_names_every_source_file() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let section = |package: &str| -> Option<String> {
        let head = format!("### `{package}`\n");
        let start = doc.find(&head)? + head.len();
        let end = doc[start..].find("\n#").map_or(doc.len(), |e| start + e);
        Some(doc[start..end].to_owned())
    };
    let mut files = Vec::new();
    for dir in ["crates", "tests", "fuzz", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut missing = Vec::new();
    let mut named = 0;
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // The package: `crates/NAME`, or the top folder of the three others.
        let parts: Vec<&str> = rel.split('/').collect();
        let (package, inside) = if parts[0] == "crates" {
            (format!("crates/{}", parts[1]), parts[2..].join("/"))
        } else {
            (parts[0].to_owned(), parts[1..].join("/"))
        };
        match section(&package) {
            Some(text) if text.contains(&format!("`{inside}`")) => named += 1,
            Some(_) => missing.push(format!("{rel} (not in the `{package}` section)")),
            None => missing.push(format!("{rel} (no section `### \\`{package}\\``)")),
        }
    }
    assert!(
        named > 150,
        "only {named} files checked: the walk is broken"
    );
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not name:\n{}",
        missing.join("\n")
    );
}
