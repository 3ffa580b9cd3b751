//! The agent loop: observe, plan, govern, feed the outcome back, repeat.
//!
//! The loop is the only place a planner's words meet the chain, and it adds
//! nothing of its own authority: each output is checked against the allowed
//! actions (or mapped from a model's computer-use format and then checked),
//! given a fresh action id by the loop, and run through the session's
//! chain, which binds identity, scope, lease and approval as it does for
//! any caller. It stops on `done`, on the step budget, on a blocked action,
//! on an approval the host must give (suspended to a sealed checkpoint when
//! a store is given), on OpenAI safety checks nobody acknowledged, or when
//! interrupted. Every planned step is journaled.
//!
//! An interrupt does not wait for the step in progress to reach its end:
//! observing, planning, previewing and a model's wait are raced against it,
//! so a planner that never answers cannot keep the loop running. The one
//! await that is not raced is the governed mutation itself
//! ([`crate::chain::Approved::complete`]), which runs to its receipt so
//! the journal says what happened; the runtime bounds it, and a
//! [`crate::runtime::CancellationBridge`] revokes its authority first.

use crate::contracts::catalogue::tool;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};

use super::allowed::{AllowedActions, PlannedStep};
use super::formats::{self, MappedAction};
use super::planner::{PlanContext, PlanOutput, Planner, StepRecord};
use crate::ComputerUseError;
use crate::chain::{Approval, ChainOutcome, Route, Session};
use crate::clock::format_rfc3339;
use crate::contracts::{ActionPreview, ExecutionMode};
use crate::journal::events;
use crate::runtime::{AgentInterrupter, ComputerUseRuntime, ProposedAction};

use super::report::{AgentReport, AgentStop};

/// Stops the loop: between steps, and during an observation, a planner
/// call, a preview or a model's wait (see the module docs). Give it to a
/// [`crate::runtime::CancellationBridge`], which revokes the desktop's
/// authority first.
#[derive(Debug, Clone, Default)]
pub struct LoopInterrupt {
    stopped: Arc<AtomicBool>,
    wake: Arc<tokio::sync::Notify>,
}

impl LoopInterrupt {
    /// Whether the loop was told to stop.
    pub fn is_set(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    /// Sleeps `duration` unless interrupted first; true when it slept.
    async fn sleep(&self, duration: std::time::Duration) -> bool {
        let woken = self.wake.notified();
        if self.is_set() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(duration) => !self.is_set(),
            () = woken => false,
        }
    }

    /// Awaits `work` unless interrupted first: `None` when the interrupt
    /// came before `work` finished (`work` is then dropped unfinished).
    async fn race<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        let woken = self.wake.notified();
        if self.is_set() {
            return None;
        }
        tokio::select! {
            biased;
            () = woken => None,
            out = work => Some(out),
        }
    }
}

impl AgentInterrupter for LoopInterrupt {
    async fn interrupt(&self, reason: &str) {
        tracing::info!(reason, "agent loop interrupted");
        self.stopped.store(true, Ordering::Release);
        self.wake.notify_waiters();
    }
}

/// Acknowledges OpenAI safety checks: the only way past them is an
/// [`Approval`] of the exact previewed action (its id and both digests).
pub trait SafetyAcknowledger: Send + Sync {
    /// An approval of `preview` given the `checks`, or `None` to stop.
    fn acknowledge(&self, checks: &[Value], preview: &ActionPreview) -> Option<Approval>;
}

/// The agent loop over one session.
pub struct AgentLoop<'a, R: ComputerUseRuntime, P: Planner> {
    session: &'a Session<R>,
    planner: P,
    allowed: AllowedActions,
    budget: usize,
    suspend: bool,
    acknowledger: Option<&'a dyn SafetyAcknowledger>,
    interrupt: LoopInterrupt,
    /// Distinguishes this run's action ids from every other run's.
    run_id: String,
}

impl<'a, R: ComputerUseRuntime, P: Planner> AgentLoop<'a, R, P> {
    /// A loop over `session`, planned by `planner`, that may propose only
    /// `allowed`, for at most ten steps.
    pub fn new(session: &'a Session<R>, planner: P, allowed: AllowedActions) -> Self {
        let seed = format!(
            "{}|{}|{:?}",
            session.session_id(),
            std::process::id(),
            std::time::SystemTime::now()
        );
        Self {
            session,
            planner,
            allowed,
            budget: 10,
            suspend: false,
            acknowledger: None,
            interrupt: LoopInterrupt::default(),
            run_id: crate::digest::sha256_hex(seed)[..12].to_owned(),
        }
    }

