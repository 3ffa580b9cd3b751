//! The lease and the revocations: acquiring (at once, or queued), granting
//! from the queue, releasing, the emergency stop, and what a session gives
//! up before its state changes.

use adk_computer_use::journal::events;
use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::Refusal;
use super::super::forge::LEASE_FORGERIES;
use super::super::lease::{Acquired, Lease, LeaseAnswer, LeaseRequest};
use super::super::state::{Answer, State};
use super::super::wire::{given, int, now, window_id};
use adk_computer_use::digest::sha256_prefixed;

impl State {
    /// Starts an acquire: the lease now, or a place in the queue.
    pub(in crate::engine) fn acquire_lease(
        &mut self,
        args: &Value,
    ) -> Result<LeaseAnswer, Refusal> {
        self.machine_free()?;
        let list = |key: &str| -> Option<Value> {
            let items = args.get(key)?.as_array()?;
            Some(Value::Array(items.iter().map(window_id).collect()))
        };
        let mut boundaries = serde_json::Map::new();
        for (arg, key) in [
            ("app_ids", "appIds"),
            ("window_ids", "windowIds"),
            ("display_ids", "displayIds"),
        ] {
            if let Some(items) = list(arg) {
                boundaries.insert(key.into(), items);
            }
        }
        let request = LeaseRequest {
            session_id: given(args, "session_id").unwrap_or_default().to_owned(),
            principal_id: self.principal(),
            agent_id: given(args, "agent_id").map(str::to_owned),
            kind: given(args, "kind").unwrap_or_default().to_owned(),
            mode: given(args, "mode").unwrap_or_default().to_owned(),
            ttl_ms: int(args, "ttl_ms").unwrap_or(1).max(1) as u64,
            budget: int(args, "action_budget").unwrap_or(1).max(1) as u64,
            priority: int(args, "priority").unwrap_or(0),
            boundaries: Value::Object(boundaries),
        };
        match self.leases.acquire(request, now())? {
            Acquired::Granted(lease) => Ok(LeaseAnswer::Now(self.lease_answer(&lease))),
            Acquired::Queued(ticket, wait) => Ok(LeaseAnswer::Wait(ticket, wait)),
        }
    }

    /// The answer for a granted lease (forged when a fault says so).
    pub(in crate::engine) fn lease_answer(&self, lease: &Lease) -> Answer {
        let mut answer = lease.to_value();
        self.forge(&LEASE_FORGERIES, &mut answer);
        Answer::of(json!({ "lease": answer }))
    }

    /// Takes a cancelled acquire out of the queue.
    pub(in crate::engine) fn cancel_lease_wait(&mut self, ticket: u64) -> bool {
        self.leases.cancel(ticket)
    }

    /// Releases `lease_id`, granted to a waiter that is no longer there.
    pub(in crate::engine) fn give_back_lease(&mut self, lease_id: &str) {
        let _ = self.leases.release(lease_id, now());
    }

    /// Revokes `lease_id`, granted on a TCP connection whose client has
    /// left, and hands the lease to the next waiter.
    pub(in crate::engine) fn revoke_departed_lease(&mut self, lease_id: &str) {
        let _ = self.leases.revoke(lease_id, "holder_disconnected", now());
    }

    pub(in crate::engine) fn release_lease(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let id = super::super::wire::text(args, "lease_id").unwrap_or_default();
        match self.leases.release(id, now()) {
            Some(lease) => Ok(Answer::of(json!({ "lease": lease.to_value() }))),
            None => Err(Refusal::bare("lease_not_active", json!({ "lease_id": id }))),
        }
    }

    pub(in crate::engine) fn emergency_stop(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let at = now();
        let reason = super::super::wire::text(args, "reason").unwrap_or("emergency_stop");
        let revoked = self.leases.emergency_stop(reason, at);
        self.revoke_all_approvals("emergency_stop");
        if let Some(lease) = revoked {
            let digest = sha256_prefixed(lease.revoked_reason.as_deref().unwrap_or(reason));
            self.publish(
                &lease.session_id,
                None,
                "control.emergency_stopped",
                json!({ "leaseId": lease.lease_id, "reasonDigest": digest }),
            );
        }
        Ok(Answer::of(json!({ "stopped": true })))
    }

    /// Revokes what a session holds before its state changes: its lease,
    /// its reservations and its approvals, each with its event.
    pub(in crate::engine) fn revoke_session_authority(&mut self, session_id: &str, reason: &str) {
        let at = now();
        if let Some(lease) = self.leases.current(at)
            && lease.session_id == session_id
        {
            self.leases.revoke(&lease.lease_id, reason, at);
        }
        let principal = self.principal();
        for reservation in self
            .reservations
            .cancel_session(session_id, &principal, reason, at)
        {
            self.publish(
                session_id,
                None,
                events::TARGET_CANCELLED,
                json!({
                    "reservationId": reservation.reservation_id,
                    "intentId": reservation.intent_id,
                    "reasonDigest": sha256_prefixed(reason),
                }),
            );
        }
        let revoked = self.grants.revoke_session(session_id, &principal);
        let before = self.pending.len();
        self.pending.retain(|(session, _), _| session != session_id);
        let pending = before - self.pending.len();
        if revoked > 0 || pending > 0 {
            self.publish(
                session_id,
                None,
                events::AUTHORITY_REVOKED,
                json!({
                    "revokedGrants": revoked,
                    "pendingApprovals": pending,
                    "reasonDigest": sha256_prefixed(reason),
                }),
            );
        }
    }

    /// Revokes every grant and pending approval, with one event per session.
    fn revoke_all_approvals(&mut self, reason: &str) {
        let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        for grant in self.grants.revoke_all() {
            counts.entry(grant.session_id).or_default().0 += 1;
        }
        for (session, _) in std::mem::take(&mut self.pending).into_keys() {
            counts.entry(session).or_default().1 += 1;
        }
        for (session, (grants, pending)) in counts {
            self.publish(
                &session,
                None,
                events::AUTHORITY_REVOKED,
                json!({
                    "revokedGrants": grants,
                    "pendingApprovals": pending,
                    "reasonDigest": sha256_prefixed(reason),
                }),
            );
        }
    }
}
