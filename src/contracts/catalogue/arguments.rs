//! The argument schemas of the low-level tools whose shapes upstream's
//! catalogue publishes, as JSON Schema: what the library checks an action's
//! arguments against before anything is sent.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde_json::{Value, json};

use super::tool;

/// The targeting arguments upstream's pointer and keyboard tools accept.
fn with_targeting(mut properties: Value) -> Value {
    if let Some(map) = properties.as_object_mut() {
        map.insert("target_app".into(), json!({ "type": "string" }));
        map.insert("target_window_id".into(), json!({ "type": "integer" }));
        map.insert(
            "focus_strategy".into(),
            json!({ "type": "string", "enum": ["strict", "best_effort", "none", "prepare_display"] }),
        );
    }
    properties
}

/// An `[x, y]` pair of numbers.
fn pair() -> Value {
    json!({ "type": "array", "items": { "type": "number" }, "minItems": 2, "maxItems": 2 })
}

fn object(properties: Value, required: &[&str]) -> Value {
    json!({ "type": "object", "properties": properties, "required": required })
}

/// The argument schemas of the low-level tools the chain knows, as
/// upstream's catalogue defines them.
static KNOWN: LazyLock<BTreeMap<&'static str, Value>> = LazyLock::new(|| {
    let mut known = BTreeMap::new();
    known.insert(
        tool::WRITE_CLIPBOARD,
        object(json!({ "text": { "type": "string" } }), &["text"]),
    );
    known.insert(tool::READ_CLIPBOARD, object(json!({}), &[]));
    let at_a_point = object(
        with_targeting(json!({ "coordinate": pair() })),
        &["coordinate"],
    );
    for name in [
        tool::LEFT_CLICK,
        tool::RIGHT_CLICK,
        tool::MIDDLE_CLICK,
        tool::DOUBLE_CLICK,
        tool::TRIPLE_CLICK,
        tool::MOUSE_MOVE,
        tool::LEFT_MOUSE_DOWN,
        tool::LEFT_MOUSE_UP,
    ] {
        known.insert(name, at_a_point.clone());
    }
    known.insert(
        tool::LEFT_CLICK_DRAG,
        object(
            with_targeting(json!({ "coordinate": pair(), "start_coordinate": pair() })),
            &["coordinate"],
        ),
    );
    known.insert(
        tool::SCROLL,
        object(
            with_targeting(json!({
                "coordinate": pair(),
                "direction": { "type": "string", "enum": ["up", "down", "left", "right"] },
                "amount": { "type": "integer", "exclusiveMinimum": 0 },
            })),
            &["coordinate", "direction"],
        ),
    );
    known.insert(
        tool::TYPE,
        object(
            with_targeting(json!({
                "text": { "type": "string" },
                "clear": { "type": "boolean" },
                "press_enter": { "type": "boolean" },
                "caret_position": { "type": "string", "enum": ["start", "end", "idle"] },
            })),
            &["text"],
        ),
    );
    known.insert(
        tool::KEY,
        object(
            with_targeting(json!({
                "text": { "type": "string" },
                "repeat": { "type": "integer", "exclusiveMinimum": 0 },
            })),
            &["text"],
        ),
    );
    known.insert(
        tool::HOLD_KEY,
        object(
            with_targeting(json!({
                "keys": { "type": "array", "items": { "type": "string" } },
                "duration": { "type": "number", "exclusiveMinimum": 0 },
            })),
            &["keys", "duration"],
        ),
    );
    known.insert(
        tool::WAIT,
        object(
            json!({ "duration": { "type": "number", "exclusiveMinimum": 0, "maximum": 300 } }),
            &["duration"],
        ),
    );
    // The waits of upstream's released server: what to wait for, how long
    // (at most two minutes), and how often to look.
    let ms = |min: u64| json!({ "type": "integer", "minimum": min, "maximum": 120_000 });
    let window = |mut properties: Value| {
        if let Some(map) = properties.as_object_mut() {
            map.insert("target_app".into(), json!({ "type": "string" }));
            map.insert(
                "window_id".into(),
                json!({ "type": "integer", "minimum": 0 }),
            );
            map.insert("title".into(), json!({ "type": "string" }));
        }
        properties
    };
    known.insert(
        tool::WAIT_FOR_WINDOW,
        object(
            json!({
                "target_app": { "type": "string" },
                "title": { "type": "string" },
                "gone": { "type": "boolean" },
                "timeout_ms": ms(0),
            }),
            &["target_app"],
        ),
    );
    known.insert(
        tool::WAIT_FOR_TEXT,
        object(
            window(json!({
                "text": { "type": "string" },
                "match": { "type": "string", "enum": ["exact", "contains", "regex"] },
                "gone": { "type": "boolean" },
                "timeout_ms": ms(0),
                "poll_ms": ms(200),
            })),
            &["text"],
        ),
    );
    known.insert(
        tool::WAIT_FOR_STABLE,
        object(
            window(json!({
                "quiet_ms": ms(50),
                "timeout_ms": ms(0),
                "poll_ms": ms(50),
            })),
            &[],
        ),
    );
    known
});

/// The JSON Schema of `tool`'s arguments, when the chain knows the tool.
///
/// ```
/// use adk_computer_use::contracts::catalogue::known_schema;
///
/// let schema = known_schema("write_clipboard").unwrap();
/// assert_eq!(schema["required"], serde_json::json!(["text"]));
/// assert!(known_schema("a_tool_of_your_own").is_none());
/// ```
pub fn known_schema(tool: &str) -> Option<&'static Value> {
    KNOWN.get(tool)
}
