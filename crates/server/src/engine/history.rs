//! What a session keeps besides its state: its follow-up instructions (its
//! event log as an audit export page and its deletion are handled in
//! `calls::history`).

use serde::Serialize;

/// An instruction added to a session.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FollowUp {
    pub follow_up_id: String,
    pub sequence: u64,
    pub session_id: String,
    pub principal_id: String,
    pub instruction: String,
    pub created_at: String,
}
