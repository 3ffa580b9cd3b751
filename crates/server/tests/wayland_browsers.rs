//! A browser on the Wayland compositor, driven by element only: Firefox
//! as a native Wayland client (`MOZ_ENABLE_WAYLAND=1`) shows the order
//! form; its check box is ticked and the form sent through the governed
//! chain in the background, and a button drawn over by another element is
//! refused. No pixel is clicked and no key is sent. The effect is checked
//! outside this crate: what the page posts reaches an HTTP server this
//! test runs.
//!
//! On Wayland a client knows no screen coordinates (Firefox reports -1
//! there): the element layer reads extents, and asks the browser's hit
//! test, in the window's own coordinates.
//!
//! Firefox refuses a runtime directory another user owns (the compositor
//! runs as a user of its own): it is given one of this process's, and the
//! compositor's socket by its absolute path.
//!
//! These tests need the compositor (sway), the session's accessibility bus
//! and Firefox (`.ci/run` provides them); built without them they are
//! reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

use adk_computer_use::ExecutionMode;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use_testkit::child::session_on;
use adk_computer_use_testkit::needs;
use serde_json::{Value, json};

mod browser_support;
mod wayland_support;

use browser_support::{
    accessible_window, form_server, posted, refusal_of, run_as_a_plan_would, wait_until_still,
};
use wayland_support::*;

fn background(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Background)
}

/// Firefox on `url`, a native Wayland client, in a fresh profile and a
/// runtime directory of this process's own.
fn firefox(url: &str, profile: &std::path::Path, runtime: &std::path::Path) -> Program {
    let env: Vec<(&str, String)> = wayland_env()
        .into_iter()
        .filter(|(name, _)| *name != "XDG_RUNTIME_DIR")
        .collect();
    Program(
        Command::new("firefox-esr")
            .args(["--no-remote", "--new-instance", "--profile"])
            .arg(profile)
            .arg(url)
            .envs(env)
            .env("XDG_RUNTIME_DIR", runtime)
            .env("MOZ_ENABLE_WAYLAND", "1")
            .env_remove("DISPLAY")
            .env_remove("MOZ_HEADLESS")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("firefox-esr could not be started"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(compositor, accessibility)]
async fn a_firefox_form_on_wayland_is_ticked_and_sent_by_element_and_a_covered_button_refused() {
    let _lock = COMPOSITOR_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let runtime_dir = tempfile::tempdir().unwrap();
    let _browser = firefox(&url, profile.path(), runtime_dir.path());
    let sim = runtime().await;
    let (id, app, tree) =
        accessible_window(&sim, "Order form \u{2014} Mozilla Firefox", 1000).await;
    assert_eq!(tree["toolkit"], "gecko", "{}", tree["toolkit"]);
    wait_until_still(&sim, id).await;
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));

    let press = background(
        "press_button",
        json!({ "window_id": id, "label": "Pay now" }),
    );
    let err = refusal_of(&sim, &session, press).await;
    assert_eq!(err.refusal_code(), Some("element_not_actionable"), "{err}");
    assert!(err.to_string().contains("covered"), "{err}");

    let tick = background(
        "click_element",
        json!({ "window_id": id, "role": "AXCheckBox", "label": "Gift wrap" }),
    );
    assert!(run_as_a_plan_would(&sim, &session, tick).await.performed());
    let send = background("press_button", json!({ "window_id": id, "label": "Send" }));
    assert!(run_as_a_plan_would(&sim, &session, send).await.performed());
    session.shutdown().await;
    assert_eq!(posted(&bodies), "/submit?name=&city=&gift=yes");
}
