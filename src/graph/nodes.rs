//! The reference graph's nodes, each one transition of the chain.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use adk_graph::{GraphError, NodeContext, NodeOutput};
use serde_json::{Value, json};

use super::runs::{Runs, Stage};
use crate::agent::{AllowedActions, PlannedStep};
use crate::chain::{ApproverPublicKey, Route, Session};
use crate::contracts::ExecutionMode;
use crate::runtime::{ComputerUseRuntime, Observation};

/// What a node returns.
pub(super) type NodeFuture = Pin<Box<dyn Future<Output = Result<NodeOutput, GraphError>> + Send>>;

/// The session every node acts in, and the runs' stages.
pub(super) struct Nodes<R: ComputerUseRuntime> {
    pub(super) session: Arc<Session<R>>,
    pub(super) runs: Arc<Runs<R>>,
    /// The key a person's decisions recorded in the session's store of
    /// record are signed with (the approval page's), when the host gave it.
    pub(super) approver: Option<ApproverPublicKey>,
}

impl<R: ComputerUseRuntime> Clone for Nodes<R> {
    fn clone(&self) -> Self {
        Self {
            session: Arc::clone(&self.session),
            runs: Arc::clone(&self.runs),
            approver: self.approver.clone(),
        }
    }
}

pub(super) fn failed(node: &str, message: impl std::fmt::Display) -> GraphError {
    GraphError::NodeExecutionFailed {
        node: node.to_owned(),
        message: message.to_string(),
    }
}

fn frame(observation: &Observation) -> Value {
    json!({
        "observationId": observation.observation_id,
        "capturedAt": observation.captured_at,
    })
}

