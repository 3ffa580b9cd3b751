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
//! Chromium keeps its pages from the accessibility bus until an assistive
//! technology reads one of its objects' attributes, as a screen reader
//! does (the bus's `IsEnabled` and `ScreenReaderEnabled`,
//! `ACCESSIBILITY_ENABLED=1` and a registered event listener each left the
//! page out, measured; the server sets `IsEnabled` when it connects,
//! without which neither browser registers on the bus at all). The server
//! reads the window's attributes before each read, so a Chromium started
//! without `--force-renderer-accessibility` is driven like one started
//! with it (the third test; it was seen failing with that read and
//! `GetAll`, which also reads them, switched off).
//!
//! These tests need an X server, the session's accessibility bus, Firefox
//! and Chromium (`.ci/run` installs them); built without a display or bus they
//! are reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;

mod x11_support;

use x11_support::browser::{form_server, type_tick_and_send};
use x11_support::*;

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
async fn a_chromium_started_without_the_switch_is_turned_on_by_the_server_and_driven() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    // No --force-renderer-accessibility: Chromium hides its page until an
    // assistive technology reads its window's attributes, which the
    // server does before each read and says so.
    let _browser = chromium(&url, profile.path(), false);
    let sim = runtime().await;
    // The first read that finds the window (a tree of one node or more)
    // turns the browser on and waits for the page it then builds.
    let tree = accessible_window(&sim, "Order form - Chromium", 1).await.2;
    let said = tree["accessibilityTurnedOn"].as_str().unwrap_or_default();
    assert!(said.contains("reads its window's attributes"), "{said}");
    assert!(
        tree["accessibilityNote"].is_null(),
        "{}",
        tree["accessibilityNote"]
    );
    let body = type_tick_and_send(
        &sim,
        false,
        "Order form - Chromium",
        "chromium",
        20,
        &bodies,
    )
    .await;
    assert_eq!(body, "/submit?name=&city=&gift=yes");
}
