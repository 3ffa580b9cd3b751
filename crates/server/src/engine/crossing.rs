//! The state's part around an effect: the crossing (the lease spent,
//! the start published) before it, and the settling (the effect counted,
//! its check judged, the cursor and focus put back) after it. The desktop's
//! part between them is `effect`.

use adk_computer_use::journal::events;
use serde_json::{Value, json};

use super::Refusal;
use super::actuate::{Snapshot, ToolResult};
use super::effect::Performed;
use super::execute::{Begun, Failure, before};
use super::preview::postcondition_summary;
use super::state::State;
use super::wire::now;
use crate::desktop::deadline::Watch;
use crate::desktop::simulated::Fault;

impl State {
    /// The crossing, on the state: the one-shot lease is spent (a lease
    /// released or revoked since the first phase is `lease_revoked` here)
    /// and the start is published. Past this point the action is
    /// performed.
    /// The watch the effect carries (see `desktop::deadline::Watch`):
    /// the count of lease ends as it stood right after this lease was
    /// spent.
    pub(super) fn cross(&mut self, begun: &Begun) -> Result<Watch, Failure> {
        let (request, action_id) = (&begun.request, begun.action_id.as_str());
        let mutating = begun.preview.meta.mutates;
        if let (true, Some(lease_id)) = (mutating, &request.lease_id) {
            self.leases.consume(lease_id, now()).map_err(before)?;
        }
        self.publish(
            &request.session_id,
            Some(action_id),
            events::STARTED,
            json!({ "tool": request.tool, "mode": request.mode, "leaseId": request.lease_id }),
        );
        if mutating && self.faults.has(Fault::CrashBeforeEffect) {
            return Err(before(Refusal::crash("injected crash before the effect")));
        }
        let count = self.leases.ends();
        let seen = count.load(std::sync::atomic::Ordering::SeqCst);
        Ok(Watch { count, seen })
    }

    /// Whether the lease `begun` would spend still stands: asked once a
    /// mutation's turn at the gate came, so one whose lease ended while it
    /// queued (an emergency stop, a takeover, a revocation) is refused
    /// without reading the desktop, and what waits behind it (the stop's
    /// own answer among them) is not held up by its checks. The crossing
    /// still decides.
    pub(super) fn lease_stands(&mut self, begun: &Begun) -> Result<(), Failure> {
        match (&begun.request.lease_id, begun.preview.meta.mutates) {
            (Some(lease_id), true) => self
                .leases
                .stands(lease_id, now())
                .map(|_| ())
                .map_err(before),
            _ => Ok(()),
        }
    }

    /// After the effect, on the state: the effect counted, its check
    /// published and judged, the target's check after it judged; with the
    /// cursor and focus to put back (on the desktop, with this state free:
    /// see [`State::restored`]) when the action's lease still stands.
    pub(super) fn settle(
        &mut self,
        begun: &Begun,
        performed: Performed,
        snapshot: Option<Snapshot>,
    ) -> Result<(ToolResult, Option<Snapshot>), Failure> {
        let (request, action_id) = (&begun.request, begun.action_id.as_str());
        let result = performed.result?;
        let Some(check) = performed.check else {
            return Ok((result, None));
        };
        *self
            .effects
            .entry((request.session_id.clone(), action_id.to_owned()))
            .or_default() += 1;
        let postcondition = begun.preview.envelope().get("postcondition");
        let mut payload =
            json!({ "verified": check.verified, "method": check.method, "checks": check.checks });
        if let (Value::Object(map), Some(postcondition)) = (&mut payload, postcondition) {
            map.extend(postcondition_summary(postcondition));
        }
        self.publish(
            &request.session_id,
            Some(action_id),
            events::VERIFIED,
            payload,
        );
        let after = |error: Refusal| Failure {
            error: Box::new(error),
            crossed: true,
        };
        if !check.verified {
            return Err(after(Refusal::with_details(
                "indeterminate",
                "postcondition verification failed",
                json!({ "method": check.method }),
            )));
        }
        if let Some(Err(error)) = performed.after {
            // After the effect nothing may read as "not performed": a
            // target that no longer matches is an unknown outcome, with
            // the check's own code as its cause, never `stale_target`.
            return Err(after(Refusal::with_details(
                "indeterminate",
                "the action was performed; the target's check after it failed",
                json!({ "cause": error.code, "tool": request.tool }),
            )));
        }
        let restore = snapshot.filter(|_| {
            request.lease_id.as_ref().is_some_and(|lease_id| {
                self.leases
                    .current(now())
                    .is_some_and(|l| &l.lease_id == lease_id)
            })
        });
        Ok((result, restore))
    }

    /// The cursor and focus were put back after the effect: published.
    pub(super) fn restored(&mut self, begun: &Begun, restoration: Value) {
        self.publish(
            &begun.request.session_id,
            Some(&begun.action_id),
            events::RESTORED,
            restoration,
        );
    }
}
