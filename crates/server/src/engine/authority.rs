//! One authority per agent: what an agent's credential reaches.
//!
//! Agents of one server share its desktop, not their work. Each agent's
//! credential is its own ([`super::access`]), and what it starts is its
//! own: a session, and through it the leases and reservations taken in
//! it. Knowing another agent's ids is no authority. So every call an
//! agent makes is admitted here first, under the same lock as the call
//! itself: a session, lease or reservation it names must be its own, and
//! the tools that act on every agent at once (`emergency_stop`,
//! `prune_sessions`) are not an agent's at all. An onboarding run is its
//! starter's too.

use serde_json::{Value, json};

use super::Refusal;
use super::access::{AGENT_NOT_OWNER, HOST_CREDENTIAL_REQUIRED, Role};
use super::state::{Answer, State};
use super::wire::{now, text};
use adk_computer_use::contracts::catalogue::protocol::name as protocol;

impl State {
    /// Refuses a call `caller` may not make: for an agent, a tool that
    /// acts on every agent, or a session, lease or reservation of another.
    /// A trusted caller (`None`: stdio, in process), the approver and the
    /// host are admitted to everything their role has.
    pub(super) fn admit(
        &mut self,
        caller: Option<&Role>,
        tool: &str,
        args: &Value,
    ) -> Result<(), Refusal> {
        let Some(Role::Agent(agent)) = caller else {
            return Ok(());
        };
        if tool == protocol::EMERGENCY_STOP || tool == protocol::PRUNE_SESSIONS {
            return Err(Refusal::new(
                HOST_CREDENTIAL_REQUIRED,
                format!(
                    "{tool} acts for every agent on this server: it needs the host's or the approver's credential; this connection holds an agent's"
                ),
            ));
        }
        let at = now();
        let mut sessions = Vec::new();
        if let Some(session) = text(args, "session_id") {
            sessions.push(("session", session.to_owned()));
        }
        if let Some(lease) = text(args, "lease_id") {
            // The active lease, when it is this one: a lease that is not
            // active is refused by the call itself.
            if let Some(held) = self.leases.current(at).filter(|l| l.lease_id == lease) {
                sessions.push(("lease", held.session_id));
            }
        }
        if let Some(reservation) = text(args, "reservation_id")
            && let Some(held) = self.reservations.get(reservation, at)
        {
            sessions.push(("reservation", held.session_id));
        }
        // An onboarding run, like a session, is its starter's.
        if tool == protocol::ONBOARDING
            && let Some(run) = text(args, "onboarding_id")
            && self.onboarding.has(run)
            && self.onboarding.owners.get(run) != Some(agent)
        {
            return Err(Refusal::with_details(
                AGENT_NOT_OWNER,
                "the onboarding run belongs to another agent; an agent acts only on what it started",
                json!({ "what": "onboarding" }),
            ));
        }
        for (what, session) in sessions {
            // A session that does not exist is refused by the call itself.
            let Some(found) = self.sessions.get(&session) else {
                continue;
            };
            if found.owner.as_deref() != Some(agent.as_str()) {
                return Err(Refusal::with_details(
                    AGENT_NOT_OWNER,
                    format!(
                        "the {what} belongs to another agent's session; an agent acts only on what it started"
                    ),
                    json!({ "what": what }),
                ));
            }
        }
        Ok(())
    }

    /// The session or onboarding run `answer` (of a call that started
    /// one) names becomes `caller`'s own, when the caller is an agent.
    pub(super) fn own_started(&mut self, answer: &Answer, caller: Option<&Role>) {
        let Some(Role::Agent(agent)) = caller else {
            return;
        };
        if let Some(run) = answer
            .structured
            .pointer("/onboarding/onboardingId")
            .and_then(Value::as_str)
            .filter(|run| self.onboarding.has(run))
            .map(str::to_owned)
        {
            self.onboarding.owners.insert(run, agent.clone());
            return;
        }
        let id = answer
            .structured
            .pointer("/session/sessionId")
            .and_then(Value::as_str);
        if let Some(session) = id.and_then(|id| self.sessions.get_mut(id)) {
            session.owner = Some(agent.clone());
        }
    }
}
