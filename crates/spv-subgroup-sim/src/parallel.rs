//! Workgroups on several threads with exactly the result of running them one after another.
//!
//! Each worker takes the next workgroup and runs it against the newest snapshot of the committed
//! state (pages shared with it, `overlay::Pages`), its writes in a private overlay
//! (`overlay.rs`); a finished run waits until the workgroups before it are committed, and is
//! committed by whichever worker holds the commit then (no thread waits for another at a
//! barrier; one runs ahead of the commit by at most `WINDOW` workgroups). A workgroup that read a
//! word written by a workgroup committed after its snapshot (a last-writer stamp per word says
//! which), failed, passed its step budget (it may be waiting for a word an earlier one writes)
//! or would pass the step limit is run again by the committing worker against the committed
//! state, as the sequential run would have run it: so buffers, errors, steps, undefined values
//! and size reads are the same whatever the thread count.
//! Undefined values' bits are seeded per workgroup (`exec/workgroup.rs`'s `workgroup_rng`), not per thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};

use crate::error::{Error, ErrorKind, Result};
use crate::exec::{Machine, Setup, MAX_REPORTS};
use crate::overlay::{Effects, Pages};
use crate::regpool::RegisterFiles;
use crate::translate::Program;
use crate::{Dispatch, Outcome, Undefined};

/// Most workgroups a worker may run ahead of the commit: bounds the finished runs held and how
/// stale a snapshot gets. A worker that far ahead waits (only for the commit: the workgroup
/// next to commit is never held back).
const WINDOW: u64 = 1024;

/// Workgroups in the window that decides whether the workers run ahead: when more than a
/// quarter of the last `RECENT` committed ran again (each reads what the one before wrote,
/// so every snapshot is stale), the workers run only the workgroup next to commit, against
/// the committed state, for the next `SERIAL` (the mode never changes a result).
const RECENT: u64 = 32;
/// See `RECENT`.
const SERIAL: u64 = 128;

/// Steps (per subgroup) a workgroup run against a stale snapshot may take before it is given up
/// and left to the commit, at least: a workgroup that waits in a loop for a word an earlier one
/// writes (a decoupled look-back) would otherwise spin to the step limit, or forever without one.
const STALE_STEPS: u64 = 1 << 20;
/// ... or this many times the most steps a committed workgroup took.
const STALE_STEPS_FACTOR: u64 = 8;

/// How long a dispatch on every core (`Dispatch::threads` 0) runs its workgroups on the calling
/// thread before it starts the workers: starting and joining them costs tens of microseconds
/// (far more on a loaded machine), the whole of a small dispatch's run, so a dispatch that
/// ends within this never starts them; one whose first workgroups show that it will not
/// starts them then (`inline_over`). A thread count asked for always starts its workers.
const INLINE: std::time::Duration = std::time::Duration::from_millis(1);

/// Bytes of finished runs' effects and undefined reports that may wait for the commit before
/// the workers ahead of it wait too: the memory bound of the runs held.
const HELD_BYTES: usize = 64 << 20;

/// The threads a dispatch of `count` workgroups runs on: `d.threads` (0: every core), at most
/// one per workgroup.
pub fn threads(d: &Dispatch, count: u64) -> usize {
    let want = if d.threads == 0 { cores() } else { d.threads };
    want.min(usize::try_from(count).unwrap_or(usize::MAX))
        .max(1)
}

/// The cores this process may use, asked once: `available_parallelism` reads the cgroup files
/// on every call, which cost as much as a small dispatch.
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, usize::from))
}

