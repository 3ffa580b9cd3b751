//! `PendingApproval`: the action waits for a person.

use std::sync::Arc;

use super::Approved;
use super::approvals::{
    Approval, ApprovalSource, Authority, CheckpointBody, CheckpointId, CheckpointRefusal,
    SealedFrame, VERSION, offload, seal_record,
};
use super::core::Core;
use super::witness::FreshPreview;
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::ActionPreview;
use serde_json::Value;

use super::route::RouteKind;
use crate::journal::events;
use crate::runtime::ComputerUseRuntime;

/// An action that needs approval. Nothing has been reserved, leased or run.
#[must_use = "a pending approval does nothing until it is approved or suspended to a checkpoint store"]
pub struct PendingApproval<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
}

impl<R: ComputerUseRuntime> PendingApproval<R> {
    pub(crate) fn new(core: Arc<Core<R>>, preview: FreshPreview) -> Self {
        Self { core, preview }
    }

    /// Rebuilds a pending approval from a checkpointed preview, with every
    /// check a fresh preview gets.
    pub(crate) fn restore(
        core: Arc<Core<R>>,
        preview: ActionPreview,
        retained: Option<Value>,
        arguments: Option<Value>,
    ) -> Result<Self, ComputerUseError> {
        let kind = super::route::route_kind(&preview);
        if kind != RouteKind::NeedsApproval {
            return Err(ComputerUseError::invalid(
                "ActionPreview",
                "blocker",
                "a checkpointed preview that needs approval",
                format!("{kind:?}"),
            ));
        }
        let clock = core.clock();
        let fresh = FreshPreview::check(
            Box::new(preview),
            retained,
            &core.session_id,
            core.identity().principal_id(),
            clock,
        )
        .map_err(|(err, _)| err)?
        .with_arguments(arguments);
        Ok(Self {
            core,
            preview: fresh,
        })
    }

    /// The preview awaiting approval.
    pub fn preview(&self) -> &ActionPreview {
        self.preview.get()
    }

    /// The digest an approval must name as `actionDigest`.
    pub fn action_digest(&self) -> &str {
        &self.preview.envelope().args_digest
    }

    /// The digest an approval must name as `policyDigest`.
    pub fn policy_digest(&self) -> &str {
        &self.preview.get().policy.policy_digest
    }

    /// Adds the approval. Both digests must match this preview, and the
    /// preview must still be fresh (the wait for a person can outlast it).
    pub fn approve(self, approval: Approval) -> Result<Approved<R>, ComputerUseError> {
        let envelope = self.preview.envelope();
        let checked = self
            .core
            .ensure_open("approve")
            .and_then(|()| approval.check_against(self.preview.get()))
            .and_then(|()| self.preview.recheck(self.core.clock()));
        if let Err(err) = checked {
            self.core.recorder.refusal(&envelope.action_id, &err);
            return Err(err);
        }
        let authority = match approval.source() {
            ApprovalSource::Grant(_) => "grant",
            ApprovalSource::RuntimeHeld => "runtime",
        };
        // Waited for before the reservation, the first thing the runtime
        // is asked to do on this approval.
        let journaled = self.core.recorder.record(
            &envelope.action_id,
            events::APPROVED,
            || json!({ "authority": authority, "grantId": approval.grant_id() }),
        );
        if let Some(err) = journaled.failed_now() {
            return Err(err.clone());
        }
        Ok(Approved::journaled(
            self.core,
            self.preview,
            Authority::Approved(Box::new(approval)),
            journaled,
        ))
    }

    /// The id of the action awaiting approval, which an approval must name.
    pub fn action_id(&self) -> &str {
        &self.preview.envelope().action_id
    }

    /// Seals the exact preview, with what the runtime keeps for it, into
    /// the session's store of record ([`super::SessionBuilder::checkpoints`])
    /// so another process can resume it with [`super::Session::resume`],
    /// and gives this pending approval up: the checkpoint is now the only
    /// way to approve the action, and it can be resumed once, from that
    /// store only. Returns the checkpoint's id. The write runs on Tokio's
    /// blocking pool.
    pub async fn suspend(self) -> Result<CheckpointId, ComputerUseError> {
        let id = CheckpointId::for_preview(&self.core.session_id, self.preview.get());
        let store =
            self.core.checkpoints.clone().ok_or_else(|| {
                ComputerUseError::checkpoint(&id, CheckpointRefusal::NoStoreOfRecord)
            })?;
        let identity = self.core.identity();
        let body = CheckpointBody {
            version: VERSION,
            checkpoint_id: id.to_string(),
            store_id: store.store_id().to_owned(),
            session_id: self.core.session_id.clone(),
            principal_id: identity.principal_id().to_owned(),
            tenant_id: identity.tenant_id().to_owned(),
            agent_id: self.core.agent_id.clone(),
            execution_group_id: self.core.execution_group_id.clone(),
            preview: self.preview.get().clone(),
            runtime_state: self.preview.retained().cloned(),
            arguments: self.preview.arguments().cloned(),
            frame: self.preview.frame().map(|image| SealedFrame {
                mime_type: image.mime_type.clone(),
                data: image.data.clone(),
                window_only: self.preview.frame_window_only(),
            }),
        };
        let record = seal_record(store.sealing_key(), &body)?;
        let created = id.clone();
        offload(&store, "store a checkpoint", move |store| {
            store.create(&created, &record)
        })
        .await?;
        Ok(id)
    }
}
