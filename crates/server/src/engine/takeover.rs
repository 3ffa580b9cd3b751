//! The person takes the machine back.
//!
//! A desktop that watches its input ([`DesktopBackend::foreign_input`])
//! counts the input events it did not send itself. Before the server
//! answers any call, it looks at that count: when it grew, every session
//! that could act is paused `paused_by_user` with the reason
//! `user_takeover`, and its lease, reservations and approvals are revoked,
//! as upstream's `take_over` does. From then on every action of those
//! sessions is refused before anything reaches the desktop, and so is
//! anything that would act on the machine for any session (a new session,
//! a lease, a reservation, a preview, an execution) until the person hands
//! it back: resuming a session the person took over needs the approver's
//! credential over TCP (see [`super::access`]), and that resume is what
//! hands the machine back. The agent cannot hand itself the machine back;
//! over stdio, where no caller is told apart, nobody can, and a new server
//! is the way on. A desktop whose watch stopped reports the machine as
//! taken over for good.
//!
//! [`DesktopBackend::foreign_input`]: super::DesktopBackend::foreign_input

use serde_json::{Value, json};

use super::state::State;
use super::{Answer, Refusal};

/// The reason a session paused by the person's own input carries.
pub const USER_TAKEOVER: &str = "user_takeover";

impl State {
    /// Pauses every session that could act when the desktop saw input it
    /// did not send since the last look.
    pub(super) fn notice_takeover(&mut self) {
        let Some(seen) = self.desktop.foreign_input() else {
            return;
        };
        if seen == u64::MAX {
            // The watch stopped: the machine is never handed back.
            self.machine_taken = true;
        }
        if seen <= self.foreign_seen {
            return;
        }
        let events = seen - self.foreign_seen;
        self.foreign_seen = seen;
        self.machine_taken = true;
        let acting: Vec<String> = self
            .sessions
            .values()
            .filter(|s| s.can_execute())
            .map(|s| s.session_id.clone())
            .collect();
        for id in acting {
            self.taken_by_input.insert(id.clone());
            self.revoke_session_authority(&id, USER_TAKEOVER);
            if self
                .transition(&id, "paused_by_user", Some(USER_TAKEOVER))
                .is_ok()
            {
                self.publish(
                    &id,
                    None,
                    "control.user_activity_revoked",
                    json!({ "events": events, "backend": self.desktop.kind() }),
                );
            }
        }
    }

    /// Refuses what would act on the machine while the person has it.
    pub(super) fn machine_free(&self) -> Result<(), Refusal> {
        if self.machine_taken {
            return Err(Refusal::new(
                "interrupted",
                "the person took the machine over (user_takeover): nothing acts on it until they hand it back (resume_session with the approver's credential)",
            ));
        }
        Ok(())
    }

    /// `resume_session`, by the approver (`approver`) or not: a session the
    /// person took over, or any session while the machine is theirs, is
    /// resumed by the approver alone, and that hands the machine back.
    pub(super) fn resume_as(&mut self, args: &Value, approver: bool) -> Result<Answer, Refusal> {
        let id = args
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let id = id.as_str();
        if (self.machine_taken || self.taken_over(id)) && !approver {
            return Err(Refusal::new(
                super::access::APPROVER_CREDENTIAL_REQUIRED,
                "the person took this machine over (user_takeover): only the approver's credential resumes it",
            ));
        }
        let answer = self.resume_session(args)?;
        self.taken_by_input.remove(id);
        self.machine_taken = false;
        Ok(answer)
    }

    /// Whether `session_id` was paused by the person's own input (not by
    /// the `take_over` tool, which anyone may call and undo, as upstream's).
    pub(super) fn taken_over(&self, session_id: &str) -> bool {
        self.taken_by_input.contains(session_id)
            && self
                .sessions
                .get(session_id)
                .is_some_and(|s| s.state == "paused_by_user")
    }
}
