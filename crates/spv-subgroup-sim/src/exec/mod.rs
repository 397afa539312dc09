//! The executor: workgroups of subgroups, each subgroup's lanes in lock step under an active mask.
//!
//! This module holds what its parts share: the machine, a subgroup's registers and frames, the
//! memory objects. The parts, each an `impl Machine` of its own, point up at it only:
//! - `run.rs`: one subgroup's run, its operand values and its control flow (the reconvergence
//!   rule lives there);
//! - `memory.rs`: memory objects loaded, stored and allocated, and a parallel run's shared
//!   objects through the overlay;
//! - `workgroup.rs`: a dispatch's set-up, its workgroups run one by one, the sequential dispatch;
//! - `builtins.rs`: the invocation variables, built-in Input values by their formulas.

use crate::error::Location;
use crate::regpool::{RegisterFiles, Written};
use crate::translate::Program;
use crate::types::{Shape, TypeInfo};
use crate::Undefined;

mod builtins;
mod memory;
mod run;
mod workgroup;

pub(crate) use workgroup::{sequential, setup, size_reads, Setup};

/// A memory object: a buffer, a variable of one invocation or workgroup.
#[derive(Debug)]
pub struct Mem {
    /// Bytes.
    pub bytes: Vec<u8>,
    /// Per byte, whether it was written (empty where the object starts initialised).
    pub(crate) init: Vec<bool>,
    /// How many bytes of `init` are still unwritten: once 0, loads skip the check.
    pub(crate) uninit: usize,
    /// Name for messages (formatted only when a message needs it).
    pub name: MemName,
}

/// What a memory object is, for messages.
#[derive(Clone, Copy, Debug)]
pub enum MemName {
    /// A storage or uniform buffer (set, binding).
    Buffer(u32, u32),
    /// The push constants.
    Push,
    /// A Workgroup variable.
    Workgroup(u32),
    /// A Private, Input or Output variable of one invocation.
    Variable(u32),
    /// A Function variable of one call of one invocation.
    Function(u32),
}

impl std::fmt::Display for MemName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemName::Buffer(s, b) => write!(f, "buffer {s}.{b}"),
            MemName::Push => write!(f, "push constants"),
            MemName::Workgroup(id) => write!(f, "workgroup variable %{id}"),
            MemName::Variable(id) => write!(f, "variable %{id}"),
            MemName::Function(id) => write!(f, "function variable %{id}"),
        }
    }
}

impl Mem {
    /// An initialised object (a buffer, the push constants).
    fn initialised(bytes: Vec<u8>, name: MemName) -> Self {
        Mem {
            bytes,
            init: Vec::new(),
            uninit: 0,
            name,
        }
    }
}

#[derive(Debug)]
struct Frame {
    func: u32,
    pending: Vec<(u32, u128)>,
    cur: Option<(u32, u32, u128)>,
    ret: Option<u32>,
    /// The memory objects of this call's Function variables, freed when it returns.
    locals: Vec<usize>,
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Running,
    Barrier,
    Done,
}

/// One subgroup's registers and control state.
#[derive(Debug)]
pub struct Sg {
    /// Registers: slot `r`, lane `l` at `r * lanes + l`.
    pub regs: Vec<u64>,
    frames: Vec<Frame>,
    state: State,
    /// The lanes that exist (invocations of the workgroup in this subgroup).
    exists: u128,
    /// The workgroup barrier this subgroup waits at, if any.
    waiting_at: Option<Location>,
    /// The blocks entered since the registers were last zeroed (`regpool.rs`).
    written: Written,
    /// What the built-in rows (`Global::promoted`) hold, when they are intact since the last
    /// set-up that filled them (None: fill them all).
    builtins: Option<BuiltinKey>,
}

/// What a subgroup's built-in rows were filled for: its first invocation's local index, its
/// index, its existing lanes, the workgroup's subgroup count, the workgroup size, the
/// workgroup's id and the workgroup counts. Only `wg` changes from one workgroup to the next of
/// a dispatch, and only `WorkgroupId` and `GlobalInvocationId` depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct BuiltinKey {
    first: u32,
    sgi: u32,
    n: u32,
    nsg: u32,
    local: [u32; 3],
    wg: [u32; 3],
    nwg: [u32; 3],
}

