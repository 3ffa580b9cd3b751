//! How a line is read: the one-pass read of a tool call's answer, and the
//! rules rmcp 3.11 applies to everything else that the transport must
//! follow to hand over the same messages.

use std::collections::HashSet;

use rmcp::model::{CallToolResult, JsonRpcVersion2_0, RequestId};
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// A line read as a tool call's answer, when it is one.
#[derive(Deserialize)]
pub(super) struct ToolAnswer {
    pub(super) jsonrpc: JsonRpcVersion2_0,
    pub(super) id: RequestId,
    pub(super) result: CallToolResult,
    /// Whether the key is there at all, whatever its value (`null`
    /// included): a message with `method` or `error` is no plain answer,
    /// and rmcp tells shapes apart by the keys present.
    #[serde(default, deserialize_with = "present")]
    pub(super) method: bool,
    #[serde(default, deserialize_with = "present")]
    pub(super) error: bool,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

impl ToolAnswer {
    /// `line` as a tool result's answer, when it reads as one in the shape
    /// rmcp accepts: a JSON object (serde's derive would also take an
    /// array, which rmcp refuses) with neither `method` nor `error`. What
    /// this read skips it skips unchecked: [`is_json`] checks the rest.
    pub(super) fn read(line: &[u8]) -> Option<Self> {
        if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
            return None;
        }
        let answer: Self = serde_json::from_slice(line).ok()?;
        (!answer.method && !answer.error).then_some(answer)
    }
}

/// Whether `line` is valid JSON throughout, as rmcp (which buffers every
/// line whole) requires: serde skips unknown fields unchecked, so a typed
/// read alone accepts bad escapes, numbers out of range and nesting past
/// serde_json's limit where rmcp refuses the line.
pub(super) fn is_json(line: &[u8]) -> bool {
    serde_json::from_slice::<Valid>(line).is_ok()
}

/// Reads any JSON value whole, as `serde_json::Value` would (every string's
/// escapes and UTF-8, every number's range, the nesting limit), keeping
/// nothing.
struct Valid;

impl<'de> Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Valid)
    }
}

impl<'de> Visitor<'de> for Valid {
    type Value = Valid;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_str<E>(self, _: &str) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_unit<E>(self) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_none<E>(self) -> Result<Valid, E> {
        Ok(Valid)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Valid, A::Error> {
        while seq.next_element::<Valid>()?.is_some() {}
        Ok(Valid)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Valid, A::Error> {
        while map.next_entry::<Valid, Valid>()?.is_some() {}
        Ok(Valid)
    }
}

/// The pending tool call `id` answers, if any. An id written as a string
/// of digits answers the call of that number, as rmcp's service matches it.
fn pending_key(calls: &HashSet<RequestId>, id: &RequestId) -> Option<RequestId> {
    if calls.contains(id) {
        return Some(id.clone());
    }
    match id {
        RequestId::String(text) => text
            .parse::<i64>()
            .ok()
            .map(RequestId::Number)
            .filter(|number| calls.contains(number)),
        RequestId::Number(_) => None,
    }
}

/// Whether `id` answers a pending tool call.
pub(super) fn is_pending(calls: &HashSet<RequestId>, id: &RequestId) -> bool {
    pending_key(calls, id).is_some()
}

/// Takes the call `id` answers out of the pending tool calls: whether
/// there was one.
pub(super) fn take_pending(calls: &mut HashSet<RequestId>, id: &RequestId) -> bool {
    pending_key(calls, id).is_some_and(|key| calls.remove(&key))
}

/// Whether `value` is a notification rmcp skips when it does not read:
/// one with a method outside MCP's own, or an unknown `notifications/` one.
pub(super) fn ignored_notification(value: &serde_json::Value) -> bool {
    let Some(method) = value.get("method").and_then(serde_json::Value::as_str) else {
        return false;
    };
    let notification = is_mcp_notification(method);
    let known = notification || MCP_REQUESTS.contains(&method);
    (value.get("id").is_none() && !known) || (method.starts_with("notifications/") && !notification)
}

/// MCP's request methods, as rmcp 3.11 lists them.
const MCP_REQUESTS: [&str; 18] = [
    "initialize",
    "ping",
    "server/discover",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "completion/complete",
    "elicitation/create",
    "logging/setLevel",
    "roots/list",
    "sampling/createMessage",
];

fn is_mcp_notification(method: &str) -> bool {
    matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    )
}
