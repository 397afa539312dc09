//! The temporary file of an atomic write, removed on drop and on SIGINT, SIGTERM and SIGHUP.
//!
//! `tempfile` removes its file when dropped, but a signal ends the process without running
//! destructors. So every temporary file of the run (one per output being written; a tree is
//! written by several threads at once) is also recorded here, and a thread waiting for those
//! signals (`signal-hook`'s iterator, installed on the first write) removes them and then lets the
//! signal take its default course, so the exit status still says which signal it was.
//!
//! A read-write lock orders that thread against creating, renaming and dropping the files: each
//! of those steps holds it shared, from before the file exists (or is renamed) until the list
//! says so, and the signal thread takes it exclusively (waiting for the steps under way, then
//! holding it until the process ends). So no file is created or renamed behind the list's back,
//! and a tree's threads create and rename their files at the same time: with one mutex around
//! creating a file (an inode allocated, most of a write's kernel time) they took turns.

use std::fs::{File, Permissions};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once, RwLock, RwLockReadGuard};

/// Held shared while a temporary file is created, renamed or removed; exclusively by the signal
/// thread.
static STEPS: RwLock<()> = RwLock::new(());

/// The temporary files of the writes in progress.
static CURRENT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A step on the temporary files (see the module doc).
fn step() -> RwLockReadGuard<'static, ()> {
    // A panic elsewhere while holding the lock leaves nothing inconsistent: it guards no data.
    STEPS.read().unwrap_or_else(|e| e.into_inner())
}

fn current() -> MutexGuard<'static, Vec<PathBuf>> {
    // A panic elsewhere while holding the lock leaves a path that is still right to remove.
    CURRENT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the signal thread once per process.
fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        // Without the handler a signal leaves the file behind, as before; the write still works.
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // Held until the process ends, so no write renames or creates a file meanwhile;
                // taking it waits for the steps under way, which then are on the list.
                let _steps = STEPS.write().unwrap_or_else(|e| e.into_inner());
                let cur = current();
                for path in cur.iter() {
                    let _ = std::fs::remove_file(path);
                }
                // Re-raise with the default action (the process ends by that signal); the exit
                // below only runs if the default action were to ignore it.
                let _ = signal_hook::low_level::emulate_default_handler(sig);
                std::process::exit(128 + sig);
            }
        });
    });
}

/// A temporary file next to an output, removed unless [`TempGuard::persist`] renames it.
#[derive(Debug)]
pub struct TempGuard {
    tmp: Option<tempfile::NamedTempFile>,
}

impl TempGuard {
    /// Creates `.spv-subgroup-XXXXXX.tmp` in `dir` (with `perms` before the umask, if given).
    pub fn create(dir: &Path, perms: Option<Permissions>) -> std::io::Result<TempGuard> {
        install();
        let _step = step();
        let mut builder = tempfile::Builder::new();
        builder.prefix(".spv-subgroup-").suffix(".tmp");
        if let Some(p) = perms {
            builder.permissions(p);
        }
        let tmp = builder.tempfile_in(dir)?;
        current().push(tmp.path().to_owned());
        Ok(TempGuard { tmp: Some(tmp) })
    }

    /// The open file to write.
    pub fn file(&self) -> &File {
        match &self.tmp {
            Some(t) => t.as_file(),
            None => unreachable!("the file is only taken by persist, which consumes the guard"),
        }
    }

    /// Renames the file to `path` (replacing what is there); on failure the file is removed.
    pub fn persist(mut self, path: &Path) -> std::io::Result<()> {
        let _step = step();
        match self.tmp.take() {
            Some(t) => {
                forget(&mut current(), t.path());
                t.persist(path).map(drop).map_err(|e| e.error)
            }
            None => Ok(()),
        }
    }
}

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(t) = self.tmp.take() {
            let step = step();
            forget(&mut current(), t.path());
            // Removed before the step ends, so the signal thread never finds it off the list
            // but still there.
            drop(t);
            drop(step);
        }
    }
}

/// Takes `path` off the list (the caller holds a step until the file is renamed or removed).
fn forget(cur: &mut Vec<PathBuf>, path: &Path) {
    if let Some(i) = cur.iter().position(|p| p == path) {
        cur.swap_remove(i);
    }
}
