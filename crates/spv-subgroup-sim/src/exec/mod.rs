//! The executor: workgroups of subgroups, each subgroup's lanes in lock step under an active mask.
//!
//! # Reconvergence (the one place this rule lives)
//!
//! Each function activation keeps a list of pending (block, lane mask) pairs.
//! When the current block's terminator runs, each successor receives the lanes that branch to it
//! and those lanes wait in the list, merged with any lanes already waiting there.
//! The next block to run is always the pending block that comes first in the function's layout
//! order, with every lane waiting at it.
//! SPIR-V requires a block to appear after the blocks that dominate it, and structured control
//! flow (SPIR-V 2.11, "Structured Control Flow") lays a construct's blocks out before its merge
//! block, so lanes that leave a selection or loop early wait at the merge block until every lane
//! of the construct arrives: the selection/loop merge is where the divergent lanes of a construct
//! reconverge, as the spec's structured reconvergence and maximal-reconvergence rules say.
//! Lanes that take a back edge run the loop again before lanes that left it (the header comes
//! first in layout order), so a loop's exit lanes reconverge only after the last lane leaves.
//! A function call runs the callee with the caller's current mask and returns when all of those
//! lanes have returned.
//! `OpControlBarrier` with Workgroup execution scope suspends the subgroup; when every subgroup of
//! the workgroup is suspended at a barrier or finished, all resume.

use crate::error::{malformed, unsupported, Error, ErrorKind, Location, Result};
use crate::num::{lanes, read_le, write_le};
use crate::regpool::{RegisterFiles, Written};
use crate::translate::{IdKind, Inst, Program, Src};
use crate::types::{Scalar, Shape, TypeInfo};
use crate::{Dispatch, Outcome, Undefined};

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

impl<'p> Machine<'p> {
    /// Fresh random bits (splitmix64).
    pub fn random(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Records an undefined value and returns seeded random bits of `s`'s width.
    pub fn undefined(&mut self, what: &str, s: Scalar) -> u64 {
        self.undefined_total += 1;
        if self.report && self.undefined.len() < self.report_cap {
            let (word, op, id) = self.here;
            self.undefined.push(Undefined {
                what: what.to_owned(),
                location: Location::at(word, op, (id != 0).then_some(id)),
            });
        }
        let r = self.random();
        match s {
            Scalar::Bool => r & 1,
            Scalar::Ptr => u64::MAX,
            _ => r & crate::num::mask(s.width()),
        }
    }

    /// The type of a type id.
    pub fn ty(&self, id: u32) -> Result<&'p TypeInfo> {
        self.p.ty(id)
    }

    /// Where an operand id's value lives, with its type.
    pub fn val(&self, id: u32) -> Result<(Src, &'p TypeInfo)> {
        self.p.val(id)
    }

    /// Leaf `c` of a value at `lane`.
    pub fn get(&mut self, sg: &Sg, v: (Src, &TypeInfo), c: u32, lane: u32) -> u64 {
        match v.0 {
            // Out-of-range slots only arise from ill-typed modules; they read 0 rather than panic.
            Src::Reg(r) => sg
                .regs
                .get(slot(r, c, self.lanes, lane))
                .copied()
                .unwrap_or(0),
            Src::Const(k) => self
                .p
                .consts
                .get(k as usize + c as usize)
                .copied()
                .unwrap_or(0),
            Src::Undef => {
                let s = v.1.layout.get(c as usize).map_or(
                    Scalar::Int {
                        width: 32,
                        signed: false,
                    },
                    |l| l.1,
                );
                self.undefined("an OpUndef value", s)
            }
            Src::None => 0,
        }
    }

    /// A constant scalar operand (scopes, cluster sizes).
    pub fn constant(&self, id: u32) -> Result<u64> {
        self.p.constant(id)
    }

    /// Reads a value of type `ty` from memory at `ptr`.
    pub fn load(&mut self, ptr: u64, ty: &TypeInfo, out: &mut Vec<u64>) -> Result<()> {
        let (obj, off) = ((ptr >> 32) as usize, ptr as u32);
        if obj >= self.mems.len() {
            return Err(Error::new(ErrorKind::OutOfBounds(
                "a pointer to no memory (undefined pointer)".into(),
            )));
        }
        for &(o, s) in &ty.layout {
            let at = u64::from(off) + u64::from(o);
            if obj < self.shared_below {
                out.push(self.shared_load(obj, at, s)?);
                continue;
            }
            let n = u64::from(s.bytes());
            let m = &self.mems[obj];
            if at + n > m.bytes.len() as u64 {
                return Err(Error::new(ErrorKind::OutOfBounds(format!(
                    "reading {n} bytes at offset {at} of {} ({} bytes)",
                    m.name,
                    m.bytes.len()
                ))));
            }
            let (a, b) = (at as usize, (at + n) as usize);
            let uninit = m.uninit > 0 && m.init.get(a..b).is_some_and(|i| i.contains(&false));
            let mut v = read_le(&m.bytes[a..b]);
            if uninit {
                let name = format!("uninitialised memory of {}", self.mems[obj].name);
                v = self.undefined(&name, s);
            } else if s == Scalar::Bool {
                v = u64::from(v != 0);
            }
            out.push(v);
        }
        Ok(())
    }

    /// Reads the scalar `s` at byte `o` of what `ptr` points to (`load` of a one-leaf type).
    pub fn load_scalar(&mut self, ptr: u64, o: u32, s: Scalar) -> Result<u64> {
        let (obj, off) = ((ptr >> 32) as usize, ptr as u32);
        if obj < self.shared_below {
            return self.shared_load(obj, u64::from(off) + u64::from(o), s);
        }
        let Some(m) = self.mems.get(obj) else {
            return Err(Error::new(ErrorKind::OutOfBounds(
                "a pointer to no memory (undefined pointer)".into(),
            )));
        };
        let at = u64::from(off) + u64::from(o);
        let n = u64::from(s.bytes());
        let (a, b) = (at as usize, (at + n) as usize);
        let Some(bytes) = m.bytes.get(a..b).filter(|_| at + n <= m.bytes.len() as u64) else {
            return Err(Error::new(ErrorKind::OutOfBounds(format!(
                "reading {n} bytes at offset {at} of {} ({} bytes)",
                m.name,
                m.bytes.len()
            ))));
        };
        let v = read_le(bytes);
        if m.uninit > 0 && m.init.get(a..b).is_some_and(|i| i.contains(&false)) {
            let name = format!("uninitialised memory of {}", m.name);
            return Ok(self.undefined(&name, s));
        }
        Ok(if s == Scalar::Bool {
            u64::from(v != 0)
        } else {
            v
        })
    }

    /// Writes the scalar `s` at byte `o` of what `ptr` points to (`store` of a one-leaf type).
    pub fn store_scalar(&mut self, ptr: u64, o: u32, s: Scalar, v: u64) -> Result<()> {
        let (obj, off) = ((ptr >> 32) as usize, ptr as u32);
        if obj < self.shared_below {
            return self.shared_store(obj, u64::from(off) + u64::from(o), s, v);
        }
        let Some(m) = self.mems.get_mut(obj) else {
            return Err(Error::new(ErrorKind::OutOfBounds(
                "a pointer to no memory (undefined pointer)".into(),
            )));
        };
        let at = u64::from(off) + u64::from(o);
        let n = u64::from(s.bytes());
        let (a, b) = (at as usize, (at + n) as usize);
        let len = m.bytes.len();
        let Some(bytes) = m.bytes.get_mut(a..b).filter(|_| at + n <= len as u64) else {
            return Err(Error::new(ErrorKind::OutOfBounds(format!(
                "writing {n} bytes at offset {at} of {} ({len} bytes)",
                m.name
            ))));
        };
        write_le(bytes, v);
        if m.uninit > 0 {
            for x in m.init.get_mut(a..b).unwrap_or(&mut []) {
                if !*x {
                    *x = true;
                    m.uninit -= 1;
                }
            }
        }
        Ok(())
    }

