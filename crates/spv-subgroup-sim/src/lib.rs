//! Executes compute entry points of SPIR-V modules at any subgroup size from 1 to 128.
//!
//! The module is translated once ([`Module::new`]) into dense tables (result ids to register
//! slots, labels to block indices), then [`Module::run`] executes a dispatch: workgroups with the
//! result of running them one after another (on every core, [`Dispatch::with_threads`]), each as
//! subgroups whose lanes run in lock step under an active mask, split and reconverged by
//! structured control flow (the rule is written down in `exec/run.rs`).
//! Subgroup instructions have the SPIR-V spec's semantics natively.
//! Values the spec leaves undefined (reads from inactive or out-of-range lanes, bit queries of
//! empty ballots, uninitialised memory, `OpUndef`, division by zero) are random bits seeded by
//! [`Dispatch::seed`] and the workgroup (whichever thread runs it), and are reported in [`Outcome::undefined`] when [`Dispatch::report_undefined`] is set.
//! Nothing here panics or prints: every failure is an [`Error`] naming the instruction.

#![deny(missing_docs)]

mod alu;
mod error;
mod exec;
mod fast;
mod glsl;
mod group;
mod group_row;
mod kernels;
mod memrow;
mod num;
mod opclass;
mod ops;
mod overlay;
mod parallel;
mod promote;
mod readonly;
mod regpool;
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
    /// By result id: the atomics a parallel run may defer (`parallel::deferrable_atomics`).
    deferrable: Vec<bool>,
    /// Register files kept between dispatches (`regpool.rs`).
    files: regpool::RegisterFiles,
}

/// What to run and with which resources: [`Dispatch::default`] (one workgroup of subgroups of
/// 32, no buffers), then the `with_*` methods (more settings may come; the struct cannot be built
/// field by field).
#[derive(Clone, Debug)]
#[non_exhaustive]
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
    /// Seed of the random bits given for undefined values (each workgroup draws from its own
    /// stream, seeded by this and its index, so the bits do not depend on the thread count).
    pub seed: u64,
    /// Record each undefined value read (the count is always kept).
    pub report_undefined: bool,
    /// Most instructions to execute before stopping with [`ErrorKind::StepLimit`].
    pub step_limit: u64,
    /// Count the executed instructions whose results depend on the subgroup size
    /// ([`Outcome::size_reads`]).
    pub trace_size: bool,
    /// Threads the workgroups run on (0: one per core). The outcome is the same whatever the
    /// count: exactly that of running the workgroups one after another.
    pub threads: usize,
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
            threads: 0,
        }
    }
}

impl Dispatch {
    /// This dispatch of the entry point `name` (needed when the module has several).
    pub fn with_entry(mut self, name: impl Into<String>) -> Self {
        self.entry = Some(name.into());
        self
    }

    /// This dispatch with `size` lanes per subgroup (1 to 128).
    pub fn with_subgroup_size(mut self, size: u32) -> Self {
        self.subgroup_size = size;
        self
    }

    /// This dispatch with `workgroups` in x, y, z.
    pub fn with_workgroups(mut self, workgroups: [u32; 3]) -> Self {
        self.workgroups = workgroups;
        self
    }

    /// This dispatch with `buffers` by (descriptor set, binding), replacing any set before.
    pub fn with_buffers(mut self, buffers: BTreeMap<(u32, u32), Vec<u8>>) -> Self {
        self.buffers = buffers;
        self
    }

    /// This dispatch with the buffer at (descriptor set, binding) holding `bytes`.
    pub fn with_buffer(mut self, binding: (u32, u32), bytes: Vec<u8>) -> Self {
        self.buffers.insert(binding, bytes);
        self
    }

    /// This dispatch with the push-constant bytes.
    pub fn with_push_constants(mut self, bytes: Vec<u8>) -> Self {
        self.push_constants = bytes;
        self
    }

    /// This dispatch with the seed of the bits given for undefined values.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// This dispatch recording each undefined value read (or not).
    pub fn with_report_undefined(mut self, report: bool) -> Self {
        self.report_undefined = report;
        self
    }

