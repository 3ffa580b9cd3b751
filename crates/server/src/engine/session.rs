//! Sessions: their lifecycle (upstream's states and transitions); the
//! controls that move them are in `calls::session`.
//!
//! A session is created, then runs. Pausing (or a take-over) revokes what
//! the session holds and parks it `paused_by_user` with the reason as its
//! `waitingReason`; resuming clears the reason. Stopping goes through
//! `stopping` to `stopped`; completing is allowed from `running` only.
//! Every change is a `session.state_changed` event `{from, to}`, with the
//! reason's digest and length (never its text) when there is one.

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::Refusal;
use super::answer::Answer;

/// Where a session may go from each state.
pub(super) const TRANSITIONS: &[(&str, &[&str])] = &[
    ("created", &["running", "stopped"]),
    (
        "running",
        &[
            "waiting_for_user",
            "paused_by_user",
            "paused_by_policy",
            "stopping",
            "completed",
            "failed",
        ],
    ),
    (
        "waiting_for_user",
        &["running", "paused_by_user", "stopping", "failed"],
    ),
    ("paused_by_user", &["running", "stopping", "stopped"]),
    (
        "paused_by_policy",
        &["running", "stopping", "failed", "stopped"],
    ),
    ("stopping", &["stopped", "failed"]),
];

/// The states a session ends in.
pub(super) const TERMINAL: &[&str] = &["completed", "failed", "stopped"];

pub(super) fn allowed(from: &str, to: &str) -> bool {
    TRANSITIONS
        .iter()
        .any(|(state, next)| *state == from && next.contains(&to))
}

pub(super) fn invalid(from: &str, to: &str) -> Refusal {
    Refusal::plain(format!("invalid session transition: {from} -> {to}"))
}

/// A session, as it goes on the wire.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Session {
    pub session_id: String,
    pub principal_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    pub state: String,
    pub revision: u64,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub updated: Option<OffsetDateTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<Value>,
    /// The agent that started it, by its credential's name (over TCP);
    /// `None` when a trusted caller (stdio, the host, the approver) did.
    #[serde(skip)]
    pub owner: Option<String>,
}

impl Session {
    pub(super) fn answer(&self) -> Answer {
        Answer::of(json!({ "session": self }))
    }

    /// Whether previews and executions may run in it.
    pub(crate) fn can_execute(&self) -> bool {
        self.state == "running" || self.state == "waiting_for_user"
    }

    pub(super) fn terminal(&self) -> bool {
        TERMINAL.contains(&self.state.as_str())
    }
}
