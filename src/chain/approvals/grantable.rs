//! A checkpoint opened by the approver's side to ask a grant for it.
//!
//! The approver (not the agent) asks the server for a grant. What it asks
//! for must be what the person saw: the checkpoint is opened from its store
//! of record, a decided one is refused, one whose target evidence aged is
//! looked at again and previewed on fresh evidence of the same target (see
//! [`super::evidence`]), and one whose envelope expired is previewed again
//! on the approver's own runtime, where the new preview must show exactly
//! what was sealed (every field but the times). Any runtime
//! adapter that issues grants uses this one step; none reaches into the
//! checkpoint's internals.

use std::sync::Arc;
use std::time::Duration;

use super::view::view_of;
use super::{CheckpointId, CheckpointRefusal, CheckpointStore, CheckpointView, offload};
use crate::ComputerUseError;
use crate::contracts::TargetEvidence;
use crate::runtime::ComputerUseRuntime;

/// A checkpoint opened for a grant: what the person is shown, and the
/// preview the grant must name.
#[derive(Debug, Clone)]
pub struct GrantableCheckpoint {
    /// The checkpoint as the person is shown it (as sealed).
    pub view: CheckpointView,
    /// The action digest the grant must name: the sealed one, or the fresh
    /// preview's when the target evidence was taken again.
    pub action_digest: String,
    /// The fresh target evidence the action was previewed on again, when
    /// the sealed evidence had aged: the approval records it, and the
    /// agent previews on exactly this evidence.
    pub fresh_target: Option<TargetEvidence>,
}

/// Opens checkpoint `id` of `store` for a grant, once it is undecided and
/// its previewed action still what was sealed.
///
/// Through `previewer` (the approver's own runtime): when the sealed target
/// evidence is at least half `max_age` old (the age the runtime accepts at
/// execution), the target is looked at again, the fresh evidence must show
/// the same target with nothing but its pixels changed (else
/// [`CheckpointRefusal::TargetChanged`]), and the action is previewed on it:
/// the grant then names that preview. When only the envelope expired, the
/// sealed action is previewed again as sealed, and the new preview must show
/// exactly what was sealed. Either without a previewer is refused.
pub async fn open_for_grant<R: ComputerUseRuntime>(
    store: Arc<dyn CheckpointStore>,
    id: &CheckpointId,
    previewer: Option<&R>,
    max_age: Duration,
) -> Result<GrantableCheckpoint, ComputerUseError> {
    let (view, body) = {
        let id = id.clone();
        offload(&store, "read a checkpoint", move |store| {
            let records = store.load(&id)?;
            let body = super::checkpoint::open_record(store, &id, &records)?;
            let view = view_of(store, &id, &body)?;
            Ok((view, body))
        })
        .await?
    };
    if view.decided {
        return Err(ComputerUseError::checkpoint(
            id,
            CheckpointRefusal::AlreadyDecided,
        ));
    }
    let now = time::OffsetDateTime::now_utc();
    let expired = body
        .preview
        .envelope
        .expires_at
        .unix_nanos()
        .is_none_or(|at| at <= now.unix_timestamp_nanos());
    let aged = body
        .preview
        .envelope
        .target
        .as_ref()
        .filter(|target| super::evidence::needs_fresh(target, now, max_age));
    let needs_runtime = |why: &str| ComputerUseError::InvalidRequest {
        field: "approver".into(),
        message: format!(
            "{why}: previewing it again for a grant needs an approver on a connection of its own (McpApprover::connect)"
        ),
    };
    if let Some(sealed) = aged {
        let runtime =
            previewer.ok_or_else(|| needs_runtime("the checkpoint's target evidence aged"))?;
        let observed_at = crate::clock::format_rfc3339(time::OffsetDateTime::now_utc())?;
        let fresh =
            super::evidence::look_again(runtime, &body.session_id, sealed, &observed_at).await?;
        super::evidence::same_as_sealed_target(
            id,
            &body.preview.envelope.tool,
            Some(sealed),
            &fresh,
        )?;
        let answer = super::evidence::preview_on(runtime, id, &body, fresh.clone()).await?;
        return Ok(GrantableCheckpoint {
            view,
            action_digest: answer.preview.envelope.args_digest,
            fresh_target: Some(fresh),
        });
    }
    if expired {
        let runtime =
            previewer.ok_or_else(|| needs_runtime("the checkpoint's envelope expired"))?;
        let action = super::refresh::proposal_of(id, &body)?;
        let request = super::refresh::sealed_request(&body, &action);
        let answer = runtime.preview_action(&request).await?;
        // The person approved what was sealed: the new preview must show
        // exactly that, as the agent's own re-preview must.
        super::refresh::same_as_sealed(&body.preview, &answer.preview)?;
    }
    let action_digest = view.action_digest.clone();
    Ok(GrantableCheckpoint {
        view,
        action_digest,
        fresh_target: None,
    })
}
