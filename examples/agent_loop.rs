//! A model plans, the chain governs: a three-step task run by the agent
//! loop, with a recorded transcript as the planner.
//!
//! ```text
//! cargo run --example agent_loop
//! cargo run --example agent_loop -- --server <command> [args...]
//! cargo run --features openai --example agent_loop -- --model [--server ...]
//! cargo run --features x11 --example agent_loop -- --x11
//! cargo run --features x11,wayland --example agent_loop -- --wayland
//! ```
//!
//! With `--x11` the recorded plans drive real programs no one here wrote,
//! on the X11 display `$DISPLAY` names: an `xmessage` dialog, whose Approve
//! button the loop clicks (xmessage then prints the button and exits with
//! its value); a `zenity --forms` sign-up form, whose fields the loop fills
//! by element (`fill_form`, names and roles, no keys typed) and sends with
//! `press_button` (zenity then prints the values); and an `xterm` running
//! `cat > FILE`, into which the loop types one line (the file's content is
//! then read). Those three readings, made outside this crate, are what the
//! example prints and checks. The form needs the session's accessibility
//! bus (a D-Bus session; `at-spi2-core` and `libatk-adaptor`).
//!
//! With `--wayland` the form's plan runs on the Wayland compositor
//! `$WAYLAND_DISPLAY` names (a wlroots one: sway, with `$SWAYSOCK`): the
//! same zenity form as a native Wayland window, filled by element and sent
//! with its OK button, and zenity's printout is the check. (xmessage and
//! xterm are X11 programs; on Wayland they would run under XWayland, which
//! this desktop lists without their app ids.)
//!
//! With `--model` the planner is a model behind any OpenAI-compatible
//! endpoint: `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
//! `OPENAI_API_KEY` and `OPENAI_MODEL`.
//!
//! By default the bundled simulator is served in-process. With `--server`
//! the same transcript runs against another `computer-use-mcp` v8 server
//! (its principal in `COMPUTER_USE_PRINCIPAL_ID`). The transcript is what a
//! model answered under the allowed-action schema; every answer is checked
//! against that schema before the chain runs it, and the chain binds
//! identity, scope, lease and action ids: the planner names none of them.

use std::sync::Arc;

use adk_computer_use::agent::{AgentLoop, AgentStop, AllowedActions, ScriptedPlanner};
use adk_computer_use::eval::ComputerUseEvaluator;
use adk_computer_use::journal::{Journal, MemoryJournal, journal_events, verify_journal};
use adk_computer_use::{
    ComputerUseMcpRuntime, McpRuntimeConfig, ScopeAuthorizer, Session, VerifiedIdentity,
};
use computer_use_server::{CLIPBOARD_APP, Config};

#[cfg(feature = "x11")]
#[path = "support/host.rs"]
mod host;
#[cfg(feature = "x11")]
#[path = "support/x11.rs"]
mod x11_support;

type Error = Box<dyn std::error::Error>;

