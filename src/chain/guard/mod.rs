//! The action guard: what an action holds on the server, and how it is given back.
//!
//! From the moment the runtime accepts a reservation or grants a lease, the
//! action holds a server-side resource that other writers wait for. Every
//! terminal path gives both back through an explicit async
//! [`ActionGuard::release`] (the lease and the reservation at once), so the
//! result is known and reported.
//!
//! When a guard is dropped unreleased — a cancelled future, a panic, a stage
//! that was simply dropped — `Drop` cannot await. It does no I/O and cannot
//! panic: it hands each resource to the session's reaper task over an
//! unbounded channel. The reaper runs each release as its own task, bounded
//! by the session's release timeout, so one release that panics or hangs is
//! counted as failed and the reaper goes on.
//!
//! A stage that is never dropped (`mem::forget`) runs no `Drop` at all. So
//! the session also keeps a ledger of every resource its actions hold:
//! arming registers a resource, and whoever takes it out of the ledger — the
//! explicit release, the `Drop` hand-off, or `Session::shutdown` reclaiming
//! what a forgotten stage still holds — is the one that releases it. Each
//! resource therefore lands in exactly one counter.
//!
//! The server-side TTL remains the ground truth if the process dies.

mod held;
mod ledger;
mod reaper;
mod stats;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use crate::ComputerUseError;
use crate::contracts::{ControlLease, TargetReservation};
use crate::runtime::ComputerUseRuntime;

use super::task::TaskSpend;
pub(crate) use held::Held;
use held::{give_back, release_note, release_operation};
pub(crate) use ledger::LedgerId;
pub(crate) use reaper::{Reap, ReaperMessage, Releaser, spawn_reaper};
use stats::bump;
pub use stats::{ReleaseStats, ResourceStats};

/// One resource held by a guard: its ledger id and the resource.
struct Slot<T> {
    id: LedgerId,
    value: Arc<T>,
}

impl<T> Slot<T>
where
    Arc<T>: Into<Held>,
{
    fn held(&self) -> Held {
        Arc::clone(&self.value).into()
    }
}

/// What a guard needs of its session, and nothing more: the releaser (the
/// runtime, the ledger, the counters, the recorder) and the reaper's inbox.
/// A guard never sees the session's identity, scope or stages.
pub(crate) struct ReleaseHandle<R: ComputerUseRuntime> {
    pub(crate) releaser: Arc<Releaser<R>>,
    pub(crate) reaper: mpsc::UnboundedSender<ReaperMessage>,
}

/// A release in flight on the explicit path: its ledger entry is busy, so
/// `shutdown` cannot release it a second time; if the release future is
/// dropped or unwinds before the answer, `Drop` hands the resource to the
/// reaper.
struct InFlight<'a, R: ComputerUseRuntime> {
    handle: &'a ReleaseHandle<R>,
    id: Option<LedgerId>,
}

impl<R: ComputerUseRuntime> InFlight<'_, R> {
    /// The call answered: the resource leaves the ledger.
    fn finish(mut self) {
        if let Some(id) = self.id.take() {
            self.handle.releaser.ledger.take(id);
        }
    }
}

impl<R: ComputerUseRuntime> Drop for InFlight<'_, R> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Some(held) = self.handle.releaser.ledger.take(id)
        {
            queue(self.handle, held);
        }
    }
}

/// `call` bounded by `timeout`. A call that answers on its first poll (an
/// in-process runtime) never arms a timer.
async fn bounded<F: Future>(
    timeout: Duration,
    call: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    let mut call = std::pin::pin!(call);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(call.as_mut().poll(cx))).await;
    match first {
        std::task::Poll::Ready(output) => Ok(output),
        std::task::Poll::Pending => tokio::time::timeout(timeout, call).await,
    }
}

/// The outcome of giving back a lease and a reservation: both were
/// attempted; when both failed, the lease's failure comes first.
fn lease_first(
    lease: Result<(), ComputerUseError>,
    reservation: Result<(), ComputerUseError>,
) -> Result<(), ComputerUseError> {
    match (lease, reservation) {
        (Ok(()), second) => second,
        (Err(first), second) => Err(ComputerUseError::with_cleanup(first, second)),
    }
}

/// Hands `held` to the reaper; when the reaper has stopped, counts it lost.
/// True when it was handed over.
fn send<R: ComputerUseRuntime>(handle: &ReleaseHandle<R>, held: Held, how: Reap) -> bool {
    let counters = handle.releaser.counters.of(held.kind());
    let sent = handle
        .reaper
        .send(ReaperMessage::Release(held, how))
        .is_ok();
    if !sent {
        bump(&counters.lost);
    }
    sent
}

/// Hands a dropped guard's resource to the reaper, counting it queued.
fn queue<R: ComputerUseRuntime>(handle: &ReleaseHandle<R>, held: Held) {
    let counters = handle.releaser.counters.of(held.kind());
    if send(handle, held, Reap::Dropped) {
        bump(&counters.queued);
    }
}

