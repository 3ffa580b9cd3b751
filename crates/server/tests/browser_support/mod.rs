//! A web page with a form, served by the test itself, for the browsers'
//! tests (Firefox and Chromium on X11 and on Wayland): what the page posts
//! reaches this server, outside the crate under test; a Qt order form
//! (`qt_form.py`, PyQt5 or PyQt6) that prints what it was sent; the one
//! flow each is driven through on either desktop; and the waits and
//! retries of a plan on a real desktop (a window's tree to appear and stay
//! still, a refusal on a page still settling).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use adk_computer_use::ChainOutcome;
use adk_computer_use::ExecutionMode;
use adk_computer_use::chain::Session;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::mcp::ComputerUseMcpRuntime;
use adk_computer_use::runtime::{ComputerUseRuntime, ObservationScope, ProposedAction};
use adk_computer_use_testkit::child::{Sim, host_approves, session_on};
use serde_json::{Value, json};

/// The order form, above a table of 280 rows of three cells: a page of
/// some 2,000 nodes in Chromium (about 2,200 counted), so an element is
/// resolved in a tree of a real page's size. The form is on screen: an
/// element below the fold is not `showing` and is refused as not shown.
/// A second form's button "Send", placed off the page, is a decoy a person
/// never sees: pressing "Send" must press the one on screen. A third
/// form's buttons read `showing` but are not seen: "Pay now" under a
/// notice drawn over it, "Pay later" one pixel square; pressing either
/// would post to `/unseen`.
pub fn form_page() -> String {
    let mut page = String::from(
        "<!doctype html><html><head><title>Order form</title></head><body><h1>Order</h1>\
<form method=\"post\" action=\"/submit\">\
<p><label for=\"name\">Full name</label> <input id=\"name\" name=\"name\"></p>\
<p><label for=\"city\">City</label> <input id=\"city\" name=\"city\"></p>\
<p><label><input type=\"checkbox\" name=\"gift\" value=\"yes\"> Gift wrap</label></p>\
<p><button type=\"submit\">Send order</button></p>\
</form>\
<form method=\"post\" action=\"/decoy\"><button style=\"position:absolute;left:-9999px\" name=\"decoy\" value=\"1\">Send</button></form>\
<form method=\"post\" action=\"/unseen\"><div style=\"position:relative;height:30px\">\
<button name=\"covered\" value=\"1\">Pay now</button>\
<div style=\"position:absolute;left:0;top:0;width:300px;height:30px;background:white\">Notice</div></div>\
<p><button name=\"tiny\" value=\"1\" style=\"width:1px;height:1px;padding:0;border:0;overflow:hidden\">Pay later</button></p></form>\
<table>",
    );
    for row in 0..280 {
        page.push_str(&format!(
            "<tr><td>Item {row}</td><td>Blue</td><td>{}.00</td></tr>",
            row % 97
        ));
    }
    page.push_str("</table></body></html>");
    page
}

/// A one-page HTTP server on a free local port: it serves the form and
/// hands every form posted to it (`path?body`) to the returned channel.
pub fn form_server() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}/", listener.local_addr().unwrap());
    let (posted, bodies) = mpsc::channel();
    let form = form_page();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let page: &str = if request.starts_with("POST") {
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let path = request.split_whitespace().nth(1).unwrap_or_default();
                let _ = posted.send(format!("{path}?{}", String::from_utf8_lossy(&body)));
                "<!doctype html><title>Thank you</title><p>Order received</p>"
            } else {
                &form
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    (address, bodies)
}

/// The first body the page posts, within 30 s.
pub fn posted(bodies: &mpsc::Receiver<String>) -> String {
    bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the page posted nothing to the test's HTTP server")
}

pub fn scope(runtime: &ComputerUseMcpRuntime) -> ObservationScope {
    ObservationScope {
        session_id: runtime.session_context().unwrap().session_id,
        tool: None,
        app_id: None,
        window_id: None,
    }
}

