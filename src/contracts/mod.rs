//! The computer-use-mcp v8 wire types.
//!
//! Answers from the server are camelCase JSON; these types decode them and
//! write them back to equal JSON. Decoding proves shape, not provenance: a
//! well-formed lease of another session decodes fine, which is why
//! [`crate::binding`] exists. Where a published schema states an
//! invariant (approval grants, target sensitivity, postconditions), the type
//! holds it on decoding *and* on construction: the validated type is built
//! only through `TryFrom` its plain `*Fields` form, and serde goes the same way.

pub mod case;
pub mod catalogue;
mod corpus;
mod envelope;
mod extension;
mod grant;
pub mod labels;
mod lease;
pub mod limits;
mod number;
mod postcondition;
mod preview;
mod receipt;
mod reservation;
mod sensitivity;
mod session;
mod wire_time;

pub use corpus::{SafetyCorpus, SafetyExpectation, SafetyScenario};
pub use envelope::{
    ActionEnvelope, ActionProvenance, ActionResourceContext, Bounds, TargetEvidence,
};
pub use extension::{CREDENTIAL_CAPABILITY, EFFECT_CHECKS_CAPABILITY};
pub use grant::{ApprovalGrant, ApprovalGrantFields, ApprovalScope, SESSION_OPERATION_TOOLS};
pub use lease::{ControlLease, LeaseBoundaries, LeaseKind, LeaseState};
pub use postcondition::{ActionPostcondition, PostconditionFields};
pub use preview::{
    ActionPreview, CapabilityCertification, ExecutionBackend, ExecutionCapability, Interference,
    PolicyDecision, PolicyVerdict, VerificationSource, blockers,
};
pub use receipt::{ExecutionReceipt, ReceiptStatus};
pub use reservation::{ReservationScope, ReservationState, TargetReservation};
pub use sensitivity::{
    SECURE_FIELD_ROLE, SensitivityAssessment, SensitivityFields, SensitivitySignal,
    SensitivitySource, TargetSensitivityEvidence, names_a_secret,
};
pub use session::{
    CompletionPostcondition, FollowUpPage, RuntimeSession, SessionCompletion,
    SessionDeletionResult, SessionEvent, SessionEventPage, SessionFollowUp,
};
pub use wire_time::WireTime;

use std::fmt;

use serde::{Deserialize, Serialize};

/// How much of the desktop an action may touch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// Observation only; no mutation is possible.
    Shadow,
    /// Mutation without taking focus or the pointer.
    Background,
    /// Mutation that may take focus and the physical pointer.
    Foreground,
}

impl ExecutionMode {
    /// The wire spelling (`shadow`, `background`, `foreground`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shadow => "shadow",
            Self::Background => "background",
            Self::Foreground => "foreground",
        }
    }
}

impl fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of effect an action has, as the runtime classified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionClass {
    /// Reads only.
    Observe,
    /// Moves focus or selection.
    Navigate,
    /// Changes a value in a way that can be undone.
    EditReversible,
    /// Sends something outside the machine.
    CommunicateExternal,
    /// Touches authentication.
    Authentication,
    /// Moves money.
    Financial,
    /// Deletes or overwrites irrecoverably.
    Destructive,
    /// Changes privileges.
    PrivilegeChange,
    /// Reads or writes a secret.
    SecretAccess,
}

impl ActionClass {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Observe => "observe",
            Self::Navigate => "navigate",
            Self::EditReversible => "edit_reversible",
            Self::CommunicateExternal => "communicate_external",
            Self::Authentication => "authentication",
            Self::Financial => "financial",
            Self::Destructive => "destructive",
            Self::PrivilegeChange => "privilege_change",
            Self::SecretAccess => "secret_access",
        }
    }
}

impl fmt::Display for ActionClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of data an action handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataLabel {
    /// Public data.
    Public,
    /// Private data.
    Private,
    /// A credential.
    Credential,
    /// Payment data.
    Payment,
    /// Health data.
    Health,
    /// Not known.
    Unknown,
}

impl DataLabel {
    /// Every label, in the protocol's order.
    pub const ALL: [DataLabel; 6] = [
        Self::Public,
        Self::Private,
        Self::Credential,
        Self::Payment,
        Self::Health,
        Self::Unknown,
    ];

    /// Every label's wire spelling, in the protocol's order: the one list
    /// the library's and the server's schemas name.
    pub const NAMES: [&'static str; 6] = [
        Self::ALL[0].as_str(),
        Self::ALL[1].as_str(),
        Self::ALL[2].as_str(),
        Self::ALL[3].as_str(),
        Self::ALL[4].as_str(),
        Self::ALL[5].as_str(),
    ];

    /// The wire spelling (`public`, `private`, `credential`, `payment`,
    /// `health`, `unknown`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Private => "private",
            Self::Credential => "credential",
            Self::Payment => "payment",
            Self::Health => "health",
            Self::Unknown => "unknown",
        }
    }
}

impl fmt::Display for DataLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a JSON value is (`a string`, `an object`, ...), never what it
/// holds: how an error names a value that may carry a secret.
pub fn json_kind(value: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A window identifier: a number on most platforms, a string on some.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum WindowId {
    /// A numeric window id.
    Number(u64),
    /// A textual window id.
    Name(String),
}

impl fmt::Display for WindowId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(number) => write!(f, "{number}"),
            Self::Name(name) => f.write_str(name),
        }
    }
}

impl From<u64> for WindowId {
    fn from(value: u64) -> Self {
        Self::Number(value)
    }
}

/// The largest string this crate accepts in a bounded wire field.
pub const MAX_ID_LEN: usize = 256;

pub(crate) fn check_len(
    object: &'static str,
    field: &'static str,
    value: &str,
    min: usize,
    max: usize,
) -> Result<(), crate::ComputerUseError> {
    let len = value.chars().count();
    if len < min || len > max {
        return Err(crate::ComputerUseError::invalid(
            object,
            field,
            format!("a string of {min} to {max} characters"),
            format!("{len} characters"),
        ));
    }
    Ok(())
}
