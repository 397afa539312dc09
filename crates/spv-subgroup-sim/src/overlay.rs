//! A workgroup's private view of the shared memory objects (buffers and push constants) while
//! workgroups run in parallel (`parallel.rs` schedules and commits them).
//!
//! The workgroup reads the shared objects as they were committed when it started (`base`, a
//! snapshot: [`Pages`] shared with the committed state), sees its own writes (a shadow copy of
//! each object with a bit per byte it wrote), and records each word it read from `base`. At its
//! end [`Overlay::finish`] hands over what it wrote, the atomic deltas and the words it read; the
//! commit applies them in workgroup order, and a workgroup that read a word a workgroup committed
//! after its snapshot wrote is run again, so the result is always that of running the workgroups
//! one after another.
//!
//! An atomic operation that commutes (add, subtract, increment, decrement, and, or, xor, min,
//! max) and whose result no instruction reads is kept as a delta and applied at commit without
//! counting as a read: a histogram's shared counters do not serialise its workgroups. A plain
//! access to a word with a pending delta first turns the delta into a read and a write.
//!
//! Memory per worker: the shadows (pages only where written: the zeroed allocation is lazy), two
//! bits per word and one per byte, an index per word of the objects with deferred atomics (also
//! zeroed lazily), and the lists of what this workgroup touched.

use std::sync::Arc;

use crate::num::{read_le, write_le};

/// Bytes per word, the unit of read sets and conflicts.
const WORD: usize = 4;

/// How a deferred atomic changes its word; a run of the same kind folds into one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeltaKind {
    /// Wrapping addition (add, subtract, increment, decrement).
    Add,
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
    /// Signed minimum.
    SMin,
    /// Signed maximum.
    SMax,
    /// Unsigned minimum.
    UMin,
    /// Unsigned maximum.
    UMax,
}

impl DeltaKind {
    /// The kind of a commuting atomic opcode and its operand as this kind applies it (`None` for
    /// the opcodes that do not commute: load, store, exchange, compare-exchange).
    pub fn of(op: spirv::Op, v: u64, width: u32) -> Option<(DeltaKind, u64)> {
        use spirv::Op as O;
        let m = crate::num::mask(width);
        Some(match op {
            O::AtomicIAdd => (DeltaKind::Add, v & m),
            O::AtomicISub => (DeltaKind::Add, 0u64.wrapping_sub(v) & m),
            O::AtomicIIncrement => (DeltaKind::Add, 1),
            O::AtomicIDecrement => (DeltaKind::Add, m),
            O::AtomicAnd => (DeltaKind::And, v & m),
            O::AtomicOr => (DeltaKind::Or, v & m),
            O::AtomicXor => (DeltaKind::Xor, v & m),
            O::AtomicSMin => (DeltaKind::SMin, v & m),
            O::AtomicSMax => (DeltaKind::SMax, v & m),
            O::AtomicUMin => (DeltaKind::UMin, v & m),
            O::AtomicUMax => (DeltaKind::UMax, v & m),
            _ => return None,
        })
    }

    /// `old` changed by operand `v` (also how two operands of one kind fold into one).
    pub fn apply(self, width: u32, old: u64, v: u64) -> u64 {
        let (a, b) = (crate::num::sext(width, old), crate::num::sext(width, v));
        match self {
            DeltaKind::Add => old.wrapping_add(v) & crate::num::mask(width),
            DeltaKind::And => old & v,
            DeltaKind::Or => old | v,
            DeltaKind::Xor => old ^ v,
            DeltaKind::SMin => {
                if b < a {
                    v
                } else {
                    old
                }
            }
            DeltaKind::SMax => {
                if b > a {
                    v
                } else {
                    old
                }
            }
            DeltaKind::UMin => old.min(v),
            DeltaKind::UMax => old.max(v),
        }
    }
}

/// Smallest page of [`Pages`]: 4 KiB.
const MIN_PAGE_SHIFT: u32 = 12;

/// A shared object's bytes in pages, each behind an `Arc`: the committed state and the snapshots
/// that workers run against share every page neither changed since the snapshot was taken. A
/// commit that writes a page a snapshot still holds copies that page alone (`Arc::make_mut`), so
/// a snapshot costs the page list, not the buffers.
#[derive(Clone, Debug, Default)]
pub struct Pages {
    len: usize,
    shift: u32,
    pages: Vec<Arc<Vec<u8>>>,
    /// The module never writes this object (`crate::readonly`): one page, read as one slice,
    /// and no read marks (no workgroup can write what another read).
    frozen: bool,
}

