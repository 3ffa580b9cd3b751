//! `Verified`: the end of a chain that ran.

use super::witness::{BoundLease, BoundReceipt};
use crate::contracts::ExecutionReceipt;
use crate::runtime::VerificationOutcome;

/// A finished action: its receipt and what verification found. The
/// reservation has been released.
#[must_use = "the verification outcome says whether the action's effect was observed"]
#[derive(Debug)]
pub struct Verified {
    lease: BoundLease,
    receipt: BoundReceipt,
    outcome: VerificationOutcome,
}

impl Verified {
    pub(crate) fn new(
        lease: BoundLease,
        receipt: BoundReceipt,
        outcome: VerificationOutcome,
    ) -> Self {
        Self {
            lease,
            receipt,
            outcome,
        }
    }

    /// What verification found.
    pub fn outcome(&self) -> &VerificationOutcome {
        &self.outcome
    }

    /// The action's id.
    pub fn action_id(&self) -> &str {
        // The receipt was bound to the envelope's action id.
        &self.receipt.get().action_id
    }

    /// The lease the mutation ran under.
    pub fn lease_id(&self) -> &str {
        &self.lease.get().lease_id
    }

    /// The receipt's id.
    pub fn receipt_id(&self) -> &str {
        &self.receipt.get().receipt_id
    }

    /// The receipt.
    pub fn receipt(&self) -> &ExecutionReceipt {
        self.receipt.get()
    }

    /// True when the runtime performed the action.
    pub fn committed(&self) -> bool {
        self.outcome.is_committed()
    }

    /// True when the postcondition was observed to hold.
    pub fn verified(&self) -> bool {
        self.outcome.is_verified()
    }
}
