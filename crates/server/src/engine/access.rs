//! Who may use a simulator served over TCP (`computer-use-server --listen`).
//!
//! Over TCP any local process can reach the port, so every connection
//! presents a credential in MCP's own handshake: the `initialize`
//! request's `capabilities.experimental["adk/credential"]`, an object
//! `{"token": "..."}`. Each credential is one capability, and no two share
//! a token:
//!
//! - [`Role::Agent`]: one per agent, each minted by the host that started
//!   the server (never by an agent) and named. An agent reaches the tools
//!   that act, but only on what is its own: the sessions it started, and
//!   the leases and reservations taken in them. Another agent's session,
//!   lease or reservation is refused (`agent_not_owner`) whatever ids it
//!   knows. `approve_action` is refused (`approver_credential_required`),
//!   and so is `emergency_stop` (`host_credential_required`): one agent
//!   cannot stop the server for all.
//! - [`Role::Approver`]: the person's. Every tool, `approve_action` and
//!   `resume_session` included, on every session.
//! - [`Role::Host`]: the host's, who started the server. Every tool but
//!   `approve_action` and `resume_session` (the person's), on every
//!   session; it stops the server with `emergency_stop`.
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

/// The refusal code `emergency_stop` answers an agent's connection with.
pub const HOST_CREDENTIAL_REQUIRED: &str = "host_credential_required";

/// The refusal code an agent gets for another agent's session, lease or
/// reservation.
pub const AGENT_NOT_OWNER: &str = "agent_not_owner";

/// The name of the agent [`Credentials::generate`] and [`Credentials::new`]
/// make.
pub const DEFAULT_AGENT: &str = "agent";

/// The role a TCP connection authenticated as.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Role {
    /// One agent, by the name the host gave its credential: what it
    /// started is its own, and nothing else.
    Agent(String),
    /// The person's approver: every tool, on every session.
    Approver,
    /// The host that started the server: every tool but the person's
    /// (`approve_action`, `resume_session`), on every session.
    Host,
}

