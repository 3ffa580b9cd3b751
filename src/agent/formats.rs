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

/// Argument keys a model may not set: the ones that aim a low-level tool
/// at another app or window than its evidence names, or that name the
/// chain's own ids.
pub const FORBIDDEN_ARGUMENTS: [&str; 12] = [
    "target_app",
    "target_window_id",
    "focus_strategy",
    "session_id",
    "action_id",
    "agent_id",
    "execution_group_id",
    "principal_id",
    "lease_id",
    "approval_grant_id",
    "approval_token",
    "target",
];

/// Whether an argument key may name a point on the screen: any key that
/// contains `coord`, `point`, `position`, `location` or `path`; `x`, `y`,
/// `from`, `to`, `start`, `end`; and `x1`, `start_x`, `x_end` and the like.
/// The runtime receives the arguments as they are, so a point in a field
/// nobody hit-tested would land wherever it says: [`locate`] hit-tests the
/// fields it understands and refuses every other point-like one.
pub fn is_point_like(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    let axis = |rest: &str| rest.is_empty() || rest.chars().all(|c| c.is_ascii_digit());
    [
        "coord", "point", "posit", "locat", "path", "xy", "dest", "offset", "region", "anchor",
    ]
    .iter()
    .any(|part| key.contains(part))
        || [
            "x",
            "y",
            "from",
            "to",
            "start",
            "end",
            "at",
            "pt",
            "pos",
            "loc",
            "left",
            "top",
            "right",
            "bottom",
            "dx",
            "dy",
            "cx",
            "cy",
            "where",
            "rect",
            "rectangle",
            "bounds",
            "drop",
        ]
        .contains(&key.as_str())
        || key.ends_with("_x")
        || key.ends_with("_y")
        || key.starts_with("x_")
        || key.starts_with("y_")
        || key
            .strip_prefix('x')
            .or_else(|| key.strip_prefix('y'))
            .is_some_and(axis)
}

/// The tools that act where the pointer is, each of which must name a
/// point: the catalogue's ([`crate::contracts::catalogue::is_pointer_tool`]).
pub use crate::contracts::catalogue::is_pointer_tool;

/// The point-like argument keys [`locate`] understands, each with the shape
/// it must have: the others are refused.
const POINT_FIELDS: [&str; 7] = [
    "start_coordinate",
    "start",
    "from",
    "coordinate",
    "end_coordinate",
    "end",
    "to",
];

/// One point: `[x, y]` or `{"x": x, "y": y}` (nothing else in the object).
fn point_value(
    object: &'static str,
    field: &'static str,
    value: &Value,
) -> Result<(i64, i64), ComputerUseError> {
    match value {
        Value::Object(map) => {
            if let Some(extra) = map.keys().find(|k| *k != "x" && *k != "y") {
                return Err(refuse(object, field, "{\"x\": x, \"y\": y}", extra));
            }
            coordinate(object, field, map.get("x"), map.get("y"))
        }
        other => pair(object, field, Some(other)),
    }
}

/// Whether `value` holds, at any depth, an object key that may name a point.
fn hides_point(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) => map.iter().find_map(|(k, v)| {
            if is_point_like(k) {
                Some(k.clone())
            } else {
                hides_point(v)
            }
        }),
        Value::Array(items) => items.iter().find_map(hides_point),
        _ => None,
    }
}

/// A point an argument names, with the field it came from.
type NamedPoint = (&'static str, (i64, i64));

/// Every point a structured action's arguments name, start first, each
/// with the field it came from; a point-like field of any other name or
/// shape is refused.
fn points(object: &'static str, arguments: &Value) -> Result<Vec<NamedPoint>, ComputerUseError> {
    let Value::Object(map) = arguments else {
        return Ok(Vec::new());
    };
    let unknown = |key: &str| {
        refuse(
            object,
            "arguments",
            "points only in x/y, coordinate, start_coordinate, end_coordinate, path, from, to, start or end, each hit-tested",
            key,
        )
    };
    for (key, value) in map {
        let understood =
            POINT_FIELDS.contains(&key.as_str()) || ["x", "y", "path"].contains(&key.as_str());
        if is_point_like(key) && !understood {
            return Err(unknown(key));
        }
        if !is_point_like(key)
            && let Some(hidden) = hides_point(value)
        {
            return Err(unknown(&format!("{key}.{hidden}")));
        }
    }
    let mut found = Vec::new();
    for field in POINT_FIELDS.iter().take(3) {
        if let Some(value) = map.get(*field) {
            found.push((*field, point_value(object, field, value)?));
        }
    }
    // A `path` that is a string is a file's path, not a pointer's.
    if let Some(path) = map.get("path").filter(|path| !path.is_string()) {
        let items = path
            .as_array()
            .filter(|items| !items.is_empty())
            .ok_or_else(|| refuse(object, "path", "a list of points", path))?;
        for item in items {
            found.push(("path", point_value(object, "path", item)?));
        }
    }
    if map.contains_key("x") || map.contains_key("y") {
        found.push(("x", coordinate(object, "x", map.get("x"), map.get("y"))?));
    }
    for field in POINT_FIELDS.iter().skip(3) {
        if let Some(value) = map.get(*field) {
            found.push((*field, point_value(object, field, value)?));
        }
    }
    Ok(found)
}

/// Evidence for an action a planner proposed as structured output. Every
/// point its arguments name (`x`/`y`, `coordinate`, `start_coordinate`,
/// `end_coordinate`, `path`, `from`, `to`, `start`, `end`) is validated and
/// hit-tested like a mapped action's, and must land in the same observed
/// window as the first (the start); the action gets that window's evidence.
/// An argument that may name a point in any other field or shape is
/// refused: the runtime would act on it unchecked.
pub fn locate(
    action: &mut ProposedAction,
    observed: &Observations,
    observed_at: &str,
) -> Result<(), ComputerUseError> {
    const O: &str = "PlannerOutput";
    // A button pressed here and released elsewhere is a drop no preview
    // named: only the paired tools (clicks, `left_click_drag`) are taken.
    if [tool::LEFT_MOUSE_DOWN, tool::LEFT_MOUSE_UP].contains(&action.tool.as_str()) {
        return Err(refuse(
            O,
            "tool",
            "a click or left_click_drag (a button held across actions is a drop nobody hit-tested)",
            &action.tool,
        ));
    }
    let found = points(O, &action.arguments)?;
    if found.is_empty() && is_pointer_tool(&action.tool) {
        return Err(refuse(
            O,
            "coordinate",
            "a point to hit-test (a pointer tool acts where it points)",
            "none",
        ));
    }
    let mut target: Option<TargetEvidence> = None;
    for (field, at) in found {
        let here = hit(O, observed, at, observed_at)?;
        match &target {
            None => target = Some(here),
            Some(first) if first.app_id == here.app_id && first.window_id == here.window_id => {}
            Some(first) => {
                return Err(refuse(
                    O,
                    field,
                    &format!(
                        "a point in the window the action starts in ({})",
                        first.app_id
                    ),
                    format!("({}, {}) in {}", at.0, at.1, here.app_id),
                ));
            }
        }
    }
    if target.is_some() {
        action.target = target;
    }
    Ok(())
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
