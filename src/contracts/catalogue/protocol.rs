//! The protocol's own tools: the 23 a v8 server lists in `tools/list`
//! (sessions, approvals, follow-ups, reservations, capabilities, previews,
//! the execution, the lease, the emergency stop), each named once with its
//! group. Their argument schemas are the server's to publish; the library
//! names them to call them.

/// Each protocol tool's name, spelled once.
pub mod name {
    /// `onboarding`.
    pub const ONBOARDING: &str = "onboarding";
    /// `start_session`.
    pub const START_SESSION: &str = "start_session";
    /// `get_session`.
    pub const GET_SESSION: &str = "get_session";
    /// `pause_session`.
    pub const PAUSE_SESSION: &str = "pause_session";
    /// `resume_session`.
    pub const RESUME_SESSION: &str = "resume_session";
    /// `take_over`.
    pub const TAKE_OVER: &str = "take_over";
    /// `stop_session`.
    pub const STOP_SESSION: &str = "stop_session";
    /// `approve_action`.
    pub const APPROVE_ACTION: &str = "approve_action";
    /// `complete_session`.
    pub const COMPLETE_SESSION: &str = "complete_session";
    /// `get_session_events`.
    pub const GET_SESSION_EVENTS: &str = "get_session_events";
    /// `submit_follow_up`.
    pub const SUBMIT_FOLLOW_UP: &str = "submit_follow_up";
    /// `get_follow_ups`.
    pub const GET_FOLLOW_UPS: &str = "get_follow_ups";
    /// `delete_session`.
    pub const DELETE_SESSION: &str = "delete_session";
    /// `prune_sessions`.
    pub const PRUNE_SESSIONS: &str = "prune_sessions";
    /// `reserve_target`.
    pub const RESERVE_TARGET: &str = "reserve_target";
    /// `release_target_reservation`.
    pub const RELEASE_TARGET_RESERVATION: &str = "release_target_reservation";
    /// `get_execution_capabilities`.
    pub const GET_EXECUTION_CAPABILITIES: &str = "get_execution_capabilities";
    /// `get_certification_trace`.
    pub const GET_CERTIFICATION_TRACE: &str = "get_certification_trace";
    /// `preview_action`.
    pub const PREVIEW_ACTION: &str = "preview_action";
    /// `execute_action`.
    pub const EXECUTE_ACTION: &str = "execute_action";
    /// `acquire_control_lease`.
    pub const ACQUIRE_CONTROL_LEASE: &str = "acquire_control_lease";
    /// `release_control_lease`.
    pub const RELEASE_CONTROL_LEASE: &str = "release_control_lease";
    /// `emergency_stop`.
    pub const EMERGENCY_STOP: &str = "emergency_stop";
}

/// What a protocol tool does to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Reads server state only.
    Read,
    /// Changes server state.
    Control,
    /// Runs an arbitrary low-level action (`execute_action`).
    Dynamic,
    /// The emergency stop.
    Stop,
}

/// One protocol tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtocolTool {
    /// Its name.
    pub name: &'static str,
    /// What it does to the server.
    pub group: Group,
}

