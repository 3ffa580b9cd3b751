//! The nodes that act: `reserve_target`, `acquire_lease`, `execute` and
//! `verify`, each one consuming transition of the chain. A node takes out
//! of the run's slot only the stage it expects (another stays, and the
//! refusal names it), and `execute` and `verify` entered again after the
//! action ran answer what they answered, sending nothing.

use adk_graph::{GraphError, NodeContext, NodeOutput};
use serde_json::{Value, json};

use super::checks::{same_preview_since, set};
use super::nodes::{NodeFuture, Nodes, failed};
use super::runs::Stage;
use crate::runtime::ComputerUseRuntime;

impl<R: ComputerUseRuntime + Send + Sync + 'static> Nodes<R> {
    pub(super) fn reserve_target(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            const NODE: &str = "reserve_target";
            let thread = ctx.config.thread_id.clone();
            // From here to `verify` are four steps, each taking a
            // reservation, a lease or the action itself: a run whose limit
            // would stop it on the way does not start them.
            let needed = ctx.step.saturating_add(4);
            if ctx.config.recursion_limit < needed {
                return Err(failed(
                    NODE,
                    format!(
                        "the run's recursion limit ({}) would stop it between the reservation and the verification: raise it to at least {needed}; nothing was reserved",
                        ctx.config.recursion_limit
                    ),
                ));
            }
            let Stage::Approved(approved) = self
                .runs
                .take_if(&thread, |s| matches!(s, Stage::Approved(_)))
                .map_err(|holds| expected(NODE, "an approved action", holds))?
            else {
                return Err(changed(NODE));
            };
            let interrupted = self.runs.with(&thread, |run| run.interrupted.clone());
            if let Err(refused) =
                same_preview_since(&ctx, NODE, approved.preview(), interrupted.as_ref())
            {
                // Refused for the state alone: the stage goes back, so an
                // honest resume still finds the approval (never burned by
                // a forged state).
                self.runs.put(&thread, Stage::Approved(approved));
                return Err(refused);
            }
            let by_policy = matches!(approved.authority(), crate::chain::Authority::Policy);
            if by_policy
                && [
                    "approval",
                    "approval_grant_id",
                    "approved_action_digest",
                    "approved_policy_digest",
                ]
                .iter()
                .any(|k| set(&ctx, k))
            {
                return Err(failed(
                    NODE,
                    "an action policy allows carried approval authority in the state: refused, nothing reserved",
                ));
            }
            let reserved = approved.reserve().await.map_err(|e| failed(NODE, e))?;
            let shown =
                serde_json::to_value(reserved.reservation()).map_err(|e| failed(NODE, e))?;
            self.runs.put(&thread, Stage::Reserved(reserved));
            Ok(NodeOutput::new().with_update("reservation", shown))
        })
    }

    pub(super) fn acquire_lease(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            const NODE: &str = "acquire_lease";
            let thread = ctx.config.thread_id.clone();
            let Stage::Reserved(reserved) = self
                .runs
                .take_if(&thread, |s| matches!(s, Stage::Reserved(_)))
                .map_err(|holds| expected(NODE, "a reserved target", holds))?
            else {
                return Err(changed(NODE));
            };
            let leased = reserved.lease().await.map_err(|e| failed(NODE, e))?;
            let shown = serde_json::to_value(leased.lease()).map_err(|e| failed(NODE, e))?;
            self.runs.put(&thread, Stage::Leased(leased));
            Ok(NodeOutput::new().with_update("lease", shown))
        })
    }

    pub(super) fn execute(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            const NODE: &str = "execute";
            let thread = ctx.config.thread_id.clone();
            let stage = self
                .runs
                .take_if(&thread, |s| {
                    matches!(
                        s,
                        Stage::Leased(_) | Stage::Executed(_) | Stage::Finished { .. }
                    )
                })
                .map_err(|holds| {
                    expected(NODE, "a lease to act under (nothing was sent)", holds)
                })?;
            // Entered again after the action ran (a resume from an earlier
            // checkpoint, a retry after a failed checkpoint save): the
            // receipt it has, nothing sent again.
            let leased = match stage {
                Stage::Leased(leased) => leased,
                Stage::Executed(executed) => {
                    let receipt = serde_json::to_value(executed.receipt());
                    self.runs.put(&thread, Stage::Executed(executed));
                    let receipt = receipt.map_err(|e| failed(NODE, e))?;
                    return Ok(NodeOutput::new().with_update("receipt", receipt));
                }
                Stage::Finished { receipt, verified } => {
                    let shown = receipt.clone();
                    self.runs
                        .put(&thread, Stage::Finished { receipt, verified });
                    return Ok(NodeOutput::new().with_update("receipt", shown));
                }
                other => {
                    self.runs.put(&thread, other);
                    return Err(changed(NODE));
                }
            };
            let interrupted = self.runs.with(&thread, |run| run.interrupted.clone());
            if let Err(refused) =
                same_preview_since(&ctx, NODE, leased.preview(), interrupted.as_ref())
            {
                self.runs.put(&thread, Stage::Leased(leased));
                return Err(refused);
            }
            let executed = leased.execute().await.map_err(|e| failed(NODE, e))?;
            let shown = serde_json::to_value(executed.receipt()).map_err(|e| failed(NODE, e))?;
            self.runs.put(&thread, Stage::Executed(executed));
            Ok(NodeOutput::new().with_update("receipt", shown))
        })
    }

    pub(super) fn verify(self, ctx: NodeContext) -> NodeFuture {
        Box::pin(async move {
            const NODE: &str = "verify";
            let thread = ctx.config.thread_id.clone();
            let stage = self
                .runs
                .take_if(&thread, |s| {
                    matches!(s, Stage::Executed(_) | Stage::Finished { .. })
                })
                .map_err(|holds| expected(NODE, "a performed action", holds))?;
            let executed = match stage {
                Stage::Executed(executed) => executed,
                // Verified already: the same answer again.
                Stage::Finished { receipt, verified } => {
                    let output = updates(&verified);
                    self.runs
                        .put(&thread, Stage::Finished { receipt, verified });
                    return Ok(output);
                }
                other => {
                    self.runs.put(&thread, other);
                    return Err(changed(NODE));
                }
            };
            let receipt = serde_json::to_value(executed.receipt()).map_err(|e| failed(NODE, e))?;
            let verified = executed.verify().await.map_err(|e| failed(NODE, e))?;
            let outcome = verified.outcome();
            let answered = vec![
                ("verified".to_owned(), json!(outcome.is_verified())),
                ("committed".to_owned(), json!(outcome.is_committed())),
                (
                    "result".to_owned(),
                    json!({
                        "status": outcome.status(),
                        "receiptId": verified.receipt_id(),
                        "verificationDetail": outcome.detail(),
                    }),
                ),
            ];
            let output = updates(&answered);
            self.runs.put(
                &thread,
                Stage::Finished {
                    receipt,
                    verified: answered,
                },
            );
            Ok(output)
        })
    }
}

fn updates(pairs: &[(String, Value)]) -> NodeOutput {
    pairs.iter().fold(NodeOutput::new(), |out, (k, v)| {
        out.with_update(k, v.clone())
    })
}

fn expected(node: &str, what: &str, holds: &str) -> GraphError {
    failed(node, format!("expected {what}, the run holds {holds}"))
}

fn changed(node: &str) -> GraphError {
    failed(node, "the run's stage is not the one this node takes")
}
