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
use crate::chain::core::Core;
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
    let approved = carried(core, id, body, approval, false).await?;
    claim
        .take_returnable(core, &approved.preview().envelope, ClaimBasis::Undecided)
        .await?;
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
    let approved = carried(core, id, body, approval, true).await?;
    claim
        .take_returnable(core, &approved.preview().envelope, ClaimBasis::Undecided)
        .await?;
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
            let approved = carried(core, id, body, approval, true).await?;
            claim
                .take_returnable(
                    core,
                    &approved.preview().envelope,
                    ClaimBasis::Decision(record),
                )
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

/// The checkpoint's action approved by `approval`, on evidence the runtime
/// will still accept, checked before anything is consumed:
///
/// - an approval the approver gave on fresh evidence
///   ([`Approval::fresh_target`](super::Approval::fresh_target)) is
///   previewed on exactly that evidence, which must show the sealed target
///   and be younger than the runtime accepts;
/// - sealed evidence half as old as the runtime accepts is looked at again
///   for an approval the runtime holds (the approval follows the fresh
///   preview of the same action on the same target); a grant names the
///   exact digest of the evidence it was given for, so it cannot follow,
///   and evidence already too old for it is refused
///   ([`CheckpointRefusal::EvidenceAged`]);
/// - otherwise the sealed preview, or (`refresh_expired`) a fresh preview
///   of it as sealed when its envelope expired.
async fn carried<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
    body: CheckpointBody,
    approval: super::Approval,
    refresh_expired: bool,
) -> Result<Approved<R>, ComputerUseError> {
    use super::evidence;
    let now = core.clock().now();
    let max_age = core.evidence_max_age;
    let aged = |target: &crate::contracts::TargetEvidence| {
        let age = evidence::age(target, now);
        (age >= max_age).then(|| {
            ComputerUseError::checkpoint(
                id,
                CheckpointRefusal::EvidenceAged {
                    age_ms: evidence::millis(age),
                    limit_ms: evidence::millis(max_age),
                },
            )
        })
    };
    let sealed_target = body.preview.envelope.target.clone();
    if let Some(fresh) = approval.fresh_target() {
        evidence::same_as_sealed_target(
            id,
            &body.preview.envelope.tool,
            sealed_target.as_ref(),
            &fresh,
        )?;
        if let Some(err) = aged(&fresh) {
            return Err(err);
        }
        let answer = evidence::preview_on(&*core.runtime, id, &body, fresh).await?;
        return fresh_pending(core, id, &body, answer)?.approve(approval);
    }
    if let Some(sealed) = sealed_target
        .as_ref()
        .filter(|target| evidence::needs_fresh(target, now, max_age))
    {
        match approval.source() {
            super::ApprovalSource::RuntimeHeld => {
                // The approval is of the sealed action first of all.
                approval.check_against(&body.preview)?;
                let observed_at = crate::clock::format_rfc3339(now)?;
                let fresh =
                    evidence::look_again(&*core.runtime, &core.session_id, sealed, &observed_at)
                        .await?;
                evidence::same_as_sealed_target(
                    id,
                    &body.preview.envelope.tool,
                    Some(sealed),
                    &fresh,
                )?;
                let answer = evidence::preview_on(&*core.runtime, id, &body, fresh).await?;
                let followed = super::Approval::runtime_held(
                    approval.action_id(),
                    &answer.preview.envelope.args_digest,
                    approval.policy_digest(),
                );
                return fresh_pending(core, id, &body, answer)?.approve(followed);
            }
            super::ApprovalSource::Grant(_) => {
                if let Some(err) = aged(sealed) {
                    return Err(err);
                }
            }
        }
    }
    if refresh_expired {
        again_or_restored(core, id, body).await?.approve(approval)
    } else {
        restored(core, body)?.approve(approval)
    }
}

/// The pending approval of a preview on fresh evidence, journaled as such.
fn fresh_pending<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
    body: &CheckpointBody,
    answer: crate::runtime::PreviewAnswer,
) -> Result<PendingApproval<R>, ComputerUseError> {
    let preview = &answer.preview;
    core.recorder.note(
        &preview.envelope.action_id,
        crate::journal::events::PREVIEWED,
        || {
            serde_json::json!({
                "argsDigest": preview.envelope.args_digest,
                "policyDigest": preview.policy.policy_digest,
                "executable": preview.executable,
                "blocker": preview.blocker,
                "refreshedFrom": id.as_str(),
                "freshEvidence": preview.envelope.target.as_ref().map(|t| &t.observation_id),
            })
        },
    );
    PendingApproval::restore(
        Arc::clone(core),
        answer.preview,
        answer.retained,
        body.arguments.clone(),
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
