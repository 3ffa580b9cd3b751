//! `ComputerUseMcpRuntime`: the runtime trait over a live `computer-use-mcp`
//! server, spoken through rmcp.
//!
//! Arguments go out flat and snake_case; answers come back camelCase under
//! their keys in `structuredContent`. A text-only answer where a typed one was
//! expected is a decode error, never a guess, and an `isError` refusal becomes
//! [`ComputerUseError::Refused`] keeping the server's code.
//!
//! The adapter decodes and reports; it does not judge. Binding every answer
//! to the request is the chain's job, done once against the session's clock.
//! What makes that sound is that the chain is the only way to the server's
//! mutating tools: the trait methods that reach them take proofs only a
//! stage can make, the raw [`ComputerUseMcpRuntime::call`] speaks read-only
//! tools only, and approving is a separate host capability
//! ([`McpApprover`]). The exact arguments a preview was made with travel
//! inside the stage (as [`PreviewAnswer::retained`]) to the one
//! `execute_action` that sends them.

mod approver;
mod config;
mod evidence;

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{Peer, RunningService};
use rmcp::transport::{IntoTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use tracing::Instrument;

pub use approver::McpApprover;
pub use config::{McpRuntimeConfig, TraceContext};
/// The rmcp crate this adapter speaks through, for building custom transports.
pub use rmcp;

use super::{
    ActionRequest, ComputerUseRuntime, ExecuteProof, ImageContent, LeaseProof, LeaseReleaseProof,
    Observation, ObservationScope, PreviewAnswer, ReleaseProof, ReserveProof, SessionContext,
};
use crate::ComputerUseError;
use crate::binding::{self, bind};
use crate::contracts::case::to_snake_keys;
use crate::contracts::*;

/// A `ComputerUseRuntime` backed by an MCP server.
pub struct ComputerUseMcpRuntime {
    peer: Peer<RoleClient>,
    service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    config: McpRuntimeConfig,
    /// Shared with the approvers taken from this runtime.
    session_id: Arc<Mutex<Option<String>>>,
    /// The execution group the runtime session was started in.
    execution_group_id: Mutex<Option<String>>,
    /// The server's postcondition checks read so far.
    checks: tokio::sync::Mutex<evidence::ServerChecks>,
    child_pid: Option<u32>,
}

/// The tools [`ComputerUseMcpRuntime::call`] may speak: reads that change
/// nothing on the server. `sim_stats` is the bundled simulator's counters.
pub const READ_ONLY_TOOLS: [&str; 5] = [
    "get_execution_capabilities",
    "get_session",
    "get_session_events",
    "get_follow_ups",
    "sim_stats",
];

/// The low-level tools [`ComputerUseMcpRuntime::observe_shadow`] may run:
/// observations that change nothing on the desktop.
pub const OBSERVATION_TOOLS: [&str; 4] =
    ["snapshot", "get_ui_tree", "list_windows", "read_clipboard"];

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn transport_error(operation: &str, err: impl ToString) -> ComputerUseError {
    ComputerUseError::Transport {
        operation: operation.to_owned(),
        message: err.to_string(),
    }
}

fn current_session(session: &Mutex<Option<String>>) -> Result<String, ComputerUseError> {
    lock(session)
        .clone()
        .ok_or_else(|| ComputerUseError::InvalidRequest {
            field: "sessionId".into(),
            message: "no runtime session: configure one or call start_session".into(),
        })
}

/// Decodes `answer[key]` as `T`. The value is taken out of `answer` (left
/// `null`), so its strings move into `T` instead of being copied.
fn decode<T: DeserializeOwned>(
    tool: &str,
    key: &str,
    answer: &mut Value,
) -> Result<T, ComputerUseError> {
    let value = answer.get_mut(key).map(Value::take).ok_or_else(|| {
        ComputerUseError::decode(format!("{tool} answer"), format!("expected a {key:?} key"))
    })?;
    serde_json::from_value(value)
        .map_err(|err| ComputerUseError::decode(format!("{tool} answer.{key}"), err))
}

/// A refusal's text, cut to a length fit for an error message.
fn clip(text: &str) -> String {
    const MAX_MESSAGE_CHARS: usize = 1024;
    text.chars().take(MAX_MESSAGE_CHARS).collect()
}

/// Turns a tool result into its structured answer and images, or the typed
/// refusal it carries. Oversized or over-deep answers are decode errors.
pub fn decode_tool_result(
    tool: &str,
    result: CallToolResult,
) -> Result<(Value, Vec<ImageContent>), ComputerUseError> {
    use crate::contracts::bounds::{MAX_ARRAY_ITEMS, MAX_STRING_BYTES, check_bounds};
    let what = format!("{tool} answer");
    if result.content.len() > MAX_ARRAY_ITEMS {
        return Err(ComputerUseError::decode(
            &what,
            format!("{} content blocks", result.content.len()),
        ));
    }
    for block in &result.content {
        let size = block.as_text().map_or(0, |t| t.text.len())
            + block.as_image().map_or(0, |i| i.data.len());
        if size > MAX_STRING_BYTES {
            return Err(ComputerUseError::decode(
                &what,
                format!("a content block of {size} bytes"),
            ));
        }
    }
    if let Some(structured) = &result.structured_content {
        check_bounds(&what, structured)?;
    }
    let images = result
        .content
        .iter()
        .filter_map(|block| block.as_image())
        .map(|image| ImageContent {
            data: image.data.clone(),
            mime_type: image.mime_type.clone(),
        })
        .collect();
    let text = || {
        result
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if result.is_error == Some(true) {
        return Err(refusal(tool, result.structured_content, text()));
    }
    match result.structured_content {
        Some(value @ Value::Object(_)) => Ok((value, images)),
        Some(other) => Err(ComputerUseError::decode(
            format!("{tool} answer"),
            format!("expected an object, got {other}"),
        )),
        None => Err(ComputerUseError::decode(
            format!("{tool} answer"),
            format!(
                "expected structured content, got text only: {:?}",
                text().chars().take(200).collect::<String>()
            ),
        )),
    }
}

/// The arguments object of a call, with every `null` left out: upstream's
/// schemas reject `null` for an absent optional.
/// A refusal in any of upstream's shapes, typed:
///
/// - `{error, message, details}`: the code, the message and the details;
/// - `{error, <anything else>}` without a message (`{error, lease_id}`,
///   `{error: "rejected", receipt}`): the code, a message made from what it
///   named, and the rest as details;
/// - text only, as the MCP SDK answers arguments that fail a tool's input
///   schema (`MCP error -32602: ...`): code `invalid_arguments`, the text as
///   the message;
/// - any other text only: an invalid request, with the text.
fn refusal(tool: &str, structured: Option<Value>, text: String) -> ComputerUseError {
    let refused = |code: &str, message: String, details: Option<Value>| ComputerUseError::Refused {
        operation: tool.to_owned(),
        code: clip(code),
        message: clip(&message),
        details: details.map(Box::new),
    };
    if let Some(Value::Object(mut map)) = structured
        && let Some(Value::String(code)) = map.remove("error")
    {
        let message = match map.remove("message") {
            Some(Value::String(message)) => message,
            _ if code == "rejected" => "the server recorded a rejected receipt under this action id; a retry needs a new action id".to_owned(),
            _ if map.is_empty() => String::new(),
            _ => format!("the server named {}", Value::Object(map.clone())),
        };
        let details = match map.remove("details") {
            Some(details) if map.is_empty() => Some(details),
            Some(details) => {
                map.insert("details".into(), details);
                Some(Value::Object(map))
            }
            None if map.is_empty() => None,
            None => Some(Value::Object(map)),
        };
        return refused(&code, message, details);
    }
    if let Some(rest) = text.trim_start().strip_prefix("MCP error -32602") {
        let message = rest.trim_start_matches(':').trim().to_owned();
        return refused(
            "invalid_arguments",
            message,
            Some(json!({ "mcpCode": -32602 })),
        );
    }
    ComputerUseError::InvalidRequest {
        field: tool.to_owned(),
        message: clip(&text),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(mut map) => {
            map.retain(|_, value| !value.is_null());
            map
        }
        _ => Map::new(),
    }
}

impl ComputerUseMcpRuntime {
    /// Spawns `command` as a child process and speaks MCP on its stdio.
    pub async fn spawn(
        command: tokio::process::Command,
        config: McpRuntimeConfig,
    ) -> Result<Self, ComputerUseError> {
        config.check()?;
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let (transport, _stderr) = TokioChildProcess::builder(command).spawn().map_err(|err| {
            ComputerUseError::Transport {
                operation: format!("spawn {program:?}"),
                message: err.to_string(),
            }
        })?;
        let pid = transport.id();
        let mut runtime = Self::connect(transport, config).await?;
        runtime.child_pid = pid;
        Ok(runtime)
    }

    /// Speaks MCP over any rmcp client transport.
    pub async fn connect<T, E, A>(
        transport: T,
        config: McpRuntimeConfig,
    ) -> Result<Self, ComputerUseError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        config.check()?;
        let wait = std::time::Duration::from_millis(config.connect_timeout_ms);
        let service = tokio::time::timeout(wait, ().serve(transport))
            .await
            .map_err(|_| ComputerUseError::TimedOut {
                operation: "the MCP handshake (initialize)".into(),
                waited_ms: config.connect_timeout_ms,
            })?
            .map_err(|err| transport_error("initialize", err))?;
        Ok(Self {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            session_id: Arc::new(Mutex::new(config.session_id.clone())),
            execution_group_id: Mutex::new(config.execution_group_id.clone()),
            checks: tokio::sync::Mutex::new(evidence::ServerChecks::default()),
            config,
            child_pid: None,
        })
    }

    /// The child process's id, when this runtime spawned one.
    pub fn child_pid(&self) -> Option<u32> {
        self.child_pid
    }

    /// The configuration.
    pub fn config(&self) -> &McpRuntimeConfig {
        &self.config
    }

    /// The runtime session this adapter acts in.
    pub fn session_id(&self) -> Result<String, ComputerUseError> {
        current_session(&self.session_id)
    }

    /// Calls the read-only `tool` (one of [`READ_ONLY_TOOLS`]) with
    /// `arguments` and returns its structured answer and images. Any other
    /// tool is refused before anything is sent: the tools that change state
    /// are reached only through the governed chain.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<(Value, Vec<ImageContent>), ComputerUseError> {
        if !READ_ONLY_TOOLS.contains(&tool) {
            return Err(ComputerUseError::InvalidRequest {
                field: "tool".into(),
                message: format!(
                    "expected a read-only tool ({}), got {tool:?}; tools that change state are reached only through the governed chain",
                    READ_ONLY_TOOLS.join(", ")
                ),
            });
        }
        self.send(tool, arguments).await
    }

    /// Sends one tool call, any tool. Private: every caller is a method of
    /// this adapter that was handed the right to make that call.
    async fn send(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<(Value, Vec<ImageContent>), ComputerUseError> {
        let wait = std::time::Duration::from_millis(self.config.call_timeout_ms);
        self.send_within(tool, arguments, Some(wait)).await
    }

    /// One call, waited for at most `wait` (`None`: the caller bounds it).
    async fn send_within(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
        wait: Option<std::time::Duration>,
    ) -> Result<(Value, Vec<ImageContent>), ComputerUseError> {
        let span = tracing::info_span!(
            "computer_use.call",
            tool,
            session_id = tracing::field::Empty,
            trace_id = self.config.trace.trace_id.as_deref().unwrap_or(""),
            correlation_id = self.config.trace.correlation_id.as_deref().unwrap_or(""),
        );
        // Read (under the lock) only when a subscriber will keep it.
        if !span.is_disabled() {
            span.record(
                "session_id",
                lock(&self.session_id).as_deref().unwrap_or(""),
            );
        }
        async {
            let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
            // Dropping the call on timeout makes rmcp tell the server the
            // request was cancelled.
            let call = self.peer.call_tool(params);
            let answer = match wait {
                Some(wait) => tokio::time::timeout(wait, call).await.map_err(|_| {
                    ComputerUseError::TimedOut {
                        operation: tool.to_owned(),
                        waited_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                    }
                })?,
                None => call.await,
            };
            let result = answer.map_err(|err| transport_error(tool, err))?;
            decode_tool_result(tool, result)
        }
        .instrument(span)
        .await
    }

    async fn call_json(&self, tool: &str, arguments: Value) -> Result<Value, ComputerUseError> {
        Ok(self.send(tool, object(arguments)).await?.0)
    }

    fn check_session(
        &self,
        object: &'static str,
        session_id: &str,
        principal_id: &str,
    ) -> Result<(), ComputerUseError> {
        bind(object, "sessionId", &self.session_id()?, session_id)?;
        bind(
            object,
            "principalId",
            &self.config.principal_id,
            principal_id,
        )
    }

    /// Starts a runtime session and acts in it from now on.
    pub async fn start_session(
        &self,
        objective: Option<&str>,
        execution_group_id: Option<&str>,
    ) -> Result<RuntimeSession, ComputerUseError> {
        let mut answer = self
            .call_json(
                "start_session",
                json!({ "objective": objective, "execution_group_id": execution_group_id }),
            )
            .await?;
        let session: RuntimeSession = decode("start_session", "session", &mut answer)?;
        bind(
            "RuntimeSession",
            "principalId",
            &self.config.principal_id,
            &session.principal_id,
        )?;
        if session.state != "running" {
            return Err(ComputerUseError::invalid(
                "RuntimeSession",
                "state",
                "running",
                session.state.clone(),
            ));
        }
        *lock(&self.session_id) = Some(session.session_id.clone());
        *lock(&self.execution_group_id) = session.execution_group_id.clone();
        Ok(session)
    }

    /// Reads the session.
    pub async fn get_session(&self) -> Result<RuntimeSession, ComputerUseError> {
        let mut answer = self
            .call_json("get_session", json!({ "session_id": self.session_id()? }))
            .await?;
        let session: RuntimeSession = decode("get_session", "session", &mut answer)?;
        self.check_session("RuntimeSession", &session.session_id, &session.principal_id)?;
        Ok(session)
    }

    /// Reads one page of a session-scoped list (`tool` answers with the page
    /// itself); the caller checks what the page holds.
    async fn page<P: DeserializeOwned>(
        &self,
        tool: &str,
        after_sequence: Option<u64>,
        limit: Option<u32>,
    ) -> Result<P, ComputerUseError> {
        let answer = self
            .call_json(
                tool,
                json!({ "session_id": self.session_id()?, "after_sequence": after_sequence, "limit": limit }),
            )
            .await?;
        serde_json::from_value(answer)
            .map_err(|err| ComputerUseError::decode(format!("{tool} answer"), err))
    }

    /// Reads a page of the session's events; every event must be this
    /// session's and this principal's.
    pub async fn get_session_events(
        &self,
        after_sequence: Option<u64>,
        limit: Option<u32>,
    ) -> Result<SessionEventPage, ComputerUseError> {
        let page: SessionEventPage = self
            .page("get_session_events", after_sequence, limit)
            .await?;
        for event in &page.events {
            self.check_session("SessionEvent", &event.session_id, &event.principal_id)?;
        }
        Ok(page)
    }

    /// Reads every event of the session, page by page.
    pub async fn all_session_events(&self) -> Result<Vec<SessionEvent>, ComputerUseError> {
        let mut events = Vec::new();
        let mut after = 0;
        loop {
            let page = self.get_session_events(Some(after), Some(1000)).await?;
            if page.events.is_empty() || page.next_sequence <= after {
                return Ok(events);
            }
            after = page.next_sequence;
            events.extend(page.events);
        }
    }

    /// Adds an instruction to the session.
    pub async fn submit_follow_up(
        &self,
        instruction: &str,
    ) -> Result<SessionFollowUp, ComputerUseError> {
        let mut answer = self
            .call_json(
                "submit_follow_up",
                json!({ "session_id": self.session_id()?, "instruction": instruction }),
            )
            .await?;
        let follow_up: SessionFollowUp = decode("submit_follow_up", "follow_up", &mut answer)?;
        self.check_session(
            "SessionFollowUp",
            &follow_up.session_id,
            &follow_up.principal_id,
        )?;
        Ok(follow_up)
    }

    /// Reads a page of the session's follow-ups.
    pub async fn get_follow_ups(
        &self,
        after_sequence: Option<u64>,
        limit: Option<u32>,
    ) -> Result<FollowUpPage, ComputerUseError> {
        let page: FollowUpPage = self.page("get_follow_ups", after_sequence, limit).await?;
        for follow_up in &page.follow_ups {
            self.check_session(
                "SessionFollowUp",
                &follow_up.session_id,
                &follow_up.principal_id,
            )?;
        }
        Ok(page)
    }

    /// The host's capability to approve actions on this server. It is a
    /// separate value from the runtime a `Session` drives, so an agent that
    /// holds only its session cannot approve its own action.
    pub fn approver(&self) -> McpApprover {
        McpApprover::new(
            self.peer.clone(),
            self.config.principal_id.clone(),
            Arc::clone(&self.session_id),
        )
    }

    /// Deletes a terminal session.
    pub async fn delete_session(
        &self,
        session_id: &str,
    ) -> Result<SessionDeletionResult, ComputerUseError> {
        let mut answer = self
            .call_json(
                "delete_session",
                json!({ "session_id": session_id, "confirm": true }),
            )
            .await?;
        let deletion: SessionDeletionResult = decode("delete_session", "deletion", &mut answer)?;
        bind(
            "SessionDeletionResult",
            "sessionId",
            session_id,
            &deletion.session_id,
        )?;
        Ok(deletion)
    }

    /// Deletes terminal sessions last changed before `older_than` (RFC 3339).
    pub async fn prune_sessions(
        &self,
        older_than: &str,
        limit: Option<u32>,
    ) -> Result<Vec<SessionDeletionResult>, ComputerUseError> {
        crate::clock::parse_rfc3339("prune_sessions", "olderThan", older_than)?;
        let mut answer = self
            .call_json(
                "prune_sessions",
                json!({ "older_than": older_than, "limit": limit, "confirm": true }),
            )
            .await?;
        decode("prune_sessions", "deletions", &mut answer)
    }

    /// Resumes a paused session.
    pub async fn resume_session(
        &self,
        reason: Option<&str>,
    ) -> Result<RuntimeSession, ComputerUseError> {
        self.session_state_call("resume_session", reason).await
    }

    async fn session_state_call(
        &self,
        tool: &str,
        reason: Option<&str>,
    ) -> Result<RuntimeSession, ComputerUseError> {
        let mut answer = self
            .call_json(
                tool,
                json!({ "session_id": self.session_id()?, "reason": reason }),
            )
            .await?;
        let session: RuntimeSession = decode(tool, "session", &mut answer)?;
        self.check_session("RuntimeSession", &session.session_id, &session.principal_id)?;
        Ok(session)
    }

    /// A read-only observation: `tool` (one of [`OBSERVATION_TOOLS`]) run
    /// through `execute_action` in shadow mode, under its own action id.
    pub async fn observe_shadow(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<Observation, ComputerUseError> {
        if !OBSERVATION_TOOLS.contains(&tool) {
            return Err(ComputerUseError::InvalidRequest {
                field: "tool".into(),
                message: format!(
                    "expected an observation tool ({}), got {tool:?}",
                    OBSERVATION_TOOLS.join(", ")
                ),
            });
        }
        let session_id = self.session_id()?;
        // Upstream records every execution, shadow ones included, under its
        // own action id.
        let action_id = self.observation_id(&session_id);
        let (mut answer, images) = self
            .send(
                "execute_action",
                object(json!({
                    "session_id": session_id,
                    "action_id": action_id,
                    "tool": tool,
                    "arguments": arguments,
                    "mode": "shadow",
                })),
            )
            .await?;
        let receipt: ExecutionReceipt = decode("execute_action", "receipt", &mut answer)?;
        bind(
            "ExecutionReceipt",
            "sessionId",
            &session_id,
            &receipt.session_id,
        )?;
        let output = answer
            .get_mut("output")
            .map(Value::take)
            .unwrap_or(Value::Null);
        // The frame's own id when it states one; otherwise the id upstream
        // recorded the observation under, which names it just as uniquely.
        let observation_id = output
            .get("observationId")
            .and_then(Value::as_str)
            .map_or(receipt.action_id, str::to_owned);
        Ok(Observation {
            observation_id: Some(observation_id),
            structured: output,
            images,
            captured_at: Some(receipt.created_at),
        })
    }

    /// A fresh action id for one shadow observation: unique per session,
    /// across processes (the process, the time and a counter, hashed).
    fn observation_id(&self, session_id: &str) -> String {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let serial = NEXT.fetch_add(1, Ordering::Relaxed);
        let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        let seed = format!("{session_id}|{}|{now}|{serial}", std::process::id());
        let digest = crate::digest::sha256_hex(seed);
        format!("observe-{}", &digest[..24])
    }

    /// Closes the connection and, for a spawned server, waits for the child
    /// to exit (it is killed if it does not), so no orphan or zombie remains.
    pub async fn shutdown(&self) -> Result<(), ComputerUseError> {
        let service = self.service.lock().await.take();
        if let Some(service) = service {
            service
                .cancel()
                .await
                .map_err(|err| transport_error("shutdown", err))?;
        }
        Ok(())
    }

    fn action_arguments(request: &ActionRequest<'_>) -> Map<String, Value> {
        let action = &request.action;
        let mut args = Map::new();
        let mut put = |key: &str, value: Value| {
            if !value.is_null() {
                args.insert(key.to_owned(), value);
            }
        };
        put("session_id", json!(request.session_id));
        put("action_id", json!(action.action_id));
        put("tool", json!(action.tool));
        put("arguments", action.arguments.clone());
        put("mode", json!(action.mode));
        put("operation", json!(action.operation));
        put("execution_group_id", json!(request.execution_group_id));
        put("agent_id", json!(request.agent_id));
        if !action.data_labels.is_empty() {
            put("data_labels", json!(action.data_labels));
        }
        put("expires_in_ms", json!(action.expires_in_ms));
        put("attempt", json!(action.attempt));
        put("certification_id", json!(action.certification_id));
        if let Some(provenance) = &action.provenance {
            put("provenance", to_snake_keys(&json!(provenance)));
        }
        if let Some(target) = &action.target {
            put("target", to_snake_keys(&json!(target)));
        }
        if let Some(postcondition) = &action.postcondition {
            put("postcondition", postcondition.to_input());
        }
        args
    }
}

impl ComputerUseRuntime for ComputerUseMcpRuntime {
    fn session_context(&self) -> Option<SessionContext> {
        let session_id = lock(&self.session_id).clone()?;
        Some(SessionContext {
            session_id,
            principal_id: self.config.principal_id.clone(),
            execution_group_id: lock(&self.execution_group_id).clone(),
        })
    }

    async fn close(&self) -> Result<(), ComputerUseError> {
        self.shutdown().await
    }

    async fn discover_capabilities(
        &self,
        scope: &ObservationScope,
    ) -> Result<Vec<ExecutionCapability>, ComputerUseError> {
        let tool = scope
            .tool
            .clone()
            .unwrap_or_else(|| self.config.capability_tool.clone());
        let mut answer = self
            .call_json(
                "get_execution_capabilities",
                json!({ "tool": tool, "app_id": scope.app_id }),
            )
            .await?;
        decode("get_execution_capabilities", "capabilities", &mut answer)
    }

    async fn observe_visual(
        &self,
        _scope: &ObservationScope,
    ) -> Result<Observation, ComputerUseError> {
        self.observe_shadow("snapshot", json!({})).await
    }

    async fn observe_semantic(
        &self,
        scope: &ObservationScope,
    ) -> Result<Observation, ComputerUseError> {
        // The session's target, app and window together; a window without
        // its app is not looked for.
        let (app, window) = match &scope.app_id {
            Some(app) => (Some(app.clone()), scope.window_id.clone()),
            None => (None, None),
        };
        match window {
            Some(window) => {
                self.observe_shadow("get_ui_tree", json!({ "window_id": window, "app_id": app }))
                    .await
            }
            None => self.observe_shadow("list_windows", json!({})).await,
        }
    }

    async fn preview_action(
        &self,
        request: &ActionRequest<'_>,
    ) -> Result<PreviewAnswer, ComputerUseError> {
        let arguments = Self::action_arguments(request);
        let (answer, _) = self.send("preview_action", arguments.clone()).await?;
        let preview: ActionPreview = serde_json::from_value(answer)
            .map_err(|err| ComputerUseError::decode("preview_action answer", err))?;
        // What runs must be what was previewed: the exact arguments, under
        // the action id the server bound them to, travel with the stage.
        let mut arguments = arguments;
        arguments.insert("action_id".into(), json!(preview.envelope.action_id));
        Ok(PreviewAnswer {
            preview,
            retained: Some(Value::Object(arguments)),
        })
    }

    async fn reserve_target(
        &self,
        proof: &ReserveProof<'_>,
    ) -> Result<Option<TargetReservation>, ComputerUseError> {
        let envelope = proof.envelope();
        let Some(target) = &envelope.target else {
            return Ok(None);
        };
        let mut answer = self
            .call_json(
                "reserve_target",
                json!({
                    "session_id": envelope.session_id,
                    "intent_id": envelope.action_id,
                    "app_id": target.app_id,
                    "window_id": target.window_id,
                    "ttl_ms": self.config.reservation_ttl_ms,
                    "execution_group_id": envelope.execution_group_id,
                    "agent_id": envelope.agent_id,
                }),
            )
            .await?;
        decode("reserve_target", "reservation", &mut answer).map(Some)
    }

    async fn release_target(&self, proof: &ReleaseProof<'_>) -> Result<(), ComputerUseError> {
        let reservation = proof.reservation();
        // In this adapter's session, whatever session the answer claimed.
        let answer = self
            .call_json(
                "release_target_reservation",
                json!({ "session_id": self.session_id()?, "reservation_id": reservation.reservation_id }),
            )
            .await;
        // No longer active is what a release is for: a release whose answer
        // was lost and is sent again finds it so.
        let mut answer = match answer {
            Err(err) if err.refusal_code() == Some("reservation_not_active") => return Ok(()),
            other => other?,
        };
        let released: TargetReservation =
            decode("release_target_reservation", "reservation", &mut answer)?;
        bind(
            "TargetReservation",
            "reservationId",
            &reservation.reservation_id,
            &released.reservation_id,
        )?;
        binding::require_state(
            "TargetReservation",
            ReservationState::Released,
            released.state,
        )
    }

    async fn acquire_lease(
        &self,
        proof: &LeaseProof<'_>,
    ) -> Result<ControlLease, ComputerUseError> {
        let envelope = proof.envelope();
        let kind = if envelope.requested_mode == ExecutionMode::Foreground {
            "exclusive"
        } else {
            "cooperative"
        };
        let target = envelope.target.as_ref();
        let wait = std::time::Duration::from_millis(self.config.lease_wait_ms);
        // A second acquire waits in the server's queue. Bounded here: when
        // the wait runs out the call is dropped, and rmcp tells the server
        // the request was cancelled, so it leaves the queue.
        let call = self.send_within(
            "acquire_control_lease",
            object(json!({
                "session_id": envelope.session_id,
                "kind": kind,
                "mode": envelope.requested_mode,
                "ttl_ms": self.config.lease_ttl_ms,
                "action_budget": 1,
                "agent_id": envelope.agent_id,
                "app_ids": target.map(|t| vec![t.app_id.clone()]),
                "window_ids": target.and_then(|t| t.window_id.clone()).map(|w| vec![w]),
            })),
            None,
        );
        let (mut answer, _) =
            tokio::time::timeout(wait, call)
                .await
                .map_err(|_| ComputerUseError::TimedOut {
                    operation: "acquire_control_lease".into(),
                    waited_ms: self.config.lease_wait_ms,
                })??;
        decode("acquire_control_lease", "lease", &mut answer)
    }

    async fn release_lease(&self, proof: &LeaseReleaseProof<'_>) -> Result<(), ComputerUseError> {
        let lease = proof.lease();
        let answer = self
            .call_json(
                "release_control_lease",
                json!({ "lease_id": lease.lease_id }),
            )
            .await;
        // No longer active (released, expired, or revoked by the server) is
        // what a release is for.
        let mut answer = match answer {
            Err(err)
                if matches!(
                    err.refusal_code(),
                    Some("lease_not_active" | "lease_revoked")
                ) =>
            {
                return Ok(());
            }
            other => other?,
        };
        let released: ControlLease = decode("release_control_lease", "lease", &mut answer)?;
        bind(
            "ControlLease",
            "leaseId",
            &lease.lease_id,
            &released.lease_id,
        )?;
        binding::require_state("ControlLease", LeaseState::Released, released.state)
    }

    async fn execute_action(
        &self,
        proof: &ExecuteProof<'_>,
    ) -> Result<ExecutionReceipt, ComputerUseError> {
        let envelope = proof.envelope();
        let mut arguments = match proof.retained() {
            Some(Value::Object(arguments)) => arguments.clone(),
            _ => {
                return Err(ComputerUseError::InvalidRequest {
                    field: "retained".into(),
                    message: format!(
                        "expected the arguments action {} was previewed with, found none; preview it again",
                        envelope.action_id
                    ),
                });
            }
        };
        bind(
            "ActionEnvelope",
            "actionId",
            &envelope.action_id,
            arguments
                .get("action_id")
                .and_then(Value::as_str)
                .unwrap_or(""),
        )?;
        arguments.insert("lease_id".into(), json!(proof.lease().lease_id));
        if let Some(grant) = proof.grant_id() {
            arguments.insert("approval_grant_id".into(), json!(grant));
        }
        let (mut answer, _) = self.send("execute_action", arguments).await?;
        decode("execute_action", "receipt", &mut answer)
    }

    /// The server's own check of the action, read from its `action.verified`
    /// event (see [`evidence`](self)); `None` when it reported none.
    async fn evidence(
        &self,
        receipt: &ExecutionReceipt,
        postcondition: Option<&ActionPostcondition>,
    ) -> Result<Option<Value>, ComputerUseError> {
        let mut checks = self.checks.lock().await;
        if checks.get(&receipt.action_id).is_none() {
            loop {
                let after = checks.after();
                let page = self.get_session_events(Some(after), Some(1000)).await?;
                let done = page.events.is_empty() || page.next_sequence <= after;
                checks.absorb(page.events, page.next_sequence);
                if done || checks.get(&receipt.action_id).is_some() {
                    break;
                }
            }
        }
        Ok(checks
            .get(&receipt.action_id)
            .map(|check| evidence::verification(check, postcondition)))
    }

    async fn pause_session(&self, reason: Option<&str>) -> Result<(), ComputerUseError> {
        self.session_state_call("pause_session", reason)
            .await
            .map(|_| ())
    }

    async fn stop_session(&self, reason: Option<&str>) -> Result<(), ComputerUseError> {
        self.session_state_call("stop_session", reason)
            .await
            .map(|_| ())
    }

    async fn emergency_stop(&self, reason: Option<&str>) -> Result<(), ComputerUseError> {
        let answer = self
            .call_json("emergency_stop", json!({ "reason": reason }))
            .await?;
        match answer.get("stopped") {
            Some(Value::Bool(true)) => Ok(()),
            other => Err(ComputerUseError::decode(
                "emergency_stop answer",
                format!("expected stopped: true, got {other:?}"),
            )),
        }
    }
}
