//! Two agents of one execution group want the same window at the same time.
//! The reservation and the one-writer lease decide; the loser gets a clear
//! refusal (or waits its turn in the server's lease queue), and the server's
//! own record shows nothing ran twice.
//!
//! ```text
//! cargo run --example multi_agent
//! cargo run --example multi_agent -- --server <command> [args...]
//! ```
//!
//! With `--server`, the principal is read from `COMPUTER_USE_PRINCIPAL_ID`
//! and the target evidence from `COMPUTER_USE_TARGET_EVIDENCE` (camelCase
//! JSON), as in `live_clipboard`.

use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{ChainOutcome, Session};
use adk_computer_use::clock::format_rfc3339;
use adk_computer_use::contracts::*;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use::runtime::ProposedAction;
use computer_use_server::{CLIPBOARD_APP, CLIPBOARD_WINDOW, Config};
use serde_json::{Map, json};

type Error = Box<dyn std::error::Error>;
const PRINCIPAL: &str = "principal-team";

fn agent(
    runtime: &Arc<ComputerUseMcpRuntime>,
    principal: &str,
    name: &str,
) -> Result<Session<ComputerUseMcpRuntime>, Error> {
    let identity = VerifiedIdentity::new(principal, "tenant-team")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
    Ok(Session::builder(Arc::clone(runtime), authorizer)
        .agent_id(name)
        .build()?)
}

/// The shared target: another server's desktop gives its own evidence in
/// `COMPUTER_USE_TARGET_EVIDENCE`; the simulator's clipboard otherwise.
fn target() -> Result<TargetEvidence, Error> {
    if let Ok(json) = std::env::var("COMPUTER_USE_TARGET_EVIDENCE") {
        let mut target: TargetEvidence = serde_json::from_str(&json)?;
        target.captured_at = format_rfc3339(time::OffsetDateTime::now_utc())?;
        return Ok(target);
    }
    Ok(TargetEvidence {
        platform: std::env::consts::OS.into(),
        app_id: CLIPBOARD_APP.into(),
        pid: None,
        window_id: Some(WindowId::Number(CLIPBOARD_WINDOW)),
        window_title_digest: None,
        display_id: None,
        role: None,
        label_digest: None,
        bounds: None,
        observation_id: "shared-observation".into(),
        screenshot_hash: None,
        ui_tree_revision: None,
        confidence: 1.0,
        captured_at: format_rfc3339(time::OffsetDateTime::now_utc())?,
    })
}

fn write(action_id: &str, text: &str) -> Result<ProposedAction, Error> {
    let target = target()?;
    Ok(ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_action_id(action_id)
    .with_target(target))
}

fn report(
    name: &str,
    outcome: Result<ChainOutcome<ComputerUseMcpRuntime>, adk_computer_use::ComputerUseError>,
) {
    match outcome {
        Ok(ChainOutcome::Completed(done)) => println!(
            "{name}: ran, receipt {} ({})",
            done.receipt_id(),
            done.outcome().status()
        ),
        Ok(ChainOutcome::NeedsApproval(_)) => println!("{name}: waits for approval"),
        Ok(ChainOutcome::Blocked(blocked)) => println!("{name}: blocked ({})", blocked.blocker()),
        Err(err) => println!("{name}: refused: {err}"),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    // Slow calls make the two chains overlap for certain.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let server = match args.iter().position(|a| a == "--server") {
        Some(at) if at + 1 < args.len() => Some(args[at + 1..].to_vec()),
        Some(_) => return Err("--server needs a command".into()),
        None => None,
    };
    let principal = match &server {
        Some(_) => {
            std::env::var("COMPUTER_USE_PRINCIPAL_ID").unwrap_or_else(|_| "local-user".into())
        }
        None => PRINCIPAL.to_owned(),
    };
    let config = McpRuntimeConfig::new(&principal);
    // Another server as a child process, or the bundled simulator (each
    // call slowed by 20 ms, so the two agents overlap) inside this process.
    let runtime = Arc::new(match &server {
        Some(parts) => {
            let mut command = tokio::process::Command::new(&parts[0]);
            command.args(&parts[1..]);
            ComputerUseMcpRuntime::spawn(command, config).await?
        }
        None => {
            let mut sim_config = Config::for_principal(PRINCIPAL).with_stats();
            sim_config.slow_ms = 20;
            adk_computer_use_testkit::spawn(sim_config, config).await?.0
        }
    });
    runtime
        .start_session(Some("two agents, one window"), Some("team"))
        .await?;
    let alice = agent(&runtime, &principal, "alice")?;
    let bob = agent(&runtime, &principal, "bob")?;

    let (a, b) = tokio::join!(
        alice.run(write("alice-1", "from alice")?),
        bob.run(write("bob-1", "from bob")?)
    );
    report("alice", a);
    report("bob", b);

    if server.is_none() {
        let stats = runtime.call("sim_stats", Map::new()).await?.0;
        println!(
            "simulator: {} effect(s) in all, at most {} per action, {} active reservation(s), clipboard {:?}",
            stats["totalEffects"],
            stats["maxEffectsPerAction"],
            stats["activeReservations"],
            stats["clipboard"]
        );
    } else {
        // The server's own record: what it committed, per action.
        let events = runtime.all_session_events().await?;
        for id in ["alice-1", "bob-1"] {
            let committed = events
                .iter()
                .filter(|e| {
                    e.event_type == "action.committed" && e.action_id.as_deref() == Some(id)
                })
                .count();
            println!("server: {id} committed {committed} time(s)");
        }
    }
    let _ = alice.shutdown().await;
    let _ = bob.shutdown().await;
    runtime.shutdown().await?;
    Ok(())
}
