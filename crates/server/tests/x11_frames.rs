//! Which accessible frame is a window, from the attacker's side. One GTK
//! process shows two windows of one size at one place, each with a field
//! "Email" (`tests/x11_support/form_app.py`, `twin`). Another X client
//! (xdotool here, standing for any program on the display) sets the top
//! window's title to the title of the one below. An element action bound
//! to the top window (its preview, evidence and tree are the top
//! window's) must not write into the window below: the title is no proof,
//! the place cannot tell the two apart, and the server fails closed. The
//! form's own printout of both windows is the check.
//!
//! Needs an X server and the session's accessibility bus; built without
//! them, each test is reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::time::Duration;

use adk_computer_use::contracts::WindowId;
use adk_computer_use::runtime::{ComputerUseRuntime, ProposedAction};
use adk_computer_use::{ChainOutcome, ComputerUseError, ExecutionMode};
use adk_computer_use_testkit::child::{Sim, host_approves, session_on};
use serde_json::json;

mod x11_support;

use x11_support::form::Form;
use x11_support::*;

/// The window titled `title` as the display lists it: its id and app id.
async fn listed(sim: &Sim, title: &str) -> (u64, String) {
    for _ in 0..300 {
        let listed = sim.observe_semantic(&scope(sim)).await.unwrap();
        if let Some(window) = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
        {
            return (
                window["windowId"].as_u64().unwrap(),
                window["bundleId"].as_str().unwrap().to_owned(),
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no window titled {title:?} within 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_window_retitled_as_its_twin_below_is_not_mistaken_for_it_and_nothing_is_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let below = format!("Below {}", std::process::id());
    let above = format!("Above {}", std::process::id());
    let mut form = Form::start(&below, &["Email"]);
    form.change(&format!("twin {above}"));
    let sim = runtime().await;
    let (top, app) = listed(&sim, &above).await;
    let _ = listed(&sim, &below).await;
    // Another client renames the top window as the one below.
    tool(
        "xdotool",
        &["set_window", "--name", &below, &top.to_string()],
    );
    let mut retitled = false;
    for _ in 0..50 {
        let now = sim.observe_semantic(&scope(&sim)).await.unwrap();
        retitled = now.structured["windows"].as_array().is_some_and(|ws| {
            ws.iter()
                .any(|w| w["windowId"] == top && w["title"] == below)
        });
        if retitled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(retitled, "the top window now reads as the one below");

    let session = session_on(&sim.runtime, "frames", &app, Some(WindowId::Number(top)));
    let write = ProposedAction::new(
        "set_value",
        json!({ "window_id": top, "role": "AXTextField", "label": "Email", "value": "attacker@example.org" }),
        ExecutionMode::Background,
    );
    // Refused before the effect (the frame cannot be named): never an
    // unknown outcome, which would say something may have been written.
    let refused = |err: &ComputerUseError| {
        assert!(
            !matches!(err, ComputerUseError::OutcomeUnknown { .. }),
            "refused before anything was written: {err}"
        );
    };
    match session.run(write).await {
        Ok(ChainOutcome::Completed(done)) => {
            panic!(
                "a write through a borrowed title went through: {}",
                done.outcome()
            )
        }
        Ok(ChainOutcome::NeedsApproval(pending)) => {
            let err = host_approves(&sim, pending)
                .await
                .complete()
                .await
                .expect_err("refused");
            refused(&err);
        }
        // The sensitivity of a field in a window that cannot be named is
        // unknown: the policy refuses at preview.
        Ok(ChainOutcome::Blocked(_)) => {}
        Err(err) => refused(&err),
    }
    // The tree of the top window is not read from the window below either.
    let mut tree_scope = scope(&sim);
    tree_scope.app_id = Some(app.clone());
    tree_scope.window_id = Some(WindowId::Number(top));
    let tree = sim.observe_semantic(&tree_scope).await.unwrap().structured;
    assert_ne!(tree["accessibility"], "atspi", "{tree}");
    session.shutdown().await;
    assert_eq!(form.values(), "Email=", "the window below holds nothing");
    assert_eq!(form.twin_values(), "Email=", "the top window holds nothing");
}
