//! `Approved`: the action may run, by policy or by a person.

use std::sync::Arc;

use super::Reserved;
use super::approvals::Authority;
use super::core::Core;
use super::guard::ActionGuard;
use super::recorder::Ticket;
use super::witness::{BoundReservation, FreshPreview};
use serde_json::json;

use crate::ComputerUseError;
use crate::contracts::ActionPreview;
use crate::journal::events;
use crate::runtime::{ComputerUseRuntime, ReserveProof};

/// An action with authority to run, not yet holding its target.
#[must_use = "an approved action does nothing until it reserves its target"]
pub struct Approved<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    preview: FreshPreview,
    authority: Authority,
    /// The journal write of the approval, waited for before the reservation.
    journaled: Option<Ticket>,
}

impl<R: ComputerUseRuntime> Approved<R> {
    pub(crate) fn new(core: Arc<Core<R>>, preview: FreshPreview, authority: Authority) -> Self {
        Self {
            core,
            preview,
            authority,
            journaled: None,
        }
    }

    /// Approved by a person, the journal write of that still on its way.
    pub(crate) fn journaled(
        core: Arc<Core<R>>,
        preview: FreshPreview,
        authority: Authority,
        journaled: Ticket,
    ) -> Self {
        Self {
            core,
            preview,
            authority,
            journaled: Some(journaled),
        }
    }

    /// The preview.
    pub fn preview(&self) -> &ActionPreview {
        self.preview.get()
    }

    /// Where the authority comes from.
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// Reserves the target. The guard takes the reservation as soon as the
    /// runtime answers, before it is checked, so a reservation that fails
    /// its checks is still released.
    pub async fn reserve(self) -> Result<Reserved<R>, ComputerUseError> {
        // An approval that could not be journaled does not run.
        let (approved, journaled) = self.detach();
        if let Some(journaled) = journaled
            && let Err(err) = journaled.wait().await
        {
            // Nothing was done: a resumed checkpoint is given back, and
            // its report says so.
            approved
                .core
                .failed(approved.preview.envelope(), &err)
                .await;
            return Err(err);
        }
        approved.reserve_now().await
    }

    /// This stage, and the journal write of its approval apart.
    fn detach(mut self) -> (Self, Option<Ticket>) {
        let journaled = self.journaled.take();
        (self, journaled)
    }

    async fn reserve_now(self) -> Result<Reserved<R>, ComputerUseError> {
        let envelope = self.preview.envelope();
        let checked = self
            .core
            .ensure_open("reserve")
            .and_then(|()| self.core.authorize(envelope.requested_mode))
            .and_then(|()| self.preview.recheck(self.core.clock()));
        let answer = match checked {
            Ok(()) => {
                let proof = ReserveProof::new(envelope);
                self.core.runtime.reserve_target(&proof).await
            }
            Err(err) => Err(err),
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(err) => {
                self.core.recorder.refusal(&envelope.action_id, &err);
                self.core.failed(envelope, &err).await;
                return Err(err);
            }
        };
        let mut guard = ActionGuard::new(Arc::clone(&self.core.release));
        if let Some(reservation) = answer {
            guard.hold_reservation(reservation);
        }
        // A shutdown while the call was in flight ends the action here; the
        // guard gives back what the runtime just granted.
        let bound = self.core.ensure_open("reserve").and_then(|()| {
            BoundReservation::check(
                guard.reservation(),
                envelope,
                &self.core.acting(),
                self.core.clock(),
            )
        });
        let bound = match bound {
            Ok(bound) => {
                let id = guard.reservation().map(|r| r.reservation_id.as_str());
                let payload = || json!({ "reservationId": id });
                self.core
                    .recorder
                    .record(&envelope.action_id, events::RESERVED, payload)
                    .wait()
                    .await
                    .map(|()| bound)
            }
            Err(err) => Err(err),
        };
        match bound {
            Ok(bound) => Ok(Reserved::new(
                self.core,
                self.preview,
                self.authority,
                guard,
                bound,
            )),
            Err(err) => {
                let err = guard.fail(&envelope.action_id, err).await;
                self.core.failed(envelope, &err).await;
                Err(err)
            }
        }
    }

    /// Runs the rest of the chain: reserve, lease, execute, verify.
    pub async fn complete(self) -> Result<super::Verified, ComputerUseError> {
        self.reserve()
            .await?
            .lease()
            .await?
            .execute()
            .await?
            .verify()
            .await
    }

    /// Runs the rest of the chain under `task`: reserve, spend one action
    /// of the task lease, execute, verify. No lease is acquired or released
    /// for the action; its reservation is released when it ends.
    pub async fn complete_under(
        self,
        task: &mut super::TaskLease<R>,
    ) -> Result<super::Verified, ComputerUseError> {
        self.reserve()
            .await?
            .spend(task)
            .await?
            .execute()
            .await?
            .verify()
            .await
    }
}
