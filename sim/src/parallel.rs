//! Running simulations side by side: each on a thread of its own, with
//! its own virtual clock (quiche's virtual clock is thread-local), so that
//! running them together changes nothing in their results.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::sync::PoisonError;

/// Runs `jobs` on up to `threads` threads; results in the order of `jobs`.
pub fn run_parallel<T: Send, R: Send>(
    jobs: Vec<T>,
    threads: usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let count = jobs.len();
    let queue: Vec<Mutex<Option<T>>> = jobs.into_iter().map(|j| Mutex::new(Some(j))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..count).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, count.max(1)) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = queue.get(index) else { break };
                let job = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                if let Some(job) = job {
                    let result = work(job);
                    *results[index]
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner) = Some(result);
                }
            });
        }
    });
    results
        .into_iter()
        .filter_map(|r| r.into_inner().unwrap_or_else(PoisonError::into_inner))
        .collect()
}
