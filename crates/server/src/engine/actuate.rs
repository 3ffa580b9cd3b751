//! The server's side of the desktop: what upstream asks of its session and
//! transaction hooks, answered by the desktop backend. Target
//! revalidation, the accessibility sensitivity of a semantic edit, running
//! a tool into a tool result, the independent effect check, and the
//! cursor-and-focus capture and restore around a mutation.

use adk_computer_use::contracts::catalogue::tool;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::Refusal;
use super::backend::{ApplyError, EffectCheck, PointerAndFocus, Revalidation};
use super::preview::ActionRequest;
use super::state::State;
use super::wire::{now, parse_time, stamp, uuid};
use adk_computer_use::contracts::TargetEvidence;

/// What a tool answered: upstream's tool result.
pub(super) struct ToolResult {
    /// `structuredContent`.
    pub structured: Value,
    /// Image blocks (base64, MIME type).
    pub images: Vec<(String, String)>,
}

impl ToolResult {
    /// The content blocks: the structured part as text, then the images.
    pub(super) fn content(&self) -> Vec<Value> {
        let mut content = vec![json!({ "type": "text", "text": self.structured.to_string() })];
        for (data, mime) in &self.images {
            content.push(json!({ "type": "image", "data": data, "mimeType": mime }));
        }
        content
    }

    /// The result as a receipt stores it.
    pub(super) fn to_value(&self) -> Value {
        json!({ "content": self.content(), "structuredContent": self.structured })
    }
}

/// The cursor and focus before a mutation.
pub(super) type Snapshot = PointerAndFocus;

/// The target evidence as the desktop reads it.
pub(super) fn evidence(target: &Value) -> Option<TargetEvidence> {
    serde_json::from_value(target.clone()).ok()
}

fn window_of(target: &Value) -> Option<u64> {
    target.get("windowId").and_then(Value::as_u64)
}

/// The desktop as an action reaches it, without the server's state: the
/// checks and the effect the server runs with its lock free, so a slow
/// application holds up only the call that reaches it (see
/// [`super::DesktopBackend`]).
#[derive(Clone)]
pub(super) struct Desk {
    pub(in crate::engine) desktop: std::sync::Arc<dyn super::DesktopBackend>,
    /// How old target evidence may be before the effect.
    max_target_age_ms: u64,
}

/// What the desktop says of a request before the server's state is taken
/// for it: the sensitivity of the fields a semantic edit writes (an
/// accessibility walk of the target window, which a slow application can
/// make long).
pub(super) struct Read {
    /// As [`Desk::sensitivity`] answers it.
    pub(super) sensitivity: Option<Value>,
}

impl Desk {
    /// Reads what the preview of `args` asks of the desktop.
    pub(super) fn read(&self, args: &Value) -> Read {
        Read {
            sensitivity: self.sensitivity(&ActionRequest::parse(args)),
        }
    }
}

/// The desktop's own questions (`prepare`, `file_holds_now`, ...), asked
/// through the desk.
impl std::ops::Deref for Desk {
    type Target = dyn super::DesktopBackend;

    fn deref(&self) -> &Self::Target {
        &*self.desktop
    }
}

impl State {
    /// The desktop, for work done without this state held.
    pub(super) fn desk(&self) -> Desk {
        Desk {
            desktop: std::sync::Arc::clone(&self.desktop),
            max_target_age_ms: self.config.max_target_age_ms,
        }
    }
}