const TRANSCRIPT: &str = include_str!("transcripts/three_steps.json");
const REQUEST: &str = "Put the draft on my clipboard, then the reviewed text, then the final text.";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--x11") {
        return x11::run().await;
    }
    if args.iter().any(|a| a == "--wayland") {
        return x11::run_wayland().await;
    }
    let server = args
        .iter()
        .position(|a| a == "--server")
        .map(|at| args[at + 1..].to_vec());
    let principal =
        std::env::var("COMPUTER_USE_PRINCIPAL_ID").unwrap_or_else(|_| "principal-agent".to_owned());
    let config = McpRuntimeConfig::new(&principal);
    let runtime = match &server {
        Some(parts) if !parts.is_empty() => {
            let mut command = tokio::process::Command::new(&parts[0]);
            command.args(&parts[1..]);
            ComputerUseMcpRuntime::spawn(command, config).await?
        }
        Some(_) => return Err("--server needs a command".into()),
        None => {
            adk_computer_use_testkit::spawn(Config::for_principal(&principal), config)
                .await?
                .0
        }
    };
    runtime.start_session(Some(REQUEST), None).await?;

    // What the model may propose: the capabilities the server reports for
    // the tools this host offers it.
    let allowed = adk_computer_use::agent::allowed_actions(&runtime, &["write_clipboard"]).await?;
    println!(
        "allowed: {} (the schema handed to the model has {} properties)",
        allowed.tools().collect::<Vec<_>>().join(", "),
        allowed.schema()["properties"]
            .as_object()
            .map_or(0, |p| p.len())
    );

    let identity = VerifiedIdentity::new(&principal, "tenant-agent")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
    let sink = Arc::new(MemoryJournal::new());
    let journal = Arc::new(Journal::new(sink.clone()));
    let mut builder = Session::builder(Arc::new(runtime), authorizer)
        .agent_id("agent-loop")
        .journal(journal);
    if server.is_none() {
        // The simulator shows its windows: target evidence is derived from
        // what the loop observes.
        builder = builder.target(CLIPBOARD_APP, None);
    }
    let session = builder.build()?;

    let report = if args.iter().any(|a| a == "--model") {
        run_model(&session, allowed).await?
    } else {
        let planner = ScriptedPlanner::from_transcript(&serde_json::from_str(TRANSCRIPT)?)?;
        AgentLoop::new(&session, planner, allowed)
            .budget(5)
            .run(REQUEST)
            .await
            .into_result()?
    };
    for step in &report.history {
        println!(
            "step {}: {} -> {}",
            step.step,
            step.tool.as_deref().unwrap_or("-"),
            step.outcome
        );
    }
    match &report.stop {
        AgentStop::Done { summary } => println!("done: {summary}"),
        other => println!("stopped: {other:?}"),
    }
    let entries = sink.entries();
    verify_journal(&entries, None)?;
    let evaluation = ComputerUseEvaluator::new().evaluate(&journal_events(&entries));
    println!(
        "journal: {} entries, hash chain intact, evaluator passed: {}",
        entries.len(),
        evaluation.passed
    );
    let stats = session.shutdown().await;
    println!("released: {} leaked", stats.leaked());
    if !matches!(report.stop, AgentStop::Done { .. }) || !evaluation.passed {
        return Err("the task did not complete cleanly".into());
    }
    Ok(())
}

#[cfg(feature = "openai")]
async fn run_model(
    session: &Session<ComputerUseMcpRuntime>,
    allowed: AllowedActions,
) -> Result<adk_computer_use::agent::AgentReport<ComputerUseMcpRuntime>, Error> {
    use adk_computer_use::agent::openai::{OpenAiConfig, OpenAiPlanner};
    let planner = OpenAiPlanner::new(OpenAiConfig::from_env()?)?;
    Ok(AgentLoop::new(session, planner, allowed)
        .budget(5)
        .run(REQUEST)
        .await
        .into_result()?)
}

#[cfg(not(feature = "openai"))]
async fn run_model(
    _session: &Session<ComputerUseMcpRuntime>,
    _allowed: AllowedActions,
) -> Result<adk_computer_use::agent::AgentReport<ComputerUseMcpRuntime>, Error> {
    Err("--model needs the openai feature: cargo run --features openai --example agent_loop -- --model".into())
}

/// The recorded plans on a real X11 display.
#[cfg(feature = "x11")]
mod x11 {
    use std::process::{Child, Command, Stdio};
    use std::sync::Arc;
    use std::time::Duration;

    use adk_computer_use::agent::{AgentLoop, AgentStop, ScriptedPlanner};
    use adk_computer_use::{
        ComputerUseMcpRuntime, McpRuntimeConfig, ScopeAuthorizer, Session, VerifiedIdentity,
        mcp::McpApprover,
    };
    use computer_use_server::Config;
    use computer_use_server::desktop::x11::X11Desktop;

    use super::Error;

