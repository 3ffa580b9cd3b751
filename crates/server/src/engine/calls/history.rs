//! The handlers of the `history` part of the server (its data and rules
//! are in `engine::history`): each answers a tool call by changing the
//! [`State`].

use super::super::Refusal;
use super::super::history::*;
use super::super::state::{Answer, State};
use super::super::wire::{int, now, parse_time, stamp, text, text_metadata, uuid};
use adk_computer_use::journal::events;
use serde_json::{Value, json};
use time::OffsetDateTime;

/// The audit export's schema, named in every event page.
const AUDIT_SCHEMA_URI: &str = "computer://audit/schema";
/// The digest of upstream's audit export schema, as every event page states it.
const AUDIT_SCHEMA_DIGEST: &str =
    "40467dbec9a612b7e754523b376485dacc5fc0e99c5e41e6473ba6940f5831d9";

/// The `after_sequence` and `limit` of a page (validated by the schema).
fn page(args: &Value) -> (u64, usize) {
    let after = int(args, "after_sequence").unwrap_or(0).max(0) as u64;
    let limit = int(args, "limit").unwrap_or(100).clamp(1, 1000) as usize;
    (after, limit)
}

impl State {
    pub(in crate::engine) fn session_events(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        let (after, limit) = page(args);
        let events = self.events.query(&id, after, limit);
        let next = events
            .last()
            .and_then(|e| e.get("sequence"))
            .and_then(Value::as_u64)
            .unwrap_or(after);
        Ok(Answer::of(json!({
            "schema_uri": AUDIT_SCHEMA_URI,
            "schema_digest": AUDIT_SCHEMA_DIGEST,
            "events": events,
            "next_sequence": next,
        })))
    }

    pub(in crate::engine) fn submit_follow_up(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let session = self.session_of(text(args, "session_id").unwrap_or_default())?;
        if session.terminal() {
            return Err(Refusal::new(
                "session_not_running",
                format!(
                    "terminal session cannot accept follow-up instructions: {}",
                    session.state
                ),
            ));
        }
        let id = session.session_id.clone();
        let instruction = text(args, "instruction").unwrap_or_default().to_owned();
        if instruction.trim().is_empty() || instruction.len() > 16 * 1024 {
            return Err(Refusal::plain(
                "instruction must contain 1 to 16384 UTF-8 bytes",
            ));
        }
        let principal = self.principal();
        let queue = self.follow_ups.entry(id.clone()).or_default();
        if queue.len() >= 1000 {
            return Err(Refusal::new(
                "execution_failed",
                "follow-up queue limit reached",
            ));
        }
        let follow_up = FollowUp {
            follow_up_id: uuid(),
            sequence: queue.last().map_or(0, |f| f.sequence) + 1,
            session_id: id.clone(),
            principal_id: principal,
            instruction: instruction.clone(),
            created_at: stamp(now()),
        };
        queue.push(follow_up.clone());
        self.publish(
            &id,
            None,
            events::FOLLOW_UP_SUBMITTED,
            json!({
                "followUpId": follow_up.follow_up_id,
                "sequence": follow_up.sequence,
                "instructionMetadata": text_metadata(&instruction),
            }),
        );
        Ok(Answer::of(json!({ "follow_up": follow_up })))
    }

    pub(in crate::engine) fn get_follow_ups(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        let (after, limit) = page(args);
        let page: Vec<FollowUp> = self
            .follow_ups
            .get(&id)
            .map(|list| {
                list.iter()
                    .filter(|f| f.sequence > after)
                    .take(limit)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let next = page.last().map_or(after, |f| f.sequence);
        Ok(Answer::of(
            json!({ "follow_ups": page, "next_sequence": next }),
        ))
    }

    /// Deletes a terminal session and everything kept for it.
    fn delete(&mut self, id: &str) -> Result<Value, Refusal> {
        let session = self.session_of(id)?;
        if !session.terminal() {
            return Err(Refusal::new(
                "session_not_terminal",
                format!(
                    "session data can only be deleted after a terminal state; current state is {}",
                    session.state
                ),
            ));
        }
        let (deleted_events, retained_events) = self.events.delete(id);
        let before = self.receipts.len();
        self.receipts.retain(|(session, _), _| session != id);
        let deleted_receipts = before - self.receipts.len();
        let principal = self.principal();
        let revoked = self.grants.revoke_session(id, &principal);
        self.pending.retain(|(session, _), _| session != id);
        self.reservations
            .cancel_session(id, &principal, "session_data_deleted", now());
        self.follow_ups.remove(id);
        self.sessions.remove(id);
        Ok(json!({
            "sessionId": id,
            "deleted": true,
            "deletedEvents": deleted_events,
            "deletedReceipts": deleted_receipts,
            "deletedEvidenceFrames": 0,
            "revokedGrants": revoked,
            "retainedEvents": retained_events,
        }))
    }

    pub(in crate::engine) fn delete_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let deletion = self.delete(text(args, "session_id").unwrap_or_default())?;
        Ok(Answer::of(json!({ "deletion": deletion })))
    }

    pub(in crate::engine) fn prune_sessions(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let older_than = text(args, "older_than")
            .and_then(|t| parse_time(t).or_else(|| parse_time(&format!("{t}T00:00:00Z"))))
            .ok_or_else(|| Refusal::plain("olderThan must be a valid date"))?;
        let limit = int(args, "limit").unwrap_or(100).clamp(1, 1000) as usize;
        let principal = self.principal();
        let mut doomed: Vec<(OffsetDateTime, String)> = self
            .sessions
            .values()
            .filter(|s| s.principal_id == principal && s.terminal())
            .filter_map(|s| s.updated.map(|at| (at, s.session_id.clone())))
            .filter(|(at, _)| *at < older_than)
            .collect();
        doomed.sort();
        let mut deletions = Vec::new();
        for (_, id) in doomed.into_iter().take(limit) {
            deletions.push(self.delete(&id)?);
        }
        Ok(Answer::of(
            json!({ "deletions": deletions, "deleted": deletions.len() }),
        ))
    }
}