/// By result id: the atomics that may wait for the commit as deltas, those that commute and
/// whose result no instruction reads: no operand names the id or its register, no phi takes its
/// register (an operand that is a literal equal to the id counts as a read: a false read only
/// costs a deferral).
pub fn deferrable_atomics(p: &Program) -> Vec<bool> {
    use crate::translate::{IdKind, Src};
    use spirv::Op as O;
    // Register of each candidate's result -> its id.
    let mut by_reg: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    for f in &p.funcs {
        for inst in &f.insts {
            let commutes = matches!(
                inst.decoded,
                Some(
                    O::AtomicIAdd
                        | O::AtomicISub
                        | O::AtomicIIncrement
                        | O::AtomicIDecrement
                        | O::AtomicAnd
                        | O::AtomicOr
                        | O::AtomicXor
                        | O::AtomicSMin
                        | O::AtomicSMax
                        | O::AtomicUMin
                        | O::AtomicUMax
                )
            );
            if commutes && inst.id != 0 && inst.res != u32::MAX {
                by_reg.insert(inst.res, inst.id);
            }
        }
    }
    let Some(bound) = by_reg.values().map(|&id| id as usize + 1).max() else {
        return Vec::new();
    };
    let mut used = vec![false; bound];
    let read_reg = |r: u32, used: &mut Vec<bool>| {
        if let Some(&id) = by_reg.get(&r) {
            used[id as usize] = true;
        }
    };
    for f in &p.funcs {
        for inst in &f.insts {
            for &a in &inst.args {
                if let Some(u) = used.get_mut(a as usize) {
                    *u = true;
                }
                if let Some(IdKind::Value(Src::Reg(r))) = p.ids.get(a as usize) {
                    read_reg(*r, &mut used);
                }
            }
        }
        for b in &f.blocks {
            for phi in &b.phis {
                for (_, src) in &phi.incoming {
                    if let Src::Reg(r) = src {
                        read_reg(*r, &mut used);
                    }
                }
            }
        }
    }
    let mut defer = vec![false; bound];
    for &id in by_reg.values() {
        defer[id as usize] = !used[id as usize];
    }
    defer
}

/// One workgroup's run against a snapshot.
struct WgRun {
    result: Result<()>,
    steps: u64,
    lane_steps: u64,
    undefined: Vec<Undefined>,
    undefined_total: u64,
    counts: Option<Vec<Vec<u64>>>,
    high: usize,
    fx: Effects,
}

/// Where a workgroup starts: the steps already done and the undefined events already recorded,
/// and the step count at which it stops.
#[derive(Clone, Copy)]
struct Before {
    steps: u64,
    reports: usize,
    limit: u64,
}

/// Runs workgroup `index` on `m` against its overlay's base.
fn run_one(m: &mut Machine<'_>, s: &Setup, d: &Dispatch, index: u64, before: Before) -> WgRun {
    let steps_before = before.steps;
    m.steps = steps_before;
    m.step_limit = before.limit;
    m.report_cap = MAX_REPORTS.saturating_sub(before.reports);
    m.lane_steps = 0;
    m.undefined.clear();
    m.undefined_total = 0;
    let result = m.run_workgroup(s, d, index);
    let counts = m.trace.as_mut().map(|(_, counts)| {
        let fresh = counts.iter().map(|c| vec![0; c.len()]).collect();
        std::mem::replace(counts, fresh)
    });
    WgRun {
        result,
        steps: m.steps - steps_before,
        lane_steps: m.lane_steps,
        undefined: std::mem::take(&mut m.undefined),
        undefined_total: m.undefined_total,
        counts,
        high: m.high,
        fx: m.ov.finish(),
    }
}

impl WgRun {
    /// About how many bytes it holds.
    fn bytes(&self) -> usize {
        self.fx.writes.len() * 24
            + self.fx.reads.len() * 16
            + self.fx.deltas.len() * std::mem::size_of::<crate::overlay::Delta>()
            + self.undefined.len() * 64
            + self
                .counts
                .as_ref()
                .map_or(0, |c| c.iter().map(|f| f.len() * 8).sum())
            + 64
    }
}

/// Per shared object, per word: 1 + the index of the last committed workgroup of this dispatch
/// that wrote it (0: none), so a run against the snapshot of version `v` (workgroups `0..v`
/// committed) conflicts exactly where it read a word stamped above `v`.
#[derive(Default)]
struct LastWriter {
    words: Vec<Vec<u32>>,
}

impl LastWriter {
    /// Stamps the words of bytes `a..a + n` of `obj` (an object of `len` bytes).
    fn mark(&mut self, obj: u32, a: u32, n: u32, len: usize, stamp: u32) {
        if self.words.len() <= obj as usize {
            self.words.resize_with(obj as usize + 1, Vec::new);
        }
        let v = &mut self.words[obj as usize];
        if v.is_empty() {
            // Allocated on the first write: objects only read cost nothing.
            *v = vec![0; len.div_ceil(4)];
        }
        for w in a / 4..(a + n).div_ceil(4) {
            if let Some(x) = v.get_mut(w as usize) {
                *x = stamp;
            }
        }
    }

