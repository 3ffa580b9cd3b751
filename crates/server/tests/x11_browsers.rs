//! Browsers driven by element only: a page with a form, its elements named
//! as a person reads them, ticked and sent through the governed chain in
//! the background, in Firefox and in Chromium. No pixel is clicked and no
//! key is sent. The effect is checked outside this crate: what the page
//! sends reaches an HTTP server this test runs.
//!
//! Buttons a person does not see (covered by another element, one pixel
//! square) read `showing` in both browsers; pressing them is refused
//! before anything is sent, and nothing reaches the HTTP server.
//!
//! Neither browser writes a page's text field through the bus (Chromium
//! offers no EditableText there; Firefox accepts the call and writes
//! nothing): writing one is refused before anything is written, and the
//! posted form shows the field empty.
//!
//! Chromium exposes its pages on the accessibility bus only when it is told
//! an assistive technology is present; on Debian 12's Chromium that is its
//! `--force-renderer-accessibility` switch (the bus's `IsEnabled` and
//! `ScreenReaderEnabled`, `ACCESSIBILITY_ENABLED=1` and a registered event
//! listener each left the page out, measured; the server sets `IsEnabled`
//! when it connects, without which neither browser registers on the bus
//! at all). A Chromium window whose page
//! is not exposed is refused as `accessibility_off`, naming the switch
//! (the second test).
//!
//! These tests need an X server, the session's accessibility bus, Firefox
//! and Chromium (`.ci/run` installs them); built without a display or bus they
//! are reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::process::Command;
use std::sync::mpsc;

use adk_computer_use::ExecutionMode;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use_testkit::child::session_on;
use serde_json::{Value, json};

mod x11_support;

use x11_support::browser::{form_server, posted, refusal_of};
use x11_support::*;

/// Chromium on `url` in a fresh profile; with `accessible`, told an
/// assistive technology is present.
fn chromium(url: &str, profile: &std::path::Path, accessible: bool) -> Program {
    let mut command = Command::new("chromium");
    command.args([
        "--no-sandbox",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--password-store=basic",
        "--window-position=0,0",
        "--window-size=900,700",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    if accessible {
        command.arg("--force-renderer-accessibility");
    }
    command
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    Program(command.spawn().expect("chromium could not be started"))
}

/// Firefox on `url` in a fresh profile of its own.
fn firefox(url: &str, profile: &std::path::Path) -> Program {
    Program(
        Command::new("firefox-esr")
            .args(["--no-remote", "--new-instance", "--profile"])
            .arg(profile)
            .arg(url)
            .env_remove("MOZ_HEADLESS")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("firefox-esr could not be started"),
    )
}

fn background(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Background)
}

/// In the browser window titled `title`, once its tree has `nodes` nodes
/// or more (the whole page exposed): a page field's writing refused
/// before anything is written, the box ticked and the form sent, each by
/// element in the background; what the page posts is returned.
async fn tick_and_send(
    title: &str,
    toolkit: &str,
    nodes: u64,
    bodies: &mpsc::Receiver<String>,
) -> String {
    let sim = runtime().await;
    let (id, app, tree) = accessible_window(&sim, title, nodes).await;
    assert_eq!(tree["toolkit"], toolkit, "{}", tree["toolkit"]);
    // A browser fills its tree in after the page shows: a plan waits for
    // it to stay still before it acts, as it should.
    wait_until_still(&sim, id).await;
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));

    let write = background(
        "fill_form",
        json!({ "window_id": id, "fields": [
            { "role": "AXTextField", "label": "Full name", "value": "Ada Lovelace" },
        ] }),
    );
    let err = refusal_of(&sim, &session, write).await;
    assert_eq!(err.refusal_code(), Some("element_not_editable"), "{err}");
    assert!(err.to_string().contains("web page"), "{err}");

    // Buttons a person does not see are refused before anything is sent.
    for (label, cause) in [("Pay now", "covered"), ("Pay later", "too small")] {
        let press = background("press_button", json!({ "window_id": id, "label": label }));
        let err = refusal_of(&sim, &session, press).await;
        assert_eq!(err.refusal_code(), Some("element_not_actionable"), "{err}");
        assert!(err.to_string().contains(cause), "{label}: {err}");
    }

    let tick = background(
        "click_element",
        json!({ "window_id": id, "role": "AXCheckBox", "label": "Gift wrap" }),
    );
    assert!(run_as_a_plan_would(&sim, &session, tick).await.performed());
    // "Send" matches the decoy exactly, but the decoy is off the page; the
    // one button a person sees that matches is "Send order".
    let send = background("press_button", json!({ "window_id": id, "label": "Send" }));
    assert!(run_as_a_plan_would(&sim, &session, send).await.performed());
    session.shutdown().await;
    posted(bodies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_firefox_form_is_ticked_and_sent_by_element_and_its_text_field_refused_unwritten() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = firefox(&url, profile.path());
    let body = tick_and_send(
        "Order form \u{2014} Mozilla Firefox",
        "gecko",
        1000,
        &bodies,
    )
    .await;
    // The box was ticked; the refused field holds nothing.
    assert_eq!(body, "/submit?name=&city=&gift=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_chromium_form_is_ticked_and_sent_by_element_and_its_text_field_refused_unwritten() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = chromium(&url, profile.path(), true);
    let body = tick_and_send("Order form - Chromium", "chromium", 2000, &bodies).await;
    assert_eq!(body, "/submit?name=&city=&gift=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_chromium_page_the_browser_does_not_expose_is_refused_naming_the_switch() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = chromium(&url, profile.path(), false);
    let sim = runtime().await;
    let (id, app, tree) = accessible_window(&sim, "Order form - Chromium", 1).await;
    assert_eq!(tree["toolkit"], "chromium", "{}", tree["toolkit"]);
    let note = tree["accessibilityNote"].as_str().unwrap_or_default();
    assert!(note.contains("--force-renderer-accessibility"), "{tree}");
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));
    let send = background(
        "press_button",
        json!({ "window_id": id, "label": "Send order" }),
    );
    let err = match session.run(send).await {
        Err(err) => err,
        Ok(_) => panic!("a page Chromium does not expose was acted on"),
    };
    assert_eq!(err.refusal_code(), Some("accessibility_off"), "{err}");
    assert!(
        err.to_string().contains("--force-renderer-accessibility"),
        "{err}"
    );
    session.shutdown().await;
    assert!(bodies.try_recv().is_err(), "nothing was sent");
}
