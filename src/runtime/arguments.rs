//! A low-level tool's arguments, checked before anything is reserved.
//!
//! Upstream's v8 servers list only their 23 protocol tools in `tools/list`;
//! the low-level tools an action names (`write_clipboard`, `left_click`,
//! ...) are checked against their schemas only when the server dispatches
//! them, after the preview, the reservation and the lease, and a mutating
//! tool that fails there ends `indeterminate`. So the chain checks the
//! arguments of the tools whose shapes it knows (from upstream's catalogue)
//! before it asks the runtime for anything: a missing, mistyped or unknown
//! argument is refused with nothing sent, and can be fixed and sent again.
//! A tool outside [`known_schema`]'s list (the catalogue's) goes to the runtime unchecked
//! here; the runtime's own refusal is still a refusal.

use serde_json::Value;

use crate::ComputerUseError;
pub use crate::contracts::catalogue::known_schema;
use crate::contracts::{TargetEvidence, WindowId, json_kind};

/// Refuses the arguments of a known tool that its schema does not accept
/// (for [`crate::chain::Observed::preview`]); a tool the chain does not
/// know passes.
pub(crate) fn check_known(tool: &str, arguments: &Value) -> Result<(), ComputerUseError> {
    match known_schema(tool) {
        Some(schema) => check(schema, arguments, "ProposedAction"),
        None => Ok(()),
    }
}

/// The keys given, never their values.
fn keys(given: &serde_json::Map<String, Value>) -> String {
    let names: Vec<&str> = given.keys().map(String::as_str).collect();
    format!("arguments with keys [{}]", names.join(", "))
}

fn refuse(object: &'static str, expected: String, actual: String) -> ComputerUseError {
    ComputerUseError::InvalidField {
        object,
        field: "arguments",
        expected,
        actual,
    }
}

/// Whether `value` is of the JSON Schema `type` named (a name or a list of
/// names); an unknown name accepts nothing.
fn of_type(value: &Value, wanted: &Value) -> bool {
    let is = |name: &str| match name {
        "string" => value.is_string(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => false,
    };
    match wanted {
        Value::String(name) => is(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(is),
        _ => true,
    }
}

/// Whether `value` satisfies one property's schema: its `type`, its
/// `enum`, and for an array its length bounds and its items' type.
fn fits(value: &Value, schema: &Value) -> bool {
    if let Some(wanted) = schema.get("type")
        && !of_type(value, wanted)
    {
        return false;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return false;
    }
    if let Some(number) = value.as_f64() {
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        if bound("exclusiveMinimum").is_some_and(|min| number <= min)
            || bound("minimum").is_some_and(|min| number < min)
            || bound("maximum").is_some_and(|max| number > max)
        {
            return false;
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as u64;
        let bound = |key: &str| schema.get(key).and_then(Value::as_u64);
        if bound("minItems").is_some_and(|min| len < min)
            || bound("maxItems").is_some_and(|max| len > max)
        {
            return false;
        }
        if let Some(item) = schema.get("items")
            && !items.iter().all(|v| fits(v, item))
        {
            return false;
        }
    }
    true
}

/// The arguments hold every key `schema` requires, only keys it lists when
/// it lists its properties (unless `additionalProperties: true`), and each
/// as its property's schema states; refusals name `object`.
pub(crate) fn check(
    schema: &Value,
    arguments: &Value,
    object: &'static str,
) -> Result<(), ComputerUseError> {
    let Value::Object(given) = arguments else {
        return Err(refuse(
            object,
            "an object".into(),
            json_kind(arguments).into(),
        ));
    };
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !given.contains_key(key) {
                return Err(refuse(
                    object,
                    format!("arguments with {key:?}"),
                    keys(given),
                ));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for (key, value) in given {
            if let Some(wanted) = properties.get(key)
                && !fits(value, wanted)
            {
                return Err(refuse(
                    object,
                    format!("{key} as {wanted}"),
                    format!("{key} as {}", json_kind(value)),
                ));
            }
        }
    }
    // A schema that lists its properties names every argument: anything
    // else (a misspelled key) is refused, unless it says more are allowed.
    if schema.get("additionalProperties") != Some(&Value::Bool(true))
        && let Some(properties) = properties
        && let Some(extra) = given.keys().find(|k| !properties.contains_key(*k))
    {
        return Err(refuse(
            object,
            format!(
                "only {}",
                properties.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            format!("{:?}", extra.chars().take(64).collect::<String>()),
        ));
    }
    Ok(())
}

/// Argument keys that name a window, and keys that name an app: upstream's
/// low-level tools act on these (`target_window_id` "takes precedence"),
/// while policy, the reservation and the lease are decided on the action's
/// target evidence.
const WINDOW_KEYS: [&str; 2] = ["target_window_id", "window_id"];
const APP_KEYS: [&str; 3] = ["target_app", "bundle_id", "app_id"];

/// Refuses arguments that name a window or an app other than the action's
/// target (or any, for an action without target evidence): what runs must
/// be aimed where the reservation and the lease were taken.
pub(crate) fn check_targeting(
    arguments: &Value,
    target: Option<&TargetEvidence>,
) -> Result<(), ComputerUseError> {
    let Value::Object(given) = arguments else {
        return Ok(());
    };
    for (key, value) in given {
        let (named, what) = if WINDOW_KEYS.contains(&key.as_str()) {
            let window = target.and_then(|t| t.window_id.as_ref());
            (
                window.map(|w| match w {
                    WindowId::Number(n) => value.as_f64() == Some(*n as f64),
                    WindowId::Name(name) => value.as_str() == Some(name.as_str()),
                }),
                "window",
            )
        } else if APP_KEYS.contains(&key.as_str()) {
            (
                target.map(|t| value.as_str() == Some(t.app_id.as_str())),
                "app",
            )
        } else {
            continue;
        };
        if named != Some(true) {
            return Err(refuse(
                "ProposedAction",
                format!("{key} naming the action's target {what}, or left out"),
                match named {
                    None => format!("{key} with no target evidence for a {what}"),
                    Some(_) => format!("{key} naming another {what}"),
                },
            ));
        }
    }
    Ok(())
}