impl Desk {
    /// Fails `stale_target` when the evidence is too old or no longer
    /// describes the desktop.
    pub(super) fn revalidate_target(
        &self,
        target: &Value,
        at: OffsetDateTime,
        round: Revalidation,
    ) -> Result<(), Refusal> {
        let observation = json!({ "observationId": target.get("observationId") });
        let captured = target
            .get("capturedAt")
            .and_then(Value::as_str)
            .and_then(parse_time);
        let limit = i128::from(self.max_target_age_ms);
        // The evidence's age bounds how long before the effect it may have
        // been taken; after the effect its age says nothing.
        if round != Revalidation::AfterEffect
            && captured.is_some_and(|c| (at - c).whole_milliseconds() > limit)
        {
            return Err(Refusal::with_details(
                "stale_target",
                "target evidence is too old",
                observation,
            ));
        }
        let changed = match evidence(target) {
            None => Some(json!({ "changed": "unknown", "what": "the evidence could not be read" })),
            Some(t) => self.desktop.what_changed(&t, round),
        };
        if let Some(changed) = changed {
            let mut details = observation;
            if let (Value::Object(map), Value::Object(changed)) = (&mut details, changed) {
                map.extend(changed);
            }
            return Err(Refusal::with_details(
                "stale_target",
                "target evidence no longer matches the desktop",
                details,
            ));
        }
        Ok(())
    }

    /// What the accessibility tree says of the fields a semantic edit
    /// writes, judged as upstream judges it: conclusive only when every
    /// field was found once.
    pub(super) fn sensitivity(&self, request: &ActionRequest) -> Option<Value> {
        let fill = request.tool == tool::FILL_FORM;
        if request.tool != tool::SET_VALUE && !fill {
            return None;
        }
        let fields: Vec<&Value> = match request.args.get("fields").and_then(Value::as_array) {
            Some(fields) if fill => fields.iter().collect(),
            _ => vec![&request.args],
        };
        let expected = match request.args.get("fields").and_then(Value::as_array) {
            _ if !fill => 1,
            Some(fields) if (1..=100).contains(&fields.len()) => fields.len(),
            _ => 0,
        };
        let mut signals: Vec<&str> = Vec::new();
        let mut checked = 0;
        let mut unknown = false;
        let window = request
            .target
            .as_ref()
            .and_then(|t| Some((t.get("appId")?.as_str()?, window_of(t)?)))
            .ok_or("invalid_field")
            .and_then(|(app, window)| self.desktop.elements(app, window));
        let source = if window.is_ok() {
            "accessibility"
        } else {
            "unavailable"
        };
        match window {
            // Why there is nothing to check, as the desktop says it.
            Err(cause) => {
                signals.push(cause);
                unknown = true;
            }
            Ok(elements) => {
                for field in fields {
                    let id = field.get("element_id").and_then(Value::as_str);
                    let role = field.get("role").and_then(Value::as_str);
                    let label = field.get("label").and_then(Value::as_str);
                    let found: Vec<_> = match (id, role, label) {
                        // Every criterion given must hold: an id beside a
                        // role and label cannot steer the check to another
                        // element than the one they name.
                        (Some(id), role, label) => elements
                            .iter()
                            .filter(|e| {
                                e.id == id
                                    && role.is_none_or(|r| e.role == r)
                                    && label.is_none_or(|l| e.label == l)
                            })
                            .collect(),
                        // The one label rule every element action resolves
                        // by: the exact matches, else every partial one (more
                        // than one is ambiguous).
                        (None, Some(role), Some(label)) => {
                            let wanted = adk_computer_use::contracts::labels::normalise(label);
                            adk_computer_use::contracts::labels::search(
                                elements
                                    .iter()
                                    .filter(|e| e.role == role)
                                    .filter_map(|e| e.label_match(&wanted).map(|m| (e, m))),
                            )
                            .into_iter()
                            .map(|(e, _)| e)
                            .collect()
                        }
                        _ => Vec::new(),
                    };
                    match found.as_slice() {
                        [] => {
                            signals.push("element_not_found");
                            unknown = true;
                        }
                        [element] => {
                            checked += 1;
                            if element.secure {
                                signals.push("secure_role");
                            }
                            if super::policy::names_a_secret(&element.role)
                                || super::policy::names_a_secret(&element.label)
                            {
                                signals.push("sensitive_label");
                            }
                        }
                        _ => {
                            signals.push("ambiguous_match");
                            unknown = true;
                        }
                    }
                }
            }
        }
        signals.sort_unstable();
        signals.dedup();
        let sensitive = signals
            .iter()
            .any(|s| *s == "secure_role" || *s == "sensitive_label");
        let reported = if sensitive {
            "sensitive"
        } else if unknown || checked != expected {
            "unknown"
        } else {
            "non_sensitive"
        };
        let conclusive = checked == expected && expected > 0 && reported != "unknown";
        let signals: Vec<&str> = match (signals.is_empty(), conclusive) {
            (false, _) | (true, true) => signals,
            (true, false) => vec!["native_signal_unavailable"],
        };
        Some(json!({
            "assessment": if conclusive { reported } else { "unknown" },
            "source": source,
            "signals": signals,
            "fieldsChecked": checked,
            "observedAt": stamp(now()),
        }))
    }