    /// Whether a word of `reads` was written by a workgroup committed after `version`.
    fn conflicts(&self, reads: &[(u32, u32, u64)], version: u64) -> bool {
        reads.iter().any(|&(obj, c, bits)| {
            let Some(v) = self.words.get(obj as usize).filter(|v| !v.is_empty()) else {
                return false;
            };
            let mut b = bits;
            while b != 0 {
                let w = c as usize * 64 + b.trailing_zeros() as usize;
                if v.get(w).is_some_and(|&s| u64::from(s) > version) {
                    return true;
                }
                b &= b - 1;
            }
            false
        })
    }
}

/// Applies a workgroup's writes and deltas to the committed bytes, stamping their words.
fn apply(objs: &mut [Pages], fx: &Effects, last: &mut LastWriter, stamp: u32) {
    for &(obj, a, n, v) in &fx.writes {
        if let Some(o) = objs.get_mut(obj as usize) {
            o.write(a as usize, n as usize, v);
            last.mark(obj, a, n, o.len(), stamp);
        }
    }
    for d in &fx.deltas {
        let n = d.width / 8;
        if let Some(o) = objs.get_mut(d.obj as usize) {
            o.update(d.off as usize, n as usize, |old| {
                d.kind.apply(d.width, old, d.operand)
            });
            last.mark(d.obj, d.off, n, o.len(), stamp);
        }
    }
}

/// The committed state as workers see it when they start a workgroup.
struct Snapshot {
    /// Workgroups `0..version` are committed in `objs`.
    version: u64,
    /// Their steps and undefined reports.
    steps: u64,
    reports: usize,
    /// The step budget of a run against an older state than its own (`STALE_STEPS`).
    budget: u64,
    objs: Arc<Vec<Pages>>,
}

/// The commit: the committed state, the totals, and what decides whether the workers run ahead.
struct Commit {
    objs: Vec<Pages>,
    last: LastWriter,
    /// Workgroups committed.
    next: u64,
    steps: u64,
    lane_steps: u64,
    most_steps: u64,
    undefined: Vec<Undefined>,
    undefined_total: u64,
    counts: Option<Vec<Vec<u64>>>,
    memory_objects: usize,
    error: Option<Error>,
    /// Of the workgroups committed since `recent_from`, how many ran again.
    recent_again: u64,
    recent_from: u64,
    /// Workers run only the next workgroup to commit until this many are committed.
    serial_until: u64,
    /// Workgroups run again, in all (for tests and measurements).
    again: u64,
}

impl Commit {
    /// Nothing committed yet: the shared objects `objs`, a dispatch's first memory objects.
    fn new(objs: Vec<Pages>, memory_objects: usize) -> Self {
        Commit {
            objs,
            last: LastWriter::default(),
            next: 0,
            steps: 0,
            lane_steps: 0,
            most_steps: 0,
            undefined: Vec::new(),
            undefined_total: 0,
            counts: None,
            memory_objects,
            error: None,
            recent_again: 0,
            recent_from: 0,
            serial_until: 0,
            again: 0,
        }
    }

