//! A plain-English request goes through the whole governed chain over MCP,
//! then the clipboard is read back through a shadow observation as
//! independent evidence.
//!
//! ```text
//! cargo run --example live_clipboard -- \
//!     "Place the exact public text 'ADK-Rust live prompt completed' on my clipboard."
//! cargo run --example live_clipboard -- "..." --server <command> [args...]
//! cargo run --features openai --example live_clipboard -- "..." --planner model
//! cargo run --features x11 --example live_clipboard -- "..." --x11
//! cargo run --features wayland --example live_clipboard -- "..." --wayland
//! ```
//!
//! With `--x11` the same rules act on the real X11 display `$DISPLAY` names:
//! the text goes onto the real CLIPBOARD selection, the server reads it
//! back itself (its check is what "verified" rests on), and then `xclip -o
//! -selection clipboard`, a program outside this crate, reads it again and
//! both are printed. The write is bound to a window the display shows (the
//! one whose `WM_CLASS` is `COMPUTER_USE_CLIPBOARD_APP`, else the focused
//! one, else the first).
//!
//! With `--wayland` they act on the Wayland compositor `$WAYLAND_DISPLAY`
//! names (a wlroots one: sway, with `$SWAYSOCK` for its layout): the text
//! goes onto its clipboard through wlr-data-control, the server reads it
//! back, and `wl-paste` reads it again. The write is bound to a window the
//! compositor shows, chosen as on X11 (`COMPUTER_USE_CLIPBOARD_APP` is an
//! app id there).
//!
//! With `--planner model` a model behind any OpenAI-compatible endpoint
//! (`OPENAI_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_MODEL`) plans the write
//! from the request under the allowed-action schema, and the agent loop
//! governs what it planned; the read-back is the same.
//!
//! By default it spawns the bundled simulator. With `--server` it drives any
//! other computer-use-mcp server; the principal it expects is read from
//! `COMPUTER_USE_PRINCIPAL_ID` and the clipboard application from
//! `COMPUTER_USE_CLIPBOARD_APP` (both default to the simulator's).

use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{ChainOutcome, Session};
use adk_computer_use::clock::format_rfc3339;
use adk_computer_use::contracts::*;
use adk_computer_use::digest::sha256_prefixed;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpApprover, McpRuntimeConfig};
use adk_computer_use::runtime::ProposedAction;
use computer_use_server::{
    self, CLIPBOARD_APP, CLIPBOARD_LABEL, CLIPBOARD_ROLE, CLIPBOARD_WINDOW, Config,
};
use serde_json::json;

#[path = "support/host.rs"]
mod host;
#[path = "support/x11.rs"]
mod x11_support;

type Error = Box<dyn std::error::Error>;
const DEFAULT_REQUEST: &str =
    "Place the exact public text 'ADK-Rust live prompt completed' on my clipboard.";

/// The exact text between the first and the last single quote.
fn quoted_text(request: &str) -> Result<&str, Error> {
    match (request.find('\''), request.rfind('\'')) {
        (Some(start), Some(end)) if end > start + 1 => Ok(&request[start + 1..end]),
        _ => Err(format!("the request names no exact text in single quotes: {request:?}").into()),
    }
}

