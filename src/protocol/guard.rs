//! The reservation guard and the reaper that backs its `Drop`.
//!
//! A reservation is released by an explicit async [`ReservationGuard::release`]
//! on every terminal path, so its result is known and can be reported. When a
//! guard is dropped unreleased — a cancelled future, a panic, a stage that was
//! simply forgotten — `Drop` cannot await. It does no I/O and cannot panic: it
//! hands the reservation to the session's reaper task over an unbounded
//! channel and counts it as queued. `Session::shutdown` waits until the reaper
//! has worked through everything queued before it. The server-side TTL
//! remains the ground truth if the process dies.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{mpsc, oneshot};

use super::recorder::Recorder;
use super::session::{Core, release_note};
use crate::ComputerUseError;
use crate::contracts::TargetReservation;
use crate::runtime::ComputerUseRuntime;

pub(crate) enum ReaperMessage {
    Release(Box<TargetReservation>),
    Flush(oneshot::Sender<()>),
}

#[derive(Debug, Default)]
pub(crate) struct ReleaseCounters {
    explicit_released: AtomicU64,
    explicit_failed: AtomicU64,
    queued: AtomicU64,
    reaped: AtomicU64,
    reap_failed: AtomicU64,
    lost: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl ReleaseCounters {
    pub(crate) fn snapshot(&self) -> ReleaseStats {
        ReleaseStats {
            explicit_released: self.explicit_released.load(Ordering::Relaxed),
            explicit_failed: self.explicit_failed.load(Ordering::Relaxed),
            queued: self.queued.load(Ordering::Relaxed),
            reaped: self.reaped.load(Ordering::Relaxed),
            reap_failed: self.reap_failed.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
        }
    }
}

/// How the reservations of a session were released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReleaseStats {
    /// Released by an explicit `release().await` that succeeded.
    pub explicit_released: u64,
    /// Explicit releases the runtime refused or that failed in transit.
    pub explicit_failed: u64,
    /// Handed to the reaper by a guard's `Drop`.
    pub queued: u64,
    /// Released by the reaper.
    pub reaped: u64,
    /// The reaper's releases that failed.
    pub reap_failed: u64,
    /// Dropped after the reaper had stopped: only the server's TTL frees these.
    pub lost: u64,
}

impl ReleaseStats {
    /// Reservations queued by `Drop` that the reaper has not released.
    pub fn leaked(&self) -> u64 {
        self.queued.saturating_sub(self.reaped) + self.lost
    }
}

pub(crate) fn spawn_reaper<R: ComputerUseRuntime>(
    handle: &tokio::runtime::Handle,
    runtime: Arc<R>,
    counters: Arc<ReleaseCounters>,
    recorder: Recorder,
) -> mpsc::UnboundedSender<ReaperMessage> {
    let (sender, mut receiver) = mpsc::unbounded_channel();
    handle.spawn(async move {
        while let Some(message) = receiver.recv().await {
            match message {
                ReaperMessage::Release(reservation) => match runtime.release_target(&reservation).await {
                    Ok(()) => {
                        bump(&counters.reaped);
                        release_note(&recorder, &reservation, "reaper", None);
                        runtime.action_ended(&reservation.intent_id);
                    }
                    Err(err) => {
                        bump(&counters.reap_failed);
                        release_note(&recorder, &reservation, "reaper", Some(&err));
                        tracing::warn!(
                            reservation_id = %reservation.reservation_id,
                            error = %err,
                            "the reaper could not release a dropped reservation; the server TTL will"
                        );
                    }
                },
                ReaperMessage::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    sender
}

/// Holds an accepted reservation until it is released.
#[must_use = "dropping a reservation guard queues the release on the session's reaper instead of awaiting it"]
pub(crate) struct ReservationGuard<R: ComputerUseRuntime> {
    reservation: Option<Box<TargetReservation>>,
    core: Arc<Core<R>>,
}

impl<R: ComputerUseRuntime> ReservationGuard<R> {
    /// Arms a guard over what the runtime returned (possibly nothing).
    pub(crate) fn arm(core: Arc<Core<R>>, reservation: Option<Box<TargetReservation>>) -> Self {
        Self { reservation, core }
    }

    pub(crate) fn reservation(&self) -> Option<&TargetReservation> {
        self.reservation.as_deref()
    }

    /// Releases the reservation and reports how that went. A guard with no
    /// reservation releases nothing and succeeds.
    pub(crate) async fn release(mut self) -> Result<(), ComputerUseError> {
        let Some(reservation) = self.reservation.as_deref() else {
            return Ok(());
        };
        // The reservation stays in the guard while the call is in flight: if
        // this future is dropped mid-way, `Drop` still hands it to the reaper.
        let result = self.core.runtime.release_target(reservation).await;
        let released = self.reservation.take();
        match &result {
            Ok(()) => bump(&self.core.counters.explicit_released),
            Err(_) => bump(&self.core.counters.explicit_failed),
        }
        if let Some(released) = released {
            release_note(
                &self.core.recorder,
                &released,
                "explicit",
                result.as_ref().err(),
            );
        }
        result
    }

    /// Releases after a failure: the primary error stays first, and a failed
    /// release is attached to it. The action (`action_id`) has ended.
    ///
    /// The future is boxed: failure is the rare path, and a future stored
    /// inline would enlarge every stage's future, which the chain moves on
    /// each transition, by the size of the release call.
    pub(crate) fn fail(
        self,
        action_id: &str,
        primary: ComputerUseError,
    ) -> Pin<Box<dyn Future<Output = ComputerUseError> + Send + '_>> {
        Box::pin(async move {
            let core = Arc::clone(&self.core);
            core.recorder.refusal(action_id, &primary);
            let cleanup = self.release().await;
            core.runtime.action_ended(action_id);
            ComputerUseError::with_cleanup(primary, cleanup)
        })
    }
}

impl<R: ComputerUseRuntime> Drop for ReservationGuard<R> {
    fn drop(&mut self) {
        let Some(reservation) = self.reservation.take() else {
            return;
        };
        bump(&self.core.counters.queued);
        if self
            .core
            .reaper
            .send(ReaperMessage::Release(reservation))
            .is_err()
        {
            bump(&self.core.counters.lost);
        }
    }
}