    /// This dispatch with at most `steps` instructions executed.
    pub fn with_step_limit(mut self, steps: u64) -> Self {
        self.step_limit = steps;
        self
    }

    /// Counts the instructions whose results depend on the subgroup size
    /// ([`Dispatch::trace_size`]).
    pub fn with_trace_size(mut self, trace: bool) -> Self {
        self.trace_size = trace;
        self
    }

    /// This dispatch on `threads` threads (0, the default: one per core; 1: this thread only).
    /// Workgroups run in parallel, each against the newest committed state, and are committed in
    /// workgroup order; one that read what an earlier one committed after its start wrote runs
    /// again: buffers, errors, steps, undefined values and size reads are the same at every
    /// thread count.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }
}

/// An undefined value that was produced.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Undefined {
    /// What was undefined.
    pub what: String,
    /// The instruction that produced it.
    pub location: Location,
}

/// The result of a dispatch.
#[derive(Clone, Debug)]
#[non_exhaustive]
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

/// Resolves the forms the executor tries before its general paths, from the promoted
/// variables as they stand: the straight-line and row forms, then the memory forms (which turn
/// a fused access chain's straight-line form into a no-op), then the subgroup row forms (none
/// with the general paths only).
fn prepare_forms(p: &mut translate::Program) {
    fast::prepare(p);
    memrow::prepare(p);
    if p.general_only {
        group_row::unprepare(p);
    } else {
        group_row::prepare(p);
    }
}

impl Module {
    /// Translates a module given as words.
    pub fn new(words: &[u32]) -> Result<Self> {
        Self::with_spec_constants(words, &BTreeMap::new())
    }

