//! The handlers of the `grants` part of the server (its data and rules
//! are in `engine::grants`): each answers a tool call by changing the
//! [`State`].

use super::super::Refusal;
use super::super::grants::*;
use super::super::state::{Answer, State};
use super::super::wire::{after, int, now, reached, stamp, text, uuid};
use adk_computer_use::journal::events;
use serde_json::{Value, json};

impl State {
    pub(in crate::engine) fn approve(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let session_id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        let action_id = text(args, "action_id").unwrap_or_default().to_owned();
        let key = (session_id.clone(), action_id.clone());
        let principal = self.principal();
        let Some(pending) = self
            .pending
            .get(&key)
            .filter(|p| field(&p.preview["envelope"], "principalId") == principal)
            .cloned()
        else {
            return Err(required(
                "no exact pending action is available for approval",
            ));
        };
        let at = now();
        let envelope = &pending.preview["envelope"];
        if reached(field(envelope, "expiresAt"), at) {
            self.pending.remove(&key);
            return Err(required("pending action expired before approval"));
        }
        let scope = text(args, "scope").unwrap_or("exact_action");
        if scope == "session_operation" && pending.scope_digest.is_none() {
            return Err(Refusal::new(
                "policy_denied",
                "this action is not eligible for a session-scoped approval; approve the exact action instead",
            ));
        }
        let uses = int(args, "uses");
        if scope == "exact_action" && uses.is_some_and(|u| u != 1) {
            return Err(Refusal::plain(
                "exact-action approval grants must have exactly one use",
            ));
        }
        let uses = if scope == "exact_action" {
            1
        } else {
            uses.unwrap_or(10)
        };
        let tool = field(envelope, "tool").to_owned();
        let class = field(envelope, "actionClass").to_owned();
        if scope == "session_operation"
            && (!adk_computer_use::contracts::SESSION_OPERATION_TOOLS.contains(&tool.as_str())
                || class != "edit_reversible"
                || uses > 20)
        {
            return Err(Refusal::plain(
                "session-operation approval is limited to at most 20 reversible semantic edits",
            ));
        }
        let ttl = int(args, "ttl_ms").unwrap_or(60_000).clamp(1, 300_000) as u64;
        let digest = field(envelope, "argsDigest").to_owned();
        let expires = after(at, ttl);
        let grant = Grant {
            grant_id: uuid(),
            scope: scope.to_owned(),
            principal_id: principal,
            session_id: session_id.clone(),
            action_digest: digest.clone(),
            scope_digest: match scope {
                "exact_action" => digest,
                _ => pending.scope_digest.clone().unwrap_or_default(),
            },
            policy_digest: field(&pending.preview["policy"], "policyDigest").to_owned(),
            tool,
            operation: field(envelope, "operation").to_owned(),
            action_class: class,
            mode: field(envelope, "requestedMode").to_owned(),
            issued_at: stamp(at),
            expires_at: stamp(expires),
            expires: Some(expires),
            remaining_uses: uses.max(1) as u64,
            consumed_by_action_ids: Vec::new(),
        };
        self.grants
            .grants
            .insert(grant.grant_id.clone(), grant.clone());
        self.pending.remove(&key);
        self.publish(
            &session_id,
            Some(&action_id),
            events::APPROVED,
            json!({
                "scope": grant.scope,
                "scopeDigest": grant.scope_digest,
                "expiresAt": grant.expires_at,
                "remainingUses": grant.remaining_uses,
                "tool": grant.tool,
                "operation": grant.operation,
            }),
        );
        Ok(Answer::of(json!({ "grant": grant })))
    }
}