/// The window titled `title` (exactly), once the display lists it and its
/// application answers on the accessibility bus with a tree of at least
/// `nodes` nodes: its id, app id and `get_ui_tree` answer. Up to 60 s: a
/// GTK application starting on a busy machine is slow.
pub async fn accessible_window(sim: &Sim, title: &str, nodes: u64) -> (u64, String, Value) {
    let mut last = Value::Null;
    for _ in 0..300 {
        let listed = sim.observe_semantic(&scope(sim)).await.unwrap();
        let found = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .cloned();
        if let Some(window) = found {
            let id = window["windowId"].as_u64().unwrap();
            let app = window["bundleId"].as_str().unwrap().to_owned();
            let mut tree_scope = scope(sim);
            tree_scope.app_id = Some(app.clone());
            tree_scope.window_id = Some(WindowId::Number(id));
            let tree = sim.observe_semantic(&tree_scope).await.unwrap().structured;
            if tree["accessibility"] == "atspi"
                && tree["elementTreeNodes"]
                    .as_u64()
                    .is_some_and(|n| n >= nodes)
            {
                return (id, app, tree);
            }
            last = json!({ "note": tree["accessibilityNote"], "nodes": tree["elementTreeNodes"] });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{title:?} did not appear with an accessible tree within 60 s (last: {last})");
}

/// Runs `action` as a plan does: a `stale_target` refused before the effect
/// (the application still settling from the action before: its tree
/// changed between the observation and the execution, or between the
/// approval and the execution) performed nothing, so it is observed again
/// and run again, after a pause, at most five times in all. Anything else
/// fails the test, and so does a fifth refusal.
pub async fn run_as_a_plan_would(
    sim: &Sim,
    session: &Session<ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> adk_computer_use::chain::Verified {
    let mut refusals = Vec::new();
    for attempt in 0..5u64 {
        let ran = match session.run(action.clone()).await {
            Ok(adk_computer_use::ChainOutcome::Completed(done)) => Ok(done),
            Ok(adk_computer_use::ChainOutcome::NeedsApproval(pending)) => {
                adk_computer_use_testkit::child::host_approves(sim, pending)
                    .await
                    .complete()
                    .await
            }
            Ok(adk_computer_use::ChainOutcome::Blocked(b)) => panic!("blocked: {}", b.blocker()),
            Err(err) => Err(err),
        };
        match ran {
            Ok(done) => return done,
            Err(err @ adk_computer_use::ComputerUseError::Refused { .. })
                if err.refusal_code() == Some("stale_target") =>
            {
                eprintln!("refused before the effect, observed again: {err}");
                refusals.push(err.to_string());
                tokio::time::sleep(Duration::from_millis(250 * (attempt + 1))).await;
            }
            Err(err) => panic!("{err}"),
        }
    }
    panic!("refused stale five times: {refusals:#?}")
}

/// Waits, as a plan does before it acts, until window `id`'s tree has
/// stayed still for 800 ms (`wait_for_stable`, at most 30 s).
pub async fn wait_until_still(sim: &Sim, id: u64) {
    let still = sim
        .runtime
        .observe_shadow(
            "wait_for_stable",
            json!({ "window_id": id, "quiet_ms": 800, "timeout_ms": 30000 }),
        )
        .await
        .unwrap()
        .structured;
    assert_eq!(still["stable"], true, "{still}");
}

/// The refusal `action` ends in, approved by the host when the policy
/// asks first.
pub async fn refusal_of(
    sim: &Sim,
    session: &adk_computer_use::Session<adk_computer_use::mcp::ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> adk_computer_use::ComputerUseError {
    // A page still settling moves under the action (`stale_target`: refused
    // before anything was sent); a plan observes again and retries, as
    // here, and the refusal that counts is the one on a still page.
    let mut last = None;
    for _ in 0..5 {
        let ran = match session.run(action.clone()).await {
            Ok(ChainOutcome::NeedsApproval(pending)) => {
                host_approves(sim, pending).await.complete().await.map(drop)
            }
            Ok(ChainOutcome::Completed(done)) => panic!("the action ran: {}", done.outcome()),
            Ok(ChainOutcome::Blocked(blocked)) => panic!(
                "the action was blocked, not refused: {} {:?}",
                blocked.blocker(),
                blocked.reasons()
            ),
            Err(err) => Err(err),
        };
        let err = ran.expect_err("the action was not refused");
        if err.refusal_code() != Some("stale_target") {
            return err;
        }
        last = Some(err);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    last.expect("five tries")
}

/// In the browser window titled `title`, once its tree has `nodes` nodes
/// or more (the whole page exposed): a page field's writing refused in
/// the background before anything is written, the fields typed into in
/// the foreground (when `typing`), the box ticked and the form sent by
/// element in the background; what the page posts is returned.
pub async fn type_tick_and_send(
    sim: &Sim,
    typing: bool,
    title: &str,
    toolkit: &str,
    nodes: u64,
    bodies: &mpsc::Receiver<String>,
) -> String {
    let (id, app, tree) = accessible_window(sim, title, nodes).await;
    assert_eq!(tree["toolkit"], toolkit, "{}", tree["toolkit"]);
    // A browser fills its tree in after the page shows: a plan waits for
    // it to stay still before it acts, as it should.
    wait_until_still(sim, id).await;
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));

    let write = in_background(
        "fill_form",
        json!({ "window_id": id, "fields": [
            { "role": "AXTextField", "label": "Full name", "value": "Ada Lovelace" },
        ] }),
    );
    let err = refusal_of(sim, &session, write).await;
    assert_eq!(err.refusal_code(), Some("element_not_editable"), "{err}");
    assert!(err.to_string().contains("web page"), "{err}");
    if typing {
        // In the foreground the fields are typed into, each given the focus
        // first, and read back: Verified.
        let typed = ProposedAction::new(
            "fill_form",
            json!({ "window_id": id, "fields": [
                { "role": "AXTextField", "label": "Full name", "value": "Ada Lovelace" },
                { "role": "AXTextField", "label": "City", "value": "London" },
            ] }),
            ExecutionMode::Foreground,
        );
        let done = run_as_a_plan_would(sim, &session, typed).await;
        assert!(done.outcome().is_verified(), "{}", done.outcome());
    }

    // Buttons a person does not see are refused before anything is sent.
    for (label, cause) in [("Pay now", "covered"), ("Pay later", "too small")] {
        let press = in_background("press_button", json!({ "window_id": id, "label": label }));
        let err = refusal_of(sim, &session, press).await;
        assert_eq!(err.refusal_code(), Some("element_not_actionable"), "{err}");
        assert!(err.to_string().contains(cause), "{label}: {err}");
    }

    let tick = in_background(
        "click_element",
        json!({ "window_id": id, "role": "AXCheckBox", "label": "Gift wrap" }),
    );
    assert!(run_as_a_plan_would(sim, &session, tick).await.performed());
    // "Send" matches the decoy exactly, but the decoy is off the page; the
    // one button a person sees that matches is "Send order".
    let send = in_background("press_button", json!({ "window_id": id, "label": "Send" }));
    assert!(run_as_a_plan_would(sim, &session, send).await.performed());
    session.shutdown().await;
    posted(bodies)
}

fn in_background(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Background)
}

/// A Qt order form running (`qt_form.py`): what it prints when sent
/// arrives on `printed`. Killed when dropped.
pub struct QtForm {
    child: std::process::Child,
    printed: mpsc::Receiver<String>,
}

impl Drop for QtForm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the Qt order form titled `title` with `binding` (PyQt5 or
/// PyQt6), in the environment `env` adds to this process's (`DISPLAY`
/// removed when `wayland`).
pub fn qt_form(binding: &str, title: &str, env: &[(&str, String)], wayland: bool) -> QtForm {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/browser_support/qt_form.py"
    );
    let mut command = std::process::Command::new("/usr/bin/python3");
    command
        .args([script, binding, title])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    if wayland {
        command
            .env_remove("DISPLAY")
            .env("QT_QPA_PLATFORM", "wayland");
    }
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("the Qt form could not be started: {e}"));
    let stdout = child.stdout.take().unwrap();
    let (lines, printed) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    QtForm { child, printed }
}

/// The Qt order form titled `title` filled (Verified on the read-back),
/// ticked and sent by element in the background; what it printed when
/// sent (its own evidence, read outside the crate under test).
pub async fn qt_fill_tick_and_send(sim: &Sim, form: &QtForm, title: &str) -> Value {
    let (id, app, tree) = accessible_window(sim, title, 4).await;
    assert_eq!(tree["toolkit"], "qt", "{}", tree["toolkit"]);
    let session = session_on(&sim.runtime, "qt", &app, Some(WindowId::Number(id)));
    let actions = [
        in_background(
            "fill_form",
            json!({ "window_id": id, "fields": [
                { "role": "AXTextField", "label": "Full name", "value": "Ada Lovelace" },
            ] }),
        ),
        in_background(
            "click_element",
            json!({ "window_id": id, "role": "AXCheckBox", "label": "Gift wrap" }),
        ),
        in_background(
            "press_button",
            json!({ "window_id": id, "label": "Send order" }),
        ),
    ];
    for (step, action) in actions.into_iter().enumerate() {
        let done = run_as_a_plan_would(sim, &session, action).await;
        assert!(done.performed(), "step {step}");
        // The field is read back by the server: the fill is Verified.
        if step == 0 {
            assert!(done.outcome().is_verified(), "{}", done.outcome());
        }
    }
    session.shutdown().await;
    let line = form
        .printed
        .recv_timeout(Duration::from_secs(10))
        .expect("the form printed nothing: Send order was not pressed");
    serde_json::from_str(&line).unwrap()
}
