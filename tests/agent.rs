//! The agent layer: what a model may propose, how its computer-use actions
//! map onto the low-level tools, and the loop that governs them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use adk_computer_use::ComputerUseError;
use adk_computer_use::agent::formats::{from_anthropic, from_openai};
use adk_computer_use::agent::{
    AgentLoop, AgentStop, AllowedActions, PlanOutput, PlannedStep, ScriptedPlanner,
};
use adk_computer_use::contracts::*;
use adk_computer_use::runtime::Observations;
use common::*;
use proptest::prelude::*;
use serde_json::{Value, json};

const AT: &str = "2026-07-13T10:00:00Z";

fn allowed() -> AllowedActions {
    AllowedActions::default()
        .allow("write_clipboard", &[ExecutionMode::Background], None)
        .allow(
            "left_click",
            &[ExecutionMode::Foreground],
            Some(json!({ "required": ["coordinate"] })),
        )
        .allow("double_click", &[ExecutionMode::Foreground], None)
}

fn field_of(err: &ComputerUseError) -> &str {
    err.field().unwrap_or("-")
}

#[test]
fn the_schema_names_only_what_a_model_may_choose() {
    let schema = allowed().schema();
    assert_eq!(schema["additionalProperties"], false);
    let properties: Vec<&str> = schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for forbidden in [
        "action_id",
        "session_id",
        "agent_id",
        "lease_id",
        "approval",
        "principal_id",
        "scope",
    ] {
        assert!(
            !properties.contains(&forbidden),
            "{forbidden} is not the model's"
        );
    }
    assert_eq!(
        schema["properties"]["tool"]["enum"],
        json!(["double_click", "left_click", "write_clipboard", null])
    );
}

#[test]
fn every_output_outside_the_schema_is_refused_naming_the_field() {
    let ok = json!({ "kind": "act", "tool": "write_clipboard", "arguments": { "text": "hi" }, "mode": "background", "data_labels": ["public"], "summary": "" });
    match allowed().check(&ok).unwrap() {
        PlannedStep::Act(action) => {
            assert_eq!(action.tool, "write_clipboard");
            assert_eq!(action.mode, ExecutionMode::Background);
            assert_eq!(action.action_id, None, "the chain names the action");
            assert_eq!(action.target, None);
            assert_eq!(action.data_labels, vec![DataLabel::Public]);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        allowed().check(&json!({ "kind": "done", "summary": "all set" })).unwrap(),
        PlannedStep::Done { summary } if summary == "all set"
    ));
    let with = |key: &str, value: Value| {
        let mut output = ok.clone();
        output[key] = value;
        output
    };
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "an identity",
            with("principal_id", json!("root")),
            "(unknown field)",
        ),
        (
            "an action id",
            with("action_id", json!("mine")),
            "(unknown field)",
        ),
        ("a lease", with("lease_id", json!("l-1")), "(unknown field)"),
        (
            "an approval",
            with("approval", json!({ "grantId": "g" })),
            "(unknown field)",
        ),
        (
            "a session",
            with("session_id", json!("s-2")),
            "(unknown field)",
        ),
        ("a tool outside", with("tool", json!("run_script")), "tool"),
        ("no tool", with("tool", Value::Null), "tool"),
        ("a mode outside", with("mode", json!("foreground")), "mode"),
        (
            "arguments not an object",
            with("arguments", json!("text")),
            "arguments",
        ),
        (
            "an unknown label",
            with("data_labels", json!(["secret"])),
            "data_labels",
        ),
        (
            "labels not a list",
            with("data_labels", json!("public")),
            "data_labels",
        ),
        ("no kind", with("kind", Value::Null), "kind"),
        ("another kind", with("kind", json!("maybe")), "kind"),
        (
            "a long summary",
            with("summary", json!("x".repeat(5000))),
            "summary",
        ),
    ];
    for (name, output, field) in cases {
        let err = allowed().check(&output).unwrap_err();
        assert_eq!(field_of(&err), field, "{name}: {err}");
    }
    // A tool's argument schema: required keys are required.
    let click = json!({ "kind": "act", "tool": "left_click", "arguments": {}, "mode": "foreground", "data_labels": [], "summary": "" });
    assert_eq!(field_of(&allowed().check(&click).unwrap_err()), "arguments");
    assert_eq!(field_of(&allowed().check(&json!([1])).unwrap_err()), "kind");
}

