//! [`GovernedComputerUse`]: the chain as an adk-core `Tool` an `LlmAgent`
//! can be given.
//!
//! The model sees the allowed-action schema and nothing else: a tool, its
//! arguments, a mode, data labels. What it may not write it cannot: the
//! schema refuses an unknown field (an `approval`, a `grantId`, a
//! `runtimeApproved` beside the action), and the action's own arguments
//! refuse the chain's ids and any approval key
//! ([`FORBIDDEN_ARGUMENTS`](crate::agent::formats::FORBIDDEN_ARGUMENTS)).
//! Every call runs the whole chain (observe, preview, route; then reserve,
//! lease, execute, verify when policy allows it).
//!
//! An action that needs a person comes back pending, naming what waits,
//! and is held under the function call's id. Only the host approves it:
//! adk's tool confirmation decision for that call
//! ([`RunConfig::tool_confirmation_decisions`](adk_core::RunConfig::tool_confirmation_decisions),
//! bound to the call's arguments by its fingerprint when the host gives
//! one), turned into the runtime's approval by the host's [`HostGrant`].
//! A denial drops what waits; nothing was reserved.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use adk_core::{AdkError, Tool, ToolConfirmationDecision, ToolContext, tool_call_fingerprint};
use serde_json::{Value, json};

use crate::ComputerUseError;
use crate::agent::{AllowedActions, PlannedStep};
use crate::chain::{Approval, ChainOutcome, PendingApproval, Session, Verified};
use crate::contracts::ActionPreview;
use crate::runtime::ComputerUseRuntime;

/// What a [`HostGrant`] returns.
pub type GrantFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Approval, ComputerUseError>> + Send + 'a>>;

/// The host's side of an approval: turns a person's confirmation of the
/// action `preview` describes into the approval the runtime accepts (a
/// grant it issues, or its own record that it holds one). The model never
/// reaches it.
pub trait HostGrant: Send + Sync {
    /// The approval of the action `preview` describes.
    fn grant<'a>(&'a self, preview: &'a ActionPreview) -> GrantFuture<'a>;
}

/// A runtime that keeps the grant itself (upstream's `runtimeApproved`).
#[derive(Debug, Clone, Copy, Default)]
pub struct RuntimeHeldGrant;

impl HostGrant for RuntimeHeldGrant {
    fn grant<'a>(&'a self, preview: &'a ActionPreview) -> GrantFuture<'a> {
        let envelope = &preview.envelope;
        let approval = Approval::runtime_held(
            &envelope.action_id,
            &envelope.args_digest,
            &preview.policy.policy_digest,
        );
        Box::pin(async move { Ok(approval) })
    }
}

#[cfg(feature = "mcp")]
impl HostGrant for crate::mcp::McpApprover {
    fn grant<'a>(&'a self, preview: &'a ActionPreview) -> GrantFuture<'a> {
        Box::pin(async move {
            let grant = self
                .approve_action(
                    &crate::mcp::GrantRequest::for_preview(preview),
                    crate::contracts::ApprovalScope::ExactAction,
                    None,
                )
                .await?;
            Ok(Approval::from_grant(&preview.envelope.action_id, &grant))
        })
    }
}

/// An action held for the host, and the fingerprint of the call that
/// proposed it.
struct Held<R: ComputerUseRuntime> {
    pending: PendingApproval<R>,
    fingerprint: String,
}

/// What the tool keeps by function call id: the actions waiting for the
/// host, and the calls the host has decided (with the fingerprint of the
/// arguments decided on and what the call answered), which are never
/// decided again.
struct Calls<R: ComputerUseRuntime> {
    held: HashMap<String, Held<R>>,
    decided: HashMap<String, (String, Value)>,
}

/// The governed chain as an adk-core tool (name `computer_use`).
pub struct GovernedComputerUse<R: ComputerUseRuntime> {
    session: Arc<Session<R>>,
    allowed: AllowedActions,
    grant: Arc<dyn HostGrant>,
    calls: Mutex<Calls<R>>,
    description: String,
}

/// The tool's name.
pub const TOOL_NAME: &str = "computer_use";

