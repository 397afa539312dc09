//! Partitioned arithmetic lowering (`rewrite/partitioned_arith.rs`), beyond the shared fixture
//! harnesses:
//!
//! - `every_op_type_and_scan`: generated modules holding every one of the 16 ops with each of the
//!   three partitioned group operations over 8/16/32/64-bit integers, 16/32/64-bit floats, bools
//!   and vectors, lowered for `vulkan1.1`, `lavapipe`, `naga` and `khr-ballot` at several
//!   subgroup sizes. Every output passes `spirv-val` for the target's environment and our
//!   validator with that target, has no partitioned op or capability left, lowers again to
//!   `changed == false`, and is the same words when lowered twice. The `naga` outputs (of the
//!   types naga has) also go through naga's front end, validator and WGSL/MSL/HLSL back ends.
//! - `fixtures_at_subgroup_sizes`: the fixtures of `fixtures/lower/partitioned_arith/` at
//!   `--subgroup-size` 1, 8, 32 and 64 (the shared harness runs them at the presets' sizes).
//! - `cost_table`: counts the shuffles, ballots and other subgroup ops each rewrite emits at
//!   subgroup sizes 32 and 128, checks the goals of issue 3 (inclusive scan at most 10 shuffled
//!   words per 32-bit word of the value at 32 lanes, 14 at 128; exclusive and reduce at most one
//!   more) and compares the rendered table with the section between `<!-- arith-costs:begin -->`
//!   and `<!-- arith-costs:end -->` of `docs/lowering.md` (`UPDATE_COSTS=1` rewrites it).

#![allow(clippy::print_stdout, reason = "a test harness")]

use rspirv::dr::{Module, Operand};
use spirv::{GroupOperation, Op};
use spv_subgroup_lower::{lower_words, LowerOptions, Target};
use spv_subgroup_tests::naga::through_naga;
use spv_subgroup_tests::tools;
use spv_subgroup_validate::{validate, Severity, ValidateOptions};

/// A value type of the grid.
struct ValueType {
    /// Name in messages and the cost table.
    name: &'static str,
    /// Declaration lines; the last declares `%T`. `%uint`, `%int`, `%bool` and `%float` exist.
    decl: &'static str,
    /// Capabilities it needs.
    caps: &'static [&'static str],
    /// Which ops take it.
    family: Family,
    /// 32-bit words per value.
    words: u32,
    /// Whether naga's front end has the type (no 8/16-bit types).
    naga: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Family {
    Int,
    Float,
    Bool,
}

const TYPES: &[ValueType] = &[
    ValueType {
        name: "uint8",
        decl: "%T = OpTypeInt 8 0",
        caps: &["Int8"],
        family: Family::Int,
        words: 1,
        naga: false,
    },
    ValueType {
        name: "i16vec2",
        decl: "%s16 = OpTypeInt 16 1\n%T = OpTypeVector %s16 2",
        caps: &["Int16"],
        family: Family::Int,
        words: 2,
        naga: false,
    },
    ValueType {
        name: "uint",
        decl: "%T = OpTypeVector %uint 1",
        caps: &[],
        family: Family::Int,
        words: 1,
        naga: true,
    },
    ValueType {
        name: "ivec3",
        decl: "%T = OpTypeVector %int 3",
        caps: &[],
        family: Family::Int,
        words: 3,
        naga: true,
    },
    ValueType {
        name: "uint64",
        decl: "%T = OpTypeInt 64 0",
        caps: &["Int64"],
        family: Family::Int,
        words: 2,
        naga: true,
    },
    ValueType {
        name: "i64vec2",
        decl: "%s64 = OpTypeInt 64 1\n%T = OpTypeVector %s64 2",
        caps: &["Int64"],
        family: Family::Int,
        words: 4,
        naga: true,
    },
    ValueType {
        name: "half",
        decl: "%T = OpTypeFloat 16",
        caps: &["Float16"],
        family: Family::Float,
        words: 1,
        naga: false,
    },
    ValueType {
        name: "float",
        decl: "%T = OpTypeVector %float 1",
        caps: &[],
        family: Family::Float,
        words: 1,
        naga: true,
    },
    ValueType {
        name: "vec4",
        decl: "%T = OpTypeVector %float 4",
        caps: &[],
        family: Family::Float,
        words: 4,
        naga: true,
    },
    ValueType {
        name: "double",
        decl: "%T = OpTypeFloat 64",
        caps: &["Float64"],
        family: Family::Float,
        words: 2,
        naga: true,
    },
    ValueType {
        name: "dvec2",
        decl: "%f64 = OpTypeFloat 64\n%T = OpTypeVector %f64 2",
        caps: &["Float64"],
        family: Family::Float,
        words: 4,
        naga: true,
    },
    ValueType {
        name: "bool",
        decl: "%T = OpTypeVector %bool 1",
        caps: &[],
        family: Family::Bool,
        words: 1,
        naga: true,
    },
    ValueType {
        name: "bvec3",
        decl: "%T = OpTypeVector %bool 3",
        caps: &[],
        family: Family::Bool,
        words: 3,
        naga: true,
    },
];