fn screen() -> Observations {
    windows_observed(
        json!([
            { "windowId": 1, "bundleId": "com.back", "pid": 10, "title": "Back",
              "bounds": { "x": 0, "y": 0, "width": 800, "height": 600 } },
            { "windowId": 2, "bundleId": "com.front", "pid": 20, "title": "Front", "isFocused": true,
              "bounds": { "x": 100, "y": 100, "width": 200, "height": 200 } },
        ]),
        AT,
    )
}

/// (action, tool, arguments, mode, the app it hit)
type Row = (
    Value,
    &'static str,
    Value,
    ExecutionMode,
    Option<&'static str>,
);

type Mapping = fn(
    &Value,
    &Observations,
    &str,
) -> Result<adk_computer_use::agent::formats::MappedAction, ComputerUseError>;

/// Every row maps onto its tool, arguments, mode and hit app.
fn check_mappings(map: Mapping, rows: Vec<Row>) {
    for (action, tool, arguments, mode, app) in rows {
        let mapped = map(&action, &screen(), AT)
            .unwrap_or_else(|e| panic!("{action}: {e}"))
            .action;
        assert_eq!(mapped.tool, tool, "{action}");
        assert_eq!(mapped.arguments, arguments, "{action}");
        assert_eq!(mapped.mode, mode, "{action}");
        assert_eq!(
            mapped.target.as_ref().map(|t| t.app_id.as_str()),
            app,
            "{action}"
        );
    }
}

/// Every row is refused, naming its field.
fn check_refusals(map: Mapping, refusals: Vec<(Value, &str)>) {
    for (action, field) in refusals {
        let err = map(&action, &screen(), AT).unwrap_err();
        assert_eq!(field_of(&err), field, "{action}: {err}");
    }
}