    /// Writes a value of type `ty` to memory at `ptr`.
    pub fn store(&mut self, ptr: u64, ty: &TypeInfo, vals: &[u64]) -> Result<()> {
        let (obj, off) = ((ptr >> 32) as usize, ptr as u32);
        if obj < self.shared_below {
            for (&(o, s), v) in ty.layout.iter().zip(vals) {
                self.shared_store(obj, u64::from(off) + u64::from(o), s, *v)?;
            }
            return Ok(());
        }
        let m = self.mems.get_mut(obj).ok_or_else(|| {
            Error::new(ErrorKind::OutOfBounds(
                "a pointer to no memory (undefined pointer)".into(),
            ))
        })?;
        for (&(o, s), v) in ty.layout.iter().zip(vals) {
            let at = u64::from(off) + u64::from(o);
            let n = u64::from(s.bytes());
            if at + n > m.bytes.len() as u64 {
                return Err(Error::new(ErrorKind::OutOfBounds(format!(
                    "writing {n} bytes at offset {at} of {} ({} bytes)",
                    m.name,
                    m.bytes.len()
                ))));
            }
            let (a, b) = (at as usize, (at + n) as usize);
            write_le(&mut m.bytes[a..b], *v);
            if m.uninit > 0 {
                for x in m.init.get_mut(a..b).unwrap_or(&mut []) {
                    if !*x {
                        *x = true;
                        m.uninit -= 1;
                    }
                }
            }
        }
        Ok(())
    }

    /// A new uninitialised memory object (reusing a freed one's storage); returns its pointer.
    pub fn alloc(&mut self, size: u32, name: MemName) -> u64 {
        let size = size as usize;
        if let Some(obj) = self.free.pop() {
            if let Some(m) = self.mems.get_mut(obj) {
                self.high = self.high.max(obj + 1);
                m.bytes.clear();
                m.bytes.resize(size, 0);
                m.init.clear();
                m.init.resize(size, false);
                m.uninit = size;
                m.name = name;
                return (obj as u64) << 32;
            }
        }
        let obj = self.mems.len() as u64;
        self.high = self.high.max(self.mems.len() + 1);
        // Kept storage (emptied here) or new: the same zeroed bytes and unwritten flags.
        let (mut bytes, mut init) = self.storage.pop().unwrap_or_default();
        bytes.clear();
        bytes.resize(size, 0);
        init.clear();
        init.resize(size, false);
        self.mems.push(Mem {
            bytes,
            init,
            uninit: size,
            name,
        });
        obj << 32
    }

    /// The length in bytes of memory object `obj` (0 for none).
    pub fn mem_len(&self, obj: usize) -> usize {
        if obj < self.shared_below {
            self.ov.len(obj)
        } else {
            self.mems.get(obj).map_or(0, |m| m.bytes.len())
        }
    }

    /// Allocates a Function variable of the running call (freed when the call returns).
    pub fn alloc_local(&mut self, sg: &mut Sg, size: u32, id: u32) -> u64 {
        let ptr = self.alloc(size, MemName::Function(id));
        if let Some(f) = sg.frames.last_mut() {
            f.locals.push((ptr >> 32) as usize);
        }
        ptr
    }

    fn write(&self, sg: &mut Sg, res: u32, c: u32, lane: u32, v: u64) {
        if let Some(r) = sg.regs.get_mut(slot(res, c, self.lanes, lane)) {
            *r = v;
        }
    }

