//! One error type for the whole crate.
//!
//! Every failure a caller can see names what was expected and what came back,
//! so a refusal can be matched on in code (`field()`) and read by a person. No
//! variant ever carries a bearer token: the only secrets this crate touches are
//! the checkpoint sealing key and nothing of it appears here.

use thiserror::Error;

/// Everything that can go wrong while governing a desktop action.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ComputerUseError {
    /// A session is being built for something the runtime does not act
    /// for: read `session` as what this session was built for and `runtime`
    /// as what the runtime acts in.
    #[error(
        "this session was built for {what} {session:?}; the runtime acts for {what} {runtime:?}"
    )]
    BuiltForAnother {
        /// What differs (`principal`, ...).
        what: &'static str,
        /// What the session was built for.
        session: String,
        /// What the runtime acts in.
        runtime: String,
    },

    /// A runtime response is well formed but bound to something else: another
    /// session, principal, agent, action, digest or target.
    #[error(
        "{object}.{field} does not match the request: expected {expected:?}, got {actual:?}; the response was rejected"
    )]
    IdentityMismatch {
        /// The wire object that was checked (`ControlLease`, `TargetReservation`, ...).
        object: &'static str,
        /// The camelCase wire field that differed.
        field: &'static str,
        /// The value the request bound it to.
        expected: String,
        /// The value that came back.
        actual: String,
    },

    /// A value is present and correctly bound but does not satisfy a rule
    /// (an exhausted budget, an inactive state, an unparseable timestamp, a
    /// target outside the lease's boundaries, a schema constraint).
    #[error("{object}.{field} is not acceptable: expected {expected}, got {actual}")]
    InvalidField {
        /// The object that was checked.
        object: &'static str,
        /// The camelCase field that broke the rule.
        field: &'static str,
        /// What the rule requires.
        expected: String,
        /// What was found.
        actual: String,
    },

    /// A time-bounded object is past its `expiresAt`.
    #[error("{object} expired: {field} is {expires_at}, which is not after now ({now})")]
    Expired {
        /// The object that expired.
        object: &'static str,
        /// The field holding the expiry.
        field: &'static str,
        /// The expiry as it came back.
        expires_at: String,
        /// The time of the check.
        now: String,
    },

    /// A record that carries its own integrity proof does not hold: a
    /// journal's hash chain is broken or truncated, a receipt's seal does
    /// not match its contents. The record was altered after it was written.
    #[error("{object}.{field} fails its integrity check: expected {expected}, found {actual}")]
    Integrity {
        /// The record that was checked (`JournalEntry`, `EvaluationReceipt`, ...).
        object: &'static str,
        /// The field whose value the proof contradicts.
        field: &'static str,
        /// What the proof requires.
        expected: String,
        /// What the record holds.
        actual: String,
    },

    /// Reading or writing local storage failed (a journal file, a
    /// checkpoint directory).
    #[error("could not {operation} {path}: {message}")]
    Storage {
        /// What was being done (`open the journal`, ...).
        operation: String,
        /// The file or directory.
        path: String,
        /// The system's reason.
        message: String,
    },

    /// Bytes or JSON could not be decoded into the expected type.
    #[error("could not decode {what}: {message}")]
    Decode {
        /// What was being decoded.
        what: String,
        /// The decoder's reason.
        message: String,
    },

    /// The connection to the runtime failed.
    #[error("transport failure during {operation}: {message}")]
    Transport {
        /// The runtime call in flight.
        operation: String,
        /// What the transport reported.
        message: String,
    },

    /// The runtime answered with a refusal and an error code.
    #[error("runtime refused {operation} with code {code:?}: {message}")]
    Refused {
        /// The runtime call that was refused.
        operation: String,
        /// The runtime's machine-readable code (`lease_conflict`,
        /// `stale_target`, ...; `invalid_arguments` for arguments that fail
        /// the server's input schema).
        code: String,
        /// The runtime's human message (or, when it sent none, what else it
        /// said).
        message: String,
        /// Whatever context the runtime gave beside the code (upstream's
        /// `details`, the ids it named, a receipt it recorded), as it came.
        details: Option<Box<serde_json::Value>>,
    },

    /// The caller asked for something malformed or contradictory.
    #[error("invalid request: {field}: {message}")]
    InvalidRequest {
        /// The input that was wrong.
        field: String,
        /// Why it was refused.
        message: String,
    },

    /// The runtime does not implement this operation.
    #[error("{operation} is not supported by this runtime")]
    Unsupported {
        /// The operation that was asked for.
        operation: String,
    },

    /// The verified identity does not hold the scope this step needs.
    #[error("not authorized: scope {required} is required; {reason}")]
    Unauthorized {
        /// The scope the step needs.
        required: String,
        /// Why it was not granted.
        reason: String,
    },

    /// A sealed checkpoint, or a decision beside it, was refused.
    #[error("checkpoint {id}: {refusal}")]
    Checkpoint {
        /// The checkpoint id.
        id: String,
        /// Why it was refused.
        refusal: Box<crate::chain::CheckpointRefusal>,
    },

    /// The mutating call failed in a way that leaves its effect in doubt: the
    /// connection broke while it was in flight, or its answer could not be
    /// read. The runtime may or may not have acted. A retry must reuse
    /// `action_id`, so that a runtime that did act replays its receipt
    /// instead of acting twice.
    #[error(
        "the outcome of action {action_id} is unknown (the runtime may have performed it): {cause}; retry only with the same action id"
    )]
    OutcomeUnknown {
        /// The action whose outcome is unknown; the safe retry reuses it.
        action_id: String,
        /// What broke.
        cause: Box<ComputerUseError>,
    },

    /// A bounded wait ran out: the call was cancelled (the server is told)
    /// and nothing was granted to this action.
    #[error("{operation} did not answer within {waited_ms} ms; the request was cancelled")]
    TimedOut {
        /// The call that was waited for (`acquire_control_lease`, ...).
        operation: String,
        /// How long it was waited for, in milliseconds.
        waited_ms: u64,
    },

    /// The action's target could not be found in what was observed, so no
    /// evidence was derived for it and nothing was sent to the runtime.
    #[error("no target evidence for {target}: {reason}; observe a round that shows it")]
    TargetNotObserved {
        /// The application and window asked for.
        target: String,
        /// What the observation lacked.
        reason: String,
    },

    /// A person denied the suspended action: it ends here, its checkpoint
    /// retired; nothing was reserved or performed.
    #[error("action {action_id} was denied: {reason}")]
    Denied {
        /// The action that was denied.
        action_id: String,
        /// The person's reason.
        reason: String,
    },

    /// A task lease cannot be spent (or an action spent from it cannot
    /// run): it was released or dropped, belongs to another session, or an
    /// earlier action spent from it has not ended. Nothing was sent.
    #[error("task lease {lease_id} cannot be used: {refusal}")]
    TaskLease {
        /// The task lease.
        lease_id: String,
        /// Why it cannot be used.
        refusal: crate::chain::TaskLeaseRefusal,
    },

    /// The session was shut down: its stages can take no further step, and
    /// what they held was released by the shutdown.
    #[error("the session was shut down; {operation} is refused")]
    SessionClosed {
        /// The step that was refused.
        operation: &'static str,
    },

    /// The primary failure happened and the cleanup that followed it (the
    /// release of the reservation) failed too. The primary always comes first.
    #[error("{primary}; cleanup also failed: {cleanup}")]
    WithCleanup {
        /// What made the chain stop.
        primary: Box<ComputerUseError>,
        /// What went wrong while releasing the reservation afterwards.
        cleanup: Box<ComputerUseError>,
    },

    /// The action was verified, but giving back its lease or reservation
    /// failed. The outcome is not hidden: it is reported here with the
    /// release failure.
    #[error(
        "the action finished with status {status} (performed: {performed}{}), but cleanup failed: {cleanup}",
        outcome.detail().map(|reason| format!(", reason: {reason}")).unwrap_or_default()
    )]
    CleanupAfterSuccess {
        /// The verification status the action reached (`completed`, ...).
        status: &'static str,
        /// The whole outcome, with its reason (why it is unverified, or
        /// what failed), as the chain would have returned it.
        outcome: Box<crate::runtime::VerificationOutcome>,
        /// Whether the runtime performed the action (its receipt is
        /// `committed`): what a retry decision must use.
        performed: bool,
        /// The receipt of the committed action.
        receipt_id: String,
        /// The release failure.
        cleanup: Box<ComputerUseError>,
    },
}

