//! Records the commit the binary is built from, for `--version`: `SPV_SUBGROUP_COMMIT` from the
//! environment when a packager sets it, else `git rev-parse --short=12 HEAD`, else `unknown` (a
//! crate built outside a git checkout). Uncommitted changes are not marked: the script reruns
//! only when HEAD moves, so such a mark would go stale.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SPV_SUBGROUP_COMMIT");
    let commit = std::env::var("SPV_SUBGROUP_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=SPV_SUBGROUP_COMMIT={commit}");
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn git_commit() -> Option<String> {
    let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
    // Rebuild when HEAD moves: the HEAD file and the ref it names (a worktree's are its own).
    if let Some(path) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={path}");
    }
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(path) = git(&["rev-parse", "--git-path", &reference]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    Some(hash)
}
