//! `McpApprover`: the host's capability to approve an action.
//!
//! Approving is not the agent's to do. The runtime a `Session` drives has no
//! approving method, no way to make one, and its raw call refuses
//! `approve_action`. An approver exists only where the host asked for one
//! when it built the runtime ([`ComputerUseMcpRuntime::spawn_with_approver`],
//! [`ComputerUseMcpRuntime::connect_with_approver`]), or on a connection of
//! its own with the approver's credentials ([`McpApprover::connect`], for a
//! server that tells its callers apart, as `computer-use-server --listen`
//! does). Whoever is handed only the runtime, or a session over it, cannot
//! reach one. The grant's bearer token, if the server sends one, is never
//! kept: the adapter returns the grant and the host builds an
//! [`crate::chain::Approval`] from it.

use crate::contracts::catalogue::protocol::name as protocol;
use rmcp::RoleClient;
use rmcp::model::CallToolRequestParams;
use rmcp::service::Peer;
use serde_json::json;

use std::sync::Arc;

use rmcp::transport::IntoTransport;

use super::wire::{decode, decode_tool_result, object, transport_error};
use super::{ComputerUseMcpRuntime, McpRuntimeConfig};
use crate::ComputerUseError;
use crate::binding::bind;
use crate::contracts::{ApprovalGrant, ApprovalScope};

/// Asks a `computer-use-mcp` server for approval grants, on the host's behalf.
#[derive(Clone)]
pub struct McpApprover {
    peer: Peer<RoleClient>,
    principal_id: String,
    /// The connection this approver owns, when it has one of its own.
    _own: Option<Arc<ComputerUseMcpRuntime>>,
    /// How old the server accepts target evidence at execution.
    max_age: std::time::Duration,
}

impl std::fmt::Debug for McpApprover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpApprover")
            .field("principal_id", &self.principal_id)
            .finish_non_exhaustive()
    }
}

impl McpApprover {
    pub(super) fn new(peer: Peer<RoleClient>, principal_id: String) -> Self {
        Self {
            peer,
            principal_id,
            _own: None,
            max_age: crate::chain::DEFAULT_TARGET_EVIDENCE_MAX_AGE,
        }
    }

    /// An approver on a connection of its own, with the credentials
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
        let runtime = Arc::new(ComputerUseMcpRuntime::connect(transport, config).await?);
        Ok(Self {
            peer: runtime.peer.clone(),
            principal_id: runtime.config.principal_id.clone(),
            _own: Some(runtime),
            max_age: crate::chain::DEFAULT_TARGET_EVIDENCE_MAX_AGE,
        })
    }

    /// Asks the server for a grant for exactly the action `request` names,
    /// in the runtime session it was previewed in. The grant must be that
    /// session's and this principal's, and name the action and policy
    /// digests the person was shown: a grant for anything else (the agent
    /// previewed another action under the same id, say) is refused here,
    /// and never reaches a decision.
    pub async fn approve_action(
        &self,
        request: &GrantRequest,
        scope: ApprovalScope,
        uses: Option<u32>,
    ) -> Result<ApprovalGrant, ComputerUseError> {
        let arguments = object(json!({
            "session_id": request.session_id,
            "action_id": request.action_id,
            "scope": scope,
            "uses": uses,
        }));
        let params = CallToolRequestParams::new(protocol::APPROVE_ACTION).with_arguments(arguments);
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|err| transport_error(protocol::APPROVE_ACTION, err))?;
        let (mut answer, _) = decode_tool_result(protocol::APPROVE_ACTION, result)?;
        let grant: ApprovalGrant = decode(protocol::APPROVE_ACTION, "grant", &mut answer)?;
        let fields = grant.fields();
        bind(
            "ApprovalGrant",
            "sessionId",
            &request.session_id,
            &fields.session_id,
        )?;
        bind(
            "ApprovalGrant",
            "principalId",
            &self.principal_id,
            &fields.principal_id,
        )?;
        bind(
            "ApprovalGrant",
            "actionDigest",
            &request.action_digest,
            &fields.action_digest,
        )?;
        bind(
            "ApprovalGrant",
            "policyDigest",
            &request.policy_digest,
            &fields.policy_digest,
        )?;
        Ok(grant)
    }
}

