//! The per-instruction dispatch of the rules: `run` sends each instruction to its family's
//! `check` (the table itself, the single source of truth for codes, is `rule_table.rs`;
//! the reference generated from it, `rule_docs.rs`).
//!
//! Each rule family lives in its own file with a `pub(crate) fn check(...)`; `run` calls them
//! with a plain `match` on the opcode. Codes are stable and never reused; each family owns a range:
//!
//! | range | family |
//! |---|---|
//! | SG00xx | module well-formedness (ids and types resolve) |
//! | SG01xx | vote (`SPV_KHR_subgroup_vote`) |
//! | SG02xx | partition op (`SPV_NV/EXT_shader_subgroup_partitioned`) |
//! | SG03xx | partitioned arithmetic (group operations 6/7/8) |
//! | SG04xx | ballot provenance |
//! | SG05xx | capabilities and extensions |
//! | SG06xx | core subgroup operations our output uses |
//! | SG07xx | target fit |

use spirv::Op;

use crate::module::Cx;
use crate::rules::common::{is_arithmetic, is_partitioned, memory_scope_word};
use crate::sink::Sink;

pub use crate::rule_docs::markdown;
pub use crate::rule_table::Rule;

pub(crate) mod barrier;
pub(crate) mod capability;
pub(crate) mod capability_uses;
pub(crate) mod common;
pub(crate) mod core;
pub(crate) mod khr_ballot;
pub(crate) mod naga_fit;
pub(crate) mod naga_front_end;
pub(crate) mod partition;
pub(crate) mod partitioned_arith;
pub(crate) mod provenance;
pub(crate) mod ray_volatile;
pub(crate) mod target_fit;
pub(crate) mod vote;
pub(crate) mod wellformed;

#[cfg(test)]
pub(crate) mod testutil;

/// Which per-instruction family [`run`] sends an opcode to (before looking at its operands).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Dispatch {
    /// Barriers, and atomics with a memory scope.
    Barrier,
    Vote,
    Partition,
    /// The 16 arithmetic group operations: partitioned or core, by their group operation.
    Arithmetic,
    /// Ballot bit count and the `Group*` reductions: only a partitioned group operation is
    /// checked (it is not allowed there), plus the core rules of the bit count.
    NotArithmetic,
    Core,
}

/// The family of `op`, if [`run`] checks it.
fn dispatch(op: Op) -> Option<Dispatch> {
    Some(match op {
        Op::ControlBarrier | Op::MemoryBarrier | Op::AtomicStore => Dispatch::Barrier,
        op if memory_scope_word(op).is_some() => Dispatch::Barrier,
        Op::SubgroupAllKHR | Op::SubgroupAnyKHR | Op::SubgroupAllEqualKHR => Dispatch::Vote,
        Op::GroupNonUniformPartitionEXT => Dispatch::Partition,
        op if is_arithmetic(op) => Dispatch::Arithmetic,
        Op::GroupNonUniformBallotBitCount
        | Op::GroupIAdd
        | Op::GroupFAdd
        | Op::GroupFMin
        | Op::GroupUMin
        | Op::GroupSMin
        | Op::GroupFMax
        | Op::GroupUMax
        | Op::GroupSMax
        | Op::GroupIAddNonUniformAMD
        | Op::GroupFAddNonUniformAMD
        | Op::GroupFMinNonUniformAMD
        | Op::GroupUMinNonUniformAMD
        | Op::GroupSMinNonUniformAMD
        | Op::GroupFMaxNonUniformAMD
        | Op::GroupUMaxNonUniformAMD
        | Op::GroupSMaxNonUniformAMD
        | Op::GroupIMulKHR
        | Op::GroupFMulKHR
        | Op::GroupBitwiseAndKHR
        | Op::GroupBitwiseOrKHR
        | Op::GroupBitwiseXorKHR
        | Op::GroupLogicalAndKHR
        | Op::GroupLogicalOrKHR
        | Op::GroupLogicalXorKHR => Dispatch::NotArithmetic,
        op if common::is_core_lane_op(op) => Dispatch::Core,
        _ => return None,
    })
}

