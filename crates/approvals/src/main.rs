//! `computer-use-approvals`: what waits for a person, and their decision.
//!
//! ```text
//! computer-use-approvals list --store DIR
//! computer-use-approvals show ID --store DIR
//! computer-use-approvals approve ID --store DIR (--server HOST:PORT | --runtime-held)
//! computer-use-approvals deny ID --store DIR --reason TEXT
//! computer-use-approvals public
//! computer-use-approvals serve --store DIR [--listen ADDR] [--server HOST:PORT]
//! ```
//!
//! The store is a checkpoint directory (`FileCheckpointStore`) or a
//! `postgres://` URL; its sealing key is read from `ADK_CHECKPOINT_KEY` (at
//! least 32 bytes), as the agent that suspended the action read it.
//! Decisions are signed with the approver's key, `ADK_APPROVER_KEY` (64 hex
//! digits, e.g. from `openssl rand -hex 32`), which the agents never hold:
//! they get its public half, which `public` prints. Every checkpoint's seal is verified
//! before anything is shown or decided. The digests printed are the ones the
//! agent printed when it suspended the action: compare them before
//! approving. A decision is recorded once, beside the checkpoint; the
//! waiting agent resumes (or ends, on a denial) from it.
//!
//! Against a server that issues grants and tells its callers apart
//! (`computer-use-server --listen`), `approve --server HOST:PORT` obtains the
//! grant itself, on a connection of its own with the approver's credential
//! (`ADK_APPROVER_CREDENTIAL`, never on the command line), and records the
//! decision carrying it: the agent's credential cannot obtain one.

mod hidden;
#[cfg(feature = "page")]
mod page;
mod words;

use std::process::ExitCode;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::{
    Approval, ApproverKey, CheckpointId, CheckpointStore, CheckpointView, Decision,
    FileCheckpointStore, SealingKey, decide, inspect, pending,
};

const USAGE: &str = "usage: computer-use-approvals list --store DIR|URL
       computer-use-approvals show ID --store DIR|URL [--reveal]
       computer-use-approvals approve ID --store DIR|URL (--server HOST:PORT | --runtime-held)
       computer-use-approvals deny ID --store DIR|URL --reason TEXT
       computer-use-approvals public
       computer-use-approvals resume SESSION --principal ID --server HOST:PORT
       computer-use-approvals serve --store DIR|URL [--listen 127.0.0.1:PORT] [--allow-remote ORIGIN] [--server HOST:PORT]
serve runs the approval page (feature `page`): it prints its link, whose path
is a fresh credential, listens on loopback unless --allow-remote names the
origin people open it at, and signs
decisions with ADK_APPROVER_KEY, which only it holds.
The store's sealing key is read from ADK_CHECKPOINT_KEY (at least 32 bytes);
decisions are signed with ADK_APPROVER_KEY (64 hex digits), whose public half
(printed by `public`) the agents check them with. With --server, the grant is
obtained from that server (computer-use-server --listen) with the approver's
credential, read from ADK_APPROVER_CREDENTIAL. Target evidence half as old as
the server accepts (ADK_MAX_TARGET_AGE_MS, 30000 unless set) is taken again
first: the grant is then for the same action on fresh evidence of the same
target, and refused when the target changed beyond its pixels.
resume hands the machine back to a session the person took over (the server
paused it, user_takeover, on input it did not send), with the approver's
credential: the agent's is refused.";

fn approver() -> Result<ApproverKey, String> {
    let key = std::env::var("ADK_APPROVER_KEY")
        .map_err(|_| "set ADK_APPROVER_KEY to the approver's key (64 hex digits)".to_owned())?;
    ApproverKey::from_hex(&key).map_err(|e| e.to_string())
}

#[cfg(feature = "page")]
/// [`safe`], line breaks kept (for text whose lines are its own layout,
/// such as pretty JSON, where a break inside a value is escaped already).
fn safe_keeping_lines(text: &str) -> String {
    text.split('\n').map(safe).collect::<Vec<_>>().join("\n")
}

/// Text from a checkpoint, made safe to show: every character that draws
/// nothing or changes how the text around it is drawn is shown escaped.
use hidden::escape as safe;

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

/// Whether the checkpoint's envelope has expired, by this machine's clock.
fn expired(view: &CheckpointView) -> bool {
    adk_computer_use::clock::parse_rfc3339("ActionEnvelope", "expiresAt", &view.expires_at)
        .is_ok_and(|at| at <= time::OffsetDateTime::now_utc())
}

fn line(view: &CheckpointView) -> String {
    let labels: Vec<&str> = view.data_labels.iter().map(|l| l.as_str()).collect();
    safe(&format!(
        "{}  {}  {} ({}) on {}  labels [{}]  expires {}  {}",
        view.id,
        view.action_id,
        view.tool,
        view.mode.as_str(),
        view.target_app_id
            .as_deref()
            .map_or_else(|| "(no target)".to_owned(), |app| format!("{app:?}")),
        labels.join(", "),
        view.expires_at,
        if view.decided { "decided" } else { "waiting" }
    ))
}

