//! A lease for a task: one control lease, taken once, that several chains
//! spend an action of each instead of taking and giving back a lease of
//! their own.
//!
//! Why: a lease per action costs two calls and one round trip on every
//! action's critical path, and another writer waits between any two actions
//! anyway. A task that will make several changes to one application can
//! hold the desktop for the task instead. What it gives up is the other
//! writer's turn between actions: someone waiting for the desktop waits for
//! the whole task, at most for the lease's TTL (never more than
//! [`TaskLeaseTerms::MAX_TTL`], the protocol's own bound), even when the
//! agent holding it crashed, since the server lets an unreleased lease
//! expire.
//!
//! What does not change: [`Leased`](super::Leased) is still the only stage
//! with `execute`, and the only way to a `Leased` from a task lease is
//! [`Reserved::spend`](super::Reserved::spend), which consumes the reserved
//! action, so one action cannot spend twice. Each spend runs every lease
//! check of the seeds against the lease as the server reported it, with the
//! actions already spent counted against its budget: identity (session,
//! principal, agent), mode, active state, remaining budget, expiry and the
//! target boundaries. An action outside the boundaries, past the budget,
//! past the expiry or after the release is refused before anything is sent
//! (upstream's server revokes a lease an action escapes, which would end
//! the task for nothing).
//!
//! Releasing works as it does for reservations: [`TaskLease::release`] is the
//! explicit, awaited path whose failure is returned; dropping an unreleased
//! task lease does no I/O and hands the release to the session's reaper; and
//! `Session::shutdown` reclaims one that was never dropped.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use serde_json::json;
use tokio::sync::Notify;

use super::core::Core;
use super::guard::{ActionGuard, LedgerId};
use super::{Session, witness::BoundLease};
use crate::ComputerUseError;
use crate::binding;
use crate::clock::{Clock, display};
use crate::contracts::{ActionEnvelope, ControlLease};
use crate::journal::events;
use crate::runtime::{ComputerUseRuntime, TaskLeaseProof};

pub use super::task_terms::{TaskLeaseRefusal, TaskLeaseTerms};

/// How a task ended.
#[derive(Clone, Copy)]
enum TaskEnd {
    Released,
    Dropped,
}

struct TaskState<R: ComputerUseRuntime> {
    /// Actions spent and not given back (an action that ended before its
    /// mutating call gives its action back).
    spent: u32,
    /// The action spent and not yet ended.
    live: Option<String>,
    /// Whether that action's mutating call is in flight.
    executing: bool,
    ended: Option<TaskEnd>,
    /// The lease's guard, when the task lease was dropped while a mutation
    /// under it was in flight: handed to the reaper once the call answers.
    parked: Option<ActionGuard<R>>,
}

/// What a task lease and the actions spent from it share.
pub(crate) struct TaskShared<R: ComputerUseRuntime> {
    lease: Arc<ControlLease>,
    ledger_id: LedgerId,
    /// Our own bound: the TTL asked for, from before the acquire was sent.
    /// A spend after it is refused whatever expiry the server reported.
    deadline: i128,
    state: Mutex<TaskState<R>>,
    idle: Notify,
}

impl<R: ComputerUseRuntime> TaskShared<R> {
    fn state(&self) -> MutexGuard<'_, TaskState<R>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn refusal(&self, refusal: TaskLeaseRefusal) -> ComputerUseError {
        ComputerUseError::TaskLease {
            lease_id: self.lease.lease_id.clone(),
            refusal,
        }
    }

    fn ended(&self, end: TaskEnd) -> ComputerUseError {
        self.refusal(match end {
            TaskEnd::Released => TaskLeaseRefusal::Released,
            TaskEnd::Dropped => TaskLeaseRefusal::Dropped,
        })
    }

    fn check_deadline(&self, clock: &dyn Clock) -> Result<(), ComputerUseError> {
        if clock.is_before(self.deadline) {
            return Ok(());
        }
        let at = time::OffsetDateTime::from_unix_timestamp_nanos(self.deadline)
            .map(display)
            .unwrap_or_else(|_| self.deadline.to_string());
        Err(ComputerUseError::Expired {
            object: "TaskLease",
            field: "ttl",
            expires_at: at,
            now: display(clock.now()),
        })
    }
}