/// Reads the clipboard back through the governed chain. A clipboard read is
/// secret access: the server asks for a person's approval, and this example
/// plays the host and gives it, in the open, through the host's approver.
async fn read_back(
    session: &Session<ComputerUseMcpRuntime>,
    approver: &McpApprover,
    target: Option<TargetEvidence>,
    expected: &str,
) -> Result<(), Error> {
    let mut read = ProposedAction::new("read_clipboard", json!({}), ExecutionMode::Background)
        .with_data_labels([DataLabel::Private]);
    read.target = target;
    let done = match session.run(read).await? {
        ChainOutcome::Completed(done) => done,
        ChainOutcome::NeedsApproval(pending) => {
            println!(
                "read-back {} needs approval ({}); the host approves it now",
                pending.action_id(),
                pending.preview().policy.reasons.join("; ")
            );
            host::approve_and_complete(approver, pending).await?
        }
        ChainOutcome::Blocked(blocked) => {
            println!(
                "read-back blocked ({}): {:?}",
                blocked.blocker(),
                blocked.reasons()
            );
            return Ok(());
        }
    };
    let result = done.receipt().result.as_ref();
    let output = result.and_then(|r| r.get("structuredContent"));
    match output.and_then(|o| o.get("text")).and_then(|t| t.as_str()) {
        Some(read) => println!(
            "clipboard read back through the governed chain: {read:?} (matches: {})",
            read == expected
        ),
        None => println!(
            "read back through the governed chain; the server's answer carries no text: {}",
            output.map_or_else(|| "nothing".to_owned(), ToString::to_string)
        ),
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let planner = match args.iter().position(|a| a == "--planner") {
        Some(at) if at + 1 < args.len() => {
            let planner = args.remove(at + 1);
            args.remove(at);
            planner
        }
        Some(_) => return Err("--planner needs a name: model".into()),
        None => "rules".to_owned(),
    };
    let x11 = args.iter().any(|a| a == "--x11");
    let wayland = args.iter().any(|a| a == "--wayland");
    args.retain(|a| a != "--x11" && a != "--wayland");
    if x11 && wayland {
        return Err("--x11 and --wayland name two desktops: choose one".into());
    }
    let (request, server) = match args.iter().position(|a| a == "--server") {
        Some(at) => (args[..at].first().cloned(), Some(args[at + 1..].to_vec())),
        None => (args.first().cloned(), None),
    };
    let request = request.unwrap_or_else(|| DEFAULT_REQUEST.to_owned());
    let text = quoted_text(&request)?.to_owned();
    let principal =
        std::env::var("COMPUTER_USE_PRINCIPAL_ID").unwrap_or_else(|_| "principal-live".to_owned());
    let mut app =
        std::env::var("COMPUTER_USE_CLIPBOARD_APP").unwrap_or_else(|_| CLIPBOARD_APP.to_owned());

    // The target evidence: by default the chain derives it from what the
    // session observes (the clipboard window above). A server whose
    // observations show no windows (upstream's fake desktop) is given its
    // evidence in `COMPUTER_USE_TARGET_EVIDENCE` (camelCase JSON), stamped now.
    let target = match std::env::var("COMPUTER_USE_TARGET_EVIDENCE") {
        Ok(json) => {
            let mut target: TargetEvidence = serde_json::from_str(&json)?;
            target.captured_at = format_rfc3339(time::OffsetDateTime::now_utc())?;
            Some(target)
        }
        Err(_) => None,
    };
    // The session acts on that window (the simulator's clipboard viewer
    // unless the evidence names another).
    let mut window = target
        .as_ref()
        .and_then(|t| t.window_id.clone())
        .unwrap_or(WindowId::Number(CLIPBOARD_WINDOW));
    let config = McpRuntimeConfig::new(&principal).capability_tool("write_clipboard");
    // Another server as a child process, or the bundled simulator served
    // inside this process.
    // The host keeps the approver; the session gets the runtime alone.
    let (runtime, approver) = match &server {
        Some(parts) if !parts.is_empty() => {
            let mut command = tokio::process::Command::new(&parts[0]);
            command.args(&parts[1..]);
            ComputerUseMcpRuntime::spawn_with_approver(command, config).await?
        }
        Some(_) => return Err("--server needs a command".into()),
        None if x11 => x11_desktop(Config::for_principal(&principal), config).await?,
        None if wayland => wayland_desktop(Config::for_principal(&principal), config).await?,
        None => adk_computer_use_testkit::spawn(Config::for_principal(&principal), config).await?,
    };
    let runtime = Arc::new(runtime);
    let started = runtime.start_session(Some(&request), None).await?;
    println!(
        "session {} started for {}",
        started.session_id, started.principal_id
    );
    if x11 || wayland {
        (app, window) = desktop_window(&runtime, &started.session_id).await?;
        println!("the write is bound to window {window:?} of {app}");
    }

    let identity = VerifiedIdentity::new(&principal, "tenant-live")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
    let session = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("live-clipboard")
        .target(&app, Some(window.clone()))
        .build()?;

    let postcondition = ActionPostcondition::try_from(PostconditionFields::UiElement {
        role: Some(CLIPBOARD_ROLE.into()),
        label: Some(CLIPBOARD_LABEL.into()),
        exists: true,
        value_digest: Some(sha256_prefixed(&text)),
    })?;
    let mut action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_postcondition(postcondition)
    .with_data_labels([DataLabel::Public]);
    action.target = target.clone();

    if planner == "model" {
        model_writes(&session, &request).await?;
        read_back(&session, &approver, target.clone(), &text).await?;
        let stats = session.shutdown().await;
        println!("reservations released: {} leaked", stats.leaked());
        runtime.shutdown().await?;
        return Ok(());
    } else if planner != "rules" {
        return Err(format!("unknown planner {planner:?}: the choices are rules and model").into());
    }
    match session.run(action).await? {
        ChainOutcome::Completed(done) => {
            println!("receipt {}: {}", done.receipt_id(), done.outcome());
            println!(
                "performed: {}, verified: {}",
                done.performed(),
                done.outcome().is_verified()
            );
            read_back(&session, &approver, target.clone(), &text).await?;
            if x11 {
                outside_reads("xclip", &["-o", "-selection", "clipboard"], &text)?;
            }
            if wayland {
                outside_reads("wl-paste", &["--no-newline"], &text)?;
            }
            if let Some(why) = done.outcome().detail() {
                println!("why not verified: {why}");
            }
        }
        ChainOutcome::NeedsApproval(pending) => {
            println!(
                "the server wants approval for digest {}; nothing was done",
                pending.action_digest()
            );
        }
        ChainOutcome::Blocked(blocked) => {
            println!("blocked ({}): {:?}", blocked.blocker(), blocked.reasons());
        }
    }
    let stats = session.shutdown().await;
    println!(
        "reservations released: {} explicit, {} leaked",
        stats.reservations.explicit_released,
        stats.leaked()
    );
    runtime.shutdown().await?;
    Ok(())
}

/// The model plans the write from the request; the agent loop governs it.
#[cfg(feature = "openai")]
async fn model_writes(
    session: &Session<ComputerUseMcpRuntime>,
    request: &str,
) -> Result<(), Error> {
    use adk_computer_use::agent::openai::{OpenAiConfig, OpenAiPlanner};
    use adk_computer_use::agent::{AgentLoop, AllowedActions};
    let allowed =
        AllowedActions::default().allow("write_clipboard", &[ExecutionMode::Background], None);
    let planner = OpenAiPlanner::new(OpenAiConfig::from_env()?)?;
    let report = AgentLoop::new(session, planner, allowed)
        .budget(3)
        .run(request)
        .await
        .into_result()?;
    for step in &report.history {
        println!(
            "model step {}: {:?} -> {}",
            step.step, step.tool, step.outcome
        );
    }
    println!("model loop stopped: {:?}", report.stop);
    Ok(())
}

#[cfg(not(feature = "openai"))]
async fn model_writes(
    _session: &Session<ComputerUseMcpRuntime>,
    _request: &str,
) -> Result<(), Error> {
    Err("--planner model needs the openai feature: cargo run --features openai --example live_clipboard -- \"...\" --planner model".into())
}

/// The real X11 display under the same rules, served in this process.
#[cfg(feature = "x11")]
async fn x11_desktop(
    sim: Config,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), Error> {
    // The text stays on the clipboard after this example exits.
    let desktop =
        computer_use_server::desktop::x11::X11Desktop::connect()?.keeping_clipboard_after_exit();
    Ok(adk_computer_use_testkit::spawn_on(sim, Box::new(desktop), config).await?)
}

#[cfg(not(feature = "x11"))]
async fn x11_desktop(
    _sim: Config,
    _config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), Error> {
    Err("--x11 needs the x11 feature: cargo run --features x11 --example live_clipboard -- \"...\" --x11".into())
}

/// The real Wayland compositor under the same rules, served in this process.
#[cfg(feature = "wayland")]
async fn wayland_desktop(
    sim: Config,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), Error> {
    // The text stays on the clipboard after this example exits.
    let desktop = computer_use_server::desktop::wayland::WaylandDesktop::connect()?
        .keeping_clipboard_after_exit();
    eprintln!("the compositor offers: {}", desktop.protocols());
    Ok(adk_computer_use_testkit::spawn_on(sim, Box::new(desktop), config).await?)
}

#[cfg(not(feature = "wayland"))]
async fn wayland_desktop(
    _sim: Config,
    _config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), Error> {
    Err("--wayland needs the wayland feature: cargo run --features wayland --example live_clipboard -- \"...\" --wayland".into())
}

/// The window the write is bound to, from what the desktop shows.
async fn desktop_window(
    runtime: &ComputerUseMcpRuntime,
    session_id: &str,
) -> Result<(String, WindowId), Error> {
    let (app, id) = x11_support::bound_window(runtime, session_id).await?;
    Ok((app, WindowId::Number(id)))
}

/// Reads the clipboard with `program` (`xclip`, `wl-paste`), a program
/// outside this crate, and prints what it read beside the request.
fn outside_reads(program: &str, args: &[&str], expected: &str) -> Result<(), Error> {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} could not be run (is it installed?): {e}"))?;
    let read = String::from_utf8_lossy(&output.stdout);
    println!("requested:       {expected:?}");
    println!(
        "{program} read back: {read:?} (matches: {})",
        read == expected
    );
    if read != expected {
        return Err(format!("{program} read back another text than the one requested").into());
    }
    Ok(())
}
