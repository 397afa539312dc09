//! Work on all cores with results handed on in input order: what `validate` and `lower` over
//! many files share.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `work` on every item on all cores and hands the results to `emit` in the order of
/// `items`, each as soon as all earlier ones are done, so the output is the same as a serial
/// run's. Workers take the next item from a shared counter, so one large input does not hold up a
/// fixed share of the rest; only results that finished ahead of their turn wait in memory.
/// An error from `emit` stops the run: workers take no new item and the error is returned.
pub fn for_each_ordered<T: Sync, R: Send>(
    items: &[T],
    work: impl Fn(&T) -> R + Sync,
    mut emit: impl FnMut(&T, R) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        for item in items {
            emit(item, work(item))?;
        }
        return Ok(());
    }
    let next = AtomicUsize::new(0);
    let work = &work;
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, R)>();
        for _ in 0..threads {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                // The receiver is gone only when `emit` failed; stop taking work then.
                if tx.send((i, work(item))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut waiting = BTreeMap::new();
        let mut turn = 0;
        for (i, result) in rx {
            waiting.insert(i, result);
            while let Some(result) = waiting.remove(&turn) {
                if let Err(e) = emit(&items[turn], result) {
                    // Make the workers stop at their next item.
                    next.store(items.len(), Ordering::Relaxed);
                    return Err(e);
                }
                turn += 1;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_input_order_whatever_finishes_first() {
        let items: Vec<u64> = (0..64).collect();
        let mut seen = Vec::new();
        for_each_ordered(
            &items,
            |&i| {
                // Early items take longest, so later ones finish first on several cores.
                std::thread::sleep(std::time::Duration::from_micros((64 - i) * 50));
                i * 2
            },
            |&i, r| {
                seen.push((i, r));
                Ok(())
            },
        )
        .unwrap();
        let expected: Vec<(u64, u64)> = items.iter().map(|&i| (i, i * 2)).collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn an_error_from_emit_stops_the_run() {
        let items: Vec<u32> = (0..1000).collect();
        let mut emitted = 0;
        let r = for_each_ordered(
            &items,
            |&i| i,
            |&i, _| {
                emitted += 1;
                if i == 3 {
                    anyhow::bail!("stop");
                }
                Ok(())
            },
        );
        assert!(r.is_err());
        assert_eq!(emitted, 4);
    }
}
