//! The one-writer control lease.

use serde::{Deserialize, Serialize};

use super::{ExecutionMode, WindowId};

/// Cooperative or exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseKind {
    /// Shares the desktop with the person.
    Cooperative,
    /// Takes the desktop (foreground only).
    Exclusive,
}

/// Where a lease stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum LeaseState {
    Active,
    Released,
    Expired,
    Revoked,
}

/// What a lease is limited to. An empty list means "not scoped".
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseBoundaries {
    /// Applications the lease covers.
    #[serde(default)]
    pub app_ids: Vec<String>,
    /// Windows the lease covers.
    #[serde(default)]
    pub window_ids: Vec<WindowId>,
    /// Displays the lease covers.
    #[serde(default)]
    pub display_ids: Vec<String>,
}

/// The answer's `lease`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlLease {
    /// The lease's id.
    pub lease_id: String,
    /// Its revision.
    pub revision: u64,
    /// The session.
    pub session_id: String,
    /// The principal.
    pub principal_id: String,
    /// The agent holding it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Cooperative or exclusive.
    pub kind: LeaseKind,
    /// The mode it authorizes.
    pub execution_mode: ExecutionMode,
    /// Where it stands.
    pub state: LeaseState,
    /// When it was acquired (RFC 3339).
    pub acquired_at: String,
    /// When it expires (RFC 3339).
    pub expires_at: super::WireTime,
    /// Executions it authorizes in all.
    pub action_budget: u32,
    /// Executions already counted against it.
    pub actions_used: u32,
    /// What it is limited to.
    #[serde(default)]
    pub boundaries: LeaseBoundaries,
    /// Why it ended, when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
}
