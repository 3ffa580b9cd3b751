//! The waits (`wait_for_window`, `wait_for_text`, `wait_for_stable`) on a
//! real X11 display, with a GTK form read over the accessibility bus:
//! each ends when what it waits for is there (a window, a text, a tree
//! that stopped changing), ends at its deadline as an error naming the
//! cause, and holds no one up while it waits.
//!
//! Needs an X server and the session's accessibility bus (`.ci/run` starts
//! both); built without them the tests are reported ignored, with the
//! reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use_testkit::needs;
use serde_json::{Value, json};

mod x11_support;

use x11_support::form::Form;
use x11_support::*;

/// A wait, run as an agent observes (shadow mode, through the chain's
/// runtime): its answer, or the runtime's error.
async fn wait(
    sim: &adk_computer_use_testkit::child::Sim,
    tool: &str,
    args: Value,
) -> Result<Value, adk_computer_use::ComputerUseError> {
    sim.runtime
        .observe_shadow(tool, args)
        .await
        .map(|observed| observed.structured)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_wait_for_a_window_holds_no_one_up_and_ends_when_the_window_shows() {
    let _display = DISPLAY_LOCK.lock().await;
    let first = format!("First {}", std::process::id());
    let _first = Form::start(&first, &["Name"]);
    let sim = runtime().await;
    let (_, app, _) = accessible_window(&sim, &first, 5).await;
    let later = format!("Later {}", std::process::id());

    // The wait starts before the window exists. Another call made while
    // it waits is answered, and only then is the window opened: a wait
    // that held the server would see the window only after its own
    // deadline, and end in a timeout.
    let waiting = sim.observe_in_background(
        "wait_for_window",
        json!({ "target_app": app, "title": later, "timeout_ms": 30000 }),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let listed = sim
        .runtime
        .observe_shadow("list_windows", json!({}))
        .await
        .unwrap()
        .structured;
    assert!(
        !listed["windows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["title"] == later.as_str()),
        "the window is not there yet"
    );
    assert!(!waiting.is_finished(), "the wait is still waiting");
    let later_form = Form::start(&later, &["Name"]);
    let found = waiting.await.unwrap().unwrap();
    assert_eq!(found["matched"], true, "{found}");
    assert_eq!(found["window"]["title"], later.as_str(), "{found}");
    assert_eq!(found["window"]["contentOrigin"], "application_untrusted");
    assert!(found["polls"].as_u64().unwrap() >= 2, "{found}");

    // Gone: the window is closed while the wait looks.
    let id = found["window"]["windowId"].as_u64().unwrap();
    let gone = sim.observe_in_background(
        "wait_for_window",
        json!({ "target_app": app, "title": later, "gone": true, "timeout_ms": 30000 }),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(later_form);
    let gone = gone.await.unwrap().unwrap();
    assert_eq!(gone["gone"], true, "{gone}");
    let after = wait(&sim, "list_windows", json!({})).await.unwrap();
    assert!(
        !after["windows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["windowId"] == id),
        "window {id} is gone"
    );

    // A window that never shows: the deadline, as an error with the cause.
    let err = wait(
        &sim,
        "wait_for_window",
        json!({ "target_app": app, "title": "never shown", "timeout_ms": 600 }),
    )
    .await
    .unwrap_err();
    let adk_computer_use::ComputerUseError::Refused { details, .. } = &err else {
        panic!("{err}")
    };
    let details = details.as_ref().unwrap();
    assert_eq!(details["cause"], "timeout", "{details}");
    assert!(details["waitedMs"].as_u64().unwrap() >= 600, "{details}");
    assert!(details["polls"].as_u64().unwrap() >= 2, "{details}");
    // An argument upstream's shape has and this server does not take is
    // refused by name, before anything is looked at.
    let err = wait(
        &sim,
        "wait_for_window",
        json!({ "target_app": app, "timeout_ms": 50000000 }),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("timeout_ms"), "{err}");
    let _ = sim.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_wait_for_text_ends_when_a_field_shows_it_and_when_it_is_gone() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Text {}", std::process::id());
    let mut form = Form::start(&title, &["Name"]);
    let sim = runtime().await;
    let (id, _, _) = accessible_window(&sim, &title, 5).await;
    let waiting = sim.observe_in_background(
        "wait_for_text",
        json!({ "window_id": id, "text": "ada  LOVELACE", "match": "exact", "timeout_ms": 30000 }),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "no field shows the text yet");
    let mut form = tokio::task::spawn_blocking(move || {
        form.change("fill Name Ada Lovelace");
        form
    })
    .await
    .unwrap();
    let found = waiting.await.unwrap().unwrap();
    assert_eq!(found["matched"], true, "{found}");
    assert!(found["elements"].as_u64().unwrap() >= 1, "{found}");
    assert!(
        !found.to_string().contains("Lovelace"),
        "the answer repeats none of the application's text: {found}"
    );
    // By a regular expression, case-insensitive.
    let by_pattern = wait(
        &sim,
        "wait_for_text",
        json!({ "window_id": id, "text": "^ada\\s+love", "match": "regex", "timeout_ms": 5000 }),
    )
    .await
    .unwrap();
    assert_eq!(by_pattern["matched"], true, "{by_pattern}");
    // Gone once the field is cleared.
    form.change("fill Name");
    let gone = wait(
        &sim,
        "wait_for_text",
        json!({ "window_id": id, "text": "lovelace", "gone": true, "timeout_ms": 10000 }),
    )
    .await
    .unwrap();
    assert_eq!(gone["gone"], true, "{gone}");
    // Still absent: the deadline.
    let err = wait(
        &sim,
        "wait_for_text",
        json!({ "window_id": id, "text": "lovelace", "timeout_ms": 500 }),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
    let _ = sim.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_wait_for_a_stable_tree_outlasts_a_window_that_keeps_changing() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Stable {}", std::process::id());
    let mut form = Form::start(&title, &["Name"]);
    let sim = runtime().await;
    let (id, app, _) = accessible_window(&sim, &title, 5).await;

    // The form renames its field every 100 ms, 30 times: the tree is never
    // still for 1.5 s until the last rename.
    let mut form = tokio::task::spawn_blocking(move || {
        form.change("tick 30");
        form
    })
    .await
    .unwrap();
    let stable = wait(
        &sim,
        "wait_for_stable",
        json!({ "target_app": app, "title": title, "quiet_ms": 1500, "timeout_ms": 60000 }),
    )
    .await
    .unwrap();
    assert!(
        form.printed("ticked 30"),
        "the wait ended only after the last rename: {stable}"
    );
    assert_eq!(stable["stable"], true, "{stable}");
    assert_eq!(stable["windowId"], id, "{stable}");
    // What it reports is the tree as it stands.
    let mut tree_scope = scope(&sim);
    tree_scope.app_id = Some(app.clone());
    tree_scope.window_id = Some(adk_computer_use::contracts::WindowId::Number(id));
    let tree = sim.observe_semantic(&tree_scope).await.unwrap().structured;
    assert_eq!(stable["uiTreeRevision"], tree["uiTreeRevision"]);

    // A tree that keeps changing past the deadline: a timeout.
    let form = tokio::task::spawn_blocking(move || {
        form.change("tick 100");
        form
    })
    .await
    .unwrap();
    let err = wait(
        &sim,
        "wait_for_stable",
        json!({ "window_id": id, "quiet_ms": 1500, "timeout_ms": 3000 }),
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
    assert!(!form.printed("ticked 100"), "it was still changing");
    let _ = sim.runtime.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_wait_ends_when_its_session_stops() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Stopped {}", std::process::id());
    let _form = Form::start(&title, &["Name"]);
    let sim = runtime().await;
    let (id, _, _) = accessible_window(&sim, &title, 5).await;
    let waiting = sim.observe_in_background(
        "wait_for_text",
        json!({ "window_id": id, "text": "never shown", "timeout_ms": 60000 }),
    );
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    sim.runtime
        .stop_session(Some("the plan ended"))
        .await
        .unwrap();
    // The wait looks no more once its session stopped: it ends at its
    // next look, not at its deadline.
    let err = waiting.await.unwrap().unwrap_err();
    let adk_computer_use::ComputerUseError::Refused { details, .. } = &err else {
        panic!("{err}")
    };
    let details = details.as_ref().unwrap();
    assert_eq!(details["cause"], "interrupted", "{details}");
    assert!(details["waitedMs"].is_null(), "not the deadline: {details}");
}