/// Hands every resource no call is using to the reaper to be reclaimed; a
/// resource whose call is in flight is left to that call. Sending does not
/// await, so a shutdown cancelled after this leaves nothing behind: the
/// reaper runs on. Returns how many were handed over.
pub(crate) fn reclaim<R: ComputerUseRuntime>(handle: &ReleaseHandle<R>) -> u64 {
    let mut sent = 0;
    while let Some(held) = handle.releaser.ledger.take_idle() {
        tracing::warn!(
            resource = held.resource_id(),
            "reclaiming a resource still held by a stage"
        );
        if send(handle, held, Reap::Reclaimed) {
            sent += 1;
        }
    }
    sent
}

/// Holds what an action has on the server until it is given back.
#[must_use = "dropping an action guard queues its releases on the session's reaper instead of awaiting them"]
pub(crate) struct ActionGuard<R: ComputerUseRuntime> {
    handle: Arc<ReleaseHandle<R>>,
    reservation: Option<Slot<TargetReservation>>,
    lease: Option<Slot<ControlLease>>,
    /// The action's share of a task lease it spent from: the task gives
    /// that lease back, never the action.
    task: Option<TaskSpend<R>>,
}

impl<R: ComputerUseRuntime> ActionGuard<R> {
    /// A guard holding nothing yet.
    pub(crate) fn new(handle: Arc<ReleaseHandle<R>>) -> Self {
        Self {
            handle,
            reservation: None,
            lease: None,
            task: None,
        }
    }

    /// Holds the action's share of a task lease, from its spend to its end.
    pub(crate) fn hold_spend(&mut self, spend: TaskSpend<R>) {
        self.task = Some(spend);
    }

    /// The ledger entry of the lease this guard holds itself.
    pub(crate) fn lease_id(&self) -> Option<LedgerId> {
        self.lease.as_ref().map(|slot| slot.id)
    }

    /// The task lease the action spent from, when it did.
    pub(crate) fn spend(&self) -> Option<&TaskSpend<R>> {
        self.task.as_ref()
    }

    /// [`TaskSpend::begin`] for the task lease the action spent from; a
    /// no-op for an action with a lease of its own.
    pub(crate) fn begin_call(&mut self) -> Result<(), ComputerUseError> {
        match &mut self.task {
            Some(spend) => spend.begin(),
            None => Ok(()),
        }
    }

    /// [`TaskSpend::finish`], when the action spent from a task lease.
    pub(crate) fn end_call(&self) {
        if let Some(spend) = &self.task {
            spend.finish();
        }
    }

    /// Takes charge of a reservation the runtime accepted, before it is
    /// checked: one that fails its checks is still released.
    pub(crate) fn hold_reservation(&mut self, reservation: TargetReservation) {
        let value = Arc::new(reservation);
        let id = self
            .handle
            .releaser
            .ledger
            .register(Held::Reservation(Arc::clone(&value)));
        self.reservation = Some(Slot { id, value });
    }

    /// Takes charge of a lease the runtime granted, before it is checked,
    /// and shares it back for the stage's witness. A lease whose id a task
    /// lease of this session holds is the task's: it is refused, not taken
    /// over, so no action ends up releasing the task's lease.
    pub(crate) fn hold_lease(
        &mut self,
        lease: ControlLease,
    ) -> Result<Arc<ControlLease>, ComputerUseError> {
        self.hold_lease_as(lease, false)
    }

    /// [`ActionGuard::hold_lease`] for a task lease.
    pub(crate) fn hold_task_lease(
        &mut self,
        lease: ControlLease,
    ) -> Result<Arc<ControlLease>, ComputerUseError> {
        self.hold_lease_as(lease, true)
    }

    fn hold_lease_as(
        &mut self,
        lease: ControlLease,
        task: bool,
    ) -> Result<Arc<ControlLease>, ComputerUseError> {
        let ledger = &self.handle.releaser.ledger;
        if ledger.holds_task_lease(&lease.lease_id) {
            return Err(ComputerUseError::invalid(
                "ControlLease",
                "leaseId",
                "a lease this session's task lease does not already hold",
                lease.lease_id,
            ));
        }
        let value = Arc::new(lease);
        let held = Held::Lease(Arc::clone(&value));
        let id = if task {
            ledger.register_task(held)
        } else {
            ledger.register(held)
        };
        self.lease = Some(Slot {
            id,
            value: Arc::clone(&value),
        });
        Ok(value)
    }

    pub(crate) fn reservation(&self) -> Option<&TargetReservation> {
        self.reservation.as_ref().map(|slot| &*slot.value)
    }

    /// Marks what this action holds as in use by a call in flight (the
    /// mutation), or no longer: `Session::shutdown` leaves a resource in use
    /// to the call using it, and reports it as outstanding.
    pub(crate) fn in_use(&self, busy: bool) {
        let ids = [
            self.reservation.as_ref().map(|slot| slot.id),
            self.lease.as_ref().map(|slot| slot.id),
            self.task.as_ref().map(TaskSpend::ledger_id),
        ];
        self.handle
            .releaser
            .ledger
            .set_busy_all(ids.into_iter().flatten(), busy);
    }

