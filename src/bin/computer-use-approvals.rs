//! `computer-use-approvals`: what waits for a person, and their decision.
//!
//! ```text
//! computer-use-approvals list --store DIR
//! computer-use-approvals show ID --store DIR
//! computer-use-approvals approve ID --store DIR (--grant GRANT_ID | --runtime-held)
//! computer-use-approvals deny ID --store DIR --reason TEXT
//! ```
//!
//! The store is a checkpoint directory (`FileCheckpointStore`); its sealing
//! key is read from `ADK_CHECKPOINT_KEY` (at least 32 bytes), as the agent
//! that suspended the action read it. Every checkpoint's seal is verified
//! before anything is shown or decided. The digests printed are the ones the
//! agent printed when it suspended the action: compare them before
//! approving. A decision is recorded once, beside the checkpoint; the
//! waiting agent resumes (or ends, on a denial) from it.

use std::process::ExitCode;

use adk_computer_use::ComputerUseError;
use adk_computer_use::protocol::{
    Approval, CheckpointId, CheckpointStore, CheckpointView, Decision, FileCheckpointStore,
    SealingKey, decide, inspect, pending,
};

const USAGE: &str = "usage: computer-use-approvals list --store DIR
       computer-use-approvals show ID --store DIR
       computer-use-approvals approve ID --store DIR (--grant GRANT_ID | --runtime-held)
       computer-use-approvals deny ID --store DIR --reason TEXT
The sealing key is read from ADK_CHECKPOINT_KEY (at least 32 bytes).";

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|at| args.get(at + 1))
        .cloned()
}

fn store(args: &[String]) -> Result<Box<dyn CheckpointStore>, String> {
    let place = flag(args, "--store").ok_or("--store DIR (or a postgres:// URL) is required")?;
    let key = std::env::var("ADK_CHECKPOINT_KEY")
        .map_err(|_| "set ADK_CHECKPOINT_KEY to the store's sealing key".to_owned())?;
    let key = SealingKey::new(key.into_bytes()).map_err(|e| e.to_string())?;
    if place.starts_with("postgres://") || place.starts_with("postgresql://") {
        return postgres_store(&place, key);
    }
    Ok(Box::new(
        FileCheckpointStore::new(place, key).map_err(|e| e.to_string())?,
    ))
}

#[cfg(feature = "postgres")]
fn postgres_store(url: &str, key: SealingKey) -> Result<Box<dyn CheckpointStore>, String> {
    Ok(Box::new(
        adk_computer_use::pg::PostgresCheckpointStore::connect(url, key)
            .map_err(|e| e.to_string())?,
    ))
}

#[cfg(not(feature = "postgres"))]
fn postgres_store(_url: &str, _key: SealingKey) -> Result<Box<dyn CheckpointStore>, String> {
    Err("a postgres:// store needs the postgres feature".into())
}

fn id(args: &[String]) -> Result<CheckpointId, String> {
    args.get(1)
        .ok_or("a checkpoint id is required")?
        .parse()
        .map_err(|e: ComputerUseError| e.to_string())
}

fn line(view: &CheckpointView) -> String {
    format!(
        "{}  {}  {} ({}) on {}  labels [{}]  expires {}  {}",
        view.id,
        view.action_id,
        view.tool,
        view.mode.as_str(),
        view.target_app_id.as_deref().unwrap_or("(no target)"),
        view.data_labels
            .iter()
            .map(|l| serde_json::to_value(l)
                .map(|v| v.as_str().unwrap_or("").to_owned())
                .unwrap_or_default())
            .collect::<Vec<_>>()
            .join(", "),
        view.expires_at,
        match &view.decision {
            None => "waiting".to_owned(),
            Some(Decision::Approve(_)) => "approved".to_owned(),
            Some(Decision::Deny { .. }) => "denied".to_owned(),
        }
    )
}

fn show(view: &CheckpointView) {
    println!("checkpoint     {}", view.id);
    println!("session        {}", view.session_id);
    println!(
        "principal      {} (tenant {})",
        view.principal_id, view.tenant_id
    );
    println!("agent          {}", view.agent_id.as_deref().unwrap_or("-"));
    println!("action         {}", view.action_id);
    println!(
        "tool           {} (operation {}, mode {})",
        view.tool,
        view.operation,
        view.mode.as_str()
    );
    println!(
        "target         {} {}",
        view.target_app_id.as_deref().unwrap_or("(none)"),
        view.target_window_id
            .as_ref()
            .map_or_else(String::new, |w| format!("window {w}"))
    );
    println!(
        "policy         {:?}: {}",
        view.policy_decision,
        view.reasons.join("; ")
    );
    println!("action digest  {}", view.action_digest);
    println!("policy digest  {}", view.policy_digest);
    println!("expires        {}", view.expires_at);
    match &view.decision {
        None => println!("decision       waiting"),
        Some(Decision::Approve(approval)) => {
            println!("decision       approved ({:?})", approval.source())
        }
        Some(Decision::Deny { reason }) => println!("decision       denied: {reason}"),
    }
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("list") => {
            let store = store(args)?;
            let views = pending(store.as_ref()).map_err(|e| e.to_string())?;
            if views.is_empty() {
                println!("nothing waits");
            }
            for view in &views {
                println!("{}", line(view));
            }
            Ok(())
        }
        Some("show") => {
            let view = inspect(store(args)?.as_ref(), &id(args)?).map_err(|e| e.to_string())?;
            show(&view);
            Ok(())
        }
        Some("approve") => {
            let store = store(args)?;
            let id = id(args)?;
            let view = inspect(store.as_ref(), &id).map_err(|e| e.to_string())?;
            let approval = match (
                flag(args, "--grant"),
                args.iter().any(|a| a == "--runtime-held"),
            ) {
                (Some(grant), false) => Approval::with_grant(
                    &view.action_id,
                    &view.action_digest,
                    &view.policy_digest,
                    grant,
                ),
                (None, true) => Approval::runtime_held(
                    &view.action_id,
                    &view.action_digest,
                    &view.policy_digest,
                ),
                _ => {
                    return Err(
                        "approve needs exactly one of --grant GRANT_ID or --runtime-held".into(),
                    );
                }
            };
            decide(store.as_ref(), &id, &Decision::Approve(approval)).map_err(|e| e.to_string())?;
            println!(
                "approved {} (action {}, digest {})",
                id, view.action_id, view.action_digest
            );
            Ok(())
        }
        Some("deny") => {
            let store = store(args)?;
            let id = id(args)?;
            let reason = flag(args, "--reason")
                .filter(|r| !r.trim().is_empty())
                .ok_or("deny needs --reason TEXT")?;
            let view = inspect(store.as_ref(), &id).map_err(|e| e.to_string())?;
            decide(
                store.as_ref(),
                &id,
                &Decision::Deny {
                    reason: reason.clone(),
                },
            )
            .map_err(|e| e.to_string())?;
            println!("denied {} (action {}): {reason}", id, view.action_id);
            Ok(())
        }
        Some("--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n{USAGE}")),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("computer-use-approvals: {message}");
            ExitCode::from(2)
        }
    }
}
