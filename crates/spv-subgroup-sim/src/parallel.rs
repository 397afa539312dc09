//! Workgroups on several threads with exactly the result of running them one after another.
//!
//! The workgroups run in batches. Each worker runs workgroups of the batch against the shared
//! objects as they were when the batch started, with its writes in a private overlay
//! (`overlay.rs`); then the batch is committed in workgroup order. A workgroup that read a word an
//! earlier workgroup of its batch wrote, failed, passed its batch's step budget (it may be
//! waiting for a word an earlier one writes) or would pass the step limit is run again on this
//! thread against the committed state, as the sequential run would have run it: so buffers,
//! errors, steps, undefined values and size reads are the same whatever the thread count.
//! Undefined values' bits are seeded per workgroup (`exec::workgroup_rng`), not per thread.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::{Error, ErrorKind, Result};
use crate::exec::{Machine, Setup, MAX_REPORTS};
use crate::num::{read_le, write_le};
use crate::overlay::Effects;
use crate::regpool::RegisterFiles;
use crate::translate::Program;
use crate::{Dispatch, Outcome, Undefined};

/// Workgroups per worker in the first batch: more amortise the threads' start and the commit,
/// fewer keep the overlays small and a conflict's re-runs few, and waste less where workgroups
/// are longer than the first step budget (each is stopped and run again). Later batches double
/// while batches are short and nothing runs again, and halve when many workgroups run again
/// (the batch size never changes a result).
const PER_WORKER: u64 = 1;
/// Most workgroups per worker in a batch.
const MAX_PER_WORKER: u64 = 1024;
/// A batch shorter than this grows the next one.
const SHORT_BATCH: std::time::Duration = std::time::Duration::from_millis(100);

/// Steps (per subgroup) a workgroup may take in a batch before it is given up and left to the
/// commit, at least: a workgroup that waits in a loop for a word an earlier one of its batch
/// writes (a decoupled look-back) would otherwise spin to the step limit, or forever without one.
const BATCH_STEPS: u64 = 1 << 20;
/// ... or this many times the most steps a committed workgroup took.
const BATCH_STEPS_FACTOR: u64 = 8;

/// How long a dispatch on every core (`Dispatch::threads` 0) runs its workgroups on the calling
/// thread before it starts the workers: starting and joining them costs tens of microseconds
/// (far more on a loaded machine), the whole of a small dispatch's run, so a dispatch that
/// ends within this never starts them. A thread count asked for always starts its workers.
const INLINE: std::time::Duration = std::time::Duration::from_millis(1);

/// Bytes of workgroups' effects and undefined reports a batch may hold before its workers stop
/// taking workgroups (the rest go to the next batch): the memory bound of a batch.
const BATCH_BYTES: usize = 64 << 20;

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

/// One workgroup's run in a batch.
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

/// A bit per word of each shared object: written by a committed workgroup of this batch.
#[derive(Default)]
struct Written {
    bits: Vec<Vec<u64>>,
    touched: Vec<(u32, u32)>,
}

impl Written {
    fn mark(&mut self, obj: u32, a: u32, n: u32) {
        if self.bits.len() <= obj as usize {
            self.bits.resize_with(obj as usize + 1, Vec::new);
        }
        let v = &mut self.bits[obj as usize];
        for w in a / 4..(a + n).div_ceil(4) {
            let c = (w / 64) as usize;
            if v.len() <= c {
                v.resize(c + 1, 0);
            }
            if v[c] == 0 {
                self.touched.push((obj, c as u32));
            }
            v[c] |= 1 << (w % 64);
        }
    }

    fn conflicts(&self, reads: &[(u32, u32, u64)]) -> bool {
        reads.iter().any(|&(obj, c, bits)| {
            self.bits
                .get(obj as usize)
                .and_then(|v| v.get(c as usize))
                .is_some_and(|w| w & bits != 0)
        })
    }

    fn clear(&mut self) {
        for (obj, c) in self.touched.drain(..) {
            if let Some(w) = self
                .bits
                .get_mut(obj as usize)
                .and_then(|v| v.get_mut(c as usize))
            {
                *w = 0;
            }
        }
    }
}