/// The machine running one dispatch.
pub struct Machine<'p> {
    /// The program.
    pub p: &'p Program,
    /// Subgroup size.
    pub lanes: u32,
    /// Every lane of the subgroup ([`Machine::full_mask`]).
    pub full: u128,
    /// Memory objects (buffers first).
    pub mems: Vec<Mem>,
    /// In a parallel run, the objects below this index (the buffers and the push constants) are
    /// shared: their bytes are in `ov`, `mems` holds only their names; 0 in a sequential run.
    pub(crate) shared_below: usize,
    /// This workgroup's view of the shared objects in a parallel run.
    pub(crate) ov: crate::overlay::Overlay,
    /// By result id: the atomics that may be deferred in a parallel run.
    pub(crate) defer: &'p [bool],
    /// One past the highest memory object this workgroup used.
    pub(crate) high: usize,
    /// Objects of returned calls' Function variables, reused by the next allocations.
    free: Vec<usize>,
    /// Storage for new objects, from the module's earlier dispatches (`regpool.rs`).
    storage: Vec<crate::regpool::Storage>,
    /// Scratch rows for phis (kept to avoid an allocation per branch).
    phi_rows: Vec<u64>,
    /// Scratch leaves of a loaded or stored value.
    pub scratch: Vec<u64>,
    /// A scratch row: a kernel's result before its active lanes are kept (`crate::fast`).
    pub row_tmp: Vec<u64>,
    /// The row form's constant rows, `lanes` wide (`Program::const_rows`).
    pub const_rows: Vec<u64>,
    /// The subgroups of the previous workgroup, kept so the next one reuses their register
    /// files and frame lists instead of allocating (and the kernel faulting in) fresh ones.
    sg_pool: Vec<Sg>,
    /// The module's register files kept between dispatches: new subgroups take theirs from
    /// there, and the machine gives its own back when dropped.
    files: &'p RegisterFiles,
    pub(crate) rng: u64,
    /// Whether undefined events are recorded.
    pub report: bool,
    /// Recorded undefined events.
    pub undefined: Vec<Undefined>,
    /// Most undefined events recorded (a parallel run's workgroup: those the outcome still had
    /// room for in its snapshot).
    pub(crate) report_cap: usize,
    /// Count of undefined events.
    pub undefined_total: u64,
    /// Instructions executed (per subgroup, whatever the mask).
    pub steps: u64,
    /// Sum over executed instructions of the active lanes.
    pub lane_steps: u64,
    pub(crate) step_limit: u64,
    /// Location of the instruction running (for undefined reports).
    pub here: (u32, u32, u32),
    /// With `Dispatch::trace_size`: the size-revealing instructions, and per function and
    /// instruction how often each ran.
    pub(crate) trace: Option<(crate::size_trace::Marks, Vec<Vec<u64>>)>,
}

impl Drop for Machine<'_> {
    /// The register files go back to the module for its next dispatches, all zero again.
    fn drop(&mut self) {
        let (files, lanes) = (self.files, self.lanes);
        files.give(self.sg_pool.drain(..).map(|mut sg| {
            sg.written.zero(&files.table, &mut sg.regs, lanes, false);
            files.table.zero_globals(&mut sg.regs, lanes);
            sg.regs
        }));
        // Big objects (buffers) are freed, not kept.
        let mems = std::mem::take(&mut self.mems);
        let unused = std::mem::take(&mut self.storage);
        files.give_objects(mems.into_iter().map(|m| (m.bytes, m.init)).chain(unused));
    }
}

impl std::fmt::Debug for Machine<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Machine")
            .field("lanes", &self.lanes)
            .field("steps", &self.steps)
            .finish()
    }
}

/// Most undefined events kept in the outcome (the total is always counted).
pub(crate) const MAX_REPORTS: usize = 100_000;

/// A stand-in type for values whose type the executor does not track (phi inputs that are undefined).
pub static UNKNOWN: TypeInfo = TypeInfo {
    shape: Shape::Void,
    leaves: 0,
    size: 0,
    align: 1,
    layout: Vec::new(),
};

/// Whether the leaves of `t` cover its bytes exactly, in order with no gaps (a store of a whole
/// value then writes every byte: scalars and vectors, the built-ins' types).
pub(crate) fn whole(t: &TypeInfo) -> bool {
    let mut end = 0;
    for &(o, s) in &t.layout {
        if o != end {
            return false;
        }
        end = o + s.bytes();
    }
    end == t.size && !t.layout.is_empty()
}

/// Spreads wide components (masks are 128-bit) over the leaves of `t` by their widths.
pub fn split_wide(comps: &[u128], t: &TypeInfo) -> Vec<u64> {
    if comps.len() == t.leaves as usize {
        return comps.iter().map(|c| *c as u64).collect();
    }
    // One wide value over several leaves (uvec4 / uvec2 / u64 masks).
    let mut v = comps.first().copied().unwrap_or(0);
    t.layout
        .iter()
        .map(|(_, s)| {
            let w = s.width();
            let x = (v as u64) & crate::num::mask(w);
            v = if w >= 128 { 0 } else { v >> w };
            x
        })
        .collect()
}
