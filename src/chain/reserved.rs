//! `Reserved`: the target is held for this action.

use std::sync::Arc;

use super::approvals::Authority;
use super::core::Core;
use super::guard::ActionGuard;
use super::witness::{BoundLease, BoundReservation, FreshPreview};
use super::{Leased, TaskLease};
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::{ActionPreview, ControlLease, TargetReservation};
use crate::journal::events;
use crate::runtime::{ComputerUseRuntime, LeaseProof};

/// An action holding a validated reservation of its target.
#[must_use = "dropping a reserved action queues its reservation on the session's reaper"]
pub struct Reserved<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
    authority: Authority,
    guard: ActionGuard<R>,
    reservation: BoundReservation,
}

impl<R: ComputerUseRuntime> Reserved<R> {
    pub(crate) fn new(
        core: Arc<Core<R>>,
        preview: FreshPreview,
        authority: Authority,
        guard: ActionGuard<R>,
        reservation: BoundReservation,
    ) -> Self {
        Self {
            core,
            preview,
            authority,
            guard,
            reservation,
        }
    }

    /// The preview.
    pub fn preview(&self) -> &ActionPreview {
        self.preview.get()
    }

    /// The reservation, when the runtime made one.
    pub fn reservation(&self) -> Option<&TargetReservation> {
        self.guard.reservation()
    }

    /// Takes the one-writer lease. The guard takes the lease as soon as the
    /// runtime grants it; a failed acquisition or a lease that fails its
    /// checks releases what the action holds.
    pub async fn lease(self) -> Result<Leased<R>, ComputerUseError> {
        let Self {
            core,
            preview,
            authority,
            mut guard,
            reservation,
        } = self;
        let envelope = preview.envelope();
        let answer = match core.ensure_open("lease") {
            Ok(()) => {
                let proof = LeaseProof::new(envelope, guard.reservation());
                core.runtime.acquire_lease(&proof).await
            }
            Err(err) => Err(err),
        };
        let lease = match answer.and_then(|lease| guard.hold_lease(lease)) {
            Ok(lease) => lease,
            Err(err) => {
                let err = guard.fail(&envelope.action_id, err).await;
                core.failed(envelope, &err).await;
                return Err(err);
            }
        };
        let bound = BoundLease::check(lease, envelope, &core.acting(), core.clock());
        let parts = (core, preview, authority, guard, reservation);
        journaled(
            parts,
            bound,
            events::LEASED,
            |lease| json!({ "leaseId": lease.lease_id }),
        )
        .await
    }

    /// Spends one action of `task` instead of taking a lease of its own:
    /// no call is made. Every lease check of the seeds runs against the
    /// task's lease as the server reported it, with the actions already
    /// spent from it counted against its budget (identity, mode, active
    /// state, remaining budget, expiry, boundaries), and the task must be
    /// this session's, not released, within its TTL, and not held by an
    /// earlier action that has not ended. A refusal releases what the
    /// action holds, and nothing is sent to the runtime.
    ///
    /// The reserved action is consumed, so one action spends once. The
    /// task gives its lease back, never the action: when the action ends,
    /// only its reservation is released.
    pub async fn spend(self, task: &mut TaskLease<R>) -> Result<Leased<R>, ComputerUseError> {
        let Self {
            core,
            preview,
            authority,
            mut guard,
            reservation,
        } = self;
        let envelope = preview.envelope();
        let spent = core
            .ensure_open("spend")
            .and_then(|()| task.spend(&core, envelope));
        let bound = spent.map(|(spend, bound)| {
            guard.hold_spend(spend);
            bound
        });
        let spent = task.spent();
        let parts = (core, preview, authority, guard, reservation);
        journaled(parts, bound, events::LEASE_SPENT, |lease| {
            json!({
                "leaseId": lease.lease_id,
                "actionBudget": lease.action_budget,
                "spent": spent,
            })
        })
        .await
    }
}

/// What a reserved action is made of, taken apart for its lease step.
type Parts<R> = (
    Arc<Core<R>>,
    FreshPreview,
    Authority,
    ActionGuard<R>,
    BoundReservation,
);

/// The end of either lease step: the bound lease is journaled as `event`
/// (waited for: a lease that cannot be recorded does not run) and the
/// action becomes `Leased`; any failure releases what it holds.
async fn journaled<R: ComputerUseRuntime>(
    (core, preview, authority, guard, reservation): Parts<R>,
    bound: Result<BoundLease, ComputerUseError>,
    event: &'static str,
    payload: impl FnOnce(&ControlLease) -> serde_json::Value,
) -> Result<Leased<R>, ComputerUseError> {
    let envelope = preview.envelope();
    let bound = match bound {
        Ok(bound) => core
            .recorder
            .record(&envelope.action_id, event, || payload(bound.get()))
            .wait()
            .await
            .map(|()| bound),
        Err(err) => Err(err),
    };
    match bound {
        Ok(bound) => Ok(Leased::new(
            core,
            preview,
            authority,
            guard,
            reservation,
            bound,
        )),
        Err(err) => {
            let err = guard.fail(&envelope.action_id, err).await;
            core.failed(envelope, &err).await;
            Err(err)
        }
    }
}
