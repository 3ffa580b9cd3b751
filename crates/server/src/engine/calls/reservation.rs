//! The handlers of the `reservation` part of the server (its data and rules
//! are in `engine::reservation`): each answers a tool call by changing the
//! [`State`].

use super::super::Refusal;
use super::super::reservation::*;
use super::super::state::{Answer, State};
use adk_computer_use::journal::events;
use serde_json::{Value, json};

impl State {
    pub(in crate::engine) fn reserve(&mut self, args: &Value) -> Result<Answer, Refusal> {
        use super::super::wire::{given, int, now, text};
        let session_id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        let request = ReserveRequest {
            intent_id: text(args, "intent_id").unwrap_or_default().to_owned(),
            session_id: session_id.clone(),
            principal_id: self.principal(),
            execution_group_id: given(args, "execution_group_id").map(str::to_owned),
            agent_id: given(args, "agent_id").map(str::to_owned),
            scope: Scope {
                app_id: text(args, "app_id").unwrap_or_default().to_owned(),
                window_id: args.get("window_id").map(super::super::wire::window_id),
            },
            ttl_ms: int(args, "ttl_ms").unwrap_or(1).max(1) as u64,
        };
        let reservation = self.reservations.reserve(request, now())?;
        self.publish(
            &session_id,
            None,
            events::RESERVED,
            json!({
                "reservationId": reservation.reservation_id,
                "intentId": reservation.intent_id,
                "agentId": reservation.agent_id,
                "appId": reservation.scope.app_id,
                "windowId": reservation.scope.window_id,
                "expiresAt": reservation.expires_at,
            }),
        );
        let answer = self.forge_reservation(reservation.to_value());
        Ok(Answer::of(json!({ "reservation": answer })))
    }

    pub(in crate::engine) fn release_reservation(
        &mut self,
        args: &Value,
    ) -> Result<Answer, Refusal> {
        use super::super::wire::{now, text};
        use crate::desktop::simulated::Fault;
        let session_id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        let id = text(args, "reservation_id").unwrap_or_default().to_owned();
        let at = now();
        if self.faults.has(Fault::FailRelease) {
            return Err(Refusal::new(
                "release_failed",
                format!("injected: {id} could not be released"),
            ));
        }
        let current = self.reservations.get(&id, at);
        if current.as_ref().is_some_and(|r| r.session_id != session_id) {
            return Err(Refusal::new(
                "target_conflict",
                "target reservation belongs to another session",
            ));
        }
        if self.faults.has(Fault::ReleaseState)
            && let Some(active) = current.filter(|r| r.state == "active")
        {
            // Answers as if released, but the reservation is still held.
            return Ok(Answer::of(json!({ "reservation": active.to_value() })));
        }
        let principal = self.principal();
        match self.reservations.release(&id, &principal, "released", at)? {
            Some(reservation) => {
                self.publish(
                    &session_id,
                    None,
                    events::RELEASED,
                    json!({ "reservationId": id, "intentId": reservation.intent_id }),
                );
                Ok(Answer::of(json!({ "reservation": reservation.to_value() })))
            }
            None => Err(Refusal::bare(
                "reservation_not_active",
                json!({ "reservation_id": id }),
            )),
        }
    }
}
