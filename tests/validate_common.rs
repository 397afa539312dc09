//! Fixture loading shared by the validator harnesses (`validate_fixtures`, `validate_differential`):
//! reads a fixture's directives, builds its SPIR-V (glslangValidator or spirv-as) and validates it.
//!
//! Directives, in the leading comment lines (`//` for GLSL, `;` for assembly):
//! - `RUN: validate --target-env ENV [--target PRESET]`: how to build and validate it;
//! - `EXPECT: clean` or `EXPECT: SG0101 SG0102 ...`: the codes that must be reported
//!   (`clean`: nothing at all; listed codes: exactly this set of distinct codes).

use std::path::Path;

use spv_subgroup_tests::tools;
use spv_subgroup_validate::{target::Target, validate, Report, ValidateOptions};

/// `fixtures/validate`, found from the package directory cargo gives the test at run time (a
/// compile-time path can point at another checkout when the target directory is shared).
pub fn fixture_root() -> std::path::PathBuf {
    match std::env::var_os("CARGO_MANIFEST_DIR") {
        Some(d) => Path::new(&d).join("../fixtures/validate"),
        None => tools::workspace_root().join("fixtures/validate"),
    }
}

/// A loaded fixture.
#[allow(dead_code)]
pub struct Fixture {
    /// Path relative to `fixtures/validate`.
    pub name: String,
    /// Environment to build and validate with.
    pub env: String,
    /// Target preset, if any.
    pub target: Option<String>,
    /// Expected distinct codes (empty: clean).
    pub expect: Vec<String>,
    /// The built module.
    pub words: Vec<u32>,
}

/// Reads the directives and builds the module.
pub fn load(path: &Path) -> Fixture {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut env = None;
    let mut target = None;
    let mut expect = None;
    for line in text.lines() {
        let l = line.trim_start_matches(['/', ';', ' ']);
        if let Some(run) = l.strip_prefix("RUN:") {
            let args: Vec<&str> = run.split_whitespace().collect();
            assert_eq!(
                args.first(),
                Some(&"validate"),
                "{}: RUN must start with `validate`",
                path.display()
            );
            for w in args.windows(2) {
                match w[0] {
                    "--target-env" => env = Some(w[1].to_owned()),
                    "--target" => target = Some(w[1].to_owned()),
                    _ => {}
                }
            }
        } else if let Some(e) = l.strip_prefix("EXPECT:") {
            let e = e.trim();
            expect = Some(if e == "clean" {
                vec![]
            } else {
                e.split_whitespace().map(str::to_owned).collect()
            });
        }
    }
    let env = env.unwrap_or_else(|| {
        panic!(
            "{}: no `RUN: validate --target-env ENV` line",
            path.display()
        )
    });
    let expect = expect.unwrap_or_else(|| panic!("{}: no `EXPECT:` line", path.display()));
    let words = build(path, &text, &env);
    let name = match (path.parent().and_then(|p| p.file_name()), path.file_name()) {
        (Some(dir), Some(file)) => format!("{}/{}", dir.to_string_lossy(), file.to_string_lossy()),
        _ => path.display().to_string(),
    };
    Fixture {
        name,
        env,
        target,
        expect,
        words,
    }
}

/// Compiles GLSL or assembles `.spvasm`.
pub fn build(path: &Path, text: &str, env: &str) -> Vec<u32> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("spvasm") => tools::assemble(text, env)
            .unwrap_or_else(|e| panic!("{}: spirv-as: {e}", path.display())),
        _ => tools::compile_glsl(path, env)
            .unwrap_or_else(|e| panic!("{}: glslangValidator: {e}", path.display())),
    }
}

/// Validates a fixture as its RUN line says.
pub fn run(f: &Fixture) -> Report {
    let mut opts = ValidateOptions::default().with_target_env(f.env.clone());
    opts.target = f
        .target
        .as_deref()
        .map(|t| Target::preset(t).unwrap_or_else(|| panic!("{}: no preset {t}", f.name)));
    validate(&f.words, &opts).unwrap_or_else(|e| panic!("{}: parse error {e}", f.name))
}

/// The distinct codes of a report, sorted.
#[allow(dead_code)]
pub fn codes(r: &Report) -> Vec<String> {
    let mut c: Vec<String> = r
        .diagnostics
        .iter()
        .map(|d| d.rule.code().to_owned())
        .collect();
    c.sort();
    c.dedup();
    c
}

/// Every fixture path under `fixtures/validate`, sorted.
#[allow(dead_code)]
pub fn all_paths() -> Vec<std::path::PathBuf> {
    let root = fixture_root();
    let mut out = Vec::new();
    for sub in ["glsl", "spvasm"] {
        let Ok(rd) = std::fs::read_dir(root.join(sub)) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x != "md") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Removes every `OpExtension` whose string is `name` from a module.
#[allow(dead_code)]
pub fn strip_extension(words: &[u32], name: &str) -> Vec<u32> {
    let mut out = words[..5].to_vec();
    let mut pos = 5;
    while pos < words.len() {
        let wc = (words[pos] >> 16) as usize;
        let inst = &words[pos..pos + wc];
        let is_it = words[pos] & 0xffff == 10 && {
            let bytes: Vec<u8> = inst[1..]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .take_while(|b| *b != 0)
                .collect();
            bytes == name.as_bytes()
        };
        if !is_it {
            out.extend_from_slice(inst);
        }
        pos += wc;
    }
    out
}