impl<R: ComputerUseRuntime + Send + Sync + 'static> GovernedComputerUse<R> {
    /// The tool over `session`, proposing only what `allowed` allows, with
    /// `grant` the host's way to turn a person's confirmation into the
    /// runtime's approval.
    pub fn new(
        session: Arc<Session<R>>,
        allowed: AllowedActions,
        grant: Arc<dyn HostGrant>,
    ) -> Self {
        let tools: Vec<&str> = allowed.tools().collect();
        let description = format!(
            "Acts on the desktop through a governed chain (observe, preview, approve, reserve, lease, one action, verify). Tools: {}. An action that needs a person's approval returns status pending_approval: do not call again for it; the host answers.",
            tools.join(", ")
        );
        Self {
            session,
            allowed,
            grant,
            calls: Mutex::new(Calls {
                held: HashMap::new(),
                decided: HashMap::new(),
            }),
            description,
        }
    }

    /// How many actions wait for the host.
    pub fn waiting(&self) -> usize {
        self.lock().held.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Calls<R>> {
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The host's decision for the call `call` with `fingerprint`: only one
    /// given for that call id, and, when the host bound it to arguments,
    /// to these.
    fn decision(
        ctx: &dyn ToolContext,
        call: &str,
        fingerprint: &str,
    ) -> Option<ToolConfirmationDecision> {
        let config = ctx.run_config()?;
        if let Some(bound) = config.tool_confirmation_fingerprints.get(call)
            && bound != fingerprint
        {
            return None;
        }
        config.tool_confirmation_decisions.get(call).copied()
    }

    async fn answer(
        &self,
        ctx: Arc<dyn ToolContext>,
        args: Value,
    ) -> Result<Value, ComputerUseError> {
        let call = ctx.function_call_id().to_owned();
        let fingerprint = tool_call_fingerprint(TOOL_NAME, &args);
        let action = match self.allowed.check(&args)? {
            PlannedStep::Act(action) => *action,
            PlannedStep::Done { summary } => {
                return Ok(json!({ "status": "done", "summary": summary }));
            }
        };
        // A call the host has decided is never decided again: replayed
        // with its arguments, it answers what it answered; with others, it
        // is refused. Nothing runs either way.
        let held = {
            let mut calls = self.lock();
            if let Some((decided_on, answered)) = calls.decided.get(&call) {
                return Ok(if *decided_on == fingerprint {
                    answered.clone()
                } else {
                    json!({
                        "status": "refused",
                        "reason": "this call id was already decided by the host, for other arguments: propose the action in a new call",
                    })
                });
            }
            calls.held.remove(&call)
        };
        if let Some(held) = held {
            if held.fingerprint != fingerprint {
                // Another action under the same call id: what waits stays.
                self.lock().held.insert(call, held);
                return Err(ComputerUseError::invalid(
                    "GovernedComputerUse",
                    "arguments",
                    "the arguments of the call that is waiting for approval",
                    "other arguments",
                ));
            }
            let decision = Self::decision(ctx.as_ref(), &call, &fingerprint);
            if decision.is_none() {
                let shown = pending_json(&held.pending);
                self.lock().held.insert(call, held);
                return Ok(shown);
            }
            // Spent before anything runs, so a replay racing this one
            // finds it decided.
            let action_id = held.pending.action_id().to_owned();
            let in_progress = json!({ "status": "in_progress", "actionId": action_id });
            self.lock()
                .decided
                .insert(call.clone(), (fingerprint.clone(), in_progress));
            let answered = match decision {
                Some(ToolConfirmationDecision::Approve) => self.approve(held).await,
                _ => Ok(json!({ "status": "denied", "actionId": action_id })),
            };
            let recorded = match &answered {
                Ok(value) => value.clone(),
                Err(err) => json!({
                    "status": "error",
                    "actionId": action_id,
                    "error": err.to_string(),
                }),
            };
            self.lock().decided.insert(call, (fingerprint, recorded));
            return answered;
        }
        match self.session.run(action).await? {
            ChainOutcome::Completed(done) => Ok(finished(&done)),
            ChainOutcome::Blocked(blocked) => Ok(json!({
                "status": "blocked",
                "reason": blocked.blocker(),
            })),
            ChainOutcome::NeedsApproval(pending) => {
                let shown = pending_json(&pending);
                self.lock().held.insert(
                    call,
                    Held {
                        pending,
                        fingerprint,
                    },
                );
                Ok(shown)
            }
        }
    }
}

impl<R: ComputerUseRuntime + Send + Sync + 'static> GovernedComputerUse<R> {
    /// Runs what waits, with the host's grant for it.
    async fn approve(&self, held: Held<R>) -> Result<Value, ComputerUseError> {
        let approval = self.grant.grant(held.pending.preview()).await?;
        let done = held.pending.approve(approval)?.complete().await?;
        Ok(finished(&done))
    }
}

fn finished(done: &Verified) -> Value {
    let outcome = done.outcome();
    json!({
        "status": outcome.status(),
        "committed": outcome.is_committed(),
        "verified": outcome.is_verified(),
        "receiptId": done.receipt_id(),
        "verificationDetail": outcome.detail(),
    })
}

fn pending_json<R: ComputerUseRuntime>(pending: &PendingApproval<R>) -> Value {
    json!({
        "status": "pending_approval",
        "actionId": pending.action_id(),
        "actionDigest": pending.action_digest(),
        "policyDigest": pending.policy_digest(),
        "waitsFor": "the host's approval of this call",
    })
}

#[adk_core::async_trait]
impl<R: ComputerUseRuntime + Send + Sync + 'static> Tool for GovernedComputerUse<R> {
    fn name(&self) -> &str {
        TOOL_NAME
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn is_long_running(&self) -> bool {
        true
    }

    fn parameters_schema(&self) -> Option<Value> {
        Some(self.allowed.schema())
    }

    fn required_scopes(&self) -> &[&str] {
        &["computer:plan"]
    }

    async fn execute(&self, ctx: Arc<dyn ToolContext>, args: Value) -> adk_core::Result<Value> {
        self.answer(ctx, args)
            .await
            .map_err(|err| AdkError::tool(err.to_string()))
    }
}
