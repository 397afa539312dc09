//! SPIRV-Tools' own validator tests as our corpus (issue 9, item 1): the parameterised grid of
//! `test/val/val_non_uniform_test.cpp` (opcode x result type x execution scope x operands, for
//! Vulkan 1.1 and universal SPIR-V 1.3) rebuilt from its suites as data, with our own module
//! around each instruction, and judged by our validator.
//!
//! Each suite states what SPIRV-Tools (HEAD of August 2026, 47c74f4) expects: a `Good` suite is valid exactly when
//! the execution scope is Subgroup, a `Bad` suite is invalid. We must give the same verdict and
//! report it under the rule that owns the check (`code`); the cases where we differ on purpose,
//! with the spec sentence that decides, are in [`DIFFERENCES`] (none today). The cases outside
//! this grid (barriers, capabilities, extensions, the single `TEST_F` cases) have fixtures in
//! `fixtures/validate/`; docs/spirv-val-corpus.md maps every case in scope to its fixture or row.
//! Nothing here is copied: the suites are restated as data and the modules are ours.

use std::collections::BTreeMap;

use spv_subgroup_tests::tools;
use spv_subgroup_validate::{validate, Severity, ValidateOptions};

/// Capabilities, types and constants shared by every case (our own module text).
const HEADER: &str = "OpCapability Shader
OpCapability GroupNonUniform
OpCapability GroupNonUniformVote
OpCapability GroupNonUniformBallot
OpCapability GroupNonUniformShuffle
OpCapability GroupNonUniformShuffleRelative
OpCapability GroupNonUniformArithmetic
OpCapability GroupNonUniformClustered
OpCapability GroupNonUniformQuad
OpCapability GroupNonUniformPartitionedNV
OpExtension \"SPV_NV_shader_subgroup_partitioned\"
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main \"main\"
OpExecutionMode %main LocalSize 32 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%int = OpTypeInt 32 1
%float = OpTypeFloat 32
%v4uint = OpTypeVector %uint 4
%v3uint = OpTypeVector %uint 3
%v2bool = OpTypeVector %bool 2
%v4float = OpTypeVector %float 4
%struct = OpTypeStruct %int
%v4int = OpTypeVector %int 4
%true = OpConstantTrue %bool
%false = OpConstantFalse %bool
%uint_0 = OpConstant %uint 0
%int_0 = OpConstant %int 0
%float_0 = OpConstant %float 0
%v4uint_0 = OpConstantNull %v4uint
%v3uint_0 = OpConstantNull %v3uint
%v2bool_0 = OpConstantNull %v2bool
%v4float_0 = OpConstantNull %v4float
%struct_0 = OpConstantNull %struct
%v4int_0 = OpConstantNull %v4int
%uint_undef = OpUndef %uint
%cross_device = OpConstant %uint 0
%device = OpConstant %uint 1
%workgroup = OpConstant %uint 2
%subgroup = OpConstant %uint 3
%invocation = OpConstant %uint 4
%main = OpFunction %void None %fn
%entry = OpLabel
";

/// A value of each type, for the `V` placeholder (the operand that must have the result's type).
fn value_of(ty: &str) -> &'static str {
    match ty {
        "%bool" => "%true",
        "%uint" => "%uint_0",
        "%int" => "%int_0",
        "%float" => "%float_0",
        "%v4uint" => "%v4uint_0",
        "%v3uint" => "%v3uint_0",
        "%v2bool" => "%v2bool_0",
        "%v4float" => "%v4float_0",
        "%struct" => "%struct_0",
        "%v4int" => "%v4int_0",
        // %void has no value; the case is about the result type, any operand will do.
        _ => "%uint_0",
    }
}

