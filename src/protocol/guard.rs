//! The action guard: what an action holds on the server, and how it is given back.
//!
//! From the moment the runtime accepts a reservation or grants a lease, the
//! action holds a server-side resource that other writers wait for. Every
//! terminal path gives both back through an explicit async
//! [`ActionGuard::release`] (the lease first, then the reservation), so the
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

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::recorder::Recorder;
use super::session::{Core, release_note};
use crate::ComputerUseError;
use crate::contracts::{ControlLease, TargetReservation};
use crate::runtime::{ComputerUseRuntime, LeaseReleaseProof, ReleaseProof};

/// A resource an action holds on the server.
#[derive(Clone)]
pub(crate) enum Held {
    Reservation(Arc<TargetReservation>),
    Lease(Arc<ControlLease>),
}

impl Held {
    fn kind(&self) -> Kind {
        match self {
            Self::Reservation(_) => Kind::Reservation,
            Self::Lease(_) => Kind::Lease,
        }
    }

    pub(crate) fn resource_id(&self) -> &str {
        match self {
            Self::Reservation(reservation) => &reservation.reservation_id,
            Self::Lease(lease) => &lease.lease_id,
        }
    }
}

#[derive(Clone, Copy)]
enum Kind {
    Reservation,
    Lease,
}

/// Gives `held` back to the runtime, with the proof only a holder can make.
async fn give_back<R: ComputerUseRuntime>(
    runtime: &R,
    held: &Held,
) -> Result<(), ComputerUseError> {
    match held {
        Held::Reservation(reservation) => {
            runtime
                .release_target(&ReleaseProof::new(reservation))
                .await
        }
        Held::Lease(lease) => runtime.release_lease(&LeaseReleaseProof::new(lease)).await,
    }
}

pub(crate) enum ReaperMessage {
    Release(Held),
    Flush(oneshot::Sender<()>),
}

/// A ledger entry's id: its slot and the slot's generation, so an id whose
/// entry was taken never reaches the entry that reuses the slot.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct LedgerId {
    slot: usize,
    generation: u64,
}

#[derive(Default)]
struct Slots {
    entries: Vec<(u64, Option<Held>)>,
    free: Vec<usize>,
    held: usize,
}

/// Every resource the session's actions hold right now.
#[derive(Default)]
pub(crate) struct Ledger {
    slots: Mutex<Slots>,
}

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn register(&self, held: Held) -> LedgerId {
        let mut slots = self.lock();
        slots.held += 1;
        match slots.free.pop() {
            Some(slot) => {
                let entry = &mut slots.entries[slot];
                entry.0 += 1;
                entry.1 = Some(held);
                LedgerId {
                    slot,
                    generation: entry.0,
                }
            }
            None => {
                slots.entries.push((0, Some(held)));
                LedgerId {
                    slot: slots.entries.len() - 1,
                    generation: 0,
                }
            }
        }
    }

    /// Takes the entry out: whoever gets it is the one that releases it.
    fn take(&self, id: LedgerId) -> Option<Held> {
        let mut slots = self.lock();
        let entry = slots.entries.get_mut(id.slot)?;
        if entry.0 != id.generation {
            return None;
        }
        let held = entry.1.take()?;
        slots.free.push(id.slot);
        slots.held -= 1;
        Some(held)
    }

    fn drain(&self) -> Vec<Held> {
        let mut slots = self.lock();
        let mut drained = Vec::new();
        let Slots {
            entries,
            free,
            held,
        } = &mut *slots;
        for (slot, entry) in entries.iter_mut().enumerate() {
            if let Some(taken) = entry.1.take() {
                drained.push(taken);
                free.push(slot);
                *held -= 1;
            }
        }
        drained
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().held
    }
}

#[derive(Debug, Default)]
struct KindCounters {
    explicit_released: AtomicU64,
    explicit_failed: AtomicU64,
    queued: AtomicU64,
    reaped: AtomicU64,
    reap_failed: AtomicU64,
    lost: AtomicU64,
    reclaimed: AtomicU64,
    reclaim_failed: AtomicU64,
}

