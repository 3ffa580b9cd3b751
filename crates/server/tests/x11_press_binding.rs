//! What a person approved for a press is what the press submits: a press
//! (`press_button`, `click_element`) is bound to the values and toggle
//! states the window's elements held when the evidence was taken. A form
//! whose field another program changed between the preview and the press
//! is refused, nothing pressed; the same steps with nothing changed press.
//! A real GTK form on a real X11 display, over the accessibility bus.
//!
//! Needs an X server and the session's accessibility bus (`.ci/run` starts
//! both); built without them the tests are reported ignored, with the
//! reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::ExecutionMode;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use_testkit::needs;
use serde_json::json;

mod x11_support;

use x11_support::form::Form;
use x11_support::*;

fn press_ok(id: u64) -> ProposedAction {
    ProposedAction::new(
        "press_button",
        json!({ "window_id": id, "label": "OK" }),
        ExecutionMode::Background,
    )
}

/// A form titled `title` with `Payee` and `Amount`, after `fills`; the
/// server over the display, the form's window id, and a session bound to it.
async fn form_and_session(
    title: &str,
    fills: &[&str],
) -> (
    Form,
    adk_computer_use_testkit::child::Sim,
    u64,
    adk_computer_use::chain::Session<adk_computer_use::mcp::ComputerUseMcpRuntime>,
) {
    let mut form = Form::start(title, &["Payee", "Amount"]);
    for fill in fills {
        form.change(fill);
    }
    let sim = runtime().await;
    let (id, app, _) = accessible_window(&sim, title, 5).await;
    let session = adk_computer_use_testkit::child::session_on(
        &sim.runtime,
        "press-binding",
        &app,
        Some(WindowId::Number(id)),
    );
    (form, sim, id, session)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_press_after_a_field_changed_since_the_evidence_is_refused_and_not_pressed() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Submit {}", std::process::id());
    let (mut form, sim, id, session) =
        form_and_session(&title, &["fill Payee Ada", "fill Amount 100"]).await;
    // Between the preview (what the person approves) and the press,
    // another program changes what the form would submit.
    let err = refused_after(&sim, &session, &press_ok(id), |_| {
        form.change("fill Payee Mallory");
    })
    .await;
    assert_refused(&err, "stale_target");
    let adk_computer_use::ComputerUseError::Refused { details, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(
        details.as_ref().unwrap()["what"],
        "element_values",
        "{details:?}"
    );
    session.shutdown().await;
    // Not pressed: the form is still open (OK would have ended it), as it
    // was left.
    assert_eq!(form.values(), "Payee=Mallory|Amount=100");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn the_same_press_with_nothing_changed_is_pressed() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Unchanged submit {}", std::process::id());
    let (form, sim, id, session) = form_and_session(&title, &["fill Payee Ada"]).await;
    // The same steps, with nothing changed between them.
    let approved = adk_computer_use_testkit::child::approved(&sim, &session, &press_ok(id)).await;
    let leased = approved.reserve().await.unwrap().lease().await.unwrap();
    let done = leased.execute().await.unwrap().verify().await.unwrap();
    assert!(done.performed());
    session.shutdown().await;
    assert!(
        form.printed("values Payee=Ada|Amount="),
        "OK printed the values it submitted"
    );
}