fn show(view: &CheckpointView, args: &[String]) {
    let window = view
        .target_window_id
        .as_ref()
        .map_or_else(String::new, |w| format!("window {w}"));
    let rows = [
        ("checkpoint", view.id.to_string()),
        ("session", view.session_id.clone()),
        (
            "principal",
            format!("{} (tenant {})", view.principal_id, view.tenant_id),
        ),
        ("agent", view.agent_id.clone().unwrap_or_else(|| "-".into())),
        ("action", view.action_id.clone()),
        ("why it asks", words::cause(view)),
        ("what it does", words::effect(view)),
        (
            "tool",
            format!(
                "{} (operation {}, mode {})",
                view.tool,
                view.operation,
                view.mode.as_str()
            ),
        ),
        (
            "target",
            format!(
                "{} {window}",
                view.target_app_id
                    .as_deref()
                    .map_or_else(|| "(none)".to_owned(), |app| format!("{app:?}"))
            ),
        ),
        (
            "policy",
            format!("{:?}: {}", view.policy_decision, view.reasons.join("; ")),
        ),
        (
            "arguments",
            if view.handles_secrets() && args.iter().any(|a| a == "--reveal") {
                // A password field's value is never shown, not even here.
                view.secret_fields_masked()
                    .map_or_else(|| "(not kept)".to_owned(), |a| a.to_string())
            } else if view.handles_secrets() {
                format!(
                    "{} (masked: the action is labelled as handling secrets, a label the agent chose; `show ID --reveal` shows them)",
                    view.shown_arguments()
                        .map_or_else(|| "(not kept)".to_owned(), |a| a.to_string())
                )
            } else {
                view.shown_arguments()
                    .map_or_else(|| "(not kept)".to_owned(), |a| a.to_string())
            },
        ),
        (
            "screenshot",
            words::off_screen(view)
                .map(str::to_owned)
                .or_else(|| {
                    view.frame.as_ref().map(|f| {
                        format!(
                            "{} ({} base64 bytes; `serve` shows it)",
                            f.mime_type,
                            f.data.len()
                        )
                    })
                })
                .unwrap_or_else(|| "(none)".to_owned()),
        ),
        ("action digest", view.action_digest.clone()),
        ("policy digest", view.policy_digest.clone()),
        ("expires", view.expires_at.clone()),
        (
            "decision",
            if view.decided {
                "recorded".into()
            } else {
                "waiting".into()
            },
        ),
    ];
    for (name, value) in rows {
        println!("{name:<15}{}", safe(&value));
    }
}

/// The approval of `view`'s action, backed by a grant the server at
/// `server` issues to the approver's credential.
fn granted(
    server: &str,
    view: &CheckpointView,
    store: std::sync::Arc<dyn CheckpointStore>,
) -> Result<Approval, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    runtime.block_on(grant(server, view, store))
}

/// [`granted`], from async code: an approver on a connection of its own,
/// which previews the action again first when its envelope expired.
async fn grant(
    server: &str,
    view: &CheckpointView,
    store: std::sync::Arc<dyn CheckpointStore>,
) -> Result<Approval, String> {
    use adk_computer_use::mcp::{McpApprover, McpRuntimeConfig};
    let credential = std::env::var("ADK_APPROVER_CREDENTIAL").map_err(|_| {
        "set ADK_APPROVER_CREDENTIAL to the approver's credential (computer-use-server --listen prints it)"
            .to_owned()
    })?;
    let config = McpRuntimeConfig::new(&view.principal_id).with_credential(credential);
    let config = match &view.execution_group_id {
        Some(group) => config.session_in_group(&view.session_id, group),
        None => config.session(&view.session_id),
    };
    let stream = tokio::net::TcpStream::connect(server)
        .await
        .map_err(|e| format!("cannot reach {server}: {e}"))?;
    let approver = McpApprover::connect(stream, config)
        .await
        .map_err(|e| e.to_string())?
        .with_target_evidence_max_age(max_target_age()?);
    approver
        .approve_checkpoint(store, &view.id)
        .await
        .map_err(|e| e.to_string())
}

/// How old the server accepts target evidence: `ADK_MAX_TARGET_AGE_MS`
/// when set (as the server was started with `--max-target-age-ms`), else
/// upstream's 30 s. Evidence half that old is taken again before a grant.
fn max_target_age() -> Result<std::time::Duration, String> {
    match std::env::var("ADK_MAX_TARGET_AGE_MS") {
        Err(_) => Ok(adk_computer_use::chain::DEFAULT_TARGET_EVIDENCE_MAX_AGE),
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|ms| *ms > 0)
            .map(std::time::Duration::from_millis)
            .ok_or_else(|| {
                format!("ADK_MAX_TARGET_AGE_MS: expected a positive number of milliseconds, got {text:?}")
            }),
    }
}

