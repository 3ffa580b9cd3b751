//! The points an action's arguments name, read the way the desktop would
//! read them: every point-like key is found (however it is spelled), each
//! must have the one shape it is understood in, and none may hide inside a
//! string or a nested value, so a point the chain did not hit-test never
//! reaches the runtime.

use serde_json::Value;

use super::*;

/// Argument keys a model may not set: the ones that aim a low-level tool
/// at another app or window than its evidence names, or that name the
/// chain's own ids or an approval.
pub const FORBIDDEN_ARGUMENTS: [&str; 18] = [
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
    // An approval comes from the host, never from a model's arguments.
    "approval",
    "grantId",
    "grant_id",
    "approvalGrantId",
    "runtimeApproved",
    "runtime_approved",
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
