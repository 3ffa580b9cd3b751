//! The planner: a model (or a script) that says what to do next.
//!
//! A planner sees the request, the latest observations (images included),
//! the schema of what it may propose and what happened so far. It answers
//! in one of three forms: the structured output the schema describes, an
//! OpenAI computer-use call, or an Anthropic computer tool call. Whatever
//! the form, the answer is only words until the loop has checked it: a
//! planner holds no session, no runtime and no identity.

use std::future::Future;
use std::sync::Mutex;

use serde_json::Value;

use super::allowed::AllowedActions;
use crate::ComputerUseError;
use crate::runtime::Observations;

/// What a planner is shown for one step.
#[derive(Debug, Clone, Copy)]
pub struct PlanContext<'a> {
    /// The person's request, as the host received it.
    pub request: &'a str,
    /// The latest observation round (capabilities, a visual frame with its
    /// images, a semantic frame).
    pub observations: &'a Observations,
    /// What may be proposed; [`AllowedActions::schema`] is the JSON Schema
    /// to hand a model.
    pub allowed: &'a AllowedActions,
    /// What happened so far, oldest first.
    pub history: &'a [StepRecord],
}

/// A planner's answer, in the form its model speaks.
#[derive(Debug, Clone, PartialEq)]
pub enum PlanOutput {
    /// Structured output following [`AllowedActions::schema`]:
    /// `{kind, tool, arguments, mode, data_labels, summary}`.
    Structured(Value),
    /// An OpenAI `computer_call` item: `{action: {type, ...},
    /// pending_safety_checks: [...]}`.
    OpenAi(Value),
    /// An Anthropic computer tool `input`: `{action, coordinate, ...}`.
    Anthropic(Value),
}

/// One step of the loop, as planners see it afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepRecord {
    /// The step's number, from 1.
    pub step: usize,
    /// The tool it ran, when it got that far.
    pub tool: Option<String>,
    /// What came of it: `verified`, `committed_unverified`, `failed`,
    /// `observed`, `waited`, `refused: <class>`, ...
    pub outcome: String,
}

/// A model (or a script) that plans the next step.
pub trait Planner: Send + Sync {
    /// The next step for `context`.
    fn plan(
        &self,
        context: PlanContext<'_>,
    ) -> impl Future<Output = Result<PlanOutput, ComputerUseError>> + Send;
}

/// A recorded transcript, replayed: each call answers the next output.
/// Running out of outputs is an error, not an invented `done`.
#[derive(Debug)]
pub struct ScriptedPlanner {
    outputs: Mutex<std::collections::VecDeque<PlanOutput>>,
}

impl ScriptedPlanner {
    /// Replays `outputs` in order.
    pub fn new(outputs: impl IntoIterator<Item = PlanOutput>) -> Self {
        Self {
            outputs: Mutex::new(outputs.into_iter().collect()),
        }
    }

    /// Replays a JSON transcript: an array of `{"structured": ...}`,
    /// `{"openai": ...}` or `{"anthropic": ...}` entries.
    pub fn from_transcript(transcript: &Value) -> Result<Self, ComputerUseError> {
        let entries = transcript
            .as_array()
            .ok_or_else(|| ComputerUseError::InvalidField {
                object: "Transcript",
                field: "entries",
                expected: "an array of planner outputs".into(),
                actual: transcript.to_string().chars().take(80).collect(),
            })?;
        let outputs: Vec<PlanOutput> = entries
            .iter()
            .map(|entry| match entry {
                Value::Object(map) if map.len() == 1 => {
                    let (form, output) = map
                        .iter()
                        .next()
                        .map(|(k, v)| (k.as_str(), v.clone()))
                        .unwrap_or(("", Value::Null));
                    match form {
                        "structured" => Ok(PlanOutput::Structured(output)),
                        "openai" => Ok(PlanOutput::OpenAi(output)),
                        "anthropic" => Ok(PlanOutput::Anthropic(output)),
                        other => Err(other.to_owned()),
                    }
                }
                other => Err(other.to_string()),
            })
            .collect::<Result<_, _>>()
            .map_err(|actual| ComputerUseError::InvalidField {
                object: "Transcript",
                field: "entries",
                expected: "entries of one key: structured, openai or anthropic".into(),
                actual: actual.chars().take(80).collect(),
            })?;
        Ok(Self::new(outputs))
    }
}

impl Planner for ScriptedPlanner {
    async fn plan(&self, _context: PlanContext<'_>) -> Result<PlanOutput, ComputerUseError> {
        self.outputs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()
            .ok_or_else(|| ComputerUseError::InvalidRequest {
                field: "transcript".into(),
                message: "the recorded transcript has no more outputs".into(),
            })
    }
}