/// `resume SESSION --principal ID --server HOST:PORT`: the person hands
/// the machine back to a session they took over.
async fn resume_taken_over(session: &str, principal: &str, server: &str) -> Result<(), String> {
    use adk_computer_use::mcp::{McpApprover, McpRuntimeConfig};
    let credential = std::env::var("ADK_APPROVER_CREDENTIAL").map_err(|_| {
        "set ADK_APPROVER_CREDENTIAL to the approver's credential (computer-use-server --listen prints it)"
            .to_owned()
    })?;
    let config = McpRuntimeConfig::new(principal)
        .with_credential(credential)
        .session(session);
    let stream = tokio::net::TcpStream::connect(server)
        .await
        .map_err(|e| format!("cannot reach {server}: {e}"))?;
    let approver = McpApprover::connect(stream, config)
        .await
        .map_err(|e| e.to_string())?;
    let resumed = approver
        .resume_session(session)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "session {} is {}",
        safe(&resumed.session_id),
        safe(&resumed.state)
    );
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("resume") => {
            let session = args
                .get(1)
                .filter(|s| !s.starts_with("--"))
                .ok_or("resume needs the session id")?;
            let principal = flag(args, "--principal").ok_or("resume needs --principal ID")?;
            let server = flag(args, "--server").ok_or("resume needs --server HOST:PORT")?;
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?
                .block_on(resume_taken_over(session, &principal, &server))
        }
        Some("list") => {
            let store = store(args)?;
            let views = pending(store.as_ref()).map_err(|e| e.to_string())?;
            if views.is_empty() {
                println!("nothing waits");
            }
            for (id, view) in &views {
                match view {
                    Ok(view) => println!("{}", line(view)),
                    Err(err) => println!("{id}  UNREADABLE: {}", safe(&err.to_string())),
                }
            }
            Ok(())
        }
        Some("show") => {
            let view = inspect(store(args)?.as_ref(), &id(args)?).map_err(|e| e.to_string())?;
            show(&view, args);
            Ok(())
        }
        Some("approve") => {
            let store: std::sync::Arc<dyn CheckpointStore> = std::sync::Arc::from(store(args)?);
            let id = id(args)?;
            let view = inspect(store.as_ref(), &id).map_err(|e| e.to_string())?;
            if args.iter().any(|a| a == "--grant") {
                return Err("--grant is gone: a grant id alone cannot show which action it was issued for. Use --server HOST:PORT (the grant is obtained and checked against this checkpoint), or record a grant your host obtained with protocol::decide and Approval::from_grant".into());
            }
            let approval = match (
                args.iter().any(|a| a == "--runtime-held"),
                flag(args, "--server"),
            ) {
                (false, Some(server)) => granted(&server, &view, std::sync::Arc::clone(&store))?,
                (true, None) => Approval::runtime_held(
                    &view.action_id,
                    &view.action_digest,
                    &view.policy_digest,
                ),
                _ => {
                    return Err(
                        "approve needs exactly one of --server HOST:PORT or --runtime-held".into(),
                    );
                }
            };
            decide(
                store.as_ref(),
                &id,
                &Decision::Approve(approval),
                &approver()?,
            )
            .map_err(|e| e.to_string())?;
            if expired(&view) {
                eprintln!(
                    "note: {} expired at {}; the agent's resume_decided previews the same action again and runs it only if both digests are unchanged",
                    id,
                    safe(&view.expires_at)
                );
            }
            println!(
                "approved {} (action {}, digest {})",
                id,
                safe(&view.action_id),
                safe(&view.action_digest)
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
                &approver()?,
            )
            .map_err(|e| e.to_string())?;
            println!(
                "denied {} (action {}): {}",
                id,
                safe(&view.action_id),
                safe(&reason)
            );
            Ok(())
        }
        Some("serve") => serve(args),
        Some("public") => {
            println!("{}", approver()?.public().to_hex());
            Ok(())
        }
        Some("--help" | "-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => Err(format!("unknown command {other:?}\n{USAGE}")),
    }
}

#[cfg(feature = "page")]
fn serve(args: &[String]) -> Result<(), String> {
    let store = store(args)?;
    let listen = flag(args, "--listen").unwrap_or_else(|| "127.0.0.1:0".to_owned());
    page::serve(
        store,
        approver()?,
        &listen,
        flag(args, "--allow-remote"),
        flag(args, "--server"),
    )
}

#[cfg(not(feature = "page"))]
fn serve(_args: &[String]) -> Result<(), String> {
    Err("serve needs the page feature: cargo run --features page --bin computer-use-approvals -- serve ...".into())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            // An error can quote a store's or a server's words.
            eprintln!("computer-use-approvals: {}", safe(&message));
            ExitCode::from(2)
        }
    }
}
