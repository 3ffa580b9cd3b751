//! The one-writer control lease, as upstream's lease manager keeps it.
//!
//! One lease is active at a time. A second acquire waits in a queue
//! (highest priority first, then in arrival order) until the active lease
//! is released, revoked, or found expired; it is answered when it is
//! granted, or refused `interrupted` when an emergency stop empties the
//! queue. There is no server-side timeout: a waiter leaves the queue only
//! when its request is cancelled. Expiry is noticed lazily, as upstream
//! notices it: by the next acquire, by the session controls that look for
//! the current lease, and by execution; a release does not look.
//! Releasing needs only the lease id.

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use tokio::sync::oneshot;

use super::Refusal;
use super::answer::Answer;
use super::wire::{after, stamp, uuid};

/// What a lease request asks for.
#[derive(Debug, Clone)]
pub(crate) struct LeaseRequest {
    pub session_id: String,
    pub principal_id: String,
    pub agent_id: Option<String>,
    pub kind: String,
    pub mode: String,
    pub ttl_ms: u64,
    pub budget: u64,
    pub priority: i64,
    /// `{appIds?, windowIds?, displayIds?}`, each only when given.
    pub boundaries: Value,
}

/// A lease, as it goes on the wire.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Lease {
    pub lease_id: String,
    pub revision: u64,
    pub session_id: String,
    pub principal_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub kind: String,
    pub execution_mode: String,
    pub state: &'static str,
    pub acquired_at: String,
    pub expires_at: String,
    #[serde(skip)]
    pub expires: Option<OffsetDateTime>,
    pub action_budget: u64,
    pub actions_used: u64,
    pub boundaries: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_reason: Option<String>,
}

impl Lease {
    /// The lease as JSON.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What an acquire came to.
pub(crate) enum Acquired {
    /// The lease, granted at once.
    Granted(Box<Lease>),
    /// Queued: the ticket (to cancel by) and where the grant will arrive.
    Queued(u64, oneshot::Receiver<Result<Lease, Refusal>>),
}

struct Waiter {
    ticket: u64,
    request: LeaseRequest,
    reply: oneshot::Sender<Result<Lease, Refusal>>,
}

/// The lease, its queue and its revision counter.
#[derive(Default)]
pub(crate) struct LeaseManager {
    active: Option<Lease>,
    queue: Vec<Waiter>,
    tickets: u64,
    revision: u64,
    stopped: bool,
    /// How many times a lease has ended (released, revoked, expired,
    /// stopped): read without the state by an effect under way, which
    /// stops before its next write when the lease it spent has ended.
    ends: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

fn revoked(lease_id: &str, message: &str) -> Refusal {
    Refusal::with_details("lease_revoked", message, json!({ "leaseId": lease_id }))
}

impl LeaseManager {
    /// Grants the lease, or queues the request behind the active one.
    pub(crate) fn acquire(
        &mut self,
        request: LeaseRequest,
        now: OffsetDateTime,
    ) -> Result<Acquired, Refusal> {
        if request.session_id.is_empty() || request.principal_id.is_empty() {
            return Err(Refusal::plain("sessionId and principalId are required"));
        }
        if request.kind == "exclusive" && request.mode != "foreground" {
            return Err(Refusal::plain(
                "exclusive leases require foreground execution mode",
            ));
        }
        if self.stopped {
            return Err(Refusal::new("interrupted", "emergency stop is active"));
        }
        self.expire_if_needed(now);
        if self.active.is_none() && self.queue.is_empty() {
            return Ok(Acquired::Granted(Box::new(self.grant(request, now))));
        }
        self.tickets += 1;
        let ticket = self.tickets;
        let (reply, wait) = oneshot::channel();
        self.queue.push(Waiter {
            ticket,
            request,
            reply,
        });
        self.queue.sort_by(|a, b| {
            b.request
                .priority
                .cmp(&a.request.priority)
                .then(a.ticket.cmp(&b.ticket))
        });
        Ok(Acquired::Queued(ticket, wait))
    }

    /// Takes a cancelled request out of the queue; `false` when it already
    /// left it (granted, or refused).
    pub(crate) fn cancel(&mut self, ticket: u64) -> bool {
        let before = self.queue.len();
        self.queue.retain(|w| w.ticket != ticket);
        self.queue.len() != before
    }

    /// The active lease, once an expired one was noticed.
    pub(crate) fn current(&mut self, now: OffsetDateTime) -> Option<Lease> {
        self.expire_if_needed(now);
        self.active.clone()
    }

    /// Whether a lease is active at `now`, without noticing anything.
    pub(crate) fn active_at(&self, now: OffsetDateTime) -> usize {
        usize::from(
            self.active
                .as_ref()
                .is_some_and(|l| l.expires.is_some_and(|at| now < at)),
        )
    }

