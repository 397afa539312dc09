//! The crates are ready for crates.io: `cargo package` succeeds for every crate meant to be
//! published (PUBLISHED), each carries the metadata crates.io shows, and the workspace's
//! `rust-version` is the lowest Rust that builds and tests it with `Cargo.lock`'s dependencies:
//! the highest `rust-version` any resolved dependency declares (`cargo metadata`), and no higher
//! than the compiler running this test. (Only one toolchain is installed where the tests run, so
//! the floor is read from the dependencies rather than tried with an old compiler.)

use std::process::Command;

use serde_json::Value;
use spv_subgroup_tests::tools;

/// The crates published to crates.io; every other workspace member has `publish = false`.
const PUBLISHED: &[&str] = &[
    "spv-subgroup-validate",
    "spv-subgroup-lower",
    "spv-subgroup-sim",
    "spv-subgroup",
    "spv-subgroup-capi",
];

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.current_dir(tools::workspace_root());
    cmd
}

fn run(cmd: &mut Command) -> String {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {shown}: {e}"));
    assert!(
        out.status.success(),
        "{shown} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("cargo prints UTF-8")
}

/// `cargo metadata` for the host platform, with the lock file as it is.
fn metadata() -> Value {
    let host = run(Command::new("rustc").arg("-vV"));
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host");
    let text = run(cargo().args([
        "metadata",
        "--format-version",
        "1",
        "--locked",
        "--filter-platform",
        host,
    ]));
    serde_json::from_str(&text).expect("cargo metadata prints JSON")
}

/// `1.87` or `1.87.0` as (1, 87, 0).
fn version(text: &str) -> (u32, u32, u32) {
    let mut parts = text.split(['.', '-', ' ']).map(|p| {
        p.parse::<u32>()
            .unwrap_or_else(|_| panic!("version {text}"))
    });
    let major = parts.next().unwrap_or(0);
    (major, parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn rust_version_is_the_highest_any_dependency_needs_and_the_compiler_meets_it() {
    let meta = metadata();
    let members: Vec<&str> = meta["workspace_members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| m.as_str().expect("an id"))
        .collect();
    let packages = meta["packages"].as_array().expect("packages");
    let mut workspace = None;
    let mut needed = ((0, 0, 0), String::new());
    for p in packages {
        let name = p["name"].as_str().unwrap_or("?");
        let rv = p["rust_version"].as_str();
        if members.contains(&p["id"].as_str().unwrap_or("")) {
            if PUBLISHED.contains(&name) {
                let rv = rv.unwrap_or_else(|| panic!("{name} declares no rust-version"));
                match &workspace {
                    None => workspace = Some(rv.to_owned()),
                    Some(w) => assert_eq!(w, rv, "{name}'s rust-version differs"),
                }
            }
        } else if let Some(rv) = rv {
            if version(rv) > needed.0 {
                needed = (version(rv), format!("{name} {} ({rv})", p["version"]));
            }
        }
    }
    let workspace = workspace.expect("the published crates are workspace members");
    assert!(
        needed.0 > (1, 0, 0),
        "no dependency declares a rust-version: the metadata was not read"
    );
    assert_eq!(
        version(&workspace),
        needed.0,
        "the workspace's rust-version {workspace} is not the highest a dependency needs: {} \
         (set [workspace.package] rust-version to it)",
        needed.1
    );
    let rustc = run(Command::new("rustc").arg("--version"));
    let current = version(rustc.split_whitespace().nth(1).expect("rustc X.Y.Z"));
    assert!(
        current >= version(&workspace),
        "{} is older than the workspace's rust-version {workspace}",
        rustc.trim()
    );
}

#[test]
fn published_crates_carry_the_metadata_crates_io_shows() {
    let meta = metadata();
    for p in meta["packages"].as_array().expect("packages") {
        let name = p["name"].as_str().unwrap_or("?");
        if !PUBLISHED.contains(&name) {
            continue;
        }
        for field in [
            "description",
            "license",
            "repository",
            "documentation",
            "readme",
        ] {
            assert!(
                p[field].as_str().is_some_and(|v| !v.is_empty()),
                "{name} has no {field}"
            );
        }
        for field in ["keywords", "categories"] {
            let n = p[field].as_array().map_or(0, Vec::len);
            assert!(
                (1..=5).contains(&n),
                "{name} has {n} {field} (crates.io takes 1 to 5)"
            );
        }
        assert!(
            p["publish"].is_null(),
            "{name} is published but says publish = {}",
            p["publish"]
        );
    }
}

/// `cargo package` of the published crates, into a temporary target directory (so it never
/// waits on the build running this test). `--no-verify`: verifying builds every packaged crate
/// again from its `.crate` file, about 4 minutes on the 2-core development machine (measured
/// once: `cargo package` of the five crates with verification succeeded, 4 min 3 s wall, 1 min
/// user); without it, cargo still checks each manifest (path dependencies have versions,
/// metadata), resolves each crate's dependencies as crates.io will (the workspace's crates from a
/// local overlay of the ones just packaged), and builds the file list. What verification would
/// add, a package missing a file its build reads, is checked below from the file lists.
#[test]
fn the_published_crates_package() {
    let target = tempfile::tempdir().unwrap();
    let mut cmd = cargo();
    cmd.args(["package", "--no-verify", "--locked", "--allow-dirty"])
        .arg("--target-dir")
        .arg(target.path());
    for name in PUBLISHED {
        cmd.args(["-p", name]);
    }
    run(&mut cmd);
    let packages = target.path().join("package");
    for name in PUBLISHED {
        let version = env!("CARGO_PKG_VERSION");
        let krate = packages.join(format!("{name}-{version}.crate"));
        assert!(krate.is_file(), "{} was not written", krate.display());
        // Every file a packaged source's build includes by a relative path must be in the package.
        let list = run(cargo()
            .args(["package", "--list", "--allow-dirty", "-p", name])
            .arg("--target-dir")
            .arg(target.path()));
        let files: Vec<&str> = list.lines().collect();
        for source in files.iter().filter(|f| f.ends_with(".rs")) {
            let dir = tools::workspace_root().join(crate_dir(name));
            let text = std::fs::read_to_string(dir.join(source)).unwrap_or_default();
            // Unit tests (a file's `#[cfg(test)]` module, at its end by the project's style)
            // may read the workspace's fixtures: they are not built from the package.
            let built = text.split("\n#[cfg(test)]").next().unwrap_or("");
            for included in included_paths(built) {
                let path = std::path::Path::new(source)
                    .parent()
                    .unwrap_or(std::path::Path::new(""))
                    .join(&included);
                let normal = normalize(&path);
                assert!(
                    files.contains(&normal.as_str()),
                    "{name}: {source} includes {included}, which is not in the package ({normal})"
                );
            }
        }
    }
}

fn crate_dir(name: &str) -> String {
    format!("crates/{name}")
}

/// The paths of `include_str!("...")`, `include_bytes!("...")` and `#[path = "..."]` in `text`.
fn included_paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for marker in ["include_str!(\"", "include_bytes!(\"", "#[path = \""] {
        let mut rest = text;
        while let Some(at) = rest.find(marker) {
            rest = &rest[at + marker.len()..];
            if let Some(end) = rest.find('"') {
                found.push(rest[..end].to_owned());
            }
        }
    }
    found
}

/// `a/b/../c` as `a/c`, with `/` separators.
fn normalize(path: &std::path::Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}