fn ops_of(family: Family) -> &'static [&'static str] {
    match family {
        Family::Int => &[
            "IAdd",
            "IMul",
            "SMin",
            "UMin",
            "SMax",
            "UMax",
            "BitwiseAnd",
            "BitwiseOr",
            "BitwiseXor",
        ],
        Family::Float => &["FAdd", "FMul", "FMin", "FMax"],
        Family::Bool => &["LogicalAnd", "LogicalOr", "LogicalXor"],
    }
}

const SCANS: [&str; 3] = [
    "PartitionedReduceNV",
    "PartitionedInclusiveScanNV",
    "PartitionedExclusiveScanNV",
];

/// A module with one partitioned instruction per (op, scan) of `insts`, in SPIR-V 1.0 form
/// (no core capability) when `spv10`.
fn module_text(ty: &ValueType, insts: &[(&str, &str)], spv10: bool) -> String {
    let mut caps = String::from("OpCapability Shader\n");
    for c in ty.caps {
        caps += &format!("OpCapability {c}\n");
    }
    if !spv10 {
        caps += "OpCapability GroupNonUniform\nOpCapability GroupNonUniformArithmetic\n";
    }
    caps += "OpCapability GroupNonUniformPartitionedNV\nOpExtension \"SPV_NV_shader_subgroup_partitioned\"\n";
    // A one-component "vector" in the table stands for the scalar itself.
    let (t, decl) = match ty
        .decl
        .strip_suffix(" 1")
        .and_then(|d| d.strip_prefix("%T = OpTypeVector "))
    {
        Some(scalar) => (scalar.to_owned(), String::new()),
        None => ("%T".to_owned(), ty.decl.to_owned()),
    };
    let mut body = String::new();
    for (i, (op, scan)) in insts.iter().enumerate() {
        body += &format!(
            "%r{i} = OpGroupNonUniform{op} {t} %scope {scan} %v %ballot\nOpStore %vv %r{i}\n"
        );
    }
    format!(
        "{caps}OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main \"main\"
OpExecutionMode %main LocalSize 64 1 1
%void = OpTypeVoid
%fn = OpTypeFunction %void
%uint = OpTypeInt 32 0
%int = OpTypeInt 32 1
%float = OpTypeFloat 32
%bool = OpTypeBool
{decl}
%v4uint = OpTypeVector %uint 4
%ptr_t = OpTypePointer Function {t}
%ptr_m = OpTypePointer Function %v4uint
%scope = OpConstant %uint 3
%main = OpFunction %void None %fn
%entry = OpLabel
%vv = OpVariable %ptr_t Function
%bv = OpVariable %ptr_m Function
%v = OpLoad {t} %vv
%ballot = OpLoad %v4uint %bv
{body}OpReturn
OpFunctionEnd
"
    )
}

fn assemble(ty: &ValueType, insts: &[(&str, &str)], spv10: bool) -> Vec<u32> {
    let text = module_text(ty, insts, spv10);
    tools::assemble(&text, if spv10 { "spv1.0" } else { "vulkan1.1" })
        .unwrap_or_else(|e| panic!("{}: assembling failed: {e}\n{text}", ty.name))
}