/// The credentials a simulator served over TCP accepts: one per agent,
/// the approver's, and the host's when one was given. Its `Debug` never
/// shows a token.
#[derive(Clone)]
pub struct Credentials {
    agents: Vec<(String, String)>,
    approver: String,
    host: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let agents: Vec<&str> = self.agents.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Credentials")
            .field("agents", &agents)
            .field("approver", &"<redacted>")
            .field("host", &self.host.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

fn fresh() -> Result<String, ComputerUseError> {
    adk_computer_use::auth::secret::random_token()
}

impl Credentials {
    /// Fresh random credentials (32 bytes from `/dev/urandom` each, as
    /// hex): one agent's, named [`DEFAULT_AGENT`], the approver's and the
    /// host's.
    pub fn generate() -> Result<Self, ComputerUseError> {
        Self::new(fresh()?, fresh()?)?.with_host(fresh()?)
    }

    /// The credentials given: `agent` for one agent named
    /// [`DEFAULT_AGENT`], `approver` for the approver, and no host's. Each
    /// is trimmed of surrounding whitespace (a file's final newline); an
    /// empty one, or the same token for two roles, is refused.
    pub fn new(
        agent: impl Into<String>,
        approver: impl Into<String>,
    ) -> Result<Self, ComputerUseError> {
        let approver = approver.into().trim().to_owned();
        if approver.is_empty() {
            return Err(ComputerUseError::InvalidRequest {
                field: "approverCredential".into(),
                message: "expected a credential, got an empty one".into(),
            });
        }
        Self {
            agents: Vec::new(),
            approver,
            host: None,
        }
        .with_agent(DEFAULT_AGENT, agent)
    }

    /// Adds the credential `token` of the agent `name` (letters, digits,
    /// `-`, `_` and `.`, at most 64). Refused for a name already given or
    /// a token another role holds.
    pub fn with_agent(
        mut self,
        name: &str,
        token: impl Into<String>,
    ) -> Result<Self, ComputerUseError> {
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !valid {
            return Err(ComputerUseError::InvalidRequest {
                field: "agentName".into(),
                message: format!(
                    "expected 1 to 64 letters, digits, '-', '_' or '.', got {:?}",
                    name.chars().take(80).collect::<String>()
                ),
            });
        }
        if self.agents.iter().any(|(given, _)| given == name) {
            return Err(ComputerUseError::InvalidRequest {
                field: "agentName".into(),
                message: format!("expected a name no other agent has, got {name:?} twice"),
            });
        }
        let token = self.distinct("agentCredential", token.into())?;
        self.agents.push((name.to_owned(), token));
        Ok(self)
    }

    /// Adds a fresh random credential for the agent `name`, minted here,
    /// by the host.
    pub fn mint_agent(self, name: &str) -> Result<Self, ComputerUseError> {
        self.with_agent(name, fresh()?)
    }

    /// Sets the host's credential. Refused for a token another role
    /// holds.
    pub fn with_host(mut self, token: impl Into<String>) -> Result<Self, ComputerUseError> {
        let token = self.distinct("hostCredential", token.into())?;
        self.host = Some(token);
        Ok(self)
    }

    /// `token`, trimmed, when it is not empty and no role holds it yet.
    fn distinct(&self, field: &str, token: String) -> Result<String, ComputerUseError> {
        let token = token.trim().to_owned();
        if token.is_empty() {
            return Err(ComputerUseError::InvalidRequest {
                field: field.into(),
                message: "expected a credential, got an empty one".into(),
            });
        }
        if self.role_of(&token).is_some() {
            return Err(ComputerUseError::InvalidRequest {
                field: field.into(),
                message: "expected a credential no other role holds".into(),
            });
        }
        Ok(token)
    }

    /// The credential of the agent named [`DEFAULT_AGENT`] (empty when
    /// there is none).
    pub fn agent(&self) -> &str {
        self.agent_named(DEFAULT_AGENT).unwrap_or_default()
    }

    /// The credential of the agent `name`.
    pub fn agent_named(&self, name: &str) -> Option<&str> {
        self.agents
            .iter()
            .find(|(given, _)| given == name)
            .map(|(_, token)| token.as_str())
    }

    /// Every agent's name and credential, in the order given.
    pub fn agents(&self) -> impl Iterator<Item = (&str, &str)> {
        self.agents.iter().map(|(n, t)| (n.as_str(), t.as_str()))
    }

    /// The approver's credential.
    pub fn approver(&self) -> &str {
        &self.approver
    }

    /// The host's credential, when one was given.
    pub fn host(&self) -> Option<&str> {
        self.host.as_deref()
    }

    /// The role `token` is the credential of, if any. Every credential is
    /// compared, each in constant time.
    pub fn role_of(&self, token: &str) -> Option<Role> {
        let same = |held: &str| adk_computer_use::auth::secret::same_secret(token, held);
        let mut role = None;
        for (name, held) in &self.agents {
            if same(held) && role.is_none() {
                role = Some(Role::Agent(name.clone()));
            }
        }
        if same(&self.approver) && role.is_none() {
            role = Some(Role::Approver);
        }
        if let Some(host) = &self.host
            && same(host)
            && role.is_none()
        {
            role = Some(Role::Host);
        }
        role
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
        self.role.get().cloned()
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Each credential is one capability: no token opens two roles, no
    /// name two agents, and each token is known as its own role only.
    #[test]
    fn every_credential_is_a_capability_of_its_own() {
        let credentials = Credentials::new("a".repeat(64), "b".repeat(64))
            .unwrap()
            .with_agent("bob", "c".repeat(64))
            .unwrap()
            .with_host("d".repeat(64))
            .unwrap();
        assert_eq!(
            credentials.role_of(&"a".repeat(64)),
            Some(Role::Agent(DEFAULT_AGENT.into()))
        );
        assert_eq!(
            credentials.role_of(&"c".repeat(64)),
            Some(Role::Agent("bob".into()))
        );
        assert_eq!(credentials.role_of(&"b".repeat(64)), Some(Role::Approver));
        assert_eq!(credentials.role_of(&"d".repeat(64)), Some(Role::Host));
        assert_eq!(credentials.role_of(&"e".repeat(64)), None);
        // A token another role holds, a name given twice, a bad name, an
        // empty token: refused.
        let again = || credentials.clone();
        assert!(again().with_agent("carol", "b".repeat(64)).is_err());
        assert!(again().with_agent("carol", "c".repeat(64)).is_err());
        assert!(again().with_host("a".repeat(64)).is_err());
        assert!(again().with_agent("bob", "f".repeat(64)).is_err());
        assert!(again().with_agent("a b", "f".repeat(64)).is_err());
        assert!(again().with_agent("", "f".repeat(64)).is_err());
        assert!(again().with_agent("carol", "  ").is_err());
        assert!(Credentials::new("x".repeat(64), "x".repeat(64)).is_err());
        // Minted ones are fresh and distinct.
        let minted = again().mint_agent("carol").unwrap();
        let carol = minted.agent_named("carol").unwrap().to_owned();
        assert_eq!(minted.role_of(&carol), Some(Role::Agent("carol".into())));
        assert!(
            !format!("{minted:?}").contains(&carol),
            "Debug shows no token"
        );
    }
}
