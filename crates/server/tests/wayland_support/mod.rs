//! Driving the v8 rules on a Wayland compositor from a test: the
//! compositor's sockets (or a clear word that there are none), native
//! Wayland programs shown on it and ended with the test, the server as its
//! own process over it (`computer-use-server --desktop wayland`), and the
//! outside tools that check its effects (`wl-paste`, `grim`, `swaymsg`).
//!
//! The compositor is named by `ADK_WAYLAND_DISPLAY` and `ADK_SWAYSOCK`,
//! never by this process's own `WAYLAND_DISPLAY`: the X11 tests in the same
//! run start GTK programs that must stay on the X server.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::contracts::catalogue::tool;
use adk_computer_use::contracts::*;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use::runtime::{ComputerUseRuntime, ObservationScope};
use adk_computer_use_testkit::child::{PRINCIPAL, Sim};
use serde_json::Value;

#[path = "../x11_support/form.rs"]
pub mod form;

/// One test at a time on the compositor: they share its focus.
pub static COMPOSITOR_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The compositor's sockets: `(WAYLAND_DISPLAY, SWAYSOCK)`. The tests are
/// built to run only when `ADK_WAYLAND_DISPLAY` was set for the build;
/// run without it, they fail, never pass.
pub fn sockets() -> (String, String) {
    let display = std::env::var("ADK_WAYLAND_DISPLAY")
        .ok()
        .filter(|d| !d.is_empty())
        .expect(
            "there is no Wayland compositor ($ADK_WAYLAND_DISPLAY is empty): this test needs one",
        );
    let sway = std::env::var("ADK_SWAYSOCK")
        .ok()
        .filter(|d| !d.is_empty())
        .expect("there is no sway IPC socket ($ADK_SWAYSOCK is empty): this test needs one");
    (display, sway)
}

/// A settings directory whose GTK caret does not blink: a blinking caret
/// changes a window's pixels, and the Wayland desktop tolerates no change.
/// On Wayland GTK takes the setting from GSettings (here its key-file
/// backend), over `settings.ini`.
fn quiet_gtk() -> &'static str {
    static DIR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("adk-wayland-gtk-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("gtk-3.0")).unwrap();
        std::fs::write(
            dir.join("gtk-3.0/settings.ini"),
            "[Settings]\ngtk-cursor-blink = false\ngtk-enable-animations = false\n",
        )
        .unwrap();
        std::fs::create_dir_all(dir.join("glib-2.0/settings")).unwrap();
        std::fs::write(
            dir.join("glib-2.0/settings/keyfile"),
            "[org/gnome/desktop/interface]\ncursor-blink=false\nenable-animations=false\n",
        )
        .unwrap();
        dir.display().to_string()
    })
}

/// The environment of a program on the compositor: its socket, GTK on
/// Wayland (not on an X server this machine may also run), no blinking.
pub fn wayland_env() -> Vec<(&'static str, String)> {
    let (display, sway) = sockets();
    // GTK looks for the runtime directory even when the socket's path is
    // absolute: it is the compositor's, beside its socket.
    let runtime_dir = std::path::Path::new(&display)
        .parent()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    vec![
        ("WAYLAND_DISPLAY", display),
        ("XDG_RUNTIME_DIR", runtime_dir),
        ("SWAYSOCK", sway),
        ("GDK_BACKEND", "wayland".into()),
        ("XDG_CONFIG_HOME", quiet_gtk().into()),
        ("GSETTINGS_BACKEND", "keyfile".into()),
    ]
}

/// A program on the compositor, ended however the test ends.
pub struct Program(pub Child);

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start(program: &str, args: &[&str]) -> Program {
    Program(
        Command::new(program)
            .args(args)
            .envs(wayland_env())
            .env_remove("DISPLAY")
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} could not be started: {e}")),
    )
}

/// The GTK form of `form_app.py`, on the compositor.
pub fn form_app(title: &str, fields: &[&str]) -> form::Form {
    let env = wayland_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    form::Form::start_in(title, fields, &env)
}

