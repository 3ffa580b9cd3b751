//! Anthropic's computer tool actions, whose names are v8's own tool names,
//! each mapped to one v8 low-level action, hit-tested against what was
//! observed.

use serde_json::{Value, json};

use super::*;

/// Maps one Anthropic computer tool action, whose names are v8's tool
/// names (`left_click`, `right_click`,
/// `middle_click`, `double_click`, `triple_click`, `left_click_drag`,
/// `mouse_move`, `type`, `key`, `scroll`, `wait`, `screenshot`).
pub fn from_anthropic(
    action: &Value,
    observed: &Observations,
    observed_at: &str,
) -> Result<MappedAction, ComputerUseError> {
    const A: &str = OBJECT_ANTHROPIC;
    let kind = action.get("action").and_then(Value::as_str).unwrap_or("");
    let at = || pair(A, "coordinate", action.get("coordinate"));
    match kind {
        tool::LEFT_CLICK
        | tool::RIGHT_CLICK
        | tool::MIDDLE_CLICK
        | tool::DOUBLE_CLICK
        | tool::TRIPLE_CLICK => pointer(A, kind, at()?, observed, observed_at),
        tool::MOUSE_MOVE => pointer(A, tool::MOUSE_MOVE, at()?, observed, observed_at),
        tool::LEFT_CLICK_DRAG => {
            let start = pair(A, "start_coordinate", action.get("start_coordinate"))?;
            drag(A, start, at()?, observed, observed_at)
        }
        tool::TYPE => Ok(act(
            tool::TYPE,
            json!({ "text": text_field(A, "text", action)? }),
            ExecutionMode::Foreground,
            None,
        )),
        tool::KEY => Ok(act(
            tool::KEY,
            json!({ "text": text_field(A, "text", action)? }),
            ExecutionMode::Foreground,
            None,
        )),
        tool::SCROLL => {
            let at = at()?;
            let direction = action
                .get("scroll_direction")
                .and_then(Value::as_str)
                .filter(|d| ["up", "down", "left", "right"].contains(d))
                .ok_or_else(|| {
                    refuse(
                        A,
                        "scroll_direction",
                        "up, down, left or right",
                        action
                            .get("scroll_direction")
                            .map_or_else(|| "none".to_owned(), Value::to_string),
                    )
                })?;
            let amount = action
                .get("scroll_amount")
                .map_or(Some(3), Value::as_i64)
                .filter(|a| (1..=100).contains(a))
                .ok_or_else(|| {
                    refuse(
                        A,
                        "scroll_amount",
                        "1 to 100 steps",
                        action
                            .get("scroll_amount")
                            .map_or_else(|| "none".to_owned(), Value::to_string),
                    )
                })?;
            let target = hit(A, observed, at, observed_at)?;
            Ok(act(
                tool::SCROLL,
                json!({ "coordinate": [at.0, at.1], "direction": direction, "amount": amount }),
                ExecutionMode::Foreground,
                Some(target),
            ))
        }
        tool::WAIT => wait_seconds(A, action.get("duration").and_then(Value::as_f64)),
        tool::SCREENSHOT => Ok(act(
            tool::SCREENSHOT,
            json!({}),
            ExecutionMode::Shadow,
            None,
        )),
        other => Err(refuse(
            A,
            "action",
            "left_click, right_click, middle_click, double_click, triple_click, left_click_drag, mouse_move, type, key, scroll, wait or screenshot",
            other,
        )),
    }
}
