//! How a `ComputerUseMcpRuntime` is set up.

use crate::ComputerUseError;
use crate::contracts::catalogue::protocol::name as protocol;

/// Correlation ids recorded as `tracing` span fields on every call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    /// The host's trace id.
    pub trace_id: Option<String>,
    /// The host's correlation id (a request, a conversation turn).
    pub correlation_id: Option<String>,
}

/// Configuration of a `ComputerUseMcpRuntime`. Its `Debug` never shows
/// the credential.
#[derive(Clone, PartialEq, Eq)]
pub struct McpRuntimeConfig {
    /// The runtime session to act in; `None` until `start_session`.
    pub session_id: Option<String>,
    /// The principal the host verified; every answer must name it.
    pub principal_id: String,
    /// The tool whose capabilities `discover_capabilities` asks for.
    pub capability_tool: String,
    /// The execution group of the configured session (`start_session`
    /// sets it from the server's answer instead).
    pub execution_group_id: Option<String>,
    /// Correlation ids for tracing.
    pub trace: TraceContext,
    /// Reservation time-to-live asked for, in milliseconds.
    pub reservation_ttl_ms: u64,
    /// Lease time-to-live asked for, in milliseconds.
    pub lease_ttl_ms: u64,
    /// How long to wait for the one-writer lease, in milliseconds. Upstream
    /// queues a second acquire until the holder releases or its lease
    /// expires; past this wait the request is cancelled and the action ends
    /// with [`crate::ComputerUseError::TimedOut`].
    pub lease_wait_ms: u64,
    /// How long to wait for the server's MCP handshake, in milliseconds.
    pub connect_timeout_ms: u64,
    /// A server's own read-only tools the host vouches for, which
    /// [`ComputerUseMcpRuntime::call`](super::ComputerUseMcpRuntime::call)
    /// may then speak beside [`READ_ONLY_TOOLS`](super::READ_ONLY_TOOLS)
    /// (see [`McpRuntimeConfig::read_only_extension`]).
    read_only_extensions: Vec<String>,
    /// How long to wait for the answer to any one call (other than the
    /// lease wait), in milliseconds. Past it the call is cancelled and ends
    /// with [`crate::ComputerUseError::TimedOut`]; for `execute_action` that
    /// becomes [`crate::ComputerUseError::OutcomeUnknown`], since the server
    /// may have acted.
    pub call_timeout_ms: u64,
    /// The credential presented in the MCP handshake, for a server that
    /// asks for one (`computer-use-server --listen`): sent in the `initialize`
    /// request as `capabilities.experimental["adk/credential"] =
    /// {"token": ...}`. `None` sends none (a server spawned on stdio trusts
    /// the host that spawned it).
    credential: Option<String>,
}

