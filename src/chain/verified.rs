//! `Verified`: the end of a chain that ran.
//!
//! Two questions are easy to confuse here, so each has its own name:
//!
//! - [`Verified::performed`]: did the runtime perform the action? Taken from
//!   the receipt. This is what a retry decision must use: when it is true,
//!   the effect happened (whatever verification found), and running the
//!   action again under a new id would do it twice.
//! - [`Verified::outcome`]: what the evidence says about the effect, by the
//!   seeds' table (`Verified`, `CommittedUnverified`, `Failed`). `Failed`
//!   covers a performed action whose evidence contradicts its postcondition.

use std::sync::Arc;

use super::witness::BoundReceipt;
use crate::contracts::{ControlLease, ExecutionReceipt, ReceiptStatus};
use crate::runtime::VerificationOutcome;

/// A finished action: its receipt and what verification found. The lease and
/// the reservation have been released.
#[must_use = "the verification outcome says whether the action's effect was observed"]
#[derive(Debug)]
pub struct Verified {
    lease: Arc<ControlLease>,
    receipt: BoundReceipt,
    outcome: VerificationOutcome,
}

impl Verified {
    pub(crate) fn new(
        lease: Arc<ControlLease>,
        receipt: BoundReceipt,
        outcome: VerificationOutcome,
    ) -> Self {
        Self {
            lease,
            receipt,
            outcome,
        }
    }

    /// What the evidence says about the effect: match on it. `Verified`
    /// only when the declared postcondition was observed to hold;
    /// `CommittedUnverified` when the runtime performed the action but
    /// nothing shows its effect; `Failed` otherwise.
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
        &self.lease.lease_id
    }

    /// The receipt's id.
    pub fn receipt_id(&self) -> &str {
        &self.receipt.get().receipt_id
    }

    /// The receipt.
    pub fn receipt(&self) -> &ExecutionReceipt {
        self.receipt.get()
    }

    /// True when the runtime performed the action: its receipt is
    /// `committed`. Use this, not the outcome, to decide on a retry: a
    /// performed action must not be run again.
    pub fn performed(&self) -> bool {
        self.receipt.get().status == ReceiptStatus::Committed
    }
}