/// `onboarding` and its group.
pub const ONBOARDING: ProtocolTool = ProtocolTool {
    name: name::ONBOARDING,
    group: Group::Control,
};
/// `start_session` and its group.
pub const START_SESSION: ProtocolTool = ProtocolTool {
    name: name::START_SESSION,
    group: Group::Control,
};
/// `get_session` and its group.
pub const GET_SESSION: ProtocolTool = ProtocolTool {
    name: name::GET_SESSION,
    group: Group::Read,
};
/// `pause_session` and its group.
pub const PAUSE_SESSION: ProtocolTool = ProtocolTool {
    name: name::PAUSE_SESSION,
    group: Group::Control,
};
/// `resume_session` and its group.
pub const RESUME_SESSION: ProtocolTool = ProtocolTool {
    name: name::RESUME_SESSION,
    group: Group::Control,
};
/// `take_over` and its group.
pub const TAKE_OVER: ProtocolTool = ProtocolTool {
    name: name::TAKE_OVER,
    group: Group::Control,
};
/// `stop_session` and its group.
pub const STOP_SESSION: ProtocolTool = ProtocolTool {
    name: name::STOP_SESSION,
    group: Group::Control,
};
/// `approve_action` and its group.
pub const APPROVE_ACTION: ProtocolTool = ProtocolTool {
    name: name::APPROVE_ACTION,
    group: Group::Control,
};
/// `complete_session` and its group.
pub const COMPLETE_SESSION: ProtocolTool = ProtocolTool {
    name: name::COMPLETE_SESSION,
    group: Group::Control,
};
/// `get_session_events` and its group.
pub const GET_SESSION_EVENTS: ProtocolTool = ProtocolTool {
    name: name::GET_SESSION_EVENTS,
    group: Group::Read,
};
/// `submit_follow_up` and its group.
pub const SUBMIT_FOLLOW_UP: ProtocolTool = ProtocolTool {
    name: name::SUBMIT_FOLLOW_UP,
    group: Group::Control,
};
/// `get_follow_ups` and its group.
pub const GET_FOLLOW_UPS: ProtocolTool = ProtocolTool {
    name: name::GET_FOLLOW_UPS,
    group: Group::Read,
};
/// `delete_session` and its group.
pub const DELETE_SESSION: ProtocolTool = ProtocolTool {
    name: name::DELETE_SESSION,
    group: Group::Control,
};
/// `prune_sessions` and its group.
pub const PRUNE_SESSIONS: ProtocolTool = ProtocolTool {
    name: name::PRUNE_SESSIONS,
    group: Group::Control,
};
/// `reserve_target` and its group.
pub const RESERVE_TARGET: ProtocolTool = ProtocolTool {
    name: name::RESERVE_TARGET,
    group: Group::Control,
};
/// `release_target_reservation` and its group.
pub const RELEASE_TARGET_RESERVATION: ProtocolTool = ProtocolTool {
    name: name::RELEASE_TARGET_RESERVATION,
    group: Group::Control,
};
/// `get_execution_capabilities` and its group.
pub const GET_EXECUTION_CAPABILITIES: ProtocolTool = ProtocolTool {
    name: name::GET_EXECUTION_CAPABILITIES,
    group: Group::Read,
};
/// `get_certification_trace` and its group.
pub const GET_CERTIFICATION_TRACE: ProtocolTool = ProtocolTool {
    name: name::GET_CERTIFICATION_TRACE,
    group: Group::Read,
};
/// `preview_action` and its group.
pub const PREVIEW_ACTION: ProtocolTool = ProtocolTool {
    name: name::PREVIEW_ACTION,
    group: Group::Read,
};
/// `execute_action` and its group.
pub const EXECUTE_ACTION: ProtocolTool = ProtocolTool {
    name: name::EXECUTE_ACTION,
    group: Group::Dynamic,
};
/// `acquire_control_lease` and its group.
pub const ACQUIRE_CONTROL_LEASE: ProtocolTool = ProtocolTool {
    name: name::ACQUIRE_CONTROL_LEASE,
    group: Group::Control,
};
/// `release_control_lease` and its group.
pub const RELEASE_CONTROL_LEASE: ProtocolTool = ProtocolTool {
    name: name::RELEASE_CONTROL_LEASE,
    group: Group::Control,
};
/// `emergency_stop` and its group.
pub const EMERGENCY_STOP: ProtocolTool = ProtocolTool {
    name: name::EMERGENCY_STOP,
    group: Group::Stop,
};

/// Every protocol tool, in upstream's order.
pub const TOOLS: [ProtocolTool; 23] = [
    ONBOARDING,
    START_SESSION,
    GET_SESSION,
    PAUSE_SESSION,
    RESUME_SESSION,
    TAKE_OVER,
    STOP_SESSION,
    APPROVE_ACTION,
    COMPLETE_SESSION,
    GET_SESSION_EVENTS,
    SUBMIT_FOLLOW_UP,
    GET_FOLLOW_UPS,
    DELETE_SESSION,
    PRUNE_SESSIONS,
    RESERVE_TARGET,
    RELEASE_TARGET_RESERVATION,
    GET_EXECUTION_CAPABILITIES,
    GET_CERTIFICATION_TRACE,
    PREVIEW_ACTION,
    EXECUTE_ACTION,
    ACQUIRE_CONTROL_LEASE,
    RELEASE_CONTROL_LEASE,
    EMERGENCY_STOP,
];

/// The protocol tool named `name`.
pub fn find(name: &str) -> Option<&'static ProtocolTool> {
    TOOLS.iter().find(|t| t.name == name)
}
