//! `request_approval`: the interrupt that shows a person the preview, and
//! the resume that turns an answer into the chain's `Approved` stage.
//!
//! An answer comes from one of three authorities, none of which the
//! graph's JSON state can stand in for:
//!
//! - a grant the runtime issued to the host's approver (`approval.grantId`),
//!   checked by the runtime when the action executes;
//! - the runtime's own record of a person's approval
//!   (`approval.runtimeApproved: true`);
//! - a person's decision recorded beside the sealed checkpoint by the
//!   approval page and signed with its key, when the host built the graph
//!   with that key ([`super::reference_graph_with_approver`]). The resume
//!   then needs no `approval` at all; one written must be the decision's.
//!
//! Whatever the authority, the chain checks the approval against the
//! preview it made (both digests, its freshness), and the sealed checkpoint
//! is consumed once. A person who approves after the target evidence aged
//! approves a preview of the same action made again on fresh evidence; the
//! run goes on with that preview (the state's `preview` becomes it) while
//! `preview_history` keeps the one the graph interrupted with.

use adk_graph::{GraphError, NodeContext, NodeOutput};
use serde_json::json;

use super::checks::{approval_of, same_preview, set};
use super::nodes::{NodeFuture, Nodes, failed};
use super::runs::Stage;
use crate::chain::{Approval, Approved, ApproverPublicKey, CheckpointId, Decision};
use crate::contracts::ActionPreview;
use crate::runtime::ComputerUseRuntime;

const NODE: &str = "request_approval";