    /// Copies `leaves` leaves of `v` into the registers from `dst` for the lanes of `mask`: row
    /// by row, or lane by lane (leaves inner) for `OpUndef`, whose bits are drawn in that order.
    fn copy_value(&mut self, sg: &mut Sg, v: (Src, &TypeInfo), leaves: u32, dst: u32, mask: u128) {
        let n = self.lanes as usize;
        match v.0 {
            Src::Undef => {
                for l in lanes(mask) {
                    for c in 0..leaves {
                        let x = self.get(sg, v, c, l);
                        self.write(sg, dst, c, l, x);
                    }
                }
            }
            src => {
                let full = self.full_mask();
                for c in 0..leaves {
                    let to = (dst + c) as usize * n;
                    if to + n > sg.regs.len() {
                        continue;
                    }
                    match src {
                        Src::Reg(r) => {
                            let from = (r + c) as usize * n;
                            if from + n > sg.regs.len() {
                                // Out-of-range slots read 0, as `get` does.
                                for l in lanes(mask) {
                                    sg.regs[to + l as usize] = 0;
                                }
                            } else if mask == full {
                                sg.regs.copy_within(from..from + n, to);
                            } else {
                                for l in lanes(mask) {
                                    sg.regs[to + l as usize] = sg.regs[from + l as usize];
                                }
                            }
                        }
                        _ => {
                            let x = match src {
                                Src::Const(k) => {
                                    self.p.consts.get((k + c) as usize).copied().unwrap_or(0)
                                }
                                _ => 0,
                            };
                            for l in lanes(mask) {
                                sg.regs[to + l as usize] = x;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Moves `mask` lanes from block `from` to block `to` of the top frame: phis, then pending.
    fn goto(&mut self, sg: &mut Sg, from: u32, to: u32, mask: u128) -> Result<()> {
        if mask == 0 {
            return Ok(());
        }
        let Some(frame) = sg.frames.last() else {
            return Ok(());
        };
        let func = &self.p.funcs[frame.func as usize];
        let blk = func
            .blocks
            .get(to as usize)
            .ok_or_else(|| malformed("branch to a missing block"))?;
        if !blk.phis.is_empty() {
            self.phis(sg, func, blk, from, mask)?;
        }
        let frame = sg.frames.last_mut().ok_or_else(|| malformed("no frame"))?;
        match frame.pending.iter_mut().find(|(b, _)| *b == to) {
            Some(e) => e.1 |= mask,
            None => frame.pending.push((to, mask)),
        }
        Ok(())
    }

    /// Writes the phis of block `blk` of `func` for the lanes of `mask` entering it from block
    /// `from`.
    fn phis(
        &mut self,
        sg: &mut Sg,
        func: &'p crate::translate::Func,
        blk: &'p crate::translate::Block,
        from: u32,
        mask: u128,
    ) -> Result<()> {
        // Every phi reads its input before any phi of the block is written (they are parallel
        // copies): whole rows are staged, then written for the lanes of `mask`.
        let n = self.lanes as usize;
        let mut staged = std::mem::take(&mut self.phi_rows);
        staged.clear();
        for phi in &blk.phis {
            let src = phi
                .incoming
                .iter()
                .find(|(p, _)| *p == from)
                .map(|x| x.1)
                .ok_or_else(|| {
                    malformed(format!(
                        "OpPhi of %{} has no value for the edge from %{}",
                        blk.label, func.blocks[from as usize].label
                    ))
                    .at(&Location::at(phi.word, spirv::Op::Phi as u32, None))
                })?;
            let ti = self.phi_type(phi.res, phi.leaves);
            for c in 0..phi.leaves {
                match src {
                    Src::Reg(r) => {
                        let at = (r as usize + c as usize) * n;
                        match sg.regs.get(at..at + n) {
                            Some(row) => staged.extend_from_slice(row),
                            None => staged.resize(staged.len() + n, 0),
                        }
                    }
                    _ => {
                        let base = staged.len();
                        staged.resize(base + n, 0);
                        for lane in lanes(mask) {
                            let v = self.get(sg, (src, ti), c, lane);
                            if let Some(x) = staged.get_mut(base + lane as usize) {
                                *x = v;
                            }
                        }
                    }
                }
            }
        }
        let mut rows = staged.chunks_exact(n.max(1));
        for phi in &blk.phis {
            for c in 0..phi.leaves {
                let (Some(row), Some(dst)) = (rows.next(), {
                    let at = (phi.res as usize + c as usize) * n;
                    sg.regs.get_mut(at..at + n)
                }) else {
                    continue;
                };
                copy_lanes(dst, row, mask, self.full_mask());
            }
        }
        self.phi_rows = staged;
        Ok(())
    }

    fn phi_type(&self, _res: u32, leaves: u32) -> &'p TypeInfo {
        // Undefined phi inputs need a scalar type for their width; 64 random bits masked later is fine
        // only for the leaf count, so use a 32-bit integer layout of the right length where unknown.
        let _ = leaves;
        &UNKNOWN
    }

    /// Runs subgroup `sg` until it finishes or reaches a workgroup barrier.
    fn run_sg(&mut self, sg: &mut Sg) -> Result<()> {
        while sg.state == State::Running {
            let Some(frame) = sg.frames.last_mut() else {
                sg.state = State::Done;
                break;
            };
            let Some((block, pc, mask)) = frame.cur else {
                // Pick the first pending block in layout order.
                let Some(k) = frame
                    .pending
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, (b, _))| *b)
                    .map(|x| x.0)
                else {
                    // The call returned: its Function variables are free for the next ones, so
                    // memory stays bounded however many calls run (a dangling pointer to one
                    // is undefined behaviour in SPIR-V; it reads whatever the next user wrote).
                    if let Some(done) = sg.frames.pop() {
                        self.free.extend(done.locals);
                    }
                    // The caller resumes after its call: variables it passed as promoted
                    // parameters get back what the callee stored.
                    if let Some(caller) = sg.frames.last() {
                        if let Some((_, pc, m)) = caller.cur {
                            let insts = &self.p.funcs[caller.func as usize].insts;
                            if let Some(call) =
                                (pc as usize).checked_sub(1).and_then(|i| insts.get(i))
                            {
                                if !call.bindings.is_empty() {
                                    self.bind_out(sg, &call.bindings, m);
                                }
                            }
                        }
                    }
                    continue;
                };
                let (b, m) = frame.pending.swap_remove(k);
                let start = self.p.funcs[frame.func as usize].blocks[b as usize].start;
                frame.cur = Some((b, start, m));
                // Its rows (and its phis', written on the way in) are zeroed after the workgroup.
                sg.written.enter(&self.files.table, frame.func, b);
                continue;
            };
            let fidx = frame.func as usize;
            let program: &'p Program = self.p;
            let func = &program.funcs[fidx];
            let (mut block, mut mask) = (block, mask);
            let mut end = func.blocks[block as usize].end;
            let mut lane_count = u64::from(mask.count_ones());
            // The block's instructions back to back: only one that may leave the block (a
            // terminator, a call, a barrier) records where the frame resumes and ends the run.
            let mut pc = pc;
            loop {
                if pc >= end {
                    return Err(malformed(format!(
                        "block %{} has no terminator",
                        func.blocks[block as usize].label
                    )));
                }
                let inst = &func.insts[pc as usize];
                self.steps += 1;
                self.lane_steps += lane_count;
                if self.steps > self.step_limit {
                    return Err(
                        Error::new(ErrorKind::StepLimit(self.step_limit)).at(&inst.location())
                    );
                }
                if let Some((marks, counts)) = self.trace.as_mut() {
                    let i = pc as usize;
                    if marks
                        .get(fidx)
                        .and_then(|m| m.get(i))
                        .is_some_and(Option::is_some)
                    {
                        if let Some(c) = counts.get_mut(fidx).and_then(|c| c.get_mut(i)) {
                            *c += 1;
                        }
                    }
                }
                pc += 1;
                // The straight-line form, the row form and promoted variables straight away
                // (no decoding on the way).
                if let Some(f) = &inst.fast {
                    if self.run_fast(sg, f, mask) {
                        continue;
                    }
                }
                // A branch all of whose lanes go one way, where nothing else waits in the
                // frame: straight on into the target.
                if let Some(to) = self.straight_branch(sg, inst, mask) {
                    block = to;
                    pc = func.blocks[to as usize].start;
                    end = func.blocks[to as usize].end;
                    if let Some(f) = sg.frames.last_mut() {
                        f.cur = Some((to, pc, mask));
                    }
                    // Marked for zeroing, as where the outer loop picks it.
                    sg.written.enter(&self.files.table, fidx as u32, to);
                    continue;
                }
                // Where undefined values are reported from (the straight-line form never
                // reports one: it gives such lanes to the paths below).
                self.here = (inst.word, inst.op, inst.id);
                if let Some(r) = &inst.row {
                    if self.run_row(sg, inst.res, r, mask) {
                        continue;
                    }
                }
                if let Some(g) = &inst.grp {
                    if self.group_row(sg, inst, g, mask) {
                        continue;
                    }
                }
                if let (Some(local), Some(op)) = (inst.local, inst.decoded) {
                    self.local(sg, inst, op, local, mask)
                        .map_err(|e| e.at(&inst.location()))?;
                    continue;
                }
                let leaves = leaves_block(inst.decoded);
                if leaves {
                    if let Some(f) = sg.frames.last_mut() {
                        f.cur = Some((block, pc, mask));
                    }
                }
                self.exec(sg, inst, block, mask)
                    .map_err(|e| e.at(&inst.location()))?;
                if leaves {
                    // A branch that left one block pending in this frame: that block is the
                    // one the outer loop would pick (the first pending in layout order), so it
                    // runs straight on.
                    if matches!(
                        inst.decoded,
                        Some(spirv::Op::Branch | spirv::Op::BranchConditional | spirv::Op::Switch)
                    ) {
                        if let Some(f) = sg.frames.last_mut() {
                            if f.pending.len() == 1 && f.cur.is_none() {
                                if let Some((b, m)) = f.pending.pop() {
                                    block = b;
                                    mask = m;
                                    pc = func.blocks[b as usize].start;
                                    end = func.blocks[b as usize].end;
                                    lane_count = u64::from(m.count_ones());
                                    f.cur = Some((b, pc, m));
                                    // Marked for zeroing, as where the outer loop picks it.
                                    sg.written.enter(&self.files.table, fidx as u32, b);
                                    continue;
                                }
                            }
                        }
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// For an `OpBranch`, or an `OpBranchConditional` whose condition (a register row) sends
    /// every lane of `mask` the same way, into a block without phis while no other block of
    /// the frame is pending: the target block, which then simply runs next with the same mask
    /// (what `exec`, `goto` and the executor's straight-on continuation would do, without the
    /// pending list or the phi staging). None, having changed nothing, otherwise: the general
    /// path then takes it. Its operands were resolved at translation (`Inst::branch`, none
    /// where the general path would fail on them, nor with the general paths only:
    /// `Module::with_general_paths_only`, so tests compare the two).
    #[inline]
    fn straight_branch(&self, sg: &Sg, inst: &Inst, mask: u128) -> Option<u32> {
        let br = inst.branch?;
        let to = match br.cond {
            None => br.to[0],
            Some(r) => {
                let n = self.lanes as usize;
                let row = sg.regs.get(r as usize * n..(r as usize + 1) * n)?;
                // The true lanes as the general path gathers them (`row_mask`).
                let taken = row_mask(row) & mask;
                if taken == mask {
                    br.to[0]
                } else if taken == 0 {
                    br.to[1]
                } else {
                    return None;
                }
            }
        };
        let frame = sg.frames.last()?;
        let target = self.p.funcs[frame.func as usize].blocks.get(to as usize)?;
        (mask != 0 && frame.pending.is_empty() && target.phis.is_empty()).then_some(to)
    }

    fn exec(&mut self, sg: &mut Sg, inst: &'p Inst, block: u32, mask: u128) -> Result<()> {
        use spirv::Op as O;
        let op = inst
            .decoded
            .ok_or_else(|| unsupported("an unknown opcode"))?;
        let arg = |k: usize| {
            inst.args
                .get(k)
                .copied()
                .ok_or_else(|| malformed("missing operand"))
        };
        match op {
            O::Branch => {
                let to = self.block(arg(0)?)?;
                self.end_block(sg);
                self.goto(sg, block, to, mask)?;
            }
            O::BranchConditional => {
                let c = self.val(arg(0)?)?;
                let (t, f) = (self.block(arg(1)?)?, self.block(arg(2)?)?);
                let mut tm = 0u128;
                let n = self.lanes as usize;
                match c.0 {
                    // The whole row at once (inactive lanes masked off after).
                    Src::Reg(r) => {
                        if let Some(row) = sg.regs.get(r as usize * n..(r as usize + 1) * n) {
                            tm = row_mask(row);
                        }
                        tm &= mask;
                    }
                    _ => {
                        for l in lanes(mask) {
                            if self.get(sg, c, 0, l) != 0 {
                                tm |= 1 << l;
                            }
                        }
                    }
                }
                self.end_block(sg);
                self.goto(sg, block, t, tm)?;
                self.goto(sg, block, f, mask & !tm)?;
            }
            O::Switch => {
                let sel = self.val(arg(0)?)?;
                let default = self.block(arg(1)?)?;
                let wide = sel.1.scalar_of().is_some_and(|s| s.width() > 32);
                let step = if wide { 3 } else { 2 };
                let mut targets: Vec<(u64, u32)> = Vec::new();
                for case in inst.args.get(2..).unwrap_or(&[]).chunks(step) {
                    if case.len() != step {
                        return Err(malformed("OpSwitch operands"));
                    }
                    let lit = if wide {
                        u64::from(case[0]) | (u64::from(case[1]) << 32)
                    } else {
                        u64::from(case[0])
                    };
                    targets.push((lit, self.block(case[step - 1])?));
                }
                let mut masks: Vec<(u32, u128)> = Vec::new();
                for l in lanes(mask) {
                    let v = self.get(sg, sel, 0, l);
                    let to = targets.iter().find(|t| t.0 == v).map_or(default, |t| t.1);
                    match masks.iter_mut().find(|m| m.0 == to) {
                        Some(m) => m.1 |= 1 << l,
                        None => masks.push((to, 1 << l)),
                    }
                }
                self.end_block(sg);
                for (to, m) in masks {
                    self.goto(sg, block, to, m)?;
                }
            }
            O::Return => self.end_block(sg),
            O::ReturnValue => {
                let v = self.val(arg(0)?)?;
                let ret = sg.frames.last().and_then(|f| f.ret);
                if let Some(res) = ret {
                    self.copy_value(sg, v, v.1.leaves, res, mask);
                }
                self.end_block(sg);
            }
            O::Unreachable => {
                return Err(unsupported("reached OpUnreachable (undefined behaviour)"))
            }
            O::Kill | O::TerminateInvocation => {
                return Err(unsupported("OpKill in a compute shader"))
            }
            O::FunctionCall => {
                let callee = match self.p.ids.get(arg(0)? as usize) {
                    Some(IdKind::Func(f)) => *f,
                    _ => return Err(malformed("OpFunctionCall of a non-function")),
                };
                let func = &self.p.funcs[callee as usize];
                if func.params.len() != inst.args.len() - 1 {
                    return Err(malformed("OpFunctionCall with the wrong argument count"));
                }
                if sg.frames.len() > 256 {
                    return Err(unsupported("calls nested more than 256 deep (recursion?)"));
                }
                self.bind_in(sg, &inst.bindings, mask);
                for (k, &(reg, leaves)) in func.params.iter().enumerate() {
                    if inst.bindings.iter().any(|b| b.param as usize == k) {
                        continue;
                    }
                    let v = self.val(inst.args[k + 1])?;
                    self.copy_value(sg, v, leaves, reg, mask);
                }
                sg.frames.push(Frame {
                    func: callee,
                    pending: vec![(0, mask)],
                    cur: None,
                    ret: (inst.res != u32::MAX).then_some(inst.res),
                    locals: Vec::new(),
                });
            }
            O::ControlBarrier => {
                let scope = self.constant(arg(0)?)?;
                if scope == spirv::Scope::Workgroup as u64 {
                    // Every invocation of the workgroup must execute the same dynamic instance
                    // of a workgroup barrier (SPIR-V, OpControlBarrier): one reached by some lanes
                    // of a subgroup only is undefined behaviour, reported rather than run.
                    if mask != sg.exists {
                        return Err(unsupported(format!(
                            "OpControlBarrier with Workgroup scope in non-uniform control flow: \
                             lanes {:#x} of this subgroup are here, lanes {:#x} are not \
                             (undefined behaviour)",
                            mask,
                            sg.exists & !mask
                        )));
                    }
                    sg.state = State::Barrier;
                    sg.waiting_at = Some(inst.location());
                } else if scope != spirv::Scope::Subgroup as u64
                    && scope != spirv::Scope::Invocation as u64
                {
                    return Err(unsupported(format!(
                        "OpControlBarrier with execution scope {scope}"
                    )));
                }
            }
            O::MemoryBarrier => {}
            _ => self.compute(sg, inst, op, mask)?,
        }
        Ok(())
    }

    fn end_block(&self, sg: &mut Sg) {
        if let Some(f) = sg.frames.last_mut() {
            f.cur = None;
        }
    }

    fn block(&self, id: u32) -> Result<u32> {
        match self.p.ids.get(id as usize) {
            Some(IdKind::Block(_, b)) => Ok(*b),
            _ => Err(malformed(format!("%{id} is not a block"))),
        }
    }

    /// Every lane of the subgroup.
    #[inline]
    pub fn full_mask(&self) -> u128 {
        self.full
    }

    /// Writes a result for one lane.
    pub fn put(&self, sg: &mut Sg, inst: &Inst, c: u32, lane: u32, v: u64) {
        if inst.res != u32::MAX {
            self.write(sg, inst.res, c, lane, v);
        }
    }
}

/// Whether an instruction may leave its block or suspend the subgroup (terminators, calls,
/// barriers): the executor records where the frame resumes before running one.
fn leaves_block(op: Option<spirv::Op>) -> bool {
    use spirv::Op as O;
    !matches!(op, Some(o) if !matches!(
        o,
        O::Branch
            | O::BranchConditional
            | O::Switch
            | O::Return
            | O::ReturnValue
            | O::FunctionCall
            | O::ControlBarrier
            | O::Unreachable
            | O::Kill
            | O::TerminateInvocation
    ))
}

/// Copies the lanes of `mask` from `src` to `dst` (the whole row when every lane is active).
pub fn copy_lanes(dst: &mut [u64], src: &[u64], mask: u128, full: u128) {
    if mask == full && dst.len() == src.len() {
        dst.copy_from_slice(src);
    } else {
        for l in lanes(mask) {
            if let (Some(d), Some(s)) = (dst.get_mut(l as usize), src.get(l as usize)) {
                *d = *s;
            }
        }
    }
}

/// The lanes of a row (at most 128) whose value is not zero (a condition's true lanes).
#[inline]
fn row_mask(row: &[u64]) -> u128 {
    // 8 lanes at a time into a byte, 64 into a word (a 128-bit shift per lane costs several
    // instructions).
    let half = |lanes: &[u64]| {
        let mut m = 0u64;
        let mut bytes = lanes.chunks_exact(8);
        for (k, eight) in (&mut bytes).enumerate() {
            let mut b = 0u64;
            for (i, &x) in eight.iter().enumerate() {
                b |= u64::from(x != 0) << i;
            }
            m |= b << (8 * k);
        }
        let done = lanes.len() - bytes.remainder().len();
        for (i, &x) in bytes.remainder().iter().enumerate() {
            m |= u64::from(x != 0) << (done + i);
        }
        u128::from(m)
    };
    let (lo, hi) = row.split_at(row.len().min(64));
    half(lo) | half(hi) << 64
}

/// The index of register slot `r + c` at `lane`.
fn slot(r: u32, c: u32, lanes: u32, lane: u32) -> usize {
    (r as usize + c as usize) * lanes as usize + lane as usize
}

/// A stand-in type for values whose type the executor does not track (phi inputs that are undefined).
pub static UNKNOWN: TypeInfo = TypeInfo {
    shape: Shape::Void,
    leaves: 0,
    size: 0,
    align: 1,
    layout: Vec::new(),
};

/// What every workgroup of a dispatch shares: the entry point, the sizes, the shared objects.
#[derive(Debug)]
pub(crate) struct Setup {
    /// The entry point's function.
    entry: u32,
    /// The workgroup size.
    local: [u32; 3],
    /// Invocations per workgroup.
    total: u64,
    /// Subgroups per workgroup.
    sgs_per_wg: u32,
    /// Workgroups in x, y, z.
    pub(crate) workgroups: [u32; 3],
    /// The buffers' bindings, each with its shared object (objects 0, 1, ...).
    pub(crate) buffer_objs: Vec<((u32, u32), usize)>,
    /// The push constants' object (the last shared one).
    push_obj: usize,
    /// Per module-scope variable (as `Program::globals`), how its pointer row is filled.
    vars: Vec<VarKind>,
}

/// How a module-scope variable's pointer row is filled at the start of a workgroup.
#[derive(Clone, Copy, Debug)]
enum VarKind {
    /// The same pointer in every lane: a buffer's or the push constants' object.
    Shared(u64),
    /// The object of the workgroup's `k`-th Workgroup variable, in every lane.
    Workgroup(usize),
    /// An object per invocation (`Machine::invocation_var`), `u64::MAX` in lanes past the
    /// workgroup's last invocation.
    PerLane,
}

impl Setup {
    /// The shared objects' names and initial bytes (buffers in object order, push constants last).
    pub(crate) fn shared(&self, d: &Dispatch) -> Vec<(MemName, Vec<u8>)> {
        let mut objs: Vec<(MemName, Vec<u8>)> = self
            .buffer_objs
            .iter()
            .map(|&(b, _)| {
                let bytes = d.buffers.get(&b).cloned().unwrap_or_default();
                (MemName::Buffer(b.0, b.1), bytes)
            })
            .collect();
        objs.push((MemName::Push, d.push_constants.clone()));
        objs
    }

    /// Per shared object: whether the module never writes it (no variable bound to it can be
    /// written, `crate::readonly`).
    pub(crate) fn never_written(&self, p: &Program) -> Vec<bool> {
        let mut frozen = vec![!p.never_written.is_empty(); self.shared_count()];
        for (kind, &never) in self.vars.iter().zip(&p.never_written) {
            if let (VarKind::Shared(ptr), false) = (kind, never) {
                if let Some(f) = frozen.get_mut((ptr >> 32) as usize) {
                    *f = false;
                }
            }
        }
        frozen
    }

    /// How many shared objects there are (the buffers and the push constants).
    pub(crate) fn shared_count(&self) -> usize {
        self.push_obj + 1
    }

    /// Workgroups in the dispatch.
    pub(crate) fn count(&self) -> u64 {
        self.workgroups.iter().map(|&n| u64::from(n)).product()
    }

    /// Workgroup `index`'s id (x fastest, as the sequential order runs them).
    pub(crate) fn coords(&self, index: u64) -> [u32; 3] {
        let (nx, ny) = (
            u64::from(self.workgroups[0]).max(1),
            u64::from(self.workgroups[1]).max(1),
        );
        [
            (index % nx) as u32,
            (index / nx % ny) as u32,
            (index / nx / ny) as u32,
        ]
    }

    /// The buffers after the dispatch: the shared objects' bytes by binding, and any buffer given
    /// that the module does not use, unchanged.
    pub(crate) fn outcome_buffers(
        &self,
        d: &Dispatch,
        mut objs: Vec<Vec<u8>>,
    ) -> std::collections::BTreeMap<(u32, u32), Vec<u8>> {
        let mut buffers = std::collections::BTreeMap::new();
        for &(b, obj) in &self.buffer_objs {
            buffers.insert(b, objs.get_mut(obj).map(std::mem::take).unwrap_or_default());
        }
        for (b, bytes) in &d.buffers {
            buffers.entry(*b).or_insert_with(|| bytes.clone());
        }
        buffers
    }
}

/// The size-dependent instructions that ran, from the counts of `trace`.
pub(crate) fn size_reads(
    p: &Program,
    marks: &crate::size_trace::Marks,
    counts: &[Vec<u64>],
) -> Vec<crate::SizeRead> {
    let mut size_reads = Vec::new();
    for (f, (fm, fc)) in p.funcs.iter().zip(marks.iter().zip(counts)) {
        for ((inst, mark), &count) in f.insts.iter().zip(fm).zip(fc) {
            if let (Some(what), true) = (mark, count > 0) {
                size_reads.push(crate::SizeRead {
                    what: what.clone(),
                    location: inst.location(),
                    count,
                });
            }
        }
    }
    size_reads.sort_by_key(|r| r.location.word);
    size_reads
}

/// The first random state of workgroup `index`'s undefined values: a function of the seed and
/// the workgroup alone, so the bits do not depend on which thread runs it or what ran before.
fn workgroup_rng(seed: u64, index: u64) -> u64 {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    mix((seed ^ 0x5eed).wrapping_add(mix(index.wrapping_add(1))))
}

/// Checks a dispatch against the module and works out what its workgroups share.
pub(crate) fn setup(p: &Program, d: &Dispatch) -> Result<Setup> {
    let entry = match &d.entry {
        Some(name) => p.entries.iter().find(|e| &e.name == name).ok_or_else(|| {
            Error::new(ErrorKind::Dispatch(format!(
                "no GLCompute entry point named `{name}`"
            )))
        })?,
        None => match p.entries.as_slice() {
            [e] => e,
            [] => {
                return Err(Error::new(ErrorKind::Dispatch(
                    "the module has no GLCompute entry point".into(),
                )))
            }
            _ => {
                return Err(Error::new(ErrorKind::Dispatch(
                    "the module has several GLCompute entry points: name one".into(),
                )))
            }
        },
    };
    let lanes = d.subgroup_size;
    if !(1..=128).contains(&lanes) {
        return Err(Error::new(ErrorKind::Dispatch(format!(
            "subgroup size {lanes} is not in 1..=128"
        ))));
    }
    let local = p.workgroup_size.unwrap_or(entry.local_size);
    let total = u64::from(local[0]) * u64::from(local[1]) * u64::from(local[2]);
    if total == 0 || total > 1 << 16 {
        return Err(Error::new(ErrorKind::Dispatch(format!(
            "workgroup size {local:?} is out of range"
        ))));
    }
    if u64::from(p.nregs) * u64::from(lanes) > 1 << 27 {
        return Err(Error::new(ErrorKind::Dispatch(format!(
            "{} registers of {lanes} lanes is too much state",
            p.nregs
        ))));
    }
    // Buffers and push constants: the shared objects, one per binding.
    let mut buffer_objs: Vec<((u32, u32), usize)> = Vec::new();
    for g in &p.globals {
        let class = g.class;
        let is_buffer = class == spirv::StorageClass::StorageBuffer as u32
            || class == spirv::StorageClass::Uniform as u32;
        if is_buffer {
            let b = g.binding.unwrap_or((0, 0));
            if !buffer_objs.iter().any(|x| x.0 == b) {
                buffer_objs.push((b, buffer_objs.len()));
            }
        }
    }
    let push_obj = buffer_objs.len();
    let mut workgroup_vars = 0;
    let vars = p
        .globals
        .iter()
        .map(|g| {
            use spirv::StorageClass as C;
            let class = g.class;
            if class == C::Workgroup as u32 {
                workgroup_vars += 1;
                VarKind::Workgroup(workgroup_vars - 1)
            } else if class == C::StorageBuffer as u32 || class == C::Uniform as u32 {
                let b = g.binding.unwrap_or((0, 0));
                let obj = buffer_objs.iter().find(|x| x.0 == b).map_or(0, |x| x.1);
                VarKind::Shared((obj as u64) << 32)
            } else if class == C::PushConstant as u32 {
                VarKind::Shared((push_obj as u64) << 32)
            } else {
                VarKind::PerLane
            }
        })
        .collect();
    Ok(Setup {
        entry: entry.func,
        local,
        total,
        sgs_per_wg: total.div_ceil(u64::from(lanes)) as u32,
        workgroups: d.workgroups,
        push_obj,
        buffer_objs,
        vars,
    })
}

impl<'p> Machine<'p> {
    /// A machine for `d` with no memory objects yet; `defer` as in [`Machine::defer`].
    pub(crate) fn new(
        p: &'p Program,
        d: &Dispatch,
        defer: &'p [bool],
        files: &'p RegisterFiles,
    ) -> Self {
        Machine {
            p,
            lanes: d.subgroup_size,
            full: if d.subgroup_size >= 128 {
                u128::MAX
            } else {
                (1u128 << d.subgroup_size) - 1
            },
            mems: Vec::new(),
            shared_below: 0,
            ov: crate::overlay::Overlay::default(),
            defer,
            high: 0,
            free: Vec::new(),
            storage: files.take_objects(),
            phi_rows: Vec::new(),
            scratch: Vec::new(),
            row_tmp: Vec::new(),
            const_rows: p.const_rows(d.subgroup_size),
            sg_pool: Vec::new(),
            files,
            rng: 0,
            report: d.report_undefined,
            undefined: Vec::new(),
            report_cap: MAX_REPORTS,
            undefined_total: 0,
            steps: 0,
            lane_steps: 0,
            step_limit: d.step_limit,
            here: (0, 0, 0),
            trace: d.trace_size.then(|| {
                let marks = crate::size_trace::marks(p);
                let counts = marks.iter().map(|m| vec![0; m.len()]).collect();
                (marks, counts)
            }),
        }
    }

    /// Adds the shared objects: in a sequential run their bytes, in a parallel one their names
    /// only (the bytes are the overlay's).
    pub(crate) fn add_shared(&mut self, objs: Vec<(MemName, Vec<u8>)>, parallel: bool) {
        for (name, bytes) in objs {
            let bytes = if parallel { Vec::new() } else { bytes };
            self.mems.push(Mem::initialised(bytes, name));
        }
        if parallel {
            self.shared_below = self.mems.len();
        }
    }

    /// Runs workgroup `index` of the dispatch to its end; its undefined values' bits come from
    /// `seed` and `index` alone.
    pub(crate) fn run_workgroup(&mut self, s: &Setup, d: &Dispatch, index: u64) -> Result<()> {
        let p = self.p;
        self.rng = workgroup_rng(d.seed, index);
        self.high = 0;
        // The previous workgroup's objects are all free: their storage is reused.
        let fixed = s.shared_count();
        self.free.clear();
        self.free.extend((fixed..self.mems.len()).rev());
        // Workgroup variables: one object each.
        let mut wg_ptrs = Vec::new();
        for g in &p.globals {
            if g.class == spirv::StorageClass::Workgroup as u32 {
                let size = self.ty(g.pointee)?.size;
                wg_ptrs.push(self.alloc(size, MemName::Workgroup(g.id)));
            }
        }
        // The previous workgroup's subgroups are reused (their registers zeroed again, as a
        // fresh register file is: bit for bit the same start).
        let mut sgs = std::mem::take(&mut self.sg_pool);
        sgs.truncate(s.sgs_per_wg as usize);
        let result = self.run_subgroups(s, &mut sgs, &wg_ptrs, index);
        if result.is_err() {
            // Stopped anywhere (phis or parameters written for blocks never entered).
            for sg in &mut sgs {
                sg.written.all();
            }
        }
        self.sg_pool = sgs;
        result
    }

    /// Sets up workgroup `index`'s subgroups in `sgs` (reusing those there) and runs them to
    /// the workgroup's end.
    fn run_subgroups(
        &mut self,
        s: &Setup,
        sgs: &mut Vec<Sg>,
        wg_ptrs: &[u64],
        index: u64,
    ) -> Result<()> {
        let p = self.p;
        let lanes = self.lanes;
        let (local, total, sgs_per_wg) = (s.local, s.total, s.sgs_per_wg);
        let wg = s.coords(index);
        let nslots = p.nregs as usize * lanes as usize;
        for sgi in 0..sgs_per_wg {
            let first = u64::from(sgi) * u64::from(lanes);
            let n = (total - first).min(u64::from(lanes)) as u32;
            let exists = if n == 128 {
                u128::MAX
            } else {
                (1u128 << n) - 1
            };
            if sgs.len() <= sgi as usize {
                // A kept file is all zero (of any length); a new one is zeroed by the allocator.
                let regs = match self.files.take(nslots) {
                    Some(mut regs) => {
                        regs.truncate(nslots);
                        regs.resize(nslots, 0);
                        regs
                    }
                    None => vec![0; nslots],
                };
                sgs.push(Sg {
                    regs,
                    frames: Vec::new(),
                    state: State::Running,
                    exists,
                    waiting_at: None,
                    written: Written::default(),
                    builtins: None,
                });
                if self.files.check {
                    // A kept file must be all zero (the machine that gave it back zeroed it).
                    let regs = &sgs[sgi as usize].regs;
                    if let Some(row) = regs
                        .chunks(lanes as usize)
                        .position(|r| r.iter().any(|&x| x != 0))
                    {
                        return Err(unzeroed(row as u32));
                    }
                }
            } else {
                // All zero again where the previous workgroup may have written.
                let sg = &mut sgs[sgi as usize];
                let check = self.files.check;
                if !sg.written.keeps_globals(&self.files.table) {
                    sg.builtins = None;
                }
                if let Some(row) = sg
                    .written
                    .zero(&self.files.table, &mut sg.regs, lanes, check)
                {
                    return Err(unzeroed(row));
                }
                if sg.regs.len() != nslots {
                    sg.regs.clear();
                    sg.regs.resize(nslots, 0);
                    sg.builtins = None;
                }
                sg.frames.clear();
                sg.state = State::Running;
                sg.exists = exists;
                sg.waiting_at = None;
            }
            let sg = &mut sgs[sgi as usize];
            let nl = lanes as usize;
            // The built-in rows' contents, if intact (set again once all are filled).
            let key = BuiltinKey {
                first: first as u32,
                sgi,
                n,
                nsg: sgs_per_wg,
                local,
                wg,
                nwg: s.workgroups,
            };
            // The same subgroup of another workgroup of the dispatch: the previous workgroup's
            // id (only the rows that depend on it change).
            let kept = sg
                .builtins
                .take()
                .filter(|k| BuiltinKey { wg: key.wg, ..*k } == key)
                .map(|k| k.wg);
            for (g, kind) in p.globals.iter().zip(&s.vars) {
                let at = g.reg as usize * nl;
                let shared = match *kind {
                    VarKind::Shared(ptr) => ptr,
                    VarKind::Workgroup(k) => wg_ptrs[k],
                    VarKind::PerLane if g.promoted.is_some() => {
                        self.builtin_rows(sg, g, key, kept)?;
                        continue;
                    }
                    VarKind::PerLane => {
                        for l in 0..lanes {
                            let ptr = if l >= n {
                                u64::MAX
                            } else {
                                let index = first as u32 + l;
                                let ids = (index, sgi, l, sgs_per_wg);
                                self.invocation_var(g, ids, local, wg, s.workgroups)?
                            };
                            if let Some(r) = sg.regs.get_mut(at + l as usize) {
                                *r = ptr;
                            }
                        }
                        continue;
                    }
                };
                if let Some(row) = sg.regs.get_mut(at..at + nl) {
                    row.fill(shared);
                }
            }
            sg.builtins = Some(key);
            sg.frames.push(Frame {
                func: s.entry,
                pending: vec![(0, exists)],
                cur: None,
                ret: None,
                locals: Vec::new(),
            });
        }
        loop {
            for sg in sgs.iter_mut() {
                self.run_sg(sg)?;
            }
            if sgs.iter().all(|s| s.state == State::Done) {
                return Ok(());
            }
            // Some subgroups wait at a barrier that others finished without reaching.
            if let Some(done) = sgs.iter().position(|s| s.state == State::Done) {
                let at = sgs.iter().find_map(|s| s.waiting_at.clone());
                let e = unsupported(format!(
                    "OpControlBarrier with Workgroup scope in non-uniform control flow: \
                     subgroup {done} of workgroup {wg:?} finished without reaching it \
                     (undefined behaviour)"
                ));
                return Err(match at {
                    Some(at) => e.at(&at),
                    None => e,
                });
            }
            for sg in sgs.iter_mut() {
                if sg.state == State::Barrier {
                    sg.state = State::Running;
                    sg.waiting_at = None;
                }
            }
        }
    }
}

/// The error of `Module::with_register_check` when a register row was not zeroed between
/// workgroups (a simulator bug: some write is not attributed to its block in `regpool.rs`).
fn unzeroed(row: u32) -> Error {
    Error::new(ErrorKind::Dispatch(format!(
        "register check: row {row} was not zeroed after the previous workgroup"
    )))
}

/// Runs a whole dispatch on this thread, its workgroups one after another. `defer` is
/// [`Machine::defer`].
pub(crate) fn sequential(
    p: &Program,
    d: &Dispatch,
    s: &Setup,
    defer: &[bool],
    files: &RegisterFiles,
) -> Result<Outcome> {
    let mut m = Machine::new(p, d, defer, files);
    m.add_shared(s.shared(d), false);
    let mut memory_objects = m.mems.len();
    for index in 0..s.count() {
        m.run_workgroup(s, d, index)?;
        memory_objects = memory_objects.max(m.high);
    }
    let objs = m.mems.iter_mut().take(s.shared_count());
    let buffers = s.outcome_buffers(d, objs.map(|o| std::mem::take(&mut o.bytes)).collect());
    Ok(Outcome {
        size_reads: m
            .trace
            .as_ref()
            .map(|(marks, counts)| size_reads(p, marks, counts))
            .unwrap_or_default(),
        buffers,
        undefined: std::mem::take(&mut m.undefined),
        undefined_total: m.undefined_total,
        steps: m.steps,
        lane_steps: m.lane_steps,
        memory_objects,
    })
}

impl Machine<'_> {
    /// The object of a Private, Function-less Input or Output variable of one invocation;
    /// `(index, sgid, lane, nsg)`: its local invocation index, subgroup, lane, and the
    /// workgroup's subgroup count.
    fn invocation_var(
        &mut self,
        g: &crate::translate::Global,
        (index, sgid, lane, nsg): (u32, u32, u32, u32),
        local: [u32; 3],
        wg: [u32; 3],
        nwg: [u32; 3],
    ) -> Result<u64> {
        let t = self.ty(g.pointee)?;
        let kind = g.builtin.and_then(spirv::BuiltIn::from_u32);
        if g.class == spirv::StorageClass::Input as u32 {
            let mut vals = std::mem::take(&mut self.scratch);
            vals.clear();
            let r = self.builtin(
                kind,
                g,
                (index, sgid, lane, nsg),
                local,
                wg,
                nwg,
                t,
                &mut vals,
            );
            let name = MemName::Variable(g.id);
            let ptr = r.and_then(|()| {
                if whole(t) {
                    // The built-in's bytes written straight into the object.
                    Ok(self.alloc_written(t, &vals, name))
                } else {
                    let ptr = self.alloc(t.size, name);
                    self.store(ptr, t, &vals).map(|()| ptr)
                }
            });
            self.scratch = vals;
            ptr
        } else if g.class == spirv::StorageClass::Private as u32
            || g.class == spirv::StorageClass::Output as u32
        {
            let init = match g.init {
                Some(Src::Const(k)) => {
                    let range = k as usize..k as usize + t.leaves as usize;
                    Some(
                        self.p
                            .consts
                            .get(range)
                            .ok_or_else(|| malformed("initialiser of the wrong size"))?,
                    )
                }
                _ => None,
            };
            match init {
                Some(v) if whole(t) => Ok(self.alloc_written(t, v, MemName::Variable(g.id))),
                Some(v) => {
                    let ptr = self.alloc(t.size, MemName::Variable(g.id));
                    self.store(ptr, t, v)?;
                    Ok(ptr)
                }
                // Uninitialised (an initialiser that is not a constant leaves it so too).
                None => Ok(self.alloc(t.size, MemName::Variable(g.id))),
            }
        } else {
            Err(unsupported(format!(
                "variables of storage class {}",
                g.class
            )))
        }
    }

    /// Fills the value and written-flag rows of a built-in Input variable kept in registers
    /// (`Global::promoted`) for the subgroup of `key` (its lanes below `key.n` exist): each
    /// existing lane's value, written; the other lanes 0. `kept`: where the rows are intact
    /// from this subgroup's previous set-up, for the same lanes of the same dispatch, the
    /// workgroup id they were filled for; rows that would be filled with the same values are
    /// left as they are.
    fn builtin_rows(
        &mut self,
        sg: &mut Sg,
        g: &crate::translate::Global,
        key: BuiltinKey,
        kept: Option<[u32; 3]>,
    ) -> Result<()> {
        let Some(rows) = g.promoted else {
            return Ok(());
        };
        if let Some(from) = kept {
            // Only the rows that depend on the workgroup's id change, each by the change of
            // its component of the id; the others do not (the set-up that filled them
            // succeeded).
            if from != key.wg {
                let kind = g.builtin.and_then(spirv::BuiltIn::from_u32);
                let nl = self.lanes as usize;
                let n = key.n.min(self.lanes) as usize;
                let at = rows.value as usize * nl;
                let values = sg.regs.get_mut(at..at + rows.leaves as usize * nl);
                shift_workgroup_rows(kind, from, key, nl, n, values);
            }
            if self.files.check {
                self.check_builtin_rows(sg, g, key)?;
            }
            return Ok(());
        }
        let kind = g.builtin.and_then(spirv::BuiltIn::from_u32);
        let t = self.ty(g.pointee)?;
        let nl = self.lanes as usize;
        let (lanes, leaves) = (self.lanes, rows.leaves as usize);
        let n = key.n.min(lanes) as usize;
        let span = |row: u32| row as usize * nl..(row as usize + leaves) * nl;
        // Flags: written in the existing lanes, 0 in the others.
        let Some(flags) = sg.regs.get_mut(span(rows.written)) else {
            return Ok(());
        };
        for row in flags.chunks_exact_mut(nl) {
            row[..n].fill(crate::translate::WRITTEN);
            row[n..].fill(0);
        }
        // Values: one leaf per component (the 32-bit scalars and vectors) straight into the
        // rows by their formulas; the masks, spread over several leaves by their widths,
        // through `builtin`.
        if formula_comps(kind) == Some(leaves) {
            if let Some(values) = sg.regs.get_mut(span(rows.value)) {
                builtin_value_rows(kind, key, lanes, values);
            }
            return Ok(());
        }
        let mut vals = std::mem::take(&mut self.scratch);
        vals.clear();
        let mut result = Ok(());
        for l in 0..n as u32 {
            let ids = (key.first + l, key.sgi, l, key.nsg);
            result = self.builtin(kind, g, ids, key.local, key.wg, key.nwg, t, &mut vals);
            if result.is_err() {
                break;
            }
        }
        if let (Ok(()), Some(values)) = (&result, sg.regs.get_mut(span(rows.value))) {
            values.fill(0);
            for l in 0..n {
                for c in 0..leaves {
                    values[c * nl + l] = vals.get(l * leaves + c).copied().unwrap_or(0);
                }
            }
        }
        self.scratch = vals;
        result
    }

    /// With `Module::with_register_check`: the built-in rows of `g` that a subgroup's set-up
    /// kept from its previous workgroup (or shifted to this one's id) must be what filling
    /// them afresh gives.
    fn check_builtin_rows(
        &mut self,
        sg: &mut Sg,
        g: &crate::translate::Global,
        key: BuiltinKey,
    ) -> Result<()> {
        let Some(rows) = g.promoted else {
            return Ok(());
        };
        let nl = self.lanes as usize;
        let span = |r: u32| r as usize * nl..(r + rows.leaves) as usize * nl;
        let copy = |sg: &Sg| {
            let rows = [span(rows.value), span(rows.written)];
            rows.map(|s| sg.regs.get(s).map(<[u64]>::to_vec))
        };
        let kept = copy(sg);
        self.builtin_rows(sg, g, key, None)?;
        if copy(sg) != kept {
            return Err(Error::new(ErrorKind::Dispatch(format!(
                "register check: the rows of built-in %{} kept from the previous workgroup \
                 are not what filling them gives",
                g.id
            ))));
        }
        Ok(())
    }

    /// The value of the built-in Input variable `g` of type `t` for one invocation, as leaves
    /// appended to `vals`.
    #[allow(clippy::too_many_arguments)]
    fn builtin(
        &self,
        kind: Option<spirv::BuiltIn>,
        g: &crate::translate::Global,
        (index, sgid, lane, nsg): (u32, u32, u32, u32),
        local: [u32; 3],
        wg: [u32; 3],
        nwg: [u32; 3],
        t: &TypeInfo,
        vals: &mut Vec<u64>,
    ) -> Result<()> {
        let Some((comps, n)) =
            builtin_comps(kind, (index, sgid, lane, nsg), local, wg, nwg, self.lanes)
        else {
            return Err(unsupported(format!(
                "Input variable %{} with BuiltIn {:?}",
                g.id, g.builtin
            )));
        };
        let comps = &comps[..n];
        if comps.len() == t.leaves as usize {
            vals.extend(comps.iter().map(|c| *c as u64));
        } else {
            // One wide value over several leaves (uvec4 / uvec2 / u64 masks), by their widths.
            let mut v = comps.first().copied().unwrap_or(0);
            vals.extend(t.layout.iter().map(|(_, s)| {
                let w = s.width();
                let x = (v as u64) & crate::num::mask(w);
                v = if w >= 128 { 0 } else { v >> w };
                x
            }));
        }
        Ok(())
    }

    /// A new object of type `t` holding `vals` (one per leaf; `t` must be [`whole`]), as
    /// [`Machine::alloc`] then [`Machine::store`] leave it (the same object, every byte
    /// written), without the per-byte bookkeeping.
    fn alloc_written(&mut self, t: &TypeInfo, vals: &[u64], name: MemName) -> u64 {
        let ptr = self.alloc(t.size, name);
        if let Some(m) = self.mems.get_mut((ptr >> 32) as usize) {
            for (&(o, s), &v) in t.layout.iter().zip(vals) {
                let (a, b) = (o as usize, (o + s.bytes()) as usize);
                if let Some(bytes) = m.bytes.get_mut(a..b) {
                    write_le(bytes, v);
                }
            }
            // Every byte written: no byte's flag is read again (loads and stores skip them
            // once `uninit` is 0, and `alloc` resets both).
            m.init.clear();
            m.uninit = 0;
        }
        ptr
    }
}

/// Moves the value rows of built-in `b` (`values`, rows of `nl` slots, `n` lanes existing)
/// from workgroup `from` to the workgroup of `key`, when `b` is one whose rows depend on the
/// workgroup's id: `WorkgroupId`'s component rows filled again where the component changed,
/// `GlobalInvocationId`'s shifted by the change times the workgroup size (in 32 bits, as
/// [`builtin_comps`] computes it). Nothing for the other built-ins.
fn shift_workgroup_rows(
    b: Option<spirv::BuiltIn>,
    from: [u32; 3],
    key: BuiltinKey,
    nl: usize,
    n: usize,
    values: Option<&mut [u64]>,
) {
    use spirv::BuiltIn as B;
    let global = match b {
        Some(B::WorkgroupId) => false,
        Some(B::GlobalInvocationId) => true,
        _ => return,
    };
    let Some(values) = values else {
        return;
    };
    for (c, row) in values.chunks_exact_mut(nl.max(1)).enumerate().take(3) {
        if from[c] == key.wg[c] {
            continue;
        }
        let live = &mut row[..n.min(nl)];
        if global {
            let delta = key.wg[c].wrapping_sub(from[c]).wrapping_mul(key.local[c]);
            for v in live {
                *v = u64::from((*v as u32).wrapping_add(delta));
            }
        } else {
            live.fill(u64::from(key.wg[c]));
        }
    }
}

/// How many components built-in `b` has where [`builtin_value_rows`] fills its rows by their
/// formulas (the 32-bit scalars and vectors; not the masks, nor built-ins the simulator does
/// not know).
fn formula_comps(b: Option<spirv::BuiltIn>) -> Option<usize> {
    use spirv::BuiltIn as B;
    Some(match b {
        Some(
            B::LocalInvocationId
            | B::WorkgroupId
            | B::NumWorkgroups
            | B::WorkgroupSize
            | B::GlobalInvocationId,
        ) => 3,
        Some(
            B::LocalInvocationIndex
            | B::SubgroupSize
            | B::SubgroupLocalInvocationId
            | B::SubgroupId
            | B::NumSubgroups,
        ) => 1,
        _ => return None,
    })
}

/// Fills `values` (a row of `lanes` slots per component, [`formula_comps`]) with built-in `b`
/// of the subgroup of `key`: each component's row by its formula, the same values as
/// [`builtin_comps`] gives lane by lane, 0 in the lanes that do not exist.
fn builtin_value_rows(b: Option<spirv::BuiltIn>, key: BuiltinKey, lanes: u32, values: &mut [u64]) {
    use spirv::BuiltIn as B;
    let nl = lanes as usize;
    let n = key.n.min(lanes) as usize;
    let [lx, ly, _] = key.local.map(|x| x.max(1));
    for (c, row) in values.chunks_exact_mut(nl.max(1)).enumerate().take(3) {
        let (live, dead) = row.split_at_mut(n);
        dead.fill(0);
        let same = |v: u32| u64::from(v);
        match b {
            Some(B::LocalInvocationId | B::GlobalInvocationId) => {
                // The local id's component `c` of each lane, stepped from the first lane's
                // (x fastest, then y, then z), plus the workgroup's offset for the global id.
                let base = match b {
                    Some(B::GlobalInvocationId) => key.wg[c].wrapping_mul(key.local[c]),
                    _ => 0,
                };
                let f = key.first;
                let (mut x, mut y, mut z) = (f % lx, (f / lx) % ly, f / (lx * ly));
                for slot in live.iter_mut() {
                    *slot = same(base.wrapping_add([x, y, z][c]));
                    x += 1;
                    if x == lx {
                        x = 0;
                        y += 1;
                        if y == ly {
                            y = 0;
                            z += 1;
                        }
                    }
                }
            }
            Some(B::WorkgroupId) => live.fill(same(key.wg[c])),
            Some(B::NumWorkgroups) => live.fill(same(key.nwg[c])),
            Some(B::WorkgroupSize) => live.fill(same(key.local[c])),
            Some(B::LocalInvocationIndex) => {
                for (l, slot) in live.iter_mut().enumerate() {
                    *slot = same(key.first.wrapping_add(l as u32));
                }
            }
            Some(B::SubgroupLocalInvocationId) => {
                for (l, slot) in live.iter_mut().enumerate() {
                    *slot = l as u64;
                }
            }
            Some(B::SubgroupSize) => live.fill(same(lanes)),
            Some(B::SubgroupId) => live.fill(same(key.sgi)),
            Some(B::NumSubgroups) => live.fill(same(key.nsg)),
            _ => {}
        }
    }
}

/// The components of built-in `b` (and how many) for one invocation: `(index, sgid, lane, nsg)`
/// are its local invocation index, subgroup, lane and the workgroup's subgroup count, `local`
/// the workgroup size, `wg` its id, `nwg` the workgroup counts, `lanes` the subgroup size.
/// None for a built-in the simulator does not know.
#[inline]
fn builtin_comps(
    b: Option<spirv::BuiltIn>,
    (index, sgid, lane, nsg): (u32, u32, u32, u32),
    local: [u32; 3],
    wg: [u32; 3],
    nwg: [u32; 3],
    lanes: u32,
) -> Option<([u128; 3], usize)> {
    use spirv::BuiltIn as B;
    // Each part computed only for the built-ins that use it (this runs per lane and built-in).
    let lid = || {
        [
            index % local[0],
            (index / local[0]) % local[1],
            index / (local[0] * local[1]),
        ]
    };
    let bit = 1u128 << lane;
    let size_mask = || {
        if lanes == 128 {
            u128::MAX
        } else {
            (1u128 << lanes) - 1
        }
    };
    let three = |v: [u32; 3]| ([v[0].into(), v[1].into(), v[2].into()], 3);
    let one = |v: u128| ([v, 0, 0], 1);
    Some(match b? {
        B::LocalInvocationId => three(lid()),
        B::WorkgroupId => three(wg),
        B::NumWorkgroups => three(nwg),
        B::WorkgroupSize => three(local),
        B::GlobalInvocationId => {
            let lid = lid();
            three(std::array::from_fn(|k| {
                wg[k].wrapping_mul(local[k]).wrapping_add(lid[k])
            }))
        }
        B::LocalInvocationIndex => one(u128::from(index)),
        B::SubgroupSize => one(u128::from(lanes)),
        B::SubgroupLocalInvocationId => one(u128::from(lane)),
        B::SubgroupId => one(u128::from(sgid)),
        B::NumSubgroups => one(u128::from(nsg)),
        B::SubgroupEqMask => one(bit),
        B::SubgroupGeMask => one(!(bit - 1) & size_mask()),
        B::SubgroupGtMask => one(!(bit - 1) & !bit & size_mask()),
        B::SubgroupLeMask => one((bit - 1) | bit),
        B::SubgroupLtMask => one(bit - 1),
        _ => return None,
    })
}

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

/// The shared objects of a parallel run, reached through the overlay (`overlay.rs`).
impl Machine<'_> {
    fn shared_bounds(&self, obj: usize, at: u64, n: u64, verb: &str) -> Result<()> {
        let len = self.ov.len(obj);
        if at + n > len as u64 {
            let name = self.mems.get(obj).map(|m| m.name);
            return Err(Error::new(ErrorKind::OutOfBounds(format!(
                "{verb} {n} bytes at offset {at} of {} ({len} bytes)",
                name.map_or_else(String::new, |n| n.to_string())
            ))));
        }
        Ok(())
    }

    /// Reads the scalar `s` at byte `at` of shared object `obj` (through the overlay).
    pub(crate) fn shared_load(&mut self, obj: usize, at: u64, s: Scalar) -> Result<u64> {
        let n = u64::from(s.bytes());
        self.shared_bounds(obj, at, n, "reading")?;
        let v = self.ov.read(obj, at as usize, n as usize);
        Ok(if s == Scalar::Bool {
            u64::from(v != 0)
        } else {
            v
        })
    }

    /// Writes the scalar `s` at byte `at` of shared object `obj` (into the overlay).
    pub(crate) fn shared_store(&mut self, obj: usize, at: u64, s: Scalar, v: u64) -> Result<()> {
        let n = u64::from(s.bytes());
        self.shared_bounds(obj, at, n, "writing")?;
        self.ov.write(obj, at as usize, n as usize, v);
        Ok(())
    }

    /// Whether the atomic instruction `id` may be deferred: it commutes and nothing reads its
    /// result (decided once per module, `parallel::deferrable_atomics`).
    pub fn atomic_deferrable(&self, id: u32) -> bool {
        self.shared_below > 0 && self.defer.get(id as usize).copied().unwrap_or(false)
    }

    /// Defers atomic `op` with operand `v` on the scalar `s` at `ptr` when `ptr` is in a shared
    /// object of a parallel run; false where the caller must read and write as usual.
    pub fn atomic_delta(&mut self, ptr: u64, s: Scalar, op: spirv::Op, v: u64) -> bool {
        let (obj, at) = ((ptr >> 32) as usize, ptr as u32 as usize);
        let width = match s {
            Scalar::Int { width, .. } if width == 32 || width == 64 => width,
            _ => return false,
        };
        if obj >= self.shared_below || at + width as usize / 8 > self.ov.len(obj) {
            return false;
        }
        match crate::overlay::DeltaKind::of(op, v, width) {
            Some((kind, operand)) => self.ov.defer(obj, at, width, kind, operand),
            None => false,
        }
    }
}
