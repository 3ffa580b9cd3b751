//! One slow application holds up only the call that reaches it. The
//! server's state (sessions, leases, receipts) is what every session
//! needs; an element action's work in an application whose main loop is
//! slow (its walks, each field written, the read-back) is done with that
//! state free. So while one agent's form is being filled, field by field,
//! in a slow GTK program, another agent of the same server lists the
//! windows and is answered before the form's last field is written.
//!
//! The order is read from the form itself (it prints each field's change),
//! never from a clock: with the state held across the effect, the other
//! agent's answer came only after the last field (seen when this was
//! built: the test failed that way).
//!
//! Needs an X server and the session's accessibility bus (`.ci/run` starts
//! both); built without them the test is reported ignored, with the
//! reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use adk_computer_use::contracts::WindowId;
use adk_computer_use::mcp::McpRuntimeConfig;
use adk_computer_use::runtime::{ComputerUseRuntime, ProposedAction};
use adk_computer_use::{ChainOutcome, ExecutionMode, VerificationOutcome};
use adk_computer_use_testkit::child::{PRINCIPAL, Sim, host_approves, run_approving, session_on};
use adk_computer_use_testkit::needs;
use computer_use_server::desktop::x11::X11Desktop;
use computer_use_server::{Config, Server};
use serde_json::json;

mod x11_support;

use x11_support::form::Form;
use x11_support::*;

/// The fields of the slow form, in order; the last is written last.
const FIELDS: [&str; 4] = ["Name", "Email", "City", "Phone"];

/// One more agent's runtime on `server`, with a session started.
async fn agent(server: &Server) -> Sim {
    let (runtime, approver) =
        adk_computer_use_testkit::connect(server.clone(), McpRuntimeConfig::new(PRINCIPAL))
            .await
            .unwrap();
    runtime
        .start_session(Some("slow application"), None)
        .await
        .unwrap();
    Sim {
        runtime: Arc::new(runtime),
        approver,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn another_agent_is_answered_while_a_slow_application_is_being_filled() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Slow form {}", std::process::id());
    let form = Form::start(&title, &FIELDS);
    let server = Server::on(
        Config::for_principal(PRINCIPAL),
        Box::new(X11Desktop::connect_unwatched().unwrap()),
    );
    let filler = agent(&server).await;
    let other = agent(&server).await;
    let (id, app, _) = accessible_window(&filler, &title, 8).await;
    // From here every answer the form gives the bus waits up to 150 ms.
    let mut form = form;
    form.change("slow 150");

    let session = session_on(&filler.runtime, "filler", &app, Some(WindowId::Number(id)));
    let fields: Vec<_> = FIELDS
        .iter()
        .map(|label| json!({ "role": "AXTextField", "label": label, "value": format!("{label} value") }))
        .collect();
    let fill = ProposedAction::new(
        "fill_form",
        json!({ "window_id": id, "fields": fields }),
        ExecutionMode::Background,
    );
    let filling = tokio::spawn(async move {
        let done = run_approving(&filler, &session, fill).await;
        session.shutdown().await;
        done
    });

    // The effect is under way: the form's first field was written.
    let first = format!("changed {}", FIELDS[0]);
    let form = tokio::task::spawn_blocking(move || {
        form.awaited(&first);
        form
    })
    .await
    .unwrap();
    // The other agent lists the windows now, while the rest of the form
    // is still being written.
    let listed = other
        .observe_semantic(&scope(&other))
        .await
        .expect("the other agent's list_windows is answered");
    assert!(
        listed.structured["windows"]
            .as_array()
            .is_some_and(|ws| ws.iter().any(|w| w["windowId"] == id)),
        "{}",
        listed.structured
    );
    let last = format!("changed {}", FIELDS[FIELDS.len() - 1]);
    assert!(
        !form.printed(&last),
        "the other agent was answered only after the form's last field was written: the server's state was held across the slow application's effect"
    );

    let done = filling.await.unwrap();
    assert!(done.performed());
    assert_eq!(
        done.outcome(),
        &VerificationOutcome::Verified,
        "the slow form was filled and read back whole"
    );
    let mut form = form;
    assert_eq!(
        form.values(),
        "Name=Name value|Email=Email value|City=City value|Phone=Phone value"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn an_emergency_stop_during_a_slow_fill_leaves_the_rest_of_the_form_unwritten() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Stopped slow form {}", std::process::id());
    let mut form = Form::start(&title, &FIELDS);
    let server = Server::on(
        Config::for_principal(PRINCIPAL),
        Box::new(X11Desktop::connect_unwatched().unwrap()),
    );
    let filler = agent(&server).await;
    let host = Arc::clone(&filler.runtime);
    let (id, app, _) = accessible_window(&filler, &title, 8).await;
    form.change("slow 150");

    let session = session_on(&filler.runtime, "filler", &app, Some(WindowId::Number(id)));
    let fields: Vec<_> = FIELDS
        .iter()
        .map(|label| json!({ "role": "AXTextField", "label": label, "value": format!("{label} value") }))
        .collect();
    let fill = ProposedAction::new(
        "fill_form",
        json!({ "window_id": id, "fields": fields }),
        ExecutionMode::Background,
    );
    // Whether the fill ended verified; it is approved by the host when the
    // policy asks.
    let filling = tokio::spawn(async move {
        let verified = match session.run(fill).await {
            Ok(ChainOutcome::Completed(done)) => done.outcome() == &VerificationOutcome::Verified,
            Ok(ChainOutcome::NeedsApproval(pending)) => host_approves(&filler, pending)
                .await
                .complete()
                .await
                .is_ok_and(|done| done.outcome() == &VerificationOutcome::Verified),
            _ => false,
        };
        session.shutdown().await;
        verified
    });
    let first = format!("changed {}", FIELDS[0]);
    let form = tokio::task::spawn_blocking(move || {
        form.awaited(&first);
        form
    })
    .await
    .unwrap();
    // The person stops everything while the form is being filled.
    host.emergency_stop(Some("the person pressed stop"))
        .await
        .unwrap();
    // Once the stop has answered, nothing more is written: what was
    // printed by then is passed over, and no change follows.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let _ = form.printed("changed ");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(
        !form.printed("changed "),
        "a field was written after the emergency stop answered"
    );
    // The form was cut short: its last field was never written, and the
    // fill does not read as done.
    let mut form = form;
    let values = form.values();
    assert!(
        values.ends_with("|Phone="),
        "the last field was written: {values}"
    );
    assert!(values.starts_with("Name=Name value|"), "{values}");
    assert!(
        !filling.await.unwrap(),
        "a fill cut short by the stop read as verified"
    );
}
