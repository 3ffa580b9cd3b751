//! The runtime trait over MCP: the governed chain's only way to the
//! server's state-changing tools, each reached with the proof its stage
//! made.

use crate::contracts::catalogue::protocol::name as protocol;
use crate::contracts::catalogue::tool;
use serde_json::{Value, json};

use super::wire::{decode, lock, object};
use super::{ComputerUseMcpRuntime, evidence};
use crate::ComputerUseError;
use crate::binding::{self, bind};
use crate::contracts::*;
use crate::runtime::{
    ActionRequest, ComputerUseRuntime, ExecuteProof, LeaseProof, LeaseReleaseProof, NamedEffect,
    Observation, ObservationScope, PreviewAnswer, ReleaseProof, ReserveProof, SessionContext,
    TaskLeaseProof,
};

/// What one `acquire_control_lease` asks for.
struct LeaseAsk<'a> {
    session_id: &'a str,
    mode: ExecutionMode,
    ttl_ms: u64,
    budget: u32,
    agent_id: Option<&'a str>,
    app_id: Option<&'a str>,
    window_id: Option<&'a WindowId>,
}

impl ComputerUseMcpRuntime {
    /// Acquires a control lease: for one action, or for a task. A second
    /// acquire waits in the server's queue, bounded here: when the wait
    /// runs out the call is dropped, and rmcp tells the server the request
    /// was cancelled, so it leaves the queue.
    async fn acquire(&self, ask: LeaseAsk<'_>) -> Result<ControlLease, ComputerUseError> {
        let kind = if ask.mode == ExecutionMode::Foreground {
            "exclusive"
        } else {
            "cooperative"
        };
        let wait = std::time::Duration::from_millis(self.config.lease_wait_ms);
        let call = self.send_within(
            protocol::ACQUIRE_CONTROL_LEASE,
            object(json!({
                "session_id": ask.session_id,
                "kind": kind,
                "mode": ask.mode,
                "ttl_ms": ask.ttl_ms,
                "action_budget": ask.budget,
                "agent_id": ask.agent_id,
                "app_ids": ask.app_id.map(|app| vec![app]),
                "window_ids": ask.window_id.map(|w| vec![w]),
            })),
            None,
        );
        let (mut answer, _) =
            tokio::time::timeout(wait, call)
                .await
                .map_err(|_| ComputerUseError::TimedOut {
                    operation: protocol::ACQUIRE_CONTROL_LEASE.into(),
                    waited_ms: self.config.lease_wait_ms,
                })??;
        decode(protocol::ACQUIRE_CONTROL_LEASE, "lease", &mut answer)
    }

    /// Drops the capabilities kept from the last discovery: the next
    /// observation asks the server again.
    fn forget_capabilities(&self) {
        *lock(&self.capabilities) = None;
    }

    /// The session an observation is for: the scope's (the chain's), or
    /// the runtime's current one for a scope that names none.
    fn scope_session(&self, scope: &ObservationScope) -> Result<String, ComputerUseError> {
        if scope.session_id.is_empty() {
            self.session_id()
        } else {
            Ok(scope.session_id.clone())
        }
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
        // What a server can do changes rarely, and the answer informs (the
        // preview's own capability is what binds): the last answer for the
        // same session, tool and app is reused until the server refuses or
        // blocks an action, which may mean it changed.
        let tool = scope
            .tool
            .as_deref()
            .unwrap_or(&self.config.capability_tool);
        if let Some((key, known)) = &*lock(&self.capabilities)
            && key.0 == scope.session_id
            && key.1 == tool
            && key.2 == scope.app_id
        {
            return Ok(known.clone());
        }
        let key = (
            scope.session_id.clone(),
            tool.to_owned(),
            scope.app_id.clone(),
        );
        let mut answer = self
            .call_json(
                protocol::GET_EXECUTION_CAPABILITIES,
                json!({ "tool": key.1, "app_id": key.2 }),
            )
            .await?;
        let capabilities: Vec<ExecutionCapability> = decode(
            protocol::GET_EXECUTION_CAPABILITIES,
            "capabilities",
            &mut answer,
        )?;
        *lock(&self.capabilities) = Some((key, capabilities.clone()));
        Ok(capabilities)
    }

