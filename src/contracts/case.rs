//! The two spellings of one object: camelCase in answers, snake_case in the
//! arguments of `preview_action` and `execute_action`. Only the top-level keys
//! of an object are renamed; nested objects keep their own spelling.

use serde_json::{Map, Value};

fn rename_keys(value: &Value, rename: fn(&str) -> String) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (rename(k), v.clone()))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

fn snake(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn camel(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut upper = false;
    for c in key.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The object with its top-level keys in snake_case.
pub fn to_snake_keys(value: &Value) -> Value {
    rename_keys(value, snake)
}

/// The object with its top-level keys in camelCase.
pub fn to_camel_keys(value: &Value) -> Value {
    rename_keys(value, camel)
}