    /// At most `steps` planned steps.
    pub fn budget(mut self, steps: usize) -> Self {
        self.budget = steps;
        self
    }

    /// Suspends actions that need approval to sealed checkpoints in the
    /// session's store of record ([`crate::chain::SessionBuilder::checkpoints`]),
    /// instead of returning them pending.
    pub fn suspend_to_checkpoints(mut self) -> Self {
        self.suspend = true;
        self
    }

    /// Asks `acknowledger` about OpenAI safety checks.
    pub fn acknowledger(mut self, acknowledger: &'a dyn SafetyAcknowledger) -> Self {
        self.acknowledger = Some(acknowledger);
        self
    }

    /// The handle that interrupts this loop.
    pub fn interrupter(&self) -> LoopInterrupt {
        self.interrupt.clone()
    }

    /// Runs the loop for `request` until it stops. A failure after steps
    /// ran ends the loop as [`AgentStop::Failed`], with the history of what
    /// ran before it.
    pub async fn run(self, request: &str) -> AgentReport<R> {
        let mut history: Vec<StepRecord> = Vec::new();
        let stop = match self.steps(request, &mut history).await {
            Ok(stop) => stop,
            Err(error) => AgentStop::Failed { error },
        };
        AgentReport { stop, history }
    }

    async fn steps(
        &self,
        request: &str,
        history: &mut Vec<StepRecord>,
    ) -> Result<AgentStop<R>, ComputerUseError> {
        for step in 1..=self.budget {
            if self.interrupt.is_set() {
                return Ok(AgentStop::Interrupted);
            }
            // Observing, planning and previewing are raced against the
            // interrupt: a planner that never answers (or a runtime that
            // never observes) cannot keep an interrupted loop running.
            let Some(observed) = self.interrupt.race(self.session.observe()).await else {
                return Ok(AgentStop::Interrupted);
            };
            let observed = observed?;
            let planning = self.planner.plan(PlanContext {
                request,
                observations: observed.observations(),
                allowed: &self.allowed,
                history,
            });
            let Some(output) = self.interrupt.race(planning).await else {
                return Ok(AgentStop::Interrupted);
            };
            let output = output?;
            if self.interrupt.is_set() {
                return Ok(AgentStop::Interrupted);
            }
            let action_id = format!("agent-{}-{step}", self.run_id);
            let observed_at = format_rfc3339(self.session.clock_now())?;
            let planned = self.check(&output, observed.observations(), &observed_at);
            let (mut action, checks) = match planned {
                Ok(Planned::Done(summary)) => {
                    self.session.journal_note(
                        &action_id,
                        events::AGENT_DONE,
                        || json!({ "step": step }),
                    );
                    return Ok(AgentStop::Done { summary });
                }
                Ok(Planned::Act(action, checks)) => (*action, checks),
                Err(err) => {
                    self.session.journal_note(
                        &action_id,
                        events::AGENT_PLAN_REFUSED,
                        || json!({ "step": step, "field": err.field(), "class": err.class() }),
                    );
                    return Err(err);
                }
            };
            action.action_id = Some(action_id.clone());
            self.session
                .journal_note(&action_id, events::AGENT_PLANNED, || {
                    json!({
                        "step": step,
                        "tool": action.tool,
                        "mode": action.mode,
                        "argsDigest": crate::digest::canonical_digest(&action.arguments),
                        "safetyChecks": checks.len(),
                    })
                });
            let tool = Some(action.tool.clone());
            let safety_stop = |preview: Option<Box<ActionPreview>>,
                               history: &mut Vec<StepRecord>| {
                self.session.journal_note(
                    &action_id,
                    events::AGENT_SAFETY_STOP,
                    || json!({ "step": step, "checks": checks.len() }),
                );
                history.push(StepRecord {
                    step,
                    tool: tool.clone(),
                    outcome: "stopped: safety checks".into(),
                });
                AgentStop::SafetyChecks {
                    checks: checks.clone(),
                    preview,
                }
            };
            // Reads a model asks for: a fresh observation, a bounded pause
            // that an interrupt cuts short. Safety checks stop even these.
            if action.mode == ExecutionMode::Shadow {
                if !checks.is_empty() {
                    return Ok(safety_stop(None, history));
                }
                let outcome = if action.tool == tool::WAIT {
                    let seconds = action
                        .arguments
                        .get("duration")
                        .and_then(Value::as_f64)
                        .unwrap_or(1.0)
                        .clamp(0.0, formats::MAX_WAIT_SECONDS);
                    if !self
                        .interrupt
                        .sleep(std::time::Duration::from_secs_f64(seconds))
                        .await
                    {
                        return Ok(AgentStop::Interrupted);
                    }
                    "waited"
                } else {
                    "observed"
                };
                history.push(StepRecord {
                    step,
                    tool,
                    outcome: outcome.into(),
                });
                continue;
            }
            let Some(previewed) = self.interrupt.race(observed.preview(&action)).await else {
                return Ok(AgentStop::Interrupted);
            };
            let previewed = previewed?;
            if !checks.is_empty() {
                let approval = self
                    .acknowledger
                    .and_then(|a| a.acknowledge(&checks, previewed.preview()));
                match approval.filter(|a| a.check_against(previewed.preview()).is_ok()) {
                    Some(approval) => {
                        self.session
                            .journal_note(&action_id, events::AGENT_SAFETY_ACKNOWLEDGED, || {
                                json!({
                                    "step": step,
                                    "checks": checks.iter().map(|c| c.get("id").cloned().unwrap_or(Value::Null)).collect::<Vec<_>>(),
                                    "actionDigest": approval.action_digest(),
                                    "grantId": approval.grant_id(),
                                })
                            });
                    }
                    None => {
                        let preview = Box::new(previewed.preview().clone());
                        drop(previewed);
                        return Ok(safety_stop(Some(preview), history));
                    }
                }
            }
            let outcome = match previewed.route() {
                Route::Allowed(approved) => ChainOutcome::Completed(approved.complete().await?),
                Route::NeedsApproval(pending) => ChainOutcome::NeedsApproval(pending),
                Route::Blocked(blocked) => ChainOutcome::Blocked(blocked),
            };
            match outcome {
                ChainOutcome::Completed(done) => {
                    history.push(StepRecord {
                        step,
                        tool,
                        outcome: done.outcome().status().to_owned(),
                    });
                }
                ChainOutcome::Blocked(blocked) => {
                    history.push(StepRecord {
                        step,
                        tool,
                        outcome: format!("blocked: {}", blocked.blocker()),
                    });
                    return Ok(AgentStop::Blocked {
                        code: blocked.blocker().to_owned(),
                        reasons: blocked.reasons().to_vec(),
                    });
                }
                ChainOutcome::NeedsApproval(pending) => {
                    history.push(StepRecord {
                        step,
                        tool,
                        outcome: "needs approval".into(),
                    });
                    if !self.suspend {
                        return Ok(AgentStop::NeedsApproval(pending));
                    }
                    let (action_digest, policy_digest) = (
                        pending.action_digest().to_owned(),
                        pending.policy_digest().to_owned(),
                    );
                    let checkpoint = pending.suspend().await?;
                    return Ok(AgentStop::Suspended {
                        checkpoint,
                        action_id,
                        action_digest,
                        policy_digest,
                    });
                }
            }
        }
        Ok(AgentStop::Budget)
    }

