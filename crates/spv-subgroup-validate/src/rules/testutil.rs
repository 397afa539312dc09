//! The one helper every rule unit test goes through: assemble SPIR-V text with `spirv-as`,
//! validate it, and compare the rule codes found with what the test expects.

use std::process::Command;

use crate::target::Target;
use crate::{validate, Report, ValidateOptions};

/// What a test expects of the findings.
#[derive(Debug)]
pub(crate) enum Expect<'a> {
    /// At least one finding with this code.
    Has(&'a str),
    /// None of these codes.
    Lacks(&'a [&'a str]),
    /// No findings at all.
    Clean,
}

/// Assembles `src` for `env` (e.g. `spv1.3`, `vulkan1.1`) with `spirv-as`.
pub(crate) fn assemble(src: &str, env: &str) -> Vec<u32> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("t.spvasm");
    let out = dir.path().join("t.spv");
    std::fs::write(&path, src).expect("write");
    let o = Command::new("spirv-as")
        .args(["--preserve-numeric-ids", "--target-env", env, "-o"])
        .arg(&out)
        .arg(&path)
        .output()
        .expect("`spirv-as` is not installed: run `cargo xtask install-deps` or `apt-get install spirv-tools`");
    assert!(
        o.status.success(),
        "spirv-as failed: {}\n{src}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bytes = std::fs::read(&out).expect("read");
    crate::words_from_bytes(&bytes).expect("spirv-as output parses")
}

/// Validates `src` with an optional target preset.
pub(crate) fn run(src: &str, env: &str, target: Option<&str>) -> Report {
    let words = assemble(src, env);
    let opts = ValidateOptions {
        target_env: Some(env.to_owned()),
        target: target.map(|t| Target::preset(t).expect("preset")),
    };
    validate(&words, &opts).expect("parses")
}

/// Validates and checks the expectation, printing the findings on failure.
pub(crate) fn check(src: &str, env: &str, expect: Expect<'_>) {
    check_target(src, env, None, expect)
}

/// [`check`] against a target preset.
pub(crate) fn check_target(src: &str, env: &str, target: Option<&str>, expect: Expect<'_>) {
    let report = run(src, env, target);
    let codes: Vec<&str> = report.diagnostics.iter().map(|d| d.rule.code()).collect();
    let ok = match &expect {
        Expect::Has(c) => codes.contains(c),
        Expect::Lacks(cs) => !codes.iter().any(|c| cs.contains(c)),
        Expect::Clean => codes.is_empty(),
    };
    assert!(
        ok,
        "expected {expect:?}, found {codes:?}\n{}\n--- source ---\n{src}",
        crate::render_human(&report, "test.spv")
    );
}

/// A shader module: `OpCapability Shader`, the given capability/extension lines, common types
/// and constants, and `body` inside the entry point's first block (which ends with `OpReturn`).
///
/// Names: `%void %bool %true %false %uint %int %float %v2uint %v4uint %v4int %v4float %v4bool
/// %v3bool %uint_0 %uint_1 %uint_2 (Workgroup) %uint_3 (Subgroup) %int_3 %float_1 %ptr_v4uint
/// %ptr_uint %ballot_c` (a constant uvec4) and `%arr` (an array type).
pub(crate) fn shader(header: &str, body: &str) -> String {
    format!(
        "OpCapability Shader\n{header}\nOpMemoryModel Logical GLSL450\nOpEntryPoint GLCompute %main \"main\"\n\
OpExecutionMode %main LocalSize 32 1 1\n\
%void = OpTypeVoid\n%fn = OpTypeFunction %void\n%bool = OpTypeBool\n%true = OpConstantTrue %bool\n\
%false = OpConstantFalse %bool\n%uint = OpTypeInt 32 0\n%int = OpTypeInt 32 1\n%float = OpTypeFloat 32\n\
%v2uint = OpTypeVector %uint 2\n%v4uint = OpTypeVector %uint 4\n%v4int = OpTypeVector %int 4\n\
%v4float = OpTypeVector %float 4\n%v4bool = OpTypeVector %bool 4\n%v3bool = OpTypeVector %bool 3\n\
%uint_0 = OpConstant %uint 0\n%uint_1 = OpConstant %uint 1\n%uint_2 = OpConstant %uint 2\n\
%uint_3 = OpConstant %uint 3\n%int_3 = OpConstant %int 3\n%float_1 = OpConstant %float 1\n\
%ptr_v4uint = OpTypePointer Function %v4uint\n%ptr_uint = OpTypePointer Function %uint\n\
%ballot_c = OpConstantComposite %v4uint %uint_1 %uint_0 %uint_0 %uint_0\n%arr = OpTypeArray %uint %uint_2\n\
%main = OpFunction %void None %fn\n%entry = OpLabel\n{body}\nOpReturn\nOpFunctionEnd\n"
    )
}

/// Header lines enabling the vote extension.
pub(crate) const VOTE: &str = "OpCapability SubgroupVoteKHR\nOpExtension \"SPV_KHR_subgroup_vote\"";
/// Header lines enabling the partitioned extension (NV spelling) and core arithmetic.
pub(crate) const PART: &str =
    "OpCapability GroupNonUniformPartitionedNV\nOpExtension \"SPV_NV_shader_subgroup_partitioned\"";

/// The messages of rule `code` (`SG0704`) in `src` validated (Vulkan 1.1) for `target`.
pub(crate) fn messages(src: &str, target: &str, code: &str) -> Vec<String> {
    run(src, "vulkan1.1", Some(target))
        .diagnostics
        .into_iter()
        .filter(|d| d.rule.code() == code)
        .map(|d| d.message)
        .collect()
}
