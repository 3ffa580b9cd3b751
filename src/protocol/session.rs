//! The session: where every chain starts and what every stage points back to.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};

use super::approval::Approval;
use super::checkpoint::{CheckpointId, CheckpointStore, SealingKey, open_record};
use super::guard::{ReaperMessage, ReleaseCounters, ReleaseStats, spawn_reaper};
use super::recorder::Recorder;
use super::{Approved, Observed, PendingApproval};
use crate::auth::{Scope, ScopeAuthorizer};
use crate::clock::{Clock, SystemClock};
use crate::contracts::{ExecutionMode, TargetReservation, WindowId};
use crate::eval::Journal;
use crate::runtime::{ComputerUseRuntime, ObservationScope, Observations};
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
    pub(crate) key: SealingKey,
    pub(crate) reaper: mpsc::UnboundedSender<ReaperMessage>,
    pub(crate) counters: Arc<ReleaseCounters>,
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

    /// Refuses unless the verified identity holds the scope for `mode`.
    pub(crate) fn authorize(&self, mode: ExecutionMode) -> Result<(), ComputerUseError> {
        self.authorizer.require(mode)
    }
}

/// Logs and journals one release (explicit, or by the reaper).
pub(crate) fn release_note(
    recorder: &Recorder,
    reservation: &TargetReservation,
    how: &str,
    error: Option<&ComputerUseError>,
) {
    match error {
        None => {
            tracing::debug!(reservation_id = %reservation.reservation_id, how, "reservation released")
        }
        Some(err) => {
            tracing::warn!(reservation_id = %reservation.reservation_id, how, error = %err, "reservation release failed")
        }
    }
    recorder.note(
        &reservation.intent_id,
        crate::eval::journal_types::RELEASED,
        || {
            serde_json::json!({
                "reservationId": reservation.reservation_id,
                "how": how,
                "ok": error.is_none(),
                "errorClass": error.map(ComputerUseError::class),
            })
        },
    );
}

/// One governed session with a runtime. Start chains with
/// [`Session::observe`] or [`Session::run`]; resume suspended approvals with
/// [`Session::resume`]; finish with [`Session::shutdown`].
#[must_use = "a session owns the reaper of dropped reservations; call shutdown().await to drain it"]
pub struct Session<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
}

/// Builds a [`Session`].
#[must_use = "a builder does nothing until build() is called"]
pub struct SessionBuilder<R: ComputerUseRuntime> {
    runtime: Arc<R>,
    runtime_session_id: String,
    authorizer: ScopeAuthorizer,
    key: SealingKey,
    clock: Arc<dyn Clock>,
    agent_id: Option<String>,
    execution_group_id: Option<String>,
    target_app_id: Option<String>,
    target_window_id: Option<WindowId>,
    journal: Option<Arc<Journal>>,
}

impl<R: ComputerUseRuntime> SessionBuilder<R> {
    /// Records every transition in `journal`.
    pub fn journal(mut self, journal: Arc<Journal>) -> Self {
        self.journal = Some(journal);
        self
    }

    /// Reads time from `clock` instead of the system clock.
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The agent this session acts as.
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.agent_id = Some(agent_id.into());
        self
    }

    /// The execution group the agent belongs to.
    pub fn execution_group_id(mut self, group: impl Into<String>) -> Self {
        self.execution_group_id = Some(group.into());
        self
    }

    /// The application (and optionally window) observations look at.
    pub fn target(mut self, app_id: impl Into<String>, window_id: Option<WindowId>) -> Self {
        self.target_app_id = Some(app_id.into());
        self.target_window_id = window_id;
        self
    }

    /// Starts the session. Must be called inside a Tokio runtime: the reaper
    /// task is spawned on the current runtime's handle.
    pub fn build(self) -> Result<Session<R>, ComputerUseError> {
        if self.runtime_session_id.is_empty() {
            return Err(ComputerUseError::InvalidRequest {
                field: "sessionId".into(),
                message: "expected the runtime session id, got an empty string".into(),
            });
        }
        let handle = tokio::runtime::Handle::try_current().map_err(|err| {
            ComputerUseError::InvalidRequest {
                field: "runtime".into(),
                message: format!("a Session must be built inside a Tokio runtime: {err}"),
            }
        })?;
        let counters = Arc::new(ReleaseCounters::default());
        let recorder = Recorder::new(
            self.journal,
            self.runtime_session_id.clone(),
            self.authorizer.identity().principal_id().to_owned(),
            Arc::clone(&self.clock),
        );
        let reaper = spawn_reaper(
            &handle,
            Arc::clone(&self.runtime),
            Arc::clone(&counters),
            recorder.clone(),
        );
        Ok(Session {
            core: Arc::new(Core {
                runtime: self.runtime,
                authorizer: self.authorizer,
                session_id: self.runtime_session_id.clone(),
                agent_id: self.agent_id,
                execution_group_id: self.execution_group_id,
                scope: ObservationScope {
                    session_id: self.runtime_session_id,
                    tool: None,
                    app_id: self.target_app_id,
                    window_id: self.target_window_id,
                },
                clock: self.clock,
                key: self.key,
                reaper,
                counters,
                recorder,
            }),
        })
    }
}

