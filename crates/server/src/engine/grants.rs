//! Approval grants, as upstream's grant store keeps them (the
//! `approve_action` handler is in `calls::grants`).
//!
//! A preview the policy holds for approval leaves a pending approval; one
//! approval decision turns it into one grant and removes it. An
//! `exact_action` grant binds the action's digest for one use; a
//! `session_operation` grant binds a scope digest for a bounded number of
//! reversible semantic edits. A grant is checked against the envelope (its
//! principal, session, scope, policy digest, class and mode) when a preview
//! names it, and consumed when the action executes.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use time::OffsetDateTime;

use super::Refusal;

/// A grant, as it goes on the wire.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Grant {
    pub grant_id: String,
    pub scope: String,
    pub principal_id: String,
    pub session_id: String,
    pub action_digest: String,
    pub scope_digest: String,
    pub policy_digest: String,
    pub tool: String,
    pub operation: String,
    pub action_class: String,
    pub mode: String,
    pub issued_at: String,
    pub expires_at: String,
    #[serde(skip)]
    pub expires: Option<OffsetDateTime>,
    pub remaining_uses: u64,
    pub consumed_by_action_ids: Vec<String>,
}

/// A preview waiting for a person's approval.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// The preview (envelope, capability, policy, ...), as answered.
    pub preview: Value,
    /// The scope a session-operation grant may bind, when eligible.
    pub scope_digest: Option<String>,
}

/// Every live grant.
#[derive(Default)]
pub(crate) struct Grants {
    pub(super) grants: BTreeMap<String, Grant>,
}

pub(super) fn required(message: &str) -> Refusal {
    Refusal::new("approval_required", message)
}

pub(super) fn field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl Grants {
    /// How many grants the server holds, spent or not.
    pub(crate) fn len(&self) -> usize {
        self.grants.len()
    }

    /// Checks that grant `id` covers the envelope.
    pub(crate) fn validate(
        &mut self,
        id: &str,
        envelope: &Value,
        policy_digest: &str,
        scope_digest: Option<&str>,
        at: OffsetDateTime,
    ) -> Result<(), Refusal> {
        let Some(grant) = self.grants.get(id) else {
            return Err(required("approval grant is unknown or revoked"));
        };
        if grant.expires.is_none_or(|expires| at >= expires) {
            self.grants.remove(id);
            return Err(required("approval grant expired"));
        }
        let scope_matches = if grant.scope == "exact_action" {
            grant.action_digest == field(envelope, "argsDigest")
        } else {
            scope_digest.is_some_and(|d| d == grant.scope_digest)
                && grant.tool == field(envelope, "tool")
                && grant.operation == field(envelope, "operation")
        };
        let matches = grant.principal_id == field(envelope, "principalId")
            && grant.session_id == field(envelope, "sessionId")
            && scope_matches
            && grant.policy_digest == policy_digest
            && grant.action_class == field(envelope, "actionClass")
            && grant.mode == field(envelope, "requestedMode");
        if !matches {
            return Err(required(
                "approval grant does not match the exact action envelope",
            ));
        }
        let action = field(envelope, "actionId");
        if !grant.consumed_by_action_ids.iter().any(|a| a == action) && grant.remaining_uses < 1 {
            return Err(required("approval grant has no remaining uses"));
        }
        Ok(())
    }

    /// Validates grant `id` and spends one use on the envelope's action
    /// (once per action: a replay of the same action spends nothing).
    pub(crate) fn consume(
        &mut self,
        id: &str,
        envelope: &Value,
        policy_digest: &str,
        scope_digest: Option<&str>,
        at: OffsetDateTime,
    ) -> Result<(), Refusal> {
        self.validate(id, envelope, policy_digest, scope_digest, at)?;
        let action = field(envelope, "actionId").to_owned();
        if let Some(grant) = self.grants.get_mut(id)
            && !grant.consumed_by_action_ids.contains(&action)
        {
            grant.remaining_uses = grant.remaining_uses.saturating_sub(1);
            grant.consumed_by_action_ids.push(action);
        }
        Ok(())
    }

    /// Revokes a session's grants; how many.
    pub(crate) fn revoke_session(&mut self, session_id: &str, principal_id: &str) -> u64 {
        let before = self.grants.len();
        self.grants
            .retain(|_, g| g.session_id != session_id || g.principal_id != principal_id);
        (before - self.grants.len()) as u64
    }

    /// Revokes every grant.
    pub(crate) fn revoke_all(&mut self) -> Vec<Grant> {
        std::mem::take(&mut self.grants).into_values().collect()
    }
}
