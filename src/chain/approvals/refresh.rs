//! An expired checkpoint previewed again: the person approved an action,
//! not an envelope, so once the sealed envelope expired the same action is
//! previewed anew, and it goes on only if the new preview shows exactly
//! what was sealed (both digests, every field but the times).

use std::sync::Arc;

use super::checkpoint::{CheckpointBody, CheckpointId};
use super::refusal::CheckpointRefusal;
use crate::ComputerUseError;
use crate::chain::PendingApproval;
use crate::chain::core::Core;
use crate::runtime::ComputerUseRuntime;

/// The checkpoint's action previewed again when its envelope expired
/// (`None` while it is still fresh), checked to carry the sealed action's
/// digests. Consumes nothing.
pub(crate) async fn previewed_again<R: ComputerUseRuntime>(
    core: &Arc<Core<R>>,
    id: &CheckpointId,
    body: &CheckpointBody,
) -> Result<Option<PendingApproval<R>>, ComputerUseError> {
    let sealed = &body.preview;
    let envelope = &sealed.envelope;
    let now = core.clock().now().unix_timestamp_nanos();
    if envelope.expires_at.unix_nanos().is_some_and(|at| at > now) {
        return Ok(None);
    }
    let action = proposal_of(id, body)?;
    let arguments = action.arguments.clone();
    let request = crate::runtime::ActionRequest {
        session_id: &core.session_id,
        agent_id: core.agent_id.as_deref(),
        execution_group_id: core.execution_group_id.as_deref(),
        action: &action,
    };
    let answer = core.runtime.preview_action(&request).await?;
    crate::chain::proposal::bind_to_request(&request, &answer.preview.envelope)?;
    crate::chain::proposal::bind_capability(&answer.preview)?;
    if let Err(err) = same_as_sealed(sealed, &answer.preview) {
        core.recorder.refusal(&envelope.action_id, &err);
        return Err(err);
    }
    core.recorder.note(
        &envelope.action_id,
        crate::journal::events::PREVIEWED,
        || {
            serde_json::json!({
                "argsDigest": answer.preview.envelope.args_digest,
                "policyDigest": answer.preview.policy.policy_digest,
                "executable": answer.preview.executable,
                "blocker": answer.preview.blocker,
                "refreshedFrom": id.as_str(),
            })
        },
    );
    PendingApproval::restore(
        Arc::clone(core),
        answer.preview,
        answer.retained,
        Some(arguments),
    )
    .map(Some)
}

/// The re-preview of an expired checkpoint shows the person's action and
/// nothing else: the envelope and the policy as sealed, field by field,
/// except the times a new preview must change (`proposedAt`, `expiresAt`,
/// and when the target's sensitivity was observed).
pub(crate) fn same_as_sealed(
    sealed: &crate::contracts::ActionPreview,
    fresh: &crate::contracts::ActionPreview,
) -> Result<(), ComputerUseError> {
    compare_sealed(sealed, fresh, &[])
}

/// [`same_as_sealed`], leaving out the envelope fields `also_free` too
/// (for a preview on fresh evidence: the target and the digest over it,
/// which the caller compares its own way).
pub(crate) fn compare_sealed(
    sealed: &crate::contracts::ActionPreview,
    fresh: &crate::contracts::ActionPreview,
    also_free: &[&str],
) -> Result<(), ComputerUseError> {
    let comparable = |preview: &crate::contracts::ActionPreview| -> serde_json::Value {
        let mut envelope = serde_json::to_value(&preview.envelope).unwrap_or_default();
        if let Some(map) = envelope.as_object_mut() {
            map.remove("proposedAt");
            map.remove("expiresAt");
            for field in also_free {
                map.remove(*field);
            }
            if let Some(sensitivity) = map
                .get_mut("targetSensitivity")
                .and_then(serde_json::Value::as_object_mut)
            {
                sensitivity.remove("observedAt");
            }
        }
        serde_json::json!({
            "envelope": envelope,
            "policy": serde_json::to_value(&preview.policy).unwrap_or_default(),
        })
    };
    let (was, is) = (comparable(sealed), comparable(fresh));
    if was == is {
        return Ok(());
    }
    let part = ["envelope", "policy"]
        .into_iter()
        .find(|part| was.get(part) != is.get(part))
        .unwrap_or("envelope");
    let differing = match (was.get(part), is.get(part)) {
        (Some(serde_json::Value::Object(a)), Some(serde_json::Value::Object(b))) => a
            .keys()
            .chain(b.keys())
            .find(|k| a.get(*k) != b.get(*k))
            .cloned()
            .unwrap_or_default(),
        _ => String::new(),
    };
    let shown = |side: &serde_json::Value| {
        side.get(part)
            .and_then(|v| v.get(&differing))
            .map_or_else(|| "(absent)".to_owned(), ToString::to_string)
    };
    Err(ComputerUseError::IdentityMismatch {
        object: if part == "policy" {
            "PolicyDecision"
        } else {
            "ActionEnvelope"
        },
        field: stable_field(&differing),
        expected: shown(&was),
        actual: shown(&is),
    })
}

/// The wire names a re-preview may differ in, as `'static` field names.
fn stable_field(name: &str) -> &'static str {
    const FIELDS: [&str; 23] = [
        "actionId",
        "sessionId",
        "executionGroupId",
        "principalId",
        "agentId",
        "tool",
        "operation",
        "actionClass",
        "requestedMode",
        "target",
        "resource",
        "provenance",
        "targetSensitivity",
        "dataLabels",
        "postcondition",
        "reversible",
        "externalSideEffect",
        "argsDigest",
        "attempt",
        "certificationId",
        "decision",
        "policyDigest",
        "reasons",
    ];
    FIELDS.into_iter().find(|f| *f == name).unwrap_or("preview")
}

/// The request that previews `action` in the checkpoint's own session,
/// agent and group.
pub(crate) fn sealed_request<'a>(
    body: &'a CheckpointBody,
    action: &'a crate::runtime::ProposedAction,
) -> crate::runtime::ActionRequest<'a> {
    crate::runtime::ActionRequest {
        session_id: &body.session_id,
        agent_id: body.agent_id.as_deref(),
        execution_group_id: body.execution_group_id.as_deref(),
        action,
    }
}

/// The action a checkpoint seals, as it was proposed: to preview it again.
pub(crate) fn proposal_of(
    id: &CheckpointId,
    body: &CheckpointBody,
) -> Result<crate::runtime::ProposedAction, ComputerUseError> {
    let envelope = &body.preview.envelope;
    let arguments = body
        .arguments
        .clone()
        .ok_or_else(|| ComputerUseError::checkpoint(id, CheckpointRefusal::NoProposal))?;
    let mut action = crate::runtime::ProposedAction::new(
        envelope.tool.clone(),
        arguments,
        envelope.requested_mode,
    )
    .with_action_id(envelope.action_id.clone())
    .with_operation(envelope.operation.clone())
    .with_data_labels(envelope.data_labels.clone());
    action.target = envelope.target.clone();
    action.postcondition = envelope.postcondition.clone();
    action.provenance = envelope.provenance.clone();
    // The file an input action was checked by is named again, so the
    // second preview binds the same check; the rest of the resource is
    // derived from the target and arguments, as it was the first time.
    action.resource = envelope
        .resource
        .as_ref()
        .and_then(|r| r.filesystem_path.clone())
        .map(|path| crate::contracts::ActionResourceContext {
            filesystem_path: Some(path),
            ..Default::default()
        });
    Ok(action)
}
