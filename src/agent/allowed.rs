//! What a model may propose, and the strict check of what it did propose.
//!
//! The model is handed a JSON Schema generated from the runtime's discovered
//! capabilities: a tool among those the runtime can run, a mode among that
//! tool's modes, data labels from the protocol's list, and the tool's own
//! arguments. Nothing else: identity, scope, session, agent, lease,
//! approval and action ids are the host's and the chain's, and an output
//! that names any of them is refused with the field named. Only an output
//! that passes becomes a [`ProposedAction`].

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::ComputerUseError;
use crate::contracts::{DataLabel, ExecutionCapability, ExecutionMode};
use crate::runtime::{ProposedAction, ToolOffer};

/// The object name planner refusals carry.
const OBJECT: &str = "PlannerOutput";

/// Fields a model output may hold, and nothing else.
const FIELDS: [&str; 6] = [
    "kind",
    "tool",
    "arguments",
    "mode",
    "data_labels",
    "summary",
];

/// Longest `summary` accepted, in bytes.
const MAX_SUMMARY: usize = 4096;

/// The data labels a model may attach (the protocol's vocabulary).
const LABELS: [&str; 6] = DataLabel::NAMES;

/// One step a planner asks for, after it passed the check.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedStep {
    /// Govern this action next.
    Act(Box<ProposedAction>),
    /// The request is done; `summary` says why.
    Done {
        /// The planner's closing words.
        summary: String,
    },
}

/// The actions a model may propose: per tool, the modes it runs in and, when
/// the server describes them, the JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AllowedActions {
    tools: BTreeMap<String, AllowedTool>,
}

#[derive(Debug, Clone, PartialEq)]
struct AllowedTool {
    modes: Vec<ExecutionMode>,
    arguments: Option<Value>,
}

fn refuse(field: &str, expected: impl Into<String>, actual: impl Into<String>) -> ComputerUseError {
    ComputerUseError::InvalidField {
        object: OBJECT,
        field: leak_free(field),
        expected: expected.into(),
        actual: actual.into(),
    }
}

/// Field names are `'static` in errors; the model's own keys are reported
/// through `actual`, never as a field name.
fn leak_free(field: &str) -> &'static str {
    match field {
        "kind" => "kind",
        "tool" => "tool",
        "arguments" => "arguments",
        "mode" => "mode",
        "data_labels" => "data_labels",
        "summary" => "summary",
        _ => "(unknown field)",
    }
}

fn clip(text: &str) -> String {
    text.chars().take(120).collect()
}

