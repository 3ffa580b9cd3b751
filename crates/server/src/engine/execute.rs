//! `execute_action`, as upstream's coordinator runs it: preview again,
//! refuse what the preview blocks, spend the approval, begin the receipt
//! (or replay it), check the lease and the target, mark the start, cross
//! the side-effect boundary, check the effect, restore the cursor and
//! focus, and commit. A failure before the boundary leaves the receipt
//! `rejected`; after it, `indeterminate` (and the lease revoked).

use adk_computer_use::contracts::catalogue::protocol::name as protocol;
use adk_computer_use::journal::events;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::Refusal;
use super::actuate::{Read, ToolResult};
use super::policy;
use super::preview::{ActionRequest, Preview};
use super::state::{Answer, State, StoredReceipt};
use super::wire::{now, object, reached, stamp, uuid};
use crate::desktop::simulated::Fault;

/// How a preview's blocker is refused at execution.
fn blocked(preview: &Preview) -> Refusal {
    let policy = json!({ "policy": preview.answer["policy"] });
    match preview.blocker() {
        Some("shadow_mutation") => {
            Refusal::new("shadow_mutation", "shadow mode cannot mutate desktop state")
        }
        Some("foreground_required") => Refusal::with_details(
            "foreground_required",
            "requested mode is not supported without foreground interference",
            json!({ "capability": preview.answer["capability"] }),
        ),
        Some("target_evidence_required") => Refusal::new(
            "stale_target",
            "fresh target evidence is required for this mutation",
        ),
        // The check's own signals say why (an element not found, a tree
        // too large, no accessibility bus), never a guess at secrets.
        Some("sensitivity_unavailable") => Refusal::with_details(
            "sensitivity_unavailable",
            "trusted accessibility sensitivity could not be established for this semantic mutation",
            json!({
                "signals": preview.envelope().pointer("/targetSensitivity/signals"),
                "source": preview.envelope().pointer("/targetSensitivity/source"),
            }),
        ),
        Some("approval_required") => Refusal::with_details(
            "approval_required",
            "policy requires an action-bound approval",
            policy,
        ),
        _ => Refusal::with_details("policy_denied", "policy denied the action", policy),
    }
}

/// An execution past its first phase: the request, what it previewed to,
/// and its pending receipt.
pub(super) struct Begun {
    pub(super) request: ActionRequest,
    pub(super) preview: Preview,
    pub(super) action_id: String,
    pub(super) key: (String, String),
    pub(super) receipt_id: Value,
    /// When the execution began.
    pub(super) at: OffsetDateTime,
}

/// What the first phase of `execute_action` leaves.
pub(super) enum Execution {
    /// Already answered: refused, replayed, or failed in the first phase.
    Answered(Result<Answer, Refusal>),
    /// Begun: finish it with [`State::finish_execution`].
    Begun(Box<Begun>),
}

/// A failure inside the execution, and whether it came after the
/// side-effect boundary.
pub(super) struct Failure {
    pub(super) error: Box<Refusal>,
    pub(super) crossed: bool,
}

pub(super) fn before(error: Refusal) -> Failure {
    Failure {
        error: Box::new(error),
        crossed: false,
    }
}

fn answer(receipt: Value, replay: bool, result: &Value) -> Answer {
    let output = result.get("structuredContent").cloned();
    let mut content: Vec<Value> = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let images = content
        .iter()
        .filter(|b| b["type"] == "image")
        .filter_map(|b| {
            Some((
                b["data"].as_str()?.to_owned(),
                b["mimeType"].as_str()?.to_owned(),
            ))
        })
        .collect();
    content.push(json!({
        "type": "text",
        "text": json!({ "receipt": receipt, "replay": replay }).to_string(),
    }));
    Answer {
        structured: object([
            ("receipt", Some(receipt)),
            ("replay", Some(json!(replay))),
            ("output", output),
        ]),
        images,
        content: Some(content),
    }
}

impl State {
    /// `execute_action` in one go (no other call can come between its
    /// phases): for callers of [`State::call`].
    pub(super) fn execute(&mut self, args: &Value) -> Result<Answer, Refusal> {
        match self.begin_execution(args, None) {
            Execution::Answered(answer) => answer,
            Execution::Begun(begun) => self.finish_execution(*begun),
        }
    }

