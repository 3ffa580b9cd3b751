//! `preview_action` and `execute_action` served with the server's state
//! free while the desktop works.
//!
//! The state (sessions, leases, receipts, events) is what every session
//! needs; the desktop's work (an accessibility walk, a form filled field by
//! field, a read-back) may be slow when an application is. So a call takes
//! the state only for the rules, and reaches the desktop between: what the
//! preview reads of the fields, the checks before the effect, and the
//! effect with its own checks run on the desktop alone. Another session's
//! `list_windows` is answered while an application is slow to fill.
//!
//! What keeps this as safe as one long lock:
//! - the one-writer lease is spent on the state, after the desktop's
//!   checks and before the effect (`State::cross`), as before;
//! - one mutation at a time reaches the desktop (the effect gate), even
//!   when a lease is revoked during an effect and granted again;
//! - every end of a lease (a release, a revocation, a pause or stop of its
//!   session, an emergency stop, the person's takeover) is counted; an
//!   effect whose lease ended after it was spent sends nothing, and a form
//!   being filled stops before its next field (`desktop::deadline::Watch`);
//! - an emergency stop and a person's takeover end the leases first, then
//!   wait at the gate for an effect under way to end, so when they answer
//!   no effect of an agent is under way and none queued can start;
//! - all the desktop work of one call shares one deadline
//!   ([`CALL_BUDGET`], see `desktop::deadline`); the time a mutation waits
//!   at the gate for another to end is not counted against it.

use std::sync::Arc;
use std::time::Instant;

use adk_computer_use::contracts::catalogue::protocol::name as protocol;
use serde_json::Value;

use super::Refusal;
use super::access::Role;
use super::actuate::Desk;
use super::effect::Performed;
use super::execute::{Begun, Execution};
use super::server::Server;
use super::state::Answer;
use super::turns::Turn;

/// How long all the desktop work of one call may take: the preview's
/// reading, the checks before the effect, the effect and its read-back.
/// Past it every accessibility operation fails at once as timed out (an
/// effect already under way reports its outcome as unknown).
pub const CALL_BUDGET: std::time::Duration = std::time::Duration::from_secs(30);