impl Pages {
    /// `bytes` in pages.
    pub fn new(bytes: &[u8]) -> Self {
        let len = bytes.len();
        // Pages of about the square root of 64 times the length (at least 4 KiB): a snapshot
        // costs a reference count per page, a commit that writes a page a snapshot holds copies
        // it, and this keeps both small (256 KiB: 32 pages of 8 KiB; 64 MiB: 512 of 128 KiB;
        // 1 GiB: 2048 of 512 KiB).
        let bits = usize::BITS - len.leading_zeros();
        let shift = MIN_PAGE_SHIFT.max((bits + 6).div_ceil(2));
        let pages = bytes
            .chunks(1 << shift)
            .map(|c| Arc::new(c.to_vec()))
            .collect();
        Pages {
            len,
            shift,
            pages,
            frozen: false,
        }
    }

    /// `bytes` of an object the module never writes: one page, the bytes themselves (commits
    /// never copy it).
    pub fn frozen(bytes: Vec<u8>) -> Self {
        let len = bytes.len();
        let shift = (usize::BITS - len.leading_zeros()).max(MIN_PAGE_SHIFT);
        Pages {
            len,
            shift,
            pages: vec![Arc::new(bytes)],
            frozen: true,
        }
    }

    /// The bytes of a frozen object ([`Pages::frozen`]) in one slice.
    #[inline]
    pub fn frozen_bytes(&self) -> Option<&[u8]> {
        match self.pages.as_slice() {
            [page] if self.frozen => Some(page),
            [] if self.frozen => Some(&[]),
            _ => None,
        }
    }

    /// The object's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Byte `k` (0 out of bounds).
    fn byte(&self, k: usize) -> u8 {
        let page = self.pages.get(k >> self.shift);
        page.and_then(|p| p.get(k & ((1 << self.shift) - 1)))
            .copied()
            .unwrap_or(0)
    }

    /// The little-endian value of bytes `a..a + n` (n at most 8; bytes out of bounds read 0).
    #[inline]
    pub fn read(&self, a: usize, n: usize) -> u64 {
        let (p, o) = (a >> self.shift, a & ((1 << self.shift) - 1));
        match self.pages.get(p) {
            Some(page) if o + n <= page.len() => read_le(&page[o..o + n]),
            // Across a page boundary or out of bounds.
            _ => (0..n).fold(0, |acc, i| acc | u64::from(self.byte(a + i)) << (8 * i)),
        }
    }

    /// Writes the low `n` bytes of `v` at bytes `a..a + n` (those out of bounds are dropped),
    /// copying a page a snapshot still holds.
    pub fn write(&mut self, a: usize, n: usize, v: u64) {
        debug_assert!(!self.frozen, "a write to an object the module never writes");
        let (p, o) = (a >> self.shift, a & ((1 << self.shift) - 1));
        if let Some(page) = self.pages.get_mut(p) {
            if o + n <= page.len() {
                write_le(&mut Arc::make_mut(page)[o..o + n], v);
                return;
            }
        }
        for i in 0..n {
            let k = a + i;
            let at = k & ((1 << self.shift) - 1);
            if let Some(byte) = self
                .pages
                .get_mut(k >> self.shift)
                .filter(|page| at < page.len())
                .map(|page| &mut Arc::make_mut(page)[at])
            {
                *byte = (v >> (8 * i)) as u8;
            }
        }
    }

    /// Replaces the `n` bytes at `a` (in bounds, n at most 8) by `f` of their value, one page
    /// lookup where they lie in one page (a commit's deferred atomics).
    pub fn update(&mut self, a: usize, n: usize, f: impl FnOnce(u64) -> u64) {
        debug_assert!(!self.frozen, "a write to an object the module never writes");
        let (p, o) = (a >> self.shift, a & ((1 << self.shift) - 1));
        if let Some(page) = self.pages.get_mut(p) {
            if o + n <= page.len() {
                let bytes = &mut Arc::make_mut(page)[o..o + n];
                write_le(bytes, f(read_le(bytes)));
                return;
            }
        }
        let old = self.read(a, n);
        self.write(a, n, f(old));
    }

    /// The bytes, in one piece.
    pub fn into_bytes(self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for page in self.pages {
            out.extend_from_slice(&page);
        }
        out
    }
}

/// A deferred atomic: `kind` with `operand` on the `width`-bit word at byte `off` of `obj`.
#[derive(Clone, Copy, Debug)]
pub struct Delta {
    /// The shared object.
    pub obj: u32,
    /// Byte offset (a multiple of 4).
    pub off: u32,
    /// 32 or 64.
    pub width: u32,
    /// The operation.
    pub kind: DeltaKind,
    /// The folded operand.
    pub operand: u64,
    /// False once a plain access turned it into a read and a write (the word is then this
    /// workgroup's own: no delta is made there again, so the list stays within one entry per
    /// word).
    live: bool,
}

