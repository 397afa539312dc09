//! Tidy checks over the repository's sources (run as an ordinary test, so CI enforces them):
//! every `.rs` file outside `target/` starts with a `//!` doc comment.

use std::path::{Path, PathBuf};

use spv_subgroup_tests::tools::workspace_root;

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