    /// The first phase of `execute_action`, up to the lease's first check:
    /// an answer already (a refusal, a replay), or an execution whose
    /// receipt is pending. Between this phase and
    /// [`State::finish_execution`] the server serves other calls, as
    /// upstream's does while it revalidates: a duplicate of the action then
    /// finds its receipt pending (`indeterminate`), and a release or pause
    /// of its lease makes the lease's spending fail (`lease_revoked`).
    /// `read` is what the desktop said of the request with the state free
    /// (read here when `None`).
    pub(super) fn begin_execution(&mut self, args: &Value, read: Option<Read>) -> Execution {
        match self.begin(args, read) {
            Ok(execution) => execution,
            Err(error) => Execution::Answered(Err(error)),
        }
    }

    fn begin(&mut self, args: &Value, read: Option<Read>) -> Result<Execution, Refusal> {
        self.machine_free()?;
        let request = ActionRequest::parse(args);
        if let Some(refusal) = policy::outside_catalogue(&request.tool, protocol::EXECUTE_ACTION) {
            return Err(refusal);
        }
        // Every catalogue tool previews; a desktop performs only its own.
        // A wait runs where what it polls runs.
        let performed = super::wait::polled(&request.tool).unwrap_or(&request.tool);
        if request.mode != "shadow" && !self.desktop.performs(performed) {
            return Err(Refusal::with_details(
                "execution_failed",
                format!(
                    "this {} desktop does not perform {}",
                    self.desktop.kind(),
                    request.tool
                ),
                json!({ "tool": request.tool, "desktop": self.desktop.kind() }),
            ));
        }
        let Some(action_id) = request.action_id.clone().filter(|a| !a.is_empty()) else {
            return Err(Refusal::plain(
                "execute requires an explicit actionId for idempotency",
            ));
        };
        let preview = self.preview(&request, read)?;
        if preview.blocker().is_some() {
            return Err(blocked(&preview));
        }
        let at = now();
        let envelope = preview.envelope().clone();
        if reached(envelope["expiresAt"].as_str().unwrap_or_default(), at) {
            return Err(Refusal::new(
                "stale_target",
                "action proposal expired before execution",
            ));
        }
        let session_id = request.session_id.clone();
        if preview.decision() == "confirm" {
            let Some(grant) = &request.approval_grant_id else {
                return Err(Refusal::new(
                    "approval_required",
                    "action-bound approval is required",
                ));
            };
            self.grants.consume(
                grant,
                &envelope,
                preview.policy_digest(),
                preview.scope_digest.as_deref(),
                at,
            )?;
            self.pending
                .remove(&(session_id.clone(), action_id.clone()));
        }
        let key = (session_id.clone(), action_id.clone());
        let digest = envelope["argsDigest"].clone();
        if let Some(stored) = self.receipts.get(&key) {
            let (receipt, mutating) = (stored.receipt.clone(), stored.mutating);
            return Ok(Execution::Answered(self.replay(
                receipt,
                mutating,
                &digest,
                &session_id,
                &action_id,
            )));
        }
        let receipt = json!({
            "receiptId": uuid(),
            "sessionId": session_id,
            "actionId": action_id,
            "actionDigest": digest,
            "attempt": request.attempt.unwrap_or(1),
            "status": "pending",
            "createdAt": stamp(at),
            "updatedAt": stamp(at),
        });
        let mutating = preview.meta.mutates;
        self.receipts.insert(
            key.clone(),
            StoredReceipt {
                receipt: receipt.clone(),
                mutating,
            },
        );
        let begun = Begun {
            receipt_id: receipt["receiptId"].clone(),
            request,
            preview,
            action_id,
            key,
            at,
        };
        Ok(match self.check_lease(&begun) {
            Ok(()) => Execution::Begun(Box::new(begun)),
            Err(failure) => Execution::Answered(self.conclude(begun, Err(failure))),
        })
    }

    /// The second phase: spends the lease, crosses the boundary, checks
    /// the effect and ends the receipt.
    pub(super) fn finish_execution(&mut self, begun: Begun) -> Result<Answer, Refusal> {
        let result = self.run(&begun);
        self.conclude(begun, result)
    }