    const PRINCIPAL: &str = "principal-x11";
    const CLICK: &str = include_str!("transcripts/x11_xmessage.json");
    const TYPE: &str = include_str!("transcripts/x11_xterm.json");
    const FORM: &str = include_str!("transcripts/x11_zenity_form.json");
    /// What zenity prints once the form plan pressed OK.
    const FORM_LINE: &str = "Ada Lovelace|ada@example.org";
    /// The line the xterm plan types (its transcript's text, newline aside).
    const LINE: &str = "typed through the governed chain";

    /// Ends a child process however the example ends.
    struct Reaped(Child);

    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// Waits until the display shows windows of every app in `apps` and
    /// the screen has settled.
    async fn shown(
        runtime: &ComputerUseMcpRuntime,
        session: &str,
        apps: &[&str],
    ) -> Result<(), Error> {
        super::x11_support::windows_when(runtime, session, |windows| {
            apps.iter()
                .all(|app| windows.iter().any(|w| w["bundleId"] == *app))
        })
        .await?;
        Ok(())
    }

    /// One recorded plan, governed, in a session bound to `app`. When a
    /// step waits for a person, the host approves that exact action and
    /// the plan goes on from the next step.
    async fn drive(
        runtime: &Arc<ComputerUseMcpRuntime>,
        approver: &McpApprover,
        app: &str,
        tools: &[&str],
        transcript: &str,
    ) -> Result<(), Error> {
        let identity = VerifiedIdentity::new(PRINCIPAL, "tenant-x11")?;
        let authorizer =
            ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:foreground"])?;
        let session = Session::builder(Arc::clone(runtime), authorizer)
            .agent_id("agent-loop-x11")
            .target(app, None)
            .build()?;
        let allowed = adk_computer_use::agent::allowed_actions(runtime, tools).await?;
        let mut remaining: Vec<serde_json::Value> = serde_json::from_str(transcript)?;
        let mut step = 0;
        let result = loop {
            let planner =
                ScriptedPlanner::from_transcript(&serde_json::Value::Array(remaining.clone()))?;
            let report = AgentLoop::new(&session, planner, allowed.clone())
                .budget(remaining.len())
                .run("Answer the dialog, fill the form, then write the line.")
                .await
                .into_result()?;
            for record in &report.history {
                step += 1;
                println!(
                    "{app}: step {step}: {} -> {}",
                    record.tool.as_deref().unwrap_or("-"),
                    record.outcome
                );
            }
            match report.stop {
                AgentStop::Done { summary } => {
                    println!("{app}: done: {summary}");
                    break Ok(());
                }
                // An externally visible edit (typing, a form's fields):
                // the policy asks a person. This example plays the host
                // and approves the exact action, in the open, through the
                // host's approver.
                AgentStop::NeedsApproval(pending) => {
                    // The step that waits is the history's last one.
                    let tool = pending.preview().envelope.tool.clone();
                    println!(
                        "{app}: step {step}: {tool} needs approval ({}); the host approves it now",
                        pending.preview().policy.reasons.join("; ")
                    );
                    let done = super::host::approve_and_complete(approver, pending).await?;
                    println!("{app}: step {step}: {tool} -> {}", done.outcome());
                    remaining.drain(..report.history.len().min(remaining.len()));
                    if remaining.is_empty() {
                        break Ok(());
                    }
                }
                other => break Err(format!("{app}: the plan stopped early: {other:?}").into()),
            }
        };
        let stats = session.shutdown().await;
        println!("{app}: released, {} leaked", stats.leaked());
        result
    }