    /// Gives one resource back, bounded by the release timeout, and counts
    /// how that went. While the call is in flight the ledger entry is busy,
    /// so `Session::shutdown` leaves it to this call (and reports it as
    /// outstanding); a resource shutdown already reclaimed is not released
    /// twice. A release future dropped or unwinding before the answer hands
    /// the resource to the reaper.
    async fn release_one<T>(
        handle: &ReleaseHandle<R>,
        slot: &Slot<T>,
    ) -> Result<(), ComputerUseError>
    where
        Arc<T>: Into<Held>,
    {
        if !handle.releaser.ledger.set_busy(slot.id, true) {
            return Ok(());
        }
        let in_flight = InFlight {
            handle,
            id: Some(slot.id),
        };
        let held: Held = slot.held();
        let answer = bounded(
            handle.releaser.timeout,
            give_back(
                &*handle.releaser.runtime,
                &held,
                &handle.releaser.session_id,
            ),
        )
        .await;
        in_flight.finish();
        let result = answer.unwrap_or_else(|_| {
            Err(ComputerUseError::Transport {
                operation: release_operation(&held).into(),
                message: format!("no answer within {:?}", handle.releaser.timeout),
            })
        });
        let counters = handle.releaser.counters.of(held.kind());
        match &result {
            Ok(()) => bump(&counters.explicit_released),
            Err(_) => bump(&counters.explicit_failed),
        }
        release_note(
            &handle.releaser.recorder,
            &held,
            "explicit",
            result.as_ref().err(),
        );
        result
    }

    /// Gives back the lease and the reservation, both at once (one round
    /// trip, not two: they are independent on the server, and the mutation
    /// they guarded has already answered), and reports how that went. Both
    /// are attempted; when both fail, the lease's failure comes first.
    pub(crate) async fn release(mut self) -> Result<(), ComputerUseError> {
        let handle = Arc::clone(&self.handle);
        let (lease, reservation) = (self.lease.take(), self.reservation.take());
        let (lease, reservation) = tokio::join!(
            async {
                match &lease {
                    Some(slot) => Self::release_one(&handle, slot).await,
                    None => Ok(()),
                }
            },
            async {
                match &reservation {
                    Some(slot) => Self::release_one(&handle, slot).await,
                    None => Ok(()),
                }
            }
        );
        lease_first(lease, reservation)
    }

    /// Releases the reservation while `before` runs, and the lease once it
    /// has: for evidence read from the live desktop, which must be read
    /// while this action is still the one writer. The lease stays in the
    /// guard until then, so a chain dropped mid-way hands it to the reaper.
    pub(crate) async fn release_lease_after<F: Future>(
        mut self,
        before: F,
    ) -> (F::Output, Result<(), ComputerUseError>) {
        let handle = Arc::clone(&self.handle);
        let reservation = self.reservation.take();
        let (output, reservation) = tokio::join!(before, async {
            match &reservation {
                Some(slot) => Self::release_one(&handle, slot).await,
                None => Ok(()),
            }
        });
        let lease = self.release().await;
        (output, lease_first(lease, reservation))
    }

    /// Releases after a failure: the primary error stays first, and a failed
    /// release is attached to it.
    ///
    /// The future is boxed: failure is the rare path, and a future stored
    /// inline would enlarge every stage's future, which the chain moves on
    /// each transition, by the size of the release calls.
    pub(crate) fn fail(
        self,
        action_id: &str,
        primary: ComputerUseError,
    ) -> Pin<Box<dyn Future<Output = ComputerUseError> + Send + '_>> {
        Box::pin(async move {
            self.handle.releaser.recorder.refusal(action_id, &primary);
            let cleanup = self.release().await;
            ComputerUseError::with_cleanup(primary, cleanup)
        })
    }
}

impl<R: ComputerUseRuntime> Drop for ActionGuard<R> {
    fn drop(&mut self) {
        // A mutation under a task lease that never came back (its future
        // was dropped mid-call) no longer uses the task's lease: shutdown
        // may reclaim it again.
        if let Some(spend) = &self.task {
            self.handle
                .releaser
                .ledger
                .set_busy(spend.ledger_id(), false);
        }
        // The lease first, then the reservation, each queued to the reaper.
        if let Some(slot) = self.lease.take()
            && let Some(held) = self.handle.releaser.ledger.take(slot.id)
        {
            queue(&self.handle, held);
        }
        if let Some(slot) = self.reservation.take()
            && let Some(held) = self.handle.releaser.ledger.take(slot.id)
        {
            queue(&self.handle, held);
        }
    }
}

/// How long one release may take before it is counted as failed.
pub(crate) const DEFAULT_RELEASE_TIMEOUT: Duration = Duration::from_secs(10);