#[test]
fn every_openai_action_maps_onto_a_low_level_tool() {
    use ExecutionMode::{Foreground, Shadow};
    let rows: Vec<Row> = vec![
        (
            json!({ "type": "click", "x": 150, "y": 150 }),
            "left_click",
            json!({ "coordinate": [150, 150] }),
            Foreground,
            Some("com.front"),
        ),
        (
            json!({ "type": "click", "x": 50, "y": 50, "button": "right" }),
            "right_click",
            json!({ "coordinate": [50, 50] }),
            Foreground,
            Some("com.back"),
        ),
        (
            json!({ "type": "click", "x": 50, "y": 50, "button": "wheel" }),
            "middle_click",
            json!({ "coordinate": [50, 50] }),
            Foreground,
            Some("com.back"),
        ),
        (
            json!({ "type": "double_click", "x": 120, "y": 290 }),
            "double_click",
            json!({ "coordinate": [120, 290] }),
            Foreground,
            Some("com.front"),
        ),
        (
            json!({ "type": "scroll", "x": 10, "y": 10, "scroll_x": 0, "scroll_y": 250 }),
            "scroll",
            json!({ "coordinate": [10, 10], "direction": "down", "amount": 3 }),
            Foreground,
            Some("com.back"),
        ),
        (
            json!({ "type": "scroll", "x": 10, "y": 10, "scroll_x": -100, "scroll_y": 0 }),
            "scroll",
            json!({ "coordinate": [10, 10], "direction": "left", "amount": 1 }),
            Foreground,
            Some("com.back"),
        ),
        (
            json!({ "type": "type", "text": "hello" }),
            "type",
            json!({ "text": "hello" }),
            Foreground,
            None,
        ),
        (
            json!({ "type": "keypress", "keys": ["CTRL", "C"] }),
            "key",
            json!({ "text": "ctrl+c" }),
            Foreground,
            None,
        ),
        (
            json!({ "type": "drag", "path": [{ "x": 110, "y": 110 }, { "x": 20, "y": 30 }, { "x": 250, "y": 260 }] }),
            "left_click_drag",
            json!({ "start_coordinate": [110, 110], "coordinate": [250, 260] }),
            Foreground,
            Some("com.front"),
        ),
        (
            json!({ "type": "move", "x": 5, "y": 5 }),
            "mouse_move",
            json!({ "coordinate": [5, 5] }),
            Foreground,
            Some("com.back"),
        ),
        (
            json!({ "type": "wait" }),
            "wait",
            json!({ "duration": 1.0 }),
            Shadow,
            None,
        ),
        (
            json!({ "type": "screenshot" }),
            "screenshot",
            json!({}),
            Shadow,
            None,
        ),
    ];
    check_mappings(from_openai, rows);
    let refusals: Vec<(Value, &str)> = vec![
        (json!({ "type": "teleport" }), "type"),
        (json!({ "type": "click", "y": 10 }), "x"),
        (json!({ "type": "click", "x": -1, "y": 10 }), "x"),
        (json!({ "type": "click", "x": 1.5, "y": 10 }), "x"),
        (json!({ "type": "click", "x": 40000, "y": 10 }), "x"),
        (json!({ "type": "click", "x": 900, "y": 900 }), "coordinate"),
        (
            json!({ "type": "click", "x": 10, "y": 10, "button": "back" }),
            "button",
        ),
        (
            json!({ "type": "scroll", "x": 10, "y": 10, "scroll_x": 0, "scroll_y": 0 }),
            "scroll_y",
        ),
        (
            json!({ "type": "scroll", "x": 10, "y": 10, "scroll_x": 5, "scroll_y": 5 }),
            "scroll_x",
        ),
        (json!({ "type": "type", "text": "" }), "text"),
        (json!({ "type": "keypress", "keys": [] }), "keys"),
        (
            json!({ "type": "drag", "path": [{ "x": 1, "y": 1 }] }),
            "path",
        ),
        (json!({ "type": "wait", "ms": 400000 }), "duration"),
        (
            json!({ "type": "scroll", "x": 10, "y": 10, "scroll_y": i64::MAX }),
            "scroll_y",
        ),
        (
            json!({ "type": "scroll", "x": 10, "y": 10, "scroll_y": i64::MIN }),
            "scroll_y",
        ),
        (
            json!({ "type": "scroll", "x": 10, "y": 10, "scroll_y": 2.5 }),
            "scroll_y",
        ),
        (
            json!({ "type": "drag", "path": [{ "x": 110, "y": 110 }, { "x": 900, "y": 900 }] }),
            "coordinate",
        ),
        (
            json!({ "type": "drag", "path": [{ "x": 110, "y": 110 }, { "x": "junk" }, { "x": 20, "y": 20 }] }),
            "path",
        ),
        // A drop in another window than the one the drag starts in: the
        // evidence would bind the start's window only.
        (
            json!({ "type": "drag", "path": [{ "x": 110, "y": 110 }, { "x": 700, "y": 500 }] }),
            "coordinate",
        ),
    ];
    check_refusals(from_openai, refusals);
}

