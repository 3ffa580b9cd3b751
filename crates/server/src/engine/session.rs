//! Sessions: their lifecycle (upstream's states and transitions) and the
//! controls that move them.
//!
//! A session is created, then runs. Pausing (or a take-over) revokes what
//! the session holds and parks it `paused_by_user` with the reason as its
//! `waitingReason`; resuming clears the reason. Stopping goes through
//! `stopping` to `stopped`; completing is allowed from `running` only.
//! Every change is a `session.state_changed` event `{from, to}`, with the
//! reason's digest and length (never its text) when there is one.

use adk_computer_use::journal::events;
use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::Refusal;
use super::state::{Answer, State};
use super::wire::{given, now, object, stamp, text, text_metadata, uuid};

/// Where a session may go from each state.
const TRANSITIONS: &[(&str, &[&str])] = &[
    ("created", &["running", "stopped"]),
    (
        "running",
        &[
            "waiting_for_user",
            "paused_by_user",
            "paused_by_policy",
            "stopping",
            "completed",
            "failed",
        ],
    ),
    (
        "waiting_for_user",
        &["running", "paused_by_user", "stopping", "failed"],
    ),
    ("paused_by_user", &["running", "stopping", "stopped"]),
    (
        "paused_by_policy",
        &["running", "stopping", "failed", "stopped"],
    ),
    ("stopping", &["stopped", "failed"]),
];

/// The states a session ends in.
const TERMINAL: &[&str] = &["completed", "failed", "stopped"];

fn allowed(from: &str, to: &str) -> bool {
    TRANSITIONS
        .iter()
        .any(|(state, next)| *state == from && next.contains(&to))
}

fn invalid(from: &str, to: &str) -> Refusal {
    Refusal::plain(format!("invalid session transition: {from} -> {to}"))
}

/// A session, as it goes on the wire.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Session {
    pub session_id: String,
    pub principal_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub objective: Option<String>,
    pub state: String,
    pub revision: u64,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip)]
    pub updated: Option<OffsetDateTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion: Option<Value>,
    /// The agent that started it, by its credential's name (over TCP);
    /// `None` when a trusted caller (stdio, the host, the approver) did.
    #[serde(skip)]
    pub owner: Option<String>,
}

impl Session {
    pub(super) fn answer(&self) -> Answer {
        Answer::of(json!({ "session": self }))
    }

    /// Whether previews and executions may run in it.
    pub(crate) fn can_execute(&self) -> bool {
        self.state == "running" || self.state == "waiting_for_user"
    }

    pub(super) fn terminal(&self) -> bool {
        TERMINAL.contains(&self.state.as_str())
    }
}

impl State {
    /// Moves a session to `to`; staying put changes nothing.
    pub(super) fn transition(
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

    pub(super) fn start_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
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

    pub(super) fn get_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        Ok(self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .answer())
    }

    /// `pause_session`, or `take_over` with its fixed reason.
    pub(super) fn pause_session(
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

    pub(super) fn resume_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
        let id = self
            .session_of(text(args, "session_id").unwrap_or_default())?
            .session_id
            .clone();
        Ok(self.transition(&id, "running", None)?.answer())
    }

    pub(super) fn stop_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
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

    pub(super) fn complete_session(&mut self, args: &Value) -> Result<Answer, Refusal> {
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
                args.get("last_window_id").map(super::wire::window_id),
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
