//! What applications, not pixels, cost on a real desktop: figures printed
//! beside a baseline measured in the same run, never asserted.
//!
//! `cargo bench -p computer-use-server --features x11 --bench elements`
//!
//! Needs an X server (`$DISPLAY`), a D-Bus session with the accessibility
//! bus and `zenity` (as `.ci/run` sets them up). Two figures:
//!
//! 1. **One observation round with the UI tree of a real form**
//!    (`zenity --forms`, N fields): the nodes and bytes of `get_ui_tree`'s
//!    answer and its time, beside the round's visual observation of the
//!    same window (`snapshot`) as the baseline.
//! 2. **A form of N fields filled with one governed `fill_form`**, against
//!    the same fields filled by governed click-and-type (a `left_click` on
//!    each field, then a `type` into it): the task's time and the ratio.
//!    Every action runs the whole chain (observe, preview, approval by the
//!    host where the policy asks, reserve, lease, execute, verify); each
//!    round's values are read back through `find_element` before it counts.
//!
//! Knobs: `ELEMENTS_FIELDS` (default 4), `ELEMENTS_ROUNDS` (default 3).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use adk_computer_use::chain::{ChainOutcome, Session};
use adk_computer_use::contracts::WindowId;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use::runtime::{ComputerUseRuntime, ObservationScope};
use adk_computer_use::{ExecutionMode, ProposedAction, ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use_testkit::child::{PRINCIPAL, Sim, host_approves};
use computer_use_server::Config;
use computer_use_server::desktop::x11::X11Desktop;
use serde_json::{Value, json};

mod support;
use support::{Reaped, knob};

fn spread(samples: &[f64]) -> (f64, f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    (
        sorted[0],
        sorted[sorted.len() / 2],
        sorted[sorted.len() - 1],
    )
}

fn label(i: usize) -> String {
    format!("Field {i}")
}

fn form(title: &str, fields: usize) -> Reaped {
    let mut command = Command::new("zenity");
    command.args(["--forms", "--title", title]);
    for i in 0..fields {
        command.arg(format!("--add-entry={}", label(i)));
    }
    Reaped(
        command
            .stdout(Stdio::null())
            .spawn()
            .expect("zenity could not be started (apt-get install zenity)"),
    )
}

fn scope(runtime: &ComputerUseMcpRuntime, window: Option<u64>) -> ObservationScope {
    ObservationScope {
        session_id: runtime.session_context().unwrap().session_id,
        tool: None,
        app_id: window.map(|_| "Zenity".to_owned()),
        window_id: window.map(WindowId::Number),
    }
}

/// The form's window, once its fields answer on the accessibility bus.
async fn shown(runtime: &ComputerUseMcpRuntime, title: &str, fields: usize) -> u64 {
    for _ in 0..300 {
        let listed = runtime
            .observe_semantic(&scope(runtime, None))
            .await
            .unwrap();
        let id = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .and_then(|w| w["windowId"].as_u64());
        if let Some(id) = id
            && let Ok(found) = runtime
                .observe_shadow(
                    "find_element",
                    json!({ "window_id": id, "role": "AXTextField" }),
                )
                .await
            && found
                .structured
                .as_array()
                .is_some_and(|f| f.len() == fields)
        {
            // Let the window finish painting before a pixel-bound plan.
            tokio::time::sleep(Duration::from_millis(500)).await;
            return id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the form did not appear with its fields on the accessibility bus within 30 s");
}

fn session(sim: &Sim, window: u64) -> Session<ComputerUseMcpRuntime> {
    let identity = VerifiedIdentity::new(PRINCIPAL, "tenant-bench").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:foreground"]).unwrap();
    Session::builder(Arc::clone(&sim.runtime), authorizer)
        .agent_id("bench-elements")
        .target("Zenity", Some(WindowId::Number(window)))
        .build()
        .unwrap()
}

/// One governed action to its end, the host approving where asked; a
/// window still settling (stale before anything was sent) is observed
/// again, at most three times.
async fn governed(sim: &Sim, session: &Session<ComputerUseMcpRuntime>, action: ProposedAction) {
    for attempt in 1..=3 {
        let run = match session.run(action.clone()).await {
            Ok(ChainOutcome::Completed(done)) => Ok(done),
            Ok(ChainOutcome::NeedsApproval(pending)) => {
                host_approves(sim, pending).await.complete().await
            }
            Ok(ChainOutcome::Blocked(blocked)) => panic!("blocked: {}", blocked.blocker()),
            Err(err) => Err(err),
        };
        match run {
            Ok(done) => {
                assert!(done.performed());
                return;
            }
            Err(err) if attempt < 3 && err.refusal_code() == Some("stale_target") => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("{} failed: {err}", action.tool),
        }
    }
}

/// Every field's label and value, read back by element, in label order.
async fn values(runtime: &ComputerUseMcpRuntime, window: u64) -> Vec<(String, String)> {
    let found = runtime
        .observe_shadow(
            "find_element",
            json!({ "window_id": window, "role": "AXTextField" }),
        )
        .await
        .unwrap();
    let mut held: Vec<(String, String)> = found
        .structured
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["label"].as_str().unwrap_or_default().to_owned(),
                f["value"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    held.sort();
    held
}

fn act(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Foreground)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os("DISPLAY").is_none()
        || std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none()
    {
        println!(
            "elements: needs $DISPLAY and a D-Bus session with the accessibility bus; skipped"
        );
        return;
    }
    let fields = knob("ELEMENTS_FIELDS", 4);
    let rounds = knob("ELEMENTS_ROUNDS", 3);
    let (runtime, approver) = adk_computer_use_testkit::spawn_on(
        Config::for_principal(PRINCIPAL),
        Box::new(X11Desktop::connect().unwrap()),
        McpRuntimeConfig::new(PRINCIPAL),
    )
    .await
    .unwrap();
    runtime
        .start_session(Some("bench elements"), None)
        .await
        .unwrap();
    let sim = Sim {
        runtime: Arc::new(runtime),
        approver,
    };

    // 1. One observation round with the tree of a real form.
    println!("elements: a zenity form of {fields} fields, {rounds} rounds");
    let (mut tree_ms, mut frame_ms) = (Vec::new(), Vec::new());
    let (mut nodes, mut bytes, mut frame_bytes) = (0, 0, 0);
    {
        let title = format!("Bench tree {}", std::process::id());
        let _form = form(&title, fields);
        let window = shown(&sim.runtime, &title, fields).await;
        for _ in 0..rounds.max(5) {
            let started = Instant::now();
            let frame = sim
                .runtime
                .observe_visual(&scope(&sim.runtime, Some(window)))
                .await
                .unwrap();
            frame_ms.push(started.elapsed().as_secs_f64() * 1000.0);
            frame_bytes = frame.images.iter().map(|i| i.data.len()).sum::<usize>();
            let started = Instant::now();
            let tree = sim
                .runtime
                .observe_semantic(&scope(&sim.runtime, Some(window)))
                .await
                .unwrap();
            tree_ms.push(started.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(tree.structured["accessibility"], "atspi");
            bytes = tree.structured["tree"].to_string().len();
            let mut stack = vec![tree.structured["tree"].clone()];
            nodes = 0;
            while let Some(node) = stack.pop() {
                nodes += 1;
                if let Some(children) = node["children"].as_array() {
                    stack.extend(children.iter().cloned());
                }
            }
        }
    }
    let (tree_lo, tree_mid, tree_hi) = spread(&tree_ms);
    let (frame_lo, frame_mid, frame_hi) = spread(&frame_ms);
    println!(
        "  get_ui_tree (elements): {nodes} nodes, {bytes} bytes, {tree_mid:.0} ms (min {tree_lo:.0}, max {tree_hi:.0})"
    );
    println!(
        "  snapshot (baseline):    {frame_bytes} bytes of PNG (base64), {frame_mid:.0} ms (min {frame_lo:.0}, max {frame_hi:.0})"
    );
    println!(
        "  tree / frame: {:.2}x the time, {:.3}x the bytes",
        tree_mid / frame_mid,
        bytes as f64 / frame_bytes.max(1) as f64
    );

    // 2. The same fields, by element and by click-and-type.
    let (mut by_element, mut by_input, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let value = |i: usize| format!("value {round}-{i}");
        let mut wanted: Vec<(String, String)> = (0..fields).map(|i| (label(i), value(i))).collect();
        wanted.sort();
        let mut pair = [0.0; 2];
        // Alternate which goes first, so neither always meets a warmer
        // application or a quieter machine.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let title = format!("Bench fill {} {round} {side}", std::process::id());
            let _form = form(&title, fields);
            let window = shown(&sim.runtime, &title, fields).await;
            let session = session(&sim, window);
            let started = Instant::now();
            if side == 0 {
                let entries: Vec<Value> = (0..fields)
                    .map(|i| json!({ "role": "AXTextField", "label": label(i), "value": value(i) }))
                    .collect();
                governed(
                    &sim,
                    &session,
                    act(
                        "fill_form",
                        json!({ "window_id": window, "fields": entries }),
                    ),
                )
                .await;
            } else {
                let found = sim
                    .runtime
                    .observe_shadow(
                        "find_element",
                        json!({ "window_id": window, "role": "AXTextField" }),
                    )
                    .await
                    .unwrap();
                // Each field's middle, found by its label, as a pixel plan
                // would aim at it.
                for i in 0..fields {
                    let field = found
                        .structured
                        .as_array()
                        .and_then(|all| all.iter().find(|f| f["label"] == label(i).as_str()))
                        .expect("each field is found by its label");
                    let b = &field["bounds"];
                    let (x, y) = (
                        b["x"].as_i64().unwrap() + b["width"].as_i64().unwrap() / 2,
                        b["y"].as_i64().unwrap() + b["height"].as_i64().unwrap() / 2,
                    );
                    governed(
                        &sim,
                        &session,
                        act("left_click", json!({ "coordinate": [x, y] })),
                    )
                    .await;
                    governed(&sim, &session, act("type", json!({ "text": value(i) }))).await;
                }
            }
            let elapsed = started.elapsed().as_secs_f64() * 1000.0;
            // What the application holds, read back before the round counts.
            let mut held = Vec::new();
            for _ in 0..30 {
                held = values(&sim.runtime, window).await;
                if held == wanted {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(
                held, wanted,
                "side {side} of round {round} did not fill the form"
            );
            session.shutdown().await;
            pair[side] = elapsed;
        }
        by_element.push(pair[0]);
        by_input.push(pair[1]);
        ratios.push(pair[0] / pair[1]);
    }
    let (el_lo, el_mid, el_hi) = spread(&by_element);
    let (in_lo, in_mid, in_hi) = spread(&by_input);
    let (r_lo, r_mid, r_hi) = spread(&ratios);
    println!(
        "  one governed fill_form:            {el_mid:.0} ms (min {el_lo:.0}, max {el_hi:.0})"
    );
    println!(
        "  governed click-and-type (baseline): {in_mid:.0} ms (min {in_lo:.0}, max {in_hi:.0}), {} governed actions",
        2 * fields
    );
    println!("  fill_form / click-and-type: {r_mid:.2}x (min {r_lo:.2}, max {r_hi:.2})");
}