/// What a finished workgroup did to the shared objects.
#[derive(Debug, Default)]
pub struct Effects {
    /// (object, byte offset, length, value): the final bytes of each range it wrote.
    pub writes: Vec<(u32, u32, u32, u64)>,
    /// Its deferred atomics, in the order they were first made.
    pub deltas: Vec<Delta>,
    /// (object, chunk of 64 words, bits): the words it read from its snapshot.
    pub reads: Vec<(u32, u32, u64)>,
}

/// One shared object as this workgroup sees it.
#[derive(Debug, Default)]
struct ObjView {
    /// This workgroup's bytes where `dirty` says so.
    shadow: Vec<u8>,
    /// A bit per byte: written by this workgroup.
    dirty: Vec<u64>,
    /// Whether any bit of `dirty` is set (reads of an object this workgroup never wrote skip
    /// the bits).
    any_dirty: bool,
    /// A bit per word: read from the base.
    read: Vec<u64>,
    /// A bit per word: a deferred atomic waits on it.
    pend: Vec<u64>,
    /// Per word: 1 + the index in `Overlay::deltas` of the delta that starts there (0: none);
    /// allocated on the object's first deferral (zeroed lazily, like the shadow).
    delta: Vec<u32>,
}

/// The read bits of one shared object, handed out by [`Overlay::clean`].
pub(crate) struct ReadMarks<'a> {
    obj: u32,
    read: &'a mut [u64],
    chunks: &'a mut Vec<(u32, u32)>,
}

impl ReadMarks<'_> {
    /// Marks the words bytes `a..a + n` touch as read from the base (as [`Overlay::read`]
    /// does).
    #[inline]
    pub(crate) fn mark(&mut self, a: usize, n: usize) {
        for w in words(a, a + n) {
            if let Some(chunk) = self.read.get_mut(w / 64) {
                if *chunk == 0 {
                    self.chunks.push((self.obj, (w / 64) as u32));
                }
                *chunk |= 1 << (w % 64);
            }
        }
    }
}

/// A worker's view of the shared objects for the workgroup it runs.
#[derive(Debug, Default)]
pub struct Overlay {
    /// The shared objects' bytes as committed when the workgroup started (a snapshot); `None`
    /// while the machine runs nothing.
    pub base: Option<Arc<Vec<Pages>>>,
    objs: Vec<ObjView>,
    /// (object, byte offset, length) of each write that made a byte dirty.
    written: Vec<(u32, u32, u32)>,
    /// (object, chunk) of each read chunk that became non-zero.
    read_chunks: Vec<(u32, u32)>,
    deltas: Vec<Delta>,
    /// Live deltas.
    pending: usize,
}

fn bit(v: &[u64], k: usize) -> bool {
    v.get(k / 64).is_some_and(|w| w >> (k % 64) & 1 != 0)
}

/// Whether any of bits `k..k + n` is set (n below 64; one word's shift where they lie in one).
fn any_bit(v: &[u64], k: usize, n: usize) -> bool {
    let (w, b) = (k / 64, k % 64);
    if b + n <= 64 {
        return v.get(w).is_some_and(|x| (x >> b) & ((1 << n) - 1) != 0);
    }
    (k..k + n).any(|i| bit(v, i))
}

fn set_bit(v: &mut [u64], k: usize) -> bool {
    match v.get_mut(k / 64) {
        Some(w) if *w >> (k % 64) & 1 == 0 => {
            *w |= 1 << (k % 64);
            true
        }
        _ => false,
    }
}

fn clear_bit(v: &mut [u64], k: usize) {
    if let Some(w) = v.get_mut(k / 64) {
        *w &= !(1 << (k % 64));
    }
}

/// The view of `obj` in `objs`, sized to `len` on first use (the zeroed shadow costs pages only
/// where written).
fn view(objs: &mut Vec<ObjView>, obj: usize, len: usize) -> &mut ObjView {
    if objs.len() <= obj {
        objs.resize_with(obj + 1, ObjView::default);
    }
    let v = &mut objs[obj];
    if v.shadow.len() != len {
        let wordbits = len.div_ceil(WORD).div_ceil(64);
        *v = ObjView {
            shadow: vec![0; len],
            dirty: vec![0; len.div_ceil(64)],
            any_dirty: false,
            read: vec![0; wordbits],
            pend: vec![0; wordbits],
            delta: Vec::new(),
        };
    }
    v
}

