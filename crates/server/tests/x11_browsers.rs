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

use adk_computer_use::ExecutionMode;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use_testkit::child::session_on;
use serde_json::{Value, json};

mod x11_support;

use x11_support::browser::{form_server, type_tick_and_send};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_firefox_form_is_typed_in_the_foreground_ticked_and_sent_by_element() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = firefox(&url, profile.path());
    let body = type_tick_and_send(
        &runtime().await,
        true,
        "Order form \u{2014} Mozilla Firefox",
        "gecko",
        1000,
        &bodies,
    )
    .await;
    // What was typed and ticked is what the page sent.
    assert_eq!(body, "/submit?name=Ada+Lovelace&city=London&gift=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_chromium_form_is_typed_in_the_foreground_ticked_and_sent_by_element() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = chromium(&url, profile.path(), true);
    let body = type_tick_and_send(
        &runtime().await,
        true,
        "Order form - Chromium",
        "chromium",
        2000,
        &bodies,
    )
    .await;
    assert_eq!(body, "/submit?name=Ada+Lovelace&city=London&gift=yes");
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