impl<R: ComputerUseRuntime + Send + Sync + 'static> Nodes<R> {
    pub(super) fn new(session: Arc<Session<R>>, approver: Option<ApproverPublicKey>) -> Self {
        Self {
            session,
            runs: Arc::new(Runs::new()),
            approver,
        }
    }

    /// `step` as an adk-graph node function.
    pub(super) fn node(
        &self,
        step: fn(Self, NodeContext) -> NodeFuture,
    ) -> impl Fn(NodeContext) -> NodeFuture + Send + Sync + 'static {
        let nodes = self.clone();
        move |ctx| step(nodes.clone(), ctx)
    }

    pub(super) fn discover(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            let capabilities = self
                .session
                .observe_capabilities()
                .await
                .map_err(|e| failed("discover", e))?;
            let shown = serde_json::to_value(&capabilities).map_err(|e| failed("discover", e))?;
            self.runs.with(&ctx.config.thread_id, |run| {
                run.capabilities = Some(capabilities);
            });
            Ok(NodeOutput::new().with_update("capabilities", shown))
        })
    }

    pub(super) fn observe_visual(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move { self.frame_node(ctx, false).await })
    }

    pub(super) fn observe_semantic(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move { self.frame_node(ctx, true).await })
    }

    /// `observe_semantic` (when `semantic`) or `observe_visual`: one frame,
    /// kept for the join, its id and time shown.
    async fn frame_node(self, ctx: NodeContext, semantic: bool) -> Result<NodeOutput, GraphError> {
        let (node, channel) = if semantic {
            ("observe_semantic", "semantic_evidence")
        } else {
            ("observe_visual", "visual_evidence")
        };
        let taken = if semantic {
            self.session.observe_semantic_frame().await
        } else {
            self.session.observe_visual_frame().await
        };
        let taken = taken.map_err(|e| failed(node, e))?;
        let shown = frame(&taken);
        self.runs.with(&ctx.config.thread_id, |run| {
            if semantic {
                run.semantic = Some(taken);
            } else {
                run.visual = Some(taken);
            }
        });
        Ok(NodeOutput::new().with_update(channel, shown))
    }

    pub(super) fn join_observations(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            let parts = self
                .runs
                .with(&ctx.config.thread_id, |run| run.parts())
                .ok_or_else(|| {
                    failed(
                        "join_observations",
                        "the fan-in completed without all three parts of the observation",
                    )
                })?;
            let observed = self
                .session
                .join(parts)
                .map_err(|e| failed("join_observations", e))?;
            // A new round of this thread. What an earlier run left that
            // holds nothing is dropped; a reservation, a lease or a
            // performed action not yet verified is never dropped by a new
            // run: the earlier one is resumed, or another thread used.
            let thread = ctx.config.thread_id.clone();
            let refused = self.runs.with(&thread, |run| match run.stage.take() {
                Some(stage) if stage.holds() => {
                    let name = stage.name();
                    run.stage = Some(stage);
                    Some(name)
                }
                _ => {
                    run.stage = Some(Stage::Observed(observed));
                    None
                }
            });
            if let Some(holds) = refused {
                return Err(failed(
                    "join_observations",
                    format!(
                        "an earlier run of this thread holds {holds}: resume it (its last checkpoint), or start this run on another thread"
                    ),
                ));
            }
            Ok(NodeOutput::new().with_update("observations_joined", json!(true)))
        })
    }

    pub(super) fn plan(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            let proposed = ctx
                .get("proposed_action")
                .cloned()
                .ok_or_else(|| failed("plan", "the state holds no proposed_action"))?;
            let mut step = proposed.clone();
            // An `action_id` the host chose makes a retry idempotent (the
            // runtime answers a known id with its stored receipt).
            let mut action_id = None;
            if let Some(fields) = step.as_object_mut() {
                fields.entry("kind").or_insert_with(|| json!("act"));
                action_id = match fields.remove("action_id") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(id)) if !id.is_empty() => Some(id),
                    Some(_) => {
                        return Err(failed(
                            "plan",
                            "proposed_action.action_id must be a non-empty string",
                        ));
                    }
                };
            }
            let thread = ctx.config.thread_id.clone();
            // The action's shape is checked strictly (unknown fields, the
            // tool's required arguments, no targeting keys, known labels);
            // whether the runtime offers it is the preview's to say. Its
            // mode, when not named, is background.
            let tool = step.get("tool").and_then(Value::as_str).unwrap_or_default();
            let allowed = AllowedActions::from_capabilities([]).allow(
                tool,
                &[ExecutionMode::Background, ExecutionMode::Foreground],
                None,
            );
            let action = match allowed.check(&step) {
                Ok(PlannedStep::Act(action)) => match action_id {
                    Some(id) => action.with_action_id(id),
                    None => *action,
                },
                Ok(PlannedStep::Done { .. }) => {
                    return Err(failed(
                        "plan",
                        "proposed_action is no action (kind \"done\")",
                    ));
                }
                Err(err) => return Err(failed("plan", err)),
            };
            self.runs.with(&thread, |run| run.action = Some(action));
            Ok(NodeOutput::new().with_update("proposed_action", proposed))
        })
    }

    pub(super) fn preview(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            let thread = ctx.config.thread_id.clone();
            let (stage, action) = self.runs.with(&thread, |run| {
                run.interrupted = None;
                (run.stage.take(), run.action.take())
            });
            let (Some(Stage::Observed(observed)), Some(action)) = (stage, action) else {
                return Err(failed(
                    "preview",
                    "no joined observation and planned action to preview",
                ));
            };
            let previewed = observed
                .preview(&action)
                .await
                .map_err(|e| failed("preview", e))?;
            let shown =
                serde_json::to_value(previewed.preview()).map_err(|e| failed("preview", e))?;
            let route = match previewed.route() {
                Route::Allowed(approved) => {
                    self.runs.put(&thread, Stage::Approved(approved));
                    "allowed"
                }
                Route::NeedsApproval(pending) => {
                    self.runs.put(
                        &thread,
                        Stage::Pending {
                            pending,
                            asked: false,
                        },
                    );
                    "approval"
                }
                Route::Blocked(_) => "blocked",
            };
            Ok(NodeOutput::new()
                .with_update("preview", shown.clone())
                .with_update("preview_history", shown)
                .with_update("route", json!(route)))
        })
    }

    pub(super) fn blocked(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            let blocker = ctx
                .get("preview")
                .and_then(|p| p.get("blocker"))
                .cloned()
                .filter(|b| !b.is_null())
                .unwrap_or_else(|| json!("policy_denied"));
            self.runs.end(&ctx.config.thread_id);
            Ok(NodeOutput::new()
                .with_update("result", json!({ "status": "blocked", "reason": blocker })))
        })
    }
}
