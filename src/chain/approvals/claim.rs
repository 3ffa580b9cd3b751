//! The claim: the one step every resume is built around.
//!
//! Load, verify the seal and the store of record, check the owner, then,
//! once the caller has built what the checkpoint approves, consume it in
//! one atomic store step that also decides between the agent's own
//! approval and a person's recorded decision. A checkpoint this session is
//! resuming is marked first, so two resumes in one session never both get
//! as far as the store.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use super::checkpoint::{CheckpointBody, CheckpointId, open_record};
use super::offload;
use super::refusal::CheckpointRefusal;
use super::stores::{CheckpointStore, ClaimBasis};
use crate::ComputerUseError;
use crate::chain::core::Core;
use crate::runtime::ComputerUseRuntime;

/// A checkpoint this session is resuming: marked in the session until the
/// claim is taken (kept for good) or fails (the mark is removed on drop).
pub(crate) struct Claim<'a> {
    resumed: &'a Mutex<HashSet<CheckpointId>>,
    store: Arc<dyn CheckpointStore>,
    id: CheckpointId,
    taken: bool,
}

impl<'a> Claim<'a> {
    /// Marks `id` as being resumed by this session, in its store of record.
    pub(crate) fn begin<R: ComputerUseRuntime>(
        core: &'a Core<R>,
        id: &CheckpointId,
    ) -> Result<Self, ComputerUseError> {
        let store = core
            .checkpoints
            .clone()
            .ok_or_else(|| ComputerUseError::checkpoint(id, CheckpointRefusal::NoStoreOfRecord))?;
        let fresh = core
            .resumed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone());
        if !fresh {
            return Err(ComputerUseError::checkpoint(
                id,
                CheckpointRefusal::ResumedHere,
            ));
        }
        Ok(Self {
            resumed: &core.resumed,
            store,
            id: id.clone(),
            taken: false,
        })
    }

    /// The store of record.
    pub(crate) fn store(&self) -> &Arc<dyn CheckpointStore> {
        &self.store
    }

    /// Loads the record and opens it: one record, its seal, this store,
    /// and this session's owner (session, principal, agent, group).
    pub(crate) async fn open<R: ComputerUseRuntime>(
        &self,
        core: &Core<R>,
    ) -> Result<CheckpointBody, ComputerUseError> {
        let id = self.id.clone();
        let body = offload::run(&self.store, "read a checkpoint", move |store| {
            let records = store.load(&id)?;
            open_record(store, &id, &records)
        })
        .await?;
        owns(core, &self.id, &body)?;
        Ok(body)
    }

    /// Refuses early when a person's decision is recorded and the caller
    /// acts without one (the claim checks again, atomically).
    pub(crate) async fn undecided(&self) -> Result<(), ComputerUseError> {
        let id = self.id.clone();
        let recorded = offload::run(&self.store, "read a decision", move |store| {
            store.decision(&id)
        })
        .await?;
        match recorded {
            None => Ok(()),
            Some(_) => Err(ComputerUseError::checkpoint(
                &self.id,
                CheckpointRefusal::DecisionRecorded,
            )),
        }
    }

    /// Consumes the checkpoint on `basis`, atomically in the store: the
    /// last step, taken only by a resume that would otherwise succeed. A
    /// claim that loses (a decision came first, another resume won) is
    /// journaled as the refusal of `action_id`, after its approval.
    pub(crate) async fn take<R: ComputerUseRuntime>(
        mut self,
        core: &Core<R>,
        action_id: &str,
        basis: ClaimBasis,
    ) -> Result<(), ComputerUseError> {
        let id = self.id.clone();
        let claimed = offload::run(&self.store, "consume a checkpoint", move |store| {
            store.claim(&id, &basis)
        })
        .await;
        if let Err(err) = &claimed {
            core.recorder.refusal(action_id, err);
        }
        claimed?;
        self.taken = true;
        Ok(())
    }
}

impl Claim<'_> {
    /// [`Claim::take`], for a resume whose action goes on to execute: the
    /// claim is remembered under `action_id`, to be given back if the
    /// action is refused before any effect (see [`super::give_back`]).
    /// The action (a `tool`) then owes the checkpoint a report of how it
    /// ended (see [`super::report`]).
    pub(crate) async fn take_returnable<R: ComputerUseRuntime>(
        self,
        core: &Core<R>,
        envelope: &crate::contracts::ActionEnvelope,
        basis: ClaimBasis,
    ) -> Result<(), ComputerUseError> {
        let action_id = envelope.action_id.as_str();
        let (store, id) = (Arc::clone(&self.store), self.id.clone());
        self.take(core, action_id, basis.clone()).await?;
        core.reports.owe(
            &super::report::Resumed::of(envelope),
            Arc::clone(&store),
            id.clone(),
        );
        core.returnable.hold(envelope, store, id, basis);
        Ok(())
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.taken {
            self.resumed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(&self.id);
        }
    }
}

/// Refuses a checkpoint sealed for another session, identity, agent or
/// group than this session's.
fn owns<R: ComputerUseRuntime>(
    core: &Core<R>,
    id: &CheckpointId,
    body: &CheckpointBody,
) -> Result<(), ComputerUseError> {
    let identity = core.identity();
    let fail = |refusal: CheckpointRefusal| ComputerUseError::checkpoint(id, refusal);
    if body.session_id != core.session_id {
        return Err(fail(CheckpointRefusal::OtherSession {
            sealed_for: body.session_id.clone(),
            session: core.session_id.clone(),
        }));
    }
    if body.principal_id != identity.principal_id() || body.tenant_id != identity.tenant_id() {
        return Err(fail(CheckpointRefusal::OtherPrincipal));
    }
    if body.agent_id != core.agent_id || body.execution_group_id != core.execution_group_id {
        return Err(fail(CheckpointRefusal::OtherAgent {
            sealed_agent: body.agent_id.clone(),
            sealed_group: body.execution_group_id.clone(),
            agent: core.agent_id.clone(),
            group: core.execution_group_id.clone(),
        }));
    }
    Ok(())
}