    /// [`drive`], observing again when the window changed between the
    /// preview and the execute. A real window may still be settling (a
    /// terminal drawing its first prompt, a toolkit finishing an animation);
    /// a stale target is refused before anything is sent, so a fresh
    /// observation and a fresh chain are safe. Three tries at most; any
    /// other error ends the run.
    async fn drive_settled(
        runtime: &Arc<ComputerUseMcpRuntime>,
        approver: &McpApprover,
        session: &str,
        app: &str,
        tools: &[&str],
        transcript: &str,
    ) -> Result<(), Error> {
        let mut tries = 0;
        loop {
            tries += 1;
            match drive(runtime, approver, app, tools, transcript).await {
                Err(err)
                    if tries < 3
                        && err
                            .downcast_ref::<adk_computer_use::ComputerUseError>()
                            .and_then(|e| e.refusal_code())
                            == Some("stale_target") =>
                {
                    println!(
                        "{app}: the window changed before the action was sent ({err}); observing again"
                    );
                    shown(runtime, session, &[app]).await?;
                }
                other => return other,
            }
        }
    }

    pub(super) async fn run() -> Result<(), Error> {
        let dir = tempfile_dir()?;
        let file = dir.join("typed.txt");
        let mut dialog = Reaped(
            Command::new("xmessage")
                .args([
                    "-print",
                    "-geometry",
                    "+100+100",
                    "-buttons",
                    "Approve:3,Decline:4",
                ])
                .arg("Ship the release?")
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| {
                    format!("xmessage could not be started (apt-get install x11-utils): {e}")
                })?,
        );
        let _terminal = Reaped(
            Command::new("xterm")
                .args(["-geometry", "80x12+600+100", "-e", "sh", "-c"])
                .arg(format!("cat > '{}'", file.display()))
                .spawn()
                .map_err(|e| format!("xterm could not be started (apt-get install xterm): {e}"))?,
        );
        // The host keeps the approver; the agent's sessions get the runtime.
        let (runtime, approver) = adk_computer_use_testkit::spawn_on(
            Config::for_principal(PRINCIPAL),
            Box::new(X11Desktop::connect()?),
            McpRuntimeConfig::new(PRINCIPAL),
        )
        .await?;
        let runtime = Arc::new(runtime);
        let started = runtime
            .start_session(Some("drive real windows"), None)
            .await?;
        shown(&runtime, &started.session_id, &["Xmessage", "XTerm"]).await?;

        drive_settled(
            &runtime,
            &approver,
            &started.session_id,
            "Xmessage",
            &["left_click"],
            CLICK,
        )
        .await?;
        let status = wait_exit(&mut dialog.0)?;
        let mut printed = String::new();
        if let Some(out) = dialog.0.stdout.as_mut() {
            use std::io::Read;
            out.read_to_string(&mut printed)?;
        }
        println!(
            "xmessage printed {:?} and exited with {status:?}",
            printed.trim()
        );
        if printed.trim() != "Approve" || status != Some(3) {
            return Err("xmessage did not report the Approve button".into());
        }

        form(&runtime, &approver, &started.session_id, "Zenity", false).await?;

