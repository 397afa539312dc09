//! Register files kept between dispatches of one module.
//!
//! A subgroup's register file is a row of lanes per register: a few hundred KiB to a few MiB
//! for the conformance shaders (their lowered forms hold code for every subgroup size). A fresh
//! one per subgroup per dispatch is a zeroed allocation that the kernel maps and faults in page
//! by page; the machines of a dispatch instead take the files the module's earlier dispatches
//! gave back (`Machine::new`) and give theirs back when they are dropped.

use std::sync::Mutex;

/// Most register files kept (a dispatch's machines use one per subgroup of a workgroup).
const MAX_FILES: usize = 64;

/// Most bytes kept in all (larger files are freed rather than kept).
const MAX_BYTES: usize = 64 << 20;

/// The register files given back by a module's finished dispatches.
#[derive(Default)]
pub(crate) struct RegisterFiles {
    files: Mutex<Vec<Vec<u64>>>,
}

impl RegisterFiles {
    /// A register file given back earlier, if any (its contents are whatever its last user
    /// left: the caller zeroes what it needs).
    pub(crate) fn take(&self) -> Option<Vec<u64>> {
        self.files.lock().ok()?.pop()
    }

    /// Keeps `files` for later dispatches, as far as the bounds allow.
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

impl Clone for RegisterFiles {
    /// A clone starts with none (the files are a cache, not part of the module).
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for RegisterFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.files.lock().map_or(0, |k| k.len());
        write!(f, "RegisterFiles({n} kept)")
    }
}
