//! Browsers and Qt on the Wayland compositor, driven by element only: a Qt 6
//! form (PyQt6 on Qt's Wayland platform) filled, ticked and sent as on
//! X11 (Qt 5 is not tested here: on Wayland it finds the accessibility
//! bus only by asking the session bus, and Debian's 5.15 then registers
//! only when a race goes its way, see `x11::bus_address`); Firefox
//! as a native Wayland client (`MOZ_ENABLE_WAYLAND=1`) and Chromium through
//! its Wayland backend (`--ozone-platform=wayland`) show the order form
//! (the flow is `browser_support::type_tick_and_send`, the same as on
//! X11): its text fields are refused in the background and typed into in
//! the foreground, each given the focus by element first; its check box
//! is ticked and the form sent in the background; buttons a person does
//! not see are refused. No pixel is clicked. The effect is checked
//! outside this crate: what the page posts reaches an HTTP server this
//! test runs.
//!
//! On Wayland a client knows no screen coordinates (Firefox reports -1
//! there): the element layer reads extents, and asks the browser's hit
//! test, in the window's own coordinates.
//!
//! A browser refuses a runtime directory another user owns (the
//! compositor runs as a user of its own): each is given one of this
//! process's, and the compositor's socket by its absolute path.
//!
//! These tests need the compositor (sway), the session's accessibility bus,
//! Firefox and Chromium (`.ci/run` provides them); built without them they are
//! reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};

use adk_computer_use_testkit::needs;

mod browser_support;
mod wayland_support;

use browser_support::{form_server, qt_fill_tick_and_send, qt_form, type_tick_and_send};
use wayland_support::*;

/// The compositor's environment with `runtime` as the runtime directory:
/// a browser refuses one another user owns (the compositor's), and finds
/// the compositor by its socket's absolute path.
fn own_runtime(runtime: &std::path::Path) -> Vec<(&'static str, String)> {
    let mut env: Vec<(&str, String)> = wayland_env()
        .into_iter()
        .filter(|(name, _)| *name != "XDG_RUNTIME_DIR")
        .collect();
    env.push(("XDG_RUNTIME_DIR", runtime.display().to_string()));
    env
}

/// Firefox on `url`, a native Wayland client, in a fresh profile and a
/// runtime directory of this process's own.
fn firefox(url: &str, profile: &std::path::Path, runtime: &std::path::Path) -> Program {
    Program(
        Command::new("firefox-esr")
            .args(["--no-remote", "--new-instance", "--profile"])
            .arg(profile)
            .arg(url)
            .envs(own_runtime(runtime))
            .env("MOZ_ENABLE_WAYLAND", "1")
            .env_remove("DISPLAY")
            .env_remove("MOZ_HEADLESS")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("firefox-esr could not be started"),
    )
}

/// Chromium on `url` through its Wayland backend (`--ozone-platform=wayland`),
/// told an assistive technology is present, in a fresh profile and a
/// runtime directory of this process's own.
fn chromium(url: &str, profile: &std::path::Path, runtime: &std::path::Path) -> Program {
    Program(
        Command::new("chromium")
            .args([
                "--no-sandbox",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--password-store=basic",
                "--ozone-platform=wayland",
                "--force-renderer-accessibility",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url)
            .envs(own_runtime(runtime))
            .env_remove("DISPLAY")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium could not be started"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(compositor, accessibility)]
async fn a_firefox_form_on_wayland_is_typed_in_the_foreground_ticked_and_sent_by_element() {
    let _lock = COMPOSITOR_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let runtime_dir = tempfile::tempdir().unwrap();
    let _browser = firefox(&url, profile.path(), runtime_dir.path());
    let body = type_tick_and_send(
        &runtime().await,
        true,
        "Order form \u{2014} Mozilla Firefox",
        "gecko",
        1000,
        &bodies,
    )
    .await;
    assert_eq!(body, "/submit?name=Ada+Lovelace&city=London&gift=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(compositor, accessibility)]
async fn a_chromium_form_on_wayland_is_typed_in_the_foreground_ticked_and_sent_by_element() {
    let _lock = COMPOSITOR_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let runtime_dir = tempfile::tempdir().unwrap();
    let _browser = chromium(&url, profile.path(), runtime_dir.path());
    // Typed into in the foreground, as on X11. (It once ended with an
    // unknown outcome after its first field, when a browser's tree could
    // be kept in memory by its events, which follow its page late: the
    // read between the fields could be the page as it was. A browser's
    // tree is now always read from the bus.)
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
#[needs(compositor, accessibility)]
async fn a_qt6_form_on_wayland_is_filled_ticked_and_sent_by_element() {
    let _lock = COMPOSITOR_LOCK.lock().await;
    let runtime_dir = tempfile::tempdir().unwrap();
    let title = "Qt order on Wayland";
    let form = qt_form("PyQt6", title, &own_runtime(runtime_dir.path()), true);
    let sent = qt_fill_tick_and_send(&runtime().await, &form, title).await;
    assert_eq!(
        sent,
        serde_json::json!({ "name": "Ada Lovelace", "gift": true })
    );
}
