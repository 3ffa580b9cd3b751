//! The server's own postcondition check, as evidence.
//!
//! Upstream does not put a `verification` object in the receipt. It checks
//! the postcondition itself and reports the check as an `action.verified`
//! session event for the action (`verified`, `method`, `checks`, and a
//! summary of the postcondition it checked, with the digest it expected),
//! published before `action.committed`. The adapter reads those events and
//! turns the one for the action into the seeds' `verification` object; the
//! chain judges it with the evidence table like any other evidence. No
//! event, no evidence.
//!
//! Events are read forward from a cursor, once each, and the checks seen
//! are kept in a small bounded cache, so evidence for a chain of actions
//! costs one page read per action, not a scan of the whole session.

use crate::journal::events;
use std::collections::{HashMap, VecDeque};

use serde_json::{Value, json};

use crate::contracts::{ActionPostcondition, SessionEvent};

/// Most checks kept at once; the oldest is forgotten beyond it (its action
/// then gathers no evidence, which fails safe).
const KEPT: usize = 1024;

/// Events asked for per page.
pub(super) const PAGE: u32 = 1000;

/// Most pages read for one action's evidence; past them the action gathers
/// no evidence (which fails safe) instead of reading on.
pub(super) const MAX_PAGES: usize = 64;

/// The checks read so far from one runtime session, by action id, and
/// where reading stopped.
#[derive(Default)]
pub(super) struct ServerChecks {
    session_id: String,
    after: u64,
    checks: HashMap<String, Value>,
    order: VecDeque<String>,
}

impl ServerChecks {
    /// Reads `session_id`'s events from now on: another session's cursor
    /// and checks are dropped.
    pub(super) fn reading(&mut self, session_id: &str) {
        if self.session_id != session_id {
            *self = Self {
                session_id: session_id.to_owned(),
                ..Self::default()
            };
        }
    }

    /// Where to read from next.
    pub(super) fn after(&self) -> u64 {
        self.after
    }

    /// Takes in a page of events ending at `next`.
    pub(super) fn absorb(&mut self, events: Vec<SessionEvent>, next: u64) {
        for event in events {
            if event.event_type != events::VERIFIED {
                continue;
            }
            let (Some(action_id), Some(payload)) = (event.action_id, event.payload) else {
                continue;
            };
            if self.checks.insert(action_id.clone(), payload).is_none() {
                self.order.push_back(action_id);
            }
            while self.checks.len() > KEPT {
                let Some(oldest) = self.order.pop_front() else {
                    break;
                };
                self.checks.remove(&oldest);
            }
        }
        self.after = self.after.max(next);
    }

    /// The check reported for `action_id`, if one was read.
    pub(super) fn get(&self, action_id: &str) -> Option<&Value> {
        self.checks.get(action_id)
    }
}

/// The seeds' `verification` object for a server check.
///
/// - a failed check: `satisfied: false`;
/// - a passed check of a postcondition with an expected digest: the digest
///   the server checked becomes `observedDigest`, so the table compares it
///   with the digest this action proposed; a check that names no digest
///   gives none, which the table reads as unverified;
/// - a passed check otherwise: `satisfied: true`.
pub(super) fn verification(check: &Value, postcondition: Option<&ActionPostcondition>) -> Value {
    if check.get("verified") != Some(&Value::Bool(true)) {
        return json!({ "satisfied": false, "method": check.get("method") });
    }
    let mut evidence = json!({ "satisfied": true, "method": check.get("method") });
    if postcondition
        .and_then(ActionPostcondition::expected_digest)
        .is_some()
        && let Some(digest) = check.get("postconditionExpectedDigest")
    {
        evidence["observedDigest"] = digest.clone();
    }
    evidence
}
