//! Review findings 6 and 7 (issue #19) on the agent loop.
//!
//! 6: every point a structured planner output names is hit-tested against
//! the observed windows — `x`/`y`, `coordinate`, `start_coordinate`,
//! `end_coordinate`, `path`, `from`/`to`, `start`/`end` — and a point-like
//! argument the mapping does not understand is refused: the runtime gets
//! the arguments as they are, so an unchecked point would land wherever it
//! says.
//!
//! 7: an interrupt stops the loop even while the planner never answers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::agent::formats::locate;
use adk_computer_use::agent::{
    AgentLoop, AgentStop, AllowedActions, PlanContext, PlanOutput, PlannedStep, Planner,
    ScriptedPlanner,
};
use adk_computer_use::contracts::ExecutionMode;
use adk_computer_use::journal::{Journal, MemoryJournal};
use adk_computer_use::runtime::{AgentInterrupter, Observations, ProposedAction};
use adk_computer_use::{
    ComputerUseMcpRuntime, McpRuntimeConfig, ScopeAuthorizer, Session, VerifiedIdentity,
};
use common::windows_observed;
use computer_use_server::{CLIPBOARD_APP, Config};
use serde_json::{Value, json};

const AT: &str = "2026-07-13T10:00:00Z";

/// Two windows side by side: the target (0..400) and another app's
/// (500..900), neither over the other.
fn two_windows() -> Observations {
    windows_observed(
        json!([
            { "windowId": 1, "bundleId": "com.target", "pid": 10, "title": "Target", "isFocused": true,
              "bounds": { "x": 0, "y": 0, "width": 400, "height": 400 } },
            { "windowId": 2, "bundleId": "com.other", "pid": 20, "title": "Other",
              "bounds": { "x": 500, "y": 0, "width": 400, "height": 400 } },
        ]),
        AT,
    )
}

/// `tool` with `arguments` is refused before preview, as planner output.
fn refused(tool: &str, arguments: &Value) {
    let err = structured(tool, arguments.clone()).unwrap_err();
    assert!(
        matches!(
            err,
            ComputerUseError::InvalidField {
                object: "PlannerOutput",
                ..
            }
        ),
        "{arguments}: {err}"
    );
}

/// A schema that lets any argument through: the hit-test, not the
/// argument schema, must refuse a point in another window (a server's
/// own tool may spell its points any way).
fn any_arguments() -> Option<Value> {
    Some(json!({ "type": "object", "additionalProperties": true }))
}

fn pointer_tools() -> AllowedActions {
    ["left_click", "left_click_drag", "mouse_move", "scroll"]
        .into_iter()
        .fold(AllowedActions::default(), |allowed, tool| {
            allowed.allow(tool, &[ExecutionMode::Foreground], any_arguments())
        })
}

/// A structured output, checked against the schema and then located, as
/// the agent loop does.
fn structured(tool: &str, arguments: Value) -> Result<ProposedAction, ComputerUseError> {
    let output = json!({ "kind": "act", "tool": tool, "arguments": arguments, "mode": "foreground", "data_labels": [], "summary": "" });
    let PlannedStep::Act(action) = pointer_tools().check(&output)? else {
        panic!("{output} is an action");
    };
    let mut action = *action;
    locate(&mut action, &two_windows(), AT)?;
    Ok(action)
}

fn app(action: &ProposedAction) -> Option<&str> {
    action.target.as_ref().map(|t| t.app_id.as_str())
}

/// `x`/`y` is a point like `coordinate` is: both get the evidence of the
/// window under the point, never the session target's by default.
#[test]
fn x_and_y_are_hit_tested_like_coordinate() {
    for (inside, app_hit) in [((700, 200), "com.other"), ((100, 100), "com.target")] {
        let by_pair =
            structured("left_click", json!({ "coordinate": [inside.0, inside.1] })).unwrap();
        let by_xy = structured("left_click", json!({ "x": inside.0, "y": inside.1 })).unwrap();
        assert_eq!(app(&by_pair), Some(app_hit));
        assert_eq!(app(&by_xy), Some(app_hit), "x/y at {inside:?}");
        assert_eq!(by_xy.target, by_pair.target);
    }
    // Outside every window, junk, or one axis only: refused like coordinate.
    for arguments in [
        json!({ "x": 450, "y": 100 }),
        json!({ "x": -5, "y": 100 }),
        json!({ "x": "700", "y": 100 }),
        json!({ "x": 100 }),
        json!({ "y": 100 }),
    ] {
        refused("left_click", &arguments);
    }
}

