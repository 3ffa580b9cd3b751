//! A checkpoint opened by the approver's side to ask a grant for it.
//!
//! The approver (not the agent) asks the server for a grant. What it asks
//! for must be what the person saw: the checkpoint is opened from its store
//! of record, a decided one is refused, and one whose envelope expired is
//! previewed again on the approver's own runtime, where the new preview must
//! show exactly what was sealed (every field but the times). Any runtime
//! adapter that issues grants uses this one step; none reaches into the
//! checkpoint's internals.

use std::sync::Arc;

use super::decision::view_of;
use super::{CheckpointId, CheckpointRefusal, CheckpointStore, CheckpointView, offload};
use crate::ComputerUseError;
use crate::runtime::{ActionRequest, ComputerUseRuntime};

/// Opens checkpoint `id` of `store` for a grant: its view, once it is
/// undecided and its previewed action still what was sealed. When the
/// envelope expired, `previewer` (the approver's own runtime) previews the
/// sealed action again; without one, that is refused.
pub async fn open_for_grant<R: ComputerUseRuntime>(
    store: Arc<dyn CheckpointStore>,
    id: &CheckpointId,
    previewer: Option<&R>,
) -> Result<CheckpointView, ComputerUseError> {
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
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    let expired = body
        .preview
        .envelope
        .expires_at
        .unix_nanos()
        .is_none_or(|at| at <= now);
    if expired {
        let runtime = previewer.ok_or_else(|| ComputerUseError::InvalidRequest {
            field: "approver".into(),
            message: "the checkpoint's envelope expired: previewing it again for a grant needs an approver on a connection of its own (McpApprover::connect)".into(),
        })?;
        let action = super::refresh::proposal_of(id, &body)?;
        let request = ActionRequest {
            session_id: &body.session_id,
            agent_id: body.agent_id.as_deref(),
            execution_group_id: body.execution_group_id.as_deref(),
            action: &action,
        };
        let answer = runtime.preview_action(&request).await?;
        // The person approved what was sealed: the new preview must show
        // exactly that, as the agent's own re-preview must.
        super::refresh::same_as_sealed(&body.preview, &answer.preview)?;
    }
    Ok(view)
}
