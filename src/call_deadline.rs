//! The deadline of the blocking call a thread is running: an async step
//! that waits a bounded time for a store call (see
//! `chain::approvals::offload`) says here when it will stop waiting, so the
//! store sends nothing it could not finish by then (see `pg`).

use std::cell::Cell;
use std::time::Instant;

thread_local! {
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Runs `work` on this thread with `deadline` as its call's deadline.
pub(crate) fn within<T>(deadline: Instant, work: impl FnOnce() -> T) -> T {
    struct Restore(Option<Instant>);
    impl Drop for Restore {
        fn drop(&mut self) {
            DEADLINE.with(|d| d.set(self.0));
        }
    }
    let _restore = Restore(DEADLINE.with(|d| d.replace(Some(deadline))));
    work()
}

/// The deadline of the call this thread is running, if one was given.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn current() -> Option<Instant> {
    DEADLINE.with(Cell::get)
}