const SCOPES: &[&str] = &[
    "%cross_device",
    "%device",
    "%workgroup",
    "%subgroup",
    "%invocation",
];
const SUBGROUP: &[&str] = &["%subgroup"];
/// Every type but bool, the usual "bad result type" list.
const NOT_BOOL: &[&str] = &[
    "%void", "%uint", "%int", "%float", "%v4uint", "%v3uint", "%v2bool", "%v4float", "%struct",
];
const ANY_VALUE: &[&str] = &[
    "%uint_0",
    "%int_0",
    "%float_0",
    "%v4uint_0",
    "%v3uint_0",
    "%v2bool_0",
    "%v4float_0",
    "%struct_0",
    "%v4int_0",
];
const NOT_UNSIGNED: &[&str] = &[
    "%true",
    "%false",
    "%int_0",
    "%float_0",
    "%v4uint_0",
    "%v3uint_0",
    "%v2bool_0",
    "%v4float_0",
    "%struct_0",
    "%v4int_0",
];
const NOT_BALLOT: &[&str] = &[
    "%true",
    "%false",
    "%uint_0",
    "%int_0",
    "%float_0",
    "%v3uint_0",
    "%v2bool_0",
    "%v4float_0",
    "%struct_0",
    "%v4int_0",
];
const INT7: &[&str] = &[
    "OpGroupNonUniformIAdd",
    "OpGroupNonUniformIMul",
    "OpGroupNonUniformSMin",
    "OpGroupNonUniformSMax",
    "OpGroupNonUniformBitwiseAnd",
    "OpGroupNonUniformBitwiseOr",
    "OpGroupNonUniformBitwiseXor",
];
const INT9: &[&str] = &[
    "OpGroupNonUniformIAdd",
    "OpGroupNonUniformIMul",
    "OpGroupNonUniformSMin",
    "OpGroupNonUniformUMin",
    "OpGroupNonUniformSMax",
    "OpGroupNonUniformUMax",
    "OpGroupNonUniformBitwiseAnd",
    "OpGroupNonUniformBitwiseOr",
    "OpGroupNonUniformBitwiseXor",
];
const UNSIGNED2: &[&str] = &["OpGroupNonUniformUMin", "OpGroupNonUniformUMax"];
const FLOAT4: &[&str] = &[
    "OpGroupNonUniformFAdd",
    "OpGroupNonUniformFMul",
    "OpGroupNonUniformFMin",
    "OpGroupNonUniformFMax",
];
const LOGICAL3: &[&str] = &[
    "OpGroupNonUniformLogicalAnd",
    "OpGroupNonUniformLogicalOr",
    "OpGroupNonUniformLogicalXor",
];
const MOVES: &[&str] = &[
    "OpGroupNonUniformBroadcast",
    "OpGroupNonUniformShuffle",
    "OpGroupNonUniformShuffleXor",
    "OpGroupNonUniformShuffleUp",
    "OpGroupNonUniformShuffleDown",
    "OpGroupNonUniformQuadBroadcast",
    "OpGroupNonUniformQuadSwap",
];
const CONST_ID_MOVES: &[&str] = &[
    "OpGroupNonUniformBroadcast",
    "OpGroupNonUniformQuadBroadcast",
    "OpGroupNonUniformQuadSwap",
];
const FIND: &[&str] = &[
    "OpGroupNonUniformBallotFindLSB",
    "OpGroupNonUniformBallotFindMSB",
];
/// The four non-partitioned group operations; `V` is the value of the result type.
const GROUP4: &[&str] = &[
    "Reduce V",
    "InclusiveScan V",
    "ExclusiveScan V",
    "ClusteredReduce V %uint_0",
];

/// One suite of the SPIRV-Tools grid: every combination of `ops` x `types` x `scopes` x `args`.
struct Suite {
    /// The suite's name in val_non_uniform_test.cpp (`GroupNonUniform<name>`).
    name: &'static str,
    ops: &'static [&'static str],
    types: &'static [&'static str],
    scopes: &'static [&'static str],
    /// Operands after the scope; `V` stands for the value of the result type.
    args: Vec<String>,
    /// `None`: a Good suite (valid when the scope is Subgroup, else SG0602); `Some(code)`: a Bad
    /// suite, reported under `code`.
    bad: Option<&'static str>,
}