/// Every other point of the action lands in the window the action starts
/// in, whichever field names it.
#[test]
fn end_points_and_paths_into_another_window_are_refused() {
    for arguments in [
        json!({ "start_coordinate": [100, 100], "end_coordinate": [700, 200] }),
        json!({ "start_coordinate": [100, 100], "coordinate": [700, 200] }),
        json!({ "coordinate": [100, 100], "end_coordinate": [700, 200] }),
        json!({ "path": [[100, 100], [200, 200], [700, 200]] }),
        json!({ "path": [{ "x": 100, "y": 100 }, { "x": 700, "y": 200 }] }),
        json!({ "from": [100, 100], "to": [700, 200] }),
        json!({ "start": { "x": 100, "y": 100 }, "end": { "x": 700, "y": 200 } }),
        json!({ "x": 100, "y": 100, "to": [700, 200] }),
        // Starting in the other window and ending in the target is the
        // other window's action, refused by the session, here or there.
        json!({ "path": [[700, 200], [100, 100]] }),
    ] {
        refused("left_click_drag", &arguments);
    }
    // A middle or end point outside every window is refused too.
    let err = structured(
        "left_click_drag",
        json!({ "start_coordinate": [100, 100], "end_coordinate": [450, 100] }),
    )
    .unwrap_err();
    assert_eq!(err.field(), Some("coordinate"), "{err}");
    // Within the target, each form is accepted with the target's evidence.
    for arguments in [
        json!({ "start_coordinate": [10, 10], "end_coordinate": [300, 300] }),
        json!({ "start_coordinate": [10, 10], "coordinate": [300, 300] }),
        json!({ "path": [[10, 10], [50, 50], [300, 300]] }),
        json!({ "path": [{ "x": 10, "y": 10 }, { "x": 300, "y": 300 }] }),
        json!({ "from": [10, 10], "to": { "x": 300, "y": 300 } }),
        json!({ "start": [10, 10], "end": [300, 300] }),
    ] {
        let action = structured("left_click_drag", arguments.clone())
            .unwrap_or_else(|e| panic!("{arguments}: {e}"));
        assert_eq!(app(&action), Some("com.target"), "{arguments}");
    }
}

/// A field that may name a point but that the mapping does not read is
/// refused, even when its point is inside the target: the runtime would
/// act on it unchecked.
#[test]
fn a_point_in_a_field_the_mapping_does_not_read_is_refused() {
    for arguments in [
        json!({ "coordinate": [100, 100], "position": [700, 200] }),
        json!({ "point": [700, 200] }),
        json!({ "coordinates": [[700, 200]] }),
        json!({ "target_point": { "x": 700, "y": 200 } }),
        json!({ "end_x": 700, "end_y": 200 }),
        json!({ "x1": 100, "y1": 100 }),
        json!({ "location": [100, 100] }),
        json!({ "coordinate": [100, 100], "options": { "to": [700, 200] } }),
        json!({ "coordinate": [100, 100], "steps": [{ "x": 700, "y": 200 }] }),
        json!({ "path": "a/b.txt" }),
        json!({ "path": [] }),
        json!({ "to": { "x": 100, "y": 100, "z": 3 } }),
    ] {
        refused("left_click", &arguments);
    }
    // A pointer tool that names no point acts wherever the pointer is:
    // refused (a tool that is no pointer tool goes with the session's
    // target, see below).
    assert!(structured("scroll", json!({ "direction": "down", "amount": 3 })).is_err());
}

async fn sim_runtime() -> Arc<ComputerUseMcpRuntime> {
    let (runtime, _approver) = adk_computer_use_testkit::spawn(
        Config::for_principal("alice").with_stats(),
        McpRuntimeConfig::new("alice"),
    )
    .await
    .unwrap();
    runtime
        .start_session(Some("agent"), Some("team"))
        .await
        .unwrap();
    Arc::new(runtime)
}

fn foreground(
    runtime: &Arc<ComputerUseMcpRuntime>,
    journal: Arc<Journal>,
) -> Session<ComputerUseMcpRuntime> {
    let identity = VerifiedIdentity::new("alice", "t").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:foreground"]).unwrap();
    Session::builder(Arc::clone(runtime), authorizer)
        .target(CLIPBOARD_APP, None)
        .journal(journal)
        .build()
        .unwrap()
}

