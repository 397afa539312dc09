//! Where the rules put their findings ([`Sink`]), with the facts the module-level rules need
//! from the per-instruction pass.

use crate::diag::Diagnostic;
use crate::disasm;
use crate::module;
use crate::rule_table::Rule;

/// Collects findings, plus facts the module-level rules need from the per-instruction pass.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    pub diags: Vec<Diagnostic>,
    /// A vote KHR instruction was seen.
    pub used_vote: bool,
    /// A barrier or atomic with a Subgroup memory scope was seen in a Vulkan environment, which
    /// VUID-StandaloneSpirv-SubgroupVoteKHR-07951 allows only with SubgroupVoteKHR,
    /// GroupNonUniform or SubgroupBallotKHR declared: such a declaration is not unused.
    pub subgroup_memory_scope: bool,
    /// A partition op or partitioned group operation was seen.
    pub used_partition: bool,
    /// The first partition-related instruction and how many there are.
    pub partition_insts: Option<(usize, usize)>,
    /// The first core non-uniform instruction and how many there are.
    pub core_insts: Option<(usize, usize)>,
    /// Ballot values the provenance rule has proven to come from partition ops.
    pub proven: std::collections::HashSet<u32>,
    /// Ballot values the provenance rule could not prove, with the reason.
    pub unproven: std::collections::HashMap<u32, Unproven>,
}

impl Sink {
    /// Reports a finding about instruction `i`; disassembles it only now.
    pub(crate) fn emit(
        &mut self,
        cx: &module::Cx<'_>,
        rule: Rule,
        i: usize,
        message: String,
        mut notes: Vec<String>,
    ) {
        // The VUID travels with every finding of a rule Vulkan names, in human and JSON output.
        // Only in a Vulkan environment, where the VUID applies.
        if let Some(v) = rule.vuid() {
            if cx.vulkan {
                notes.push(format!("Vulkan: {v}"));
            }
        }
        self.diags.push(Diagnostic {
            rule,
            severity: rule.severity(),
            message,
            location: cx.m.location(i),
            notes,
            disassembly: Some(disasm::instruction(&cx.m, i)),
            source: None,
        });
    }

    pub(crate) fn count_partition(&mut self, i: usize) {
        self.used_partition = true;
        let e = self.partition_insts.get_or_insert((i, 0));
        e.1 += 1;
    }

    pub(crate) fn count_core(&mut self, i: usize) {
        let e = self.core_insts.get_or_insert((i, 0));
        e.1 += 1;
    }
}

/// Why a ballot's path does not end at a partition op (the provenance rule's memo, kept across
/// instructions so each ballot is traced once).
#[derive(Clone, Debug)]
pub(crate) struct Unproven {
    /// The instruction the path ended at (or the id that had no definition).
    pub(crate) id: u32,
    /// Why, in words.
    pub(crate) why: String,
}