    /// Commits `run` of workgroup `self.next`, which ran against the snapshot of `version`, or runs
    /// it again against the committed state when it read a word written since, failed, or would
    /// pass the step limit.
    fn commit_one(
        &mut self,
        (d, s): (&Dispatch, &Setup),
        m: &mut Machine<'_>,
        run: WgRun,
        version: u64,
    ) {
        let c = self;
        let index = c.next;
        let exact = version == index;
        let run = if exact
            || (run.result.is_ok()
                && c.steps.saturating_add(run.steps) <= d.step_limit
                && !c.last.conflicts(&run.fx.reads, version))
        {
            run
        } else {
            c.again += 1;
            c.recent_again += 1;
            m.ov.base = Some(Arc::new(c.objs.clone()));
            let before = Before {
                steps: c.steps,
                reports: c.undefined.len(),
                limit: d.step_limit,
            };
            let r = run_one(m, s, d, index, before);
            m.ov.base = None;
            r
        };
        if let Err(e) = run.result {
            c.error = Some(e);
            return;
        }
        // `on_workers` leaves dispatches of more workgroups than a stamp counts to the
        // sequential run.
        let stamp = u32::try_from(index + 1).unwrap_or(u32::MAX);
        apply(&mut c.objs, &run.fx, &mut c.last, stamp);
        c.steps += run.steps;
        c.most_steps = c.most_steps.max(run.steps);
        c.lane_steps += run.lane_steps;
        c.undefined_total += run.undefined_total;
        let room = MAX_REPORTS.saturating_sub(c.undefined.len());
        c.undefined.extend(run.undefined.into_iter().take(room));
        c.memory_objects = c.memory_objects.max(run.high);
        if let Some(counts) = run.counts {
            match c.counts.as_mut() {
                None => c.counts = Some(counts),
                Some(total) => {
                    for (t, counts) in total.iter_mut().zip(counts) {
                        for (t, n) in t.iter_mut().zip(counts) {
                            *t += n;
                        }
                    }
                }
            }
        }
        c.next += 1;
        if c.next >= c.serial_until && c.next - c.recent_from >= RECENT {
            // Many ran again: their snapshots are stale as soon as taken (each reads what the
            // one before wrote); for a while run each against the committed state only.
            if c.recent_again * 4 > RECENT {
                c.serial_until = c.next + SERIAL;
            }
            c.recent_again = 0;
            c.recent_from = c.next;
        }
    }
}

/// Finished runs waiting for their turn to commit.
#[derive(Default)]
struct Ready {
    /// By workgroup index: the run, the snapshot version it ran against, its bytes.
    runs: std::collections::BTreeMap<u64, (WgRun, u64, usize)>,
    /// Bytes held in `runs`.
    bytes: usize,
}

/// What the workers of a dispatch share.
struct Shared<'a> {
    d: &'a Dispatch,
    s: &'a Setup,
    count: u64,
    bound: usize,
    commit: Mutex<Commit>,
    ready: Mutex<Ready>,
    /// Notified when commits advance or the dispatch stops.
    moved: Condvar,
    latest: Mutex<Arc<Snapshot>>,
    /// The next workgroup to take.
    next: AtomicU64,
    /// Workgroups committed (`Commit::next`, readable without the commit).
    committed: AtomicU64,
    /// The workers run only the next workgroup to commit (many ran again lately).
    serial: AtomicBool,
    /// A committed failure: the workers stop.
    stop: AtomicBool,
}

/// Stops the dispatch when its worker panics (a bug): the others, which may be waiting for the
/// run it will never hand over, stop too, so the panic is reported instead of a hang.
struct StopOnPanic<'s, 'a>(&'s Shared<'a>);

