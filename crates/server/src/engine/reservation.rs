//! Planner reservations, as upstream's reservation manager keeps them.
//!
//! A reservation declares an intent on an app (and window); it grants no
//! authority. The holder is the intent: a session's intent id maps to one
//! active reservation, and asking again for the same intent and the same
//! target gives that reservation back. Any other request that overlaps an
//! active reservation (same app, case-insensitively, and the same window,
//! or either without one) is refused `target_conflict`, whoever asks:
//! another agent, or the same agent with another intent.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::Refusal;
use super::wire::{after, stamp, uuid};

/// A reservation, as it goes on the wire.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Reservation {
    pub reservation_id: String,
    pub revision: u64,
    pub intent_id: String,
    pub session_id: String,
    pub principal_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    pub scope: Scope,
    pub state: &'static str,
    pub acquired_at: String,
    pub expires_at: String,
    #[serde(skip)]
    pub expires: Option<OffsetDateTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_reason: Option<String>,
}

/// What a reservation covers.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Scope {
    pub app_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_id: Option<Value>,
}

impl Scope {
    fn overlaps(&self, other: &Scope) -> bool {
        self.app_id.to_lowercase() == other.app_id.to_lowercase()
            && (self.window_id.is_none()
                || other.window_id.is_none()
                || self.window_id == other.window_id)
    }

    fn same(&self, other: &Scope) -> bool {
        self.app_id.to_lowercase() == other.app_id.to_lowercase()
            && self.window_id == other.window_id
    }
}

impl Reservation {
    /// The reservation as JSON.
    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// What a reserve request asks for.
pub(crate) struct ReserveRequest {
    pub intent_id: String,
    pub session_id: String,
    pub principal_id: String,
    pub execution_group_id: Option<String>,
    pub agent_id: Option<String>,
    pub scope: Scope,
    pub ttl_ms: u64,
}

/// Ended reservations kept readable (the oldest go first beyond this).
pub(super) const ENDED_KEPT: usize = 4096;

/// The active reservations, the recently ended ones, the intent index and
/// the revision counter. Only active reservations are scanned.
#[derive(Default)]
pub(crate) struct Reservations {
    live: BTreeMap<String, Reservation>,
    ended: BTreeMap<String, Reservation>,
    ended_order: std::collections::VecDeque<String>,
    intents: BTreeMap<(String, String), String>,
    revision: u64,
}

impl Reservations {
    /// Reserves, or gives back the intent's own reservation.
    pub(crate) fn reserve(
        &mut self,
        request: ReserveRequest,
        now: OffsetDateTime,
    ) -> Result<Reservation, Refusal> {
        if request.intent_id.is_empty()
            || request.session_id.is_empty()
            || request.principal_id.is_empty()
            || request.scope.app_id.is_empty()
        {
            return Err(Refusal::plain(
                "intentId, sessionId, principalId, and scope.appId are required",
            ));
        }
        self.expire(now);
        let key = (request.session_id.clone(), request.intent_id.clone());
        if let Some(existing) = self.intents.get(&key).and_then(|id| self.live.get(id)) {
            if existing.principal_id != request.principal_id || !existing.scope.same(&request.scope)
            {
                return Err(Refusal::with_details(
                    "target_conflict",
                    "intent id is already bound to a different target",
                    json!({ "intentId": request.intent_id }),
                ));
            }
            return Ok(existing.clone());
        }
        let conflict = self
            .live
            .values()
            .find(|r| r.scope.overlaps(&request.scope));
        if let Some(conflict) = conflict {
            let details = if conflict.principal_id == request.principal_id {
                json!({
                    "reservationId": conflict.reservation_id,
                    "agentId": conflict.agent_id,
                    "expiresAt": conflict.expires_at,
                })
            } else {
                json!({ "occupied": true })
            };
            return Err(Refusal::with_details(
                "target_conflict",
                "another planner has reserved the target",
                details,
            ));
        }
        self.revision += 1;
        let expires = after(now, request.ttl_ms);
        let reservation = Reservation {
            reservation_id: uuid(),
            revision: self.revision,
            intent_id: request.intent_id,
            session_id: request.session_id,
            principal_id: request.principal_id,
            execution_group_id: request.execution_group_id,
            agent_id: request.agent_id,
            scope: request.scope,
            state: "active",
            acquired_at: stamp(now),
            expires_at: stamp(expires),
            expires: Some(expires),
            terminal_reason: None,
        };
        self.intents.insert(key, reservation.reservation_id.clone());
        self.live
            .insert(reservation.reservation_id.clone(), reservation.clone());
        Ok(reservation)
    }

    /// The reservation `id`, whatever its state.
    pub(crate) fn get(&mut self, id: &str, now: OffsetDateTime) -> Option<Reservation> {
        self.expire(now);
        self.live.get(id).or_else(|| self.ended.get(id)).cloned()
    }

    /// Ends an active reservation: `released` for a release, `cancelled`
    /// with any other reason. `None` when it is not active.
    pub(crate) fn release(
        &mut self,
        id: &str,
        principal_id: &str,
        reason: &str,
        now: OffsetDateTime,
    ) -> Result<Option<Reservation>, Refusal> {
        self.expire(now);
        let Some(reservation) = self.live.get(id) else {
            return Ok(None);
        };
        if reservation.principal_id != principal_id {
            return Err(Refusal::new(
                "principal_mismatch",
                "target reservation belongs to another principal",
            ));
        }
        let state = if reason == "released" {
            "released"
        } else {
            "cancelled"
        };
        Ok(self.end(id, state, reason))
    }

    /// Cancels every active reservation of a session, with `reason`.
    pub(crate) fn cancel_session(
        &mut self,
        session_id: &str,
        principal_id: &str,
        reason: &str,
        now: OffsetDateTime,
    ) -> Vec<Reservation> {
        self.expire(now);
        let ids: Vec<String> = self
            .live
            .values()
            .filter(|r| r.session_id == session_id)
            .map(|r| r.reservation_id.clone())
            .collect();
        ids.iter()
            .filter_map(|id| self.release(id, principal_id, reason, now).ok().flatten())
            .collect()
    }

    /// Active reservations at `now`.
    pub(crate) fn active_at(&self, now: OffsetDateTime) -> usize {
        self.live
            .values()
            .filter(|r| r.expires.is_some_and(|at| now < at))
            .count()
    }

    fn expire(&mut self, now: OffsetDateTime) {
        let due: Vec<String> = self
            .live
            .values()
            .filter(|r| r.expires.is_none_or(|at| now >= at))
            .map(|r| r.reservation_id.clone())
            .collect();
        for id in due {
            self.end(&id, "expired", "ttl_expired");
        }
    }

    /// Moves an active reservation to the ended ones.
    fn end(&mut self, id: &str, state: &'static str, reason: &str) -> Option<Reservation> {
        let mut reservation = self.live.remove(id)?;
        self.revision += 1;
        reservation.state = state;
        reservation.terminal_reason = Some(reason.to_owned());
        reservation.revision = self.revision;
        self.intents.remove(&(
            reservation.session_id.clone(),
            reservation.intent_id.clone(),
        ));
        self.ended.insert(id.to_owned(), reservation.clone());
        self.ended_order.push_back(id.to_owned());
        while self.ended_order.len() > ENDED_KEPT {
            if let Some(oldest) = self.ended_order.pop_front() {
                self.ended.remove(&oldest);
            }
        }
        Some(reservation)
    }
}