#[test]
fn every_anthropic_action_maps_onto_a_low_level_tool() {
    use ExecutionMode::{Foreground, Shadow};
    let mut rows: Vec<Row> = [
        "left_click",
        "right_click",
        "middle_click",
        "double_click",
        "triple_click",
    ]
    .into_iter()
    .map(|a| {
        (
            json!({ "action": a, "coordinate": [150, 150] }),
            a,
            json!({ "coordinate": [150, 150] }),
            Foreground,
            Some("com.front"),
        )
    })
    .collect();
    rows.extend([
        (json!({ "action": "mouse_move", "coordinate": [5, 5] }), "mouse_move", json!({ "coordinate": [5, 5] }), Foreground, Some("com.back")),
        (json!({ "action": "left_click_drag", "start_coordinate": [5, 5], "coordinate": [50, 60] }), "left_click_drag", json!({ "start_coordinate": [5, 5], "coordinate": [50, 60] }), Foreground, Some("com.back")),
        (json!({ "action": "type", "text": "hi" }), "type", json!({ "text": "hi" }), Foreground, None),
        (json!({ "action": "key", "text": "Return" }), "key", json!({ "text": "Return" }), Foreground, None),
        (json!({ "action": "scroll", "coordinate": [150, 150], "scroll_direction": "up", "scroll_amount": 5 }), "scroll", json!({ "coordinate": [150, 150], "direction": "up", "amount": 5 }), Foreground, Some("com.front")),
        (json!({ "action": "wait", "duration": 2 }), "wait", json!({ "duration": 2.0 }), Shadow, None),
        (json!({ "action": "screenshot" }), "screenshot", json!({}), Shadow, None),
    ]);
    check_mappings(from_anthropic, rows);
    let refusals: Vec<(Value, &str)> = vec![
        (json!({ "action": "cursor_position" }), "action"),
        (json!({ "action": "left_click" }), "coordinate"),
        (
            json!({ "action": "left_click", "coordinate": [1] }),
            "coordinate",
        ),
        (
            json!({ "action": "left_click", "coordinate": [1, -2] }),
            "coordinate",
        ),
        (
            json!({ "action": "left_click_drag", "coordinate": [1, 1] }),
            "start_coordinate",
        ),
        (
            json!({ "action": "left_click_drag", "start_coordinate": [5, 5], "coordinate": [150, 150] }),
            "coordinate",
        ),
        (
            json!({ "action": "scroll", "coordinate": [1, 1], "scroll_direction": "sideways" }),
            "scroll_direction",
        ),
        (
            json!({ "action": "scroll", "coordinate": [1, 1], "scroll_direction": "up", "scroll_amount": 0 }),
            "scroll_amount",
        ),
        (json!({ "action": "key" }), "text"),
        (json!({ "action": "wait", "duration": 0 }), "duration"),
        (
            json!({ "action": "left_click", "coordinate": [1000, 1000] }),
            "coordinate",
        ),
    ];
    check_refusals(from_anthropic, refusals);
}

/// A loop over the fake runtime with one scripted output.
async fn one_step(output: PlanOutput) -> (Arc<FakeRuntime>, Result<(), ComputerUseError>) {
    let rig = rig();
    let allowed =
        AllowedActions::default().allow("write_clipboard", &[ExecutionMode::Background], None);
    let planner = ScriptedPlanner::new([
        output,
        PlanOutput::Structured(json!({ "kind": "done", "summary": "" })),
    ]);
    let result = AgentLoop::new(&rig.session, planner, allowed)
        .budget(2)
        .run("put text on the clipboard")
        .await
        .into_result()
        .map(|_| ());
    (rig.runtime, result)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, .. ProptestConfig::default() })]

    /// Arbitrary planner outputs never reach the runtime unless they pass
    /// the schema, and what reaches it carries the chain's identity, scope
    /// and action id and the allowed mode, whatever the model wrote.
    #[test]
    fn planner_outputs_reach_the_runtime_only_when_valid(
        kind in prop::sample::select(vec!["act", "done", "other"]),
        tool in prop::sample::select(vec!["write_clipboard", "run_script", "left_click"]),
        mode in prop::sample::select(vec!["background", "foreground", "shadow"]),
        extra in prop::option::of(prop::sample::select(vec!["action_id", "session_id", "principal_id", "lease_id", "agent_id", "approval"])),
        text in "[a-z]{0,8}",
    ) {
        let mut output = json!({ "kind": kind, "tool": tool, "arguments": { "text": text }, "mode": mode, "data_labels": ["public"], "summary": "" });
        if let Some(extra) = extra {
            output[extra] = json!("forged");
        }
        let valid = kind == "act" && tool == "write_clipboard" && mode == "background" && extra.is_none();
        let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (runtime, result) = tokio.block_on(one_step(PlanOutput::Structured(output)));
        let previews = runtime.count(Call::Preview);
        if valid {
            prop_assert!(result.is_ok(), "{:?}", result);
            prop_assert_eq!(previews, 1);
            let truth = runtime.truth();
            let id = truth.previews_answered.first().cloned().unwrap_or_default();
            prop_assert!(id.starts_with("agent-"), "the loop names the action: {}", id);
        } else if kind == "done" && extra.is_none() {
            prop_assert_eq!(previews, 0);
        } else {
            prop_assert!(result.is_err());
            prop_assert_eq!(previews, 0, "an invalid output reached the runtime");
            prop_assert_eq!(runtime.mutations(), 0);
        }
    }
}