impl AllowedActions {
    /// The actions of the discovered capabilities: each capability's
    /// operation becomes a tool, with its modes other than `shadow` (a model
    /// proposes actions; the chain observes by itself).
    pub fn from_capabilities<'a>(
        capabilities: impl IntoIterator<Item = &'a ExecutionCapability>,
    ) -> Self {
        let mut allowed = Self::default();
        for capability in capabilities {
            let modes: Vec<ExecutionMode> = capability
                .supported_modes
                .iter()
                .copied()
                .filter(|m| *m != ExecutionMode::Shadow)
                .collect();
            if modes.is_empty() {
                continue;
            }
            let entry = allowed
                .tools
                .entry(capability.operation.clone())
                .or_insert_with(|| AllowedTool {
                    modes: Vec::new(),
                    arguments: None,
                });
            for mode in modes {
                if !entry.modes.contains(&mode) {
                    entry.modes.push(mode);
                }
            }
        }
        allowed
    }

    /// What a model may propose among the tools a runtime offers: each
    /// tool in its offered modes, with its argument schema.
    pub fn from_offers<'a>(offers: impl IntoIterator<Item = &'a ToolOffer>) -> Self {
        offers.into_iter().fold(Self::default(), |allowed, offer| {
            allowed.allow(&offer.tool, &offer.modes, offer.arguments.clone())
        })
    }

    /// Adds (or narrows) `tool` to `modes`, with the JSON Schema of its
    /// arguments when one is known.
    pub fn allow(mut self, tool: &str, modes: &[ExecutionMode], arguments: Option<Value>) -> Self {
        self.tools.insert(
            tool.to_owned(),
            AllowedTool {
                modes: modes.to_vec(),
                arguments,
            },
        );
        self
    }

    /// Refuses `action` unless its tool is allowed in its mode (for
    /// actions mapped from a model's computer-use format).
    pub fn permits(&self, action: &ProposedAction) -> Result<(), ComputerUseError> {
        let tool = self.tools.get(&action.tool).ok_or_else(|| {
            refuse(
                "tool",
                format!("one of {}", self.tools().collect::<Vec<_>>().join(", ")),
                clip(&action.tool),
            )
        })?;
        if !tool.modes.contains(&action.mode) {
            return Err(refuse(
                "mode",
                format!(
                    "a mode {} runs in ({})",
                    action.tool,
                    modes_text(&tool.modes)
                ),
                action.mode.as_str(),
            ));
        }
        Ok(())
    }

    /// Whether nothing may be proposed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The tools a model may propose.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The JSON Schema handed to the model (OpenAI's strict structured
    /// output accepts it: every property required, nothing additional).
    pub fn schema(&self) -> Value {
        let tools: Vec<&str> = self.tools().collect();
        let mut modes: Vec<&str> = self
            .tools
            .values()
            .flat_map(|t| t.modes.iter().map(|m| m.as_str()))
            .collect();
        modes.sort_unstable();
        modes.dedup();
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": FIELDS,
            "properties": {
                "kind": { "type": "string", "enum": ["act", "done"] },
                "tool": { "type": ["string", "null"], "enum": tools.iter().map(|t| json!(t)).chain([Value::Null]).collect::<Vec<_>>() },
                "arguments": { "type": ["object", "null"] },
                "mode": { "type": ["string", "null"], "enum": modes.iter().map(|m| json!(m)).chain([Value::Null]).collect::<Vec<_>>() },
                "data_labels": { "type": "array", "items": { "type": "string", "enum": LABELS } },
                "summary": { "type": "string", "maxLength": MAX_SUMMARY },
            },
        })
    }

    /// Checks one model output against the schema, strictly: an unknown
    /// field, a tool or mode outside the allowed ones, arguments that are
    /// not an object (or fail the tool's argument schema's required keys),
    /// an unknown label: each is refused, naming the field. What passes
    /// becomes a step; the action carries no id, identity or scope, which
    /// the chain supplies.
    pub fn check(&self, output: &Value) -> Result<PlannedStep, ComputerUseError> {
        let Value::Object(fields) = output else {
            return Err(refuse("kind", "a JSON object", clip(&output.to_string())));
        };
        if let Some(extra) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(ComputerUseError::InvalidField {
                object: OBJECT,
                field: "(unknown field)",
                expected: format!("only {}", FIELDS.join(", ")),
                actual: clip(extra),
            });
        }
        let text = |name: &str| fields.get(name).and_then(Value::as_str);
        let summary = match fields.get("summary") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) if s.len() <= MAX_SUMMARY => s.clone(),
            Some(other) => {
                return Err(refuse(
                    "summary",
                    format!("text of at most {MAX_SUMMARY} bytes"),
                    clip(&other.to_string()),
                ));
            }
        };
        match text("kind") {
            Some("done") => return Ok(PlannedStep::Done { summary }),
            Some("act") => {}
            other => return Err(refuse("kind", "\"act\" or \"done\"", format!("{other:?}"))),
        }
        let tool_name =
            text("tool").ok_or_else(|| refuse("tool", "one of the allowed tools", "none"))?;
        let tool = self.tools.get(tool_name).ok_or_else(|| {
            refuse(
                "tool",
                format!("one of {}", self.tools().collect::<Vec<_>>().join(", ")),
                clip(tool_name),
            )
        })?;
        let mode = match text("mode") {
            Some(mode) => tool
                .modes
                .iter()
                .copied()
                .find(|m| m.as_str() == mode)
                .ok_or_else(|| {
                    refuse(
                        "mode",
                        format!("a mode {tool_name} runs in ({})", modes_text(&tool.modes)),
                        clip(mode),
                    )
                })?,
            None => *tool
                .modes
                .first()
                .ok_or_else(|| refuse("mode", "a mode", "none"))?,
        };
        let arguments = match fields.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::Object(map)) => Value::Object(map.clone()),
            Some(other) => return Err(refuse("arguments", "an object", clip(&other.to_string()))),
        };
        if let Some(key) = arguments.as_object().and_then(|map| {
            map.keys()
                .find(|k| super::formats::FORBIDDEN_ARGUMENTS.contains(&k.as_str()))
        }) {
            return Err(refuse(
                "arguments",
                "the tool's own arguments (no targeting keys, no ids of the chain)",
                clip(key),
            ));
        }
        // The schema the server described, or the chain's own for a known
        // low-level tool (which the preview would enforce anyway).
        if let Some(schema) = tool
            .arguments
            .as_ref()
            .or_else(|| crate::runtime::known_schema(tool_name))
        {
            crate::runtime::check_arguments(schema, &arguments, OBJECT)?;
        }
        let labels = match fields.get("data_labels") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .filter(|l| LABELS.contains(l))
                        .and_then(|l| serde_json::from_value::<DataLabel>(json!(l)).ok())
                        .ok_or_else(|| {
                            refuse(
                                "data_labels",
                                format!("labels among {}", LABELS.join(", ")),
                                clip(&item.to_string()),
                            )
                        })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(refuse(
                    "data_labels",
                    "an array of labels",
                    clip(&other.to_string()),
                ));
            }
        };
        Ok(PlannedStep::Act(Box::new(
            ProposedAction::new(tool_name, arguments, mode).with_data_labels(labels),
        )))
    }
}

fn modes_text(modes: &[ExecutionMode]) -> String {
    modes
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
