//! What counts as evidence that an action had its intended effect.
//!
//! A committed receipt says the runtime performed the action; it does not say
//! the effect happened. Only a `verification` object on the receipt's `result`
//! can say that, and only in the ways the seeds' table allows. Absence of
//! evidence is never evidence of success.

use std::fmt;

use serde_json::Value;

use crate::contracts::{ActionPostcondition, ExecutionReceipt, ReceiptStatus};

/// The result of verifying one action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerificationOutcome {
    /// The declared postcondition was observed to hold.
    Verified,
    /// The runtime performed the action; there is no evidence of its effect.
    CommittedUnverified {
        /// Why it is not verified.
        reason: String,
    },
    /// Not committed, or the evidence contradicts the postcondition.
    Failed {
        /// What went wrong.
        reason: String,
    },
}

impl VerificationOutcome {
    /// True only for [`VerificationOutcome::Verified`].
    pub fn is_verified(&self) -> bool {
        matches!(self, Self::Verified)
    }

    /// True when the runtime performed the action.
    pub fn is_committed(&self) -> bool {
        matches!(self, Self::Verified | Self::CommittedUnverified { .. })
    }

    /// How much this outcome claims: `Failed` < `CommittedUnverified` < `Verified`.
    fn rank(&self) -> u8 {
        match self {
            Self::Failed { .. } => 0,
            Self::CommittedUnverified { .. } => 1,
            Self::Verified => 2,
        }
    }

    /// This outcome, unless it claims more than `ceiling`: then `ceiling`.
    /// How the chain holds a runtime's verdict to the evidence table.
    pub fn at_most(self, ceiling: Self) -> Self {
        if self.rank() > ceiling.rank() {
            ceiling
        } else {
            self
        }
    }

    /// `completed`, `committed_unverified` or `verification_failed`.
    pub fn status(&self) -> &'static str {
        match self {
            Self::Verified => "completed",
            Self::CommittedUnverified { .. } => "committed_unverified",
            Self::Failed { .. } => "verification_failed",
        }
    }

    /// The explanation for anything short of verified.
    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::Verified => None,
            Self::CommittedUnverified { reason } | Self::Failed { reason } => Some(reason),
        }
    }
}

impl fmt::Display for VerificationOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.detail() {
            None => f.write_str(self.status()),
            Some(detail) => write!(f, "{}: {detail}", self.status()),
        }
    }
}

fn unverified(reason: impl Into<String>) -> VerificationOutcome {
    VerificationOutcome::CommittedUnverified {
        reason: reason.into(),
    }
}

fn failed(reason: impl Into<String>) -> VerificationOutcome {
    VerificationOutcome::Failed {
        reason: reason.into(),
    }
}

/// Applies the seeds' evidence table to a receipt.
///
/// | receipt evidence | outcome |
/// | --- | --- |
/// | receipt not `committed` | `Failed` |
/// | no postcondition declared | `CommittedUnverified` |
/// | `verification.satisfied: false` | `Failed` |
/// | `observedDigest` matches the expected digest | `Verified` |
/// | `observedDigest` differs | `Failed` |
/// | no `verification` object | `CommittedUnverified` |
/// | `verification` without `observedDigest`, digest expected | `CommittedUnverified` |
/// | existence only, `satisfied: true` | `Verified` |
/// | existence only, no `satisfied: true` | `CommittedUnverified` |
pub fn evaluate_evidence(
    receipt: &ExecutionReceipt,
    postcondition: Option<&ActionPostcondition>,
) -> VerificationOutcome {
    evaluate_with(receipt, postcondition, receipt_verification(receipt))
}

/// The `verification` object a receipt carries in its `result`, if any.
pub fn receipt_verification(receipt: &ExecutionReceipt) -> Option<&Value> {
    receipt
        .result
        .as_ref()
        .and_then(|result| result.get("verification"))
}

/// Applies the evidence table to a receipt and the `verification` evidence
/// gathered for it (from the receipt or elsewhere): the same table as
/// [`evaluate_evidence`], with the evidence given.
pub fn evaluate_with(
    receipt: &ExecutionReceipt,
    postcondition: Option<&ActionPostcondition>,
    verification: Option<&Value>,
) -> VerificationOutcome {
    if receipt.status != ReceiptStatus::Committed {
        return failed(format!(
            "the receipt's status is {:?}, not committed",
            receipt.status
        ));
    }
    let Some(postcondition) = postcondition else {
        return unverified("the action declared no postcondition, so nothing was observed");
    };
    let Some(verification) = verification.filter(|v| v.is_object()) else {
        return unverified("the receipt carries no verification evidence");
    };
    if verification.get("satisfied") == Some(&Value::Bool(false)) {
        return failed(
            "the runtime observed that the postcondition does not hold (satisfied: false)",
        );
    }
    match postcondition.expected_digest() {
        Some(expected) => match verification.get("observedDigest").and_then(Value::as_str) {
            Some(observed) if observed == expected => VerificationOutcome::Verified,
            Some(observed) => failed(format!(
                "observed digest {observed} differs from the expected {expected}"
            )),
            None => unverified(
                "the verification evidence has no observedDigest for the expected digest",
            ),
        },
        None => {
            if verification.get("satisfied") == Some(&Value::Bool(true)) {
                VerificationOutcome::Verified
            } else {
                unverified("the verification evidence does not state satisfied: true")
            }
        }
    }
}
