//! Short-lived target reservations: a planner's claim on a window.

use serde::{Deserialize, Serialize};

use super::WindowId;

/// Where a reservation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ReservationState {
    Active,
    Released,
    Expired,
    Cancelled,
}

/// The target a reservation covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReservationScope {
    /// The application.
    pub app_id: String,
    /// The window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_id: Option<WindowId>,
}

/// The answer's `reservation`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TargetReservation {
    /// The reservation's id.
    pub reservation_id: String,
    /// Its revision.
    pub revision: u64,
    /// The intent (equals the action id).
    pub intent_id: String,
    /// The session.
    pub session_id: String,
    /// The principal.
    pub principal_id: String,
    /// The execution group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_group_id: Option<String>,
    /// The agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The target.
    pub scope: ReservationScope,
    /// Where it stands.
    pub state: ReservationState,
    /// When it was acquired (RFC 3339).
    pub acquired_at: String,
    /// When it expires (RFC 3339).
    pub expires_at: super::WireTime,
    /// Why it ended, when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
}
