//! `Executed`: the runtime has a receipt for the mutation.

use std::sync::Arc;

use super::Verified;
use super::core::Core;
use super::guard::ActionGuard;
use super::witness::{BoundReceipt, FreshPreview};
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::{ControlLease, ExecutionReceipt};
use crate::journal::events;
use crate::runtime::{
    ComputerUseRuntime, VerificationOutcome, evaluate_with, proves_nothing, why_no_postcondition,
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

    /// Gathers the runtime's evidence that the declared postcondition holds
    /// and judges it by the evidence table while the reservation is
    /// released, and the lease too when the evidence is a record the runtime
    /// made at execution ([`ComputerUseRuntime::evidence_is_recorded`]; then
    /// the three calls cost one round trip); evidence read from the live
    /// desktop is read before the lease goes back. The mutation has
    /// answered first, so no release can race it. A
    /// release failure after verification is an error
    /// ([`ComputerUseError::CleanupAfterSuccess`]), not hidden. (So the
    /// journal's verification entry and its release entries may interleave
    /// when both are in flight.)
    ///
    /// The postcondition judged is the one that was proposed: the preview
    /// was refused unless the envelope's postcondition equals it. An action
    /// without one asks the runtime for no evidence: none could make it more
    /// than `committed_unverified`.
    pub async fn verify(self) -> Result<Verified, ComputerUseError> {
        let Self {
            core,
            preview,
            guard,
            lease,
            receipt,
        } = self;
        // Evidence read from the live desktop is read while the lease is
        // still held; a record made at execution (or none at all) needs no
        // lease, and everything goes back at once.
        let (outcome, released) =
            if preview.envelope().postcondition.is_none() || core.runtime.evidence_is_recorded() {
                tokio::join!(judge(&core, &preview, &receipt), guard.release())
            } else {
                guard
                    .release_lease_after(judge(&core, &preview, &receipt))
                    .await
            };
        // The action's entries are written before its end is reported.
        core.recorder.flush().await;
        core.report(preview.envelope(), || super::ReportedOutcome::of(&outcome))
            .await;
        if let Err(cleanup) = released {
            let receipt = receipt.get();
            return Err(ComputerUseError::CleanupAfterSuccess {
                status: outcome.status(),
                outcome: Box::new(outcome),
                performed: receipt.status == crate::contracts::ReceiptStatus::Committed,
                receipt_id: receipt.receipt_id.clone(),
                cleanup: Box::new(cleanup),
            });
        }
        Ok(Verified::new(lease, receipt, outcome))
    }
}

/// The outcome of an executed action: its evidence, gathered only when a
/// postcondition could use it, judged by the evidence table, and recorded.
async fn judge<R: ComputerUseRuntime>(
    core: &Core<R>,
    preview: &FreshPreview,
    receipt: &BoundReceipt,
) -> VerificationOutcome {
    let envelope = preview.envelope();
    let receipt = receipt.get();
    let outcome = match envelope.postcondition.as_ref() {
        None => match evaluate_with(receipt, None, None) {
            // Why nothing was declared or derived, not only that.
            VerificationOutcome::CommittedUnverified { .. } => {
                VerificationOutcome::CommittedUnverified {
                    reason: why_no_postcondition(
                        &*core.runtime,
                        &envelope.tool,
                        preview.arguments(),
                        envelope.target.as_ref(),
                    ),
                }
            }
            other => other,
        },
        Some(postcondition) => {
            // The evidence table is the one judge: the runtime gathers
            // evidence, never an outcome. Evidence that could not be
            // gathered is none, but the receipt still says whether the
            // action was performed, so the chain ends here all the same.
            let judged = match core.runtime.evidence(receipt, Some(postcondition)).await {
                Ok(evidence) => evaluate_with(receipt, Some(postcondition), evidence.as_ref()),
                Err(err) => VerificationOutcome::CommittedUnverified {
                    reason: format!("the evidence could not be gathered: {err}"),
                }
                .at_most(evaluate_with(receipt, Some(postcondition), None)),
            };
            // A check that held before the action is no evidence of it: at
            // most committed, whatever the runtime observed (it still fails
            // when the runtime saw it not hold).
            match proves_nothing(postcondition, envelope.target.as_ref()) {
                Some(reason) => judged.at_most(VerificationOutcome::CommittedUnverified { reason }),
                None => judged,
            }
        }
    };
    core.recorder
        .note(&envelope.action_id, events::VERIFIED, || {
            json!({
                "status": outcome.status(),
                "verified": outcome.is_verified(),
                "committed": outcome.is_committed(),
                "receiptId": receipt.receipt_id,
            })
        });
    outcome
}
