//! `McpApprover`: the host's capability to approve an action.
//!
//! Approving is not the agent's to do. The runtime a `Session` drives has no
//! approving method, no way to make one, and its raw call refuses
//! `approve_action`. An approver exists only where the host asked for one
//! when it built the runtime ([`ComputerUseMcpRuntime::spawn_with_approver`],
//! [`ComputerUseMcpRuntime::connect_with_approver`]), or on a connection of
//! its own with the approver's credentials ([`McpApprover::connect`], for a
//! server that tells its callers apart, as `computer-use-sim --listen`
//! does). Whoever is handed only the runtime, or a session over it, cannot
//! reach one. The grant's bearer token, if the server sends one, is never
//! kept: the adapter returns the grant and the host builds an
//! [`crate::protocol::Approval`] from it.

use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::Peer;
use serde_json::json;

use std::sync::{Arc, Mutex};

use rmcp::transport::IntoTransport;

use super::wire::{current_session, decode, decode_tool_result, object, transport_error};
use super::{ComputerUseMcpRuntime, McpRuntimeConfig};
use crate::ComputerUseError;
use crate::binding::bind;
use crate::contracts::{ApprovalGrant, ApprovalScope};

/// Asks a `computer-use-mcp` server for approval grants, on the host's behalf.
#[derive(Clone)]
pub struct McpApprover {
    peer: Peer<RoleClient>,
    principal_id: String,
    session_id: Arc<Mutex<Option<String>>>,
    /// The connection this approver owns, when it has one of its own.
    _own: Option<Arc<ComputerUseMcpRuntime>>,
}

impl std::fmt::Debug for McpApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpApprover")
            .field("principal_id", &self.principal_id)
            .finish_non_exhaustive()
    }
}

impl McpApprover {
    pub(super) fn new(
        peer: Peer<RoleClient>,
        principal_id: String,
        session_id: Arc<Mutex<Option<String>>>,
    ) -> Self {
        Self {
            peer,
            principal_id,
            session_id,
            _own: None,
        }
    }

    /// An approver on a connection of its own, acting in the runtime
    /// session `config` names (its `session_id`), with the credentials
    /// `config` carries: for a server that grants approvals only to the
    /// approver's credential. The connection is kept while the approver
    /// (or a clone) lives.
    pub async fn connect<T, E, A>(
        transport: T,
        config: McpRuntimeConfig,
    ) -> Result<Self, ComputerUseError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        if config.session_id.is_none() {
            return Err(ComputerUseError::InvalidRequest {
                field: "sessionId".into(),
                message: "an approver acts in one runtime session: name it in the configuration (session_in_group)".into(),
            });
        }
        let runtime = Arc::new(ComputerUseMcpRuntime::connect(transport, config).await?);
        Ok(Self {
            peer: runtime.peer.clone(),
            principal_id: runtime.config.principal_id.clone(),
            session_id: Arc::clone(&runtime.session_id),
            _own: Some(runtime),
        })
    }

    /// Asks the server for a grant for the previewed action `action_id`. The
    /// grant must be this session's and this principal's.
    pub async fn approve_action(
        &self,
        action_id: &str,
        scope: ApprovalScope,
        uses: Option<u32>,
    ) -> Result<ApprovalGrant, ComputerUseError> {
        let session_id = current_session(&self.session_id)?;
        let arguments = object(json!({
            "session_id": session_id,
            "action_id": action_id,
            "scope": scope,
            "uses": uses,
        }));
        let params = CallToolRequestParams::new("approve_action").with_arguments(arguments);
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|err| transport_error("approve_action", err))?;
        let (mut answer, _) = decode_tool_result("approve_action", result)?;
        let grant: ApprovalGrant = decode("approve_action", "grant", &mut answer)?;
        let fields = grant.fields();
        bind(
            "ApprovalGrant",
            "sessionId",
            &session_id,
            &fields.session_id,
        )?;
        bind(
            "ApprovalGrant",
            "principalId",
            &self.principal_id,
            &fields.principal_id,
        )?;
        Ok(grant)
    }
}

impl ComputerUseMcpRuntime {
    /// [`ComputerUseMcpRuntime::spawn`], and the host's approver over the
    /// same server, returned apart: hand the runtime to sessions and
    /// agents, and keep the approver. It approves in whatever runtime
    /// session the runtime acts in.
    pub async fn spawn_with_approver(
        command: tokio::process::Command,
        config: McpRuntimeConfig,
    ) -> Result<(Self, McpApprover), ComputerUseError> {
        let runtime = Self::spawn(command, config).await?;
        let approver = runtime.host_approver();
        Ok((runtime, approver))
    }

    /// [`ComputerUseMcpRuntime::connect`], and the host's approver over the
    /// same connection, returned apart (see
    /// [`ComputerUseMcpRuntime::spawn_with_approver`]).
    pub async fn connect_with_approver<T, E, A>(
        transport: T,
        config: McpRuntimeConfig,
    ) -> Result<(Self, McpApprover), ComputerUseError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let runtime = Self::connect(transport, config).await?;
        let approver = runtime.host_approver();
        Ok((runtime, approver))
    }

    fn host_approver(&self) -> McpApprover {
        McpApprover::new(
            self.peer.clone(),
            self.config.principal_id.clone(),
            Arc::clone(&self.session_id),
        )
    }
}
