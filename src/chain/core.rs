//! What every stage of a session shares, apart from the session itself:
//! the chain's stages and the approvals' resumption point back to it, and
//! it points to none of them, so the approvals and the session do not
//! import each other.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::approvals::{CheckpointId, CheckpointStore};
use super::guard::{ReleaseHandle, ReleaseStats};
use super::recorder::Recorder;
use super::witness::Acting;
use crate::auth::ScopeAuthorizer;
use crate::clock::Clock;
use crate::contracts::ExecutionMode;
use crate::runtime::{ComputerUseRuntime, ObservationScope};
use crate::{ComputerUseError, VerifiedIdentity};

/// What every stage of a session shares.
pub(crate) struct Core<R: ComputerUseRuntime> {
    pub(crate) runtime: Arc<R>,
    pub(crate) authorizer: ScopeAuthorizer,
    pub(crate) session_id: String,
    pub(crate) agent_id: Option<String>,
    pub(crate) execution_group_id: Option<String>,
    /// Where observations look; built once, lent to every observation round.
    pub(crate) scope: ObservationScope,
    pub(crate) clock: Arc<dyn Clock>,
    /// How old target evidence the runtime accepts at execution.
    pub(crate) evidence_max_age: std::time::Duration,

    /// Set by `Session::shutdown`: no stage takes another step.
    pub(crate) closed: AtomicBool,
    /// Checkpoints this session resumed or is resuming.
    pub(crate) resumed: Mutex<HashSet<CheckpointId>>,
    /// Claims of resumed actions not yet past the effect boundary.
    pub(crate) returnable: super::approvals::give_back::Returnable,
    /// Reports resumed actions owe their checkpoints.
    pub(crate) reports: super::approvals::report::Reports,
    /// The store of record: where this session suspends to and resumes
    /// from, and no other.
    pub(crate) checkpoints: Option<Arc<dyn CheckpointStore>>,
    /// Releases, counts, the ledger of everything the actions hold, and the
    /// reaper's inbox: all a guard needs of its session.
    pub(crate) release: Arc<ReleaseHandle<R>>,
    pub(crate) recorder: Recorder,
}

impl<R: ComputerUseRuntime> Core<R> {
    pub(crate) fn identity(&self) -> &VerifiedIdentity {
        self.authorizer.identity()
    }

    /// The clock every expiry check asks.
    pub(crate) fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// The counters, with what is still held right now.
    pub(crate) fn release_stats(&self) -> ReleaseStats {
        let held = self.release.releaser.ledger.len();
        self.release.releaser.counters.snapshot(held)
    }

    /// `action_id` failed with `err`: a checkpoint its resume consumed is
    /// given back when nothing was performed (see
    /// [`give_back`](super::approvals::give_back)), and journaled so.
    pub(crate) async fn failed(
        &self,
        envelope: &crate::contracts::ActionEnvelope,
        err: &ComputerUseError,
    ) {
        let action_id = envelope.action_id.as_str();
        let returned = self.returnable.failed(envelope, err).await;
        if let Some(id) = &returned {
            self.resumed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id);
            self.recorder.note(
                action_id,
                crate::journal::events::CHECKPOINT_RETURNED,
                || serde_json::json!({ "checkpointId": id.as_str() }),
            );
        }
        self.report(envelope, || {
            super::ReportedOutcome::of_error(err, returned.is_some())
        })
        .await;
    }

    /// Writes the report the action `envelope` describes owes its
    /// checkpoint, if it was resumed from one (see
    /// [`report`](super::approvals::report)).
    /// The outcome is made only for an action that owes a report: every
    /// action ends here, few were resumed.
    pub(crate) async fn report(
        &self,
        envelope: &crate::contracts::ActionEnvelope,
        outcome: impl FnOnce() -> super::ReportedOutcome,
    ) {
        let Some(owed) = self.reports.take(envelope) else {
            return;
        };
        let at = crate::clock::display(self.clock().now());
        super::approvals::report::Reports::write(owed, envelope, outcome(), at).await;
    }

    /// Refuses `operation` once the session was shut down.
    #[inline]
    pub(crate) fn ensure_open(&self, operation: &'static str) -> Result<(), ComputerUseError> {
        if self.closed.load(Ordering::Acquire) {
            Err(ComputerUseError::SessionClosed { operation })
        } else {
            Ok(())
        }
    }

    /// The agent and execution group this session acts as.
    pub(crate) fn acting(&self) -> Acting<'_> {
        Acting {
            agent_id: self.agent_id.as_deref(),
            execution_group_id: self.execution_group_id.as_deref(),
        }
    }

    /// Refuses unless the verified identity holds the scope for `mode`.
    pub(crate) fn authorize(&self, mode: ExecutionMode) -> Result<(), ComputerUseError> {
        self.authorizer.require(mode)
    }
}
