//! `ComputerUseMcpRuntime`: the runtime trait over a live `computer-use-mcp`
//! server, spoken through rmcp.
//!
//! Arguments go out flat and snake_case; answers come back camelCase under
//! their keys in `structuredContent`. A text-only answer where a typed one was
//! expected is a decode error, never a guess, and an `isError` refusal becomes
//! [`crate::ComputerUseError::Refused`] keeping the server's code.
//!
//! The adapter decodes and reports; it does not judge. Binding every answer
//! to the request is the chain's job, done once against the session's clock.
//! What makes that sound is that the chain is the only way to the server's
//! mutating tools: the trait methods that reach them take proofs only a
//! stage can make, the raw [`ComputerUseMcpRuntime::call`] speaks read-only
//! tools only, and approving is a separate host capability
//! ([`McpApprover`]). The exact arguments a preview was made with travel
//! inside the stage (as [`crate::runtime::PreviewAnswer::retained`]) to the one
//! `execute_action` that sends them.
//!
//! [`ComputerUseMcpRuntime::spawn`] speaks through the adapter's own line
//! transport ([`ChildTransport`] over [`JsonLines`]): it reads a tool
//! call's answer in one pass as a tool result instead of trying every
//! result type rmcp knows, and every other line by rmcp's own rules.

use crate::contracts::catalogue::protocol::name as protocol;
use crate::contracts::catalogue::tool;
mod announced;
mod approver;
mod child;
mod client;
mod config;
mod evidence;
mod governed;
mod lines;
mod round_trips;
mod session;
mod wire;

pub use announced::EFFECT_CHECKS_CAPABILITY;
pub use approver::{GrantRequest, McpApprover};
pub use child::ChildTransport;
pub use client::ComputerUseMcpRuntime;
pub use config::{CREDENTIAL_CAPABILITY, McpRuntimeConfig, TraceContext};
pub use lines::{CLOSE_WAIT, JsonLines, MAX_LINE_BYTES};
/// The rmcp crate this adapter speaks through, for building custom transports.
pub use rmcp;
pub use round_trips::{CountedTransport, RoundTrips};
pub use wire::decode_tool_result;

/// The protocol tools [`ComputerUseMcpRuntime::call`] may speak: reads that
/// change nothing on the server. A host may add a server's own read-only
/// tool ([`McpRuntimeConfig::read_only_extension`]).
pub const READ_ONLY_TOOLS: [&str; 4] = [
    protocol::GET_EXECUTION_CAPABILITIES,
    protocol::GET_SESSION,
    protocol::GET_SESSION_EVENTS,
    protocol::GET_FOLLOW_UPS,
];

/// The low-level tools [`ComputerUseMcpRuntime::observe_shadow`] may run:
/// observations that change nothing on the desktop.
pub const OBSERVATION_TOOLS: [&str; 9] = [
    tool::SNAPSHOT,
    tool::GET_UI_TREE,
    tool::LIST_WINDOWS,
    tool::READ_CLIPBOARD,
    tool::FIND_ELEMENT,
    tool::GET_FOCUSED_ELEMENT,
    tool::WAIT_FOR_WINDOW,
    tool::WAIT_FOR_TEXT,
    tool::WAIT_FOR_STABLE,
];