/// A program outside this crate, on the compositor, run to its end; its
/// standard output as bytes.
pub fn tool_bytes(program: &str, args: &[&str]) -> Vec<u8> {
    let output = Command::new(program)
        .args(args)
        .envs(wayland_env())
        .output()
        .unwrap_or_else(|e| panic!("{program} could not be run: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

pub fn tool(program: &str, args: &[&str]) -> String {
    String::from_utf8_lossy(&tool_bytes(program, args)).into_owned()
}

/// A sway command, through sway's own client.
pub fn swaymsg(command: &str) {
    let (_, sock) = sockets();
    tool("swaymsg", &["-s", &sock, command]);
}

/// The server over the compositor, as its own process, with a session.
pub async fn runtime() -> Sim {
    let mut command = tokio::process::Command::new(adk_computer_use_testkit::binary::path(
        adk_computer_use_testkit::binary::SERVER,
    ));
    command
        .args(["--desktop", "wayland", "--principal", PRINCIPAL])
        .envs(wayland_env())
        // Nothing is kept on the clipboard past a test's server.
        .env("COMPUTER_USE_CLIPBOARD_KEEPER", "off")
        .stderr(Stdio::null());
    let config = McpRuntimeConfig::new(PRINCIPAL).capability_tool(tool::WRITE_CLIPBOARD);
    let (runtime, approver) = ComputerUseMcpRuntime::spawn_with_approver(command, config)
        .await
        .unwrap();
    runtime
        .start_session(Some("wayland tests"), None)
        .await
        .unwrap();
    Sim {
        runtime: Arc::new(runtime),
        approver,
    }
}

pub fn scope(runtime: &ComputerUseMcpRuntime) -> ObservationScope {
    ObservationScope {
        session_id: runtime.session_context().unwrap().session_id,
        tool: None,
        app_id: None,
        window_id: None,
    }
}

/// Waits until the compositor lists a window titled `title` and the
/// output has stopped changing; the window's record.
pub async fn window_titled(runtime: &ComputerUseMcpRuntime, title: &str) -> Value {
    let mut found = None;
    // Up to 30 s: a GTK application starting on a busy machine is slow.
    for _ in 0..300 {
        let listed = runtime.observe_semantic(&scope(runtime)).await.unwrap();
        found = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .cloned();
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let window = found.unwrap_or_else(|| panic!("no window titled {title:?} appeared"));
    settled(runtime).await;
    window
}

/// Waits until the output stops changing: an application draws what it
/// was sent in its own time, and an observation taken before it has
/// drawn is stale once it has.
pub async fn settled(runtime: &ComputerUseMcpRuntime) {
    let mut last = None;
    for _ in 0..50 {
        let frame = runtime.observe_visual(&scope(runtime)).await.unwrap();
        let digest = frame.structured["screenshotHash"].clone();
        if last.as_ref() == Some(&digest) {
            return;
        }
        last = Some(digest);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the output kept changing for 10 s");
}

/// The window id of a record.
pub fn id_of(window: &Value) -> u64 {
    window["windowId"].as_u64().unwrap()
}

/// A PNG's size and RGB pixels.
pub fn decoded(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).unwrap();
    buffer.truncate(info.buffer_size());
    let rgb = match info.color_type {
        png::ColorType::Rgb => buffer,
        png::ColorType::Rgba => buffer
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        other => panic!("a PNG of {other:?}"),
    };
    (info.width, info.height, rgb)
}

/// A refusal with `code`, made before anything was sent.
pub fn assert_refused(err: &adk_computer_use::ComputerUseError, code: &str) {
    assert_eq!(err.refusal_code(), Some(code), "{err}");
    assert!(
        matches!(err, adk_computer_use::ComputerUseError::Refused { .. }),
        "refused before anything was sent, not an unknown outcome: {err:?}"
    );
}

/// Target evidence is named by window id on Wayland too.
pub fn window_of_target(target: &TargetEvidence) -> u64 {
    match target.window_id {
        Some(WindowId::Number(id)) => id,
        ref other => panic!("the target should name a window, not {other:?}"),
    }
}