        // The dialog's window went away: the screen settles again first.
        shown(&runtime, &started.session_id, &["XTerm"]).await?;
        drive_settled(
            &runtime,
            &approver,
            &started.session_id,
            "XTerm",
            &["type"],
            TYPE,
        )
        .await?;
        let mut content = String::new();
        for _ in 0..50 {
            content = std::fs::read_to_string(&file).unwrap_or_default();
            if content.ends_with('\n') {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        println!("the file cat wrote holds {content:?}");
        if content != format!("{LINE}\n") {
            return Err("the line typed into xterm did not reach the file".into());
        }
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    /// A form, by element: the plan names fields by role and label and
    /// the server writes them through the application (no key typed, no
    /// focus taken); zenity's own output is the check. `app` is the id the
    /// desktop gives zenity's window; on Wayland zenity shows a native
    /// window.
    async fn form(
        runtime: &Arc<ComputerUseMcpRuntime>,
        approver: &McpApprover,
        session: &str,
        app: &str,
        wayland: bool,
    ) -> Result<(), Error> {
        let mut command = Command::new("zenity");
        if wayland {
            command.env("GDK_BACKEND", "wayland").env_remove("DISPLAY");
        }
        let mut form = Reaped(
            command
                .args([
                    "--forms",
                    "--title",
                    "Sign up",
                    "--add-entry=Name",
                    "--add-entry=Email",
                ])
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| {
                    format!("zenity could not be started (apt-get install zenity): {e}")
                })?,
        );
        shown(runtime, session, &[app]).await?;
        accessible(runtime, session, app).await?;
        drive_settled(
            runtime,
            approver,
            session,
            app,
            &["fill_form", "press_button"],
            FORM,
        )
        .await?;
        let status = wait_exit(&mut form.0)?;
        let mut printed = String::new();
        if let Some(out) = form.0.stdout.as_mut() {
            use std::io::Read;
            out.read_to_string(&mut printed)?;
        }
        println!(
            "zenity printed {:?} and exited with {status:?}",
            printed.trim_end()
        );
        if printed.trim_end() != FORM_LINE || status != Some(0) {
            return Err("zenity did not print the form's values".into());
        }
        Ok(())
    }

    /// The form's plan on a Wayland compositor.
    #[cfg(feature = "wayland")]
    pub(super) async fn run_wayland() -> Result<(), Error> {
        let desktop = computer_use_server::desktop::wayland::WaylandDesktop::connect()?;
        println!("the compositor offers: {}", desktop.protocols());
        let (runtime, approver) = adk_computer_use_testkit::spawn_on(
            Config::for_principal(PRINCIPAL),
            Box::new(desktop),
            McpRuntimeConfig::new(PRINCIPAL),
        )
        .await?;
        let runtime = Arc::new(runtime);
        let started = runtime
            .start_session(Some("drive a native Wayland window"), None)
            .await?;
        form(&runtime, &approver, &started.session_id, "zenity", true).await
    }

    #[cfg(not(feature = "wayland"))]
    pub(super) async fn run_wayland() -> Result<(), Error> {
        Err("--wayland needs the wayland feature: cargo run --features x11,wayland --example agent_loop -- --wayland".into())
    }

    /// Waits until `app`'s window answers on the accessibility bus (a GTK
    /// application joins it a moment after its window shows).
    async fn accessible(
        runtime: &ComputerUseMcpRuntime,
        session: &str,
        app: &str,
    ) -> Result<(), Error> {
        use adk_computer_use::runtime::{ComputerUseRuntime, ObservationScope};
        let scope = |window: Option<u64>| ObservationScope {
            session_id: session.to_owned(),
            tool: None,
            app_id: window.map(|_| app.to_owned()),
            window_id: window.map(adk_computer_use::contracts::WindowId::Number),
        };
        for _ in 0..300 {
            let listed = runtime.observe_semantic(&scope(None)).await?;
            let window = listed.structured["windows"]
                .as_array()
                .and_then(|ws| ws.iter().find(|w| w["bundleId"] == app))
                .and_then(|w| w["windowId"].as_u64());
            if let Some(window) = window
                && runtime
                    .observe_semantic(&scope(Some(window)))
                    .await?
                    .structured["accessibility"]
                    == "atspi"
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(format!("{app}'s window did not answer on the accessibility bus within 30 s (is there a D-Bus session with the accessibility bus?)").into())
    }

    fn wait_exit(child: &mut Child) -> Result<Option<i32>, Error> {
        for _ in 0..50 {
            if let Some(status) = child.try_wait()? {
                return Ok(status.code());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err("the dialog is still open 5 s after the plan answered it".into())
    }

    fn tempfile_dir() -> Result<std::path::PathBuf, Error> {
        let dir = std::env::temp_dir().join(format!("adk-agent-loop-x11-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }
}

#[cfg(not(feature = "x11"))]
mod x11 {
    pub(super) async fn run() -> Result<(), super::Error> {
        Err(
            "--x11 needs the x11 feature: cargo run --features x11 --example agent_loop -- --x11"
                .into(),
        )
    }

    pub(super) async fn run_wayland() -> Result<(), super::Error> {
        Err("--wayland needs the x11 and wayland features: cargo run --features x11,wayland --example agent_loop -- --wayland".into())
    }
}
