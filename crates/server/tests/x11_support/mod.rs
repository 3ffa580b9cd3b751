//! Driving the v8 rules on a real X11 display from a test: the display
//! itself (or a clear word that there is none), programs shown on it and
//! ended with the test, the server in-process over it, and the waits a
//! real display needs (a window to appear, the screen to settle, a file to
//! be written).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::Session;
use adk_computer_use::contracts::*;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use::runtime::{ComputerUseRuntime, ProposedAction};
use computer_use_server::Config;
use computer_use_server::desktop::x11::X11Desktop;
use serde_json::{Value, json};

use adk_computer_use_testkit::child::{PRINCIPAL, Sim, approved};

pub mod form;
pub mod liar;

#[path = "../browser_support/mod.rs"]
pub mod browser;
// Each test binary uses some of them.
#[allow(unused_imports)]
pub use browser::{accessible_window, run_as_a_plan_would, scope, wait_until_still};

/// One test at a time on the display: they share its pointer and focus.
pub static DISPLAY_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Whether there is a display to test on. The X11 tests are built to run
/// only when `DISPLAY` was set for the build (else they are reported as
/// ignored, with the reason); run without one, they fail, never pass.
pub fn display() -> bool {
    assert!(
        std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty()),
        "there is no X server ($DISPLAY is empty): this test needs one"
    );
    true
}

/// A program on the display, ended however the test ends.
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
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} could not be started: {e}")),
    )
}

/// A program outside this crate, run to its end; its standard output.
pub fn tool(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program} could not be run: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The rules over the display, served in-process, with a session started.
/// The person's input is not watched: these tests stand in for other
/// programs with `xdotool`, whose input a watching server would take for a
/// person's (`x11_takeover.rs` tests the watch itself).
pub async fn runtime() -> Sim {
    runtime_over(X11Desktop::connect_unwatched().unwrap()).await
}

/// [`runtime`], over `desktop`.
pub async fn runtime_over(desktop: X11Desktop) -> Sim {
    let (runtime, approver) = adk_computer_use_testkit::spawn_on(
        Config::for_principal(PRINCIPAL),
        Box::new(desktop),
        McpRuntimeConfig::new(PRINCIPAL),
    )
    .await
    .unwrap();
    runtime
        .start_session(Some("x11 tests"), None)
        .await
        .unwrap();
    Sim {
        runtime: Arc::new(runtime),
        approver,
    }
}

/// Waits until the display lists a window of `app` and the screen has
/// stopped changing (a window still painting would make evidence stale
/// before the test changes anything); the window's record.
pub async fn window_of(runtime: &ComputerUseMcpRuntime, app: &str) -> Value {
    let mut found = None;
    for _ in 0..100 {
        let listed = runtime.observe_semantic(&scope(runtime)).await.unwrap();
        found = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["bundleId"] == app))
            .cloned();
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let window = found.unwrap_or_else(|| panic!("no {app} window appeared"));
    let mut last = None;
    for _ in 0..50 {
        let frame = runtime.observe_visual(&scope(runtime)).await.unwrap();
        let digest = frame.structured["screenshotHash"].clone();
        if last.as_ref() == Some(&digest) {
            return window;
        }
        last = Some(digest);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the screen kept changing for 10 s");
}

/// An xterm whose keystrokes `cat` writes to a file of its own.
pub struct Terminal {
    _program: Program,
    _dir: tempfile::TempDir,
    pub file: std::path::PathBuf,
}

pub fn terminal(geometry: &str) -> Terminal {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("typed.txt");
    std::fs::write(&file, "").unwrap();
    let program = start(
        "xterm",
        &[
            "-geometry",
            geometry,
            "-e",
            "sh",
            "-c",
            &format!("cat > '{}'", file.display()),
        ],
    );
    Terminal {
        _program: program,
        _dir: dir,
        file,
    }
}