#[tokio::test]
async fn a_mapped_action_outside_the_allowed_tools_never_reaches_the_runtime() {
    // A model's click, with write_clipboard the only allowed tool.
    let (runtime, result) = one_step(PlanOutput::Anthropic(
        json!({ "action": "type", "text": "x" }),
    ))
    .await;
    assert_eq!(field_of(&result.unwrap_err()), "tool");
    assert_eq!(runtime.count(Call::Preview), 0);
}

#[tokio::test]
async fn an_interrupted_loop_stops_before_its_next_step() {
    use adk_computer_use::runtime::AgentInterrupter;
    let rig = rig();
    let planner = ScriptedPlanner::new([PlanOutput::Structured(
        json!({ "kind": "done", "summary": "" }),
    )]);
    let agent = AgentLoop::new(&rig.session, planner, allowed());
    agent.interrupter().interrupt("the user pressed stop").await;
    let report = agent.run("anything").await.into_result().unwrap();
    assert!(matches!(report.stop, AgentStop::Interrupted), "{report:?}");
    assert_eq!(rig.runtime.count(Call::Preview), 0);
}

#[test]
fn a_point_under_two_unfocused_windows_or_a_window_without_an_id_is_refused() {
    let mut observed = screen();
    observed.semantic.structured["windows"][1]["isFocused"] = json!(false);
    let err = from_openai(
        &json!({ "type": "click", "x": 150, "y": 150 }),
        &observed,
        AT,
    )
    .unwrap_err();
    assert_eq!(field_of(&err), "coordinate", "{err}");
    // Both windows of one app, the one under the point without a usable id:
    // never the other window's evidence.
    let mut observed = screen();
    observed.semantic.structured["windows"] = json!([
        { "windowId": 5, "bundleId": "com.app", "bounds": { "x": 0, "y": 0, "width": 100, "height": 100 } },
        { "windowId": -3, "bundleId": "com.app", "bounds": { "x": 500, "y": 500, "width": 100, "height": 100 } },
    ]);
    let err = from_openai(
        &json!({ "type": "click", "x": 550, "y": 550 }),
        &observed,
        AT,
    )
    .unwrap_err();
    assert_eq!(field_of(&err), "coordinate", "{err}");
}

#[test]
fn structured_arguments_may_not_aim_elsewhere_or_name_the_chains_ids() {
    for key in adk_computer_use::agent::formats::FORBIDDEN_ARGUMENTS {
        let output = json!({ "kind": "act", "tool": "left_click", "arguments": { "coordinate": [1, 1], key: "x" }, "mode": "foreground", "data_labels": [], "summary": "" });
        let err = allowed().check(&output).unwrap_err();
        assert_eq!(field_of(&err), "arguments", "{key}: {err}");
    }
}

/// Issue 20, item 4: a tool's argument schema refuses a misspelled key, a
/// missing required one and a value of the wrong type before anything is
/// previewed.
#[test]
fn the_argument_schema_refuses_unknown_missing_and_mistyped_arguments() {
    let allowed = AllowedActions::default().allow(
        "write_clipboard",
        &[ExecutionMode::Background],
        Some(json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"]
        })),
    );
    let output = |arguments: Value| {
        json!({ "kind": "act", "tool": "write_clipboard", "arguments": arguments,
                "mode": "background", "data_labels": ["public"], "summary": "" })
    };
    for bad in [
        json!({ "txt": "hi" }),
        json!({ "text": 42 }),
        json!({ "text": "hi", "txt": "hi" }),
    ] {
        assert!(
            allowed.check(&output(bad.clone())).is_err(),
            "{bad} must be refused"
        );
    }
    assert!(allowed.check(&output(json!({ "text": "hi" }))).is_ok());
}