impl McpApprover {
    /// Approves the action the checkpoint `id` seals in `store`: a grant
    /// for exactly that action ([`McpApprover::approve_action`] with
    /// [`GrantRequest::for_checkpoint`]), as the approval a decision
    /// records. A person may decide after the previewed envelope expired
    /// (a server grants only a live preview): then this approver's own
    /// connection previews the same action again (its sealed id, tool,
    /// arguments, mode, target, agent and group), the new preview must
    /// show exactly what was sealed (both digests, every field but the
    /// times), and the grant is asked for that preview; the agent's
    /// `Session::resume_decided` previews it once more and runs it on the
    /// grant. That needs an approver on a connection of its own
    /// ([`McpApprover::connect`]).
    ///
    /// A person may also decide after the target evidence aged (the server
    /// accepts evidence only while it is young: 30 s unless
    /// [`McpApprover::with_target_evidence_max_age`] says otherwise). Then
    /// the approver's connection looks at the target again; the fresh
    /// evidence must show the same application, process, window, title and
    /// tree, with bounds within [`crate::chain::BOUNDS_TOLERANCE_PX`]
    /// (only the pixels may differ), or the approval is refused with
    /// [`CheckpointRefusal::TargetChanged`](crate::chain::CheckpointRefusal::TargetChanged)
    /// and the person must be asked again. The action is previewed on the
    /// fresh evidence, the grant is for that preview, and the approval
    /// carries the evidence ([`crate::chain::Approval::fresh_target`]) for
    /// the agent to preview on.
    pub async fn approve_checkpoint(
        &self,
        store: Arc<dyn crate::chain::CheckpointStore>,
        id: &crate::chain::CheckpointId,
    ) -> Result<crate::chain::Approval, ComputerUseError> {
        let opened =
            crate::chain::open_for_grant(store, id, self._own.as_deref(), self.max_age).await?;
        let request = GrantRequest {
            action_digest: opened.action_digest.clone(),
            ..GrantRequest::for_checkpoint(&opened.view)
        };
        let grant = self
            .approve_action(&request, ApprovalScope::ExactAction, None)
            .await?;
        let approval = crate::chain::Approval::from_grant(&opened.view.action_id, &grant);
        Ok(match &opened.fresh_target {
            Some(target) => approval.with_fresh_target(target),
            None => approval,
        })
    }

    /// Hands the machine back to session `session_id` after the person
    /// took it over (the server paused it `user_takeover` on input it did
    /// not send): the person's act, which a server that tells its callers
    /// apart refuses to the agent's credential. The session must be the
    /// one the server answers for, of this principal, and running again.
    pub async fn resume_session(
        &self,
        session_id: &str,
    ) -> Result<crate::contracts::RuntimeSession, ComputerUseError> {
        let params = CallToolRequestParams::new(protocol::RESUME_SESSION)
            .with_arguments(object(json!({ "session_id": session_id })));
        let result = self
            .peer
            .call_tool(params)
            .await
            .map_err(|err| transport_error(protocol::RESUME_SESSION, err))?;
        let (mut answer, _) = decode_tool_result(protocol::RESUME_SESSION, result)?;
        let session: crate::contracts::RuntimeSession =
            decode(protocol::RESUME_SESSION, "session", &mut answer)?;
        bind(
            "RuntimeSession",
            "sessionId",
            session_id,
            &session.session_id,
        )?;
        bind(
            "RuntimeSession",
            "principalId",
            &self.principal_id,
            &session.principal_id,
        )?;
        Ok(session)
    }

    /// How old target evidence may be when the server executes an action
    /// (its `maxTargetAgeMs`; 30 s unless set). Evidence half that old is
    /// taken again before a grant is asked for it.
    pub fn with_target_evidence_max_age(mut self, max_age: std::time::Duration) -> Self {
        self.max_age = max_age;
        self
    }
}

/// What a host asks a grant for: one previewed action, as the person was
/// shown it (its session, id and both digests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantRequest {
    session_id: String,
    action_id: String,
    action_digest: String,
    policy_digest: String,
}

impl GrantRequest {
    /// The action `pending` waits to have approved.
    pub fn for_pending<R: crate::runtime::ComputerUseRuntime>(
        pending: &crate::chain::PendingApproval<R>,
    ) -> Self {
        Self::for_preview(pending.preview())
    }

    /// The action `preview` describes (a graph's interrupt carries it).
    pub fn for_preview(preview: &crate::contracts::ActionPreview) -> Self {
        let envelope = &preview.envelope;
        Self {
            session_id: envelope.session_id.clone(),
            action_id: envelope.action_id.clone(),
            action_digest: envelope.args_digest.clone(),
            policy_digest: preview.policy.policy_digest.clone(),
        }
    }

    /// The action a suspended checkpoint holds, as a person inspects it.
    pub fn for_checkpoint(view: &crate::chain::CheckpointView) -> Self {
        Self {
            session_id: view.session_id.clone(),
            action_id: view.action_id.clone(),
            action_digest: view.action_digest.clone(),
            policy_digest: view.policy_digest.clone(),
        }
    }

    /// The action `action_id`, previewed in `session_id` with these
    /// digests (as a report of a suspended action names them).
    pub fn new(
        session_id: impl Into<String>,
        action_id: impl Into<String>,
        action_digest: impl Into<String>,
        policy_digest: impl Into<String>,
    ) -> Self {
        Self {
            session_id: session_id.into(),
            action_id: action_id.into(),
            action_digest: action_digest.into(),
            policy_digest: policy_digest.into(),
        }
    }

    /// The action's id.
    pub fn action_id(&self) -> &str {
        &self.action_id
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
        McpApprover::new(self.peer.clone(), self.config.principal_id.clone())
    }
}
