//! The simulator as an rmcp server.

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use super::state::SimState;
use super::{SimConfig, SimError};
use crate::ComputerUseError;

/// The tools the simulator serves, with a one-line description each.
const TOOLS: [(&str, &str); 22] = [
    ("start_session", "Start a runtime session."),
    ("get_session", "Read a session."),
    (
        "get_execution_capabilities",
        "What the desktop can do for a tool.",
    ),
    (
        "preview_action",
        "Bind an action into an envelope and decide whether it may run.",
    ),
    (
        "approve_action",
        "Issue an approval grant for a previewed action.",
    ),
    ("reserve_target", "Reserve a target window for an intent."),
    ("release_target_reservation", "Release a reservation."),
    (
        "acquire_control_lease",
        "Take the desktop's one-writer lease.",
    ),
    ("release_control_lease", "Release a lease."),
    (
        "execute_action",
        "Perform one previewed action (or observe, in shadow mode).",
    ),
    ("get_session_events", "Read a session's event log."),
    ("submit_follow_up", "Add an instruction to a session."),
    ("get_follow_ups", "Read a session's follow-ups."),
    ("pause_session", "Pause a session and revoke its leases."),
    ("resume_session", "Resume a paused session."),
    (
        "take_over",
        "Hand the desktop to the person and revoke leases.",
    ),
    ("stop_session", "Stop a session and revoke its leases."),
    ("complete_session", "Complete a session with evidence."),
    ("delete_session", "Delete a terminal session."),
    (
        "prune_sessions",
        "Delete terminal sessions older than a time.",
    ),
    (
        "emergency_stop",
        "Stop every session and revoke every lease.",
    ),
    (
        "sim_stats",
        "The simulator's own counters (not part of the protocol).",
    ),
];

/// The simulated desktop, served over MCP.
#[derive(Clone)]
pub struct SimServer {
    state: Arc<Mutex<SimState>>,
    slow: std::time::Duration,
}

impl SimServer {
    /// A server over a fresh desktop.
    pub fn new(config: SimConfig) -> Self {
        let slow = std::time::Duration::from_millis(config.slow_ms);
        Self {
            state: Arc::new(Mutex::new(SimState::new(config))),
            slow,
        }
    }

    /// Answers one call as the MCP result the client will see. An injected
    /// crash fault (`crash.beforeEffect`, `crash.afterCommit`) exits the
    /// process here, as a crashing server would.
    pub fn answer(&self, tool: &str, arguments: Value) -> CallToolResult {
        let outcome = {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            state.call(tool, &arguments)
        };
        match outcome {
            Ok(answer) => {
                let mut result = CallToolResult::structured(answer.structured);
                for (data, mime) in answer.images {
                    result.content.push(ContentBlock::image(data, mime));
                }
                result
            }
            Err(SimError {
                crash: true,
                message,
                ..
            }) => {
                eprintln!("computer-use-sim: {message}; exiting");
                std::process::exit(70);
            }
            Err(SimError {
                text_only: true,
                message,
                ..
            }) => CallToolResult::error(vec![ContentBlock::text(format!(
                "invalid arguments: {message}"
            ))]),
            Err(SimError { code, message, .. }) => CallToolResult::structured_error(
                json!({ "error": code, "message": message, "details": {} }),
            ),
        }
    }

    /// Serves on stdin/stdout until the client goes away.
    pub async fn serve_stdio(self) -> Result<(), ComputerUseError> {
        let transport = |err: String| ComputerUseError::Transport {
            operation: "serve".into(),
            message: err,
        };
        let running = self
            .serve(rmcp::transport::io::stdio_pipes())
            .await
            .map_err(|e| transport(e.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|e| transport(e.to_string()))?;
        Ok(())
    }
}

impl ServerHandler for SimServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let schema: JsonObject = match json!({ "type": "object", "additionalProperties": true }) {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        };
        let schema = Arc::new(schema);
        let tools = TOOLS
            .iter()
            .map(|(name, description)| Tool::new(*name, *description, Arc::clone(&schema)))
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if !self.slow.is_zero() {
            tokio::time::sleep(self.slow).await;
        }
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.answer(&request.name, arguments).into())
    }
}
