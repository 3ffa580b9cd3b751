//! The handlers of the `session` part of the server (its data and rules
//! are in `engine::session`): each answers a tool call by changing the
//! [`State`].

use super::super::Refusal;
use super::super::session::*;
use super::super::state::{Answer, State};
use super::super::wire::{given, now, object, stamp, text, text_metadata, uuid};
use adk_computer_use::journal::events;
use serde_json::{Value, json};

impl State {
    /// Moves a session to `to`; staying put changes nothing.
    pub(in crate::engine) fn transition(
        &mut self,
        id: &str,
        to: &str,
        reason: Option<&str>,
    ) -> Result<Session, Refusal> {
        let Some(session) = self.sessions.get_mut(id) else {
            return Err(Refusal::plain(format!("unknown session: {id}")));
        };
        if session.state == to {
            return Ok(session.clone());
        }
        if !allowed(&session.state, to) {
            return Err(invalid(&session.state, to));
        }
        let from = std::mem::replace(&mut session.state, to.to_owned());
        let at = now();
        session.revision += 1;
        session.updated_at = stamp(at);
        session.updated = Some(at);
        let reason = reason.filter(|r| !r.is_empty());
        session.waiting_reason = reason.map(str::to_owned);
        let changed = session.clone();
        let payload = object([
            ("from", Some(json!(from))),
            ("to", Some(json!(to))),
            ("reasonMetadata", reason.map(text_metadata)),
        ]);
        self.publish(id, None, events::SESSION_STATE_CHANGED, payload);
        Ok(changed)
    }

    pub(in crate::engine) fn start_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let at = now();
        let id = uuid();
        let session = Session {
            session_id: id.clone(),
            principal_id: self.principal(),
            execution_group_id: given(args, "execution_group_id").map(str::to_owned),
            objective: given(args, "objective").map(str::to_owned),
            state: "created".into(),
            revision: 1,
            created_at: stamp(at),
            updated_at: stamp(at),
            updated: Some(at),
            waiting_reason: None,
            completion: None,
            owner: None,
        };
        self.sessions.insert(id.clone(), session);
        self.publish(
            &id,
            None,
            events::SESSION_CREATED,
            json!({ "state": "created" }),
        );
        Ok(self.transition(&id, "running", None)?.answer())
    }

    pub(in crate::engine) fn get_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        Ok(self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .answer())
    }

    /// `pause_session`, or `take_over` with its fixed reason.
    pub(in crate::engine) fn pause_session(
        &mut self,
        args: &Value,
        fixed: Option<&str>,
    ) -> Result<Answer, Refusal> {
        let id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        let reason = fixed
            .or_else(|| text(args, "reason"))
            .unwrap_or("user_pause")
            .to_owned();
        self.revoke_session_authority(&id, &reason);
        Ok(self
            .transition(&id, "paused_by_user", Some(&reason))?
            .answer())
    }

    pub(in crate::engine) fn resume_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        Ok(self.transition(&id, "running", None)?.answer())
    }

    pub(in crate::engine) fn stop_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let current = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .clone();
        if current.state == "stopped" {
            return Ok(current.answer());
        }
        let reason = text(args, "reason").unwrap_or("user_stop").to_owned();
        let id = current.session_id.clone();
        self.revoke_session_authority(&id, &reason);
        if current.state != "stopping" {
            self.transition(&id, "stopping", Some(&reason))?;
        }
        Ok(self.transition(&id, "stopped", Some(&reason))?.answer())
    }

    pub(in crate::engine) fn complete_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        self.revoke_session_authority(&id, "session_completed");
        let postconditions: Vec<Value> = args
            .get("postconditions")
            .and_then(Value::as_array)
            .map(|items| {
                items
                    .iter()
                    .map(|item| {
                        object([
                            ("description", item.get("description").cloned()),
                            (
                                "satisfied",
                                Some(json!(item.get("satisfied") == Some(&json!(true)))),
                            ),
                            (
                                "evidenceHash",
                                item.get("evidence_hash").filter(|v| v.is_string()).cloned(),
                            ),
                        ])
                    })
                    .collect()
            })
            .unwrap_or_default();
        let counts = args
            .get("action_counts")
            .cloned()
            .unwrap_or_else(|| json!({}));
        let at = now();
        let summary = text(args, "summary").unwrap_or_default().to_owned();
        let completion = object([
            ("summary", Some(json!(summary))),
            ("postconditions", Some(json!(postconditions))),
            ("lastAppId", args.get("last_app_id").cloned()),
            (
                "lastWindowId",
                args.get("last_window_id")
                    .map(super::super::wire::window_id),
            ),
            ("actionCounts", Some(counts.clone())),
            ("reason", args.get("reason").cloned()),
            ("completedAt", Some(json!(stamp(at)))),
        ]);
        let Some(session) = self.sessions.get_mut(&id) else {
            return Err(Refusal::plain(format!("unknown session: {id}")));
        };
        if !allowed(&session.state, "completed") {
            return Err(invalid(&session.state, "completed"));
        }
        session.state = "completed".into();
        session.revision += 1;
        session.updated_at = stamp(at);
        session.updated = Some(at);
        session.waiting_reason = None;
        session.completion = Some(completion);
        let answer = session.answer();
        let satisfied = postconditions
            .iter()
            .filter(|p| p.get("satisfied") == Some(&json!(true)))
            .count();
        let hashes: Vec<Value> = postconditions
            .iter()
            .filter_map(|p| p.get("evidenceHash").cloned())
            .collect();
        self.publish(
            &id,
            None,
            events::SESSION_COMPLETED,
            json!({
                "summaryMetadata": text_metadata(&summary),
                "postconditions": {
                    "total": postconditions.len(),
                    "satisfied": satisfied,
                    "evidenceHashes": hashes,
                },
                "actionCounts": counts,
            }),
        );
        Ok(answer)
    }
}