/// One action's share of a task lease, held by that action's guard from
/// the spend to its end. Dropping it ends the action's hold on the task;
/// an action that never made its mutating call gives its action back.
pub(crate) struct TaskSpend<R: ComputerUseRuntime> {
    shared: Arc<TaskShared<R>>,
    called: bool,
}

impl<R: ComputerUseRuntime> TaskSpend<R> {
    pub(crate) fn ledger_id(&self) -> LedgerId {
        self.shared.ledger_id
    }

    /// Still spendable at execution: not released or dropped, within our
    /// own TTL.
    pub(crate) fn check(&self, clock: &dyn Clock) -> Result<(), ComputerUseError> {
        if let Some(end) = self.shared.state().ended {
            return Err(self.shared.ended(end));
        }
        self.shared.check_deadline(clock)
    }

    /// The mutating call is about to be made: refused when the task ended
    /// since [`TaskSpend::check`]; otherwise a release waits for the call.
    pub(crate) fn begin(&mut self) -> Result<(), ComputerUseError> {
        let mut state = self.shared.state();
        if let Some(end) = state.ended {
            return Err(self.shared.ended(end));
        }
        state.executing = true;
        self.called = true;
        Ok(())
    }

    /// The mutating call answered.
    pub(crate) fn finish(&self) {
        let parked = {
            let mut state = self.shared.state();
            state.executing = false;
            state.parked.take()
        };
        self.shared.idle.notify_waiters();
        // Dropping the parked guard hands the lease to the reaper.
        drop(parked);
    }
}

impl<R: ComputerUseRuntime> Drop for TaskSpend<R> {
    fn drop(&mut self) {
        let parked = {
            let mut state = self.shared.state();
            state.live = None;
            if !self.called {
                state.spent = state.spent.saturating_sub(1);
            }
            // A call dropped mid-flight (its future was cancelled) is over.
            state.executing = false;
            state.parked.take()
        };
        self.shared.idle.notify_waiters();
        drop(parked);
    }
}

/// One control lease held for a task: several actions of this session, one
/// at a time, each spending one action of its budget through
/// [`Reserved::spend`](super::Reserved::spend), with no acquire and no
/// release of their own.
///
/// Taken with [`Session::lease_task`], bounded to the session's target.
/// End it with [`TaskLease::release`]; dropping it instead hands the release
/// to the session's reaper (no I/O in `Drop`).
///
/// The trade-off: it saves each action two calls and a round trip (the
/// acquire and the release of a lease of its own), and another writer
/// waiting for the desktop waits for the whole task instead of one action:
/// at most the lease's TTL ([`TaskLeaseTerms::MAX_TTL`] at the longest),
/// even when the agent holding it crashed, since the server lets an
/// unreleased lease expire.
#[must_use = "a task lease holds the desktop until released; dropping it hands its release to the session's reaper"]
pub struct TaskLease<R: ComputerUseRuntime> {
    core: Arc<Core<R>>,
    shared: Arc<TaskShared<R>>,
    guard: Option<ActionGuard<R>>,
}

impl<R: ComputerUseRuntime> TaskLease<R> {
    /// The lease, as the server reported it when it was acquired.
    pub fn lease(&self) -> &ControlLease {
        &self.shared.lease
    }

    /// Actions spent from it so far (an action that ended before its
    /// mutating call is not counted).
    pub fn spent(&self) -> u32 {
        self.shared.state().spent
    }

    /// Actions it can still authorize, by its budget.
    pub fn remaining(&self) -> u32 {
        let lease = &self.shared.lease;
        lease
            .action_budget
            .saturating_sub(lease.actions_used)
            .saturating_sub(self.spent())
    }

