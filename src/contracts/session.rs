//! Sessions, their events, follow-ups, completion evidence and deletion.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::WindowId;

/// One entry of a session's append-only event log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEvent {
    /// Schema version.
    pub schema_version: u32,
    /// The event's id.
    pub event_id: String,
    /// Its position in the session's log.
    pub sequence: u64,
    /// The session.
    pub session_id: String,
    /// The action it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_id: Option<String>,
    /// Its type (`action.started`, `action.committed`, `action.verified`, ...).
    #[serde(rename = "type")]
    pub event_type: String,
    /// When it happened (RFC 3339).
    pub at: String,
    /// The principal.
    pub principal_id: String,
    /// Type-specific details (`leaseId`, `receiptId`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
}

/// A page of events (`get_session_events`; page keys are snake_case).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEventPage {
    /// The events.
    pub events: Vec<SessionEvent>,
    /// Where the next page starts.
    pub next_sequence: u64,
}

/// An instruction added to a running session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFollowUp {
    /// Its id.
    pub follow_up_id: String,
    /// Its position.
    pub sequence: u64,
    /// The session.
    pub session_id: String,
    /// The principal who added it.
    pub principal_id: String,
    /// The instruction.
    pub instruction: String,
    /// When it was added (RFC 3339).
    pub created_at: String,
}

/// A page of follow-ups (`get_follow_ups`; page keys are snake_case).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FollowUpPage {
    /// The follow-ups.
    pub follow_ups: Vec<SessionFollowUp>,
    /// Where the next page starts.
    pub next_sequence: u64,
}

/// One postcondition reported at completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompletionPostcondition {
    /// What was expected.
    pub description: String,
    /// Whether it held.
    pub satisfied: bool,
    /// Hash of the evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_hash: Option<String>,
}

/// The evidence a completed session carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCompletion {
    /// A summary.
    pub summary: String,
    /// The postconditions checked.
    pub postconditions: Vec<CompletionPostcondition>,
    /// The last application touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_app_id: Option<String>,
    /// The last window touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_window_id: Option<WindowId>,
    /// Actions by receipt status.
    #[serde(default)]
    pub action_counts: BTreeMap<String, u64>,
    /// When it completed (RFC 3339).
    pub completed_at: String,
}

/// A runtime session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeSession {
    /// Its id.
    pub session_id: String,
    /// The principal.
    pub principal_id: String,
    /// The execution group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_group_id: Option<String>,
    /// The objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    /// Where it stands (`running`, `paused`, `stopped`, `completed`, ...).
    pub state: String,
    /// Why it waits or paused (`user_takeover` when the person's own input
    /// paused it), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_reason: Option<String>,
    /// Its revision.
    pub revision: u64,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// Completion evidence, once completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion: Option<SessionCompletion>,
}

/// What `delete_session` removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeletionResult {
    /// The session.
    pub session_id: String,
    /// Whether it was deleted.
    pub deleted: bool,
    /// Events deleted.
    pub deleted_events: u64,
    /// Receipts deleted.
    pub deleted_receipts: u64,
    /// Evidence frames deleted.
    pub deleted_evidence_frames: u64,
    /// Grants revoked.
    pub revoked_grants: u64,
    /// Events kept.
    pub retained_events: u64,
    /// The marker event left behind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention_marker_id: Option<String>,
}
