//! Memory objects: values loaded and stored leaf by leaf, objects allocated (a returned call's
//! reused), and the shared objects of a parallel run, reached through the overlay.

use crate::error::{Error, ErrorKind, Result};
use crate::num::{read_le, write_le};
use crate::types::{Scalar, TypeInfo};

use super::{Machine, Mem, MemName, Sg};

impl<'p> Machine<'p> {
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