    /// Spends one action for `envelope`, or says why not. Every lease check
    /// runs, against the lease as reported, with the actions already spent
    /// counted against its budget.
    pub(crate) fn spend(
        &mut self,
        core: &Arc<Core<R>>,
        envelope: &ActionEnvelope,
    ) -> Result<(TaskSpend<R>, BoundLease), ComputerUseError> {
        if !Arc::ptr_eq(&self.core, core) {
            return Err(self.shared.refusal(TaskLeaseRefusal::OfAnotherSession));
        }
        let mut state = self.shared.state();
        if let Some(end) = state.ended {
            return Err(self.shared.ended(end));
        }
        if let Some(action_id) = &state.live {
            return Err(self.shared.refusal(TaskLeaseRefusal::InUse {
                action_id: action_id.clone(),
            }));
        }
        let clock = core.clock();
        self.shared.check_deadline(clock)?;
        let used = self.shared.lease.actions_used.saturating_add(state.spent);
        let bound = BoundLease::spend(
            Arc::clone(&self.shared.lease),
            used,
            envelope,
            &core.acting(),
            clock,
        )?;
        state.spent += 1;
        state.live = Some(envelope.action_id.clone());
        drop(state);
        Ok((
            TaskSpend {
                shared: Arc::clone(&self.shared),
                called: false,
            },
            bound,
        ))
    }

    /// Ends the task: no action spends from it any more, and an action
    /// spent and not yet executed is refused at `execute`. A mutation
    /// under it that is in flight right now is waited for (at most the
    /// session's release timeout, after which the lease goes back all the
    /// same: the server then decides that call's fate), then the lease
    /// is given back and the result returned: a failed release is an
    /// error, never hidden. (A lease the server already let expire counts
    /// as released.)
    pub async fn release(mut self) -> Result<(), ComputerUseError> {
        let shared = Arc::clone(&self.shared);
        {
            let mut state = shared.state();
            state.ended.get_or_insert(TaskEnd::Released);
        }
        // Bounded as every release is: a mutating call that never answers,
        // or whose future was forgotten mid-call, does not hold the task's
        // end (nor the desktop) past the release timeout.
        let bound = self.core.release.releaser.timeout;
        let idle = async {
            loop {
                let notified = shared.idle.notified();
                let mut notified = std::pin::pin!(notified);
                notified.as_mut().enable();
                if !shared.state().executing {
                    break;
                }
                notified.await;
            }
        };
        if tokio::time::timeout(bound, idle).await.is_err() {
            tracing::warn!(
                lease = shared.lease.lease_id.as_str(),
                ?bound,
                "a mutation under the task lease did not answer; releasing it anyway"
            );
        }
        let result = match self.guard.take() {
            Some(guard) => guard.release().await,
            None => Ok(()),
        };
        let (lease_id, spent) = (shared.lease.lease_id.as_str(), shared.state().spent);
        self.core
            .recorder
            .note(lease_id, events::TASK_LEASE_RELEASED, || {
                json!({
                    "leaseId": lease_id,
                    "spent": spent,
                    "ok": result.is_ok(),
                    "errorClass": result.as_ref().err().map(ComputerUseError::class),
                })
            });
        result
    }
}

impl<R: ComputerUseRuntime> Drop for TaskLease<R> {
    fn drop(&mut self) {
        let guard = self.guard.take();
        let mut state = self.shared.state();
        state.ended.get_or_insert(TaskEnd::Dropped);
        if state.executing {
            // Given back once the call in flight answers.
            state.parked = guard;
        } else {
            drop(state);
            drop(guard);
        }
    }
}

impl<R: ComputerUseRuntime> std::fmt::Debug for TaskLease<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskLease")
            .field("lease_id", &self.shared.lease.lease_id)
            .field("spent", &self.spent())
            .finish_non_exhaustive()
    }
}