fn s(name: &'static str, ops: &'static [&'static str], types: &'static [&'static str]) -> Suite {
    Suite {
        name,
        ops,
        types,
        scopes: SUBGROUP,
        args: vec![String::new()],
        bad: None,
    }
}

impl Suite {
    fn scopes(mut self, scopes: &'static [&'static str]) -> Self {
        self.scopes = scopes;
        self
    }
    fn args(mut self, args: &[&str]) -> Self {
        self.args = args.iter().map(|a| (*a).to_owned()).collect();
        self
    }
    fn args_with(mut self, prefix: &str, values: &[&str], suffix: &str) -> Self {
        self.args = values
            .iter()
            .map(|v| format!("{prefix}{v}{suffix}"))
            .collect();
        self
    }
    fn bad(mut self, code: &'static str) -> Self {
        self.bad = Some(code);
        self
    }
}

fn suites() -> Vec<Suite> {
    let ballot = ["%true", "%false"];
    vec![
        // Scope grids: every instruction with each of the five scopes.
        s("Elect", &["OpGroupNonUniformElect"], &["%bool"]).scopes(SCOPES),
        s(
            "Vote",
            &[
                "OpGroupNonUniformAll",
                "OpGroupNonUniformAny",
                "OpGroupNonUniformAllEqual",
            ],
            &["%bool"],
        )
        .scopes(SCOPES)
        .args(&["%true"]),
        s("Broadcast", &["OpGroupNonUniformBroadcast"], &["%bool"])
            .scopes(SCOPES)
            .args(&["%true %uint_0"]),
        s(
            "BroadcastFirst",
            &["OpGroupNonUniformBroadcastFirst"],
            &["%bool"],
        )
        .scopes(SCOPES)
        .args(&["%true"]),
        s("Ballot", &["OpGroupNonUniformBallot"], &["%v4uint"])
            .scopes(SCOPES)
            .args(&["%true"]),
        s(
            "InverseBallot",
            &["OpGroupNonUniformInverseBallot"],
            &["%bool"],
        )
        .scopes(SCOPES)
        .args(&["%v4uint_0"]),
        s(
            "BallotBitExtract",
            &["OpGroupNonUniformBallotBitExtract"],
            &["%bool"],
        )
        .scopes(SCOPES)
        .args(&["%v4uint_0 %uint_0"]),
        s(
            "BallotBitCount",
            &["OpGroupNonUniformBallotBitCount"],
            &["%uint"],
        )
        .scopes(SCOPES)
        .args(&["Reduce %v4uint_0"]),
        s("BallotFind", FIND, &["%uint"])
            .scopes(SCOPES)
            .args(&["%v4uint_0"]),
        s("Shuffle", &MOVES[1..5], &["%uint"])
            .scopes(SCOPES)
            .args(&["%uint_0 %uint_0"]),
        s("IntegerArithmetic", INT9, &["%uint"])
            .scopes(SCOPES)
            .args(&["Reduce %uint_0"]),
        s("FloatArithmetic", FLOAT4, &["%float"])
            .scopes(SCOPES)
            .args(&["Reduce %float_0"]),
        s("LogicalArithmetic", LOGICAL3, &["%bool"])
            .scopes(SCOPES)
            .args(&["Reduce %true"]),
        s("Quad", &MOVES[5..], &["%uint"])
            .scopes(SCOPES)
            .args(&["%uint_0 %uint_0"]),
        // Result and operand types.
        s(
            "BallotBitCountBadResultType",
            &["OpGroupNonUniformBallotBitCount"],
            &["%float", "%int"],
        )
        .args(&["Reduce %v4uint_0"])
        .bad("SG0603"),
        s(
            "BallotBitCountBadValue",
            &["OpGroupNonUniformBallotBitCount"],
            &["%uint"],
        )
        .args(&["Reduce %v3uint_0", "Reduce %uint_0", "Reduce %float_0"])
        .bad("SG0603"),
        s("ElectGood", &["OpGroupNonUniformElect"], &["%bool"]),
        s("ElectBadResultType", &["OpGroupNonUniformElect"], NOT_BOOL).bad("SG0603"),
        s(
            "AnyAllGood",
            &["OpGroupNonUniformAny", "OpGroupNonUniformAll"],
            &["%bool"],
        )
        .args(&ballot),
        s(
            "AnyAllBadResultType",
            &["OpGroupNonUniformAny", "OpGroupNonUniformAll"],
            NOT_BOOL,
        )
        .args(&["%true"])
        .bad("SG0603"),
        s(
            "AnyAllBadOperand",
            &["OpGroupNonUniformAny", "OpGroupNonUniformAll"],
            &["%bool"],
        )
        .args(&ANY_VALUE[..8])
        .bad("SG0603"),
        s("AllEqualGood", &["OpGroupNonUniformAllEqual"], &["%bool"]).args(&ballot),
        s(
            "AllEqualBadResultType",
            &["OpGroupNonUniformAllEqual"],
            NOT_BOOL,
        )
        .args(&["%true"])
        .bad("SG0603"),
        s(
            "AllEqualBadOperand",
            &["OpGroupNonUniformAllEqual"],
            &["%bool"],
        )
        .args(&["%struct_0"])
        .bad("SG0603"),
        s(
            "BroadcastGood",
            CONST_ID_MOVES,
            &[
                "%bool", "%uint", "%int", "%float", "%v4uint", "%v3uint", "%v2bool", "%v4float",
                "%v4int",
            ],
        )
        .args(&["V %uint_0"]),
        s(
            "BroadcastShuffleBadResultType",
            MOVES,
            &["%void", "%struct"],
        )
        .args(&["%uint_0 %uint_0"])
        .bad("SG0603"),
        s("BroadcastShuffleBadOperand1", MOVES, &["%bool"])
            .args_with("", ANY_VALUE, " %uint_0")
            .bad("SG0603"),
        s("BroadcastShuffleBadOperand2", MOVES, &["%bool"])
            .args_with(
                "%true ",
                &[&NOT_UNSIGNED[..1], &NOT_UNSIGNED[2..]].concat(),
                "",
            )
            .bad("SG0603"),
        s(
            "BroadcastShuffleOperand2NotConstant",
            CONST_ID_MOVES,
            &["%bool"],
        )
        .args(&["%true %uint_undef"])
        .bad("SG0603"),
        s(
            "BroadcastFirstGood",
            &["OpGroupNonUniformBroadcastFirst"],
            &[
                "%bool", "%uint", "%int", "%float", "%v4uint", "%v3uint", "%v2bool", "%v4float",
                "%v4int",
            ],
        )
        .args(&["V"]),
        s(
            "BroadcastFirstBadResultType",
            &["OpGroupNonUniformBroadcastFirst"],
            &["%void", "%struct"],
        )
        .args(&["%uint_0"])
        .bad("SG0603"),
        s(
            "BroadcastFirstBadOperand",
            &["OpGroupNonUniformBroadcastFirst"],
            &["%bool"],
        )
        .args(ANY_VALUE)
        .bad("SG0603"),
        s("BallotGood", &["OpGroupNonUniformBallot"], &["%v4uint"]).args(&ballot),
        s(
            "BallotBadResultType",
            &["OpGroupNonUniformBallot"],
            &[
                "%void", "%bool", "%uint", "%int", "%float", "%v3uint", "%v2bool", "%v4float",
                "%struct", "%v4int",
            ],
        )
        .args(&ballot)
        .bad("SG0603"),
        s(
            "BallotBadOperand",
            &["OpGroupNonUniformBallot"],
            &["%v4uint"],
        )
        .args(ANY_VALUE)
        .bad("SG0603"),
        s(
            "InverseBallotGood",
            &["OpGroupNonUniformInverseBallot"],
            &["%bool"],
        )
        .args(&["%v4uint_0"]),
        s(
            "InverseBallotBadResultType",
            &["OpGroupNonUniformInverseBallot"],
            &[
                "%void", "%uint", "%int", "%float", "%v4uint", "%v3uint", "%v2bool", "%v4float",
                "%struct", "%v4int",
            ],
        )
        .args(&["%v4uint_0"])
        .bad("SG0603"),
        s(
            "InverseBallotBadOperand",
            &["OpGroupNonUniformInverseBallot"],
            &["%bool"],
        )
        .args(NOT_BALLOT)
        .bad("SG0603"),
        s(
            "BallotBitExtractGood",
            &["OpGroupNonUniformBallotBitExtract"],
            &["%bool"],
        )
        .args(&["%v4uint_0 %uint_0"]),
        s(
            "BallotBitExtractBadResultType",
            &["OpGroupNonUniformBallotBitExtract"],
            &[
                "%void", "%uint", "%int", "%float", "%v4uint", "%v3uint", "%v2bool", "%v4float",
                "%struct", "%v4int",
            ],
        )
        .args(&["%v4uint_0 %uint_0"])
        .bad("SG0603"),
        s(
            "BallotBitExtractBadOperand1",
            &["OpGroupNonUniformBallotBitExtract"],
            &["%bool"],
        )
        .args_with("", NOT_BALLOT, " %uint_0")
        .bad("SG0603"),
        s(
            "BallotBitExtractBadOperand2",
            &["OpGroupNonUniformBallotBitExtract"],
            &["%bool"],
        )
        .args_with(
            "%v4uint_0 ",
            &[&NOT_UNSIGNED[..4], &NOT_UNSIGNED[5..]].concat(),
            "",
        )
        .bad("SG0603"),
        s("BallotFindGood", FIND, &["%uint"]).args(&["%v4uint_0"]),
        s(
            "BallotFindBadResultType",
            FIND,
            &[
                "%void", "%bool", "%int", "%float", "%v4uint", "%v3uint", "%v2bool", "%v4float",
                "%struct", "%v4int",
            ],
        )
        .args(&["%v4uint_0"])
        .bad("SG0603"),
        s("BallotFindBadOperand", FIND, &["%uint"])
            .args(NOT_BALLOT)
            .bad("SG0603"),
        // Arithmetic, partitioned group operations included.
        s(
            "IntegerArithmeticGood",
            INT7,
            &["%uint", "%int", "%v4uint", "%v3uint", "%v4int"],
        )
        .args(&[
            GROUP4[0],
            GROUP4[1],
            GROUP4[2],
            GROUP4[3],
            "PartitionedReduceNV V %v4uint_0",
            "PartitionedInclusiveScanNV V %v4uint_0",
            "PartitionedExclusiveScanNV V %v4int_0",
        ]),
        s(
            "IntegerArithmeticBadResultType",
            INT7,
            &["%bool", "%float", "%v4float", "%struct"],
        )
        .args(GROUP4)
        .bad("SG0603"),
        s(
            "IntegerArithmeticBadValue",
            INT7,
            &["%int", "%v4uint", "%v3uint", "%v4int"],
        )
        .args(&[
            "Reduce %uint_0",
            "InclusiveScan %uint_0",
            "ExclusiveScan %uint_0",
            "ClusteredReduce %uint_0 %uint_0",
        ])
        .bad("SG0603"),
        s("IntegerArithmeticMissingClusterSize", INT9, &["%uint"])
            .args(&["ClusteredReduce V"])
            .bad("SG0605"),
        s("IntegerArithmeticMissingBallot", INT9, &["%uint"])
            .args(&[
                "PartitionedReduceNV V",
                "PartitionedInclusiveScanNV V",
                "PartitionedExclusiveScanNV V",
            ])
            .bad("SG0301"),
        s("IntegerArithmeticBadClusterSizeType", INT9, &["%uint"])
            .args_with("ClusteredReduce V ", NOT_UNSIGNED, "")
            .bad("SG0605"),
        s("IntegerArithmeticClusterSizeNotConstant", INT9, &["%uint"])
            .args(&["ClusteredReduce V %uint_undef"])
            .bad("SG0605"),
        s(
            "UnsignedIntegerArithmeticGood",
            UNSIGNED2,
            &["%uint", "%v4uint", "%v3uint"],
        )
        .args(GROUP4),
        s(
            "UnsignedIntegerArithmeticBadResultType",
            UNSIGNED2,
            &["%bool", "%int", "%float", "%v4float", "%struct", "%v4int"],
        )
        .args(GROUP4)
        .bad("SG0603"),
        s(
            "UnsignedIntegerArithmeticBadValue",
            UNSIGNED2,
            &["%v4uint", "%v3uint"],
        )
        .args(&[
            "Reduce %uint_0",
            "InclusiveScan %uint_0",
            "ExclusiveScan %uint_0",
            "ClusteredReduce %uint_0 %uint_0",
        ])
        .bad("SG0603"),
        s("FloatArithmeticGood", FLOAT4, &["%float", "%v4float"]).args(GROUP4),
        s(
            "FloatArithmeticBadResultType",
            FLOAT4,
            &[
                "%bool", "%uint", "%int", "%v4uint", "%v3uint", "%struct", "%v4int",
            ],
        )
        .args(GROUP4)
        .bad("SG0603"),
        s("FloatArithmeticBadValue", FLOAT4, &["%v4float"])
            .args(&[
                "Reduce %float_0",
                "InclusiveScan %float_0",
                "ExclusiveScan %float_0",
                "ClusteredReduce %float_0 %uint_0",
            ])
            .bad("SG0603"),
        s("FloatArithmeticMissingClusterSize", FLOAT4, &["%float"])
            .args(&["ClusteredReduce V"])
            .bad("SG0605"),
        s("FloatArithmeticBadClusterSizeType", FLOAT4, &["%float"])
            .args_with("ClusteredReduce V ", NOT_UNSIGNED, "")
            .bad("SG0605"),
        s("FloatArithmeticClusterSizeNotConstant", FLOAT4, &["%float"])
            .args(&["ClusteredReduce V %uint_undef"])
            .bad("SG0605"),
        s("BooleanArithmeticGood", LOGICAL3, &["%bool", "%v2bool"]).args(GROUP4),
        s(
            "BooleanArithmeticBadResultType",
            LOGICAL3,
            &[
                "%uint", "%int", "%float", "%v4uint", "%v3uint", "%struct", "%v4float", "%v4int",
            ],
        )
        .args(GROUP4)
        .bad("SG0603"),
        s("BooleanArithmeticBadValue", LOGICAL3, &["%v2bool"])
            .args(&[
                "Reduce %true",
                "InclusiveScan %true",
                "ExclusiveScan %false",
                "ClusteredReduce %false %uint_0",
            ])
            .bad("SG0603"),
        s("BooleanArithmeticMissingClusterSize", LOGICAL3, &["%bool"])
            .args(&["ClusteredReduce V"])
            .bad("SG0605"),
        s("BooleanArithmeticBadClusterSizeType", LOGICAL3, &["%bool"])
            .args_with("ClusteredReduce V ", NOT_UNSIGNED, "")
            .bad("SG0605"),
        s(
            "BooleanArithmeticClusterSizeNotConstant",
            LOGICAL3,
            &["%bool"],
        )
        .args(&["ClusteredReduce V %uint_undef"])
        .bad("SG0605"),
    ]
}

/// Cases (suite, instruction, environment) where we differ from SPIRV-Tools on purpose, with the
/// specification sentence that decides. Empty: every case of the grid agrees.
const DIFFERENCES: &[(&str, &str, &str, &str)] = &[];

/// The environments SPIRV-Tools runs the grid in (`Vulkan1p1` and `Spirv1p3`).
const ENVS: &[&str] = &["vulkan1.1", "spv1.3"];

struct Case {
    suite: &'static str,
    inst: String,
    /// The rule we must report, or `None` for a valid case.
    want: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for suite in suites() {
        for op in suite.ops {
            for ty in suite.types {
                for scope in suite.scopes {
                    for args in &suite.args {
                        let args: String = args
                            .split(' ')
                            .map(|w| if w == "V" { value_of(ty) } else { w })
                            .collect::<Vec<_>>()
                            .join(" ");
                        let inst = format!("%result = {op} {ty} {scope} {args}");
                        let want = match (suite.bad, *scope) {
                            (Some(code), _) => Some(code),
                            (None, "%subgroup") => None,
                            (None, _) => Some("SG0602"),
                        };
                        out.push(Case {
                            suite: suite.name,
                            inst: inst.trim_end().to_owned(),
                            want,
                        });
                    }
                }
            }
        }
    }
    out
}

#[test]
fn non_uniform_grid_agrees_with_spirv_tools() {
    tools::require("spirv-as");
    let cases = cases();
    // Assemble on two threads: about 1600 spirv-as runs.
    let modules: Vec<Result<Vec<u32>, String>> = std::thread::scope(|sc| {
        let half = cases.len() / 2;
        let (a, b) = cases.split_at(half);
        let build = |part: &[Case]| -> Vec<Result<Vec<u32>, String>> {
            part.iter()
                .map(|c| {
                    tools::assemble(
                        &format!("{HEADER}{}\nOpReturn\nOpFunctionEnd\n", c.inst),
                        "spv1.3",
                    )
                })
                .collect()
        };
        let ha = sc.spawn(move || build(a));
        let hb = sc.spawn(move || build(b));
        let mut v = ha.join().expect("assembler thread");
        v.extend(hb.join().expect("assembler thread"));
        v
    });
    let mut wrong = Vec::new();
    let mut per_suite: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut used_differences = 0;
    for (case, words) in cases.iter().zip(&modules) {
        let words = words
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: spirv-as failed: {e}", case.inst));
        for env in ENVS {
            let opts = ValidateOptions::default().with_target_env((*env).to_owned());
            let report = validate(words, &opts).unwrap_or_else(|e| panic!("{}: {e}", case.inst));
            let errors: Vec<&str> = report
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .map(|d| d.rule.code())
                .collect();
            let ok = match case.want {
                None => errors.is_empty(),
                Some(code) => errors.contains(&code),
            };
            let entry = per_suite.entry(case.suite).or_default();
            entry.1 += 1;
            if ok {
                entry.0 += 1;
                continue;
            }
            if DIFFERENCES
                .iter()
                .any(|d| d.0 == case.suite && d.1 == case.inst && d.2 == *env)
            {
                used_differences += 1;
                continue;
            }
            wrong.push(format!(
                "{} ({env}): `{}`: want {}, we report {:?}",
                case.suite,
                case.inst,
                case.want.unwrap_or("valid"),
                errors
            ));
        }
    }
    let total: usize = per_suite.values().map(|v| v.1).sum();
    assert!(total > 3000, "only {total} cases: the grid shrank");
    assert_eq!(
        used_differences,
        DIFFERENCES.len(),
        "a documented difference no longer happens"
    );
    assert!(
        wrong.is_empty(),
        "{} of {total} cases disagree with SPIRV-Tools' expectations:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The grid must keep its size: the number of cases per suite is what docs/spirv-val-corpus.md
/// states (a suite that silently loses cases would weaken the comparison).
#[test]
fn grid_size_matches_the_docs() {
    let cases = cases();
    let docs = std::fs::read_to_string(tools::workspace_root().join("docs/spirv-val-corpus.md"))
        .expect("docs/spirv-val-corpus.md");
    let n = cases.len() * ENVS.len();
    assert!(
        docs.contains(&format!("{n} cases")),
        "docs/spirv-val-corpus.md must state the grid size ({n} cases)"
    );
}
