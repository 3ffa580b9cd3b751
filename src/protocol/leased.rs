//! `Leased`: the only stage that can mutate the desktop.

use std::sync::Arc;

use super::Executed;
use super::approval::Authority;
use super::guard::ReservationGuard;
use super::session::Core;
use super::witness::{BoundLease, BoundReceipt, BoundReservation, FreshPreview};
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::ReceiptStatus;
use crate::contracts::{ActionPreview, ControlLease};
use crate::eval::journal_types;
use crate::runtime::ComputerUseRuntime;

/// An action holding its reservation and a validated lease.
#[must_use = "dropping a leased action queues its reservation on the session's reaper"]
pub struct Leased<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
    authority: Authority,
    guard: ReservationGuard<R>,
    reservation: BoundReservation,
    lease: BoundLease,
}

impl<R: ComputerUseRuntime> Leased<R> {
    pub(crate) fn new(
        core: Arc<Core<R>>,
        preview: FreshPreview,
        authority: Authority,
        guard: ReservationGuard<R>,
        reservation: BoundReservation,
        lease: BoundLease,
    ) -> Self {
        Self {
            core,
            preview,
            authority,
            guard,
            reservation,
            lease,
        }
    }

    /// The preview.
    pub fn preview(&self) -> &ActionPreview {
        self.preview.get()
    }

    /// The lease.
    pub fn lease(&self) -> &ControlLease {
        self.lease.get()
    }

    /// Everything the seeds' execution-time table lists, checked against the
    /// clock as it reads now.
    fn revalidate(&self) -> Result<(), ComputerUseError> {
        let clock = self.core.clock();
        let envelope = self.preview.envelope();
        self.preview.recheck(clock)?;
        self.lease.recheck(envelope, clock)?;
        self.reservation
            .recheck(self.guard.reservation(), envelope, clock)?;
        self.authority.check(self.preview.get())?;
        self.core.authorize(envelope.requested_mode)
    }

    /// Performs the single mutation. Immediately before the call it re-checks
    /// envelope freshness, the lease, the reservation, the approval and the
    /// scope; immediately after, it binds the receipt. Any failure releases
    /// the reservation.
    pub async fn execute(self) -> Result<Executed<R>, ComputerUseError> {
        let envelope = self.preview.envelope();
        let lease_id = &self.lease.get().lease_id;
        // The start is recorded before the call: if it cannot be, the
        // mutation does not happen.
        let ready = self.revalidate().and_then(|()| {
            let payload = || json!({ "leaseId": lease_id });
            self.core
                .recorder
                .record(&envelope.action_id, journal_types::STARTED, payload)
        });
        if let Err(err) = ready {
            return Err(self.guard.fail(&envelope.action_id, err).await);
        }
        let answer = self
            .core
            .runtime
            .execute_action(envelope, self.lease.get(), self.authority.grant_id())
            .await;
        let receipt = match answer.and_then(|receipt| BoundReceipt::check(receipt, envelope)) {
            Ok(receipt) => receipt,
            Err(err) => return Err(self.guard.fail(&envelope.action_id, err).await),
        };
        let bound = receipt.get();
        let event_type = if bound.status == ReceiptStatus::Committed {
            journal_types::COMMITTED
        } else {
            journal_types::RECEIPT
        };
        self.core.recorder.note(
            &envelope.action_id,
            event_type,
            || json!({ "receiptId": bound.receipt_id, "leaseId": lease_id, "status": bound.status }),
        );
        Ok(Executed::new(
            self.core,
            self.preview,
            self.guard,
            self.lease,
            receipt,
        ))
    }
}
