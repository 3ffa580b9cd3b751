//! The three waits of upstream's released server (`wait_for_window`,
//! `wait_for_text`, `wait_for_stable`): read-only observations with a
//! deadline, so a plan waits for a window, a text or a still tree before it
//! acts instead of acting on a desktop still settling and being refused
//! stale.
//!
//! Why a wait is a loop of looks and not one call: the server's state is
//! locked for each look only (one `list_windows`, one read of a window's
//! elements or revisions) and free while the wait sleeps between looks,
//! so a two-minute wait never holds up another session. Each look is what
//! the polled observation is on its own, with its refusals, and checks
//! first that the wait may still observe (the machine not taken over, its
//! session still running). A text wait's matching runs after its look,
//! with the state free (a pattern's cost over an application's text is
//! not bounded).
//!
//! What a wait answers holds no application's words: a window's record
//! (marked `contentOrigin`, as `list_windows` marks it), how many elements
//! showed the text, the tree's revision, how long it waited and how often
//! it looked. A wait that ends at its deadline is an error naming the
//! cause `timeout`, with the same figures.

use std::time::{Duration, Instant};

use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::contracts::labels::normalise;
use serde_json::{Value, json};

use super::Refusal;

/// How often `wait_for_window` looks (upstream's figure).
const WINDOW_POLL: Duration = Duration::from_millis(250);
/// The longest wait (upstream's bound).
const MOST_MS: u64 = 120_000;
/// The longest regular expression `wait_for_text` compiles, in bytes of
/// its compiled program. What a pattern costs over an application's text
/// is not bounded by it (a short pattern can be slow on a long value), so
/// the matching runs apart from the server's state, on a thread of the
/// wait's own: it holds up only that wait, which may then end past its
/// deadline by the match's time.
const REGEX_SIZE: usize = 1 << 16;

/// The observation a wait polls, whose rule it follows and which a
/// desktop must perform for the wait to run there.
pub(super) fn polled(name: &str) -> Option<&'static str> {
    match name {
        tool::WAIT_FOR_WINDOW => Some(tool::LIST_WINDOWS),
        tool::WAIT_FOR_TEXT => Some(tool::FIND_ELEMENT),
        tool::WAIT_FOR_STABLE => Some(tool::GET_UI_TREE),
        _ => None,
    }
}

fn invalid(message: impl Into<String>) -> Refusal {
    Refusal::new("invalid_arguments", message)
}

/// Which window a text or stability wait looks at.
enum Window {
    /// By its id.
    Id(u64),
    /// The one window of an application (with a title holding `title`).
    Of { app: String, title: Option<String> },
}

/// How a text is matched against what the elements show.
enum TextRule {
    /// Equal to an element's text, by the label rule's normalisation.
    Exact(String),
    /// Inside an element's text, so normalised.
    Contains(String),
    /// Found by a case-insensitive regular expression.
    Regex(Box<regex::Regex>),
}

enum Condition {
    Window {
        app: String,
        title: Option<String>,
        gone: bool,
    },
    Text {
        window: Window,
        rule: TextRule,
        gone: bool,
    },
    Stable {
        window: Window,
        quiet: Duration,
        last: Option<(Value, Instant)>,
    },
}

/// One wait in progress: what it waits for, until when, and what it saw.
pub(super) struct Wait {
    tool: &'static str,
    /// The session the wait runs in: each look checks it may still run.
    session_id: String,
    condition: Condition,
    timeout: Duration,
    poll: Duration,
    started: Instant,
    polls: u64,
}

/// What one look found.
pub(super) enum Look {
    /// The condition holds: the wait's answer.
    Done(Value),
    /// Not yet: look again after this long.
    Again(Duration),
    /// The texts of window `.0`, read: to be matched (by
    /// [`Wait::judge_texts`]) with the server's state free, since a
    /// pattern's cost over an application's text is not bounded.
    Texts(u64, Vec<String>),
}