impl<R: ComputerUseRuntime> Session<R> {
    /// Starts building a session over `runtime`, for the runtime session
    /// `runtime_session_id`, acting for the identity `authorizer` was built
    /// for, sealing checkpoints with `key`.
    pub fn builder(
        runtime: Arc<R>,
        runtime_session_id: impl Into<String>,
        authorizer: ScopeAuthorizer,
        key: SealingKey,
    ) -> SessionBuilder<R> {
        SessionBuilder {
            runtime,
            runtime_session_id: runtime_session_id.into(),
            authorizer,
            key,
            clock: Arc::new(SystemClock),
            agent_id: None,
            execution_group_id: None,
            target_app_id: None,
            target_window_id: None,
            journal: None,
        }
    }

    /// The runtime session id.
    pub fn session_id(&self) -> &str {
        &self.core.session_id
    }

    /// The identity this session acts for.
    pub fn identity(&self) -> &VerifiedIdentity {
        self.core.identity()
    }

    /// The runtime.
    pub fn runtime(&self) -> &Arc<R> {
        &self.core.runtime
    }

    /// Observes widely: capabilities, a visual frame and a semantic frame, all
    /// three at once. Needs the `computer:plan` scope.
    pub async fn observe(&self) -> Result<Observed<R>, ComputerUseError> {
        self.core
            .authorize(ExecutionMode::Shadow)
            .map_err(|err| match err {
                ComputerUseError::Unauthorized { reason, .. } => ComputerUseError::Unauthorized {
                    required: Scope::Plan.to_string(),
                    reason,
                },
                other => other,
            })?;
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

    /// Resumes a suspended approval: reads the sealed preview back from
    /// `store` and adds `approval` to it. Fails before any reservation when
    /// the checkpoint is missing, replaced, tampered with, of another session
    /// or identity, expired, or when the approval is for something else.
    pub fn resume(
        &self,
        store: &dyn CheckpointStore,
        id: &CheckpointId,
        approval: Approval,
    ) -> Result<Approved<R>, ComputerUseError> {
        let records = store.load(id)?;
        let body = open_record(&self.core.key, id, &records)?;
        let identity = self.core.identity();
        let fail = |reason: String| ComputerUseError::Checkpoint {
            id: id.to_string(),
            reason,
        };
        if body.session_id != self.core.session_id {
            return Err(fail(format!(
                "sealed for session {:?}, not this session {:?}",
                body.session_id, self.core.session_id
            )));
        }
        if body.principal_id != identity.principal_id() || body.tenant_id != identity.tenant_id() {
            return Err(fail("sealed for another principal or tenant".into()));
        }
        let pending = PendingApproval::restore(Arc::clone(&self.core), body.preview)?;
        let approved = pending.approve(approval)?;
        if let Some(state) = body.runtime_state {
            let envelope = &approved.preview().envelope;
            if let Err(err) = self.core.runtime.restore_preview_state(envelope, state) {
                self.core.recorder.refusal(&envelope.action_id, &err);
                return Err(err);
            }
        }
        Ok(approved)
    }

    /// Journal writes that failed after a mutation had already happened
    /// (before it, a failed write stops the chain instead).
    pub fn journal_failures(&self) -> u64 {
        self.core.recorder.failures()
    }

    /// How this session's reservations were released so far.
    pub fn release_stats(&self) -> ReleaseStats {
        self.core.counters.snapshot()
    }

    /// Waits until the reaper has released every reservation queued by a
    /// dropped guard, then reports the counters.
    pub async fn shutdown(self) -> ReleaseStats {
        let (done, finished) = oneshot::channel();
        if self.core.reaper.send(ReaperMessage::Flush(done)).is_ok() {
            let _ = finished.await;
        }
        self.core.counters.snapshot()
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
