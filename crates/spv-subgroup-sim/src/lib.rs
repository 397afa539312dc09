//! Executes compute entry points of SPIR-V modules at any subgroup size from 1 to 128.
//!
//! The module is translated once ([`Module::new`]) into dense tables (result ids to register
//! slots, labels to block indices), then [`Module::run`] executes a dispatch: workgroups one after
//! another, each as subgroups whose lanes run in lock step under an active mask, split and
//! reconverged by structured control flow (the rule is written down in `exec.rs`).
//! Subgroup instructions have the SPIR-V spec's semantics natively.
//! Values the spec leaves undefined (reads from inactive or out-of-range lanes, bit queries of
//! empty ballots, uninitialised memory, `OpUndef`, division by zero) are seeded random bits and
//! are reported in [`Outcome::undefined`] when [`Dispatch::report_undefined`] is set.
//! Nothing here panics or prints: every failure is an [`Error`] naming the instruction.

#![deny(missing_docs)]

mod alu;
mod error;
mod exec;
mod glsl;
mod group;
mod num;
mod ops;
mod size_trace;
mod translate;
mod types;
mod vector;

use std::collections::BTreeMap;

pub use error::{Error, ErrorKind, Location, Result};

/// Default step limit: instructions executed per dispatch (counted once per subgroup).
pub const DEFAULT_STEP_LIMIT: u64 = 50_000_000;

/// A translated module, ready to run.
#[derive(Clone, Debug)]
pub struct Module {
    program: translate::Program,
}

/// What to run and with which resources.
#[derive(Clone, Debug)]
pub struct Dispatch {
    /// The entry point's name (needed when the module has several compute entry points).
    pub entry: Option<String>,
    /// Lanes per subgroup, 1 to 128.
    pub subgroup_size: u32,
    /// Workgroups in x, y, z.
    pub workgroups: [u32; 3],
    /// Buffers by (descriptor set, binding): storage and uniform buffers.
    pub buffers: BTreeMap<(u32, u32), Vec<u8>>,
    /// Push-constant bytes.
    pub push_constants: Vec<u8>,
    /// Seed of the random bits given for undefined values.
    pub seed: u64,
    /// Record each undefined value read (the count is always kept).
    pub report_undefined: bool,
    /// Most instructions to execute before stopping with [`ErrorKind::StepLimit`].
    pub step_limit: u64,
    /// Count the executed instructions whose results depend on the subgroup size
    /// ([`Outcome::size_reads`]).
    pub trace_size: bool,
}

impl Default for Dispatch {
    fn default() -> Self {
        Dispatch {
            entry: None,
            subgroup_size: 32,
            workgroups: [1, 1, 1],
            buffers: BTreeMap::new(),
            push_constants: Vec::new(),
            seed: 0,
            report_undefined: false,
            step_limit: DEFAULT_STEP_LIMIT,
            trace_size: false,
        }
    }
}

/// An undefined value that was produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undefined {
    /// What was undefined.
    pub what: String,
    /// The instruction that produced it.
    pub location: Location,
}

/// The result of a dispatch.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Every bound buffer's contents after the dispatch.
    pub buffers: BTreeMap<(u32, u32), Vec<u8>>,
    /// Undefined values produced (the first 100000, when reporting).
    pub undefined: Vec<Undefined>,
    /// How many undefined values were produced.
    pub undefined_total: u64,
    /// Instructions executed, counted once per subgroup.
    pub steps: u64,
    /// Instructions executed times active lanes.
    pub lane_steps: u64,
    /// The most memory objects (buffers, variables) that existed at once in a workgroup: the
    /// storage of returned calls' Function variables is reused, so this stays bounded.
    pub memory_objects: usize,
    /// With [`Dispatch::trace_size`]: the executed instructions whose results depend on the
    /// subgroup size (loads of `SubgroupSize`, `SubgroupLocalInvocationId`, `SubgroupId`,
    /// `NumSubgroups` and the masks; every subgroup instruction), in module order.
    pub size_reads: Vec<SizeRead>,
}

/// An executed instruction whose result depends on the subgroup size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeRead {
    /// What it reads (`reads BuiltIn SubgroupSize`, `subgroup operation OpGroupNonUniformIAdd`).
    pub what: String,
    /// The instruction.
    pub location: Location,
    /// How many times it ran (once per subgroup per execution).
    pub count: u64,
}

impl Module {
    /// Translates a module given as words.
    pub fn new(words: &[u32]) -> Result<Self> {
        Self::with_spec_constants(words, &BTreeMap::new())
    }

    /// Translates a module given as bytes (little-endian words).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() % 4 != 0 {
            return Err(error::malformed(format!(
                "{} bytes is not a whole number of words",
                bytes.len()
            )));
        }
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Self::new(&words)
    }

    /// Translates a module, overriding specialization constants by `SpecId`.
    pub fn with_spec_constants(words: &[u32], spec: &BTreeMap<u32, u64>) -> Result<Self> {
        Ok(Module {
            program: translate::translate(words, spec)?,
        })
    }

    /// The names of the module's compute entry points.
    pub fn entry_points(&self) -> Vec<String> {
        self.program
            .entries
            .iter()
            .map(|e| e.name.clone())
            .collect()
    }

    /// Runs a dispatch.
    pub fn run(&self, dispatch: &Dispatch) -> Result<Outcome> {
        exec::dispatch(&self.program, dispatch)
    }
}