impl Server {
    /// Runs `work` on the desktop with the state free, under the call's
    /// `deadline`, in one of the caller's turns (see `turns`): right here
    /// for the simulated desktop, on Tokio's blocking pool for one that
    /// blocks on I/O.
    pub(super) async fn on_desk<T: Send + 'static>(
        &self,
        _turn: &Turn,
        deadline: Instant,
        work: impl FnOnce(&Desk) -> T + Send + 'static,
    ) -> Result<T, Refusal> {
        let desk = self.desk.clone();
        if !self.blocking {
            return Ok(crate::desktop::deadline::within(deadline, || work(&desk)));
        }
        tokio::task::spawn_blocking(move || {
            crate::desktop::deadline::within(deadline, || work(&desk))
        })
        .await
        .map_err(|err| Refusal::plain(format!("the desktop call failed: {err}")))
    }

    /// Runs `work` on the desktop in a turn of `caller`'s own, taken for
    /// this one piece of work (see `turns`), under a deadline of a whole
    /// call's budget.
    async fn read_desk<T: Send + 'static>(
        &self,
        caller: Option<&Role>,
        work: impl FnOnce(&Desk) -> T + Send + 'static,
    ) -> Result<T, Refusal> {
        let turn = self.turns.take(caller).await?;
        self.on_desk(&turn, Instant::now() + CALL_BUDGET, work)
            .await
    }

    /// Admits `caller` to `tool` on the state, before the desktop is asked
    /// anything for it: a call the server refuses makes it read nothing.
    async fn admitted(
        &self,
        caller: Option<&Role>,
        tool: &'static str,
        args: &Value,
    ) -> Result<(), Refusal> {
        let (caller, args) = (caller.cloned(), args.clone());
        self.on_state(move |state| {
            state.admit(caller.as_ref(), tool, &args)?;
            // Nothing is read of the desktop once the person took it over.
            state.machine_free()
        })
        .await
        .and_then(|admitted| admitted)
    }

    /// `preview_action`: the fields' sensitivity read on the desktop, then
    /// the preview bound on the state.
    pub(super) async fn preview_staged(
        &self,
        caller: Option<Role>,
        arguments: Value,
    ) -> Result<Answer, Refusal> {
        self.admitted(caller.as_ref(), protocol::PREVIEW_ACTION, &arguments)
            .await?;
        let args = arguments.clone();
        let read = self
            .read_desk(caller.as_ref(), move |desk| desk.read(&args))
            .await?;
        self.on_state(move |state| {
            state.admit(caller.as_ref(), protocol::PREVIEW_ACTION, &arguments)?;
            state.machine_free()?;
            state.preview_tool(&arguments, Some(read))
        })
        .await
        .and_then(|answer| answer)
    }

    /// `onboarding`'s `test_semantic`: the window's tree read on the
    /// desktop, then the check recorded on the state.
    pub(super) async fn test_semantic(
        &self,
        caller: Option<Role>,
        arguments: Value,
    ) -> Result<Answer, Refusal> {
        self.admitted(caller.as_ref(), protocol::ONBOARDING, &arguments)
            .await?;
        let args = arguments.clone();
        let read = self
            .read_desk(caller.as_ref(), move |desk| desk.tree_readable(&args))
            .await?;
        self.on_state(move |state| {
            state.admit(caller.as_ref(), protocol::ONBOARDING, &arguments)?;
            state.onboarding_read(&arguments, read)
        })
        .await
        .and_then(|answer| answer)
    }

    /// `execute_action`: the preview's reading on the desktop, the first
    /// phase on the state (see `State::begin_execution`), then the rest on
    /// a task of its own, so a caller that stops waiting cannot leave its
    /// receipt pending.
    pub(super) async fn execute_staged(
        &self,
        caller: Option<Role>,
        arguments: Value,
    ) -> Result<Answer, Refusal> {
        self.admitted(caller.as_ref(), protocol::EXECUTE_ACTION, &arguments)
            .await?;
        let who = caller.clone();
        // The effect's own budget starts with the read: the read is part
        // of the call's desktop work.
        let deadline = Instant::now() + CALL_BUDGET;
        let args = arguments.clone();
        let read = self
            .read_desk(who.as_ref(), move |desk| desk.read(&args))
            .await?;
        let begun = self
            .on_state(move |state| {
                match state.admit(caller.as_ref(), protocol::EXECUTE_ACTION, &arguments) {
                    Ok(()) => state.begin_execution(&arguments, Some(read)),
                    Err(refusal) => Execution::Answered(Err(refusal)),
                }
            })
            .await?;
        let begun = match begun {
            Execution::Answered(answer) => return answer,
            Execution::Begun(begun) => begun,
        };
        let server = self.clone();
        let finished = tokio::spawn(async move {
            tokio::task::yield_now().await;
            if super::wait::polled(&begun.request.tool).is_some() {
                return server.finish_wait(*begun, who).await;
            }
            server.finish_staged(*begun, who, deadline).await
        });
        finished.await.unwrap_or_else(|err| {
            Err(Refusal::plain(format!(
                "the execution's task failed: {err}"
            )))
        })
    }

    /// The second phase, staged: the checks on the desktop, the crossing
    /// on the state, the effect on the desktop, the settling on the state.
    async fn finish_staged(
        &self,
        mut begun: Begun,
        who: Option<Role>,
        deadline: Instant,
    ) -> Result<Answer, Refusal> {
        // The call's clock stops while it waits for one of its caller's
        // turns and at the gate: those waits are other calls' desktop
        // work, not this one's. The turn is taken first and kept from the
        // checks to the effect's end, so an effect past the crossing never
        // waits for one (and a caller waiting for its own turns keeps no
        // other caller's mutation at the gate).
        let queued = Instant::now();
        let turn = self.turns.take(who.as_ref()).await?;
        let _gate = match begun.preview.meta.mutates {
            true => Some(Arc::clone(&self.gate).lock_owned().await),
            false => None,
        };
        let deadline = deadline + queued.elapsed();
        if begun.preview.meta.mutates {
            let (back, stands) = self
                .on_state(move |state| {
                    let stands = state.lease_stands(&begun);
                    (begun, stands)
                })
                .await?;
            if let Err(failure) = stands {
                return self.conclude(back, Err(failure)).await;
            }
            begun = back;
        }
        let (begun, checked) = self
            .on_desk(&turn, deadline, move |desk| {
                let checked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    desk.check_before(&begun)
                }))
                .unwrap_or_else(|_| {
                    Err(super::execute::before(Refusal::plain(
                        "the desktop's checks before the effect failed; nothing was sent",
                    )))
                });
                (begun, checked)
            })
            .await?;
        let snapshot = match checked {
            Ok(snapshot) => snapshot,
            Err(failure) => return self.conclude(begun, Err(failure)).await,
        };
        let (begun, crossed) = self
            .on_state(move |state| {
                let crossed = state.cross(&begun);
                (begun, crossed)
            })
            .await?;
        let watch = match crossed {
            Ok(watch) => watch,
            Err(failure) => return self.conclude(begun, Err(failure)).await,
        };
        let lease_watch = watch.clone();
        let (begun, performed) = self
            .on_desk(&turn, deadline, move |desk| {
                // A panic in the desktop's code past the crossing is an
                // unknown outcome, concluded as one (never a pending
                // receipt, never "not performed").
                let performed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    desk.perform(&begun, watch)
                }))
                .unwrap_or_else(|_| Performed::panicked());
                (begun, performed)
            })
            .await?;
        let (begun, settled) = self
            .on_state(move |state| {
                let settled = state.settle(&begun, performed, snapshot);
                (begun, settled)
            })
            .await?;
        // The cursor and focus put back on the desktop, with the state
        // free, still at the gate (the next effect captures them after),
        // unless the lease ended since it was spent (an emergency stop,
        // the person's takeover: nothing is put back).
        let (result, restoration) = match settled {
            Ok((result, Some(snapshot))) => {
                let restoration = self
                    .on_desk(&turn, deadline, move |desk| {
                        // A panic here leaves the cursor where it is; the
                        // action is concluded all the same.
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            (!lease_watch.ended()).then(|| desk.restore(snapshot))
                        }))
                        .ok()
                        .flatten()
                    })
                    .await
                    .ok()
                    .flatten();
                (Ok(result), restoration)
            }
            Ok((result, None)) => (Ok(result), None),
            Err(failure) => (Err(failure), None),
        };
        self.on_state(move |state| {
            if let Some(restoration) = restoration {
                state.restored(&begun, restoration);
            }
            state.conclude(begun, result)
        })
        .await
        .and_then(|answer| answer)
    }

    async fn conclude(
        &self,
        begun: Begun,
        result: Result<super::actuate::ToolResult, super::execute::Failure>,
    ) -> Result<Answer, Refusal> {
        self.on_state(move |state| state.conclude(begun, result))
            .await
            .and_then(|answer| answer)
    }
}
