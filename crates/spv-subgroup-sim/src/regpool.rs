//! Register files kept between workgroups and dispatches of one module, zeroed again where a
//! workgroup may have written them.
//!
//! A subgroup's register file is a row of lanes per register: a few hundred KiB to a few MiB
//! for the conformance shaders (their lowered forms hold code for every subgroup size). A fresh
//! one per subgroup per dispatch is a zeroed allocation that the kernel maps and faults in page
//! by page; the machines of a dispatch instead take the files the module's earlier dispatches
//! gave back (`Machine::new`) and give theirs back, all zero, when they are dropped. A dropped
//! module's files go to a process-wide spare list (at most 16 MiB) that the next modules' first
//! dispatches take from. A file is taken only where it has room (growing one copies it). The
//! storage of a dispatch's small memory objects (per-invocation variables, Function variables in
//! memory) is kept the same way for the module's next dispatches.
//!
//! Every workgroup starts with its registers all zero, as a fresh file is, bit for bit; but a
//! workgroup runs only a few of a module's blocks (most of a lowered shader is code for other
//! subgroup sizes), so only the rows the blocks it entered may write are zeroed again
//! ([`RowTable`], [`Written`]) rather than the whole file. What a block may write is read off the
//! translated program: the rows of its phis' and instructions' results (the entry block: also the
//! parameters, which a call writes before its callee's entry block runs), and of the promoted
//! variables (`crate::promote`) that its `OpVariable`s and stores reach and that its calls bind
//! in and out. Phis and parameters are written before their block runs, but a workgroup that
//! ends without an error has entered every block it branched or called into; one that ends in an
//! error zeroes the whole file. The module-scope variables' pointer rows are written afresh for
//! every lane of every workgroup (`exec/workgroup.rs`'s `run_subgroups`) and are not zeroed. Nor are the rows of
//! the built-ins kept in registers, which only loads read (a load writes none of its variable's
//! rows but for undefined bits drawn in lanes never written, and a built-in's are written in
//! every lane that exists): a subgroup's set-up fills them, and keeps them from its previous
//! workgroup where they would get the same values (`exec::Machine::builtin_rows`), unless a
//! zeroing of the whole file or a block that may write them (an invalid module's store to a
//! built-in) came between ([`Written::keeps_globals`]).
//!
//! `Module::with_register_check` (hidden, for tests) checks after every zeroing that the whole
//! file is zero but for those pointer and built-in rows, and fails the dispatch if a row was
//! missed; and that every built-in row a set-up kept is what filling it afresh gives.

use std::sync::Mutex;

use crate::translate::{IdKind, Program, Src};

/// Most register files kept (a dispatch's machines use one per subgroup of a workgroup).
const MAX_FILES: usize = 64;

/// Most bytes kept in all (larger files are freed rather than kept).
const MAX_BYTES: usize = 64 << 20;

/// Most storage kept of finished dispatches' memory objects (per-invocation variables and
/// the like): how many, their bytes in all, and the most bytes one may hold to be kept.
const MAX_OBJECTS: usize = 1 << 14;
const MAX_OBJECTS_BYTES: usize = 4 << 20;
const MAX_OBJECT_BYTES: usize = 4096;

/// The storage of a memory object (its bytes and per-byte written flags), kept for reuse.
pub(crate) type Storage = (Vec<u8>, Vec<bool>);

/// Most bytes of dropped modules' files kept for the next modules ([`SPARE`]).
const MAX_SPARE_BYTES: usize = 16 << 20;

/// Files of dropped modules (all zero, of any length), for the first dispatch of the next
/// module: a test suite or a tool translates many modules and runs each a few times, and a
/// fresh file is an allocation the kernel faults in page by page.
static SPARE: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());

/// Per block of every function, the register rows it may write (as half-open ranges of rows,
/// sorted and merged).
#[derive(Clone, Debug, Default)]
pub(crate) struct RowTable {
    /// Per function, the index of its entry block among all blocks.
    first_block: Vec<u32>,
    /// Per block (every function's blocks in order), where its ranges are in `ranges`.
    spans: Vec<(u32, u32)>,
    /// The ranges of all blocks.
    ranges: Vec<(u32, u32)>,
    /// The module-scope variables' pointer rows, written for every lane of every workgroup.
    global_rows: Vec<u32>,
    /// Whether some instruction writes a register this table cannot attribute to its block
    /// (every row is zeroed then).
    unattributed: bool,
    /// Whether some block may write one of `global_rows` other than by loading a built-in (an
    /// invalid module's store to one, a call passing one): the zeroing may then clear them.
    globals_written: bool,
}