/// Through the simulator: a structured click at `x`/`y` in the Notes
/// window, in a session aimed at the clipboard, is refused before any
/// preview as the same point given as `coordinate` is; nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_simulator_an_x_y_click_in_another_window_is_refused_before_preview() {
    let runtime = sim_runtime().await;
    let mut refusals = Vec::new();
    for arguments in [
        json!({ "coordinate": [700, 200] }),
        json!({ "x": 700, "y": 200 }),
    ] {
        let sink = Arc::new(MemoryJournal::new());
        let session = foreground(&runtime, Arc::new(Journal::new(sink.clone())));
        let planner = ScriptedPlanner::new([PlanOutput::Structured(json!({
            "kind": "act", "tool": "left_click", "arguments": arguments,
            "mode": "foreground", "data_labels": [], "summary": ""
        }))]);
        let allowed = AllowedActions::default().allow(
            "left_click",
            &[ExecutionMode::Foreground],
            any_arguments(),
        );
        let report = AgentLoop::new(&session, planner, allowed)
            .run("click")
            .await;
        let err = report
            .error()
            .unwrap_or_else(|| panic!("{arguments}: {report:?}"));
        refusals.push((err.class(), err.field().map(str::to_owned)));
        let types: Vec<String> = sink
            .entries()
            .iter()
            .map(|e| e.event.event_type.clone())
            .collect();
        assert!(
            !types.iter().any(|t| t == "action.previewed"),
            "{arguments}: {types:?}"
        );
        let _ = session.shutdown().await;
    }
    // Both are refused before the preview: the coordinate as a point in
    // another window, x/y already as arguments upstream's left_click does
    // not take (the session checks a known tool's arguments first).
    assert_eq!(
        refusals,
        [
            ("invalid_field", Some("target".to_owned())),
            ("invalid_field", Some("arguments".to_owned()))
        ]
    );
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["totalEffects"], 0);
    assert_eq!(stats["receipts"], 0);
}

/// A planner that never answers, and says when it was asked.
struct Silent {
    asked: Arc<tokio::sync::Notify>,
}

impl Planner for Silent {
    async fn plan(&self, _context: PlanContext<'_>) -> Result<PlanOutput, ComputerUseError> {
        self.asked.notify_one();
        std::future::pending().await
    }
}

/// An interrupt stops a loop whose planner never answers: `run` returns
/// `Interrupted` (the bound is generous; without the race it never returns).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_stops_a_loop_whose_planner_never_answers() {
    let runtime = sim_runtime().await;
    let session = foreground(
        &runtime,
        Arc::new(Journal::new(Arc::new(MemoryJournal::new()))),
    );
    let asked = Arc::new(tokio::sync::Notify::new());
    let planner = Silent {
        asked: Arc::clone(&asked),
    };
    let allowed = AllowedActions::default().allow("left_click", &[ExecutionMode::Foreground], None);
    let agent = AgentLoop::new(&session, planner, allowed);
    let interrupter = agent.interrupter();
    tokio::spawn(async move {
        // Interrupt only once the planner holds the loop.
        asked.notified().await;
        interrupter.interrupt("the person pressed stop").await;
    });
    let report = tokio::time::timeout(Duration::from_secs(10), agent.run("anything")).await;
    let report = report.expect("run() returned after the interrupt");
    assert!(matches!(report.stop, AgentStop::Interrupted), "{report:?}");
    assert!(report.history.is_empty(), "{report:?}");
    let _ = session.shutdown().await;
}

/// Issue 19 review: points under other names (`pos`, `xy`, `dest`, …), a
/// pointer tool that names no point, and a button held across actions are
/// refused before preview; a file's `path` is not a point.
#[test]
fn other_point_spellings_pointless_pointer_tools_and_held_buttons_are_refused() {
    let locate_in = |tool: &str, arguments: Value| {
        let mut action = ProposedAction::new(tool, arguments, ExecutionMode::Foreground);
        locate(&mut action, &two_windows(), AT).map(|()| action)
    };
    let refused = [
        ("left_click", json!({ "pos": [20, 20] })),
        ("left_click", json!({ "xy": [20, 20] })),
        ("left_click", json!({ "dest": { "x": 700, "y": 200 } })),
        ("left_click", json!({ "at": [700, 200] })),
        ("left_click", json!({ "left": 700, "top": 200 })),
        ("left_click", json!({})),
        ("mouse_move", json!({})),
        ("scroll", json!({ "direction": "down" })),
        ("left_mouse_down", json!({})),
        ("left_mouse_up", json!({ "coordinate": [20, 20] })),
    ];
    for (tool, arguments) in refused {
        assert!(
            locate_in(tool, arguments.clone()).is_err(),
            "{tool} {arguments} must be refused"
        );
    }
    // A file path is a path, not a point; a scroll's direction is no point.
    for (tool, arguments) in [
        (
            "write_file",
            json!({ "path": "/tmp/notes.txt", "content": "hi" }),
        ),
        (
            "scroll",
            json!({ "coordinate": [20, 20], "direction": "down" }),
        ),
    ] {
        locate_in(tool, arguments.clone())
            .unwrap_or_else(|err| panic!("{tool} {arguments} is fine: {err}"));
    }
}
