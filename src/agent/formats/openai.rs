//! OpenAI's computer-use actions (`click`, `drag`, `keypress`, ...), each
//! mapped to one v8 low-level action, hit-tested against what was observed.

use serde_json::{Value, json};

use super::*;

/// Maps one OpenAI computer-use action (`click`, `double_click`, `scroll`,
/// `type`, `keypress`, `drag`, `move`, `wait`, `screenshot`).
pub fn from_openai(
    action: &Value,
    observed: &Observations,
    observed_at: &str,
) -> Result<MappedAction, ComputerUseError> {
    const O: &str = OBJECT_OPENAI;
    let kind = action.get("type").and_then(Value::as_str).unwrap_or("");
    let at = || coordinate(O, "x", action.get("x"), action.get("y"));
    match kind {
        "click" => {
            let tool = match action
                .get("button")
                .and_then(Value::as_str)
                .unwrap_or("left")
            {
                "left" => tool::LEFT_CLICK,
                "right" => tool::RIGHT_CLICK,
                "wheel" | "middle" => tool::MIDDLE_CLICK,
                other => return Err(refuse(O, "button", "left, right or wheel", other)),
            };
            pointer(O, tool, at()?, observed, observed_at)
        }
        "double_click" => pointer(O, tool::DOUBLE_CLICK, at()?, observed, observed_at),
        "move" => pointer(O, tool::MOUSE_MOVE, at()?, observed, observed_at),
        "scroll" => {
            let at = at()?;
            let delta = |k: &'static str| -> Result<i64, ComputerUseError> {
                match action.get(k) {
                    None | Some(Value::Null) => Ok(0),
                    Some(v) => v
                        .as_i64()
                        .filter(|d| d.unsigned_abs() <= MAX_SCROLL_PIXELS)
                        .ok_or_else(|| refuse(O, k, "whole pixels, at most 100000 either way", v)),
                }
            };
            let (dx, dy) = (delta("scroll_x")?, delta("scroll_y")?);
            let (direction, pixels) = match (dx, dy) {
                (0, 0) => return Err(refuse(O, "scroll_y", "a non-zero scroll", "0")),
                (0, y) => (if y > 0 { "down" } else { "up" }, y.abs()),
                (x, 0) => (if x > 0 { "right" } else { "left" }, x.abs()),
                (x, y) => {
                    return Err(refuse(
                        O,
                        "scroll_x",
                        "a scroll along one axis",
                        format!("({x}, {y})"),
                    ));
                }
            };
            let amount = (pixels + PIXELS_PER_STEP - 1) / PIXELS_PER_STEP;
            let target = hit(O, observed, at, observed_at)?;
            Ok(act(
                tool::SCROLL,
                json!({ "coordinate": [at.0, at.1], "direction": direction, "amount": amount.min(100) }),
                ExecutionMode::Foreground,
                Some(target),
            ))
        }
        "type" => Ok(act(
            tool::TYPE,
            json!({ "text": text_field(O, "text", action)? }),
            ExecutionMode::Foreground,
            None,
        )),
        "keypress" => {
            let keys: Vec<String> = action
                .get("keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_lowercase)
                        .collect()
                })
                .unwrap_or_default();
            if keys.is_empty() || keys.iter().any(String::is_empty) {
                return Err(refuse(
                    O,
                    "keys",
                    "one or more key names",
                    action
                        .get("keys")
                        .map_or_else(|| "none".to_owned(), Value::to_string),
                ));
            }
            Ok(act(
                tool::KEY,
                json!({ "text": keys.join("+") }),
                ExecutionMode::Foreground,
                None,
            ))
        }
        "drag" => {
            let path = action
                .get("path")
                .and_then(Value::as_array)
                .filter(|p| p.len() >= 2)
                .ok_or_else(|| {
                    refuse(
                        O,
                        "path",
                        "at least two points",
                        action
                            .get("path")
                            .map_or_else(|| "none".to_owned(), Value::to_string),
                    )
                })?;
            // Every point is read (a junk middle point is refused too);
            // the low-level tool drags from the first to the last.
            let points = path
                .iter()
                .map(|p| coordinate(O, "path", p.get("x"), p.get("y")))
                .collect::<Result<Vec<_>, _>>()?;
            let (start, end) = match (points.first(), points.last()) {
                (Some(start), Some(end)) => (*start, *end),
                _ => return Err(refuse(O, "path", "at least two points", "none")),
            };
            drag(O, start, end, observed, observed_at)
        }
        "wait" => wait_seconds(
            O,
            action
                .get("ms")
                .and_then(Value::as_f64)
                .map(|ms| ms / 1000.0),
        ),
        "screenshot" => Ok(act(
            tool::SCREENSHOT,
            json!({}),
            ExecutionMode::Shadow,
            None,
        )),
        other => Err(refuse(
            O,
            "type",
            "click, double_click, scroll, type, keypress, drag, move, wait or screenshot",
            other,
        )),
    }
}
