//! Unit checks of the simulator's argument check against zod's wording.
#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};

use super::tools::{TOOLS, ToolSpec, find};

fn check_tool(name: &str, args: Value) -> Result<(), String> {
    let Value::Object(map) = args else {
        return Err("not an object".into());
    };
    find(name).map_or(Err("no tool".into()), |t| t.check(&map))
}

#[test]
fn messages_are_zods() {
    let err = check_tool("start_session", json!({ "objective": null })).unwrap_err();
    assert!(
        err.ends_with("start_session: Invalid input: expected string, received null at objective"),
        "{err}"
    );
    let err = check_tool("delete_session", json!({})).unwrap_err();
    assert!(err.ends_with("expected string, received undefined at session_id\nInvalid input: expected true at confirm"), "{err}");
    let err = check_tool(
        "get_session_events",
        json!({ "session_id": "s", "limit": 0 }),
    )
    .unwrap_err();
    assert!(
        err.ends_with("Too small: expected number to be >0 at limit"),
        "{err}"
    );
    let err = check_tool(
        "get_session_events",
        json!({ "session_id": "s", "limit": 1.5 }),
    )
    .unwrap_err();
    assert!(
        err.ends_with("expected int, received number at limit"),
        "{err}"
    );
    let err = check_tool("acquire_control_lease", json!({
        "session_id": "s", "kind": "weird", "mode": "background", "ttl_ms": 1, "action_budget": 1,
        "window_ids": [true]
    }))
    .unwrap_err();
    assert!(err.contains("Invalid option: expected one of \"cooperative\"|\"exclusive\" at kind\nInvalid input at window_ids[0]"), "{err}");
    let err = check_tool(
        "preview_action",
        json!({
            "session_id": "s", "tool": "t", "arguments": {}, "mode": "shadow",
            "postcondition": { "kind": "ui_element", "exists": true }
        }),
    )
    .unwrap_err();
    assert!(
        err.ends_with("role or label is required at postcondition"),
        "{err}"
    );
    assert!(check_tool("get_session", json!({ "session_id": "s", "extra": null })).is_ok());
}

#[test]
fn every_schema_is_an_object_schema() {
    for tool in TOOLS {
        let schema = tool.input_schema();
        assert_eq!(schema.get("type"), Some(&json!("object")), "{}", tool.name);
    }
    let execute = find("execute_action")
        .map(ToolSpec::input_schema)
        .unwrap_or_default();
    assert_eq!(
        execute["required"],
        json!(["session_id", "action_id", "tool", "arguments", "mode"])
    );
}
