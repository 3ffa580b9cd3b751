//! Size limits for anything decoded from the wire.
//!
//! A runtime answer is untrusted input: before it is decoded into a typed
//! value, its shape is walked once and refused when it is deeper, wider or
//! longer than any honest answer of the protocol needs.

use serde_json::Value;

use crate::ComputerUseError;

/// The deepest nesting accepted.
pub const MAX_DEPTH: usize = 64;
/// The longest string accepted, in bytes (an image block is the largest honest one).
pub const MAX_STRING_BYTES: usize = 8 * 1024 * 1024;
/// The longest array accepted.
pub const MAX_ARRAY_ITEMS: usize = 10_000;
/// The most values (objects, arrays, scalars) accepted in one answer.
pub const MAX_NODES: usize = 200_000;

/// Refuses `value` when it exceeds any of the limits above.
pub fn check_bounds(what: &str, value: &Value) -> Result<(), ComputerUseError> {
    let mut nodes = 0usize;
    let mut stack = vec![(value, 1usize)];
    while let Some((value, depth)) = stack.pop() {
        nodes += 1;
        let refuse = |reason: String| Err(ComputerUseError::decode(what, reason));
        if nodes > MAX_NODES {
            return refuse(format!("more than {MAX_NODES} values"));
        }
        if depth > MAX_DEPTH {
            return refuse(format!("nested deeper than {MAX_DEPTH}"));
        }
        match value {
            Value::String(text) if text.len() > MAX_STRING_BYTES => {
                return refuse(format!(
                    "a string of {} bytes (at most {MAX_STRING_BYTES})",
                    text.len()
                ));
            }
            Value::Array(items) => {
                if items.len() > MAX_ARRAY_ITEMS {
                    return refuse(format!(
                        "an array of {} items (at most {MAX_ARRAY_ITEMS})",
                        items.len()
                    ));
                }
                stack.extend(items.iter().map(|item| (item, depth + 1)));
            }
            Value::Object(map) => {
                for (key, item) in map {
                    if key.len() > MAX_STRING_BYTES {
                        return refuse("an oversized key".into());
                    }
                    stack.push((item, depth + 1));
                }
            }
            _ => {}
        }
    }
    Ok(())
}