impl<R: ComputerUseRuntime> Session<R> {
    /// Takes one control lease for a task of up to `terms.budget()`
    /// mutations, bounded to this session's target (its application, and
    /// its window when it names one), for at most `terms.ttl()`. Spend it
    /// with [`Reserved::spend`](super::Reserved::spend) or
    /// [`Session::run_under`]; end it with [`TaskLease::release`].
    ///
    /// Refused before anything is sent when the session has no target (a
    /// task lease is never wider than the session's target), when it was
    /// shut down, or when the identity lacks the scope for the mode. The
    /// lease that comes back is checked as every lease is (session,
    /// principal, agent, mode, active, unexpired, budget left), and more:
    /// it names the session's agent, it is of the kind asked for (exclusive
    /// for foreground work), its budget is no larger than asked, and its
    /// boundaries are no wider than the session's target; one that fails
    /// is given back at once. A lease the runtime grants under the id of a
    /// task lease this session already holds is refused and left to that
    /// task.
    ///
    /// ```no_run
    /// # async fn demo<R: adk_computer_use::runtime::ComputerUseRuntime>(
    /// #     session: adk_computer_use::chain::Session<R>,
    /// #     actions: Vec<adk_computer_use::runtime::ProposedAction>,
    /// # ) -> Result<(), adk_computer_use::ComputerUseError> {
    /// use adk_computer_use::chain::{ChainOutcome, TaskLeaseTerms};
    /// use std::time::Duration;
    /// let terms = TaskLeaseTerms::background(actions.len() as u32, Duration::from_secs(60))?;
    /// let mut task = session.lease_task(terms).await?;
    /// for action in actions {
    ///     if let ChainOutcome::Completed(done) = session.run_under(&mut task, action).await? {
    ///         println!("{}: {}", done.action_id(), done.outcome().status());
    ///     }
    /// }
    /// task.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn lease_task(
        &self,
        terms: TaskLeaseTerms,
    ) -> Result<TaskLease<R>, ComputerUseError> {
        let core = self.core();
        core.ensure_open("lease_task")?;
        core.authorize(terms.mode())?;
        let Some(app_id) = core.scope.app_id.as_deref() else {
            return Err(ComputerUseError::InvalidRequest {
                field: "target".into(),
                message: "a task lease is bounded by the session's target; build the session with SessionBuilder::target".into(),
            });
        };
        let window_id = core.scope.window_id.as_ref();
        let clock = core.clock();
        let ttl = time::Duration::try_from(terms.ttl()).unwrap_or(time::Duration::ZERO);
        let deadline = (clock.now() + ttl).unix_timestamp_nanos();
        let proof = TaskLeaseProof::new(
            &core.session_id,
            core.agent_id.as_deref(),
            core.execution_group_id.as_deref(),
            terms.mode(),
            terms.budget(),
            terms.ttl(),
            app_id,
            window_id,
        );
        let lease = core.runtime.acquire_task_lease(&proof).await?;
        let mut guard = ActionGuard::new(Arc::clone(&core.release));
        let lease = guard.hold_task_lease(lease)?;
        let Some(ledger_id) = guard.lease_id() else {
            return Err(ComputerUseError::InvalidRequest {
                field: "lease".into(),
                message: "the task lease was not entered in the session's ledger".into(),
            });
        };
        let checked = core.ensure_open("lease_task").and_then(|()| {
            binding::task_lease_checks(
                &lease,
                &binding::TaskAsk {
                    session_id: &core.session_id,
                    principal_id: core.identity().principal_id(),
                    agent_id: core.agent_id.as_deref(),
                    mode: terms.mode(),
                    budget: terms.budget(),
                    app_id,
                    window_id,
                },
                clock,
            )
        });
        if let Err(err) = checked {
            let cleanup = guard.release().await;
            return Err(ComputerUseError::with_cleanup(err, cleanup));
        }
        core.recorder
            .note(&lease.lease_id, events::TASK_LEASE_ACQUIRED, || {
                json!({
                    "leaseId": lease.lease_id,
                    "actionBudget": lease.action_budget,
                    "expiresAt": lease.expires_at.to_string(),
                    "appIds": lease.boundaries.app_ids,
                    "windowIds": lease.boundaries.window_ids,
                })
            });
        Ok(TaskLease {
            core: Arc::clone(core),
            shared: Arc::new(TaskShared {
                lease,
                ledger_id,
                deadline,
                state: Mutex::new(TaskState {
                    spent: 0,
                    live: None,
                    executing: false,
                    ended: None,
                    parked: None,
                }),
                idle: Notify::new(),
            }),
            guard: Some(guard),
        })
    }
}