impl std::fmt::Debug for McpRuntimeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            session_id,
            principal_id,
            capability_tool,
            execution_group_id,
            trace,
            reservation_ttl_ms,
            lease_ttl_ms,
            lease_wait_ms,
            connect_timeout_ms,
            read_only_extensions,
            call_timeout_ms,
            credential,
        } = self;
        f.debug_struct("McpRuntimeConfig")
            .field("session_id", session_id)
            .field("principal_id", principal_id)
            .field("capability_tool", capability_tool)
            .field("execution_group_id", execution_group_id)
            .field("trace", trace)
            .field("reservation_ttl_ms", reservation_ttl_ms)
            .field("lease_ttl_ms", lease_ttl_ms)
            .field("lease_wait_ms", lease_wait_ms)
            .field("connect_timeout_ms", connect_timeout_ms)
            .field("read_only_extensions", read_only_extensions)
            .field("call_timeout_ms", call_timeout_ms)
            .field("credential", &credential.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

pub use crate::contracts::CREDENTIAL_CAPABILITY;

/// A client transport that presents `credential` in the `initialize`
/// request it sends, and passes everything else through unchanged.
pub(super) struct Presenting<T> {
    pub(super) inner: T,
    pub(super) credential: Option<String>,
}

impl<T: rmcp::transport::Transport<rmcp::RoleClient>> rmcp::transport::Transport<rmcp::RoleClient>
    for Presenting<T>
{
    type Error = T::Error;

    fn send(
        &mut self,
        mut item: rmcp::service::TxJsonRpcMessage<rmcp::RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let rmcp::model::JsonRpcMessage::Request(request) = &mut item
            && let rmcp::model::ClientRequest::InitializeRequest(init) = &mut request.request
            && let Some(token) = &self.credential
        {
            let mut credential = rmcp::model::JsonObject::new();
            credential.insert("token".into(), serde_json::Value::String(token.clone()));
            init.params
                .capabilities
                .experimental
                .get_or_insert_with(Default::default)
                .insert(CREDENTIAL_CAPABILITY.into(), credential);
        }
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<rmcp::RoleClient>>> + Send
    {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl McpRuntimeConfig {
    /// A configuration for `principal_id`, with defaults for the rest.
    pub fn new(principal_id: impl Into<String>) -> Self {
        Self {
            session_id: None,
            principal_id: principal_id.into(),
            capability_tool: protocol::EXECUTE_ACTION.into(),
            execution_group_id: None,
            trace: TraceContext::default(),
            reservation_ttl_ms: 30_000,
            lease_ttl_ms: 30_000,
            lease_wait_ms: 30_000,
            connect_timeout_ms: 30_000,
            read_only_extensions: Vec::new(),
            call_timeout_ms: 60_000,
            credential: None,
        }
    }

    /// Refuses a configuration that could only fail later: an empty
    /// principal, a zero timeout or wait.
    pub(crate) fn check(&self) -> Result<(), ComputerUseError> {
        if self.principal_id.trim().is_empty() {
            return Err(ComputerUseError::InvalidRequest {
                field: "principalId".into(),
                message: "expected the principal the host verified, got an empty string".into(),
            });
        }
        for (field, value) in [
            ("connectTimeoutMs", self.connect_timeout_ms),
            ("callTimeoutMs", self.call_timeout_ms),
            ("leaseWaitMs", self.lease_wait_ms),
            ("leaseTtlMs", self.lease_ttl_ms),
            ("reservationTtlMs", self.reservation_ttl_ms),
        ] {
            if value == 0 {
                return Err(ComputerUseError::InvalidRequest {
                    field: field.into(),
                    message: "expected a positive number of milliseconds, got 0".into(),
                });
            }
        }
        Ok(())
    }

    /// Acts in an existing runtime session.
    pub fn session(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }

    /// Acts in an existing runtime session of `execution_group_id`.
    pub fn session_in_group(
        mut self,
        session_id: impl Into<String>,
        execution_group_id: impl Into<String>,
    ) -> Self {
        self.session_id = Some(session_id.into());
        self.execution_group_id = Some(execution_group_id.into());
        self
    }

    /// Asks for the capabilities of `tool`.
    pub fn capability_tool(mut self, tool: impl Into<String>) -> Self {
        self.capability_tool = tool.into();
        self
    }

    /// Lets [`ComputerUseMcpRuntime::call`](super::ComputerUseMcpRuntime::call)
    /// speak `tool`, a read-only tool of the server's own (outside the
    /// protocol), such as `computer-use-server`'s `sim_stats`. The host
    /// vouches that it changes nothing: it is the host's configuration, not
    /// the agent's. A tool the catalogue knows (a protocol tool, or a
    /// low-level desktop tool) is refused: those have their own doors.
    pub fn read_only_extension(
        mut self,
        tool: impl Into<String>,
    ) -> Result<Self, ComputerUseError> {
        let tool = tool.into();
        let known = crate::contracts::catalogue::protocol::find(&tool).is_some()
            || crate::contracts::catalogue::low_level_tool(&tool).is_some();
        if known || tool.trim().is_empty() {
            return Err(ComputerUseError::InvalidRequest {
                field: "readOnlyExtension".into(),
                message: format!(
                    "expected a server's own tool outside the protocol and the catalogue, got {tool:?}"
                ),
            });
        }
        if !self.read_only_extensions.contains(&tool) {
            self.read_only_extensions.push(tool);
        }
        Ok(self)
    }

    /// Whether `tool` is a read-only extension this configuration names.
    pub(crate) fn is_read_only_extension(&self, tool: &str) -> bool {
        self.read_only_extensions.iter().any(|t| t == tool)
    }

    /// Waits at most `wait_ms` milliseconds for the one-writer lease.
    pub fn lease_wait(mut self, wait_ms: u64) -> Self {
        self.lease_wait_ms = wait_ms;
        self
    }

    /// Waits at most `connect_ms` for the handshake and `call_ms` for each
    /// call's answer, in milliseconds.
    pub fn timeouts(mut self, connect_ms: u64, call_ms: u64) -> Self {
        self.connect_timeout_ms = connect_ms;
        self.call_timeout_ms = call_ms;
        self
    }

    /// Whether a credential is presented in the handshake.
    pub fn has_credential(&self) -> bool {
        self.credential.is_some()
    }

    /// The credential, for the transport that presents it.
    pub(super) fn credential(&self) -> Option<&str> {
        self.credential.as_deref()
    }

    /// Presents `token` in the MCP handshake: for a server that tells its
    /// callers apart (`computer-use-server --listen`), it goes in the
    /// `initialize` request as `capabilities.experimental["adk/credential"]
    /// = {"token": ...}`. The token is never shown again: not by `Debug`,
    /// and not by any accessor, so a runtime handed to an agent does not
    /// hand it the credential it was built with.
    pub fn with_credential(mut self, token: impl Into<String>) -> Self {
        self.credential = Some(token.into());
        self
    }

    /// Records these correlation ids on every call's span.
    pub fn trace(mut self, trace: TraceContext) -> Self {
        self.trace = trace;
        self
    }
}
