//! The waits on a Wayland compositor (headless sway), the element layer
//! they read being the one the X11 desktop shares: a wait for a window
//! ends when the compositor lists it, a wait for a text when a native
//! Wayland GTK form's field shows it, and a wait for a stable tree once the
//! form stops changing.
//!
//! Needs the compositor (`ADK_WAYLAND_DISPLAY`, `ADK_SWAYSOCK`) and the
//! accessibility bus (`.ci/run` starts both); built without them the tests
//! are reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use serde_json::json;

mod wayland_support;

use wayland_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(compositor, accessibility)]
async fn waits_for_a_window_a_text_and_a_still_tree_on_wayland() {
    let _lock = COMPOSITOR_LOCK.lock().await;
    let title = format!("Wayland wait {}", std::process::id());
    let sim = runtime().await;
    let waiting = sim.observe_in_background(
        "wait_for_window",
        json!({ "target_app": "adk-form", "title": title, "timeout_ms": 30000 }),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the window is not there yet");
    let form = form_app(&title, &["Name"]);
    let found = waiting.await.unwrap().unwrap();
    assert_eq!(found["window"]["title"], title.as_str(), "{found}");
    assert_eq!(found["window"]["contentOrigin"], "application_untrusted");
    let id = found["window"]["windowId"].as_u64().unwrap();

    // The application's elements answer on the bus in their own time.
    let stable = sim
        .runtime
        .observe_shadow(
            "wait_for_stable",
            json!({ "window_id": id, "quiet_ms": 500, "timeout_ms": 30000 }),
        )
        .await
        .unwrap()
        .structured;
    assert_eq!(stable["stable"], true, "{stable}");

    let waiting = sim.observe_in_background(
        "wait_for_text",
        json!({ "window_id": id, "text": "grace hopper", "timeout_ms": 30000 }),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "no field shows the text yet");
    let mut form = tokio::task::spawn_blocking(move || {
        let mut form = form;
        form.change("fill Name Grace Hopper");
        form
    })
    .await
    .unwrap();
    let shown = waiting.await.unwrap().unwrap();
    assert_eq!(shown["matched"], true, "{shown}");
    assert!(shown["elements"].as_u64().unwrap() >= 1, "{shown}");
    assert_eq!(form.values(), "Name=Grace Hopper");
    let _ = sim.runtime.shutdown().await;
}
