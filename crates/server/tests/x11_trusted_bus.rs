//! The accessibility bus a server trusts is the one its session started,
//! in a directory no other session shares: a session started without
//! `XDG_RUNTIME_DIR` gets its accessibility bus under the home directory
//! (`~/.cache/at-spi/bus`, where every session of the user would find the
//! same path), and a server in it refuses the accessibility layer, naming
//! why, and reads no element; the same server in the test's own session
//! reads them.
//!
//! These tests need an X server and the session's accessibility bus
//! (`.ci/run` starts both, with a runtime directory of their own); built
//! without them they are reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::sync::Arc;

use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use::runtime::ComputerUseRuntime;
use serde_json::json;

mod x11_support;

use x11_support::*;

/// `computer-use-server --desktop x11` in the D-Bus session `bus` (with
/// `home` as its home), connected; the dialog's window id and app id.
async fn server_with(
    bus: &str,
    home: &std::path::Path,
    title: &str,
) -> (
    tokio::process::Child,
    Arc<ComputerUseMcpRuntime>,
    u64,
    String,
) {
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_computer-use-server"))
        .args([
            "--desktop",
            "x11",
            "--principal",
            adk_computer_use_testkit::child::PRINCIPAL,
        ])
        .env("DBUS_SESSION_BUS_ADDRESS", bus)
        .env("HOME", home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (stdout, stdin) = (server.stdout.take().unwrap(), server.stdin.take().unwrap());
    let runtime = Arc::new(
        ComputerUseMcpRuntime::connect(
            (stdout, stdin),
            McpRuntimeConfig::new(adk_computer_use_testkit::child::PRINCIPAL),
        )
        .await
        .unwrap(),
    );
    runtime.start_session(Some("bus"), None).await.unwrap();
    for _ in 0..100 {
        let listed = runtime.observe_semantic(&scope(&runtime)).await.unwrap();
        let window = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .cloned();
        if let Some(window) = window {
            let id = window["windowId"].as_u64().unwrap();
            let app = window["bundleId"].as_str().unwrap().to_owned();
            return (server, runtime, id, app);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!("the dialog's window was not listed")
}

/// `get_ui_tree` of window `id` of `app`.
async fn window_tree(runtime: &ComputerUseMcpRuntime, app: &str, id: u64) -> serde_json::Value {
    let mut tree_scope = scope(runtime);
    tree_scope.app_id = Some(app.to_owned());
    tree_scope.window_id = Some(adk_computer_use::contracts::WindowId::Number(id));
    runtime
        .observe_semantic(&tree_scope)
        .await
        .unwrap()
        .structured
}

/// A process ended (by its id) when the test ends, however it ends.
struct Ended(String);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_server_whose_accessibility_bus_is_under_the_home_directory_trusts_it_not() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Bus check {}", std::process::id());
    let _dialog = start(
        "zenity",
        &["--info", "--title", &title, "--text", "Bus check"],
    );

    // The server in the test's own session reads the dialog's button.
    let own = std::env::var("DBUS_SESSION_BUS_ADDRESS").expect("the test's D-Bus session");
    let own_home = std::env::var_os("HOME").unwrap_or_default();
    let (_server, runtime, id, app) =
        server_with(&own, std::path::Path::new(&own_home), &title).await;
    let mut found = serde_json::Value::Null;
    for _ in 0..50 {
        found = runtime
            .observe_shadow("find_element", json!({ "window_id": id, "label": "OK" }))
            .await
            .map(|o| o.structured)
            .unwrap_or_else(|err| json!({ "refused": err.to_string() }));
        if found.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    if found.as_array().is_none_or(|a| a.is_empty()) {
        let tree = window_tree(&runtime, &app, id).await;
        panic!("{found}: {}", tree["accessibilityNote"]);
    }
    drop((_server, runtime));

    // A D-Bus session started as one is without a runtime directory: its
    // accessibility launcher puts the bus under the home directory.
    let home = tempfile::tempdir().unwrap();
    let started = std::process::Command::new("dbus-daemon")
        .args(["--session", "--fork", "--print-address=1", "--print-pid=1"])
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_CACHE_HOME")
        // Its launcher stays off the X display (it would name its bus on
        // the root window for the display's later applications).
        .env_remove("DISPLAY")
        .env("HOME", home.path())
        .output()
        .unwrap();
    let printed = String::from_utf8(started.stdout).unwrap();
    let mut lines = printed.lines();
    let (bus, pid) = (
        lines.next().unwrap().to_owned(),
        lines.next().unwrap().to_owned(),
    );
    let _session = Ended(pid);
    let (_server, runtime, id, app) = server_with(&bus, home.path(), &title).await;
    let tree = window_tree(&runtime, &app, id).await;
    assert_eq!(tree["accessibility"], "unavailable", "{tree}");
    let note = tree["accessibilityNote"].as_str().unwrap_or_default();
    assert!(note.contains("under the home directory"), "{tree}");
    assert!(
        home.path().join(".cache/at-spi").exists(),
        "the session's launcher made its bus under the home directory"
    );
    runtime
        .observe_shadow("find_element", json!({ "window_id": id, "label": "OK" }))
        .await
        .expect_err("an element was read over a bus the server should not trust");
}
