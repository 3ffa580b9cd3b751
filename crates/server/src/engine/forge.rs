//! Faults that forge answers: each changes one field of a lease, a
//! reservation or a mutation's receipt as it goes out, never the server's
//! own record (so releases by the true id still work).

use serde_json::{Value, json};

use super::state::State;
use super::wire::{now, stamp};
use crate::desktop::simulated::Fault;

/// A fault and the change it makes to an answer, at a JSON pointer.
pub(super) type Forgery = (Fault, &'static str, fn() -> Value);

pub(super) const LEASE_FORGERIES: [Forgery; 6] = [
    (Fault::LeaseSession, "/sessionId", || {
        json!("session-forged")
    }),
    (Fault::LeasePrincipal, "/principalId", || {
        json!("principal-forged")
    }),
    (Fault::LeaseAgent, "/agentId", || json!("agent-forged")),
    (Fault::LeaseApp, "/boundaries/appIds", || {
        json!(["com.example.Forged"])
    }),
    (Fault::LeaseWindow, "/boundaries/windowIds", || {
        json!([999_999])
    }),
    (Fault::LeaseExpired, "/expiresAt", || {
        json!(stamp(now() - time::Duration::seconds(1)))
    }),
];

const RESERVATION_FORGERIES: [Forgery; 6] = [
    (Fault::ReservationSession, "/sessionId", || {
        json!("session-forged")
    }),
    (Fault::ReservationPrincipal, "/principalId", || {
        json!("principal-forged")
    }),
    (Fault::ReservationAgent, "/agentId", || {
        json!("agent-forged")
    }),
    (Fault::ReservationIntent, "/intentId", || {
        json!("intent-forged")
    }),
    (Fault::ReservationApp, "/scope/appId", || {
        json!("com.example.Forged")
    }),
    (Fault::ReservationWindow, "/scope/windowId", || {
        json!(999_999)
    }),
];

const RECEIPT_FORGERIES: [Forgery; 2] = [
    (Fault::ReceiptDigest, "/actionDigest", || {
        json!("0".repeat(64))
    }),
    (Fault::ReceiptSession, "/sessionId", || {
        json!("session-forged")
    }),
];

/// Sets the value at `pointer` (its parent must be an object).
fn set_at(value: &mut Value, pointer: &str, new: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    let parent = if parent.is_empty() {
        Some(value)
    } else {
        value.pointer_mut(parent)
    };
    if let Some(Value::Object(map)) = parent {
        map.insert(key.to_owned(), new);
    }
}

impl State {
    /// Applies every injected forgery of `table` to an answer (never to the
    /// server's own record, so releases by the true id still work).
    pub(super) fn forge(&self, table: &[Forgery], answer: &mut Value) {
        for (fault, pointer, value) in table {
            if self.faults.has(*fault) {
                set_at(answer, pointer, value());
            }
        }
    }

    /// A reservation answer, forged when a fault says so.
    pub(super) fn forge_reservation(&self, mut answer: Value) -> Value {
        self.forge(&RESERVATION_FORGERIES, &mut answer);
        answer
    }

    /// A receipt answer, forged when a fault says so.
    pub(super) fn forge_receipt(&self, mut answer: Value) -> Value {
        self.forge(&RECEIPT_FORGERIES, &mut answer);
        answer
    }
}
