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
//! The same thread also carries what an effect under way watches (its
//! lease's end, see [`Watch`]), so an effect of many writes stops before
//! the next one once a stop, a pause or a release has answered.
//!
//! A thread-local is the carrier because the desktops' methods are the
//! engine's one seam ([`crate::DesktopBackend`]): a deadline argument on
//! each of them would reach every desktop, the simulated one too, for the
//! sake of the one layer that waits.

use std::cell::Cell;
use std::time::{Duration, Instant};

thread_local! {
    static CALL: Cell<Option<Instant>> = const { Cell::new(None) };
    static WATCH: std::cell::RefCell<Option<Watch>> = const { std::cell::RefCell::new(None) };
}

/// What an effect under way watches: a count that moves when the lease it
/// spent ends (released, revoked, paused, stopped, the person's takeover),
/// and its value when the lease was spent.
#[derive(Clone, Debug)]
pub struct Watch {
    /// The count, shared with the server's leases.
    pub count: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Its value when the effect's lease was spent.
    pub seen: u64,
}

impl Watch {
    /// Whether the lease has ended since.
    pub fn ended(&self) -> bool {
        self.count.load(std::sync::atomic::Ordering::SeqCst) != self.seen
    }
}

/// Puts the watch back as it was when the work ends.
struct Unwatch(Option<Watch>);

impl Drop for Unwatch {
    fn drop(&mut self) {
        let before = self.0.take();
        WATCH.with(|watch| *watch.borrow_mut() = before);
    }
}

/// Runs `work` with `watch` as this thread's effect watch: an effect of
/// many writes (a form, field by field) asks [`ended`] before each.
pub fn watching<T>(watch: Watch, work: impl FnOnce() -> T) -> T {
    let before = WATCH.with(|w| w.borrow_mut().replace(watch));
    let _restore = Unwatch(before);
    work()
}

/// Whether the lease of the effect under way on this thread has ended
/// (false where no effect is watched).
pub fn ended() -> bool {
    WATCH.with(|w| w.borrow().as_ref().is_some_and(Watch::ended))
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
    fn an_effect_sees_its_lease_end_only_while_it_is_watched() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU64, Ordering};
        let count = Arc::new(AtomicU64::new(3));
        let watch = Watch {
            count: Arc::clone(&count),
            seen: 3,
        };
        watching(watch, || {
            assert!(!ended(), "nothing ended yet");
            count.fetch_add(1, Ordering::SeqCst);
            assert!(ended(), "the lease ended during the effect");
        });
        assert!(!ended(), "no effect is watched any more");
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
