//! A planner over any OpenAI-compatible chat completions endpoint, with
//! structured output (feature `openai`).
//!
//! The model is sent the request, the history, the latest screenshot (as an
//! image) and the semantic frame, and is held to [`super::AllowedActions::schema`]
//! with `response_format: json_schema` (strict). Its answer is returned as
//! [`super::PlanOutput::Structured`]: the loop still checks it, since a server that
//! ignores the schema must not be trusted to have applied it. The API key
//! stays in this client: it is sent as a bearer header only, and never
//! appears in an error, a log or the session's state.

use std::time::Duration;

use serde_json::{Value, json};

use super::planner::{PlanContext, PlanOutput, Planner};
use crate::ComputerUseError;

/// The most bytes of one answer read.
const MAX_BODY: usize = 4 * 1024 * 1024;

/// The default endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Where the model is and who pays for it.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// The API's base URL (`…/v1`); the client posts to `chat/completions`.
    pub base_url: String,
    /// The bearer key.
    api_key: String,
    /// The model name.
    pub model: String,
    /// How long one completion may take.
    pub timeout: Duration,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &"<redacted>")
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl OpenAiConfig {
    /// An endpoint, key and model given by the host.
    pub fn new(
        base_url: impl Into<String>,
        api_key: impl Into<String>,
        model: impl Into<String>,
    ) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: api_key.into(),
            model: model.into(),
            timeout: Duration::from_secs(60),
        }
    }

    /// From `OPENAI_BASE_URL` (default [`DEFAULT_BASE_URL`]),
    /// `OPENAI_API_KEY` and `OPENAI_MODEL`; a missing key or model is
    /// refused, naming the variable.
    pub fn from_env() -> Result<Self, ComputerUseError> {
        let var = |name: &str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| ComputerUseError::InvalidRequest {
                    field: name.to_owned(),
                    message: format!("set {name} to use the model planner"),
                })
        };
        let base = std::env::var("OPENAI_BASE_URL").unwrap_or_else(|_| DEFAULT_BASE_URL.to_owned());
        Ok(Self::new(
            base,
            var("OPENAI_API_KEY")?,
            var("OPENAI_MODEL")?,
        ))
    }
}

/// The planner: one chat completion per step.
#[derive(Debug, Clone)]
pub struct OpenAiPlanner {
    config: OpenAiConfig,
    http: reqwest::Client,
}

fn failed(message: impl Into<String>) -> ComputerUseError {
    ComputerUseError::Transport {
        operation: "chat/completions".into(),
        message: message.into(),
    }
}

impl OpenAiPlanner {
    /// A planner over `config`'s endpoint.
    pub fn new(config: OpenAiConfig) -> Result<Self, ComputerUseError> {
        let http = reqwest::Client::builder()
            .timeout(config.timeout)
            .build()
            .map_err(|err| failed(format!("could not build the HTTP client: {err}")))?;
        Ok(Self { config, http })
    }

    /// A server's words, clipped, with the key taken out should it echo it.
    fn scrub(&self, text: &str) -> String {
        let clipped: String = text.chars().take(300).collect();
        if self.config.api_key.is_empty() {
            clipped
        } else {
            clipped.replace(&self.config.api_key, "<redacted>")
        }
    }

    /// The request body for `context` (what is sent, minus the key).
    pub fn body(&self, context: &PlanContext<'_>) -> Value {
        let history: Vec<Value> = context
            .history
            .iter()
            .map(|s| json!({ "step": s.step, "tool": s.tool, "outcome": s.outcome }))
            .collect();
        let mut content = vec![json!({
            "type": "text",
            "text": json!({
                "request": context.request,
                "history": history,
                "windows": context.observations.semantic.structured,
            })
            .to_string(),
        })];
        if let Some(image) = context.observations.visual.images.first() {
            content.push(json!({
                "type": "image_url",
                "image_url": { "url": format!("data:{};base64,{}", image.mime_type, image.data) },
            }));
        }
        json!({
            "model": self.config.model,
            "messages": [
                { "role": "system", "content": "You operate a desktop for a person, one step at a time. Answer with the next step as the schema says: kind \"act\" with a tool, its arguments, a mode and data labels, or kind \"done\" with a summary. You cannot choose who acts or with what authority." },
                { "role": "user", "content": content },
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": { "name": "next_step", "strict": true, "schema": context.allowed.schema() },
            },
        })
    }
}

impl Planner for OpenAiPlanner {
    async fn plan(&self, context: PlanContext<'_>) -> Result<PlanOutput, ComputerUseError> {
        let url = format!(
            "{}/chat/completions",
            self.config.base_url.trim_end_matches('/')
        );
        let response = self
            .http
            .post(&url)
            .bearer_auth(&self.config.api_key)
            .json(&self.body(&context))
            .send()
            .await
            // reqwest's errors name the URL, never the headers.
            .map_err(|err| failed(err.to_string()))?;
        let status = response.status();
        // Bounded: a server cannot make the client read without end.
        let mut response = response;
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| failed(err.to_string()))?
        {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(ComputerUseError::decode(
                    "the completion",
                    format!("an answer over {MAX_BODY} bytes"),
                ));
            }
            body.extend_from_slice(&chunk);
        }
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|err| ComputerUseError::decode("the completion", err))?;
        if !status.is_success() {
            let message = answer
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("no message");
            return Err(ComputerUseError::Refused {
                operation: "chat/completions".into(),
                code: format!("http_{}", status.as_u16()),
                message: self.scrub(message),
                details: None,
            });
        }
        let message = answer
            .pointer("/choices/0/message")
            .ok_or_else(|| ComputerUseError::decode("the completion", "no choices[0].message"))?;
        if let Some(refusal) = message.get("refusal").and_then(Value::as_str) {
            return Err(ComputerUseError::Refused {
                operation: "chat/completions".into(),
                code: "model_refused".into(),
                message: self.scrub(refusal),
                details: None,
            });
        }
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| ComputerUseError::decode("the completion", "no message content"))?;
        let output = serde_json::from_str(text)
            .map_err(|err| ComputerUseError::decode("the model's structured output", err))?;
        Ok(PlanOutput::Structured(output))
    }
}