    async fn observe_visual(
        &self,
        scope: &ObservationScope,
    ) -> Result<Observation, ComputerUseError> {
        // A session bound to one window frames that window (upstream's
        // `target_window_id`): its evidence then does not go stale when
        // another part of the screen repaints.
        let arguments = match &scope.window_id {
            Some(WindowId::Number(window)) if scope.app_id.is_some() => {
                json!({ "target_window_id": window })
            }
            _ => json!({}),
        };
        self.observe_shadow_in(&self.scope_session(scope)?, tool::SNAPSHOT, arguments)
            .await
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
                self.observe_shadow_in(
                    &self.scope_session(scope)?,
                    tool::GET_UI_TREE,
                    json!({ "window_id": window, "app_id": app }),
                )
                .await
            }
            None => {
                self.observe_shadow_in(&self.scope_session(scope)?, tool::LIST_WINDOWS, json!({}))
                    .await
            }
        }
    }

    async fn preview_action(
        &self,
        request: &ActionRequest<'_>,
    ) -> Result<PreviewAnswer, ComputerUseError> {
        let arguments = Self::action_arguments(request);
        let answer = self.send(protocol::PREVIEW_ACTION, arguments.clone()).await;
        let preview: Result<ActionPreview, _> = answer.and_then(|(answer, _)| {
            serde_json::from_value(answer)
                .map_err(|err| ComputerUseError::decode("preview_action answer", err))
        });
        // A refusal or a block may mean the server's capabilities changed.
        if preview.as_ref().map_or(true, |p| !p.executable) {
            self.forget_capabilities();
        }
        let preview = preview?;
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
                protocol::RESERVE_TARGET,
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
        decode(protocol::RESERVE_TARGET, "reservation", &mut answer).map(Some)
    }

    async fn release_target(&self, proof: &ReleaseProof<'_>) -> Result<(), ComputerUseError> {
        let reservation = proof.reservation();
        // In this adapter's session, whatever session the answer claimed.
        let answer = self
            .call_json(
                protocol::RELEASE_TARGET_RESERVATION,
                json!({ "session_id": proof.session_id(), "reservation_id": reservation.reservation_id }),
            )
            .await;
        // No longer active is what a release is for: a release whose answer
        // was lost and is sent again finds it so.
        let mut answer = match answer {
            Err(err) if err.refusal_code() == Some("reservation_not_active") => return Ok(()),
            other => other?,
        };
        let released: TargetReservation = decode(
            protocol::RELEASE_TARGET_RESERVATION,
            "reservation",
            &mut answer,
        )?;
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
        let target = envelope.target.as_ref();
        self.acquire(LeaseAsk {
            session_id: &envelope.session_id,
            mode: envelope.requested_mode,
            ttl_ms: self.config.lease_ttl_ms,
            budget: 1,
            agent_id: envelope.agent_id.as_deref(),
            app_id: target.map(|t| t.app_id.as_str()),
            window_id: target.and_then(|t| t.window_id.as_ref()),
        })
        .await
    }

    async fn acquire_task_lease(
        &self,
        proof: &TaskLeaseProof<'_>,
    ) -> Result<ControlLease, ComputerUseError> {
        self.acquire(LeaseAsk {
            session_id: proof.session_id(),
            mode: proof.mode(),
            // Whole milliseconds, at least one: the terms were checked
            // against the protocol's bounds when they were made.
            ttl_ms: u64::try_from(proof.ttl().as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            budget: proof.budget(),
            agent_id: proof.agent_id(),
            app_id: Some(proof.app_id()),
            window_id: proof.window_id(),
        })
        .await
    }

    async fn release_lease(&self, proof: &LeaseReleaseProof<'_>) -> Result<(), ComputerUseError> {
        let lease = proof.lease();
        let answer = self
            .call_json(
                protocol::RELEASE_CONTROL_LEASE,
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
        let released: ControlLease = decode(protocol::RELEASE_CONTROL_LEASE, "lease", &mut answer)?;
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
        let answer = self.send(protocol::EXECUTE_ACTION, arguments).await;
        if answer.is_err() {
            self.forget_capabilities();
        }
        let (mut answer, _) = answer?;
        decode(protocol::EXECUTE_ACTION, "receipt", &mut answer)
    }

    /// The postcondition the server announced it checks for `effect`
    /// (`capabilities.experimental["adk/effect-checks"]` in its
    /// `initialize` answer); none when it announced none.
    fn effect_postcondition(&self, effect: &NamedEffect<'_>) -> Option<ActionPostcondition> {
        self.announced.postcondition(effect)
    }

    /// The server's evidence is its `action.verified` event, published while
    /// it executed the action (before `action.committed`): a record, not a
    /// fresh look at the desktop.
    fn evidence_is_recorded(&self) -> bool {
        true
    }

    /// The server's own check of the action, read from its `action.verified`
    /// event; `None` when it reported none.
    async fn evidence(
        &self,
        receipt: &ExecutionReceipt,
        postcondition: Option<&ActionPostcondition>,
    ) -> Result<Option<Value>, ComputerUseError> {
        // The receipt's session's events: the chain's session, whatever
        // session the runtime was switched to since.
        let session_id = receipt.session_id.as_str();
        let mut checks = self.checks.lock().await;
        checks.reading(session_id);
        if checks.get(&receipt.action_id).is_none() {
            // Bounded: a server that keeps answering full pages cannot hold
            // verification (and the lease it waits to release) forever.
            for _ in 0..evidence::MAX_PAGES {
                let after = checks.after();
                let page = self
                    .events_of(session_id, Some(after), Some(evidence::PAGE))
                    .await?;
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
        self.session_state_call(protocol::PAUSE_SESSION, reason)
            .await
            .map(|_| ())
    }

    async fn stop_session(&self, reason: Option<&str>) -> Result<(), ComputerUseError> {
        self.session_state_call(protocol::STOP_SESSION, reason)
            .await
            .map(|_| ())
    }

    async fn emergency_stop(&self, reason: Option<&str>) -> Result<(), ComputerUseError> {
        let answer = self
            .call_json(protocol::EMERGENCY_STOP, json!({ "reason": reason }))
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
