//! A dispatch: its set-up (what its workgroups share), each workgroup's subgroups set up and
//! run to the workgroup's end, and the sequential dispatch, workgroup after workgroup.

use crate::error::{unsupported, Error, ErrorKind, Result};
use crate::regpool::{RegisterFiles, Written};
use crate::translate::Program;
use crate::{Dispatch, Outcome};

use super::{BuiltinKey, Frame, Machine, Mem, MemName, Sg, State, MAX_REPORTS};

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
