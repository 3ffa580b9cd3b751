//! Model action formats: OpenAI's computer-use actions and Anthropic's
//! computer tool actions, mapped onto `computer-use-mcp` low-level tools.
//!
//! A coordinate means nothing to the protocol by itself: the mapping hit-
//! tests it against the windows the session observed and attaches that
//! window's target evidence, so the server revalidates the exact window the
//! model was looking at. A point outside every observed window, a missing or
//! negative coordinate, an unknown action or button, an empty drag path, a
//! scroll along both axes, a zero amount: each is refused with the field
//! named. Pointer and keyboard tools run in the foreground (upstream runs
//! them in no other mode); `screenshot` and `wait` are reads, mapped in
//! shadow mode, which the agent loop serves as a fresh observation and a
//! bounded pause, never as a governed mutation.
//!
//! A mapped action's arguments are built here from the fields read, so a
//! field the mapping ignores never reaches the runtime. A planner's
//! structured output is different: its arguments go to the runtime as they
//! are, so [`locate`] hit-tests every point they name and refuses any
//! argument that may name a point in a field or shape it does not read.

use serde_json::{Value, json};

use crate::ComputerUseError;
use crate::contracts::catalogue::tool;
use crate::contracts::{ExecutionMode, TargetEvidence, WindowId};
use crate::runtime::{Observations, ProposedAction};

mod anthropic;
mod openai;
mod points;

pub use anthropic::from_anthropic;
pub use openai::from_openai;
pub use points::{FORBIDDEN_ARGUMENTS, is_point_like, is_pointer_tool, locate};

const OBJECT_OPENAI: &str = "OpenAiComputerAction";
const OBJECT_ANTHROPIC: &str = "AnthropicComputerAction";

/// The largest coordinate accepted (a 32k-pixel desktop).
const MAX_COORDINATE: i64 = 32_767;
/// The longest wait a model may ask for, in seconds (upstream's cap).
pub const MAX_WAIT_SECONDS: f64 = 300.0;
/// Pixels of a model's scroll delta per wheel step.
const PIXELS_PER_STEP: i64 = 100;
/// The largest scroll delta accepted, in pixels.
const MAX_SCROLL_PIXELS: u64 = 100_000;

/// Where a model's action lands: the mapped action, and the evidence of
/// the window it hit (none for keyboard input, screenshots and waits).
#[derive(Debug, Clone, PartialEq)]
pub struct MappedAction {
    /// The low-level tool, its arguments and its mode.
    pub action: ProposedAction,
}

fn refuse(
    object: &'static str,
    field: &'static str,
    expected: &str,
    actual: impl ToString,
) -> ComputerUseError {
    ComputerUseError::InvalidField {
        object,
        field,
        expected: expected.to_owned(),
        actual: actual.to_string().chars().take(120).collect(),
    }
}

fn coordinate(
    object: &'static str,
    field: &'static str,
    x: Option<&Value>,
    y: Option<&Value>,
) -> Result<(i64, i64), ComputerUseError> {
    let one = |v: Option<&Value>| -> Result<i64, ComputerUseError> {
        let v = v.ok_or_else(|| refuse(object, field, "a coordinate", "none"))?;
        let n = v
            .as_i64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e9)
                    .map(|f| f as i64)
            })
            .ok_or_else(|| refuse(object, field, "a whole number of pixels", v))?;
        if !(0..=MAX_COORDINATE).contains(&n) {
            return Err(refuse(object, field, "0 to 32767 pixels", n));
        }
        Ok(n)
    };
    Ok((one(x)?, one(y)?))
}

fn pair(
    object: &'static str,
    field: &'static str,
    value: Option<&Value>,
) -> Result<(i64, i64), ComputerUseError> {
    let Some(Value::Array(items)) = value else {
        return Err(refuse(
            object,
            field,
            "[x, y]",
            value.map_or_else(|| "none".to_owned(), Value::to_string),
        ));
    };
    if items.len() != 2 {
        return Err(refuse(object, field, "[x, y]", Value::Array(items.clone())));
    }
    coordinate(object, field, items.first(), items.get(1))
}