/// The file's content once it is `expected` (up to 3 s), or as it is then.
pub fn settled(file: &std::path::Path, expected: &str) -> String {
    let mut content = String::new();
    for _ in 0..30 {
        content = std::fs::read_to_string(file).unwrap();
        if content == expected {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    content
}

pub fn typing(text: &str) -> ProposedAction {
    ProposedAction::new("type", json!({ "text": text }), ExecutionMode::Foreground)
        .with_data_labels([DataLabel::Public])
}

pub fn click(x: i64, y: i64) -> ProposedAction {
    ProposedAction::new(
        "left_click",
        json!({ "coordinate": [x, y] }),
        ExecutionMode::Foreground,
    )
}

/// Previews `action` in `session` (the host approving it when asked), lets
/// `between` change the display (it is given the target's X window id),
/// then runs the rest of the chain; the refusal.
pub async fn refused_after(
    runtime: &Sim,
    session: &Session<ComputerUseMcpRuntime>,
    action: &ProposedAction,
    between: impl FnOnce(u64),
) -> ComputerUseError {
    let approved = approved(runtime, session, action).await;
    let window = match approved
        .preview()
        .envelope
        .target
        .as_ref()
        .unwrap()
        .window_id
    {
        Some(WindowId::Number(id)) => id,
        ref other => panic!("the target should name an X window, not {other:?}"),
    };
    between(window);
    let leased = approved.reserve().await.unwrap().lease().await.unwrap();
    match leased.execute().await {
        Ok(_) => panic!("the action was not refused (window {window})"),
        Err(err) => err,
    }
}

/// A refusal with `code`, made before anything was sent (not an unknown
/// outcome).
pub fn assert_refused(err: &ComputerUseError, code: &str) {
    assert_eq!(err.refusal_code(), Some(code), "{err}");
    assert!(
        matches!(err, ComputerUseError::Refused { .. }),
        "refused before anything was sent, not an unknown outcome: {err:?}"
    );
}

/// Target evidence for window `id` of `app` on this machine, stating only
/// the frame `screenshot_hash` (callers add what else they bind).
pub fn evidence_for(app: &str, id: u64, screenshot_hash: String) -> TargetEvidence {
    TargetEvidence {
        platform: std::env::consts::OS.into(),
        app_id: app.into(),
        pid: None,
        window_id: Some(WindowId::Number(id)),
        window_title_digest: None,
        display_id: None,
        role: None,
        label_digest: None,
        bounds: None,
        observation_id: "o".into(),
        screenshot_hash: Some(screenshot_hash),
        ui_tree_revision: None,
        confidence: 1.0,
        captured_at: adk_computer_use::clock::format_rfc3339(time::OffsetDateTime::now_utc())
            .unwrap(),
    }
}

/// `program` started with settings of its own (in memory, and a fresh
/// configuration and data folder in `home`): what an earlier run left (a
/// calculator's last result, gedit's session) is not shown again.
pub fn start_fresh(program: &str, args: &[&str], home: &std::path::Path) -> Program {
    Program(
        Command::new(program)
            .args(args)
            .env("GSETTINGS_BACKEND", "memory")
            .env("XDG_CONFIG_HOME", home.join("config"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("XDG_CACHE_HOME", home.join("cache"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} could not be started: {e}")),
    )
}

/// Chromium on `url` in a fresh profile; with `accessible`, told an
/// assistive technology is present.
pub fn chromium(url: &str, profile: &std::path::Path, accessible: bool) -> Program {
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
pub fn firefox(url: &str, profile: &std::path::Path) -> Program {
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

/// The process and bounds (`x, y, width, height`) of the display's
/// window titled `title`, once it is listed.
pub fn listed(desktop: &X11Desktop, title: &str) -> Option<(u32, (i64, i64, u32, u32))> {
    use computer_use_server::DesktopBackend;
    let windows = desktop.list_windows().ok()?;
    let window = windows["windows"]
        .as_array()?
        .iter()
        .find(|w| w["title"] == title)?;
    let at = &window["bounds"];
    let size = |key: &str| u32::try_from(at[key].as_u64()?).ok();
    let bounds = (
        at["x"].as_i64()?,
        at["y"].as_i64()?,
        size("width")?,
        size("height")?,
    );
    Some((u32::try_from(window["pid"].as_u64()?).ok()?, bounds))
}

/// The window titled `title` (at x = `at_x`, when given) once `bus` reads
/// its tree from memory (an application sends events while it starts):
/// its process, bounds and that tree. Up to 30 s.
pub fn kept_window(
    desktop: &X11Desktop,
    bus: &computer_use_server::desktop::atspi::Accessibility,
    title: &str,
    at_x: Option<i64>,
) -> (
    u32,
    (i64, i64, u32, u32),
    computer_use_server::desktop::atspi::Tree,
) {
    use computer_use_server::desktop::atspi::Source;
    for _ in 0..150 {
        std::thread::sleep(Duration::from_millis(200));
        let Some((pid, bounds)) = listed(desktop, title) else {
            continue;
        };
        if at_x.is_some_and(|x| bounds.0 != x) {
            continue;
        }
        if let Ok(tree) = bus.tree(pid, title, bounds)
            && tree.source == Source::Events
        {
            return (pid, bounds, tree);
        }
    }
    panic!("{title:?} was never read from memory");
}
