//! A person's decision about a suspended action, kept beside its
//! checkpoint.
//!
//! A person should see what they approve without resuming anything, and an
//! agent waiting on any machine should learn the answer from the store it
//! suspended to. So a checkpoint can be inspected (its seal is verified on
//! every read), and a decision (an approval of that exact action, or a
//! denial with a reason) is recorded beside it once, sealed with the
//! store's key: a file written by anyone without the key is not a decision.
//! The waiting session then resumes with the approval, or retires the
//! checkpoint on a denial; either way only once.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::approval::Approval;
use super::checkpoint::{CheckpointId, CheckpointStore, SealingKey, open_record};
use crate::ComputerUseError;
use crate::contracts::{DataLabel, ExecutionMode, PolicyVerdict, WindowId};

/// What a person is shown about a suspended action.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointView {
    /// The checkpoint.
    pub id: CheckpointId,
    /// The runtime session it was suspended in.
    pub session_id: String,
    /// Who it acts for.
    pub principal_id: String,
    /// Their tenant.
    pub tenant_id: String,
    /// The agent that proposed it, if named.
    pub agent_id: Option<String>,
    /// The action.
    pub action_id: String,
    /// The low-level tool.
    pub tool: String,
    /// Its operation.
    pub operation: String,
    /// The mode it would run in.
    pub mode: ExecutionMode,
    /// The application it targets, if the action names one.
    pub target_app_id: Option<String>,
    /// The window it targets, if the action names one.
    pub target_window_id: Option<WindowId>,
    /// The data it handles.
    pub data_labels: Vec<DataLabel>,
    /// The policy's verdict.
    pub policy_decision: PolicyVerdict,
    /// The policy's reasons.
    pub reasons: Vec<String>,
    /// The digest an approval must name: the action's.
    pub action_digest: String,
    /// The digest of the policy it was previewed under.
    pub policy_digest: String,
    /// When the previewed envelope expires (RFC 3339).
    pub expires_at: String,
    /// The decision recorded so far, if any.
    pub decision: Option<Decision>,
}

/// What a person decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approved, with this approval of the exact action.
    Approve(Approval),
    /// Denied, for this reason.
    Deny {
        /// Why.
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SealedDecision {
    body: Value,
    seal: String,
}

impl Decision {
    fn to_body(&self, id: &CheckpointId) -> Value {
        match self {
            Self::Approve(approval) => {
                json!({ "checkpointId": id.as_str(), "approve": approval.to_json() })
            }
            Self::Deny { reason } => {
                json!({ "checkpointId": id.as_str(), "deny": { "reason": reason } })
            }
        }
    }

    fn from_body(id: &CheckpointId, body: &Value) -> Result<Self, ComputerUseError> {
        let fail = |reason: &str| ComputerUseError::Checkpoint {
            id: id.to_string(),
            reason: format!("the recorded decision {reason}"),
        };
        if body.get("checkpointId").and_then(Value::as_str) != Some(id.as_str()) {
            return Err(fail("is for another checkpoint"));
        }
        match (body.get("approve"), body.get("deny")) {
            (Some(approval), None) => Ok(Self::Approve(Approval::from_json(approval)?)),
            (None, Some(deny)) => Ok(Self::Deny {
                reason: deny
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            }),
            _ => Err(fail("is neither an approval nor a denial")),
        }
    }
}

fn seal(
    key: &SealingKey,
    id: &CheckpointId,
    decision: &Decision,
) -> Result<String, ComputerUseError> {
    let body = decision.to_body(id);
    let canonical = crate::digest::canonical_json(&body);
    serde_json::to_string(&SealedDecision {
        body,
        seal: key.seal_text(&canonical),
    })
    .map_err(|err| ComputerUseError::decode("decision record", err))
}

fn open(key: &SealingKey, id: &CheckpointId, record: &str) -> Result<Decision, ComputerUseError> {
    let fail = |reason: &str| ComputerUseError::Checkpoint {
        id: id.to_string(),
        reason: reason.to_owned(),
    };
    let sealed: SealedDecision =
        serde_json::from_str(record).map_err(|_| fail("the recorded decision does not decode"))?;
    let canonical = crate::digest::canonical_json(&sealed.body);
    if !key.verify_text(&canonical, &sealed.seal) {
        return Err(fail(
            "the recorded decision's seal does not verify: it was altered or not written with this store's key",
        ));
    }
    Decision::from_body(id, &sealed.body)
}

/// The checkpoint `id` as a person sees it, its seal verified, with the
/// decision recorded beside it, if any.
pub fn inspect(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
) -> Result<CheckpointView, ComputerUseError> {
    let records = store.load(id)?;
    let body = open_record(store.sealing_key(), id, &records)?;
    let decision = match store.decision(id)? {
        Some(record) => Some(open(store.sealing_key(), id, &record)?),
        None => None,
    };
    let envelope = &body.preview.envelope;
    let target = envelope.target.as_ref();
    Ok(CheckpointView {
        id: id.clone(),
        session_id: body.session_id.clone(),
        principal_id: body.principal_id.clone(),
        tenant_id: body.tenant_id.clone(),
        agent_id: body.agent_id.clone(),
        action_id: envelope.action_id.clone(),
        tool: envelope.tool.clone(),
        operation: envelope.operation.clone(),
        mode: envelope.requested_mode,
        target_app_id: target.map(|t| t.app_id.clone()),
        target_window_id: target.and_then(|t| t.window_id.clone()),
        data_labels: envelope.data_labels.clone(),
        policy_decision: body.preview.policy.decision,
        reasons: body.preview.policy.reasons.clone(),
        action_digest: envelope.args_digest.clone(),
        policy_digest: body.preview.policy.policy_digest.clone(),
        expires_at: envelope.expires_at.to_string(),
        decision,
    })
}

/// Every checkpoint waiting in `store`, as [`inspect`] shows it. One that
/// fails its seal is reported as an error, never shown as if it were sound.
pub fn pending(store: &dyn CheckpointStore) -> Result<Vec<CheckpointView>, ComputerUseError> {
    store.ids()?.iter().map(|id| inspect(store, id)).collect()
}

/// Records `decision` beside the checkpoint `id`, once. An approval must
/// name this exact action (its id and both digests); it is checked here so
/// a mistaken approval is refused to the person making it, not later.
pub fn decide(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    decision: &Decision,
) -> Result<(), ComputerUseError> {
    let records = store.load(id)?;
    let body = open_record(store.sealing_key(), id, &records)?;
    if let Decision::Approve(approval) = decision {
        approval.check_against(&body.preview)?;
    }
    store.record_decision(id, &seal(store.sealing_key(), id, decision)?)
}

/// The decision recorded for `id`, if any (its seal verified).
pub fn decision_of(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
) -> Result<Option<Decision>, ComputerUseError> {
    match store.decision(id)? {
        Some(record) => Ok(Some(open(store.sealing_key(), id, &record)?)),
        None => Ok(None),
    }
}

/// Polls `store` for a decision on `id`, every `every`, for at most
/// `within`: a bounded poll (any store can answer it; no notification
/// channel is assumed). `None` when none was made in time.
pub async fn wait_for_decision(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    every: Duration,
    within: Duration,
) -> Result<Option<Decision>, ComputerUseError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(decision) = decision_of(store, id)? {
            return Ok(Some(decision));
        }
        if tokio::time::Instant::now() + every > deadline {
            return Ok(None);
        }
        tokio::time::sleep(every).await;
    }
}