    /// The planner's output, checked: structured output against the
    /// allowed actions; a model's computer-use action mapped, then held to
    /// the allowed tools and modes like any other.
    fn check(
        &self,
        output: &PlanOutput,
        observed: &crate::runtime::Observations,
        observed_at: &str,
    ) -> Result<Planned, ComputerUseError> {
        let (mapped, checks) = match output {
            PlanOutput::Structured(value) => {
                return Ok(match self.allowed.check(value)? {
                    PlannedStep::Done { summary } => Planned::Done(summary),
                    PlannedStep::Act(mut action) => {
                        // A pointer tool's coordinates are hit-tested here as
                        // a mapped action's are: the evidence is the window
                        // under the point, never just the session's target.
                        formats::locate(&mut action, observed, observed_at)?;
                        Planned::Act(action, Vec::new())
                    }
                });
            }
            PlanOutput::OpenAi(call) => {
                let action = call.get("action").unwrap_or(call);
                let checks = match call.get("pending_safety_checks") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(checks)) => checks.clone(),
                    Some(other) => {
                        return Err(ComputerUseError::InvalidField {
                            object: "OpenAiComputerCall",
                            field: "pending_safety_checks",
                            expected: "an array of checks".into(),
                            actual: other.to_string().chars().take(120).collect(),
                        });
                    }
                };
                (formats::from_openai(action, observed, observed_at)?, checks)
            }
            PlanOutput::Anthropic(input) => (
                formats::from_anthropic(input, observed, observed_at)?,
                Vec::new(),
            ),
        };
        let MappedAction { action } = mapped;
        if action.mode != ExecutionMode::Shadow {
            self.allowed.permits(&action)?;
        }
        Ok(Planned::Act(Box::new(action), checks))
    }
}

/// A checked planner output.
enum Planned {
    Done(String),
    Act(Box<ProposedAction>, Vec<Value>),
}