    /// Checks that `lease_id` is the active lease, that the target is
    /// inside its boundaries and that its budget is not spent. An escape or
    /// a spent budget revokes the lease.
    pub(crate) fn validate(
        &mut self,
        lease_id: &str,
        target: [(&str, Option<Value>); 3],
        now: OffsetDateTime,
    ) -> Result<Lease, Refusal> {
        self.expire_if_needed(now);
        let Some(lease) = self.active.clone().filter(|l| l.lease_id == lease_id) else {
            return Err(revoked(lease_id, "control lease is not active"));
        };
        for (kind, value) in target {
            let key = match kind {
                "app" => "appIds",
                "window" => "windowIds",
                _ => "displayIds",
            };
            let allowed = lease.boundaries.get(key).and_then(Value::as_array);
            if let (Some(value), Some(allowed)) = (value, allowed)
                && !allowed.is_empty()
                && !allowed.contains(&value)
            {
                self.revoke(lease_id, "target_boundary_escape", now);
                return Err(Refusal::with_details(
                    "lease_revoked",
                    format!("target escaped {kind} lease boundary"),
                    json!({ "kind": kind, "value": value }),
                ));
            }
        }
        if lease.actions_used >= lease.action_budget {
            self.revoke(lease_id, "action_budget_exhausted", now);
            return Err(revoked(lease_id, "lease action budget exhausted"));
        }
        Ok(lease)
    }

    /// Checks that `lease_id` is the active lease with budget left, as
    /// spending it would ([`Self::validate`] with no target).
    pub(crate) fn stands(&mut self, lease_id: &str, now: OffsetDateTime) -> Result<Lease, Refusal> {
        self.validate(
            lease_id,
            [("app", None), ("window", None), ("display", None)],
            now,
        )
    }

    /// Spends one action of the lease's budget.
    pub(crate) fn consume(&mut self, lease_id: &str, now: OffsetDateTime) -> Result<(), Refusal> {
        self.stands(lease_id, now)?;
        self.revision += 1;
        if let Some(lease) = self.active.as_mut() {
            lease.actions_used += 1;
            lease.revision = self.revision;
        }
        Ok(())
    }

    /// Releases the active lease if it is `lease_id`, and grants the next.
    pub(crate) fn release(&mut self, lease_id: &str, now: OffsetDateTime) -> Option<Lease> {
        let mut lease = self.active.take_if(|l| l.lease_id == lease_id)?;
        self.revision += 1;
        self.ended();
        lease.state = "released";
        lease.revision = self.revision;
        self.grant_next(now);
        Some(lease)
    }

    /// Revokes the active lease if it is `lease_id`, and grants the next.
    pub(crate) fn revoke(
        &mut self,
        lease_id: &str,
        reason: &str,
        now: OffsetDateTime,
    ) -> Option<Lease> {
        let mut lease = self.active.take_if(|l| l.lease_id == lease_id)?;
        self.revision += 1;
        self.ended();
        lease.state = "revoked";
        lease.revoked_reason = Some(reason.to_owned());
        lease.revision = self.revision;
        self.grant_next(now);
        Some(lease)
    }

    /// Stops for good: revokes the active lease and refuses every waiter.
    pub(crate) fn emergency_stop(&mut self, reason: &str, now: OffsetDateTime) -> Option<Lease> {
        self.stopped = true;
        let id = self.active.as_ref().map(|l| l.lease_id.clone());
        let revoked = id.and_then(|id| self.revoke(&id, reason, now));
        for waiter in self.queue.drain(..) {
            let _ = waiter.reply.send(Err(Refusal::with_details(
                "interrupted",
                "emergency stop is active",
                json!({ "reason": reason }),
            )));
        }
        revoked
    }

    fn grant(&mut self, request: LeaseRequest, now: OffsetDateTime) -> Lease {
        self.revision += 1;
        let expires = after(now, request.ttl_ms);
        let lease = Lease {
            lease_id: uuid(),
            revision: self.revision,
            session_id: request.session_id,
            principal_id: request.principal_id,
            agent_id: request.agent_id,
            kind: request.kind,
            execution_mode: request.mode,
            state: "active",
            acquired_at: stamp(now),
            expires_at: stamp(expires),
            expires: Some(expires),
            action_budget: request.budget,
            actions_used: 0,
            boundaries: request.boundaries,
            revoked_reason: None,
        };
        self.active = Some(lease.clone());
        lease
    }

    /// Grants the lease to the first waiter still waiting.
    fn grant_next(&mut self, now: OffsetDateTime) {
        if self.stopped || self.active.is_some() {
            return;
        }
        while !self.queue.is_empty() {
            let waiter = self.queue.remove(0);
            if waiter.reply.is_closed() {
                continue;
            }
            let lease = self.grant(waiter.request, now);
            if waiter.reply.send(Ok(lease)).is_ok() {
                return;
            }
            // Gone between the look and the grant: nobody holds it.
            self.active = None;
        }
    }

    fn expire_if_needed(&mut self, now: OffsetDateTime) {
        if self
            .active
            .as_ref()
            .is_some_and(|l| l.expires.is_none_or(|at| now < at))
        {
            return;
        }
        if self.active.take().is_some() {
            self.revision += 1;
            self.ended();
            self.grant_next(now);
        }
    }

    fn ended(&self) {
        self.ends.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// The count of lease ends, shared: an effect under way compares it
    /// with what it was when the effect's lease was spent.
    pub(crate) fn ends(&self) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
        std::sync::Arc::clone(&self.ends)
    }
}

/// An acquire's answer: now, or once the lease is granted.
pub(crate) enum LeaseAnswer {
    /// Answered at once.
    Now(Answer),
    /// Queued: the ticket and where the grant (or refusal) arrives.
    Wait(u64, tokio::sync::oneshot::Receiver<Result<Lease, Refusal>>),
}
