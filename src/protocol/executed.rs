//! `Executed`: the runtime has a receipt for the mutation.

use std::sync::Arc;

use super::Verified;
use super::guard::ReservationGuard;
use super::session::Core;
use super::witness::{BoundLease, BoundReceipt, FreshPreview};
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::ExecutionReceipt;
use crate::eval::journal_types;
use crate::runtime::ComputerUseRuntime;

/// A mutation with a bound receipt, not yet verified.
#[must_use = "an executed action must be verified; dropping it queues its reservation on the reaper"]
pub struct Executed<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
    guard: ReservationGuard<R>,
    lease: BoundLease,
    receipt: BoundReceipt,
}

impl<R: ComputerUseRuntime> Executed<R> {
    pub(crate) fn new(
        core: Arc<Core<R>>,
        preview: FreshPreview,
        guard: ReservationGuard<R>,
        lease: BoundLease,
        receipt: BoundReceipt,
    ) -> Self {
        Self {
            core,
            preview,
            guard,
            lease,
            receipt,
        }
    }

    /// The receipt.
    pub fn receipt(&self) -> &ExecutionReceipt {
        self.receipt.get()
    }

    /// Asks the runtime whether the declared postcondition holds, then
    /// releases the reservation. A release failure after verification is an
    /// error ([`ComputerUseError::CleanupAfterSuccess`]), not hidden.
    pub async fn verify(self) -> Result<Verified, ComputerUseError> {
        let envelope = self.preview.envelope();
        let outcome = self
            .core
            .runtime
            .verify(self.receipt.get(), envelope.postcondition.as_ref())
            .await;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(err) => return Err(self.guard.fail(&envelope.action_id, err).await),
        };
        self.core
            .recorder
            .note(&envelope.action_id, journal_types::VERIFIED, || {
                json!({
                    "status": outcome.status(),
                    "verified": outcome.is_verified(),
                    "committed": outcome.is_committed(),
                    "receiptId": self.receipt.get().receipt_id,
                })
            });
        let released = self.guard.release().await;
        self.core.runtime.action_ended(&envelope.action_id);
        if let Err(cleanup) = released {
            return Err(ComputerUseError::CleanupAfterSuccess {
                status: outcome.status(),
                receipt_id: self.receipt.get().receipt_id.clone(),
                cleanup: Box::new(cleanup),
            });
        }
        Ok(Verified::new(self.lease, self.receipt, outcome))
    }
}
