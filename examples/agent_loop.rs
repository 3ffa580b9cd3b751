//! A model plans, the chain governs: a three-step task run by the agent
//! loop, with a recorded transcript as the planner.
//!
//! ```text
//! cargo run --features sim --example agent_loop
//! cargo run --features sim --example agent_loop -- --server <command> [args...]
//! cargo run --features sim,openai --example agent_loop -- --model [--server ...]
//! ```
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
use adk_computer_use::sim::{self, CLIPBOARD_APP, SimConfig};
use adk_computer_use::{
    ComputerUseMcpRuntime, McpRuntimeConfig, ScopeAuthorizer, Session, VerifiedIdentity,
};

type Error = Box<dyn std::error::Error>;

const TRANSCRIPT: &str = include_str!("transcripts/three_steps.json");
const REQUEST: &str = "Put the draft on my clipboard, then the reviewed text, then the final text.";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
        None => sim::spawn(SimConfig::for_principal(&principal), config).await?,
    };
    runtime.start_session(Some(REQUEST), None).await?;

    // What the model may propose: the capabilities the server reports for
    // the tools this host offers it.
    let allowed = runtime.allowed_actions(&["write_clipboard"]).await?;
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
    Err("--model needs the openai feature: cargo run --features sim,openai --example agent_loop -- --model".into())
}