fn opts(target: &Target, size: Option<u32>) -> LowerOptions {
    LowerOptions::new(target.clone()).with_subgroup_size(size)
}

/// Whether any partitioned op or the partitioned capability is left.
fn partitioned_left(words: &[u32]) -> Vec<String> {
    let m: Module = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("output loads");
    let mut out = Vec::new();
    for c in &m.capabilities {
        if matches!(
            c.operands.first(),
            Some(Operand::Capability(
                spirv::Capability::GroupNonUniformPartitionedNV
            ))
        ) {
            out.push("capability GroupNonUniformPartitionedNV".to_owned());
        }
    }
    for inst in m
        .functions
        .iter()
        .flat_map(|f| &f.blocks)
        .flat_map(|b| &b.instructions)
    {
        let partitioned = inst.operands.iter().any(|o| {
            matches!(
                o,
                Operand::GroupOperation(
                    GroupOperation::PartitionedReduceNV
                        | GroupOperation::PartitionedInclusiveScanNV
                        | GroupOperation::PartitionedExclusiveScanNV
                )
            )
        });
        if partitioned {
            out.push(format!(
                "%{} Op{:?}",
                inst.result_id.unwrap_or(0),
                inst.class.opcode
            ));
        }
    }
    out
}

/// The static checks every lowered module must pass; `Err` says which failed.
fn check_output(input: &[u32], target: &Target, size: Option<u32>) -> Result<Vec<u32>, String> {
    let o = opts(target, size);
    let (out, report) = lower_words(input, &o).map_err(|e| format!("lowering failed: {e}"))?;
    if !report.changed {
        return Err("nothing was lowered".into());
    }
    tools::spirv_val(&out, &target.target_env).map_err(|e| {
        format!(
            "spirv-val rejects the output: {e}\n{}",
            tools::disassemble(&out)
        )
    })?;
    let v = ValidateOptions::default().with_target(target.clone());
    let report =
        validate(&out, &v).map_err(|e| format!("our validator cannot parse the output: {e}"))?;
    let errors: Vec<String> = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{}: {}", d.rule.code(), d.message))
        .collect();
    if !errors.is_empty() {
        return Err(format!("our validator reports errors: {errors:#?}"));
    }
    let left = partitioned_left(&out);
    if !left.is_empty() {
        return Err(format!("partitioned code left: {left:?}"));
    }
    let (again, report2) =
        lower_words(&out, &o).map_err(|e| format!("lowering the output failed: {e}"))?;
    if report2.changed || again != out {
        return Err("lowering twice changes the module".into());
    }
    let (twice, _) = lower_words(input, &o).map_err(|e| format!("second run failed: {e}"))?;
    if twice != out {
        return Err("the same input gives different output".into());
    }
    Ok(out)
}

fn preset(name: &str) -> Target {
    Target::preset(name).unwrap_or_else(|| panic!("preset {name}"))
}

