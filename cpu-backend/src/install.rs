//! [`Backend::install`](adjoint_backend::Backend::install) for the CPU: a training step run
//! on a worker of rayon's pool, with the other workers kept awake for its duration.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

thread_local! {
    /// Whether this thread is running the `f` of an [`install`].
    static INSTALLING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` on a worker of rayon's global pool while every other worker waits for work by
/// polling (`rayon::yield_now`) instead of sleeping, until `f` returns or panics.
///
/// A step is a chain of short parallel ops (the MNIST MLP's products, large elementwise ops
/// and update, in about 4 ms). Between two of them a sleeping worker has to be woken by a
/// futex, a system call on each side; a polling one takes its share of the next op as soon
/// as it is pushed (the idle and system time saved: `docs/perf-log.md`, 16th session). This is
/// OpenMP's spin-wait, which PyTorch's ops get from their runtime, confined to the step:
/// outside `install` the workers sleep as before. Called from a worker of the pool (nested),
/// it runs `f` inline. Steps installed from several threads at once share the workers, and
/// one may wait for another to end, as any rayon work nested in a wait.
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    let done = AtomicBool::new(false);
    rayon::scope(|scope| {
        for _ in 1..rayon::current_num_threads() {
            scope.spawn(|_| poll_until(&done));
        }
        let _running = Running::start(&done);
        f()
    })
}

/// Marks the current worker as running an installed `f` until dropped; the drop (on return
/// or panic) also sets `done`, so that the pollers stop and the scope can end.
struct Running<'a> {
    done: &'a AtomicBool,
    /// The mark before: `true` when this worker took this `install` while it waited inside
    /// another thread's installed `f`, which goes on running after this one ends.
    outer: bool,
}

impl<'a> Running<'a> {
    fn start(done: &'a AtomicBool) -> Self {
        let outer = INSTALLING.replace(true);
        Running { done, outer }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        INSTALLING.set(self.outer);
        self.done.store(true, Ordering::Release);
    }
}

/// Runs the pool's pending jobs, one at a time, until `done` is set. A poller taken by a
/// worker that is running an installed `f` (its own, popped while `f` waits for a job, or
/// another thread's) returns at once: polling there would hold that `f` up until `done`.
fn poll_until(done: &AtomicBool) {
    if INSTALLING.get() {
        return;
    }
    let mut idle = 0u32;
    while !done.load(Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            idle = 0;
        } else {
            idle = idle.wrapping_add(1);
            // On a machine with fewer free cores than workers, let the OS run something
            // else now and then (a `sched_yield` that returns at once when nothing waits).
            if idle.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Backend, Cpu};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    #[test]
    fn returns_the_value_of_f_from_a_worker_and_nests_inline() {
        let (outer, inner) = Cpu::install(|| {
            let outer = rayon::current_thread_index();
            (outer, Cpu::install(rayon::current_thread_index))
        });
        assert!(outer.is_some(), "f did not run on a worker");
        assert_eq!(outer, inner, "a nested install moved to another worker");
    }

    /// The other half of a `join` inside `f` runs on another worker while the first half
    /// waits for it (on one worker, the first half would wait forever: it gives up after
    /// ten seconds and the test fails).
    #[test]
    fn other_workers_take_work_while_f_runs() {
        if rayon::current_num_threads() < 2 {
            eprintln!("skipped: the pool has one thread");
            return;
        }
        let seen = AtomicBool::new(false);
        let (first, second) = Cpu::install(|| {
            rayon::join(
                || {
                    let start = Instant::now();
                    while !seen.load(Ordering::Acquire) {
                        assert!(start.elapsed() < Duration::from_secs(10), "no worker came");
                        std::hint::spin_loop();
                    }
                    rayon::current_thread_index()
                },
                || {
                    seen.store(true, Ordering::Release);
                    rayon::current_thread_index()
                },
            )
        });
        assert_ne!(first, second);
    }

    /// A panic in `f` reaches the caller (instead of leaving the pollers running and the
    /// call hung), and the pool runs the next step.
    #[test]
    fn a_panic_in_f_reaches_the_caller_and_the_pool_goes_on() {
        let caught = std::panic::catch_unwind(|| Cpu::install(|| panic!("step failed")));
        let message = caught.expect_err("the panic was lost");
        assert_eq!(message.downcast_ref::<&str>(), Some(&"step failed"));
        assert_eq!(Cpu::install(|| 7), 7);
    }

    /// A worker that takes another thread's `install` while it waits inside its own
    /// installed `f` is still marked as running that `f` after the inner one ends (unmarked,
    /// it would poll for the outer `install` beneath that `install`'s own `f`, forever).
    #[test]
    fn an_install_ending_inside_another_keeps_the_outer_mark() {
        let (outer_done, inner_done) = (AtomicBool::new(false), AtomicBool::new(false));
        let outer = super::Running::start(&outer_done);
        drop(super::Running::start(&inner_done));
        assert!(inner_done.load(Ordering::Acquire));
        assert!(super::INSTALLING.get(), "the outer f lost its mark");
        drop(outer);
        assert!(!super::INSTALLING.get());
        assert!(outer_done.load(Ordering::Acquire));
    }

    /// Steps installed from several threads at once all finish (each one's pollers step
    /// aside on a worker that runs another's step). A hang fails the test after a minute
    /// instead of stalling the run.
    #[test]
    fn steps_installed_from_several_threads_at_once_all_finish() {
        let (sender, sums) = std::sync::mpsc::channel();
        for t in 0..4u64 {
            let sender = sender.clone();
            std::thread::spawn(move || {
                let sum: u64 = (0..50)
                    .map(|i| Cpu::install(|| rayon::join(|| t, || i).1 + t))
                    .sum();
                sender
                    .send((t, sum))
                    .expect("the test waits for every thread");
            });
        }
        drop(sender);
        let mut sums: Vec<(u64, u64)> = (0..4)
            .map(|_| {
                sums.recv_timeout(Duration::from_secs(60))
                    .expect("a thread installing steps hung or panicked")
            })
            .collect();
        sums.sort_unstable();
        assert_eq!(
            sums,
            (0..4u64).map(|t| (t, 1225 + 50 * t)).collect::<Vec<_>>()
        );
    }
}