fn text(args: &Value, key: &str) -> Result<Option<String>, Refusal> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!("arguments.{key} must be a string"))),
    }
}

fn flag(args: &Value, key: &str) -> Result<bool, Refusal> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(format!("arguments.{key} must be a boolean"))),
    }
}

fn millis(args: &Value, key: &str, least: u64, default: u64) -> Result<Duration, Refusal> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(Duration::from_millis(default)),
        Some(v) => v
            .as_u64()
            .filter(|ms| (least..=MOST_MS).contains(ms))
            .map(Duration::from_millis)
            .ok_or_else(|| {
                invalid(format!(
                    "arguments.{key} must be an integer from {least} to {MOST_MS} (milliseconds)"
                ))
            }),
    }
}

/// The arguments that name the window a text or stability wait looks at.
const WINDOW_ARGS: &[&str] = &["target_app", "window_id", "title"];

/// Refuses what this server does not take of upstream's shape: any
/// argument not in `known` or `also`.
fn refuse_unknown(args: &Value, name: &str, known: &[&str], also: &[&str]) -> Result<(), Refusal> {
    let Some(map) = args.as_object() else {
        return Err(invalid(format!("{name}'s arguments must be an object")));
    };
    let known: Vec<&str> = known.iter().chain(also).copied().collect();
    match map.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(invalid(format!(
            "{name} does not take arguments.{key} on this server (it takes {})",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

fn window(args: &Value, name: &str) -> Result<Window, Refusal> {
    if let Some(id) = args.get("window_id") {
        return id
            .as_u64()
            .map(Window::Id)
            .ok_or_else(|| invalid("arguments.window_id must be an integer"));
    }
    match text(args, "target_app")? {
        Some(app) => Ok(Window::Of {
            app,
            title: text(args, "title")?.map(|t| normalise(&t)),
        }),
        None => Err(invalid(format!(
            "{name} needs the window it looks at: window_id, or target_app (and title)"
        ))),
    }
}

impl Wait {
    /// The wait `name` asks for with `args` in session `session_id`, or
    /// `None` when `name` is not a wait.
    pub(super) fn parse(
        name: &str,
        args: &Value,
        session_id: &str,
    ) -> Result<Option<Self>, Refusal> {
        let (tool, condition, poll) = match name {
            tool::WAIT_FOR_WINDOW => {
                refuse_unknown(
                    args,
                    name,
                    &["target_app", "title", "gone", "timeout_ms"],
                    &[],
                )?;
                let app = text(args, "target_app")?
                    .ok_or_else(|| invalid("wait_for_window needs target_app (a string)"))?;
                let condition = Condition::Window {
                    app,
                    title: text(args, "title")?.map(|t| normalise(&t)),
                    gone: flag(args, "gone")?,
                };
                (tool::WAIT_FOR_WINDOW, condition, WINDOW_POLL)
            }
            tool::WAIT_FOR_TEXT => {
                refuse_unknown(
                    args,
                    name,
                    &["text", "match", "gone", "timeout_ms", "poll_ms"],
                    WINDOW_ARGS,
                )?;
                let wanted = text(args, "text")?
                    .filter(|t| !t.trim().is_empty())
                    .ok_or_else(|| invalid("wait_for_text needs text (a string, not blank)"))?;
                let rule = match text(args, "match")?.as_deref() {
                    None | Some("contains") => TextRule::Contains(normalise(&wanted)),
                    Some("exact") => TextRule::Exact(normalise(&wanted)),
                    Some("regex") => TextRule::Regex(Box::new(
                        regex::RegexBuilder::new(&wanted)
                            .case_insensitive(true)
                            .size_limit(REGEX_SIZE)
                            .build()
                            .map_err(|_| {
                                invalid("arguments.text is not a regular expression this server compiles (or it is too large)")
                            })?,
                    )),
                    Some(_) => {
                        return Err(invalid(
                            "arguments.match must be exact, contains or regex",
                        ));
                    }
                };
                let condition = Condition::Text {
                    window: window(args, name)?,
                    rule,
                    gone: flag(args, "gone")?,
                };
                (
                    tool::WAIT_FOR_TEXT,
                    condition,
                    millis(args, "poll_ms", 200, 500)?,
                )
            }
            tool::WAIT_FOR_STABLE => {
                refuse_unknown(
                    args,
                    name,
                    &["quiet_ms", "timeout_ms", "poll_ms"],
                    WINDOW_ARGS,
                )?;
                let condition = Condition::Stable {
                    window: window(args, name)?,
                    quiet: millis(args, "quiet_ms", 50, 800)?,
                    last: None,
                };
                (
                    tool::WAIT_FOR_STABLE,
                    condition,
                    millis(args, "poll_ms", 50, 250)?,
                )
            }
            _ => return Ok(None),
        };
        Ok(Some(Self {
            tool,
            session_id: session_id.to_owned(),
            condition,
            timeout: millis(args, "timeout_ms", 0, 10_000)?,
            poll,
            started: Instant::now(),
            polls: 0,
        }))
    }

    fn figures(&self) -> (u64, u64) {
        let waited = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        (waited, self.polls)
    }

    /// The answer of a wait whose condition holds, with `fields`.
    fn done(&self, fields: Value) -> Look {
        let (waited, polls) = self.figures();
        let mut answer = json!({ "matched": true, "waitedMs": waited, "polls": polls });
        if let (Value::Object(map), Value::Object(fields)) = (&mut answer, fields) {
            map.extend(fields);
        }
        Look::Done(answer)
    }

    /// After a look that did not find the condition: again after the poll
    /// interval (no later than the deadline), or the deadline's refusal.
    fn again(&self) -> Result<Look, Refusal> {
        let elapsed = self.started.elapsed();
        if elapsed >= self.timeout {
            let (waited, polls) = self.figures();
            return Err(Refusal::with_details(
                "execution_failed",
                format!(
                    "{} reached its timeout of {} ms without its condition",
                    self.tool,
                    self.timeout.as_millis()
                ),
                json!({
                    "tool": self.tool,
                    "cause": "timeout",
                    "error": "timeout",
                    "waitedMs": waited,
                    "polls": polls,
                    "timeoutMs": u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
                }),
            ));
        }
        Ok(Look::Again(self.poll.min(self.timeout - elapsed)))
    }
}

impl Wait {
    /// Matches the texts window `id` shows (read by a look) against the
    /// wait's rule: its answer, or when to look again. Run with the
    /// server's state free.
    pub(super) fn judge_texts(&mut self, id: u64, texts: &[String]) -> Result<Look, Refusal> {
        let Condition::Text { rule, gone, .. } = &self.condition else {
            return self.again();
        };
        let count = texts
            .iter()
            .filter(|t| match rule {
                TextRule::Exact(w) => normalise(t) == *w,
                TextRule::Contains(w) => normalise(t).contains(w.as_str()),
                TextRule::Regex(r) => r.is_match(t),
            })
            .count();
        match (count, *gone) {
            (n, false) if n > 0 => Ok(self.done(json!({ "windowId": id, "elements": n }))),
            (0, true) => Ok(self.done(json!({ "windowId": id, "gone": true }))),
            _ => self.again(),
        }
    }
}

/// A desktop's refusal during a look, as an observation's failure is
/// answered: its code as the cause, never its message (which may hold an
/// application's words). The deadline's own refusal stands as it is.
pub(super) fn failed(tool: &str, error: Refusal) -> Refusal {
    if error.code == "execution_failed" {
        return error;
    }
    Refusal::with_details(
        "execution_failed",
        "observation handler returned an error",
        json!({ "tool": tool, "cause": error.code }),
    )
}

mod look;
