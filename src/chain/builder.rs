//! Building a session: the runtime, the identity, and what the host
//! chooses (target, store of record, journal, clock, ages and timeouts),
//! checked once in `build` against the runtime's own session.

use std::collections::HashSet;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::approvals::CheckpointStore;
use super::core::Core;
use super::guard::{DEFAULT_RELEASE_TIMEOUT, ReleaseHandle, Releaser, spawn_reaper};
use super::recorder::Recorder;
use super::session::Session;
use crate::ComputerUseError;
use crate::auth::ScopeAuthorizer;
use crate::clock::{Clock, SystemClock};
use crate::contracts::WindowId;
use crate::journal::Journal;
use crate::runtime::{ComputerUseRuntime, ObservationScope, SessionContext};

/// Builds a [`Session`] over a runtime, in the runtime session it acts in.
///
/// The session id, the principal and the execution group are the runtime's
/// ([`ComputerUseRuntime::session_context`]); they are not given again here.
/// `build` refuses an identity that is not the runtime's principal.
#[must_use = "a builder does nothing until build() is called"]
pub struct SessionBuilder<R: ComputerUseRuntime> {
    runtime: Arc<R>,
    authorizer: ScopeAuthorizer,
    clock: Arc<dyn Clock>,
    agent_id: Option<String>,
    target_app_id: Option<String>,
    target_window_id: Option<WindowId>,
    journal: Option<Arc<Journal>>,
    checkpoints: Option<Arc<dyn CheckpointStore>>,
    release_timeout: std::time::Duration,
    evidence_max_age: std::time::Duration,
}

impl<R: ComputerUseRuntime> SessionBuilder<R> {
    /// A builder with the defaults [`Session::builder`] documents.
    pub(super) fn new(runtime: Arc<R>, authorizer: ScopeAuthorizer) -> Self {
        Self {
            runtime,
            authorizer,
            clock: Arc::new(SystemClock),
            agent_id: None,
            target_app_id: None,
            target_window_id: None,
            journal: None,
            checkpoints: None,
            release_timeout: DEFAULT_RELEASE_TIMEOUT,
            evidence_max_age: super::DEFAULT_TARGET_EVIDENCE_MAX_AGE,
        }
    }

    /// How long one release by the reaper or at shutdown may take before it
    /// is counted as failed (10 seconds unless set).
    pub fn release_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.release_timeout = timeout;
        self
    }

    /// How old target evidence the runtime accepts at execution (its
    /// `maxTargetAgeMs`; [`DEFAULT_TARGET_EVIDENCE_MAX_AGE`](super::DEFAULT_TARGET_EVIDENCE_MAX_AGE),
    /// 30 s, unless set). A resumed approval whose evidence is half that old
    /// is carried to fresh evidence of the same target, or refused before
    /// anything is consumed (see [`Session::resume_decided`]).
    pub fn target_evidence_max_age(mut self, max_age: std::time::Duration) -> Self {
        self.evidence_max_age = max_age;
        self
    }

    /// The session's store of record for checkpoints: a pending approval
    /// suspends to it, and [`Session::resume`] and its kin resume from it
    /// alone. A checkpoint sealed into another store (or carried from one)
    /// is refused. Without one, suspending and resuming are refused.
    pub fn checkpoints(mut self, store: Arc<dyn CheckpointStore>) -> Self {
        self.checkpoints = Some(store);
        self
    }

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

    /// The application (and optionally window) this session acts on:
    /// observations look at it, and an action without target evidence gets
    /// the evidence of it from what was observed.
    pub fn target(mut self, app_id: impl Into<String>, window_id: Option<WindowId>) -> Self {
        self.target_app_id = Some(app_id.into());
        self.target_window_id = window_id;
        self
    }

    /// Starts the session. Must be called inside a Tokio runtime: the reaper
    /// task is spawned on the current runtime's handle.
    pub fn build(self) -> Result<Session<R>, ComputerUseError> {
        let context =
            self.runtime
                .session_context()
                .ok_or_else(|| ComputerUseError::InvalidRequest {
                    field: "runtime".into(),
                    message: "the runtime acts in no session yet: start one (start_session) or configure one before building a Session".into(),
                })?;
        let principal = self.authorizer.identity().principal_id();
        if context.principal_id != principal {
            return Err(ComputerUseError::BuiltForAnother {
                what: "principal",
                session: principal.to_owned(),
                runtime: context.principal_id,
            });
        }
        if context.session_id.trim().is_empty() {
            return Err(ComputerUseError::InvalidRequest {
                field: "sessionId".into(),
                message: "the runtime reports an empty session id".into(),
            });
        }
        let SessionContext {
            session_id,
            execution_group_id,
            ..
        } = context;
        let handle = tokio::runtime::Handle::try_current().map_err(|err| {
            ComputerUseError::InvalidRequest {
                field: "runtime".into(),
                message: format!("a Session must be built inside a Tokio runtime: {err}"),
            }
        })?;
        // Every release is bounded by a timer: a runtime without one would
        // panic on the first release that does not answer at once.
        let timers = std::panic::catch_unwind(|| {
            let _probe = tokio::time::sleep(std::time::Duration::ZERO);
        });
        if timers.is_err() {
            return Err(ComputerUseError::InvalidRequest {
                field: "runtime".into(),
                message: "a Session needs a Tokio runtime with timers enabled (Builder::enable_time or enable_all)".into(),
            });
        }
        let recorder = Recorder::new(
            self.journal,
            session_id.clone(),
            self.authorizer.identity().principal_id().to_owned(),
            Arc::clone(&self.clock),
        )?;
        let releaser = Arc::new(Releaser {
            runtime: Arc::clone(&self.runtime),
            session_id: session_id.clone(),
            counters: Default::default(),
            ledger: Default::default(),
            recorder: recorder.clone(),
            handle,
            timeout: self.release_timeout,
        });
        let reaper = spawn_reaper(Arc::clone(&releaser));
        Ok(Session {
            core: Arc::new(Core {
                runtime: self.runtime,
                authorizer: self.authorizer,
                session_id: session_id.clone(),
                agent_id: self.agent_id,
                execution_group_id,
                scope: ObservationScope {
                    session_id,
                    tool: None,
                    app_id: self.target_app_id,
                    window_id: self.target_window_id,
                },
                clock: self.clock,
                evidence_max_age: self.evidence_max_age,

                closed: AtomicBool::new(false),
                resumed: Mutex::new(HashSet::new()),
                returnable: Default::default(),
                reports: Default::default(),
                checkpoints: self.checkpoints,
                release: Arc::new(ReleaseHandle { releaser, reaper }),
                recorder,
            }),
        })
    }
}