/// Applies a workgroup's writes and deltas to the committed bytes, marking the words in `written`.
fn apply(objs: &mut [Vec<u8>], fx: &Effects, written: &mut Written) {
    for &(obj, a, n, v) in &fx.writes {
        if let Some(b) = objs
            .get_mut(obj as usize)
            .and_then(|o| o.get_mut(a as usize..(a + n) as usize))
        {
            write_le(b, v);
        }
        written.mark(obj, a, n);
    }
    for d in &fx.deltas {
        let n = d.width / 8;
        if let Some(b) = objs
            .get_mut(d.obj as usize)
            .and_then(|o| o.get_mut(d.off as usize..(d.off + n) as usize))
        {
            let old = read_le(b);
            write_le(b, d.kind.apply(d.width, old, d.operand));
        }
        written.mark(d.obj, d.off, n);
    }
}

/// Runs workgroups `first..end` on the workers against `base`; each result by its index.
fn run_batch(
    machines: &mut [Machine<'_>],
    base: &Arc<Vec<Vec<u8>>>,
    s: &Setup,
    d: &Dispatch,
    (first, end): (u64, u64),
    before: Before,
    bound: usize,
) -> Result<Vec<Option<WgRun>>> {
    let next = AtomicU64::new(first);
    let failed = AtomicBool::new(false);
    let held = AtomicUsize::new(0);
    let runs = std::thread::scope(|scope| {
        let workers: Vec<_> = machines
            .iter_mut()
            .map(|m| {
                m.ov.base = Some(Arc::clone(base));
                let (next, failed, held) = (&next, &failed, &held);
                scope.spawn(move || {
                    let mut out = Vec::new();
                    // After a failure the rest of the batch is left to the commit, which stops
                    // at the failure; past the memory bound, to the next batch. Workgroups are
                    // taken in order, so those run are always a prefix of the batch.
                    while !failed.load(Ordering::Relaxed) && held.load(Ordering::Relaxed) < bound {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= end {
                            break;
                        }
                        let run = run_one(m, s, d, index, before);
                        if run.result.is_err() {
                            failed.store(true, Ordering::Relaxed);
                        }
                        held.fetch_add(run.bytes(), Ordering::Relaxed);
                        out.push((index, run));
                    }
                    m.ov.base = None;
                    out
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join()).collect::<Vec<_>>()
    });
    let mut slots: Vec<Option<WgRun>> = (first..end).map(|_| None).collect();
    for worker in runs {
        let worker = worker.map_err(|_| {
            Error::new(ErrorKind::Dispatch(
                "a worker thread of the dispatch panicked (a bug in the simulator)".into(),
            ))
        })?;
        for (index, run) in worker {
            if let Some(slot) = slots.get_mut((index - first) as usize) {
                *slot = Some(run);
            }
        }
    }
    Ok(slots)
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
    if threads <= 1 {
        return crate::exec::sequential(p, d, &s, defer, files);
    }
    let inline = if d.threads == 0 {
        INLINE
    } else {
        std::time::Duration::ZERO
    };
    in_batches(p, d, &s, defer, files, (threads, inline), BATCH_BYTES)
}

/// Runs the dispatch on `threads` workers (more than 1), a batch holding at most about `bound`
/// bytes of effects; the workgroups that start within `inline` of the dispatch's start run one
/// by one on this thread, against the committed state, exactly as a workgroup run again does.
fn in_batches(
    p: &Program,
    d: &Dispatch,
    s: &Setup,
    defer: &[bool],
    files: &RegisterFiles,
    (threads, inline): (usize, std::time::Duration),
    bound: usize,
) -> Result<Outcome> {
    let inline_until = std::time::Instant::now() + inline;
    let shared = s.shared(d);
    let mut machines: Vec<Machine<'_>> = (0..threads)
        .map(|_| {
            let mut m = Machine::new(p, d, defer, files);
            m.add_shared(shared.iter().map(|(n, _)| (*n, Vec::new())).collect(), true);
            m
        })
        .collect();
    let mut committed = Arc::new(shared.into_iter().map(|(_, b)| b).collect::<Vec<_>>());
    let (mut steps, mut lane_steps) = (0u64, 0u64);
    let (mut undefined, mut undefined_total) = (Vec::new(), 0u64);
    let mut counts: Option<Vec<Vec<u64>>> = None;
    let mut memory_objects = s.shared_count();
    let mut written = Written::default();
    let count = s.count();
    let mut per_worker = PER_WORKER;
    let mut most_steps = 0u64;
    let mut first = 0;
    while first < count {
        let started = std::time::Instant::now();
        let one_here = started < inline_until;
        let end = if one_here {
            first + 1
        } else {
            count.min(first + threads as u64 * per_worker)
        };
        let budget = BATCH_STEPS.max(most_steps.saturating_mul(BATCH_STEPS_FACTOR));
        let before = Before {
            steps,
            reports: undefined.len(),
            limit: d.step_limit.min(steps.saturating_add(budget)),
        };
        let mut runs = if one_here {
            // Against the committed state: no step budget (nothing earlier can still change).
            let m = &mut machines[0];
            m.ov.base = Some(Arc::clone(&committed));
            let before = Before {
                limit: d.step_limit,
                ..before
            };
            let r = run_one(m, s, d, first, before);
            m.ov.base = None;
            vec![Some(r)]
        } else {
            run_batch(&mut machines, &committed, s, d, (first, end), before, bound)?
        };
        let mut again = 0;
        let mut done = end;
        for (index, slot) in (first..end).zip(runs.iter_mut()) {
            let run = match slot.take() {
                // Not run: the batch reached its memory bound; the next batch starts here.
                None => {
                    done = index;
                    break;
                }
                Some(r)
                    if r.result.is_ok()
                        && steps.saturating_add(r.steps) <= d.step_limit
                        && !written.conflicts(&r.fx.reads) =>
                {
                    r
                }
                // Run again against the committed state, exactly as the sequential run would.
                _ => {
                    again += 1;
                    let m = &mut machines[0];
                    m.ov.base = Some(Arc::clone(&committed));
                    let before = Before {
                        steps,
                        reports: undefined.len(),
                        limit: d.step_limit,
                    };
                    let r = run_one(m, s, d, index, before);
                    m.ov.base = None;
                    r
                }
            };
            run.result?;
            apply(
                Arc::make_mut(&mut committed).as_mut_slice(),
                &run.fx,
                &mut written,
            );
            steps += run.steps;
            most_steps = most_steps.max(run.steps);
            lane_steps += run.lane_steps;
            undefined_total += run.undefined_total;
            let room = MAX_REPORTS.saturating_sub(undefined.len());
            undefined.extend(run.undefined.into_iter().take(room));
            memory_objects = memory_objects.max(run.high);
            if let Some(c) = run.counts {
                match counts.as_mut() {
                    None => counts = Some(c),
                    Some(total) => {
                        for (t, c) in total.iter_mut().zip(c) {
                            for (t, c) in t.iter_mut().zip(c) {
                                *t += c;
                            }
                        }
                    }
                }
            }
        }
        written.clear();
        if one_here {
            // Not a batch: the workers' batch size stays as it was.
        } else if again * 4 > done - first {
            per_worker = (per_worker / 2).max(1);
        } else if again == 0 && done == end && started.elapsed() < SHORT_BATCH {
            per_worker = (per_worker * 2).min(MAX_PER_WORKER);
        }
        first = done;
    }
    let objs = Arc::try_unwrap(committed).unwrap_or_else(|shared| (*shared).clone());
    let size_reads = match (&machines[0].trace, &counts) {
        (Some((marks, _)), Some(c)) => crate::exec::size_reads(p, marks, c),
        _ => Vec::new(),
    };
    Ok(Outcome {
        size_reads,
        buffers: s.outcome_buffers(d, objs),
        undefined,
        undefined_total,
        steps,
        lane_steps,
        memory_objects,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each invocation reads and writes its own word: no conflicts, so batches grow and meet
    /// the bound.
    const SHADER: &str = r#"#version 450
layout(local_size_x = 12) in;
layout(std430, binding = 0) buffer Out { uint words[]; };
void main() {
    uint g = gl_GlobalInvocationID.x;
    words[g] = words[g] * 3u + g;
}
"#;

    #[test]
    fn batches_cut_short_by_their_memory_bound_give_the_in_order_outcome() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.comp");
        std::fs::write(&path, SHADER).expect("write shader");
        let words = spv_subgroup_tests::tools::compile_glsl(&path, "vulkan1.1")
            .expect("glslangValidator compiles the shader");
        let module = crate::Module::new(&words).expect("translates");
        let d = Dispatch::default()
            .with_subgroup_size(4)
            .with_workgroups([30, 1, 1])
            .with_buffer((0, 0), vec![1u8; 31 * 12 * 4]);
        let want = module.run(&d.clone().with_threads(1)).expect("runs");
        let s = crate::exec::setup(&module.program, &d).expect("fits");
        // A bound of one byte: each worker runs one workgroup, and a batch meant for more is cut
        // short, the rest starting the next one.
        for threads in [2, 3] {
            let got = in_batches(
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
}
