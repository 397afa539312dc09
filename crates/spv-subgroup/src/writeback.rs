//! The I/O threads of a tree: they make staged outputs durable and rename them into place while
//! the CPU workers go on lowering.
//!
//! A worker writes an output's bytes into its temporary file ([`crate::output::stage_output`]) and
//! submits it here; one of a few I/O threads then `fsync`s it and renames it over the output
//! ([`Staged::commit`]), and the [`Ticket`] says how that went.
//! A blocking `fsync` costs a worker no CPU but holds its core's share of the work: measured on
//! the 2,000-file benchmark tree, one `fsync` per file on the workers was about a quarter of the
//! wall time (docs/PERFORMANCE.md).
//! Several `fsync`s under way at once also let the file system commit them together.
//!
//! Once every output is renamed, [`Writeback::finish`] `fsync`s each directory that received one,
//! so the names too are on disk when the run reports success (docs/cli.md, "Durability").
//! The submission queue is bounded, so a slow disk holds the workers back instead of piling up
//! open temporary files.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use crate::output::{sync_dir, Staged};

/// How many I/O threads commit outputs (measured on the benchmark tree: docs/PERFORMANCE.md).
const THREADS: usize = 4;

/// How many staged outputs may wait for an I/O thread before a worker waits to submit one.
const QUEUE: usize = 64;

/// One staged output and where to say how its commit went.
type Work = (Staged, SyncSender<anyhow::Result<()>>);

/// The I/O threads and the directories they renamed outputs into.
pub struct Writeback {
    tx: Option<SyncSender<Work>>,
    threads: Vec<JoinHandle<()>>,
    dirs: Arc<Mutex<BTreeSet<PathBuf>>>,
}

/// How the commit of one submitted output went, once it is done.
pub struct Ticket(Receiver<anyhow::Result<()>>);

impl Ticket {
    /// Waits until the output is durable and renamed (or failed and removed).
    pub fn wait(self) -> anyhow::Result<()> {
        self.0.recv().unwrap_or_else(|_| {
            // An I/O thread ends without answering only if it panicked; the staged file was
            // dropped (removed) with it.
            Err(anyhow::anyhow!(
                "an output was lost: its I/O thread stopped (internal error)"
            ))
        })
    }
}

impl Writeback {
    /// Starts the I/O threads.
    pub fn start() -> Writeback {
        let (tx, rx) = sync_channel::<Work>(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        let dirs = Arc::new(Mutex::new(BTreeSet::new()));
        let threads = (0..THREADS)
            .map(|_| {
                let rx = Arc::clone(&rx);
                let dirs = Arc::clone(&dirs);
                std::thread::spawn(move || loop {
                    // The lock is held only while taking the next item, not while committing it.
                    let next = rx.lock().unwrap_or_else(PoisonError::into_inner).recv();
                    let Ok((staged, reply)) = next else { break };
                    let dir = staged.dir().to_owned();
                    let result = staged.commit();
                    if result.is_ok() {
                        dirs.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(dir);
                    }
                    // The ticket may have been dropped (the run stopped); the commit stands.
                    let _ = reply.send(result);
                })
            })
            .collect();
        Writeback {
            tx: Some(tx),
            threads,
            dirs,
        }
    }

    /// Queues `staged` for an I/O thread (waiting while the queue is full).
    pub fn submit(&self, staged: Staged) -> Ticket {
        let (reply, ticket) = sync_channel(1);
        if let Some(tx) = &self.tx {
            // Sending fails only when every I/O thread is gone; the ticket then reports it,
            // and the staged file, dropped with the message, is removed.
            let _ = tx.send((staged, reply));
        }
        Ticket(ticket)
    }

    /// Waits for every submitted output, then `fsync`s each directory an output was renamed
    /// into. Returns one error per directory that could not be made durable.
    pub fn finish(mut self) -> Vec<anyhow::Error> {
        self.tx = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        let dirs = std::mem::take(&mut *self.dirs.lock().unwrap_or_else(PoisonError::into_inner));
        dirs.iter().filter_map(|d| sync_dir(d).err()).collect()
    }
}

impl Drop for Writeback {
    /// Closes the queue and lets the I/O threads finish what they hold (also on an early return).
    fn drop(&mut self) {
        self.tx = None;
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}
