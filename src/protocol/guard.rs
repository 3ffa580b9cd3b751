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
    Release(Held, Reap),
    Flush(oneshot::Sender<()>),
}

/// A ledger entry's id: its slot and the slot's generation, so an id whose
/// entry was taken never reaches the entry that reuses the slot.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct LedgerId {
    slot: usize,
    generation: u64,
}

/// One ledger slot: its generation, the resource, and whether a call that
/// uses it (the mutation, or its own explicit release) is in flight.
#[derive(Default)]
struct Entry {
    generation: u64,
    held: Option<Held>,
    busy: bool,
}

#[derive(Default)]
struct Slots {
    entries: Vec<Entry>,
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
                entry.generation += 1;
                entry.held = Some(held);
                entry.busy = false;
                LedgerId {
                    slot,
                    generation: entry.generation,
                }
            }
            None => {
                slots.entries.push(Entry {
                    generation: 0,
                    held: Some(held),
                    busy: false,
                });
                LedgerId {
                    slot: slots.entries.len() - 1,
                    generation: 0,
                }
            }
        }
    }

    /// The live entry of `id`, if it is still in the ledger.
    fn entry(slots: &mut Slots, id: LedgerId) -> Option<&mut Entry> {
        slots
            .entries
            .get_mut(id.slot)
            .filter(|entry| entry.generation == id.generation && entry.held.is_some())
    }

    /// Takes the entry out: whoever gets it is the one that releases it.
    fn take(&self, id: LedgerId) -> Option<Held> {
        let mut slots = self.lock();
        let held = Self::entry(&mut slots, id)?.held.take()?;
        slots.free.push(id.slot);
        slots.held -= 1;
        Some(held)
    }

    /// Marks the entry busy (or not): a busy entry is in use by a call in
    /// flight, and `shutdown` leaves it to that call. False when the entry
    /// is no longer in the ledger.
    fn set_busy(&self, id: LedgerId, busy: bool) -> bool {
        let mut slots = self.lock();
        match Self::entry(&mut slots, id) {
            Some(entry) => {
                entry.busy = busy;
                true
            }
            None => false,
        }
    }

    /// Marks several entries busy (or not) under one lock.
    fn set_busy_all(&self, ids: impl IntoIterator<Item = LedgerId>, busy: bool) {
        let mut slots = self.lock();
        for id in ids {
            if let Some(entry) = Self::entry(&mut slots, id) {
                entry.busy = busy;
            }
        }
    }

    /// Takes out one entry that no call is using, if there is one.
    fn take_idle(&self) -> Option<Held> {
        let mut slots = self.lock();
        let slot = slots
            .entries
            .iter()
            .position(|entry| entry.held.is_some() && !entry.busy)?;
        let held = slots.entries[slot].held.take()?;
        slots.free.push(slot);
        slots.held -= 1;
        Some(held)
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

    pub(crate) fn snapshot(&self, outstanding: usize) -> ReleaseStats {
        ReleaseStats {
            reservations: self.reservations.snapshot(),
            leases: self.leases.snapshot(),
            outstanding: u64::try_from(outstanding).unwrap_or(u64::MAX),
        }
    }

    /// Releases handed to the reaper that it has not finished yet.
    pub(crate) fn reaper_backlog(&self) -> u64 {
        [&self.reservations, &self.leases]
            .iter()
            .map(|kind| {
                let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
                read(&kind.queued).saturating_sub(read(&kind.reaped) + read(&kind.reap_failed))
            })
            .sum()
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
    /// Reservations and leases still held when this was read. After
    /// `Session::shutdown`, only resources a call was using at that moment
    /// (the mutation, or their own release) remain; that call releases and
    /// counts them when it ends. One that never ends (its future was
    /// forgotten) stays here.
    pub outstanding: u64,
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

    /// Gives `held` back as the reaper does, counting it under `reaped` or
    /// `reclaimed` as `how` says.
    async fn reap(&self, held: Held, how: Reap) {
        let counters = self.counters.of(held.kind());
        let (ok, failed, note) = match how {
            Reap::Dropped => (&counters.reaped, &counters.reap_failed, "reaper"),
            Reap::Reclaimed => (&counters.reclaimed, &counters.reclaim_failed, "shutdown"),
        };
        if self.isolated(held, note).await {
            bump(ok);
        } else {
            bump(failed);
        }
    }
}

/// Why the reaper releases a resource.
#[derive(Clone, Copy)]
pub(crate) enum Reap {
    /// A guard was dropped unreleased.
    Dropped,
    /// `Session::shutdown` reclaimed it from a stage that was never dropped.
    Reclaimed,
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
                ReaperMessage::Release(held, how) => releaser.reap(held, how).await,
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

impl<T> Slot<T>
where
    Arc<T>: Into<Held>,
{
    fn held(&self) -> Held {
        Arc::clone(&self.value).into()
    }
}

impl From<Arc<TargetReservation>> for Held {
    fn from(reservation: Arc<TargetReservation>) -> Self {
        Self::Reservation(reservation)
    }
}

impl From<Arc<ControlLease>> for Held {
    fn from(lease: Arc<ControlLease>) -> Self {
        Self::Lease(lease)
    }
}

/// What a guard needs of its session, and nothing more: the releaser (the
/// runtime, the ledger, the counters, the recorder) and the reaper's inbox.
/// A guard never sees the session's identity, scope or stages.
pub(crate) struct ReleaseHandle<R: ComputerUseRuntime> {
    pub(crate) releaser: Arc<Releaser<R>>,
    pub(crate) reaper: mpsc::UnboundedSender<ReaperMessage>,
}

/// Logs one release (explicit, by the reaper, or at shutdown) and journals
/// it under its action when it is a reservation's (a lease names no action).
pub(crate) fn release_note(
    recorder: &Recorder,
    held: &Held,
    how: &str,
    error: Option<&ComputerUseError>,
) {
    let resource = held.resource_id();
    match error {
        None => tracing::debug!(resource, how, "released"),
        Some(err) => tracing::warn!(resource, how, error = %err, "release failed"),
    }
    if let Held::Reservation(reservation) = held {
        recorder.note(
            &reservation.intent_id,
            crate::journal::events::RELEASED,
            || {
                serde_json::json!({
                    "reservationId": reservation.reservation_id,
                    "how": how,
                    "ok": error.is_none(),
                    "errorClass": error.map(ComputerUseError::class),
                })
            },
        );
    }
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
}

impl<R: ComputerUseRuntime> ActionGuard<R> {
    /// A guard holding nothing yet.
    pub(crate) fn new(handle: Arc<ReleaseHandle<R>>) -> Self {
        Self {
            handle,
            reservation: None,
            lease: None,
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
    /// and shares it back for the stage's witness.
    pub(crate) fn hold_lease(&mut self, lease: ControlLease) -> Arc<ControlLease> {
        let value = Arc::new(lease);
        let id = self
            .handle
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

    /// Marks what this action holds as in use by a call in flight (the
    /// mutation), or no longer: `Session::shutdown` leaves a resource in use
    /// to the call using it, and reports it as outstanding.
    pub(crate) fn in_use(&self, busy: bool) {
        let ids = [
            self.reservation.as_ref().map(|slot| slot.id),
            self.lease.as_ref().map(|slot| slot.id),
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
            give_back(&*handle.releaser.runtime, &held),
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

    /// Gives back the lease, then the reservation, and reports how that went.
    /// Both are attempted; when both fail, the lease's failure comes first.
    pub(crate) async fn release(mut self) -> Result<(), ComputerUseError> {
        let handle = Arc::clone(&self.handle);
        let lease = match self.lease.take() {
            Some(slot) => Self::release_one(&handle, &slot).await,
            None => Ok(()),
        };
        let reservation = match self.reservation.take() {
            Some(slot) => Self::release_one(&handle, &slot).await,
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
            self.handle.releaser.recorder.refusal(action_id, &primary);
            let cleanup = self.release().await;
            ComputerUseError::with_cleanup(primary, cleanup)
        })
    }
}

impl<R: ComputerUseRuntime> Drop for ActionGuard<R> {
    fn drop(&mut self) {
        // Lease first, as the explicit path does.
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
