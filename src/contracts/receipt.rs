//! The runtime's record of one execution.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where an execution stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiptStatus {
    /// Accepted, not yet performed.
    Pending,
    /// Being performed.
    Running,
    /// Performed.
    Committed,
    /// Not performed.
    Failed,
    /// Unknown whether it was performed (a crash or an interruption mid-way).
    Indeterminate,
    /// Performed, then undone.
    RolledBack,
}

/// The answer's `receipt`: what the runtime says it did, bound to the action
/// by `sessionId`, `actionId` and `actionDigest`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionReceipt {
    /// The receipt's id.
    pub receipt_id: String,
    /// The session.
    pub session_id: String,
    /// The action.
    pub action_id: String,
    /// The digest of the work performed (must equal the envelope's `argsDigest`).
    pub action_digest: String,
    /// The attempt number.
    pub attempt: u32,
    /// Where it stands.
    pub status: ReceiptStatus,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// The tool's result; may hold a `verification` object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// The error, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}
