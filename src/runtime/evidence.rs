//! What counts as evidence that an action had its intended effect.
//!
//! A committed receipt says the runtime performed the action; it does not say
//! the effect happened. Only a `verification` object on the receipt's `result`
//! can say that, and only in the ways the seeds' table allows. Absence of
//! evidence is never evidence of success.

use std::fmt;

use serde_json::Value;

use crate::contracts::{
    ActionPostcondition, ExecutionReceipt, PostconditionFields, ReceiptStatus, TargetEvidence,
    WindowId,
};

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

/// Why `postcondition` cannot fail for an action on `target`, when it
/// cannot: it held before the action, so its holding afterwards is no
/// evidence of the effect, and the chain ends such an action
/// `CommittedUnverified` with this reason, never `Verified`.
///
/// The case named is the one an input action invites: "the target window
/// exists", where the window is the one the action's own target evidence
/// observed. Typing into a terminal is proven by what the terminal wrote
/// (a file named as the action's resource), not by the terminal still
/// being open. A postcondition that can fail (the window must be gone,
/// another window must appear, a value or a file's content digest) is
/// judged by the evidence table as usual.
///
/// ```
/// use adk_computer_use::contracts::{ActionPostcondition, PostconditionFields};
/// use adk_computer_use::runtime::proves_nothing;
///
/// let stays = ActionPostcondition::try_from(PostconditionFields::Window { window_id: 7, exists: true })?;
/// let gone = ActionPostcondition::try_from(PostconditionFields::Window { window_id: 7, exists: false })?;
/// # let target: adk_computer_use::contracts::TargetEvidence = serde_json::from_value(serde_json::json!({
/// #     "platform": "linux", "appId": "xterm", "windowId": 7, "observationId": "o-1",
/// #     "confidence": 1, "capturedAt": "2026-01-01T00:00:00Z"}))?;
/// assert!(proves_nothing(&stays, Some(&target)).is_some());
/// assert!(proves_nothing(&gone, Some(&target)).is_none());
/// // The same window named as text ("7"), as a lenient runtime may send it.
/// # let named: adk_computer_use::contracts::TargetEvidence = serde_json::from_value(serde_json::json!({
/// #     "platform": "linux", "appId": "xterm", "windowId": "7", "observationId": "o-1",
/// #     "confidence": 1, "capturedAt": "2026-01-01T00:00:00Z"}))?;
/// assert!(proves_nothing(&stays, Some(&named)).is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn proves_nothing(
    postcondition: &ActionPostcondition,
    target: Option<&TargetEvidence>,
) -> Option<String> {
    let target_window = target.and_then(|t| t.window_id.as_ref());
    match postcondition.fields() {
        PostconditionFields::Window {
            window_id,
            exists: true,
            // Compared as binding compares windows (by their text), so a target
            // named `"7"` is the window 7 too.
        } if target_window.is_some()
            && crate::binding::window_text(target_window)
                == crate::binding::window_text(Some(&WindowId::Number(*window_id))) =>
        {
            Some(format!(
                "the postcondition cannot fail: window {window_id} is the action's observed target, \
             so it existed before the action and its still existing proves nothing about the \
             effect (name what the action changes: a file as its resource, an element's value)"
            ))
        }
        _ => None,
    }
}
