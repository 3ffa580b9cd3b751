//! A wait's looks: each one observation on the desktop (the windows, a
//! window's texts or its revisions), after the state said the wait may
//! still observe; and a whole wait in one go for callers that hold the
//! state anyway.

use std::time::Instant;

use adk_computer_use::contracts::labels::normalise;
use serde_json::{Value, json};

use super::{Condition, Look, Wait, Window, invalid};
use crate::engine::Refusal;
use crate::engine::actuate::Desk;
use crate::engine::state::State;

/// Whether a window record is an application's (with the title) and shown.
fn is_of(record: &Value, app: &str, title: Option<&str>) -> bool {
    record["bundleId"].as_str() == Some(app)
        && record["isOnScreen"].as_bool() != Some(false)
        && title.is_none_or(|t| {
            record["title"]
                .as_str()
                .is_some_and(|now| normalise(now).contains(t))
        })
}

impl Desk {
    /// The windows `list_windows` shows now, as records.
    fn window_records(&self) -> Result<Vec<Value>, Refusal> {
        let listed = self.desktop.list_windows()?;
        Ok(listed["windows"].as_array().cloned().unwrap_or_default())
    }

    /// The id of the window a text or stability wait looks at; `None`
    /// while no such window is shown.
    fn waited_window(&self, window: &Window) -> Result<Option<u64>, Refusal> {
        match window {
            Window::Id(id) => Ok(Some(*id)),
            Window::Of { app, title } => {
                let records = self.window_records()?;
                let found: Vec<u64> = records
                    .iter()
                    .filter(|r| is_of(r, app, title.as_deref()))
                    .filter_map(|r| r["windowId"].as_u64())
                    .collect();
                match found.as_slice() {
                    [] => Ok(None),
                    [one] => Ok(Some(*one)),
                    many => Err(Refusal::with_details(
                        "ambiguous_target",
                        format!(
                            "{} windows of that application match: name one by window_id",
                            many.len()
                        ),
                        json!({ "windowIds": many }),
                    )),
                }
            }
        }
    }

    /// One look of `wait` on the desktop (with the server's state free,
    /// once [`State::may_look`] allowed it): its answer when the condition
    /// holds, else when to look again, or why the wait ends (the polled
    /// observation's refusal, or the deadline's).
    pub(in crate::engine) fn look(&self, wait: &mut Wait) -> Result<Look, Refusal> {
        wait.polls += 1;
        match &wait.condition {
            Condition::Window { app, title, gone } => {
                let records = self.window_records()?;
                let found = records
                    .into_iter()
                    .find(|r| is_of(r, app, title.as_deref()));
                match (found, *gone) {
                    (Some(record), false) => return Ok(wait.done(json!({ "window": record }))),
                    (None, true) => return Ok(wait.done(json!({ "gone": true }))),
                    _ => {}
                }
            }
            Condition::Text { window, gone, .. } => match self.waited_window(window)? {
                Some(id) => return Ok(Look::Texts(id, self.desktop.window_texts(id)?)),
                None if *gone => return Ok(wait.done(json!({ "gone": true }))),
                None => {}
            },
            Condition::Stable { .. } => return self.look_stable(wait),
        }
        wait.again()
    }

    /// One look of a stability wait: the window's revisions, compared with
    /// the last seen; the wait ends once they stayed the same for its
    /// quiet time.
    fn look_stable(&self, wait: &mut Wait) -> Result<Look, Refusal> {
        let Condition::Stable {
            window,
            quiet,
            last,
        } = &mut wait.condition
        else {
            return wait.again();
        };
        let Some(id) = self.waited_window(window)? else {
            *last = None;
            return wait.again();
        };
        let tree = self.desktop.ui_tree(None, Some(id), None)?;
        let revision = json!([tree["uiTreeRevision"], tree["elementTreeRevision"]]);
        let now = Instant::now();
        let quiet = *quiet;
        let still = match last {
            Some((seen, since)) if *seen == revision => now.duration_since(*since) >= quiet,
            _ => {
                *last = Some((revision, now));
                false
            }
        };
        if still {
            let quiet_ms = u64::try_from(quiet.as_millis()).unwrap_or(0);
            return Ok(wait.done(json!({
                "windowId": id,
                "stable": true,
                "quietMs": quiet_ms,
                "uiTreeRevision": tree["uiTreeRevision"],
            })));
        }
        wait.again()
    }
}

impl State {
    /// Whether a wait may look now: a wait observes only while its session
    /// may, not once the person took the machine over, nor once the
    /// session stopped or paused.
    pub(in crate::engine) fn may_look(&self, wait: &Wait) -> Result<(), Refusal> {
        self.machine_free()?;
        if !self
            .sessions
            .get(&wait.session_id)
            .is_some_and(crate::engine::session::Session::can_execute)
        {
            return Err(Refusal::new(
                "interrupted",
                "the wait's session is no longer running (stopped, or paused by the person): the wait ends",
            ));
        }
        Ok(())
    }

    /// Marks a wait's start, as every execution's start is marked.
    pub(in crate::engine) fn wait_started(&mut self, begun: &crate::engine::execute::Begun) {
        let request = &begun.request;
        self.publish(
            &request.session_id,
            Some(&begun.action_id),
            adk_computer_use::journal::events::STARTED,
            json!({ "tool": request.tool, "mode": request.mode, "leaseId": request.lease_id }),
        );
    }

    /// A whole wait in one go, sleeping between looks with the state held:
    /// only for [`State::execute`]'s callers, which hold the state anyway.
    /// The server runs a wait look by look instead (see the module).
    pub(in crate::engine) fn wait_here(
        &self,
        name: &str,
        args: &Value,
        session_id: &str,
    ) -> Result<Value, Refusal> {
        let Some(mut wait) = Wait::parse(name, args, session_id)? else {
            return Err(invalid(format!("{name} is not a wait")));
        };
        let desk = self.desk();
        loop {
            self.may_look(&wait)?;
            let mut look = desk.look(&mut wait)?;
            if let Look::Texts(id, texts) = look {
                look = wait.judge_texts(id, &texts)?;
            }
            match look {
                Look::Done(answer) => return Ok(answer),
                Look::Again(pause) => std::thread::sleep(pause),
                Look::Texts(..) => return Err(invalid("a wait's texts were not matched")),
            }
        }
    }
}
