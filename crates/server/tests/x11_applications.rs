//! The applications people open, driven by element only: gnome-calculator
//! (GTK 4), gedit (GTK 3) and a Qt 5 and a Qt 6 form (PyQt5, PyQt6) on a
//! real X11 display, through the governed chain, in the background
//! (element actions send no input and take no focus). No pixel is clicked
//! and no key is sent. Each effect is checked outside this crate: the
//! calculator's display read by pyatspi, the file gedit saved read from
//! the disk, what the Qt form printed when sent.
//!
//! These tests need an X server, the session's accessibility bus, and the
//! applications (`.ci/run` installs gnome-calculator, gedit, PyQt5, PyQt6
//! and python3-pyatspi); built without a display or bus they are reported
//! ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::process::Command;
use std::time::Duration;

use adk_computer_use::contracts::{
    ActionPostcondition, ActionResourceContext, PostconditionFields, WindowId,
};
use adk_computer_use::digest::sha256_prefixed;
use adk_computer_use::runtime::{ComputerUseRuntime, ProposedAction};

use adk_computer_use::{ExecutionMode, VerificationOutcome};
use adk_computer_use_testkit::child::{Sim, session_on};
use serde_json::{Value, json};

mod x11_support;

use x11_support::*;

/// Every text an application shows, read by pyatspi (outside this crate).
fn texts_read_by_pyatspi(app: &str) -> Vec<String> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/x11_support/read_texts.py"
    );
    let out = Command::new("/usr/bin/python3")
        .arg(script)
        .arg(app)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pyatspi could not read {app}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Reads the window's tree until it comes from memory (an application
/// sends events while it starts): that read, with the revision a walk
/// gave just before it.
async fn kept_by_events(sim: &Sim, app: &str, id: u64, tree: &Value) -> Value {
    let mut tree_scope = scope(sim);
    tree_scope.app_id = Some(app.to_owned());
    tree_scope.window_id = Some(WindowId::Number(id));
    let (mut before, mut again) = (tree.clone(), Value::Null);
    for _ in 0..100 {
        again = sim.observe_semantic(&tree_scope).await.unwrap().structured;
        if again["elementTreeSource"] == "events" {
            break;
        }
        before = again.clone();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        again["elementTreeSource"], "events",
        "{}",
        again["elementTreeSource"]
    );
    assert_eq!(again["elementTreeRevision"], before["elementTreeRevision"]);
    again
}