    /// Translates a module given as bytes (little-endian words).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if !bytes.len().is_multiple_of(4) {
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
        let mut program = translate::translate(words, spec)?;
        // Which atomics a parallel run may defer and which buffers nothing writes, read from
        // the module's own uses (before promotion and the row forms, which only re-express
        // those uses).
        let deferrable = parallel::deferrable_atomics(&program);
        program.never_written = readonly::never_written(&program);
        promote::promote(&mut program);
        prepare_forms(&mut program);
        Ok(Module {
            deferrable,
            files: regpool::RegisterFiles::new(&program),
            program,
        })
    }

    /// The same module with every Function variable in memory (none kept in registers): for
    /// tests that prove the register form gives exactly what memory gives.
    #[doc(hidden)]
    pub fn with_variables_in_memory(mut self) -> Self {
        promote::unpromote(&mut self.program);
        // The row forms read operand registers: resolved again.
        prepare_forms(&mut self.program);
        self
    }

    /// The same module with the compiled kernels, the straight-line form, the subgroup and
    /// memory row forms and load forwarding off (every instruction through the general paths):
    /// for tests that prove those forms give exactly what the general paths give.
    #[doc(hidden)]
    pub fn with_general_paths_only(mut self) -> Self {
        promote::unforward(&mut self.program);
        self.program.general_only = true;
        self.program.memory_lane_by_lane = true;
        prepare_forms(&mut self.program);
        self
    }

    /// The same module with every subgroup instruction on the general path (no row form): for
    /// tests that prove the row forms give exactly what it gives.
    #[doc(hidden)]
    pub fn with_general_subgroup_ops(mut self) -> Self {
        group_row::unprepare(&mut self.program);
        self
    }

    /// How many subgroup instructions have a row form (for the tests above to prove they ran).
    #[doc(hidden)]
    pub fn subgroup_row_forms(&self) -> usize {
        group_row::count(&self.program)
    }

    /// The same module with buffer, push-constant and Workgroup memory accessed lane by lane
    /// only (no row form, `memrow/`): for tests that prove the rows give exactly what the
    /// per-lane path gives.
    #[doc(hidden)]
    pub fn with_memory_lane_by_lane(mut self) -> Self {
        self.program.memory_lane_by_lane = true;
        self
    }

    /// Checks after every workgroup that the register rows zeroed again cover every row it
    /// wrote (`regpool.rs`): a row left not zero fails the dispatch. For tests only (it
    /// reads the whole register file per workgroup).
    #[doc(hidden)]
    pub fn with_register_check(mut self) -> Self {
        self.files.check = true;
        self
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
    ///
    /// ```
    /// use spv_subgroup_sim::{Dispatch, Module};
    ///
    /// # fn example_module() -> Vec<u32> {
    /// #     // `out[0] = subgroupAdd(1)` in a 64-lane workgroup, built with rspirv.
    /// #     use rspirv::dr::Operand;
    /// #     use rspirv::spirv::*;
    /// #     use rspirv::binary::Assemble;
    /// #     let mut b = rspirv::dr::Builder::new();
    /// #     b.set_version(1, 3);
    /// #     b.capability(Capability::Shader);
    /// #     b.capability(Capability::GroupNonUniformArithmetic);
    /// #     b.memory_model(AddressingModel::Logical, MemoryModel::GLSL450);
    /// #     let void = b.type_void();
    /// #     let void_fn = b.type_function(void, vec![]);
    /// #     let uint = b.type_int(32, 0);
    /// #     let array = b.type_runtime_array(uint);
    /// #     let block = b.type_struct(vec![array]);
    /// #     let block_ptr = b.type_pointer(None, StorageClass::StorageBuffer, block);
    /// #     let uint_ptr = b.type_pointer(None, StorageClass::StorageBuffer, uint);
    /// #     let buffer = b.variable(block_ptr, None, StorageClass::StorageBuffer, None);
    /// #     b.decorate(array, Decoration::ArrayStride, vec![Operand::LiteralBit32(4)]);
    /// #     b.member_decorate(block, 0, Decoration::Offset, vec![Operand::LiteralBit32(0)]);
    /// #     b.decorate(block, Decoration::Block, vec![]);
    /// #     b.decorate(buffer, Decoration::DescriptorSet, vec![Operand::LiteralBit32(0)]);
    /// #     b.decorate(buffer, Decoration::Binding, vec![Operand::LiteralBit32(0)]);
    /// #     let zero = b.constant_bit32(uint, 0);
    /// #     let one = b.constant_bit32(uint, 1);
    /// #     let subgroup = b.constant_bit32(uint, Scope::Subgroup as u32);
    /// #     let main = b.begin_function(void, None, FunctionControl::NONE, void_fn).unwrap();
    /// #     b.begin_block(None).unwrap();
    /// #     let sum = b.group_non_uniform_i_add(uint, None, subgroup, GroupOperation::Reduce, one, None).unwrap();
    /// #     let out = b.access_chain(uint_ptr, None, buffer, vec![zero, zero]).unwrap();
    /// #     b.store(out, sum, None, vec![]).unwrap();
    /// #     b.ret().unwrap();
    /// #     b.end_function().unwrap();
    /// #     b.entry_point(ExecutionModel::GLCompute, main, "main", vec![]);
    /// #     b.execution_mode(main, ExecutionMode::LocalSize, vec![64, 1, 1]);
    /// #     b.module().assemble()
    /// # }
    /// // A compute shader that stores `subgroupAdd(1)`, the number of active lanes, into word 0 of
    /// // the buffer at set 0, binding 0; its workgroup has 64 lanes.
    /// let module = Module::new(&example_module())?;
    /// for (size, lanes) in [(1, 1), (16, 16), (128, 64)] {
    ///     let dispatch = Dispatch::default()
    ///         .with_subgroup_size(size)
    ///         .with_buffer((0, 0), vec![0; 4]);
    ///     let outcome = module.run(&dispatch)?;
    ///     assert_eq!(outcome.buffers[&(0, 0)], u32::to_le_bytes(lanes));
    /// }
    /// # Ok::<(), spv_subgroup_sim::Error>(())
    /// ```
    pub fn run(&self, dispatch: &Dispatch) -> Result<Outcome> {
        parallel::dispatch(&self.program, dispatch, &self.deferrable, &self.files)
    }
}