impl Drop for StopOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Under the lock the waiting workers check `stop` with, so none misses it.
            let r = lock(&self.0.ready);
            self.0.stop.store(true, Ordering::Relaxed);
            drop(r);
            self.0.moved.notify_all();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared<'_> {
    /// Runs workgroups until none is left (or the dispatch failed, or the `inline` part of
    /// the dispatch is over: [`inline_over`]): each against the newest snapshot, handed to the
    /// commit. The workers never wait for each other, only for the commit when they are
    /// `WINDOW` workgroups or `bound` bytes ahead of it (or while many run again: then only the
    /// next one to commit runs).
    fn work(&self, m: &mut Machine<'_>, inline: Option<(std::time::Instant, std::time::Duration)>) {
        let _stop = StopOnPanic(self);
        let mut ran = 0u64;
        loop {
            if self.stop.load(Ordering::Relaxed)
                || inline.is_some_and(|i| inline_over(i, ran, self.count))
            {
                return;
            }
            ran += 1;
            let index = self.next.fetch_add(1, Ordering::Relaxed);
            if index >= self.count {
                return;
            }
            {
                let mut r = lock(&self.ready);
                loop {
                    let done = self.committed.load(Ordering::Acquire);
                    let wait = index > done
                        && (index - done >= WINDOW
                            || r.bytes >= self.bound
                            || self.serial.load(Ordering::Relaxed));
                    if !wait || self.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    r = self.moved.wait(r).unwrap_or_else(PoisonError::into_inner);
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let snap = Arc::clone(&lock(&self.latest));
            // Against the state it would see in order: no budget (nothing earlier can change).
            let exact = snap.version == index;
            let before = Before {
                steps: snap.steps,
                reports: snap.reports,
                limit: if exact {
                    self.d.step_limit
                } else {
                    self.d
                        .step_limit
                        .min(snap.steps.saturating_add(snap.budget))
                },
            };
            m.ov.base = Some(Arc::clone(&snap.objs));
            let run = run_one(m, self.s, self.d, index, before);
            m.ov.base = None;
            let version = snap.version;
            // Dropped before the commit, which then need not copy the pages it alone held.
            drop(snap);
            let bytes = run.bytes();
            {
                let mut r = lock(&self.ready);
                r.bytes += bytes;
                r.runs.insert(index, (run, version, bytes));
            }
            self.try_commit(m);
        }
    }

    /// Commits the finished runs that are next in order, unless another thread is committing
    /// (it then commits these too: it looks again for the next run after it lets go).
    fn try_commit(&self, m: &mut Machine<'_>) {
        loop {
            let mut c = match self.commit.try_lock() {
                Ok(c) => c,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                Err(TryLockError::WouldBlock) => return,
            };
            let first = c.next;
            while c.error.is_none() {
                let entry = {
                    let mut r = lock(&self.ready);
                    let e = r.runs.remove(&c.next);
                    if let Some((_, _, bytes)) = &e {
                        r.bytes -= bytes;
                    }
                    e
                };
                let Some((run, version, _)) = entry else {
                    break;
                };
                c.commit_one((self.d, self.s), m, run, version);
            }
            if c.next > first || c.error.is_some() {
                self.publish(&c);
            }
            drop(c);
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            let next = self.committed.load(Ordering::Acquire);
            if !lock(&self.ready).runs.contains_key(&next) {
                return;
            }
        }
    }

    /// Makes the committed state the workers' newest snapshot and wakes those waiting.
    fn publish(&self, c: &Commit) {
        let snap = Snapshot {
            version: c.next,
            steps: c.steps,
            reports: c.undefined.len(),
            budget: STALE_STEPS.max(c.most_steps.saturating_mul(STALE_STEPS_FACTOR)),
            objs: Arc::new(c.objs.clone()),
        };
        *lock(&self.latest) = Arc::new(snap);
        {
            let _r = lock(&self.ready);
            self.committed.store(c.next, Ordering::Release);
            self.serial
                .store(c.next < c.serial_until, Ordering::Relaxed);
            if c.error.is_some() {
                self.stop.store(true, Ordering::Relaxed);
            }
        }
        self.moved.notify_all();
    }
}

/// Whether the part of a dispatch on every core that this thread runs alone, started at
/// `start` and given `window` (`INLINE`), is over after it ran `ran` of the `count`
/// workgroups: the window has passed, or the workgroups run so far show that the whole
/// dispatch would outlast it (the workers then start at once rather than after the window).
fn inline_over(
    (start, window): (std::time::Instant, std::time::Duration),
    ran: u64,
    count: u64,
) -> bool {
    let spent = start.elapsed();
    spent >= window
        || (ran > 0 && spent.as_secs_f64() * count as f64 > window.as_secs_f64() * ran as f64)
}

/// Runs a whole dispatch: on this thread (one thread asked for, or one workgroup) or on
/// several. `defer` is [`deferrable_atomics`]'s table.
pub fn dispatch(
    p: &Program,
    d: &Dispatch,
    defer: &[bool],
    files: &RegisterFiles,
) -> Result<Outcome> {
    let s = crate::exec::setup(p, d)?;
    let threads = threads(d, s.count());
    // A workgroup's stamp (`LastWriter`) is a u32.
    if threads <= 1 || s.count() >= u64::from(u32::MAX) {
        return crate::exec::sequential(p, d, &s, defer, files);
    }
    let inline = if d.threads == 0 {
        INLINE
    } else {
        std::time::Duration::ZERO
    };
    on_workers(p, d, &s, defer, files, (threads, inline), HELD_BYTES).map(|(o, _)| o)
}

/// The shared objects' first committed state: their bytes in pages, in one frozen page where
/// the module never writes the object (`crate::readonly`).
fn committed_objects(
    p: &Program,
    s: &Setup,
    shared: Vec<(crate::exec::MemName, Vec<u8>)>,
) -> Vec<Pages> {
    let frozen = s.never_written(p);
    shared
        .into_iter()
        .enumerate()
        .map(|(k, (_, b))| {
            if frozen.get(k).copied().unwrap_or(false) {
                Pages::frozen(b)
            } else {
                Pages::new(&b)
            }
        })
        .collect()
}

/// Runs the dispatch on `threads` workers (more than 1, this thread one of them), the finished
/// runs waiting for their commit holding at most about `bound` bytes; for the first `inline`
/// of the dispatch this thread runs alone, each workgroup against the committed state (so a
/// small dispatch starts no threads). Also gives how many workgroups ran again.
fn on_workers(
    p: &Program,
    d: &Dispatch,
    s: &Setup,
    defer: &[bool],
    files: &RegisterFiles,
    (threads, inline): (usize, std::time::Duration),
    bound: usize,
) -> Result<(Outcome, u64)> {
    let started = std::time::Instant::now();
    let shared = s.shared(d);
    let mut machines: Vec<Machine<'_>> = (0..threads)
        .map(|_| {
            let mut m = Machine::new(p, d, defer, files);
            m.add_shared(shared.iter().map(|(n, _)| (*n, Vec::new())).collect(), true);
            m
        })
        .collect();
    let objs = committed_objects(p, s, shared);
    let first = Snapshot {
        version: 0,
        steps: 0,
        reports: 0,
        budget: STALE_STEPS,
        objs: Arc::new(objs.clone()),
    };
    let sh = Shared {
        d,
        s,
        count: s.count(),
        bound,
        commit: Mutex::new(Commit::new(objs, s.shared_count())),
        ready: Mutex::new(Ready::default()),
        moved: Condvar::new(),
        latest: Mutex::new(Arc::new(first)),
        next: AtomicU64::new(0),
        committed: AtomicU64::new(0),
        serial: AtomicBool::new(false),
        stop: AtomicBool::new(false),
    };
    let (mine, others) = machines.split_at_mut(1);
    let mine = &mut mine[0];
    let joined = std::thread::scope(|scope| {
        if !inline.is_zero() {
            sh.work(mine, Some((started, inline)));
        }
        let left = !sh.stop.load(Ordering::Relaxed) && sh.next.load(Ordering::Relaxed) < sh.count;
        let workers: Vec<_> = if left {
            others
                .iter_mut()
                .map(|m| {
                    let sh = &sh;
                    scope.spawn(move || sh.work(m, None))
                })
                .collect()
        } else {
            Vec::new()
        };
        sh.work(mine, None);
        workers.into_iter().map(|w| w.join()).collect::<Vec<_>>()
    });
    if joined.iter().any(std::thread::Result::is_err) {
        return Err(Error::new(ErrorKind::Dispatch(
            "a worker thread of the dispatch panicked (a bug in the simulator)".into(),
        )));
    }
    // Every run was handed to the commit and committed by whoever held it then; commit what
    // may be left all the same, and run here, in order, any workgroup not run.
    sh.try_commit(mine);
    let mut c = sh
        .commit
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut ready = sh
        .ready
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    while c.error.is_none() && c.next < sh.count {
        let (run, version) = match ready.runs.remove(&c.next) {
            Some((run, version, _)) => (run, version),
            None => {
                mine.ov.base = Some(Arc::new(c.objs.clone()));
                let before = Before {
                    steps: c.steps,
                    reports: c.undefined.len(),
                    limit: d.step_limit,
                };
                let run = run_one(mine, s, d, c.next, before);
                mine.ov.base = None;
                (run, c.next)
            }
        };
        c.commit_one((d, s), mine, run, version);
    }
    if let Some(e) = c.error {
        return Err(e);
    }
    let size_reads = match (&machines[0].trace, &c.counts) {
        (Some((marks, _)), Some(counts)) => crate::exec::size_reads(p, marks, counts),
        _ => Vec::new(),
    };
    let objs = c.objs.into_iter().map(Pages::into_bytes).collect();
    Ok((
        Outcome {
            size_reads,
            buffers: s.outcome_buffers(d, objs),
            undefined: c.undefined,
            undefined_total: c.undefined_total,
            steps: c.steps,
            lane_steps: c.lane_steps,
            memory_objects: c.memory_objects,
        },
        c.again,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread runs alone while the dispatch may still end within the window: not
    /// once its workgroups so far, at their pace, project past it, nor once it has passed.
    #[test]
    fn the_inline_part_ends_as_soon_as_the_dispatch_would_outlast_it() {
        use std::time::{Duration, Instant};
        let window = Duration::from_millis(50);
        let ago = |d: Duration| Instant::now().checked_sub(d).unwrap_or_else(Instant::now);
        // Nothing run yet, window open.
        assert!(!inline_over((Instant::now(), window), 0, 256));
        // 10 ms for 1 of 256 workgroups: 2.56 s projected.
        assert!(inline_over(
            (ago(Duration::from_millis(10)), window),
            1,
            256
        ));
        // 10 ms for 1 of 3: 30 ms projected, within the window.
        assert!(!inline_over((ago(Duration::from_millis(10)), window), 1, 3));
        // The window passed.
        assert!(inline_over((ago(Duration::from_millis(60)), window), 3, 4));
    }

    /// Each invocation reads and writes its own word: no conflicts.
    const OWN_WORDS: &str = r#"#version 450
layout(local_size_x = 12) in;
layout(std430, binding = 0) buffer Out { uint words[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    words[g] = words[g] * 3u + g;
}
"#;

    /// Each workgroup reads the word the one before wrote (and a word far off, on another page
    /// of the buffer's 4 KiB pages, that only workgroup 0 writes).
    const CHAIN: &str = r#"#version 450
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer Out { uint chain[2048]; uint far; };
void main() {
    uint wg = gl_WorkGroupID.x;
    if (gl_LocalInvocationIndex == 1u) {
        chain[wg + 1u] = chain[wg] * 3u + wg + far;
        if (wg == 0u) { far = 5u; }
    }
}
"#;

    fn module(glsl: &str) -> crate::Module {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.comp");
        std::fs::write(&path, glsl).expect("write shader");
        let words = spv_subgroup_tests::tools::compile_glsl(&path, "vulkan1.1")
            .expect("glslangValidator compiles the shader");
        crate::Module::new(&words).expect("translates")
    }

    #[test]
    fn runs_held_within_their_memory_bound_give_the_in_order_outcome() {
        let module = module(OWN_WORDS);
        let d = Dispatch::default()
            .with_subgroup_size(4)
            .with_workgroups([30, 1, 1])
            .with_buffer((0, 0), vec![1u8; 31 * 12 * 4]);
        let want = module.run(&d.clone().with_threads(1)).expect("runs");
        let s = crate::exec::setup(&module.program, &d).expect("fits");
        // A bound of one byte: a worker ahead of the commit waits until nothing is held.
        for threads in [2, 3] {
            let (got, _) = on_workers(
                &module.program,
                &d,
                &s,
                &module.deferrable,
                &module.files,
                (threads, std::time::Duration::ZERO),
                1,
            )
            .expect("runs");
            assert_eq!(got.buffers, want.buffers, "{threads} threads");
            assert_eq!(got.steps, want.steps);
            assert_eq!(got.lane_steps, want.lane_steps);
        }
    }

    /// Runs every workgroup of `d` against the dispatch's first snapshot (the stalest a worker
    /// could see), commits them in order; the committed buffer, the workgroups run again, and
    /// whether the commit turned to running only the next workgroup.
    fn all_against_the_first_snapshot(
        module: &crate::Module,
        d: &Dispatch,
    ) -> (Vec<u8>, u64, bool) {
        let s = crate::exec::setup(&module.program, d).expect("fits");
        let mut m = Machine::new(&module.program, d, &module.deferrable, &module.files);
        let shared = s.shared(d);
        m.add_shared(shared.iter().map(|(n, _)| (*n, Vec::new())).collect(), true);
        let objs = committed_objects(&module.program, &s, shared);
        let first = Arc::new(objs.clone());
        let mut c = Commit::new(objs, s.shared_count());
        let runs: Vec<WgRun> = (0..s.count())
            .map(|index| {
                m.ov.base = Some(Arc::clone(&first));
                let before = Before {
                    steps: 0,
                    reports: 0,
                    limit: d.step_limit.min(STALE_STEPS),
                };
                run_one(&mut m, &s, d, index, before)
            })
            .collect();
        for run in runs {
            c.commit_one((d, &s), &mut m, run, 0);
            assert!(c.error.is_none());
        }
        let serial = c.serial_until > 0;
        (c.objs.swap_remove(0).into_bytes(), c.again, serial)
    }

    #[test]
    fn a_run_that_read_a_word_committed_after_its_snapshot_runs_again() {
        let module = module(CHAIN);
        let d = Dispatch::default()
            .with_subgroup_size(4)
            .with_workgroups([40, 1, 1])
            .with_buffer((0, 0), vec![0u8; 2049 * 4]);
        let want = module.run(&d.clone().with_threads(1)).expect("runs");
        let (got, again, serial) = all_against_the_first_snapshot(&module, &d);
        assert_eq!(first_difference(&got, &want.buffers[&(0, 0)]), None);
        // Every workgroup but the first read its chain word as workgroup 0's snapshot had it.
        assert_eq!(again, 39);
        assert!(
            serial,
            "most ran again: the workers run only the next workgroup for a while"
        );
        // And none where nothing read is written by another.
        let module = module_own();
        let d = Dispatch::default()
            .with_subgroup_size(4)
            .with_workgroups([30, 1, 1])
            .with_buffer((0, 0), vec![1u8; 31 * 12 * 4]);
        let want = module.run(&d.clone().with_threads(1)).expect("runs");
        let (got, again, serial) = all_against_the_first_snapshot(&module, &d);
        assert_eq!(first_difference(&got, &want.buffers[&(0, 0)]), None);
        assert_eq!((again, serial), (0, false));
    }

    /// The first byte where `got` differs from `want`, if any.
    fn first_difference(got: &[u8], want: &[u8]) -> Option<(usize, u8, u8)> {
        (0..got.len().max(want.len())).find_map(|k| {
            let (g, w) = (got.get(k).copied(), want.get(k).copied());
            (g != w).then(|| (k, g.unwrap_or(0), w.unwrap_or(0)))
        })
    }

    fn module_own() -> crate::Module {
        module(OWN_WORDS)
    }

    #[test]
    fn a_snapshot_keeps_its_bytes_while_the_commit_writes_its_pages() {
        let bytes: Vec<u8> = (0..10_000u32).map(|k| (k * 7) as u8).collect();
        let mut committed = Pages::new(&bytes);
        let snapshot = committed.clone();
        // Within a page, across the boundary of the first two 4 KiB pages, and past the end.
        committed.write(8, 4, 0xdead_beef);
        committed.write(4094, 4, 0x0102_0304);
        committed.write(9998, 4, 0xaabb_ccdd);
        assert_eq!(snapshot.clone().into_bytes(), bytes);
        assert_eq!(
            snapshot.read(4094, 4),
            u64::from(u32::from_le_bytes([
                bytes[4094],
                bytes[4095],
                bytes[4096],
                bytes[4097]
            ]))
        );
        assert_eq!(committed.read(8, 4), 0xdead_beef);
        assert_eq!(committed.read(4094, 4), 0x0102_0304);
        assert_eq!(committed.read(9998, 2), 0xccdd);
        // A deferred atomic's update, within a page and across the boundary.
        committed.update(8, 4, |old| old + 1);
        committed.update(4094, 4, |old| old ^ 0xff00_0000);
        assert_eq!(committed.read(8, 4), 0xdead_bef0);
        assert_eq!(committed.read(4094, 4), 0xfe02_0304);
        committed.update(8, 4, |old| old - 1);
        committed.update(4094, 4, |old| old ^ 0xff00_0000);
        assert_eq!(snapshot.clone().into_bytes(), bytes);
        let mut want = bytes.clone();
        want[8..12].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        want[4094..4098].copy_from_slice(&0x0102_0304u32.to_le_bytes());
        want[9998..10_000].copy_from_slice(&[0xdd, 0xcc]);
        assert_eq!(committed.into_bytes(), want);
    }
}
