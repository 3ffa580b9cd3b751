//! One deadline for all the desktop work of one call.
//!
//! Each accessibility operation has its own bound (`atspi::DEADLINE`), but a
//! call is many operations: an action's revalidation walks the tree, its
//! preparation walks it again, a form is filled field by field and read
//! back. Bounding only each operation lets one call of a slow application
//! run for minutes. The server sets the call's deadline on the thread that
//! does the call's desktop work ([`within`]); every bounded operation on
//! that thread waits at most until then ([`bound`]), and one that would
//! start past it fails at once as timed out.
//!
//! A thread-local is the carrier because the desktops' methods are the
//! engine's one seam ([`crate::DesktopBackend`]): a deadline argument on
//! each of them would reach every desktop, the simulated one too, for the
//! sake of the one layer that waits.

use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    static CALL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Puts the deadline back as it was when the work ends, even by a panic.
struct Restore(Option<Instant>);

impl Drop for Restore {
    fn drop(&mut self) {
        CALL.with(|call| call.set(self.0));
    }
}

/// Runs `work` with `deadline` as this thread's call deadline (an earlier
/// one already set stays).
pub fn within<T>(deadline: Instant, work: impl FnOnce() -> T) -> T {
    let before = CALL.with(Cell::get);
    let _restore = Restore(before);
    let deadline = before.map_or(deadline, |earlier| earlier.min(deadline));
    CALL.with(|call| call.set(Some(deadline)));
    work()
}

/// How long one operation may wait: `per_operation`, or less when the
/// call's deadline comes sooner (zero once it has passed).
pub fn bound(per_operation: Duration) -> Duration {
    match CALL.with(Cell::get) {
        Some(deadline) => per_operation.min(deadline.saturating_duration_since(Instant::now())),
        None => per_operation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_waits_no_longer_than_its_call_has_left() {
        let long = Duration::from_secs(10);
        assert_eq!(
            bound(long),
            long,
            "no call deadline: the operation's own bound"
        );
        let left = within(Instant::now() + Duration::from_secs(2), || bound(long));
        assert!(
            left <= Duration::from_secs(2),
            "bounded by the call: {left:?}"
        );
        let past = within(Instant::now(), || bound(long));
        assert_eq!(
            past,
            Duration::ZERO,
            "a call past its deadline leaves nothing"
        );
        assert_eq!(bound(long), long, "the deadline ends with the call");
    }

    #[test]
    fn an_inner_call_cannot_extend_the_outer_deadline() {
        let long = Duration::from_secs(10);
        let inner = within(Instant::now() + Duration::from_secs(1), || {
            within(Instant::now() + Duration::from_secs(60), || bound(long))
        });
        assert!(inner <= Duration::from_secs(1), "{inner:?}");
    }
}