/// The words bytes `a..b` touch.
fn words(a: usize, b: usize) -> std::ops::Range<usize> {
    a / WORD..b.div_ceil(WORD)
}

impl Overlay {
    /// The length of shared object `obj`.
    pub fn len(&self, obj: usize) -> usize {
        self.base
            .as_ref()
            .and_then(|b| b.get(obj))
            .map_or(0, Pages::len)
    }

    /// The bytes of shared object `obj` when the module never writes it (`Pages::frozen`):
    /// every workgroup reads them as they are, with no read marks.
    #[inline]
    pub(crate) fn frozen(&self, obj: usize) -> Option<&[u8]> {
        self.base.as_deref()?.get(obj)?.frozen_bytes()
    }

    /// Reads bytes `a..a + n` (in bounds) of `obj`: this workgroup's writes over the base.
    pub(crate) fn read(&mut self, obj: usize, a: usize, n: usize) -> u64 {
        if let Some(bytes) = self.frozen(obj) {
            return bytes.get(a..a + n).map_or(0, read_le);
        }
        if self.pending > 0 {
            self.settle(obj, a, a + n);
        }
        // The common case first: an object this workgroup has not written (an input buffer),
        // its view already sized: mark the words read and read the snapshot.
        if let (Some(base), Some(v)) = (
            self.base.as_deref().and_then(|b| b.get(obj)),
            self.objs.get_mut(obj),
        ) {
            if !v.any_dirty && v.shadow.len() == base.len() {
                for w in words(a, a + n) {
                    if let Some(chunk) = v.read.get_mut(w / 64) {
                        if *chunk == 0 {
                            self.read_chunks.push((obj as u32, (w / 64) as u32));
                        }
                        *chunk |= 1 << (w % 64);
                    }
                }
                return base.read(a, n);
            }
        }
        let len = self.len(obj);
        let v = view(&mut self.objs, obj, len);
        let dirty = if v.any_dirty {
            (a..a + n).filter(|&k| bit(&v.dirty, k)).count()
        } else {
            0
        };
        if dirty == n {
            return read_le(&v.shadow[a..a + n]);
        }
        for w in words(a, a + n) {
            if let Some(chunk) = v.read.get_mut(w / 64) {
                if *chunk == 0 {
                    self.read_chunks.push((obj as u32, (w / 64) as u32));
                }
                *chunk |= 1 << (w % 64);
            }
        }
        let base = self.base.as_ref().and_then(|b| b.get(obj));
        match base {
            Some(base) if dirty == 0 => base.read(a, n),
            Some(base) => (a..a + n).enumerate().fold(0, |acc, (i, k)| {
                let byte = if bit(&v.dirty, k) {
                    v.shadow[k]
                } else {
                    base.byte(k)
                };
                acc | u64::from(byte) << (8 * i)
            }),
            None => 0,
        }
    }

    /// The bytes of `obj` where this workgroup reads exactly the batch's base (no deferred
    /// atomic waits and it wrote no byte of `obj`), with the marks of the words it reads: what
    /// [`Overlay::read`] does there, for a whole row of loads (`crate::memrow`). `None`
    /// elsewhere: the caller reads lane by lane.
    pub(crate) fn clean(&mut self, obj: usize) -> Option<(&Pages, ReadMarks<'_>)> {
        if self.pending > 0 {
            return None;
        }
        let len = self.len(obj);
        let v = view(&mut self.objs, obj, len);
        if v.any_dirty {
            return None;
        }
        let base = self.base.as_ref()?.get(obj)?;
        Some((
            base,
            ReadMarks {
                obj: obj as u32,
                read: &mut v.read,
                chunks: &mut self.read_chunks,
            },
        ))
    }

    /// Writes the low `n` bytes of `x` at bytes `a..a + n` (in bounds) of `obj`.
    pub(crate) fn write(&mut self, obj: usize, a: usize, n: usize, x: u64) {
        debug_assert!(self.frozen(obj).is_none(), "a write to a frozen object");
        if self.pending > 0 {
            self.settle(obj, a, a + n);
        }
        let len = self.len(obj);
        let v = view(&mut self.objs, obj, len);
        write_le(&mut v.shadow[a..a + n], x);
        let mut fresh = false;
        for k in a..a + n {
            fresh |= set_bit(&mut v.dirty, k);
        }
        if fresh {
            v.any_dirty = true;
            self.written.push((obj as u32, a as u32, n as u32));
        }
    }