    /// Runs an observation tool. `Err` is a tool result with `isError`.
    pub(super) fn observe(&self, tool: &str, args: &Value) -> Result<ToolResult, Refusal> {
        let observation_id = uuid();
        let mut images = Vec::new();
        let mut output = match tool {
            tool::SNAPSHOT => {
                let window = args.get("target_window_id").and_then(Value::as_u64);
                let frame = self.desktop.snapshot(window)?;
                images.push((frame.png_base64, "image/png".to_owned()));
                let mut fields = self.desktop.snapshot_fields(window);
                if let Value::Object(map) = &mut fields {
                    map.insert("observationId".into(), json!(observation_id));
                    map.insert("screenshotHash".into(), json!(frame.digest));
                }
                fields
            }
            tool::GET_UI_TREE => {
                let max_depth = match args.get("max_depth") {
                    None => None,
                    Some(depth) => Some(
                        depth
                            .as_u64()
                            .filter(|d| (1..=20).contains(d))
                            .and_then(|d| usize::try_from(d).ok())
                            .ok_or_else(|| {
                                Refusal::new(
                                    "invalid_arguments",
                                    "get_ui_tree's max_depth must be an integer from 1 to 20",
                                )
                            })?,
                    ),
                };
                self.desktop.ui_tree(
                    args.get("app_id").and_then(Value::as_str),
                    args.get("window_id").and_then(Value::as_u64),
                    max_depth,
                )?
            }
            tool::FIND_ELEMENT | tool::GET_FOCUSED_ELEMENT => {
                self.desktop.observe_elements(tool, args)?
            }
            tool::LIST_WINDOWS => self.desktop.list_windows()?,
            tool::READ_CLIPBOARD => json!({ "text": self.desktop.read_clipboard()? }),
            other => {
                return Err(Refusal::new(
                    "execution_failed",
                    format!("{other} is not an observation"),
                ));
            }
        };
        if let Value::Object(map) = &mut output {
            map.entry("observationId").or_insert(json!(observation_id));
        }
        Ok(ToolResult {
            structured: output,
            images,
        })
    }

    /// Performs a mutating tool. `Err` is a tool result with `isError`.
    pub(super) fn mutate(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&Value>,
    ) -> Result<ToolResult, ApplyError> {
        let target = target.and_then(evidence);
        let output = self.desktop.apply(tool, args, target.as_ref())?;
        Ok(ToolResult {
            structured: output,
            images: Vec::new(),
        })
    }

    /// The server's own check of the effect.
    pub(super) fn verify_effect(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&Value>,
    ) -> EffectCheck {
        let target = target.and_then(evidence);
        self.desktop
            .verify(tool, args, postcondition, target.as_ref())
    }

    /// The cursor and focus, before a mutation.
    pub(super) fn capture(&self) -> Snapshot {
        self.desktop.capture()
    }

    /// Puts the cursor and focus back where they were.
    pub(super) fn restore(&self, snapshot: Snapshot) -> Value {
        self.desktop.restore(snapshot)
    }
}
