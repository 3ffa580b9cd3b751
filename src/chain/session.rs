//! The session: where every chain starts and what every stage points back to.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::oneshot;

use super::approvals::{Approval, CheckpointId};
use super::builder::SessionBuilder;
use super::core::Core;
use super::guard::{ReaperMessage, ReleaseStats, reclaim};
use super::{Approved, Observed, PendingApproval};
use crate::auth::ScopeAuthorizer;
use crate::runtime::{ComputerUseRuntime, Observations};
use crate::{ComputerUseError, VerifiedIdentity};

/// One governed session with a runtime. Start chains with
/// [`Session::observe`] or [`Session::run`]; resume suspended approvals with
/// [`Session::resume`]; finish with [`Session::shutdown`].
#[must_use = "a session owns the reaper of dropped reservations; call shutdown().await to drain it"]
pub struct Session<R: ComputerUseRuntime> {
    pub(super) core: Arc<Core<R>>,
}

impl<R: ComputerUseRuntime> Session<R> {
    /// Starts building a session over `runtime`, in the runtime session it
    /// acts in, for the identity `authorizer` was built for (which must be
    /// the runtime's principal).
    pub fn builder(runtime: Arc<R>, authorizer: ScopeAuthorizer) -> SessionBuilder<R> {
        SessionBuilder::new(runtime, authorizer)
    }

    /// What every stage of this session shares.
    pub(crate) fn core(&self) -> &Arc<Core<R>> {
        &self.core
    }

    /// The runtime session id.
    pub fn session_id(&self) -> &str {
        &self.core.session_id
    }

    /// The identity this session acts for.
    pub fn identity(&self) -> &VerifiedIdentity {
        self.core.identity()
    }

    /// Observes widely: capabilities, a visual frame and a semantic frame, all
    /// three at once. Needs the `computer:plan` scope.
    pub async fn observe(&self) -> Result<Observed<R>, ComputerUseError> {
        self.may_observe()?;
        let scope = &self.core.scope;
        let runtime = &self.core.runtime;
        let (capabilities, visual, semantic) = tokio::try_join!(
            runtime.discover_capabilities(scope),
            runtime.observe_visual(scope),
            runtime.observe_semantic(scope),
        )?;
        Ok(Observed::new(
            Arc::clone(&self.core),
            Observations {
                capabilities,
                visual,
                semantic,
            },
        ))
    }

    /// Resumes a suspended approval from this session's store of record
    /// ([`SessionBuilder::checkpoints`]): reads the sealed preview back,
    /// adds `approval` to it, and consumes the checkpoint.
    ///
    /// Fails before any reservation when the session has no store of
    /// record, or the checkpoint is missing, already resumed (here or in
    /// another process), replaced, tampered with, carried from another
    /// store, of another session or identity, expired, decided by a person
    /// (a recorded decision is the only way on: [`Session::resume_decided`]),
    /// or when the approval is for something else; each is a
    /// [`ComputerUseError::Checkpoint`] whose
    /// [`CheckpointRefusal`](super::CheckpointRefusal) says which. The
    /// checkpoint is consumed only once every check has passed, in one
    /// atomic store step that also checks for a decision: a person's denial
    /// recorded first always wins, and a decision arriving after this
    /// resume is refused to the person making it.
    pub async fn resume(
        &self,
        id: &CheckpointId,
        approval: Approval,
    ) -> Result<Approved<R>, ComputerUseError> {
        super::approvals::resume::with_approval(&self.core, id, approval).await
    }

    /// [`Session::resume`], for a person who approved after the previewed
    /// envelope expired: the same action (its id, tool, arguments, mode,
    /// target and postcondition, as sealed) is previewed again; the new
    /// preview must carry the same action and policy digests as the sealed
    /// one, which the approval names (any difference is refused as a
    /// mismatch, never silently re-approved); then the action continues
    /// with the fresh envelope. A checkpoint still fresh resumes as
    /// [`Session::resume`] resumes it.
    pub async fn resume_refreshing(
        &self,
        id: &CheckpointId,
        approval: Approval,
    ) -> Result<Approved<R>, ComputerUseError> {
        super::approvals::resume::refreshing(&self.core, id, approval).await
    }

    /// Previews a checkpoint whose envelope expired again, for a runtime
    /// that approves only a live preview (upstream's `approve_action`
    /// refuses an expired one): the same action is previewed again, both
    /// digests must be unchanged, and the checkpoint is consumed. What comes
    /// back waits for the approval as any pending approval does (approve it
    /// with a grant the host obtains now, or suspend it again). A checkpoint
    /// still fresh is refused ([`CheckpointRefusal::StillFresh`](super::CheckpointRefusal::StillFresh)):
    /// resume it instead.
    pub async fn refresh(&self, id: &CheckpointId) -> Result<PendingApproval<R>, ComputerUseError> {
        super::approvals::resume::refresh(&self.core, id).await
    }

