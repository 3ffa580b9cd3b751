//! What `preview_action` answers: the envelope, the capability, the policy.

use serde::{Deserialize, Serialize};

use super::{ActionEnvelope, ExecutionMode};

/// How the runtime would carry the action out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ExecutionBackend {
    Applescript,
    Javascript,
    Powershell,
    Scripting,
    Ax,
    Uia,
    Filesystem,
    Registry,
    Process,
    PhysicalInput,
    Browser,
    None,
}

/// How much the action disturbs the person at the desktop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Interference {
    None,
    VisualOverlayOnly,
    MayRaiseWindow,
    TakesForeground,
    MovesPhysicalPointer,
}

/// How the capability was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum VerificationSource {
    PlatformRule,
    LiveProbe,
    Adapter,
    Unknown,
}

/// An adapter certification attached to a capability.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct CapabilityCertification {
    pub certification_id: String,
    pub adapter_id: String,
    pub adapter_version: String,
    pub app_version: String,
    pub tool: String,
    pub action_contract_digest: String,
    pub probe_fingerprint: String,
    pub trace_digest: String,
    pub valid_until: String,
}

/// What the runtime can do for one operation in one application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionCapability {
    /// The application.
    pub app_id: String,
    /// The operation.
    pub operation: String,
    /// The backend that would perform it.
    pub backend: ExecutionBackend,
    /// Modes it supports.
    pub supported_modes: Vec<ExecutionMode>,
    /// How much it disturbs the user.
    pub interference: Interference,
    /// Confidence in this capability, 0 to 1.
    #[serde(with = "super::number")]
    pub confidence: f64,
    /// When it was last verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<String>,
    /// How it was established.
    pub verification_source: VerificationSource,
    /// Certification, when one applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certification: Option<CapabilityCertification>,
}

/// The policy's verdict on an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyVerdict {
    /// Allowed as is.
    Allow,
    /// Needs a person's confirmation.
    Confirm,
    /// Refused.
    Deny,
}

/// The policy decision and the digest of the policy that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyDecision {
    /// The verdict.
    pub decision: PolicyVerdict,
    /// Digest of the policy in force; an approval binds it.
    pub policy_digest: String,
    /// Why.
    pub reasons: Vec<String>,
}

/// Blocker codes a preview may carry.
pub mod blockers {
    /// A person must approve first.
    pub const APPROVAL_REQUIRED: &str = "approval_required";
    /// The action needs foreground mode.
    pub const FOREGROUND_REQUIRED: &str = "foreground_required";
    /// A mutation was asked for in shadow mode.
    pub const SHADOW_MUTATION: &str = "shadow_mutation";
    /// Sensitivity could not be established.
    pub const SENSITIVITY_UNAVAILABLE: &str = "sensitivity_unavailable";
    /// The postcondition cannot be checked.
    pub const POSTCONDITION_UNAVAILABLE: &str = "postcondition_unavailable";
}

/// The answer of `preview_action`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionPreview {
    /// The authoritative envelope. Boxed: it is most of a preview's size,
    /// and a preview is moved through every stage of a chain.
    pub envelope: Box<ActionEnvelope>,
    /// The capability that would be used.
    pub capability: ExecutionCapability,
    /// The policy decision.
    pub policy: PolicyDecision,
    /// True when the action may run without anything else.
    pub executable: bool,
    /// Why it may not run, when it may not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocker: Option<String>,
}