impl<R: ComputerUseRuntime + Send + Sync + 'static> Nodes<R> {
    pub(super) fn request_approval(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move { self.approval(ctx).await })
    }

    async fn approval(self, ctx: NodeContext) -> Result<NodeOutput, GraphError> {
        let thread = ctx.config.thread_id.clone();
        let approved = match self.runs.take(&thread) {
            Some(Stage::Pending {
                pending,
                asked: false,
            }) => {
                same_preview(&ctx, NODE, pending.preview())?;
                if set(&ctx, "approval") {
                    // Dropped: nothing was reserved; the run ends here.
                    return Err(failed(
                        NODE,
                        "the state held an approval before this run asked for one (written into the initial state): an approval answers the interrupt, never precedes it",
                    ));
                }
                let shown = serde_json::to_value(pending.preview()).map_err(|e| failed(NODE, e))?;
                let stage = if self.session.keeps_checkpoints() {
                    let preview = Box::new(pending.preview().clone());
                    let id = pending.suspend().await.map_err(|e| failed(NODE, e))?;
                    Stage::Suspended { id, preview }
                } else {
                    Stage::Pending {
                        pending,
                        asked: true,
                    }
                };
                self.runs.put(&thread, stage);
                return Ok(NodeOutput::interrupt_with_data(
                    "computer-use action requires scoped approval",
                    shown,
                ));
            }
            Some(Stage::Pending {
                pending,
                asked: true,
            }) => {
                same_preview(&ctx, NODE, pending.preview())?;
                let approval = self.answer(&ctx, pending.action_id())?;
                pending.approve(approval).map_err(|e| failed(NODE, e))?
            }
            Some(Stage::Suspended { id, preview }) => {
                // Checked before the sealed checkpoint is consumed.
                same_preview(&ctx, NODE, &preview)?;
                self.resume_sealed(&ctx, Some(id)).await?
            }
            Some(other) => {
                self.runs.put(&thread, other);
                return Err(failed(NODE, "this run is past its approval"));
            }
            None => {
                // A graph that never saw this run's interrupt (another
                // instance, after a restart): only the sealed checkpoint.
                if !self.session.keeps_checkpoints() {
                    return Err(failed(
                        NODE,
                        "this graph holds no pending approval for the run and its session keeps no checkpoints: resume in the graph that interrupted, or give the session a store of record",
                    ));
                }
                self.resume_sealed(&ctx, None).await?
            }
        };
        let preview = approved.preview().clone();
        let grant = approved.authority().grant_id().map(str::to_owned);
        let mut output = NodeOutput::new()
            .with_update("approval_grant_id", json!(grant))
            .with_update(
                "approved_action_digest",
                json!(preview.envelope.args_digest),
            )
            .with_update(
                "approved_policy_digest",
                json!(preview.policy.policy_digest),
            );
        let current = serde_json::to_value(&preview).map_err(|e| failed(NODE, e))?;
        // Previewed again at the resume: the run goes on with the chain's
        // preview, and the history keeps the interrupted one. Set on every
        // approval (cleared when nothing was previewed again), so an
        // earlier approval's never stands for this one's.
        let interrupted = ctx.get("preview").filter(|p| *p != &current).cloned();
        if interrupted.is_some() {
            output = output.with_update("preview", current);
        }
        self.runs.with(&thread, |run| run.interrupted = interrupted);
        self.runs.put(&thread, Stage::Approved(approved));
        Ok(output)
    }

    /// The approval the resume wrote, for `action_id`.
    fn answer(&self, ctx: &NodeContext, action_id: &str) -> Result<Approval, GraphError> {
        let value = ctx.get("approval").filter(|v| !v.is_null()).ok_or_else(|| {
            failed(
                NODE,
                "resumed without an approval: write approval = {actionDigest, policyDigest, grantId | runtimeApproved: true}",
            )
        })?;
        approval_of(value, action_id).map_err(|e| failed(NODE, e))
    }

    /// Resumes the sealed checkpoint `id` (or, for a graph that never saw
    /// the interrupt, the one the state's preview names): by the person's
    /// recorded decision when the graph has the approver's key and one is
    /// recorded, else with the approval the resume wrote.
    async fn resume_sealed(
        &self,
        ctx: &NodeContext,
        id: Option<CheckpointId>,
    ) -> Result<Approved<R>, GraphError> {
        let preview: ActionPreview = ctx
            .get("preview")
            .cloned()
            .map(serde_json::from_value)
            .transpose()
            .map_err(|e| failed(NODE, e))?
            .ok_or_else(|| failed(NODE, "the state holds no preview"))?;
        same_preview(ctx, NODE, &preview)?;
        let id = match id {
            Some(id) => id,
            // A graph that never saw the interrupt (or forgot it after a
            // refused resume): the state's preview names the checkpoint,
            // and must be exactly the one sealed there, checked before
            // anything is consumed.
            None => {
                let id = self.session.checkpoint_id(&preview);
                let sealed = self
                    .session
                    .sealed_preview(&id)
                    .await
                    .map_err(|e| failed(NODE, e))?;
                if sealed != preview {
                    return Err(failed(
                        NODE,
                        "the sealed preview is not the state's: the state's preview was replaced; nothing was consumed",
                    ));
                }
                id
            }
        };
        let action_id = &preview.envelope.action_id;
        let approved = match &self.approver {
            Some(key) => self.by_decision(ctx, &id, action_id, key).await?,
            None => {
                let approval = self.answer(ctx, action_id)?;
                self.session
                    .resume(&id, approval)
                    .await
                    .map_err(|e| failed(NODE, e))?
            }
        };
        let ours = &approved.preview().envelope;
        if approved.preview() != &preview
            && (ours.action_id != preview.envelope.action_id
                || ours.tool != preview.envelope.tool
                || approved.preview().policy.policy_digest != preview.policy.policy_digest)
        {
            return Err(failed(
                NODE,
                "the sealed action is not the state's: the state's preview was replaced",
            ));
        }
        Ok(approved)
    }

    /// The person's decision recorded for `id`, checked against `key`; an
    /// approval the resume wrote must be that decision. With no decision
    /// yet, an approval the resume wrote is the host's own (and the page
    /// is told the checkpoint was resumed without it).
    async fn by_decision(
        &self,
        ctx: &NodeContext,
        id: &CheckpointId,
        action_id: &str,
        key: &ApproverPublicKey,
    ) -> Result<Approved<R>, GraphError> {
        let written = ctx.get("approval").filter(|v| !v.is_null());
        let one_look = std::time::Duration::from_millis(1);
        let decision = self
            .session
            .wait_for_decision(id, key, one_look, std::time::Duration::ZERO)
            .await
            .map_err(|e| failed(NODE, e))?;
        match (decision, written) {
            (None, None) => Err(failed(
                NODE,
                format!(
                    "no decision is recorded for the sealed checkpoint {id} yet: resume once the person has decided on the approval page, or write the runtime's grant as approval = {{actionDigest, policyDigest, grantId}}; nothing was consumed"
                ),
            )),
            (None, Some(_)) => {
                // Before the person decides, only an authority the runtime
                // checks itself (its grant) is taken in their place: a
                // runtime-held approval is the page's to give here.
                let approval = self.answer(ctx, action_id)?;
                if approval.grant_id().is_none() {
                    return Err(failed(
                        NODE,
                        format!(
                            "no decision is recorded for the sealed checkpoint {id} yet, and in a graph decided on the approval page runtimeApproved is the person's to give there: resume once they decided, or write the runtime's grant (grantId); nothing was consumed"
                        ),
                    ));
                }
                self.session
                    .resume(id, approval)
                    .await
                    .map_err(|e| failed(NODE, e))
            }
            (Some(Decision::Approve(decided)), Some(value)) => {
                let written = approval_of(value, action_id).map_err(|e| failed(NODE, e))?;
                if !same_decision(&written, &decided) {
                    return Err(failed(
                        NODE,
                        format!(
                            "the approval written on resume is not the person's decision recorded for checkpoint {id}: write none (the decision answers), or exactly its digests and grant; nothing was consumed"
                        ),
                    ));
                }
                self.decided(id, key).await
            }
            // A denial is consumed and journaled by the chain, which answers
            // it as the refusal it is.
            (Some(_), _) => self.decided(id, key).await,
        }
    }

    async fn decided(
        &self,
        id: &CheckpointId,
        key: &ApproverPublicKey,
    ) -> Result<Approved<R>, GraphError> {
        self.session
            .resume_decided(id, key)
            .await
            .map_err(|e| failed(NODE, e))
    }
}

/// Whether the approval a resume wrote names what the person decided: the
/// same action and policy digests and the same authority.
fn same_decision(written: &Approval, decided: &Approval) -> bool {
    written.action_digest() == decided.action_digest()
        && written.policy_digest() == decided.policy_digest()
        && written.grant_id() == decided.grant_id()
}
