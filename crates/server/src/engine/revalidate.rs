//! Execution-time revalidation: just before the one mutation, the action's
//! context (session, grant, envelope, target) and its lease are checked
//! again, since time passes and others act between preview and execute.
//! The lease is the state's; the target and its sensitivity are the
//! desktop's, checked with the state free.

use super::Refusal;
use super::actuate::Desk;
use super::backend::Revalidation;
use super::execute::{Begun, Failure, before};
use super::preview::ActionRequest;
use super::state::State;
use serde_json::{Value, json};
use time::OffsetDateTime;

impl Desk {
    /// The target and its sensitivity, checked again (on the desktop, with
    /// the server's state free).
    pub(super) fn revalidate_context(
        &self,
        request: &ActionRequest,
        envelope: &Value,
        at: OffsetDateTime,
    ) -> Result<(), Refusal> {
        if let Some(target) = envelope.get("target") {
            let by_element = adk_computer_use::contracts::catalogue::low_level_tool(&request.tool)
                .is_some_and(|t| {
                    t.reach == adk_computer_use::contracts::catalogue::Reach::Accessibility
                });
            let round = if by_element {
                Revalidation::BeforeElementEffect
            } else {
                Revalidation::BeforeEffect
            };
            self.revalidate_target(target, at, round)?;
        }
        let Some(before) = envelope.get("targetSensitivity") else {
            return Ok(());
        };
        let fingerprint = |s: &Value| {
            json!([
                s.get("assessment"),
                s.get("source"),
                s.get("signals"),
                s.get("fieldsChecked")
            ])
        };
        let current = self.sensitivity(request);
        let assessment = current
            .as_ref()
            .and_then(|s| s.get("assessment"))
            .cloned()
            .unwrap_or(json!("unknown"));
        if assessment == "unknown" || current.as_ref().map(fingerprint) != Some(fingerprint(before))
        {
            return Err(Refusal::with_details(
                "stale_target",
                "target sensitivity changed or could not be revalidated",
                json!({ "assessment": assessment }),
            ));
        }
        Ok(())
    }
}

impl State {
    /// The lease named for a mutation, in scope of the envelope's target:
    /// the first phase's check (nothing for an observation). The target
    /// and its sensitivity are checked again on the desktop, with the state
    /// free, before the lease is spent (`Desk::check_before`).
    pub(super) fn check_lease(&mut self, begun: &Begun) -> Result<(), Failure> {
        let (request, envelope) = (&begun.request, begun.preview.envelope());
        if !begun.preview.meta.mutates {
            return Ok(());
        }
        let Some(lease_id) = &request.lease_id else {
            return Err(before(Refusal::new(
                "lease_conflict",
                "mutating execution requires a lease",
            )));
        };
        let scope = |key: &str, resource: &str| {
            envelope
                .pointer(&format!("/target/{key}"))
                .or_else(|| envelope.pointer(&format!("/resource/{resource}")))
                .cloned()
        };
        let target = [
            ("app", scope("appId", "targetAppId")),
            ("window", scope("windowId", "targetWindowId")),
            ("display", envelope.pointer("/target/displayId").cloned()),
        ];
        self.leases
            .validate(lease_id, target, begun.at)
            .map(|_| ())
            .map_err(before)
    }
}
