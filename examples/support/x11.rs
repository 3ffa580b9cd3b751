#![allow(dead_code)] // each example uses a different part of it
//! Waiting on a real desktop (an X11 display, a Wayland compositor) before
//! an example binds evidence to it.
//!
//! A program started just before an example takes a moment to map its
//! window and to paint it; evidence taken while it paints is stale by the
//! time the action runs, and the server rightly refuses it. These waits
//! look through the governed runtime's own observations.

use std::time::Duration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::mcp::ComputerUseMcpRuntime;
use adk_computer_use::runtime::{ComputerUseRuntime, ObservationScope};
use serde_json::Value;

fn scope(session_id: &str) -> ObservationScope {
    ObservationScope {
        session_id: session_id.to_owned(),
        tool: None,
        app_id: None,
        window_id: None,
    }
}

/// The windows the display lists once `wanted` accepts them (10 s at
/// most), after the screen has stopped changing (two frames 200 ms apart
/// the same, 10 s at most).
pub async fn windows_when(
    runtime: &ComputerUseMcpRuntime,
    session_id: &str,
    wanted: impl Fn(&[Value]) -> bool,
) -> Result<Vec<Value>, String> {
    let scope = scope(session_id);
    let failed = |e: ComputerUseError| e.to_string();
    let mut windows = Vec::new();
    for _ in 0..100 {
        let listed = runtime.observe_semantic(&scope).await.map_err(failed)?;
        windows = listed.structured["windows"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if wanted(&windows) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !wanted(&windows) {
        return Err("the display did not show the windows wanted within 10 s".into());
    }
    let mut last = None;
    for _ in 0..50 {
        let frame = runtime.observe_visual(&scope).await.map_err(failed)?;
        let digest = frame.structured["screenshotHash"].clone();
        if last.as_ref() == Some(&digest) {
            return Ok(windows);
        }
        last = Some(digest);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err("the screen kept changing for 10 s".into())
}

/// The window a clipboard write is bound to, from what the desktop shows:
/// the one whose application is `COMPUTER_USE_CLIPBOARD_APP`, else the
/// focused one, else the first; its application and numeric id. A window
/// started just before may still be mapping or painting: one is waited
/// for, and the screen to settle.
pub async fn bound_window(
    runtime: &ComputerUseMcpRuntime,
    session_id: &str,
) -> Result<(String, u64), String> {
    let windows = windows_when(runtime, session_id, |ws| !ws.is_empty())
        .await
        .map_err(|e| format!("{e}: the write needs a window to bind to; start one"))?;
    let wanted = std::env::var("COMPUTER_USE_CLIPBOARD_APP").ok();
    let chosen = windows
        .iter()
        .find(|w| wanted.as_deref().is_some_and(|a| w["bundleId"] == a))
        .or_else(|| windows.iter().find(|w| w["isFocused"] == true))
        .or_else(|| windows.first())
        .ok_or("the desktop shows no window to bind the write to; start one")?;
    let app = chosen["bundleId"]
        .as_str()
        .ok_or("the window record has no app id")?;
    let id = chosen["windowId"]
        .as_u64()
        .ok_or("the window record has no numeric window id")?;
    Ok((app.to_owned(), id))
}
