//! `Leased`: the only stage that can mutate the desktop.

use std::sync::Arc;

use super::Executed;
use super::approval::Authority;
use super::guard::ReservationGuard;
use super::session::Core;
use super::witness::{BoundLease, BoundReceipt, FreshPreview};
use crate::ComputerUseError;
use crate::contracts::{ActionPreview, ControlLease};
use crate::runtime::{ComputerUseRuntime, binding};

/// An action holding its reservation and a validated lease.
#[must_use = "dropping a leased action queues its reservation on the session's reaper"]
pub struct Leased<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
    authority: Authority,
    guard: ReservationGuard<R>,
    lease: BoundLease,
}

impl<R: ComputerUseRuntime> Leased<R> {
    pub(crate) fn new(
        core: Arc<Core<R>>,
        preview: FreshPreview,
        authority: Authority,
        guard: ReservationGuard<R>,
        lease: BoundLease,
    ) -> Self {
        Self {
            core,
            preview,
            authority,
            guard,
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
        let now = self.core.now();
        let envelope = self.preview.envelope();
        binding::validate_envelope_freshness_at(envelope, now)?;
        self.lease.recheck(envelope, now)?;
        if let Some(reservation) = self.guard.reservation() {
            binding::validate_reservation_at(reservation, envelope, now)?;
        }
        self.authority.check(self.preview.get())?;
        self.core.authorize(envelope.requested_mode)
    }

    /// Performs the single mutation. Immediately before the call it re-checks
    /// envelope freshness, the lease, the reservation, the approval and the
    /// scope; immediately after, it binds the receipt. Any failure releases
    /// the reservation.
    pub async fn execute(self) -> Result<Executed<R>, ComputerUseError> {
        if let Err(err) = self.revalidate() {
            return Err(self.guard.fail(err).await);
        }
        let envelope = self.preview.envelope();
        let answer = self
            .core
            .runtime
            .execute_action(envelope, self.lease.get(), self.authority.grant_id())
            .await;
        let receipt = match answer.and_then(|receipt| BoundReceipt::check(receipt, envelope)) {
            Ok(receipt) => receipt,
            Err(err) => return Err(self.guard.fail(err).await),
        };
        Ok(Executed::new(
            self.core,
            self.preview,
            self.guard,
            self.lease,
            receipt,
        ))
    }
}
