//! Lowering of SPIR-V subgroup vote and partitioned operations.
//!
//! [`lower`] rewrites an `rspirv::dr::Module` in place so that it uses only what a
//! [`Target`] has: `OpSubgroupAllKHR`/`AnyKHR`/`AllEqualKHR` become core vote ops or ballots,
//! `OpGroupNonUniformPartitionNV/EXT` becomes a match sequence, and partitioned reduce/scan
//! becomes pointer-jumping shuffles. [`lower_words`] is the same over SPIR-V words.
//! [`lower_and_verify`] also validates the output for the target and blames a failure on the
//! input or on the pass, as the CLI and the C interface report it; for a target whose consumer
//! is naga (`restrictions.naga_module`) it runs naga 30 itself on the output too, with the `naga`
//! cargo feature (on by default; [`naga_judge`]).
//! The pass never prints, never does IO and never panics on any input.
#![deny(missing_docs)]

/// The rspirv crate, whose `dr::Module` and `dr::Instruction` [`lower`], [`load`] and [`assemble`]
/// take and give: re-exported so callers build and read modules with the version this crate uses.
pub use rspirv;
/// The spirv crate (opcodes, capabilities), the one rspirv and [`Target`] use.
pub use spirv;
pub use spv_subgroup_validate::target::Target;

/// How the partition op compares floating-point keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum FloatPartition {
    /// As the spec says: +0.0 and -0.0 share a subset, every NaN may stand alone.
    #[default]
    Spec,
    /// Compare bit patterns, as NVIDIA's native implementation does (+0.0 and -0.0 apart).
    Bitwise,
}

/// Which sequence `OpGroupNonUniformPartitionNV/EXT` is lowered to.
///
/// For measurement and tests: [`PartitionForm::Auto`], the default, picks the form by the key's
/// width and the target (docs/lowering.md, costs measured in docs/PERFORMANCE.md); the others
/// force one form where the key and the target allow it and fall back to `Auto` elsewhere (bool
/// keys take only the bit-sliced and waterfall forms, the differing-bits form needs the target's
/// `arithmetic` ops, every form but the bit-sliced one reads a lane's value). Every form
/// computes the same result.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum PartitionForm {
    /// The form the lowering picks.
    #[default]
    Auto,
    /// One ballot per key bit.
    BitSliced,
    /// One waterfall round (one key among the active lanes is done), then one ballot per key bit.
    FirstRound,
    /// One waterfall round, then ballots of only the bits in which the active lanes differ.
    DifferingBits,
    /// One round per distinct key.
    Waterfall,
}

/// Options of the lowering pass: [`LowerOptions::new`] with the target, then the `with_*`
/// methods for the rest (more options may come; the struct cannot be built field by field).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LowerOptions {
    /// The device the output must run on.
    pub target: Target,
    /// The subgroup size the output will run with, if known (fewer steps, single-word ballots
    /// when at most 32). `None` means any size the target allows.
    pub subgroup_size: Option<u32>,
    /// How partition keys of float type are compared.
    pub float_partition: FloatPartition,
    /// Which sequence the partition op gets (for measurement; `Auto` by default).
    pub partition_form: PartitionForm,
    /// Emulate this subgroup size (a power of two from 1 to 64): the output behaves, on a device
    /// whose subgroup size is any multiple of it, as the input does on a device of this size
    /// (virtual subgroups of consecutive lanes; docs/lowering.md, "Emulating a subgroup size").
    /// `None` (the default) keeps the device's size.
    pub emulate_subgroup_size: Option<u32>,
}

impl LowerOptions {
    /// Lowering for `target`, at any subgroup size it allows, with the spec's float partitions
    /// and the partition form the pass picks.
    pub fn new(target: Target) -> Self {
        LowerOptions {
            target,
            ..LowerOptions::default()
        }
    }

    /// These options for another target.
    pub fn with_target(mut self, target: Target) -> Self {
        self.target = target;
        self
    }

    /// These options with the subgroup size the output will run with (`None`: any).
    pub fn with_subgroup_size(mut self, subgroup_size: Option<u32>) -> Self {
        self.subgroup_size = subgroup_size;
        self
    }

    /// These options with how float partition keys are compared.
    pub fn with_float_partition(mut self, float_partition: FloatPartition) -> Self {
        self.float_partition = float_partition;
        self
    }

    /// These options emulating a subgroup size (`None`: the device's own).
    pub fn with_emulated_subgroup_size(mut self, size: Option<u32>) -> Self {
        self.emulate_subgroup_size = size;
        self
    }

    /// These options with the partition form forced (for measurement).
    pub fn with_partition_form(mut self, partition_form: PartitionForm) -> Self {
        self.partition_form = partition_form;
        self
    }
}

/// What the pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LowerReport {
    /// Whether the module changed at all.
    pub changed: bool,
    /// One entry per kind of rewrite, with how many instructions it replaced, in a stable order.
    pub rewrites: Vec<(String, usize)>,
}

/// Why a module could not be lowered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LowerError {
    /// The input is not a SPIR-V module rspirv can load.
    #[error("cannot parse the module: {0}")]
    Parse(String),
    /// An instruction needs a feature the target lacks and no rewrite provides.
    #[error("{} at word {word_offset} cannot be lowered for target `{target}`: {missing}", subject(*.result_id, .opcode))]
    Unsupported {
        /// The instruction's result id.
        result_id: u32,
        /// Its opcode name.
        opcode: String,
        /// Its word offset in the input (0 when lowering a `dr::Module` with no offsets).
        word_offset: usize,
        /// The target's name.
        target: String,
        /// What is missing.
        missing: String,
    },
    /// The input breaks a rule the lowering relies on (e.g. a partitioned op with a non-vector ballot).
    #[error("invalid input at %{result_id}: {message}")]
    Invalid {
        /// The offending result id.
        result_id: u32,
        /// What is wrong.
        message: String,
    },
}

mod builtin_uses;
mod elide;
mod emit;
mod emulate;
mod emulate_stream;
mod entry;
mod hygiene;
mod loader;
#[cfg(feature = "naga")]
pub mod naga_judge;
mod outline;
mod pipeline;
mod rewrite;
mod stages;
mod stream;
mod verdict;
mod verify;

pub use entry::{lower, lower_words};
pub use loader::{assemble, load, Loaded};
pub use pipeline::MAX_ID_BOUND;
pub use verdict::Verdict;
pub use verify::{describe, lower_and_verify, verify_lowered, VerifyError};

/// How an error names what it is about: `instruction %7 (OpFoo)`, or just `the module header`
/// (or another part without a result id).
fn subject(result_id: u32, opcode: &str) -> String {
    if result_id == 0 {
        opcode.to_owned()
    } else {
        format!("instruction %{result_id} ({opcode})")
    }
}