impl RowTable {
    /// The table of `p`, after promotion and the row forms.
    pub(crate) fn new(p: &Program) -> Self {
        let mut t = RowTable {
            // Module-scope variables' pointer rows, and the rows of built-ins kept in registers:
            // every subgroup's set-up writes them.
            global_rows: p
                .globals
                .iter()
                .flat_map(|g| {
                    let kept = g.promoted.iter().flat_map(|l| {
                        (0..l.leaves).flat_map(move |c| [l.value + c, l.written + c])
                    });
                    std::iter::once(g.reg).chain(kept)
                })
                .collect(),
            ..RowTable::default()
        };
        let mut rows: Vec<(u32, u32)> = Vec::new();
        let global_rows = std::mem::take(&mut t.global_rows);
        for f in &p.funcs {
            t.first_block.push(t.spans.len() as u32);
            for (b, block) in f.blocks.iter().enumerate() {
                rows.clear();
                // Each range, and whether it holds a module-scope variable's row.
                let mut add = |at: u32, n: u32, writes_globals: &mut bool| {
                    let end = at.saturating_add(n);
                    *writes_globals |= global_rows.iter().any(|&r| (at..end).contains(&r));
                    rows.push((at, end));
                };
                let w = &mut t.globals_written;
                if b == 0 {
                    for &(reg, leaves) in &f.params {
                        add(reg, leaves, w);
                    }
                }
                for phi in &block.phis {
                    add(phi.res, phi.leaves, w);
                }
                let insts = f.insts.get(block.start as usize..block.end as usize);
                for inst in insts.unwrap_or(&[]) {
                    if inst.res != u32::MAX {
                        match p.ids.get(inst.id as usize) {
                            Some(IdKind::Value(Src::Reg(r))) if *r == inst.res => {}
                            // A forwarded load's uses read its variable's rows (added below
                            // with the variable's): its own row is written only if it is
                            // unforwarded again, and is added all the same.
                            _ if inst.forwarded => {}
                            _ => t.unattributed = true,
                        }
                        let mut leaves = p.ty(inst.ty).map_or(0, |ty| ty.leaves);
                        if let Some(l) = &inst.local {
                            leaves = leaves.max(l.leaves);
                        }
                        if let Some(r) = &inst.row {
                            leaves = leaves.max(r.leaves);
                        }
                        add(inst.res, leaves, w);
                    }
                    if let Some(l) = &inst.local {
                        // A load or an access chain writes no row of the variable it reaches
                        // but for a forwarded load's undefined bits, drawn into its value rows
                        // in lanes whose flags say "never written" (the rows are zeroed all the
                        // same). A built-in's flags say "written" in every lane that exists:
                        // its rows, which every subgroup's set-up fills, are left out.
                        let reads = matches!(
                            inst.decoded,
                            Some(
                                spirv::Op::Load
                                    | spirv::Op::AccessChain
                                    | spirv::Op::InBoundsAccessChain
                            )
                        );
                        for at in [l.value, l.written] {
                            let end = at.saturating_add(l.leaves);
                            if !(reads && global_rows.iter().any(|&r| (at..end).contains(&r))) {
                                add(at, l.leaves, w);
                            }
                        }
                    }
                    for bind in &inst.bindings {
                        for l in [&bind.arg, &bind.to] {
                            add(l.value, l.leaves, w);
                            add(l.written, l.leaves, w);
                        }
                    }
                }
                rows.retain(|r| r.0 < r.1);
                rows.sort_unstable();
                let from = t.ranges.len() as u32;
                for &r in &rows {
                    let own = t.ranges.len() as u32 > from;
                    match t.ranges.last_mut() {
                        Some(last) if own && r.0 <= last.1 => last.1 = last.1.max(r.1),
                        _ => t.ranges.push(r),
                    }
                }
                t.spans.push((from, t.ranges.len() as u32));
            }
        }
        t.global_rows = global_rows;
        t
    }

