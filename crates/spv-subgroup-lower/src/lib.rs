//! Lowering of SPIR-V subgroup vote and partitioned operations.
//!
//! [`lower`] rewrites an `rspirv::dr::Module` in place so that it uses only what a
//! [`Target`] has: `OpSubgroupAllKHR`/`AnyKHR`/`AllEqualKHR` become core vote ops or ballots,
//! `OpGroupNonUniformPartitionNV/EXT` becomes a match sequence, and partitioned reduce/scan
//! becomes pointer-jumping shuffles. [`lower_words`] is the same over SPIR-V words.
//! [`lower_and_verify`] also validates the output for the target and blames a failure on the
//! input or on the pass, as the CLI and the C interface report it.
//! The pass never prints, never does IO and never panics on any input.
#![deny(missing_docs)]

pub use spv_subgroup_validate::target::Target;

/// How the partition op compares floating-point keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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

/// Options of the lowering pass.
#[derive(Clone, Debug, Default)]
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

/// What the pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LowerReport {
    /// Whether the module changed at all.
    pub changed: bool,
    /// One entry per kind of rewrite, with how many instructions it replaced, in a stable order.
    pub rewrites: Vec<(String, usize)>,
}

/// Why a module could not be lowered.
#[derive(Debug, thiserror::Error)]
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

mod driver;
mod elide;
mod emit;
mod emulate;
mod hygiene;
mod loader;
mod outline;
mod rewrite;
mod stages;
mod stream;
mod verify;

pub use driver::{lower, lower_words, MAX_ID_BOUND};
pub use loader::{assemble, load, Loaded};
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