    /// Turns the deltas waiting on bytes `a..b` of `obj` into a read of the base and a write.
    fn settle(&mut self, obj: usize, a: usize, b: usize) {
        for w in words(a, b) {
            let pends = self.objs.get(obj).is_some_and(|v| bit(&v.pend, w));
            if !pends {
                continue;
            }
            // The delta starts at this word or, 64 bits wide, at the one before.
            let Some(v) = self.objs.get(obj) else {
                continue;
            };
            let key = [w, w.wrapping_sub(1)].into_iter().find_map(|k| {
                let i = (*v.delta.get(k)? as usize).checked_sub(1)?;
                let d = self.deltas.get(i)?;
                (d.off as usize / WORD + d.width as usize / 32 > w).then_some((k, i))
            });
            let Some((k, i)) = key else {
                continue;
            };
            let d = self.deltas[i];
            self.deltas[i].live = false;
            self.pending -= 1;
            let (at, n) = (d.off as usize, d.width as usize / 8);
            if let Some(v) = self.objs.get_mut(obj) {
                if let Some(x) = v.delta.get_mut(k) {
                    *x = 0;
                }
                for x in words(at, at + n) {
                    clear_bit(&mut v.pend, x);
                }
            }
            let old = self.read(obj, at, n);
            self.write(obj, at, n, d.kind.apply(d.width, old, d.operand));
        }
    }

    /// Defers the atomic `kind` with `operand` on the `width`-bit word at byte `a` of `obj` (in
    /// bounds); false where it cannot (bytes this workgroup wrote, another kind waiting there):
    /// the caller then does the ordinary read and write.
    pub(crate) fn defer(
        &mut self,
        obj: usize,
        a: usize,
        width: u32,
        kind: DeltaKind,
        operand: u64,
    ) -> bool {
        let n = width as usize / 8;
        debug_assert!(self.frozen(obj).is_none(), "an atomic on a frozen object");
        if !a.is_multiple_of(WORD) {
            return false;
        }
        let first = a / WORD;
        let at = self.objs.get(obj).and_then(|v| v.delta.get(first));
        if let Some(i) = at.and_then(|&i| (i as usize).checked_sub(1)) {
            let d = &mut self.deltas[i];
            if d.kind != kind || d.width != width {
                return false;
            }
            d.operand = kind.apply(width, d.operand, operand);
            return true;
        }
        let len = self.len(obj);
        let v = view(&mut self.objs, obj, len);
        let ws = words(a, a + n);
        if any_bit(&v.dirty, a, n) || any_bit(&v.pend, ws.start, ws.len()) {
            return false;
        }
        if v.delta.is_empty() {
            v.delta = vec![0; len.div_ceil(WORD)];
        }
        let (Some(slot), Ok(index)) =
            (v.delta.get_mut(first), u32::try_from(self.deltas.len() + 1))
        else {
            return false;
        };
        *slot = index;
        for w in words(a, a + n) {
            set_bit(&mut v.pend, w);
        }
        self.deltas.push(Delta {
            obj: obj as u32,
            off: a as u32,
            width,
            kind,
            operand,
            live: true,
        });
        self.pending += 1;
        true
    }

    /// What this workgroup did, handed over; the view is clean for the next workgroup.
    pub fn finish(&mut self) -> Effects {
        let mut fx = Effects::default();
        for &(obj, a, n) in &self.written {
            if let Some(v) = self.objs.get(obj as usize) {
                let (a, n) = (a as usize, n as usize);
                fx.writes
                    .push((obj, a as u32, n as u32, read_le(&v.shadow[a..a + n])));
            }
        }
        for &(obj, a, n) in &self.written {
            if let Some(v) = self.objs.get_mut(obj as usize) {
                for k in a as usize..(a + n) as usize {
                    clear_bit(&mut v.dirty, k);
                }
                v.any_dirty = false;
            }
        }
        self.written.clear();
        for d in self.deltas.drain(..) {
            if let Some(v) = self.objs.get_mut(d.obj as usize) {
                let at = d.off as usize;
                if let Some(x) = v.delta.get_mut(at / WORD) {
                    *x = 0;
                }
                for w in words(at, at + d.width as usize / 8) {
                    clear_bit(&mut v.pend, w);
                }
            }
            if d.live {
                fx.deltas.push(d);
            }
        }
        self.pending = 0;
        for (obj, c) in self.read_chunks.drain(..) {
            if let Some(w) = self
                .objs
                .get_mut(obj as usize)
                .and_then(|v| v.read.get_mut(c as usize))
            {
                if *w != 0 {
                    fx.reads.push((obj, c, *w));
                }
                *w = 0;
            }
        }
        fx
    }
}