    /// Zeroes the module-scope variables' pointer rows of `regs` (a file given back to the
    /// module is all zero).
    pub(crate) fn zero_globals(&self, regs: &mut [u64], lanes: u32) {
        let n = lanes as usize;
        for &r in &self.global_rows {
            if let Some(row) = regs.get_mut(r as usize * n..(r as usize + 1) * n) {
                row.fill(0);
            }
        }
    }

    /// Block `b` of function `f` among all blocks, if it exists.
    #[inline]
    fn index(&self, f: u32, b: u32) -> Option<usize> {
        let i = self.first_block.get(f as usize)?.checked_add(b)? as usize;
        (i < self.spans.len()).then_some(i)
    }

    /// The rows block `i` may write.
    fn rows(&self, i: usize) -> &[(u32, u32)] {
        let (a, b) = self.spans.get(i).copied().unwrap_or((0, 0));
        self.ranges.get(a as usize..b as usize).unwrap_or(&[])
    }
}

/// The blocks a subgroup entered since its register file was last zeroed.
#[derive(Debug, Default)]
pub(crate) struct Written {
    /// Per block (as in [`RowTable`]), the `round` in which it was last marked.
    marked: Vec<u32>,
    /// The blocks marked this round.
    blocks: Vec<u32>,
    /// The current round (0: nothing marked yet; rounds start at 1).
    round: u32,
    /// Every row may have been written (a workgroup that ended in an error).
    all: bool,
}

impl Written {
    /// Notes that block `b` of function `f` was entered (its phis, and for an entry block its
    /// parameters, were written just before).
    #[inline]
    pub(crate) fn enter(&mut self, table: &RowTable, f: u32, b: u32) {
        let Some(i) = table.index(f, b) else {
            self.all = true;
            return;
        };
        match self.marked.get_mut(i) {
            Some(m) if *m == self.round => {}
            Some(m) => {
                *m = self.round;
                self.blocks.push(i as u32);
            }
            None => self.first_enter(table, i),
        }
    }

    /// [`Written::enter`] of block `i` (`RowTable::index`) when no block was marked yet (the
    /// marks are made for the table's blocks, the first round starts).
    #[cold]
    fn first_enter(&mut self, table: &RowTable, i: usize) {
        self.marked.clear();
        self.marked.resize(table.spans.len(), 0);
        self.round = 1;
        if let Some(m) = self.marked.get_mut(i) {
            *m = self.round;
            self.blocks.push(i as u32);
        }
    }

    /// Notes that any row may have been written.
    pub(crate) fn all(&mut self) {
        self.all = true;
    }

    /// Whether the next [`Written::zero`] leaves the module-scope variables' rows
    /// (`RowTable::global_rows`: pointers and built-ins) as they are, so that a subgroup's
    /// set-up need not fill again those that would get the same values.
    pub(crate) fn keeps_globals(&self, table: &RowTable) -> bool {
        !(self.all || table.unattributed || table.globals_written)
    }

    /// Zeroes the rows of `regs` (rows of `lanes` slots) the entered blocks may have written,
    /// and starts a new round. With `check`, returns the first row still not zero (but for the
    /// module-scope variables' pointer rows), if any.
    pub(crate) fn zero(
        &mut self,
        table: &RowTable,
        regs: &mut [u64],
        lanes: u32,
        check: bool,
    ) -> Option<u32> {
        let n = lanes as usize;
        if self.all || table.unattributed {
            regs.fill(0);
        } else {
            for &i in &self.blocks {
                for &(a, b) in table.rows(i as usize) {
                    let a = (a as usize * n).min(regs.len());
                    let b = (b as usize * n).min(regs.len());
                    regs[a..b].fill(0);
                }
            }
        }
        self.blocks.clear();
        self.all = false;
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            // After 2^32 rounds the marks start again from a clean slate.
            self.marked.iter_mut().for_each(|m| *m = 0);
            self.round = 1;
        }
        if !check || n == 0 {
            return None;
        }
        regs.chunks(n)
            .enumerate()
            .find(|(r, row)| {
                row.iter().any(|&x| x != 0) && !table.global_rows.contains(&(*r as u32))
            })
            .map(|(r, _)| r as u32)
    }
}

