//! `Executed`: the runtime has a receipt for the mutation.

use std::sync::Arc;

use super::Verified;
use super::guard::ActionGuard;
use super::session::Core;
use super::witness::{BoundReceipt, FreshPreview};
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::{ControlLease, ExecutionReceipt};
use crate::journal::events;
use crate::runtime::{
    ComputerUseRuntime, VerificationOutcome, evaluate_with, why_no_postcondition,
};

/// A mutation with a bound receipt, not yet verified.
#[must_use = "an executed action must be verified; dropping it queues its lease and reservation on the reaper"]
pub struct Executed<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
    guard: ActionGuard<R>,
    lease: Arc<ControlLease>,
    receipt: BoundReceipt,
}

impl<R: ComputerUseRuntime> Executed<R> {
    pub(crate) fn new(
        core: Arc<Core<R>>,
        preview: FreshPreview,
        guard: ActionGuard<R>,
        lease: Arc<ControlLease>,
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

    /// Gathers the runtime's evidence that the declared postcondition holds,
    /// judges it by the evidence table, then releases the lease and the
    /// reservation. A release failure after verification is an error
    /// ([`ComputerUseError::CleanupAfterSuccess`]), not hidden.
    ///
    /// The postcondition judged is the one that was proposed: the preview
    /// was refused unless the envelope's postcondition equals it.
    pub async fn verify(self) -> Result<Verified, ComputerUseError> {
        let envelope = self.preview.envelope();
        let postcondition = envelope.postcondition.as_ref();
        let receipt = self.receipt.get();
        let evidence = self.core.runtime.evidence(receipt, postcondition).await;
        // The evidence table is the one judge: the runtime gathers evidence,
        // never an outcome. Evidence that could not be gathered is none, but
        // the receipt still says whether the action was performed, so the
        // chain ends here all the same.
        let gathered = evidence.is_ok();
        let mut outcome = match evidence {
            Ok(evidence) => evaluate_with(receipt, postcondition, evidence.as_ref()),
            Err(err) => VerificationOutcome::CommittedUnverified {
                reason: format!("the evidence could not be gathered: {err}"),
            }
            .at_most(evaluate_with(receipt, postcondition, None)),
        };
        // Without a postcondition, the reason says why none was derived
        // (a failure to gather evidence keeps its own reason).
        if postcondition.is_none()
            && gathered
            && let VerificationOutcome::CommittedUnverified { reason } = &mut outcome
        {
            *reason = why_no_postcondition(
                &*self.core.runtime,
                &envelope.tool,
                self.preview.arguments(),
                envelope.target.as_ref(),
            );
        }
        self.core
            .recorder
            .note(&envelope.action_id, events::VERIFIED, || {
                json!({
                    "status": outcome.status(),
                    "verified": outcome.is_verified(),
                    "committed": outcome.is_committed(),
                    "receiptId": receipt.receipt_id,
                })
            });
        let released = self.guard.release().await;
        // The action's entries are written before its end is reported.
        self.core.recorder.flush().await;
        if let Err(cleanup) = released {
            return Err(ComputerUseError::CleanupAfterSuccess {
                status: outcome.status(),
                outcome: Box::new(outcome),
                performed: receipt.status == crate::contracts::ReceiptStatus::Committed,
                receipt_id: receipt.receipt_id.clone(),
                cleanup: Box::new(cleanup),
            });
        }
        Ok(Verified::new(self.lease, self.receipt, outcome))
    }
}
