//! A consumed checkpoint given back when its action was refused before any
//! effect.
//!
//! A resume consumes its checkpoint before the action reserves, leases and
//! executes: consuming it is what makes two resumes of one approval
//! impossible. But a person's approval spent on a refusal (the runtime
//! found the target stale, the lease was taken, a local check failed) is
//! an approval lost for nothing. So the session remembers, per action,
//! which claim it rests on until the action reaches the runtime's effect
//! boundary; a failure before the mutating call is made (a local check,
//! the reservation, the lease) gives the claim back to the store, and the
//! checkpoint (with its decision) can be resumed again until its own
//! expiry. Once the mutating call is made, nothing is given back, whatever
//! it answered: a server may refuse after the effect (upstream re-checks
//! the target after acting and answers `stale_target`), and such a refusal
//! reads like one made before it.
//!
//! Two resumed actions under one action id (an agent may seal two
//! checkpoints with the same id) hold nothing at all: neither claim is
//! given back, so a failure of one can never return the other's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::checkpoint::CheckpointId;
use super::offload;
use super::stores::{CheckpointStore, ClaimBasis};
use crate::ComputerUseError;

/// One claim an action rests on.
struct Held {
    store: Arc<dyn CheckpointStore>,
    id: CheckpointId,
    basis: ClaimBasis,
    /// The resumed action's whole envelope, as a digest: its id is the
    /// agent's to choose, so another action under the same id must not
    /// give this claim back (nor settle it).
    envelope: String,
}

/// A digest of the whole `envelope` (its target's observation, its times,
/// everything): what tells the resumed action from another that carries
/// the same id. `None` only when it cannot be written, which then matches
/// nothing.
pub(crate) fn envelope_digest(envelope: &crate::contracts::ActionEnvelope) -> Option<String> {
    crate::digest::canonical_json_of(envelope)
        .ok()
        .map(crate::digest::sha256_hex)
}

/// The claims of a session's actions that have not reached an effect.
#[derive(Default)]
pub(crate) struct Returnable {
    held: Mutex<HashMap<String, Held>>,
    /// Action ids two resumed actions shared: never held again.
    shared: Mutex<std::collections::HashSet<String>>,
}

impl Returnable {
    /// Remembers that `action_id` rests on the claim of `id` on `basis`.
    pub(crate) fn hold(
        &self,
        envelope: &crate::contracts::ActionEnvelope,
        store: Arc<dyn CheckpointStore>,
        id: CheckpointId,
        basis: ClaimBasis,
    ) {
        let action_id = envelope.action_id.as_str();
        let Some(digest) = envelope_digest(envelope) else {
            return;
        };
        let mut held = self.lock();
        if held.contains_key(action_id) || self.twice(action_id) {
            // A second resumed action under the same id: neither is held.
            held.remove(action_id);
            self.shared
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(action_id.to_owned());
            return;
        }
        held.insert(
            action_id.to_owned(),
            Held {
                store,
                id,
                basis,
                envelope: digest,
            },
        );
    }

    /// Whether `action_id` was ever held twice in this session.
    fn twice(&self, action_id: &str) -> bool {
        self.shared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(action_id)
    }

    /// The action `envelope` describes is about to make the mutating
    /// call: its claim stays consumed whatever happens next.
    pub(crate) fn settle(&self, envelope: &crate::contracts::ActionEnvelope) {
        let mut held = self.lock();
        if Self::is_for(&held, envelope) {
            held.remove(&envelope.action_id);
        }
    }

    /// Whether the claim held under `envelope`'s action id is that very
    /// action's.
    fn is_for(held: &HashMap<String, Held>, envelope: &crate::contracts::ActionEnvelope) -> bool {
        held.get(&envelope.action_id)
            .is_some_and(|h| envelope_digest(envelope).is_some_and(|digest| digest == h.envelope))
    }

    /// The action `envelope` describes failed with `err`: when nothing was
    /// performed, its
    /// claim is given back to the store, and the checkpoint's id returned
    /// (for the session to forget it resumed it). Otherwise, or when the
    /// store refuses, nothing is given back.
    pub(crate) async fn failed(
        &self,
        envelope: &crate::contracts::ActionEnvelope,
        err: &ComputerUseError,
    ) -> Option<CheckpointId> {
        let held = {
            let mut held = self.lock();
            if !Self::is_for(&held, envelope) {
                return None;
            }
            held.remove(&envelope.action_id)?
        };
        if !left_no_effect(err) {
            return None;
        }
        let Held {
            store, id, basis, ..
        } = held;
        let given = {
            let id = id.clone();
            offload::run(&store, "give a checkpoint back", move |store| {
                store.give_back(&id, &basis)
            })
            .await
        };
        match given {
            Ok(()) => Some(id),
            Err(cause) => {
                tracing::warn!(checkpoint = %id, error = %cause, "a refused action's checkpoint could not be given back");
                None
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Whether `err` says for certain that nothing was performed: every
/// failure but an outcome in doubt.
fn left_no_effect(err: &ComputerUseError) -> bool {
    match err {
        ComputerUseError::OutcomeUnknown { .. } => false,
        ComputerUseError::WithCleanup { primary, .. } => left_no_effect(primary),
        _ => true,
    }
}