impl KindCounters {
    fn snapshot(&self) -> ResourceStats {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ResourceStats {
            explicit_released: read(&self.explicit_released),
            explicit_failed: read(&self.explicit_failed),
            queued: read(&self.queued),
            reaped: read(&self.reaped),
            reap_failed: read(&self.reap_failed),
            lost: read(&self.lost),
            reclaimed: read(&self.reclaimed),
            reclaim_failed: read(&self.reclaim_failed),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct ReleaseCounters {
    reservations: KindCounters,
    leases: KindCounters,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl ReleaseCounters {
    fn of(&self, kind: Kind) -> &KindCounters {
        match kind {
            Kind::Reservation => &self.reservations,
            Kind::Lease => &self.leases,
        }
    }

    pub(crate) fn snapshot(&self) -> ReleaseStats {
        ReleaseStats {
            reservations: self.reservations.snapshot(),
            leases: self.leases.snapshot(),
        }
    }
}

/// How one kind of resource (reservations, or leases) was given back.
///
/// Every resource lands in exactly one of `explicit_released`,
/// `explicit_failed`, `reaped`, `reap_failed`, `lost`, `reclaimed` or
/// `reclaim_failed`; `queued` counts those of them that reached the reaper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ResourceStats {
    /// Released by an explicit `release().await` that succeeded.
    pub explicit_released: u64,
    /// Explicit releases the runtime refused or that failed in transit.
    pub explicit_failed: u64,
    /// Handed to the reaper by a guard's `Drop`.
    pub queued: u64,
    /// Released by the reaper.
    pub reaped: u64,
    /// The reaper's releases that failed, panicked or timed out.
    pub reap_failed: u64,
    /// Dropped after the reaper had stopped: only the server's TTL frees these.
    pub lost: u64,
    /// Still held by a stage that was never dropped (`mem::forget`), and
    /// released by `Session::shutdown`.
    pub reclaimed: u64,
    /// Reclaims at shutdown that failed, panicked or timed out.
    pub reclaim_failed: u64,
}

impl ResourceStats {
    /// Resources whose release is not known to have happened: an explicit
    /// release that failed, queued but not (yet) reaped, lost, or not
    /// reclaimed. Each is counted once.
    pub fn leaked(&self) -> u64 {
        self.explicit_failed
            + self.queued.saturating_sub(self.reaped)
            + self.lost
            + self.reclaim_failed
    }
}

/// How the resources of a session's actions were given back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReleaseStats {
    /// Target reservations.
    pub reservations: ResourceStats,
    /// Control leases.
    pub leases: ResourceStats,
}

impl ReleaseStats {
    /// Reservations and leases whose release is not known to have happened.
    pub fn leaked(&self) -> u64 {
        self.reservations.leaked() + self.leases.leaked()
    }
}

/// What releasing needs, shared by the session, its guards and its reaper.
/// It holds no channel to the reaper, so the reaper can own one without a
/// cycle and outlive the last stage that queued something.
pub(crate) struct Releaser<R: ComputerUseRuntime> {
    pub(crate) runtime: Arc<R>,
    pub(crate) counters: ReleaseCounters,
    pub(crate) ledger: Ledger,
    pub(crate) recorder: Recorder,
    pub(crate) handle: tokio::runtime::Handle,
    pub(crate) timeout: Duration,
}

impl<R: ComputerUseRuntime> Releaser<R> {
    /// Runs one release as its own task, bounded by the release timeout, so
    /// a release that panics or hangs fails alone. True when it succeeded.
    async fn isolated(&self, held: Held, how: &'static str) -> bool {
        let runtime = Arc::clone(&self.runtime);
        let task_held = held.clone();
        let task = self
            .handle
            .spawn(async move { give_back(&*runtime, &task_held).await });
        let abort = task.abort_handle();
        let error = match tokio::time::timeout(self.timeout, task).await {
            Ok(Ok(Ok(()))) => None,
            Ok(Ok(Err(err))) => Some(err),
            Ok(Err(join)) => Some(ComputerUseError::Transport {
                operation: release_operation(&held).into(),
                message: format!("the release task failed: {join}"),
            }),
            Err(_) => {
                abort.abort();
                Some(ComputerUseError::Transport {
                    operation: release_operation(&held).into(),
                    message: format!("no answer within {:?}", self.timeout),
                })
            }
        };
        release_note(&self.recorder, &held, how, error.as_ref());
        error.is_none()
    }

    /// Releases what forgotten stages still hold; called by
    /// `Session::shutdown` after the reaper has drained.
    pub(crate) async fn reclaim(&self) {
        for held in self.ledger.drain() {
            tracing::warn!(
                resource = held.resource_id(),
                "releasing a resource still held by a stage that was never dropped"
            );
            let kind = held.kind();
            let counters = self.counters.of(kind);
            if self.isolated(held, "shutdown").await {
                bump(&counters.reclaimed);
            } else {
                bump(&counters.reclaim_failed);
            }
        }
    }
}

fn release_operation(held: &Held) -> &'static str {
    match held {
        Held::Reservation(_) => "release_target",
        Held::Lease(_) => "release_lease",
    }
}

pub(crate) fn spawn_reaper<R: ComputerUseRuntime>(
    releaser: Arc<Releaser<R>>,
) -> mpsc::UnboundedSender<ReaperMessage> {
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let handle = releaser.handle.clone();
    handle.spawn(async move {
        while let Some(message) = receiver.recv().await {
            match message {
                ReaperMessage::Release(held) => {
                    let kind = held.kind();
                    let counters = releaser.counters.of(kind);
                    if releaser.isolated(held, "reaper").await {
                        bump(&counters.reaped);
                    } else {
                        bump(&counters.reap_failed);
                    }
                }
                ReaperMessage::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    sender
}

/// One resource held by a guard: its ledger id and the resource.
struct Slot<T> {
    id: LedgerId,
    value: Arc<T>,
}

/// A release in flight on the explicit path. It owns the resource (taken out
/// of the ledger, so `shutdown` cannot release it a second time); if the
/// release future is dropped or unwinds before the answer, `Drop` hands the
/// resource to the reaper.
struct InFlight<'a, R: ComputerUseRuntime> {
    core: &'a Core<R>,
    held: Option<Held>,
}

impl<R: ComputerUseRuntime> InFlight<'_, R> {
    fn finish(mut self) -> Option<Held> {
        self.held.take()
    }
}

impl<R: ComputerUseRuntime> Drop for InFlight<'_, R> {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            queue(self.core, held);
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

/// Hands `held` to the reaper, counting it queued (or lost when the reaper
/// has stopped).
fn queue<R: ComputerUseRuntime>(core: &Core<R>, held: Held) {
    let counters = core.releaser.counters.of(held.kind());
    if core.reaper.send(ReaperMessage::Release(held)).is_ok() {
        bump(&counters.queued);
    } else {
        bump(&counters.lost);
    }
}

/// Holds what an action has on the server until it is given back.
#[must_use = "dropping an action guard queues its releases on the session's reaper instead of awaiting them"]
pub(crate) struct ActionGuard<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    reservation: Option<Slot<TargetReservation>>,
    lease: Option<Slot<ControlLease>>,
}

impl<R: ComputerUseRuntime> ActionGuard<R> {
    /// A guard holding nothing yet.
    pub(crate) fn new(core: Arc<Core<R>>) -> Self {
        Self {
            core,
            reservation: None,
            lease: None,
        }
    }

    /// Takes charge of a reservation the runtime accepted, before it is
    /// checked: one that fails its checks is still released.
    pub(crate) fn hold_reservation(&mut self, reservation: TargetReservation) {
        let value = Arc::new(reservation);
        let id = self
            .core
            .releaser
            .ledger
            .register(Held::Reservation(Arc::clone(&value)));
        self.reservation = Some(Slot { id, value });
    }

    /// Takes charge of a lease the runtime granted, before it is checked,
    /// and shares it back for the stage's witness.
    pub(crate) fn hold_lease(&mut self, lease: ControlLease) -> Arc<ControlLease> {
        let value = Arc::new(lease);
        let id = self
            .core
            .releaser
            .ledger
            .register(Held::Lease(Arc::clone(&value)));
        self.lease = Some(Slot {
            id,
            value: Arc::clone(&value),
        });
        value
    }

    pub(crate) fn reservation(&self) -> Option<&TargetReservation> {
        self.reservation.as_ref().map(|slot| &*slot.value)
    }

    /// Gives one resource back, bounded by the release timeout, and counts
    /// how that went. A resource `Session::shutdown` already reclaimed is not
    /// released twice: whoever takes it out of the ledger releases it.
    async fn release_one(core: &Core<R>, id: LedgerId) -> Result<(), ComputerUseError> {
        let Some(held) = core.releaser.ledger.take(id) else {
            return Ok(());
        };
        let in_flight = InFlight {
            core,
            held: Some(held),
        };
        let answer = match &in_flight.held {
            Some(held) => {
                bounded(
                    core.releaser.timeout,
                    give_back(&*core.releaser.runtime, held),
                )
                .await
            }
            None => Ok(Ok(())),
        };
        let Some(held) = in_flight.finish() else {
            return Ok(());
        };
        let result = answer.unwrap_or_else(|_| {
            Err(ComputerUseError::Transport {
                operation: release_operation(&held).into(),
                message: format!("no answer within {:?}", core.releaser.timeout),
            })
        });
        let counters = core.releaser.counters.of(held.kind());
        match &result {
            Ok(()) => bump(&counters.explicit_released),
            Err(_) => bump(&counters.explicit_failed),
        }
        release_note(
            &core.releaser.recorder,
            &held,
            "explicit",
            result.as_ref().err(),
        );
        result
    }

    /// Gives back the lease, then the reservation, and reports how that went.
    /// Both are attempted; when both fail, the lease's failure comes first.
    pub(crate) async fn release(mut self) -> Result<(), ComputerUseError> {
        let core = Arc::clone(&self.core);
        let lease = match self.lease.take() {
            Some(slot) => Self::release_one(&core, slot.id).await,
            None => Ok(()),
        };
        let reservation = match self.reservation.take() {
            Some(slot) => Self::release_one(&core, slot.id).await,
            None => Ok(()),
        };
        match (lease, reservation) {
            (Ok(()), second) => second,
            (Err(first), second) => Err(ComputerUseError::with_cleanup(first, second)),
        }
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
            self.core.recorder.refusal(action_id, &primary);
            let cleanup = self.release().await;
            ComputerUseError::with_cleanup(primary, cleanup)
        })
    }
}

impl<R: ComputerUseRuntime> Drop for ActionGuard<R> {
    fn drop(&mut self) {
        // Lease first, as the explicit path does.
        if let Some(slot) = self.lease.take()
            && let Some(held) = self.core.releaser.ledger.take(slot.id)
        {
            queue(&self.core, held);
        }
        if let Some(slot) = self.reservation.take()
            && let Some(held) = self.core.releaser.ledger.take(slot.id)
        {
            queue(&self.core, held);
        }
    }
}

/// How long one release may take before it is counted as failed.
pub(crate) const DEFAULT_RELEASE_TIMEOUT: Duration = Duration::from_secs(10);
