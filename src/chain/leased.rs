//! `Leased`: the only stage that can mutate the desktop.

use std::sync::Arc;

use super::Executed;
use super::approvals::Authority;
use super::core::Core;
use super::guard::ActionGuard;
use super::witness::{BoundLease, BoundReceipt, BoundReservation, FreshPreview};
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::{ActionPreview, ControlLease, ReceiptStatus};
use crate::journal::events;
use crate::runtime::{ComputerUseRuntime, ExecuteProof};

/// An action holding its reservation and a validated lease.
#[must_use = "dropping a leased action queues its lease and reservation on the session's reaper"]
pub struct Leased<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
    authority: Authority,
    guard: ActionGuard<R>,
    reservation: BoundReservation,
    lease: BoundLease,
}

impl<R: ComputerUseRuntime> Leased<R> {
    pub(crate) fn new(
        core: Arc<Core<R>>,
        preview: FreshPreview,
        authority: Authority,
        guard: ActionGuard<R>,
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

    /// The validated lease.
    pub fn lease(&self) -> &ControlLease {
        self.lease.get()
    }

    /// What time can change since each binding was made, checked against the
    /// clock as it reads now (the seeds' execution-time table): the
    /// envelope's, the lease's and the reservation's expiries; the route and
    /// the approval; the scope. Identity fields of the bound lease and
    /// reservation are immutable and were bound once.
    fn revalidate(&self) -> Result<(), ComputerUseError> {
        self.core.ensure_open("execute")?;
        let clock = self.core.clock();
        self.preview.recheck(clock)?;
        self.lease.recheck(clock)?;
        if let Some(spend) = self.guard.spend() {
            spend.check(clock)?;
        }
        self.reservation.recheck(self.guard.reservation(), clock)?;
        self.authority.check(self.preview.get())?;
        self.core.authorize(self.preview.envelope().requested_mode)
    }

    /// Performs the single mutation. Immediately before the call it re-checks
    /// envelope freshness, the lease, the reservation, the approval and the
    /// scope; immediately after, it binds the receipt. Any failure releases
    /// the lease and the reservation.
    ///
    /// When the call fails in a way that leaves the effect in doubt (the
    /// connection broke, or the answer could not be read), the error is
    /// [`ComputerUseError::OutcomeUnknown`], carrying the action id: a retry
    /// must reuse it so the runtime replays instead of acting twice.
    pub async fn execute(mut self) -> Result<Executed<R>, ComputerUseError> {
        let lease = self.lease.handle();
        // The start is recorded before the call: if it cannot be, the
        // mutation does not happen. An action spent from a task lease marks
        // its call as begun last, so a task released meanwhile stops it.
        let ready = match self.revalidate() {
            Ok(()) => {
                let payload = || json!({ "leaseId": lease.lease_id });
                self.core
                    .recorder
                    .record(&self.preview.envelope().action_id, events::STARTED, payload)
                    .wait()
                    .await
            }
            Err(err) => Err(err),
        }
        .and_then(|()| self.guard.begin_call());
        let envelope = self.preview.envelope();
        if let Err(err) = ready {
            let err = self.guard.fail(&envelope.action_id, err).await;
            self.core.failed(envelope, &err).await;
            return Err(err);
        }
        // From here the mutating call is made: a resumed checkpoint is
        // never given back again.
        self.core.returnable.settle(envelope);
        // While the mutation is in flight, what the action holds is in use:
        // a shutdown at this moment leaves it to this call.
        self.guard.in_use(true);
        let answer = {
            let proof = ExecuteProof::new(
                envelope,
                &lease,
                self.authority.grant_id(),
                self.preview.retained(),
            );
            self.core.runtime.execute_action(&proof).await
        };
        self.guard.in_use(false);
        self.guard.end_call();
        // Past this point the runtime may have acted: anything but a clean
        // refusal, or a receipt that says it failed, leaves the outcome in
        // doubt, and the error says so.
        let checked = answer
            .and_then(|receipt| BoundReceipt::check(receipt, envelope))
            .and_then(settled)
            .map_err(|err| ComputerUseError::after_mutation(&envelope.action_id, err));
        let receipt = match checked {
            Ok(receipt) => receipt,
            // The mutating call was made: whatever it answered, a resumed
            // checkpoint stays consumed. (A server may refuse after the
            // effect, as upstream's re-check of the target does, and the
            // refusal then reads like one made before it.)
            Err(err) => {
                let err = self.guard.fail(&envelope.action_id, err).await;
                // The mutating call was made: whatever came back (a refusal
                // too, which a server may send after acting), the report
                // cannot say it did not happen.
                self.core
                    .report(envelope, || super::ReportedOutcome::OutcomeUnknown {
                        reason: format!("the call that acts was made, then: {err}"),
                    })
                    .await;
                return Err(err);
            }
        };
        let bound = receipt.get();
        let event_type = if bound.status == ReceiptStatus::Committed {
            events::COMMITTED
        } else {
            events::RECEIPT
        };
        self.core.recorder.note(
            &envelope.action_id,
            event_type,
            || json!({ "receiptId": bound.receipt_id, "leaseId": lease.lease_id, "status": bound.status }),
        );
        Ok(Executed::new(
            self.core,
            self.preview,
            self.guard,
            lease,
            receipt,
        ))
    }
}

/// A receipt whose status settles the action: performed (`committed`), not
/// performed (`failed`), or performed and undone (`rolled_back`). Anything
/// else (`pending`, `running`, `indeterminate`) leaves the effect in doubt.
fn settled(receipt: BoundReceipt) -> Result<BoundReceipt, ComputerUseError> {
    match receipt.get().status {
        ReceiptStatus::Committed | ReceiptStatus::Failed | ReceiptStatus::RolledBack => Ok(receipt),
        other => Err(ComputerUseError::invalid(
            "ExecutionReceipt",
            "status",
            "committed, failed or rolled_back once the mutating call has returned",
            format!("{other:?}"),
        )),
    }
}
