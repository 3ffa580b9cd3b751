//! Resuming a suspended action: with the caller's approval, with a fresh
//! preview when the sealed one expired, or by a person's recorded decision.
//!
//! Every path is the same claim ([`super::claim`]) around a different
//! middle: what the checkpoint is turned back into before it is consumed.

use std::sync::Arc;

use super::approval::Approval;
use super::checkpoint::{CheckpointBody, CheckpointId};
use super::claim::Claim;
use super::decision::{ApproverPublicKey, Decision, recorded_decision};
use super::offload;
use super::refusal::CheckpointRefusal;
use super::stores::ClaimBasis;
use crate::ComputerUseError;
use crate::chain::session::Core;
use crate::chain::{Approved, PendingApproval};
use crate::runtime::ComputerUseRuntime;

/// With the caller's approval; the envelope must still be fresh.
pub(crate) async fn with_approval<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
    approval: Approval,
) -> Result<Approved<R>, ComputerUseError> {
    core.ensure_open("resume")?;
    let claim = Claim::begin(core, id)?;
    claim.undecided().await?;
    let body = claim.open(core).await?;
    let approved = restored(core, body)?.approve(approval)?;
    let action_id = approved.preview().envelope.action_id.clone();
    claim.take(core, &action_id, ClaimBasis::Undecided).await?;
    Ok(approved)
}

/// With the caller's approval, previewing the same action again when the
/// sealed envelope expired.
pub(crate) async fn refreshing<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
    approval: Approval,
) -> Result<Approved<R>, ComputerUseError> {
    core.ensure_open("resume")?;
    let claim = Claim::begin(core, id)?;
    claim.undecided().await?;
    let body = claim.open(core).await?;
    let approved = again_or_restored(core, id, body).await?.approve(approval)?;
    let action_id = approved.preview().envelope.action_id.clone();
    claim.take(core, &action_id, ClaimBasis::Undecided).await?;
    Ok(approved)
}

/// Previews an expired checkpoint's action again and consumes the
/// checkpoint; what comes back waits for an approval.
pub(crate) async fn refresh<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
) -> Result<PendingApproval<R>, ComputerUseError> {
    core.ensure_open("refresh")?;
    let claim = Claim::begin(core, id)?;
    claim.undecided().await?;
    let body = claim.open(core).await?;
    let pending = super::refresh::previewed_again(core, id, &body)
        .await?
        .ok_or_else(|| ComputerUseError::checkpoint(id, CheckpointRefusal::StillFresh))?;
    claim
        .take(core, pending.action_id(), ClaimBasis::Undecided)
        .await?;
    Ok(pending)
}

/// By the decision a person recorded, checked against the approver's key.
pub(crate) async fn by_decision<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
    approver: &ApproverPublicKey,
) -> Result<Approved<R>, ComputerUseError> {
    core.ensure_open("resume")?;
    let claim = Claim::begin(core, id)?;
    let recorded = {
        let (id, approver) = (id.clone(), approver.clone());
        offload::run(claim.store(), "read a decision", move |store| {
            recorded_decision(store, &id, &approver)
        })
        .await?
    };
    let Some((decision, record)) = recorded else {
        return Err(ComputerUseError::checkpoint(
            id,
            CheckpointRefusal::NoDecisionYet,
        ));
    };
    let body = claim.open(core).await?;
    match decision {
        Decision::Approve(approval) => {
            let approved = again_or_restored(core, id, body).await?.approve(approval)?;
            let action_id = approved.preview().envelope.action_id.clone();
            claim
                .take(core, &action_id, ClaimBasis::Decision(record))
                .await?;
            Ok(approved)
        }
        Decision::Deny { reason } => {
            let action_id = body.preview.envelope.action_id.clone();
            claim
                .take(core, &action_id, ClaimBasis::Decision(record))
                .await?;
            core.recorder.note(
                &action_id,
                crate::journal::events::DENIED,
                || serde_json::json!({ "checkpointId": id.as_str() }),
            );
            Err(ComputerUseError::Denied { action_id, reason })
        }
    }
}

/// The sealed pending approval, with every check a fresh preview gets.
fn restored<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    body: CheckpointBody,
) -> Result<PendingApproval<R>, ComputerUseError> {
    PendingApproval::restore(
        Arc::clone(core),
        body.preview,
        body.runtime_state,
        body.arguments,
    )
}

/// A fresh preview of the same action when the sealed one expired, else
/// the sealed one.
async fn again_or_restored<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
    body: CheckpointBody,
) -> Result<PendingApproval<R>, ComputerUseError> {
    match super::refresh::previewed_again(core, id, &body).await? {
        Some(pending) => Ok(pending),
        None => restored(core, body),
    }
}
