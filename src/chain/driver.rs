//! The whole chain for one proposed action: the typed counterpart of the
//! seeds' reference graph.

use super::{Blocked, PendingApproval, Route, Session, TaskLease, Verified};
use crate::ComputerUseError;
use crate::runtime::{ComputerUseRuntime, ProposedAction};

/// Where a driven chain ended.
#[must_use = "a chain outcome says whether the action ran, waits for approval, or was blocked"]
pub enum ChainOutcome<R: ComputerUseRuntime> {
    /// The action ran and was verified (whatever the verification found).
    Completed(Verified),
    /// A person must approve it; nothing was reserved, leased or run.
    NeedsApproval(PendingApproval<R>),
    /// It may not run.
    Blocked(Blocked),
}

impl<R: ComputerUseRuntime> Session<R> {
    /// Observes, previews `action`, routes it and, when policy allows it,
    /// reserves, leases, executes and verifies.
    pub async fn run(&self, action: ProposedAction) -> Result<ChainOutcome<R>, ComputerUseError> {
        let previewed = self.observe().await?.preview(&action).await?;
        Ok(match previewed.route() {
            Route::Allowed(approved) => ChainOutcome::Completed(approved.complete().await?),
            Route::NeedsApproval(pending) => ChainOutcome::NeedsApproval(pending),
            Route::Blocked(blocked) => ChainOutcome::Blocked(blocked),
        })
    }

    /// [`Session::run`], spending one action of `task` instead of taking a
    /// lease for the action (see [`TaskLease`]). An action that needs
    /// approval comes back pending, as from `run`; once approved, finish it
    /// with [`Approved::complete_under`](super::Approved::complete_under).
    pub async fn run_under(
        &self,
        task: &mut TaskLease<R>,
        action: ProposedAction,
    ) -> Result<ChainOutcome<R>, ComputerUseError> {
        let previewed = self.observe().await?.preview(&action).await?;
        Ok(match previewed.route() {
            Route::Allowed(approved) => {
                ChainOutcome::Completed(approved.complete_under(task).await?)
            }
            Route::NeedsApproval(pending) => ChainOutcome::NeedsApproval(pending),
            Route::Blocked(blocked) => ChainOutcome::Blocked(blocked),
        })
    }
}
