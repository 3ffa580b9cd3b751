//! `McpApprover`: the host's capability to approve an action.
//!
//! Approving is not the agent's to do. The runtime a `Session` drives has no
//! approving method, and the raw call refuses `approve_action`; only this
//! value, which the host takes from the runtime before handing the runtime
//! to a session, asks the server for a grant. The grant's bearer token, if
//! the server sends one, is never kept: the adapter returns the grant and
//! the host builds an [`crate::protocol::Approval`] from it.

use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::Peer;
use serde_json::json;

use std::sync::{Arc, Mutex};

use super::wire::{current_session, decode, decode_tool_result, object, transport_error};
use crate::ComputerUseError;
use crate::binding::bind;
use crate::contracts::{ApprovalGrant, ApprovalScope};

/// Asks a `computer-use-mcp` server for approval grants, on the host's behalf.
#[derive(Clone)]
pub struct McpApprover {
    peer: Peer<RoleClient>,
    principal_id: String,
    session_id: Arc<Mutex<Option<String>>>,
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
        }
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
