//! Applications, not pixels: a real GTK form (`zenity --forms`, which no
//! one here wrote) observed and filled by element through the governed
//! chain, on a real X11 display with the session's accessibility bus. The
//! outside check is zenity's own output: what it prints when OK is pressed.
//!
//! These tests need an X server and a D-Bus session with the accessibility
//! bus (`.ci/run` starts both, and installs zenity, at-spi2-core and GTK's
//! bridge); built without them, each is reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::io::Read;
use std::time::Duration;

use adk_computer_use::ExecutionMode;
use adk_computer_use::chain::{Route, Session};
use adk_computer_use::contracts::WindowId;
use adk_computer_use::mcp::ComputerUseMcpRuntime;
use adk_computer_use::runtime::{ComputerUseRuntime, ProposedAction};
use adk_computer_use_testkit::child::{Sim, run_approving};
use serde_json::{Value, json};

mod x11_support;

use x11_support::*;

/// A zenity form of its own (its title names this test), with its output.
fn form(title: &str) -> Program {
    start(
        "zenity",
        &[
            "--forms",
            "--title",
            title,
            "--add-entry=Name",
            "--add-entry=Email",
            "--add-password=Password",
        ],
    )
}

/// The window id of the form titled `title`, once it is listed and its
/// application answers on the accessibility bus; and its tree.
async fn shown(sim: &Sim, title: &str) -> (u64, Value) {
    let mut last = Value::Null;
    // Up to 30 s: a GTK application starting on a busy machine is slow.
    for _ in 0..300 {
        let listed = sim.observe_semantic(&scope(sim)).await.unwrap();
        let id = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .and_then(|w| w["windowId"].as_u64());
        if let Some(id) = id {
            let mut tree_scope = scope(sim);
            tree_scope.app_id = Some("Zenity".into());
            tree_scope.window_id = Some(WindowId::Number(id));
            let tree = sim.observe_semantic(&tree_scope).await.unwrap().structured;
            if tree["accessibility"] == "atspi" && !nodes(&tree["tree"]).is_empty() {
                return (id, tree);
            }
            last = tree["accessibilityNote"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the form {title:?} did not appear with an accessible tree within 30 s (last: {last})");
}

/// Every node of a tree, in order.
fn nodes(tree: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack = vec![tree.clone()];
    while let Some(node) = stack.pop() {
        if node.is_null() {
            continue;
        }
        if let Some(children) = node["children"].as_array() {
            stack.extend(children.iter().rev().cloned());
        }
        out.push(node);
    }
    out
}

fn session(sim: &Sim, id: u64) -> Session<ComputerUseMcpRuntime> {
    adk_computer_use_testkit::child::session_on(
        &sim.runtime,
        "x11-elements",
        "Zenity",
        Some(WindowId::Number(id)),
    )
}

fn act(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Foreground)
}

/// What zenity printed when it ended (OK pressed), waited for briefly.
fn printed(program: &mut Program) -> String {
    for _ in 0..50 {
        if program.0.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut out = String::new();
    if let Some(stdout) = program.0.stdout.as_mut() {
        stdout.read_to_string(&mut out).unwrap();
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn the_form_is_seen_as_fields_and_buttons_and_the_password_is_never_read() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Seen {}", std::process::id());
    let _form = form(&title);
    let sim = runtime().await;
    let (_, tree) = shown(&sim, &title).await;
    assert_eq!(tree["contentOrigin"], "application_untrusted");
    let all = nodes(&tree["tree"]);
    let by = |role: &str, label: &str| {
        all.iter()
            .filter(|n| n["role"] == role && n["label"] == label)
            .count()
    };
    // Labels come from the layout (zenity's labels are siblings, not
    // relations), and each field is found once.
    assert_eq!(by("AXTextField", "Name"), 1, "{tree}");
    assert_eq!(by("AXTextField", "Email"), 1, "{tree}");
    assert_eq!(by("AXSecureTextField", "Password"), 1, "{tree}");
    assert_eq!(by("AXButton", "OK"), 1, "{tree}");
    let password = all
        .iter()
        .find(|n| n["role"] == "AXSecureTextField")
        .unwrap();
    assert!(password["value"].is_null(), "{password}");
    let ok = all.iter().find(|n| n["label"] == "OK").unwrap();
    assert!(
        ok["actions"].as_array().unwrap().contains(&json!("click")),
        "{ok}"
    );
    assert!(ok["states"].as_array().unwrap().contains(&json!("enabled")));
    assert!(
        tree["elementTreeRevision"]
            .as_str()
            .unwrap()
            .starts_with("atspi-")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_form_filled_and_sent_by_element_prints_the_values_asked_for() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Sign up {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    let session = session(&sim, id);

    let fill = act(
        "fill_form",
        json!({ "window_id": id, "fields": [
            { "role": "AXTextField", "label": "Name", "value": "Ada Lovelace" },
            { "role": "AXTextField", "label": "Email", "value": "ada@example.org" },
        ] }),
    );
    let filled = run_approving(&sim, &session, fill).await;
    assert!(filled.performed());
    assert_eq!(
        filled.outcome(),
        &adk_computer_use::VerificationOutcome::Verified,
        "the chain derived the form's check and the server read every field back"
    );

    let press = act("press_button", json!({ "window_id": id, "label": "OK" }));
    let pressed = run_approving(&sim, &session, press).await;
    assert!(pressed.performed());
    session.shutdown().await;

    // zenity's own output: the values, in the form's order, the password
    // left empty.
    assert_eq!(
        printed(&mut zenity).trim_end(),
        "Ada Lovelace|ada@example.org|"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn writing_the_password_field_needs_a_persons_approval_and_its_value_is_never_digested_nor_read()
 {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Secret {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    let session = session(&sim, id);
    let write = act(
        "set_value",
        json!({ "window_id": id, "role": "AXSecureTextField", "label": "Password", "value": "hunter2" }),
    );
    let previewed = session
        .observe()
        .await
        .unwrap()
        .preview(&write)
        .await
        .unwrap();
    let preview = serde_json::to_value(previewed.preview()).unwrap();
    let sensitivity = &preview["envelope"]["targetSensitivity"];
    assert_eq!(sensitivity["assessment"], "sensitive", "{sensitivity}");
    assert_eq!(sensitivity["source"], "accessibility", "{sensitivity}");
    assert!(
        sensitivity["signals"]
            .as_array()
            .unwrap()
            .contains(&json!("secure_role")),
        "{sensitivity}"
    );
    // No digest of the secret travels in the preview: no postcondition
    // was derived for it.
    let digest = adk_computer_use::digest::sha256_prefixed("hunter2");
    assert!(!preview.to_string().contains(&digest), "{preview}");
    let Route::NeedsApproval(pending) = previewed.route() else {
        panic!("a write into a password field waits for a person");
    };
    let done = adk_computer_use_testkit::child::host_approves(&sim, pending)
        .await
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let adk_computer_use::VerificationOutcome::CommittedUnverified { reason } = done.outcome()
    else {
        panic!("a secret's field is not read back: {}", done.outcome());
    };
    assert!(reason.contains("secret"), "{reason}");
    let press = act("press_button", json!({ "window_id": id, "label": "OK" }));
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity).trim_end(), "||hunter2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn an_element_id_cannot_steer_the_check_to_another_field_than_the_one_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Steer {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, tree) = shown(&sim, &title).await;
    let name_id = nodes(&tree["tree"])
        .into_iter()
        .find(|n| n["label"] == "Name")
        .and_then(|n| n["id"].as_str().map(str::to_owned))
        .unwrap();
    let session = session(&sim, id);
    // The id names the harmless field; role and label name the password.
    let write = act(
        "set_value",
        json!({ "window_id": id, "element_id": name_id, "role": "AXSecureTextField", "label": "Password", "value": "x" }),
    );
    match session.run(write).await.unwrap() {
        adk_computer_use::ChainOutcome::Completed(done) => {
            panic!("a steered write went through: {}", done.outcome())
        }
        adk_computer_use::ChainOutcome::NeedsApproval(pending) => {
            // Approved or not, the server refuses it before anything is
            // written.
            let err = adk_computer_use_testkit::child::host_approves(&sim, pending)
                .await
                .complete()
                .await
                .expect_err("refused at execute");
            assert_refused(&err, "invalid_arguments");
        }
        // The check finds no element that is both: its sensitivity is
        // unknown, and the policy refuses it at once.
        adk_computer_use::ChainOutcome::Blocked(_) => {}
    }
    let press = act("press_button", json!({ "window_id": id, "label": "OK" }));
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity).trim_end(), "||", "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_that_is_not_there_is_refused_and_nothing_is_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Missing {}", std::process::id());
    let mut zenity = form(&title);
    let sim: Sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    let session = session(&sim, id);
    // One field that exists and one that does not: the whole action is
    // refused before the first field is touched.
    let fill = act(
        "fill_form",
        json!({ "window_id": id, "fields": [
            { "role": "AXTextField", "label": "Name", "value": "should not land" },
            { "role": "AXTextField", "label": "Phone", "value": "555" },
        ] }),
    );
    match session.run(fill).await {
        Ok(adk_computer_use::ChainOutcome::NeedsApproval(pending)) => {
            let err = adk_computer_use_testkit::child::host_approves(&sim, pending)
                .await
                .complete()
                .await
                .expect_err("refused at execute");
            assert_refused(&err, "element_not_found");
        }
        // The server's policy refuses it at preview already: a field it
        // cannot find leaves the target's sensitivity unknown.
        Ok(adk_computer_use::ChainOutcome::Blocked(blocked)) => {
            let reasons = format!("{} {:?}", blocked.blocker(), blocked.reasons());
            assert!(reasons.contains("sensitivity"), "{reasons}");
        }
        Ok(adk_computer_use::ChainOutcome::Completed(_)) => panic!("a missing field went through"),
        Err(err) => assert_refused(&err, "element_not_found"),
    }
    let press = act("press_button", json!({ "window_id": id, "label": "OK" }));
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity).trim_end(), "||", "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_hung_application_makes_the_tree_fail_within_its_deadline_not_hang() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Hung {}", std::process::id());
    let zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    let pid = zenity.0.id().to_string();
    // The application stops answering (as a modal loop or a hang would).
    tool("kill", &["-STOP", &pid]);
    let mut tree_scope = scope(&sim);
    tree_scope.app_id = Some("Zenity".into());
    tree_scope.window_id = Some(WindowId::Number(id));
    // The call comes back (a hang would never reach the next line), and
    // says the application did not answer within the deadline.
    let tree = sim.observe_semantic(&tree_scope).await.unwrap().structured;
    tool("kill", &["-CONT", &pid]);
    assert_eq!(tree["accessibility"], "unavailable", "{tree}");
    let note = tree["accessibilityNote"].as_str().unwrap_or_default();
    assert!(note.contains("did not answer within"), "{note}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_value_set_by_element_is_verified_by_the_servers_read_back_with_no_postcondition_written()
{
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Verified {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    let session = session(&sim, id);
    let write = act(
        "set_value",
        json!({ "window_id": id, "role": "AXTextField", "label": "Name", "value": "Grace Hopper" }),
    );
    let done = run_approving(&sim, &session, write).await;
    assert!(done.performed());
    assert_eq!(
        done.outcome(),
        &adk_computer_use::VerificationOutcome::Verified,
        "the chain derived the element's check and the server read the field back"
    );
    let press = act("press_button", json!({ "window_id": id, "label": "OK" }));
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity).trim_end(), "Grace Hopper||");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_labelled_by_a_relation_is_found_by_that_label_and_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Relation {}", std::process::id());
    // zenity --entry labels its field through a `labelled-by` relation.
    let mut zenity = start(
        "zenity",
        &["--entry", "--title", &title, "--text", "_Project"],
    );
    let sim = runtime().await;
    let (id, tree) = shown(&sim, &title).await;
    assert!(
        nodes(&tree["tree"])
            .iter()
            .any(|n| n["role"] == "AXTextField" && n["label"] == "Project"),
        "{tree}"
    );
    let session = session(&sim, id);
    let write = act(
        "set_value",
        json!({ "window_id": id, "role": "AXTextField", "label": "Project", "value": "Analytical Engine" }),
    );
    let done = run_approving(&sim, &session, write).await;
    assert_eq!(
        done.outcome(),
        &adk_computer_use::VerificationOutcome::Verified
    );
    let press = act("press_button", json!({ "window_id": id, "label": "OK" }));
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity).trim_end(), "Analytical Engine");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn click_element_does_not_press_a_text_field() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Click {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    let session = session(&sim, id);
    // A field's action is Enter, which would press the dialog's default
    // button: refused, and the dialog stays open.
    let click = act(
        "click_element",
        json!({ "window_id": id, "role": "AXTextField", "label": "Name" }),
    );
    match session.run(click).await {
        Ok(adk_computer_use::ChainOutcome::Completed(done)) => {
            panic!("a click on a text field went through: {}", done.outcome())
        }
        Ok(adk_computer_use::ChainOutcome::NeedsApproval(pending)) => {
            let err = adk_computer_use_testkit::child::host_approves(&sim, pending)
                .await
                .complete()
                .await
                .expect_err("refused at execute");
            assert_refused(&err, "invalid_arguments");
        }
        Ok(adk_computer_use::ChainOutcome::Blocked(_)) => {}
        Err(err) => assert_refused(&err, "invalid_arguments"),
    }
    assert!(
        zenity.0.try_wait().unwrap().is_none(),
        "the dialog is still open: nothing was pressed"
    );
    let press = act(
        "press_button",
        json!({ "window_id": id, "label": "Cancel" }),
    );
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn find_element_matches_role_label_and_value_together_and_never_matches_a_secret() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Find {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    let find = |args: Value| {
        let runtime = std::sync::Arc::clone(&sim.runtime);
        async move {
            runtime
                .observe_shadow("find_element", args)
                .await
                .unwrap()
                .structured
        }
    };
    // Case-insensitive substrings, all criteria at once.
    let fields = find(json!({ "window_id": id, "role": "axtextfield", "label": "MAI" })).await;
    let fields = fields.as_array().unwrap();
    assert_eq!(fields.len(), 1, "{fields:?}");
    assert_eq!(fields[0]["label"], "Email");
    assert!(fields[0]["path"].as_array().is_some_and(|p| !p.is_empty()));
    assert!(fields[0].get("children").is_none(), "a flat result");
    let both = find(json!({ "window_id": id, "role": "AXTextField" })).await;
    assert_eq!(both.as_array().unwrap().len(), 2, "{both}");
    let one = find(json!({ "window_id": id, "role": "AXTextField", "max_results": 1 })).await;
    assert_eq!(one.as_array().unwrap().len(), 1, "{one}");

    // Values, once written through the chain, are found by value; the
    // password's never is, nor is it ever shown.
    let session = session(&sim, id);
    let fill = act(
        "fill_form",
        json!({ "window_id": id, "fields": [
            { "role": "AXTextField", "label": "Name", "value": "Ada Lovelace" },
        ] }),
    );
    assert!(run_approving(&sim, &session, fill).await.performed());
    let secret = act(
        "set_value",
        json!({ "window_id": id, "role": "AXSecureTextField", "label": "Password", "value": "lovelace-secret" }),
    );
    let Route::NeedsApproval(pending) = session
        .observe()
        .await
        .unwrap()
        .preview(&secret)
        .await
        .unwrap()
        .route()
    else {
        panic!("a write into a password field waits for a person");
    };
    let written = adk_computer_use_testkit::child::host_approves(&sim, pending)
        .await
        .complete()
        .await
        .unwrap();
    assert!(written.performed());
    let by_value = find(json!({ "window_id": id, "value": "LOVELACE" })).await;
    let by_value = by_value.as_array().unwrap();
    assert_eq!(
        by_value.len(),
        1,
        "only the name holds it visibly: {by_value:?}"
    );
    assert_eq!(by_value[0]["label"], "Name");
    let password = find(json!({ "window_id": id, "role": "AXSecureTextField" })).await;
    assert!(password[0]["value"].is_null(), "{password}");
    assert!(!password.to_string().contains("lovelace-secret"));

    // Bad criteria are refused, typed, before any walk.
    let refused = sim
        .runtime
        .observe_shadow("find_element", json!({ "window_id": id, "max_results": 0 }))
        .await
        .expect_err("max_results 0 is refused");
    assert_refused(&refused, "execution_failed");
    let press = act("press_button", json!({ "window_id": id, "label": "OK" }));
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(
        printed(&mut zenity).trim_end(),
        "Ada Lovelace||lovelace-secret"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn the_focused_element_is_the_field_the_application_says_has_the_focus() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Focus {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    // The display's focus goes to the form, as a person's click would
    // (outside this crate: xdotool), and GTK puts its own focus on the
    // first field.
    tool("xdotool", &["windowfocus", "--sync", &id.to_string()]);
    let mut focused = Value::Null;
    for _ in 0..100 {
        focused = sim
            .runtime
            .observe_shadow("get_focused_element", json!({}))
            .await
            .unwrap()
            .structured;
        if focused["role"] == "AXTextField" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(focused["windowId"], json!(id), "{focused}");
    assert_eq!(focused["role"], "AXTextField", "{focused}");
    assert_eq!(focused["label"], "Name", "{focused}");
    assert!(
        focused["states"]
            .as_array()
            .unwrap()
            .contains(&json!("focused")),
        "{focused}"
    );
    let session = session(&sim, id);
    let press = act(
        "press_button",
        json!({ "window_id": id, "label": "Cancel" }),
    );
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity), "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn get_ui_tree_walks_as_deep_as_asked_and_no_deeper() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Depth {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, full) = shown(&sim, &title).await;
    let depth = |tree: &Value| {
        fn deepest(node: &Value) -> usize {
            node["children"]
                .as_array()
                .map_or(0, |c| c.iter().map(|n| 1 + deepest(n)).max().unwrap_or(0))
        }
        deepest(&tree["tree"])
    };
    let shallow = sim
        .runtime
        .observe_shadow("get_ui_tree", json!({ "window_id": id, "max_depth": 2 }))
        .await
        .unwrap()
        .structured;
    assert_eq!(depth(&shallow), 2, "{shallow}");
    assert_eq!(shallow["elementTreeTruncated"], true);
    assert!(depth(&full) > 2);
    // The revision is the default depth's either way: a shallow look does
    // not make a target taken from the full tree stale.
    assert_eq!(shallow["elementTreeRevision"], full["elementTreeRevision"]);
    let refused = sim
        .runtime
        .observe_shadow("get_ui_tree", json!({ "window_id": id, "max_depth": 21 }))
        .await
        .expect_err("deeper than 20 is refused");
    assert_refused(&refused, "execution_failed");
    let session = session(&sim, id);
    let press = act(
        "press_button",
        json!({ "window_id": id, "label": "Cancel" }),
    );
    assert!(run_approving(&sim, &session, press).await.performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity), "");
}

/// The pixels of a window frame (a PNG the server handed out), row after
/// row, 3 bytes a pixel; and its width.
fn pixels(png_bytes: &[u8]) -> (Vec<u8>, usize) {
    let mut reader = png::Decoder::new(std::io::Cursor::new(png_bytes))
        .read_info()
        .unwrap();
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).unwrap();
    buffer.truncate(info.buffer_size());
    (buffer, info.width as usize)
}

/// The width and height of the box around every pixel that differs
/// between two frames of one window.
fn changed_size(a: &[u8], b: &[u8], width: usize) -> (usize, usize) {
    let (mut left, mut top, mut right, mut bottom) = (usize::MAX, usize::MAX, 0, 0);
    for (i, (pa, pb)) in a.chunks(3).zip(b.chunks(3)).enumerate() {
        if pa != pb {
            let (x, y) = (i % width, i / width);
            (left, top) = (left.min(x), top.min(y));
            (right, bottom) = (right.max(x), bottom.max(y));
        }
    }
    assert!(left != usize::MAX, "the frames do not differ");
    (right - left + 1, bottom - top + 1)
}

/// Waits, for at most 5 s, until the window `id` is first shown as the
/// preview's frame `stated` showed it and then shown otherwise: the caret
/// blinked after the evidence was taken. The size of what changed.
async fn blinked_since(sim: &Sim, id: u64, stated: &str) -> (usize, usize) {
    use base64::Engine as _;
    let window = adk_computer_use::runtime::ObservationScope {
        app_id: Some("Zenity".into()),
        window_id: Some(WindowId::Number(id)),
        ..scope(sim)
    };
    let mut as_stated = None;
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::time::Instant::now() < deadline {
        let frame = sim.observe_visual(&window).await.unwrap();
        let png_bytes = base64::engine::general_purpose::STANDARD
            .decode(&frame.images[0].data)
            .unwrap();
        let same = adk_computer_use::digest::sha256_prefixed(&png_bytes) == stated;
        match (&as_stated, same) {
            (None, true) => as_stated = Some(pixels(&png_bytes)),
            (Some((before, width)), false) => {
                return changed_size(before, &pixels(&png_bytes).0, *width);
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!(
        "the window did not change from the preview's frame within 5 s (is the caret blinking?)"
    );
}

/// The centre of a node's bounds, on the screen.
fn centre(node: &Value) -> (i64, i64) {
    let b = &node["bounds"];
    let at = |k: &str| b[k].as_i64().unwrap();
    (at("x") + at("width") / 2, at("y") + at("height") / 2)
}

/// Pixels, on a real GTK window: zenity's Name field, typed into by a
/// person, has a caret that blinks (GTK draws and hides it for ten
/// seconds after each key). An action previewed with the caret in one
/// state and sent with it in the other still runs: a key typed into the
/// field, and a click on OK, each sent only once the window really did
/// change after the preview (and only the caret: one pixel wide). Any
/// other change is a changed window, refused with nothing sent: a word
/// typed into the field while the click waits, or a small square another
/// X client paints into the window far from both the caret and the point.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_blinking_caret_leaves_the_window_current_and_nothing_else_is_tolerated() {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::{ConnectionExt as _, CreateGCAux, Rectangle};
    use x11rb::wrapper::ConnectionExt as _;
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Caret {}", std::process::id());
    let mut zenity = form(&title);
    let sim = runtime().await;
    let (id, tree) = shown(&sim, &title).await;
    let all = nodes(&tree["tree"]);
    let ok = all
        .iter()
        .find(|n| n["role"] == "AXButton" && n["label"] == "OK")
        .map(centre)
        .unwrap_or_else(|| panic!("no OK button in {tree}"));
    // A person types into Name (the focused field): its caret blinks.
    let typed = |text: &str| {
        tool("xdotool", &["windowfocus", "--sync", &id.to_string()]);
        tool("xdotool", &["type", "--delay", "30", text]);
        std::thread::sleep(Duration::from_millis(500));
    };
    typed("Ada");
    let session = session(&sim, id);
    let stated = |approved: &adk_computer_use::chain::Approved<ComputerUseMcpRuntime>| {
        let target = approved.preview().envelope.target.as_ref().unwrap();
        target.screenshot_hash.clone().unwrap()
    };
    let sent = |approved: adk_computer_use::chain::Approved<ComputerUseMcpRuntime>| async move {
        approved
            .reserve()
            .await
            .unwrap()
            .lease()
            .await
            .unwrap()
            .execute()
            .await
    };
    let caret_only = |(width, height): (usize, usize)| {
        assert!(
            width <= 2 && height <= 40,
            "only the caret changed: {width}x{height}"
        );
    };

    // A key, previewed before a blink and sent after it: it runs.
    let approved = adk_computer_use_testkit::child::approved(&sim, &session, &typing(" L")).await;
    caret_only(blinked_since(&sim, id, &stated(&approved)).await);
    let executed = sent(approved)
        .await
        .expect("the caret's blink leaves typing into its field current");
    assert!(executed.verify().await.unwrap().performed());

    // A click on OK while a word is typed into Name: refused; OK was not
    // pressed.
    typed("");
    let approved =
        adk_computer_use_testkit::child::approved(&sim, &session, &click(ok.0, ok.1)).await;
    typed("ovelace");
    let err = sent(approved).await.map(|_| ()).unwrap_err();
    assert_refused(&err, "stale_target");
    assert!(zenity.0.try_wait().unwrap().is_none(), "OK was pressed");

    // Another X client paints an 8-pixel square into the window, far from
    // the caret and from OK: refused.
    typed("");
    let approved =
        adk_computer_use_testkit::child::approved(&sim, &session, &click(ok.0, ok.1)).await;
    let (painter, _) = x11rb::connect(None).unwrap();
    let window = u32::try_from(id).unwrap();
    let gc = painter.generate_id().unwrap();
    painter
        .create_gc(gc, window, &CreateGCAux::new().foreground(0x00ff_0000))
        .unwrap();
    painter
        .poly_fill_rectangle(
            window,
            gc,
            &[Rectangle {
                x: 4,
                y: 4,
                width: 8,
                height: 8,
            }],
        )
        .unwrap();
    painter.sync().unwrap();
    let err = sent(approved).await.map(|_| ()).unwrap_err();
    assert_refused(&err, "stale_target");
    assert!(zenity.0.try_wait().unwrap().is_none(), "OK was pressed");

    // The click on OK, previewed before a blink and sent after it: it
    // runs, and zenity prints what was typed.
    typed("");
    let approved =
        adk_computer_use_testkit::child::approved(&sim, &session, &click(ok.0, ok.1)).await;
    caret_only(blinked_since(&sim, id, &stated(&approved)).await);
    let executed = sent(approved)
        .await
        .expect("a blinking caret leaves the click current");
    assert!(executed.verify().await.unwrap().performed());
    session.shutdown().await;
    assert_eq!(printed(&mut zenity).trim_end(), "Ada Lovelace||");
}

/// The caret tolerated is the one the frame was taken with, where it still
/// is. The preview's frame of zenity's form shows the Name field's caret
/// at the end of "Ada"; then the caret moves to the start of the field
/// (Home, sent from outside, as any client on the bus could move it with
/// SetCaretOffset), and the check comes while it is hidden there. The only
/// pixels that changed are the caret's old ones, inside the frame's caret
/// box, and still the window is not current: typed text would land at the
/// start, not where the person saw the caret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_caret_that_moved_since_the_frame_is_not_tolerated() {
    use base64::Engine as _;
    use computer_use_server::DesktopBackend as _;
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Moved caret {}", std::process::id());
    let _zenity = form(&title);
    let sim = runtime().await;
    let (id, _) = shown(&sim, &title).await;
    tool("xdotool", &["windowfocus", "--sync", &id.to_string()]);
    tool("xdotool", &["type", "--delay", "30", "Ada"]);
    std::thread::sleep(Duration::from_millis(300));
    let desktop = computer_use_server::desktop::x11::X11Desktop::connect_unwatched().unwrap();
    // The two states of the blink, told apart by their pixels: where they
    // differ, the caret's are the darker.
    let frame = || {
        let frame = desktop.snapshot(Some(id)).unwrap();
        let png_bytes = base64::engine::general_purpose::STANDARD
            .decode(&frame.png_base64)
            .unwrap();
        (frame.digest, pixels(&png_bytes).0)
    };
    let first = frame();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let second = loop {
        let now = frame();
        if now.0 != first.0 {
            break now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the caret does not blink"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let darkness = |pixels: &[u8], other: &[u8]| -> u64 {
        pixels
            .iter()
            .zip(other)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| u64::from(255 - *a))
            .sum()
    };
    let (caret_shown, hidden) = if darkness(&first.1, &second.1) < darkness(&second.1, &first.1) {
        (second.0, first.0)
    } else {
        (first.0, second.0)
    };
    // Taken again the moment the caret shows: the preview's frame.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while frame().0 != caret_shown {
        assert!(
            std::time::Instant::now() < deadline,
            "the caret never showed again"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let record = sim.observe_semantic(&scope(&sim)).await.unwrap().structured["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["windowId"] == id)
        .cloned()
        .unwrap();
    let evidence = adk_computer_use::contracts::TargetEvidence {
        bounds: Some(serde_json::from_value(record["bounds"].clone()).unwrap()),
        ..evidence_for("Zenity", id, caret_shown)
    };
    // The caret moves to the start; the check comes once it is hidden
    // there (the field's pixels then are the hidden frame's).
    tool("xdotool", &["key", "Home"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while frame().0 != hidden {
        assert!(
            std::time::Instant::now() < deadline,
            "the moved caret never hid"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !desktop.is_current(&evidence, computer_use_server::Revalidation::BeforeEffect),
        "a caret that moved since the frame was tolerated"
    );
}