/// The target evidence of the observed window under `(x, y)`.
///
/// Among the windows whose bounds contain the point, the focused one wins;
/// a single one is taken as it is. Two or more unfocused windows under the
/// point are refused: a window list says nothing reliable about which is on
/// top. The window must name its app and a usable id, so the evidence is for
/// exactly that window and no other of its app.
fn hit(
    object: &'static str,
    observed: &Observations,
    at: (i64, i64),
    observed_at: &str,
) -> Result<TargetEvidence, ComputerUseError> {
    let frame = &observed.semantic.structured;
    let windows: Vec<&Value> = match frame.get("windows").and_then(Value::as_array) {
        Some(list) => list.iter().collect(),
        None => frame.get("window").into_iter().collect(),
    };
    let inside = |w: &&Value| {
        let b = w.get("bounds");
        let num = |k: &str| b.and_then(|b| b.get(k)).and_then(Value::as_f64);
        match (num("x"), num("y"), num("width"), num("height")) {
            (Some(x), Some(y), Some(wd), Some(ht)) => {
                let (px, py) = (at.0 as f64, at.1 as f64);
                px >= x && py >= y && px < x + wd && py < y + ht
            }
            _ => false,
        }
    };
    let under: Vec<&Value> = windows.into_iter().filter(inside).collect();
    let point = || format!("({}, {})", at.0, at.1);
    let window = match under.as_slice() {
        [] => {
            return Err(refuse(
                object,
                "coordinate",
                "a point inside an observed window",
                point(),
            ));
        }
        [only] => *only,
        several => several
            .iter()
            .copied()
            .find(|w| w.get("isFocused") == Some(&Value::Bool(true)))
            .ok_or_else(|| {
                refuse(
                    object,
                    "coordinate",
                    "a point inside one observed window, or inside the focused one",
                    format!("{} overlapping windows at {}", several.len(), point()),
                )
            })?,
    };
    let app = window
        .get("bundleId")
        .or_else(|| window.get("appId"))
        .and_then(Value::as_str)
        .ok_or_else(|| refuse(object, "coordinate", "a window that names its app", window))?;
    let id = match window.get("windowId") {
        Some(Value::Number(n)) => n.as_u64().map(WindowId::Number),
        Some(Value::String(name)) if !name.is_empty() => Some(WindowId::Name(name.clone())),
        _ => None,
    }
    .ok_or_else(|| refuse(object, "coordinate", "a window with a usable id", window))?;
    observed.target_evidence(app, Some(&id), observed_at)
}

/// A drag: both ends inside the same observed window, whose evidence the
/// action carries. An end in another window would be a drop no preview
/// named (the evidence binds the start's window only): refused.
fn drag(
    object: &'static str,
    start: (i64, i64),
    end: (i64, i64),
    observed: &Observations,
    observed_at: &str,
) -> Result<MappedAction, ComputerUseError> {
    let target = hit(object, observed, start, observed_at)?;
    let landing = hit(object, observed, end, observed_at)?;
    if landing.app_id != target.app_id || landing.window_id != target.window_id {
        return Err(refuse(
            object,
            "coordinate",
            "a drag that ends in the window it starts in",
            format!(
                "from {} to {} (another window)",
                target.app_id, landing.app_id
            ),
        ));
    }
    Ok(act(
        tool::LEFT_CLICK_DRAG,
        json!({ "start_coordinate": [start.0, start.1], "coordinate": [end.0, end.1] }),
        ExecutionMode::Foreground,
        Some(target),
    ))
}

fn act(
    tool: &str,
    arguments: Value,
    mode: ExecutionMode,
    target: Option<TargetEvidence>,
) -> MappedAction {
    let mut action = ProposedAction::new(tool, arguments, mode);
    action.target = target;
    MappedAction { action }
}

fn pointer(
    object: &'static str,
    tool: &str,
    at: (i64, i64),
    observed: &Observations,
    observed_at: &str,
) -> Result<MappedAction, ComputerUseError> {
    let target = hit(object, observed, at, observed_at)?;
    Ok(act(
        tool,
        json!({ "coordinate": [at.0, at.1] }),
        ExecutionMode::Foreground,
        Some(target),
    ))
}

fn text_field<'a>(
    object: &'static str,
    field: &'static str,
    action: &'a Value,
) -> Result<&'a str, ComputerUseError> {
    action
        .get(field)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            refuse(
                object,
                field,
                "non-empty text",
                action
                    .get(field)
                    .map_or_else(|| "none".to_owned(), Value::to_string),
            )
        })
}

fn wait_seconds(
    object: &'static str,
    seconds: Option<f64>,
) -> Result<MappedAction, ComputerUseError> {
    let seconds = seconds.unwrap_or(1.0);
    if !(seconds > 0.0 && seconds <= MAX_WAIT_SECONDS) {
        return Err(refuse(
            object,
            "duration",
            "more than 0 and at most 300 seconds",
            seconds,
        ));
    }
    Ok(act(
        tool::WAIT,
        json!({ "duration": seconds }),
        ExecutionMode::Shadow,
        None,
    ))
}