    /// Resumes the checkpoint `id` by the decision a person recorded beside
    /// it (see [`super::decide`]), its signature checked against the
    /// approver's public key: with the approval, as
    /// [`Session::resume_refreshing`] would (a person may approve after the
    /// envelope expired); on a denial, the checkpoint is retired and the
    /// action ends with [`ComputerUseError::Denied`], before any runtime
    /// call. With no decision yet, nothing changes and the refusal says so
    /// ([`CheckpointRefusal::NoDecisionYet`](super::CheckpointRefusal::NoDecisionYet)).
    pub async fn resume_decided(
        &self,
        id: &CheckpointId,
        approver: &super::ApproverPublicKey,
    ) -> Result<Approved<R>, ComputerUseError> {
        super::approvals::resume::by_decision(&self.core, id, approver).await
    }

    /// Waits for a person's decision on the checkpoint `id` in this
    /// session's store of record, as [`super::wait_for_decision`] does
    /// (a bounded poll, every `every`, for at most `within`; `None` when no
    /// decision came in time), its signature checked against `approver`.
    /// The agent needs neither the store nor its key to wait.
    pub async fn wait_for_decision(
        &self,
        id: &CheckpointId,
        approver: &super::ApproverPublicKey,
        every: std::time::Duration,
        within: std::time::Duration,
    ) -> Result<Option<super::Decision>, ComputerUseError> {
        let store = self.core.checkpoints.clone().ok_or_else(|| {
            ComputerUseError::checkpoint(id, super::CheckpointRefusal::NoStoreOfRecord)
        })?;
        super::wait_for_decision(store, id, approver, every, within).await
    }

    /// The session clock's now.
    pub(crate) fn clock_now(&self) -> time::OffsetDateTime {
        self.core.clock().now()
    }

    /// Journals an event of the agent loop under `action_id`; a failed
    /// write is counted in [`Session::journal_failures`], never hidden.
    pub(crate) fn journal_note(
        &self,
        action_id: &str,
        event_type: &str,
        payload: impl FnOnce() -> serde_json::Value,
    ) {
        self.core.recorder.note(action_id, event_type, payload);
    }

    /// Journal writes that failed after a mutation had already happened
    /// (before it, a failed write stops the chain instead).
    pub fn journal_failures(&self) -> u64 {
        self.core.recorder.failures()
    }

    /// How this session's reservations and leases were given back so far.
    pub fn release_stats(&self) -> ReleaseStats {
        self.core.release_stats()
    }

    /// Reservations and leases the session's actions hold right now.
    pub fn held_resources(&self) -> usize {
        self.core.release.releaser.ledger.len()
    }

    /// Ends the session. Every stage of it refuses further steps from now
    /// on. What its stages still hold — a stage that was never dropped
    /// (`mem::forget`), or one still alive — is handed to the reaper, except
    /// a resource a call is using at this moment (left to that call, and
    /// reported in [`ReleaseStats::outstanding`]). Then it waits until the
    /// reaper has worked through everything queued, and reports the
    /// counters.
    ///
    /// Each release is bounded by the release timeout, and so is the wait
    /// (by the timeout times the releases queued), so this returns even
    /// when the runtime the reaper runs on is no longer driven. Cancelling
    /// it after its first poll leaves nothing behind: the reaper runs on.
    ///
    /// Last, it closes the runtime ([`ComputerUseRuntime::close`]) when
    /// nothing else can use it: no stage of this session is still alive,
    /// nothing is outstanding, and no other session or caller holds the
    /// runtime. A caller that kept its own handle closes it itself.
    pub async fn shutdown(self) -> ReleaseStats {
        self.core.closed.store(true, Ordering::Release);
        let reclaimed = reclaim(&self.core.release);
        // Everything the reaper still has to do: what dropped guards queued
        // and it has not finished, and what was just reclaimed.
        let backlog = self.core.release.releaser.counters.reaper_backlog() + reclaimed;
        let (done, finished) = oneshot::channel();
        if self
            .core
            .release
            .reaper
            .send(ReaperMessage::Flush(done))
            .is_ok()
        {
            let rounds = u32::try_from(backlog.saturating_add(1)).unwrap_or(u32::MAX);
            let bound = self.core.release.releaser.timeout.saturating_mul(rounds);
            if tokio::time::timeout(bound, finished).await.is_err() {
                tracing::warn!(?bound, "the reaper did not finish within its bound");
            }
        }
        // What the journal still has queued is written before the counters
        // are read (a failed write is one of them).
        self.core.recorder.flush().await;
        let stats = self.core.release_stats();
        // Closed only when nothing can use it any more: no stage of this
        // session is alive (a stage holds the core, and a call it is making
        // must be able to finish and give back what it holds), nothing is
        // outstanding, and the session's own two handles (its core's and its
        // releaser's) are the runtime's only ones: no other session and no
        // caller holds it. Otherwise it stays open for them, and a spawned
        // server ends when the last handle is dropped.
        let unused = Arc::strong_count(&self.core) == 1
            && stats.outstanding == 0
            && Arc::strong_count(&self.core.runtime) == 2;
        if unused && let Err(err) = self.core.runtime.close().await {
            tracing::warn!(error = %err, "closing the runtime failed");
        }
        stats
    }
}

impl<R: ComputerUseRuntime> std::fmt::Debug for Session<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("session_id", &self.core.session_id)
            .field("identity", self.core.identity())
            .finish_non_exhaustive()
    }
}