fn background(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Background)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn gnome_calculator_computes_12_times_7_pressed_by_the_labels_a_person_reads() {
    let _display = DISPLAY_LOCK.lock().await;
    let home = tempfile::tempdir().unwrap();
    let _calculator = start_fresh("gnome-calculator", &[], home.path());
    let sim = runtime().await;
    let (id, app, tree) = accessible_window(&sim, "Calculator", 50).await;
    assert_eq!(tree["toolkit"], "gtk4", "{}", tree["toolkit"]);
    // Once the application has settled (it sends events while it starts),
    // a tree read again with nothing changed comes from memory, current as
    // of now by the application's events (a ping through their stream),
    // with the revision a walk gives.
    kept_by_events(&sim, &app, id, &tree).await;
    assert!(
        !texts_read_by_pyatspi("calculator")
            .iter()
            .any(|t| t == "84"),
        "the display shows no 84 before the presses"
    );
    let session = session_on(&sim.runtime, "calculator", &app, Some(WindowId::Number(id)));
    // GTK 4 names these buttons "1 1", "× ×" and "= =" and reports them
    // `sensitive` and `visible`, never `enabled` or `showing`: they are
    // pressed by what a person reads on them.
    for label in ["1", "2", "×", "7", "="] {
        let press = background("press_button", json!({ "window_id": id, "label": label }));
        let pressed = run_as_a_plan_would(&sim, &session, press).await;
        assert!(pressed.performed(), "{label}");
    }
    session.shutdown().await;
    let mut shown = Vec::new();
    for _ in 0..50 {
        shown = texts_read_by_pyatspi("calculator");
        if shown.iter().any(|t| t == "84") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        shown.iter().any(|t| t == "84"),
        "the calculator's display, read by pyatspi, shows 84: {shown:?}"
    );
    // The server finds it too, in the whole tree, by the label rule (the
    // digits' buttons read "8" and "4", never "84").
    let found = sim
        .runtime
        .observe_shadow("find_element", json!({ "window_id": id, "label": "84" }))
        .await
        .unwrap()
        .structured;
    let found = found.as_array().unwrap();
    assert!(!found.is_empty(), "{found:?}");
    assert!(found.iter().all(|n| n["match"] == "exact"), "{found:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn gedit_writes_a_sentence_by_element_and_saves_it_to_the_file() {
    let _display = DISPLAY_LOCK.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("note.txt");
    std::fs::write(&path, "").unwrap();
    let path_text = path.to_str().unwrap().to_owned();
    let _gedit = start_fresh("gedit", &["--standalone", &path_text], dir.path());
    let sim = runtime().await;
    let title = format!("note.txt ({}) - gedit", dir.path().display());
    // gedit's window is some 540 nodes, 16 levels deep: past what a model
    // is shown, not past what an action resolves in.
    let (id, app, tree) = accessible_window(&sim, &title, 400).await;
    assert_eq!(tree["toolkit"], "gtk3");
    assert!(
        tree["elementTreeNodes"].as_u64().unwrap() > 500,
        "{}",
        tree["elementTreeNodes"]
    );
    // Reading gedit makes it talk (its menu's check items announce their
    // states again, its file browser's cells are made and dropped): none
    // of that changes the window, so once it has settled a read again
    // comes from memory.
    let kept = kept_by_events(&sim, &app, id, &tree).await;
    let session = session_on(&sim.runtime, "gedit", &app, Some(WindowId::Number(id)));

    let sentence = "The quick brown fox jumps over the lazy dog.\nA second line.";
    // The document's text view is the window's one shown text area, with
    // no label: named by its role and the empty label.
    let write = background(
        "set_value",
        json!({ "window_id": id, "role": "AXTextArea", "label": "", "value": sentence }),
    );
    let written = run_as_a_plan_would(&sim, &session, write).await;
    assert!(written.performed());
    assert_eq!(
        written.outcome(),
        &VerificationOutcome::Verified,
        "the server read the text view back"
    );

    // Saved by its header bar's Save button, checked by the file itself
    // (gedit ends a file with a newline).
    let saved_text = format!("{sentence}\n");
    let check = ActionPostcondition::try_from(PostconditionFields::Filesystem {
        path: path_text.clone(),
        exists: true,
        content_digest: Some(sha256_prefixed(&saved_text)),
    })
    .unwrap();
    let save = background("press_button", json!({ "window_id": id, "label": "Save" }))
        .with_resource(ActionResourceContext {
            filesystem_path: Some(path_text.clone()),
            ..ActionResourceContext::default()
        })
        .with_postcondition(check);
    // gedit settles after the write (its title gains a `*`, Undo becomes
    // sensitive): the plan waits for its tree to stay still, as a plan
    // should; a save observed before that would be refused stale, with
    // nothing done, and observed again.
    wait_until_still(&sim, id).await;
    // What the write changed is read, not the tree kept before it.
    let mut tree_scope = scope(&sim);
    tree_scope.app_id = Some(app.clone());
    tree_scope.window_id = Some(WindowId::Number(id));
    let written_tree = sim.observe_semantic(&tree_scope).await.unwrap().structured;
    assert_ne!(
        written_tree["elementTreeRevision"],
        kept["elementTreeRevision"]
    );
    let saved = run_as_a_plan_would(&sim, &session, save).await;
    assert!(saved.performed());
    assert_eq!(
        saved.outcome(),
        &VerificationOutcome::Verified,
        "{}",
        saved.outcome()
    );
    session.shutdown().await;
    let on_disk = tool("cat", &[&path_text]);
    assert_eq!(on_disk, saved_text, "cat reads what was written and saved");
}

/// A Qt order form (`binding`: PyQt5 or PyQt6) filled, ticked and sent by
/// element in the background; what the form printed when sent.
async fn qt_form_sent_by_element(binding: &str) -> Value {
    let _display = DISPLAY_LOCK.lock().await;
    // The server first: it publishes the bus's address where Qt 5 reads it.
    let sim = runtime().await;
    let title = format!("Qt order {binding}");
    let form = x11_support::browser::qt_form(binding, &title, &[], false);
    x11_support::browser::qt_fill_tick_and_send(&sim, &form, &title).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_qt5_form_is_filled_ticked_and_sent_by_element() {
    let sent = qt_form_sent_by_element("PyQt5").await;
    assert_eq!(sent, json!({ "name": "Ada Lovelace", "gift": true }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_qt6_form_is_filled_ticked_and_sent_by_element() {
    let sent = qt_form_sent_by_element("PyQt6").await;
    assert_eq!(sent, json!({ "name": "Ada Lovelace", "gift": true }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_root_window_without_the_bus_address_is_given_the_launchers_for_qt5() {
    let _display = DISPLAY_LOCK.lock().await;
    // The address this session's launcher gives, read outside this crate.
    let launcher = tool(
        "gdbus",
        &[
            "call",
            "--session",
            "--dest",
            "org.a11y.Bus",
            "--object-path",
            "/org/a11y/bus",
            "--method",
            "org.a11y.Bus.GetAddress",
        ],
    );
    let launcher = launcher
        .trim()
        .trim_start_matches("('")
        .trim_end_matches("',)")
        .to_owned();
    assert!(launcher.starts_with("unix:"), "{launcher}");
    // As an X server that reset has it: no property.
    tool("xprop", &["-root", "-remove", "AT_SPI_BUS"]);
    assert!(tool("xprop", &["-root", "AT_SPI_BUS"]).contains("not found"));
    let _sim = runtime().await;
    assert_eq!(
        tool("xprop", &["-root", "AT_SPI_BUS"]).trim(),
        format!("AT_SPI_BUS(STRING) = \"{launcher}\"")
    );
}