impl ComputerUseError {
    /// A refusal of checkpoint `id`.
    pub(crate) fn checkpoint(
        id: impl std::fmt::Display,
        refusal: crate::chain::CheckpointRefusal,
    ) -> Self {
        Self::Checkpoint {
            id: id.to_string(),
            refusal: Box::new(refusal),
        }
    }

    /// Why a checkpoint was refused, for [`ComputerUseError::Checkpoint`]
    /// (also when it is the primary failure of a
    /// [`ComputerUseError::WithCleanup`]).
    pub fn checkpoint_refusal(&self) -> Option<&crate::chain::CheckpointRefusal> {
        match self {
            Self::Checkpoint { refusal, .. } => Some(&**refusal),
            Self::WithCleanup { primary, .. } => primary.checkpoint_refusal(),
            _ => None,
        }
    }

    /// The wire field this error is about, when it is about one field.
    ///
    /// For [`ComputerUseError::WithCleanup`] this is the primary failure's field.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::IdentityMismatch { field, .. }
            | Self::InvalidField { field, .. }
            | Self::Expired { field, .. }
            | Self::Integrity { field, .. } => Some(field),
            Self::InvalidRequest { field, .. } => Some(field),
            Self::WithCleanup { primary, .. } => primary.field(),
            Self::OutcomeUnknown { cause, .. } => cause.field(),
            _ => None,
        }
    }

    /// A short, stable name for the kind of failure (`identity_mismatch`,
    /// `expired`, `refused`, ...), for logs and audit records.
    pub fn class(&self) -> &'static str {
        match self {
            Self::IdentityMismatch { .. } => "identity_mismatch",
            Self::InvalidField { .. } => "invalid_field",
            Self::Expired { .. } => "expired",
            Self::Decode { .. } => "decode",
            Self::Denied { .. } => "denied",
            Self::BuiltForAnother { .. } => "built_for_another",
            Self::Integrity { .. } => "integrity",
            Self::Storage { .. } => "storage",
            Self::Transport { .. } => "transport",
            Self::Refused { .. } => "refused",
            Self::InvalidRequest { .. } => "invalid_request",
            Self::Unsupported { .. } => "unsupported",
            Self::Unauthorized { .. } => "unauthorized",
            Self::Checkpoint { .. } => "checkpoint",
            Self::WithCleanup { .. } => "with_cleanup",
            Self::CleanupAfterSuccess { .. } => "cleanup_after_success",
            Self::OutcomeUnknown { .. } => "outcome_unknown",
            Self::SessionClosed { .. } => "session_closed",
            Self::TaskLease { .. } => "task_lease",
            Self::TimedOut { .. } => "timed_out",
            Self::TargetNotObserved { .. } => "target_not_observed",
        }
    }

    /// The runtime's refusal code, for [`ComputerUseError::Refused`].
    pub fn refusal_code(&self) -> Option<&str> {
        match self {
            Self::Refused { code, .. } => Some(code),
            Self::WithCleanup { primary, .. } => primary.refusal_code(),
            _ => None,
        }
    }

    /// Joins a primary failure with the result of the cleanup that followed.
    ///
    /// A successful cleanup leaves the primary untouched; a failed one wraps
    /// both, primary first, so the error is the same on every run.
    pub fn with_cleanup(primary: Self, cleanup: Result<(), Self>) -> Self {
        match cleanup {
            Ok(()) => primary,
            Err(cleanup) => Self::WithCleanup {
                primary: Box::new(primary),
                cleanup: Box::new(cleanup),
            },
        }
    }

    /// Classifies a failure of the mutating call or of its answer: one that
    /// leaves the effect in doubt (transport, an undecodable answer, a
    /// receipt bound to something else or with an unsettled status) becomes
    /// [`ComputerUseError::OutcomeUnknown`]; a typed refusal stays as it is
    /// (nothing was performed).
    pub(crate) fn after_mutation(action_id: &str, err: Self) -> Self {
        match err {
            // The server says itself it does not know (upstream's
            // `indeterminate`: the effect boundary was crossed).
            // Or answers in words only (an exception the server's MCP layer
            // turned into text): nothing says it happened before the effect.
            Self::Refused { ref code, .. }
                if code == "indeterminate" || code == "unstructured_refusal" =>
            {
                Self::OutcomeUnknown {
                    action_id: action_id.to_owned(),
                    cause: Box::new(err),
                }
            }
            // Refused before acting, or refused by a local check before the
            // call was made: nothing was performed.
            Self::Refused { .. }
            | Self::Unauthorized { .. }
            | Self::Unsupported { .. }
            | Self::InvalidRequest { .. }
            | Self::SessionClosed { .. }
            | Self::TaskLease { .. }
            | Self::OutcomeUnknown { .. } => err,
            // The answer broke in transit, could not be read, or is about
            // something else (a receipt bound elsewhere, a status that
            // settles nothing): the runtime may have acted.
            _ => Self::OutcomeUnknown {
                action_id: action_id.to_owned(),
                cause: Box::new(err),
            },
        }
    }

    pub(crate) fn decode(what: impl Into<String>, message: impl ToString) -> Self {
        Self::Decode {
            what: what.into(),
            message: message.to_string(),
        }
    }

    pub(crate) fn invalid(
        object: &'static str,
        field: &'static str,
        expected: impl Into<String>,
        actual: impl Into<String>,
    ) -> Self {
        Self::InvalidField {
            object,
            field,
            expected: expected.into(),
            actual: actual.into(),
        }
    }
}
