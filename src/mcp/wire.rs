//! The wire: what goes out (flat snake_case arguments, no `null`s) and how
//! what comes back is read (typed answers under their keys, refusals in
//! every shape upstream answers them). Nothing here judges an answer.

use std::sync::Mutex;

use rmcp::model::CallToolResult;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::ComputerUseError;
use crate::runtime::ImageContent;

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn transport_error(operation: &str, err: impl ToString) -> ComputerUseError {
    ComputerUseError::Transport {
        operation: operation.to_owned(),
        message: err.to_string(),
    }
}

pub(super) fn current_session(session: &Mutex<Option<String>>) -> Result<String, ComputerUseError> {
    lock(session)
        .clone()
        .ok_or_else(|| ComputerUseError::InvalidRequest {
            field: "sessionId".into(),
            message: "no runtime session: configure one or call start_session".into(),
        })
}

/// Decodes `answer[key]` as `T`. The value is taken out of `answer` (left
/// `null`), so its strings move into `T` instead of being copied.
pub(super) fn decode<T: DeserializeOwned>(
    tool: &str,
    key: &str,
    answer: &mut Value,
) -> Result<T, ComputerUseError> {
    let value = answer.get_mut(key).map(Value::take).ok_or_else(|| {
        ComputerUseError::decode(format!("{tool} answer"), format!("expected a {key:?} key"))
    })?;
    serde_json::from_value(value)
        .map_err(|err| ComputerUseError::decode(format!("{tool} answer.{key}"), err))
}

/// A refusal's text, cut to a length fit for an error message.
pub(super) fn clip(text: &str) -> String {
    const MAX_MESSAGE_CHARS: usize = 1024;
    text.chars().take(MAX_MESSAGE_CHARS).collect()
}

/// Turns a tool result into its structured answer and images, or the typed
/// refusal it carries. Oversized or over-deep answers are decode errors.
pub fn decode_tool_result(
    tool: &str,
    result: CallToolResult,
) -> Result<(Value, Vec<ImageContent>), ComputerUseError> {
    use crate::contracts::limits::{MAX_ARRAY_ITEMS, MAX_STRING_BYTES, check_bounds};
    let what = format!("{tool} answer");
    if result.content.len() > MAX_ARRAY_ITEMS {
        return Err(ComputerUseError::decode(
            &what,
            format!("{} content blocks", result.content.len()),
        ));
    }
    for block in &result.content {
        let size = block.as_text().map_or(0, |t| t.text.len())
            + block.as_image().map_or(0, |i| i.data.len());
        if size > MAX_STRING_BYTES {
            return Err(ComputerUseError::decode(
                &what,
                format!("a content block of {size} bytes"),
            ));
        }
    }
    if let Some(structured) = &result.structured_content {
        check_bounds(&what, structured)?;
    }
    let images = result
        .content
        .iter()
        .filter_map(|block| block.as_image())
        .map(|image| ImageContent {
            data: image.data.clone(),
            mime_type: image.mime_type.clone(),
        })
        .collect();
    let text = || {
        result
            .content
            .iter()
            .filter_map(|b| b.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if result.is_error == Some(true) {
        return Err(refusal(tool, result.structured_content, text()));
    }
    match result.structured_content {
        Some(value @ Value::Object(_)) => Ok((value, images)),
        Some(other) => Err(ComputerUseError::decode(
            format!("{tool} answer"),
            format!("expected an object, got {other}"),
        )),
        None => Err(ComputerUseError::decode(
            format!("{tool} answer"),
            format!(
                "expected structured content, got text only: {:?}",
                text().chars().take(200).collect::<String>()
            ),
        )),
    }
}

/// The arguments object of a call, with every `null` left out: upstream's
/// schemas reject `null` for an absent optional.
/// A refusal in any of upstream's shapes, typed:
///
/// - `{error, message, details}`: the code, the message and the details;
/// - `{error, <anything else>}` without a message (`{error, lease_id}`,
///   `{error: "rejected", receipt}`): the code, a message made from what it
///   named, and the rest as details;
/// - text only, as the MCP SDK answers arguments that fail a tool's input
///   schema (`MCP error -32602: ...`): code `invalid_arguments`, the text as
///   the message;
/// - any other text only: code `unstructured_refusal`, the text as the
///   message.
pub(super) fn refusal(tool: &str, structured: Option<Value>, text: String) -> ComputerUseError {
    let refused = |code: &str, message: String, details: Option<Value>| ComputerUseError::Refused {
        operation: tool.to_owned(),
        code: clip(code),
        message: clip(&message),
        details: details.map(Box::new),
    };
    if let Some(Value::Object(mut map)) = structured
        && let Some(Value::String(code)) = map.remove("error")
    {
        let message = match map.remove("message") {
            Some(Value::String(message)) => message,
            _ if code == "rejected" => "the server recorded a rejected receipt under this action id; a retry needs a new action id".to_owned(),
            _ if map.is_empty() => String::new(),
            _ => format!("the server named {}", Value::Object(map.clone())),
        };
        let details = match map.remove("details") {
            Some(details) if map.is_empty() => Some(details),
            Some(details) => {
                map.insert("details".into(), details);
                Some(Value::Object(map))
            }
            None if map.is_empty() => None,
            None => Some(Value::Object(map)),
        };
        return refused(&code, message, details);
    }
    if let Some(rest) = text.trim_start().strip_prefix("MCP error -32602") {
        let message = rest.trim_start_matches(':').trim().to_owned();
        return refused(
            "invalid_arguments",
            message,
            Some(json!({ "mcpCode": -32602 })),
        );
    }
    // A refusal in no shape upstream uses: still the server's refusal, with
    // its words, under a code that says so.
    refused("unstructured_refusal", clip(&text), None)
}

pub(super) fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(mut map) => {
            map.retain(|_, value| !value.is_null());
            map
        }
        _ => Map::new(),
    }
}
