//! The client: starting or connecting to a server, bounded calls, and the
//! read-only and observation doors that are not the governed chain.

use crate::contracts::catalogue::protocol::name as protocol;
use std::sync::{Arc, Mutex};

use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use tracing::Instrument;

use super::wire::{current_session, decode, decode_tool_result, lock, object, transport_error};
use super::{McpRuntimeConfig, OBSERVATION_TOOLS, READ_ONLY_TOOLS, evidence};
use crate::ComputerUseError;
use crate::binding::bind;
use crate::contracts::case::to_snake_keys;
use crate::contracts::*;
use crate::runtime::{ActionRequest, ImageContent, Observation};

/// What a capability answer was asked for: session, tool and app.
pub(super) type CapabilityKey = (String, String, Option<String>);

/// A `ComputerUseRuntime` backed by an MCP server.
pub struct ComputerUseMcpRuntime {
    pub(super) peer: Peer<RoleClient>,
    pub(super) service: tokio::sync::Mutex<Option<RunningService<RoleClient, ()>>>,
    pub(super) config: McpRuntimeConfig,
    /// The runtime session it acts in (set by `start_session`).
    pub(super) session_id: Arc<Mutex<Option<String>>>,
    /// The execution group the runtime session was started in.
    pub(super) execution_group_id: Mutex<Option<String>>,
    /// The server's postcondition checks read so far.
    pub(super) checks: tokio::sync::Mutex<evidence::ServerChecks>,
    /// The effects the server announced it checks.
    pub(super) announced: super::announced::AnnouncedChecks,
    /// The last capabilities discovered, by (session, tool, app): reused
    /// until the server refuses or blocks an action.
    pub(super) capabilities: Mutex<Option<(CapabilityKey, Vec<ExecutionCapability>)>>,
    pub(super) child_pid: Option<u32>,
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
        let transport =
            super::ChildTransport::spawn(command).map_err(|err| ComputerUseError::Transport {
                operation: format!("spawn {program:?}"),
                message: err.to_string(),
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
        // The credential, if any, goes in the initialize request's
        // capabilities (`McpRuntimeConfig::credential`).
        let transport = super::config::Presenting {
            inner: transport.into_transport(),
            credential: config.credential().map(str::to_owned),
        };
        let service = tokio::time::timeout(wait, ().serve(transport))
            .await
            .map_err(|_| ComputerUseError::TimedOut {
                operation: "the MCP handshake (initialize)".into(),
                waited_ms: config.connect_timeout_ms,
            })?
            .map_err(|err| transport_error("initialize", err))?;
        let announced =
            super::announced::AnnouncedChecks::from_server(service.peer().peer_info().as_deref());
        Ok(Self {
            peer: service.peer().clone(),
            service: tokio::sync::Mutex::new(Some(service)),
            session_id: Arc::new(Mutex::new(config.session_id.clone())),
            execution_group_id: Mutex::new(config.execution_group_id.clone()),
            checks: tokio::sync::Mutex::new(evidence::ServerChecks::default()),
            announced,
            capabilities: Mutex::new(None),
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

    /// Calls the read-only `tool` (one of [`READ_ONLY_TOOLS`], or a
    /// read-only extension the host's configuration names) with
    /// `arguments` and returns its structured answer and images. Any other
    /// tool is refused before anything is sent: the tools that change state
    /// are reached only through the governed chain.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<(Value, Vec<ImageContent>), ComputerUseError> {
        if OBSERVATION_TOOLS.contains(&tool) {
            // An observation changes nothing, but it runs governed (a
            // shadow preview and execution), so it has a door of its own.
            return Err(ComputerUseError::InvalidRequest {
                field: "tool".into(),
                message: format!(
                    "{tool:?} is an observation of the desktop: it changes nothing, and runs governed, as a shadow action; use observe_shadow({tool:?}, arguments), or a session's observe(). call() takes the protocol's read-only tools: {}",
                    READ_ONLY_TOOLS.join(", ")
                ),
            });
        }
        if !READ_ONLY_TOOLS.contains(&tool) && !self.config.is_read_only_extension(tool) {
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

    /// What the server offers among `tools`: each tool's modes as its
    /// capabilities report them (`get_execution_capabilities`), and its
    /// argument schema when the server lists the tool in `tools/list`.
    /// A tool the server does not know, or offers in `shadow` only, is left
    /// out; a server error is returned. (`agent::allowed_actions` makes
    /// these what a model may propose.)
    pub async fn tool_offers(
        &self,
        tools: &[&str],
    ) -> Result<Vec<crate::runtime::ToolOffer>, ComputerUseError> {
        let listed = tokio::time::timeout(
            std::time::Duration::from_millis(self.config.call_timeout_ms),
            self.peer.list_all_tools(),
        )
        .await
        .map_err(|_| ComputerUseError::TimedOut {
            operation: "tools/list".into(),
            waited_ms: self.config.call_timeout_ms,
        })?
        .map_err(|err| transport_error("tools/list", err))?;
        let mut offers = Vec::new();
        for tool in tools {
            let answer = self
                .call_json(
                    protocol::GET_EXECUTION_CAPABILITIES,
                    json!({ "tool": tool }),
                )
                .await;
            let mut answer = match answer {
                Ok(answer) => answer,
                Err(err) if err.refusal_code() == Some("unknown_tool") => continue,
                Err(err) => return Err(err),
            };
            let capabilities: Vec<ExecutionCapability> = decode(
                protocol::GET_EXECUTION_CAPABILITIES,
                "capabilities",
                &mut answer,
            )?;
            let modes: Vec<ExecutionMode> = capabilities
                .iter()
                .flat_map(|c| c.supported_modes.iter().copied())
                .filter(|m| *m != ExecutionMode::Shadow)
                .fold(Vec::new(), |mut modes, m| {
                    if !modes.contains(&m) {
                        modes.push(m);
                    }
                    modes
                });
            if modes.is_empty() {
                continue;
            }
            let schema = listed
                .iter()
                .find(|t| t.name == *tool)
                .map(|t| Value::Object((*t.input_schema).clone()));
            offers.push(crate::runtime::ToolOffer {
                tool: (*tool).to_owned(),
                modes,
                arguments: schema,
            });
        }
        Ok(offers)
    }

    /// Sends one tool call, any tool. Private: every caller is a method of
    /// this adapter that was handed the right to make that call.
    pub(super) async fn send(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> Result<(Value, Vec<ImageContent>), ComputerUseError> {
        let wait = std::time::Duration::from_millis(self.config.call_timeout_ms);
        self.send_within(tool, arguments, Some(wait)).await
    }

    /// One call, waited for at most `wait` (`None`: the caller bounds it).
    pub(super) async fn send_within(
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

    pub(super) async fn call_json(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, ComputerUseError> {
        Ok(self.send(tool, object(arguments)).await?.0)
    }

    pub(super) fn check_session(
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

    /// A read-only observation: `tool` (one of [`OBSERVATION_TOOLS`]) run
    /// through `execute_action` in shadow mode, under its own action id.
    pub async fn observe_shadow(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<Observation, ComputerUseError> {
        self.observe_shadow_in(&self.session_id()?, tool, arguments)
            .await
    }

    /// [`Self::observe_shadow`] in the runtime session `session_id` (the
    /// chain's, whatever session the runtime was switched to since).
    pub(super) async fn observe_shadow_in(
        &self,
        session_id: &str,
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
        // Upstream records every execution, shadow ones included, under its
        // own action id.
        let action_id = self.observation_id(session_id);
        let (mut answer, images) = self
            .send(
                protocol::EXECUTE_ACTION,
                object(json!({
                    "session_id": session_id,
                    "action_id": action_id,
                    "tool": tool,
                    "arguments": arguments,
                    "mode": "shadow",
                })),
            )
            .await?;
        let receipt: ExecutionReceipt = decode(protocol::EXECUTE_ACTION, "receipt", &mut answer)?;
        bind(
            "ExecutionReceipt",
            "sessionId",
            session_id,
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
    pub(super) fn observation_id(&self, session_id: &str) -> String {
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

    pub(super) fn action_arguments(request: &ActionRequest<'_>) -> Map<String, Value> {
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
        if let Some(resource) = &action.resource {
            put("resource", to_snake_keys(&json!(resource)));
        }
        args
    }
}