#[test]
fn every_op_type_and_scan() {
    let mut failures = Vec::new();
    let mut ran = 0;
    for ty in TYPES {
        // UMin/UMax need a result type "whose Signedness operand is 0" (SPIR-V 3.56.24), under
        // partitioned group operations too: on a signed type the input itself is invalid.
        let signed = ty.decl.contains("%int ")
            || ty
                .decl
                .lines()
                .any(|l| l.contains("OpTypeInt") && l.ends_with(" 1"));
        let insts: Vec<(&str, &str)> = ops_of(ty.family)
            .iter()
            .filter(|op| !(signed && matches!(**op, "UMin" | "UMax")))
            .flat_map(|op| SCANS.iter().map(move |s| (*op, *s)))
            .collect();
        for target_name in ["vulkan1.1", "lavapipe", "naga", "khr-ballot"] {
            let target = preset(target_name);
            let spv10 = target.spirv_version < (1, 3);
            let input = assemble(ty, &insts, spv10);
            for size in [None, Some(1), Some(8), Some(32), Some(64)] {
                ran += 1;
                let ctx = format!("{} for {target_name} at subgroup size {size:?}", ty.name);
                match check_output(&input, &target, size) {
                    Err(e) => failures.push(format!("{ctx}: {e}")),
                    Ok(out) if target_name == "naga" && ty.naga => {
                        if let Err(e) = through_naga(&out, ty.caps.contains(&"Float64")) {
                            failures.push(format!("{ctx}: naga: {e}"));
                        }
                    }
                    Ok(_) => {}
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn fixtures_at_subgroup_sizes() {
    let dir = tools::workspace_root().join("fixtures/lower/partitioned_arith");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "comp"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 4, "fixtures missing in {}", dir.display());
    let mut failures = Vec::new();
    for path in &paths {
        let input = tools::compile_glsl(path, "vulkan1.1")
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let naga_ok = !std::fs::read_to_string(path)
            .expect("readable")
            .contains("targets:");
        for target_name in ["vulkan1.1", "naga"] {
            if target_name == "naga" && !naga_ok {
                continue;
            }
            let target = preset(target_name);
            for size in [Some(1), Some(8), Some(32), Some(64)] {
                let ctx = format!("{} for {target_name} at {size:?}", path.display());
                if let Err(e) = check_output(&input, &target, size) {
                    failures.push(format!("{ctx}: {e}"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Subgroup operations counted in one lowered instruction.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
struct Counts {
    /// Shuffle-like instructions (shuffles, `ReadInvocationKHR`).
    shuffles: u32,
    /// 32-bit words those instructions move.
    words: u32,
    /// Ballots.
    ballots: u32,
    /// Other subgroup ops (core arithmetic of the fast path, ballot bit ops).
    other: u32,
}

/// Counts outside any loop, per loop round, and whether there is a loop.
fn count(words: &[u32]) -> (Counts, Counts, bool) {
    let m: Module = spv_subgroup_lower::load(words)
        .map(|l| l.module)
        .expect("output loads");
    let mut widths = std::collections::HashMap::new();
    for t in &m.types_global_values {
        let (Some(id), op) = (t.result_id, t.class.opcode) else {
            continue;
        };
        let w = match (op, t.operands.as_slice()) {
            (Op::TypeInt | Op::TypeFloat, [Operand::LiteralBit32(w), ..]) => (*w).div_ceil(32),
            (Op::TypeBool, _) => 1,
            (Op::TypeVector, [Operand::IdRef(e), Operand::LiteralBit32(n)]) => {
                widths.get(e).copied().unwrap_or(1) * n
            }
            _ => continue,
        };
        widths.insert(id, w);
    }
    let (mut outside, mut inside, mut looped) = (Counts::default(), Counts::default(), false);
    let mut open: Vec<u32> = Vec::new();
    for block in m.functions.iter().flat_map(|f| &f.blocks) {
        let label = block.label.as_ref().and_then(|l| l.result_id).unwrap_or(0);
        open.retain(|&merge| merge != label);
        for inst in &block.instructions {
            if inst.class.opcode == Op::LoopMerge {
                looped = true;
                if let Some(Operand::IdRef(merge)) = inst.operands.first() {
                    open.push(*merge);
                }
            }
            let c = if open.is_empty() {
                &mut outside
            } else {
                &mut inside
            };
            match inst.class.opcode {
                Op::GroupNonUniformShuffle
                | Op::GroupNonUniformBroadcast
                | Op::SubgroupReadInvocationKHR => {
                    c.shuffles += 1;
                    c.words += inst
                        .result_type
                        .and_then(|t| widths.get(&t).copied())
                        .unwrap_or(1);
                }
                Op::GroupNonUniformBallot | Op::SubgroupBallotKHR => c.ballots += 1,
                op if format!("{op:?}").starts_with("GroupNonUniform") => c.other += 1,
                _ => {}
            }
        }
    }
    (outside, inside, looped)
}

fn cell(c: Counts) -> String {
    format!("{} / {} / {} / {}", c.shuffles, c.words, c.ballots, c.other)
}

#[test]
fn cost_table() {
    let mut table = String::from(
        "| rewrite | value | target | 32 lanes | 128 lanes |\n|---|---|---|---|---|\n",
    );
    let mut goal_failures = Vec::new();
    let cases: [(&str, &str); 6] = [
        ("IAdd", "uint"),
        ("FAdd", "vec4"),
        ("UMin", "uint64"),
        ("SMax", "uint"),
        ("IAdd", "uint8"),
        ("LogicalXor", "bool"),
    ];
    for (op, ty_name) in cases {
        let ty = TYPES
            .iter()
            .find(|t| t.name == ty_name)
            .expect("type in the grid");
        for scan in SCANS {
            let scan_name = match scan {
                "PartitionedReduceNV" => "reduce",
                "PartitionedInclusiveScanNV" => "inclusive",
                _ => "exclusive",
            };
            for target_name in ["vulkan1.1", "naga", "khr-ballot"] {
                let target = preset(target_name);
                let spv10 = target.spirv_version < (1, 3);
                let input = assemble(ty, &[(op, scan)], spv10);
                let mut cells = Vec::new();
                for size in [32u32, 128] {
                    let size = size.min(target.max_subgroup_size);
                    let (out, _) = lower_words(&input, &opts(&target, Some(size))).expect("lowers");
                    let (fixed, round, looped) = count(&out);
                    let mut text = cell(fixed);
                    if looped {
                        text += &format!(
                            ", per round {} (rounds: active lanes, ≤ {size})",
                            cell(round)
                        );
                    }
                    if size != 32 && size != 128 {
                        text += &format!(" (at {size} lanes)");
                    }
                    cells.push(text);
                    // Goals of issue 3 for the shuffle sequences (not the serial loop).
                    if !looped && ty.family != Family::Bool {
                        // Above 32 lanes with the size unknown, the sequence is emitted twice
                        // behind a uniform branch on `SubgroupSize <= 32` (one side runs; this
                        // static count sees both): 10 words for the small side, 14 for the other.
                        let per_word = if size <= 32 { 10 } else { 14 + 10 };
                        let allowed = per_word * ty.words
                            + if scan_name == "inclusive" {
                                0
                            } else {
                                ty.words
                            };
                        if fixed.words > allowed {
                            goal_failures.push(format!(
                                "{op} {scan_name} {ty_name} for {target_name} at {size}: {} shuffled words > {allowed}",
                                fixed.words
                            ));
                        }
                    }
                    if ty_name == "uint8" && (fixed.shuffles != 0 || looped || fixed.ballots > 8) {
                        goal_failures.push(format!("{op} {scan_name} {ty_name} for {target_name}: 8-bit IAdd must be 8 ballots (bit slices)"));
                    }
                    if ty.family == Family::Bool && fixed.shuffles != 0 {
                        goal_failures.push(format!("{op} {scan_name} {ty_name} for {target_name}: bool ops must be ballot-only"));
                    }
                }
                table += &format!(
                    "| {op} {scan_name} | {ty_name} | {target_name} | {} | {} |\n",
                    cells[0], cells[1]
                );
            }
        }
    }
    assert!(
        goal_failures.is_empty(),
        "cost goals missed:\n{}",
        goal_failures.join("\n")
    );
    let path = tools::workspace_root().join("docs/lowering.md");
    let doc = std::fs::read_to_string(&path).expect("docs/lowering.md exists");
    let (begin, end) = ("<!-- arith-costs:begin -->\n", "<!-- arith-costs:end -->");
    let (Some(b), Some(e)) = (doc.find(begin), doc.find(end)) else {
        panic!("docs/lowering.md lacks the {begin:?} / {end:?} markers; the table is:\n{table}");
    };
    let current = &doc[b + begin.len()..e];
    if current != table {
        if std::env::var_os("UPDATE_COSTS").is_some() {
            let new = format!("{}{table}{}", &doc[..b + begin.len()], &doc[e..]);
            std::fs::write(&path, new).expect("docs/lowering.md is writable");
        } else {
            panic!(
                "the arithmetic cost table of docs/lowering.md differs from the code; run with UPDATE_COSTS=1 to rewrite it. The code gives:\n{table}"
            );
        }
    }
}