/// Per raw opcode: whether any per-instruction check of [`run`] looks at it (a family of
/// [`dispatch`], SG0003's value operands, or target fit). Most instructions of a module (and
/// nearly all of a lowered one: selects, bitwise ops, labels, branches) are none of these, and
/// [`run`] skips them after this one lookup instead of three opcode matches each. The table
/// lives in the static itself, not on the heap: nothing of the library's outlives its image
/// when a program unloads it (the Vulkan layer is unloaded at every `vkDestroyInstance`).
fn checked_opcodes() -> &'static [bool] {
    static TABLE: std::sync::OnceLock<[bool; crate::binary::OPCODES]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let table = crate::binary::op_table();
        std::array::from_fn(|opcode| {
            table[opcode].op.is_some_and(|op| {
                dispatch(op).is_some()
                    || wellformed::value_operands(op).is_some()
                    || target_fit::looks_at(op)
            })
        })
    })
}

/// Runs every rule family on the indexed module.
pub(crate) fn run(cx: &Cx<'_>, out: &mut Sink) {
    let checked = checked_opcodes();
    for i in 0..cx.m.insts.len() {
        let opcode = cx.m.insts[i].opcode;
        if !checked.get(usize::from(opcode)).copied().unwrap_or(false) {
            continue;
        }
        let Some(op) = crate::binary::op_of(u32::from(opcode)) else {
            continue;
        };
        wellformed::check_value_operands(cx, i, op, out);
        match dispatch(op) {
            Some(Dispatch::Barrier) => barrier::check(cx, i, op, out),
            Some(Dispatch::Vote) => vote::check(cx, i, out),
            Some(Dispatch::Partition) => partition::check(cx, i, out),
            Some(Dispatch::Arithmetic) => {
                if is_partitioned(cx, i) {
                    partitioned_arith::check(cx, i, out);
                    provenance::check(cx, i, out);
                } else {
                    core::check(cx, i, out);
                }
            }
            Some(Dispatch::NotArithmetic) => {
                if is_partitioned(cx, i) {
                    partitioned_arith::check_not_arithmetic(cx, i, out);
                } else if op == Op::GroupNonUniformBallotBitCount {
                    core::check(cx, i, out);
                }
            }
            Some(Dispatch::Core) => core::check(cx, i, out),
            None => {}
        }
        capability_uses::check(cx, i, op, out);
        khr_ballot::check(cx, i, op, out);
        if cx.target.is_some() {
            target_fit::check(cx, i, op, out);
        }
    }
    capability::check_module(cx, out);
    capability_uses::check_module(cx, out);
    partition::check_module(cx, out);
    core::check_module(cx, out);
    ray_volatile::check_module(cx, out);
    target_fit::check_module(cx, out);
    naga_fit::check_module(cx, out);
    naga_front_end::check_module(cx, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule_table::Severity;

    /// The prefilter of `run` keeps every opcode a per-instruction check reads and skips the
    /// plain instructions a lowered module is mostly made of.
    #[test]
    fn run_skips_only_opcodes_no_check_reads() {
        let checked = |op: Op| checked_opcodes()[op as usize];
        for op in [
            Op::Select,
            Op::BitwiseAnd,
            Op::Label,
            Op::Branch,
            Op::Load,
            Op::Phi,
            Op::Name,
        ] {
            assert!(!checked(op), "{op:?}");
        }
        for op in [
            Op::SubgroupAllKHR,
            Op::GroupNonUniformPartitionEXT,
            Op::GroupNonUniformIAdd,
            Op::GroupNonUniformShuffle,
            Op::GroupNonUniformBallotBitCount,
            Op::GroupIAdd,
            Op::GroupNonUniformRotateKHR,
            Op::SubgroupBallotKHR,
            Op::ControlBarrier,
            Op::AtomicIAdd,
            Op::AtomicStore,
            Op::Decorate,
        ] {
            assert!(checked(op), "{op:?}");
        }
        // Exactly the union of what the checks read, for every opcode the grammar knows.
        for info in crate::binary::op_table() {
            let Some(op) = info.op else { continue };
            let reads = dispatch(op).is_some()
                || wellformed::value_operands(op).is_some()
                || target_fit::looks_at(op);
            assert_eq!(checked(op), reads, "{op:?}");
        }
    }

    #[test]
    fn codes_and_names_are_unique_and_well_formed() {
        let mut codes = std::collections::HashSet::new();
        let mut names = std::collections::HashSet::new();
        for r in Rule::ALL {
            assert!(codes.insert(r.code()), "duplicate code {}", r.code());
            assert!(names.insert(r.name()), "duplicate name {}", r.name());
            assert!(r.code().len() == 6 && r.code().starts_with("SG"));
            assert!(r.name().chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            assert_eq!(Rule::from_code(r.code()), Some(*r));
            assert_eq!(Rule::from_code(r.name()), Some(*r));
            assert!(r.doc().len() < 120, "{} doc too long", r.code());
            assert!(r.explain().len() > r.doc().len());
        }
        assert_eq!(Rule::from_code("sg0101"), Some(Rule::VoteMissingCapability));
        assert_eq!(Rule::from_code("SG9999"), None);
    }

    /// The audit of issue 13, kept true: errors only for "must" (or a consumer's limit under
    /// `--target`), warnings for undefined behaviour and advice, and each quote in the explanation.
    #[test]
    fn severity_follows_the_audited_kind() {
        use crate::rule_table::Kind;
        for r in Rule::ALL {
            let (code, spec) = (r.code(), r.spec());
            match r.kind() {
                Kind::Invalid | Kind::Unsupported => {
                    assert_eq!(r.severity(), Severity::Error, "{code}")
                }
                Kind::Undefined | Kind::Advice => {
                    assert_eq!(r.severity(), Severity::Warning, "{code}")
                }
            }
            match r.kind() {
                // A version requirement is worded "requires" / "Missing before" in the specs, a
                // capability requirement "needs to be declared" (SPIR-V 2.1) and the extension's
                // restriction of the partitioned group operations "can only be used".
                Kind::Invalid => assert!(
                    spec.contains("must")
                        || spec.contains("requires")
                        || spec.contains("Missing before")
                        || spec.contains("needs to be declared")
                        || spec.contains("can only be used")
                        // SPIR-V 2.17's Universal Limits, which it tells validators to enforce.
                        || spec.starts_with("Validators inform when these limits"),
                    "{code}: an error must quote a \"must\": {spec:?}"
                ),
                Kind::Undefined => assert!(
                    spec.to_lowercase().contains("undefined"),
                    "{code}: undefined behaviour must quote the sentence: {spec:?}"
                ),
                Kind::Advice | Kind::Unsupported => {}
            }
            // A verbatim quote appears in the explanation too (modulo line breaks).
            // Issue 9: every quote is the specification's own words, never our paraphrase.
            assert!(
                !spec.contains("our summary"),
                "{code}: paraphrased quote {spec:?}"
            );
            if !spec.is_empty() {
                let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(
                    flat(r.explain()).contains(&flat(spec)),
                    "{code}: explain does not quote {spec:?}"
                );
            }
            if let Some(v) = r.vuid() {
                assert!(v.starts_with("VUID-"), "{code}: {v}");
                assert!(r.explain().contains(v), "{code}: explain does not name {v}");
            }
        }
    }

    /// Issue 9 item 6: rule files share helpers through `common.rs` only, never each other.
    #[test]
    fn no_rule_file_imports_from_another() {
        let files = [
            ("barrier", include_str!("barrier.rs")),
            ("capability", include_str!("capability.rs")),
            ("capability_uses", include_str!("capability_uses.rs")),
            ("core", include_str!("core.rs")),
            ("khr_ballot", include_str!("khr_ballot.rs")),
            ("partition", include_str!("partition.rs")),
            ("partitioned_arith", include_str!("partitioned_arith.rs")),
            ("provenance", include_str!("provenance.rs")),
            ("target_fit", include_str!("target_fit.rs")),
            ("vote", include_str!("vote.rs")),
            ("wellformed", include_str!("wellformed.rs")),
            ("common", include_str!("common.rs")),
        ];
        for (name, text) in files {
            for (other, _) in files {
                if other == "common" {
                    continue;
                }
                let path = format!("rules::{other}::");
                assert!(
                    !text.contains(&path),
                    "rules/{name}.rs uses `{path}`: move the shared helper to rules/common.rs"
                );
            }
        }
    }

    #[test]
    fn codes_are_sorted() {
        let codes: Vec<_> = Rule::ALL.iter().map(|r| r.code()).collect();
        let mut sorted = codes.clone();
        sorted.sort();
        assert_eq!(codes, sorted);
    }

    #[test]
    fn committed_rules_md_is_up_to_date() {
        // The package directory cargo gives the test at run time (a compile-time path may name
        // another checkout when the target directory is shared).
        let dir = std::env::var("CARGO_MANIFEST_DIR")
            .unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_owned());
        let path = std::path::Path::new(&dir).join("../../docs/rules.md");
        let want = markdown();
        if std::env::var_os("UPDATE_RULES_MD").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/rules.md is out of date: run `UPDATE_RULES_MD=1 cargo test -p spv-subgroup-validate` \
             (or `cargo xtask codegen`)"
        );
    }
}
