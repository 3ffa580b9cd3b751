//! Who may use a simulator served over TCP (`computer-use-server --listen`).
//!
//! Over TCP any local process can reach the port, so every connection
//! presents a credential in MCP's own handshake: the `initialize`
//! request's `capabilities.experimental["adk/credential"]`, an object
//! `{"token": "..."}`. Two credentials exist, one per role:
//!
//! - [`Role::Agent`]: every tool except `approve_action`, which is
//!   refused `approver_credential_required` (the agent must never approve
//!   its own action);
//! - [`Role::Approver`]: every tool, `approve_action` included.
//!
//! An `initialize` with no credential or a wrong one is answered with a
//! JSON-RPC error and the connection is closed: the handshake fails. A
//! client that skips `initialize` (rmcp lets a request that carries its
//! protocol version inline open a connection) has every request answered
//! with a JSON-RPC error. The role is kept per connection, never in the
//! desktop's shared state.
//!
//! Over stdio (and in-process, [`crate::engine::spawn`]) there is no
//! credential: the host that spawned the simulator is trusted.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use rmcp::model::{ErrorCode, InitializeRequestParams};
use rmcp::{ErrorData as McpError, RoleServer};
use tokio::sync::watch;

use adk_computer_use::ComputerUseError;

/// The key under which a client presents its credential: the adapter's.
pub use adk_computer_use::contracts::CREDENTIAL_CAPABILITY;

/// The refusal code `approve_action` answers a connection that holds the
/// agent credential with.
pub const APPROVER_CREDENTIAL_REQUIRED: &str = "approver_credential_required";

/// The role a TCP connection authenticated as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The agent: every tool but `approve_action`.
    Agent,
    /// The host's approver: every tool, `approve_action` included.
    Approver,
}

/// The two credentials a simulator served over TCP accepts. Its `Debug`
/// never shows a token.
#[derive(Clone)]
pub struct Credentials {
    agent: String,
    approver: String,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("agent", &"<redacted>")
            .field("approver", &"<redacted>")
            .finish()
    }
}

impl Credentials {
    /// Two fresh random credentials (32 bytes from `/dev/urandom` each,
    /// as hex).
    pub fn generate() -> Result<Self, ComputerUseError> {
        Self::new(
            adk_computer_use::auth::secret::random_token()?,
            adk_computer_use::auth::secret::random_token()?,
        )
    }

    /// The credentials given: `agent` for the agent role, `approver` for
    /// the approver role. Each is trimmed of surrounding whitespace (a
    /// file's final newline); an empty one, or the same token for both
    /// roles, is refused.
    pub fn new(
        agent: impl Into<String>,
        approver: impl Into<String>,
    ) -> Result<Self, ComputerUseError> {
        let agent = agent.into().trim().to_owned();
        let approver = approver.into().trim().to_owned();
        for (field, token) in [
            ("agentCredential", &agent),
            ("approverCredential", &approver),
        ] {
            if token.is_empty() {
                return Err(ComputerUseError::InvalidRequest {
                    field: field.into(),
                    message: "expected a credential, got an empty one".into(),
                });
            }
        }
        if adk_computer_use::auth::secret::same_secret(&agent, &approver) {
            return Err(ComputerUseError::InvalidRequest {
                field: "approverCredential".into(),
                message: "expected a credential other than the agent's".into(),
            });
        }
        Ok(Self { agent, approver })
    }

    /// The agent's credential.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The approver's credential.
    pub fn approver(&self) -> &str {
        &self.approver
    }

    /// The role `token` is the credential of, if any. Both comparisons
    /// are always made, each in constant time.
    pub fn role_of(&self, token: &str) -> Option<Role> {
        let agent = adk_computer_use::auth::secret::same_secret(token, &self.agent);
        let approver = adk_computer_use::auth::secret::same_secret(token, &self.approver);
        match (agent, approver) {
            (true, _) => Some(Role::Agent),
            (_, true) => Some(Role::Approver),
            _ => None,
        }
    }
}

/// One TCP connection: the credentials it must present, the role it
/// authenticated as, whether it is gone, and the leases granted on it.
pub(crate) struct Connection {
    credentials: Arc<Credentials>,
    role: OnceLock<Role>,
    gone: watch::Receiver<bool>,
    leases: Mutex<Vec<String>>,
}

/// A refusal of the handshake or of a request, as a JSON-RPC error. It
/// never repeats the token.
fn unauthenticated(message: &str) -> McpError {
    McpError::new(
        ErrorCode::INVALID_REQUEST,
        format!("computer-use-server: {message}"),
        Some(serde_json::json!({ "error": "unauthenticated" })),
    )
}

impl Connection {
    /// A connection that must authenticate against `credentials`; `gone`
    /// turns `true` (or its sender is dropped) once the client left.
    pub(crate) fn new(credentials: Arc<Credentials>, gone: watch::Receiver<bool>) -> Self {
        Self {
            credentials,
            role: OnceLock::new(),
            gone,
            leases: Mutex::new(Vec::new()),
        }
    }

    /// Checks the credential of an `initialize` and keeps the role.
    pub(crate) fn authenticate(&self, init: &InitializeRequestParams) -> Result<(), McpError> {
        if self.role.get().is_some() {
            return Err(unauthenticated("this connection is already initialized"));
        }
        let token = init
            .capabilities
            .experimental
            .as_ref()
            .and_then(|map| map.get(CREDENTIAL_CAPABILITY))
            .and_then(|credential| credential.get("token"))
            .and_then(serde_json::Value::as_str);
        let Some(token) = token else {
            return Err(unauthenticated(&format!(
                "a credential is required: capabilities.experimental[{CREDENTIAL_CAPABILITY:?}] = {{\"token\": ...}} in initialize"
            )));
        };
        let Some(role) = self.credentials.role_of(token) else {
            return Err(unauthenticated("the credential is not valid"));
        };
        let _ = self.role.set(role);
        Ok(())
    }

    /// The role, once authenticated.
    pub(crate) fn role(&self) -> Option<Role> {
        self.role.get().copied()
    }

    /// The refusal of any request before authentication.
    pub(crate) fn not_authenticated() -> McpError {
        unauthenticated("initialize with a credential first")
    }

    /// Whether the client has left.
    pub(crate) fn is_gone(&self) -> bool {
        *self.gone.borrow() || self.gone.has_changed().is_err()
    }

    /// Completes once the client has left.
    pub(crate) async fn departed(&self) {
        let mut gone = self.gone.clone();
        let _ = gone.wait_for(|gone| *gone).await;
    }

    /// Remembers a lease granted on this connection.
    pub(crate) fn hold(&self, lease_id: &str) {
        self.leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(lease_id.to_owned());
    }

    /// The leases granted on this connection, taken.
    pub(crate) fn take_leases(&self) -> Vec<String> {
        std::mem::take(&mut *self.leases.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// A server transport that tells its [`Connection`] the moment the client
/// leaves: when the stream ends, or when the transport is dropped.
pub(crate) struct Watched<T> {
    inner: T,
    gone: watch::Sender<bool>,
}

impl<T> Watched<T> {
    /// `inner`, watched through `gone`.
    pub(crate) fn new(inner: T, gone: watch::Sender<bool>) -> Self {
        Self { inner, gone }
    }
}

impl<T: rmcp::transport::Transport<RoleServer>> rmcp::transport::Transport<RoleServer>
    for Watched<T>
{
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<rmcp::service::RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await;
        if message.is_none() {
            self.gone.send_replace(true);
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.gone.send_replace(true);
        self.inner.close().await
    }
}
