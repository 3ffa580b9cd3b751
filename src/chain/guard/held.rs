//! What an action holds on the server, and the one way to give it back:
//! with the proof only its holder can make.

use std::sync::Arc;

use super::super::recorder::Recorder;
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
    pub(super) fn kind(&self) -> Kind {
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

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Reservation,
    Lease,
}

/// Gives `held` back to the runtime, with the proof only a holder can make.
pub(super) async fn give_back<R: ComputerUseRuntime>(
    runtime: &R,
    held: &Held,
    session_id: &str,
) -> Result<(), ComputerUseError> {
    match held {
        Held::Reservation(reservation) => {
            runtime
                .release_target(&ReleaseProof::new(reservation, session_id))
                .await
        }
        Held::Lease(lease) => runtime.release_lease(&LeaseReleaseProof::new(lease)).await,
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

pub(super) fn release_operation(held: &Held) -> &'static str {
    match held {
        Held::Reservation(_) => "release_target",
        Held::Lease(_) => "release_lease",
    }
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