/// The register files given back by a module's finished dispatches (all zero), and the rows
/// each block may write.
pub(crate) struct RegisterFiles {
    files: Mutex<Vec<Vec<u64>>>,
    /// The storage of finished dispatches' memory objects: a machine takes it all when it is
    /// made and gives back its objects' when dropped, so a dispatch's first workgroup does not
    /// allocate two vectors per invocation and variable.
    objects: Mutex<Vec<Storage>>,
    /// The rows each block may write.
    pub(crate) table: RowTable,
    /// Whether every zeroing is checked (`Module::with_register_check`).
    pub(crate) check: bool,
}

impl RegisterFiles {
    /// None kept yet, for program `p`.
    pub(crate) fn new(p: &Program) -> Self {
        RegisterFiles {
            files: Mutex::new(Vec::new()),
            objects: Mutex::new(Vec::new()),
            table: RowTable::new(p),
            check: false,
        }
    }

    /// A register file given back earlier with room for `slots` (all zero, of any length):
    /// this module's, else one a dropped module left. A smaller one is left where it is: growing
    /// it would copy it, where a fresh allocation is zeroed lazily.
    pub(crate) fn take(&self, slots: usize) -> Option<Vec<u64>> {
        let fits = |kept: &mut Vec<Vec<u64>>| {
            let k = kept.iter().rposition(|f| f.capacity() >= slots)?;
            Some(kept.swap_remove(k))
        };
        if let Some(f) = fits(&mut *self.files.lock().ok()?) {
            return Some(f);
        }
        fits(&mut *SPARE.lock().ok()?)
    }

    /// The object storage kept (all of it: one machine of a dispatch takes it).
    pub(crate) fn take_objects(&self) -> Vec<Storage> {
        self.objects
            .lock()
            .map(|mut k| std::mem::take(&mut *k))
            .unwrap_or_default()
    }

    /// Keeps the storage of small objects for later dispatches, as far as the bounds allow.
    pub(crate) fn give_objects(&self, objects: impl Iterator<Item = Storage>) {
        let Ok(mut kept) = self.objects.lock() else {
            return;
        };
        let size = |o: &Storage| o.0.capacity() + o.1.capacity();
        let mut bytes: usize = kept.iter().map(size).sum();
        for o in objects {
            if kept.len() >= MAX_OBJECTS {
                break;
            }
            let n = size(&o);
            if n <= 2 * MAX_OBJECT_BYTES && bytes + n <= MAX_OBJECTS_BYTES {
                bytes += n;
                kept.push(o);
            }
        }
    }

    /// Keeps `files` (all zero) for later dispatches, as far as the bounds allow.
    pub(crate) fn give(&self, files: impl Iterator<Item = Vec<u64>>) {
        let Ok(mut kept) = self.files.lock() else {
            return;
        };
        let mut bytes: usize = kept.iter().map(|f| f.capacity() * 8).sum();
        for f in files {
            let size = f.capacity() * 8;
            if kept.len() >= MAX_FILES || bytes + size > MAX_BYTES {
                break;
            }
            bytes += size;
            kept.push(f);
        }
    }
}

impl Drop for RegisterFiles {
    /// The module's files (all zero) go to the next modules, as far as [`MAX_SPARE_BYTES`]
    /// allows.
    fn drop(&mut self) {
        let (Ok(mine), Ok(mut spare)) = (self.files.get_mut(), SPARE.lock()) else {
            return;
        };
        let mut bytes: usize = spare.iter().map(|f| f.capacity() * 8).sum();
        for f in mine.drain(..) {
            let size = f.capacity() * 8;
            if bytes + size > MAX_SPARE_BYTES {
                continue;
            }
            bytes += size;
            spare.push(f);
        }
    }
}

impl Clone for RegisterFiles {
    /// A clone starts with none kept (the files are a cache, not part of the module).
    fn clone(&self) -> Self {
        RegisterFiles {
            files: Mutex::new(Vec::new()),
            objects: Mutex::new(Vec::new()),
            table: self.table.clone(),
            check: self.check,
        }
    }
}

impl std::fmt::Debug for RegisterFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.files.lock().map_or(0, |k| k.len());
        write!(f, "RegisterFiles({n} kept)")
    }
}