    /// Ends a begun execution's receipt with `result`, publishes the event
    /// and answers.
    pub(super) fn conclude(
        &mut self,
        begun: Begun,
        result: Result<ToolResult, Failure>,
    ) -> Result<Answer, Refusal> {
        let Begun {
            request,
            preview,
            action_id,
            key,
            receipt_id,
            ..
        } = begun;
        let session_id = request.session_id.clone();
        let mutating = preview.meta.mutates;
        let lease_id = request.lease_id.clone();
        match result {
            Ok(result) => {
                let result = result.to_value();
                let receipt = self.finish(&key, "committed", Some(result.clone()), None);
                self.publish(
                    &session_id,
                    Some(&action_id),
                    events::COMMITTED,
                    json!({ "receiptId": receipt_id, "leaseId": lease_id }),
                );
                if mutating && self.faults.has(Fault::CrashAfterCommit) {
                    return Err(Refusal::crash("injected crash after the commit"));
                }
                // The receipt faults lie about mutations, whose receipts
                // the chain binds; observations answer true.
                let receipt = if mutating {
                    self.forge_receipt(receipt)
                } else {
                    receipt
                };
                Ok(answer(receipt, false, &result))
            }
            Err(Failure { error, crossed }) => {
                let status = if crossed {
                    "indeterminate"
                } else if error.code == "interrupted" {
                    "interrupted"
                } else {
                    "rejected"
                };
                if status == "indeterminate"
                    && let Some(lease_id) = &lease_id
                {
                    self.leases.revoke(lease_id, "action_indeterminate", now());
                }
                let detail = json!({ "code": error.code, "message": error.message });
                self.finish(&key, status, None, Some(detail));
                self.publish(
                    &session_id,
                    Some(&action_id),
                    match status {
                        "indeterminate" => events::INDETERMINATE,
                        "interrupted" => events::INTERRUPTED,
                        _ => events::REJECTED,
                    },
                    json!({ "receiptId": receipt_id, "code": error.code }),
                );
                Err(*error)
            }
        }
    }

    /// A second execution of an action with a receipt: the receipt again.
    fn replay(
        &mut self,
        receipt: Value,
        mutating: bool,
        digest: &Value,
        session_id: &str,
        action_id: &str,
    ) -> Result<Answer, Refusal> {
        if receipt["actionDigest"] != *digest {
            return Err(Refusal::with_details(
                "action_id_conflict",
                "action_id was reused with a different digest",
                json!({ "sessionId": session_id, "actionId": action_id }),
            ));
        }
        self.replays += 1;
        match receipt["status"].as_str() {
            Some("pending") => Err(Refusal::with_details(
                "indeterminate",
                "prior execution may have crossed the side-effect boundary",
                json!({ "receiptId": receipt["receiptId"] }),
            )),
            Some("committed") => {
                let result = receipt.get("result").cloned().unwrap_or(Value::Null);
                let receipt = if mutating {
                    self.forge_receipt(receipt)
                } else {
                    receipt
                };
                Ok(answer(receipt, true, &result))
            }
            Some(status) => {
                let status = status.to_owned();
                Err(Refusal::bare(&status, json!({ "receipt": receipt })))
            }
            None => Err(Refusal::plain("receipt without a status")),
        }
    }

    /// Ends a pending receipt; the receipt as stored.
    fn finish(
        &mut self,
        key: &(String, String),
        status: &str,
        result: Option<Value>,
        error: Option<Value>,
    ) -> Value {
        let Some(stored) = self.receipts.get_mut(key) else {
            return Value::Null;
        };
        if let Value::Object(receipt) = &mut stored.receipt {
            receipt.insert("status".into(), json!(status));
            receipt.insert("updatedAt".into(), json!(stamp(now())));
            if let Some(result) = result {
                receipt.insert("result".into(), result);
            }
            if let Some(error) = error {
                receipt.insert("error".into(), error);
            }
        }
        stored.receipt.clone()
    }

    /// From the checks before the effect to the restore, in one go: the
    /// steps the server runs with its state free between them (`staged`):
    /// `Desk::check_before`, [`State::cross`], `Desk::perform`, and
    /// [`State::settle`].
    fn run(&mut self, begun: &Begun) -> Result<ToolResult, Failure> {
        let desk = self.desk();
        let snapshot = desk.check_before(begun)?;
        let watch = self.cross(begun)?;
        let request = &begun.request;
        if !begun.preview.meta.mutates && super::wait::polled(&request.tool).is_some() {
            return self
                .wait_here(&request.tool, &request.args, &request.session_id)
                .map(|answer| ToolResult {
                    structured: answer,
                    images: Vec::new(),
                })
                .map_err(|error| before(super::wait::failed(&request.tool, error)));
        }
        let performed = desk.perform(begun, watch);
        let (result, restore) = self.settle(begun, performed, snapshot)?;
        if let Some(snapshot) = restore {
            let restoration = desk.restore(snapshot);
            self.restored(begun, restoration);
        }
        Ok(result)
    }
}
