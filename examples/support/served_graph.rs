//! The adk_graph example over a desktop server running as its own process
//! (`computer-use-server --desktop simulated|x11|wayland --listen`), so
//! that a second agent process reaches the same server, the same sealed
//! checkpoint and the same graph checkpoints.
//!
//! The parent plays the host: it starts the server (whose policy sends a
//! write of credential data to a person) and, with `--page`, the approval
//! page. It runs the agent twice as child
//! processes: the first interrupts, the second resumes. Between them the
//! action is approved by a person on the page (or headless Chromium in
//! their place, `--browser`), or, without the page, by the host's own
//! approver on its own credential, whose grant id the second process
//! writes into the resume. A third resume is refused.
//!
//! What a child needs comes in its environment, never on its command line
//! (a command line is visible to every user of the machine): the server's
//! address and the agent's credential, the store's directory and sealing
//! key, and the page's public key or the host's grant id.

use std::path::Path;
use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{
    ApproverPublicKey, CheckpointStore, FileCheckpointStore, SealingKey, Session,
};
use adk_computer_use::contracts::WindowId;
use adk_computer_use::graph::{
    FileGraphCheckpointer, reference_graph_over, reference_graph_with_approver,
};
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpApprover, McpRuntimeConfig};
use adk_graph::{CompiledGraph, ExecutionConfig, State};
use serde_json::json;

use super::page;
use super::x11_support;

type Error = Box<dyn std::error::Error>;

/// Whom the server acts for.
const PRINCIPAL: &str = "principal-graph";
/// What the action writes.
const TEXT: &str = "approved in a second process";

/// What a child process is told by the parent, in its environment.
struct Told {
    /// Whom the server acts for.
    principal: String,
    desktop: String,
    address: String,
    agent: String,
    dir: std::path::PathBuf,
    key: String,
    /// The page's public key: decisions on the page answer the interrupt.
    page: Option<ApproverPublicKey>,
    /// The host's grant, written into the resume.
    grant: Option<String>,
}

impl Told {
    fn read() -> Result<Self, Error> {
        let var = |name: &str| {
            std::env::var(name).map_err(|_| format!("{name} is not set: the parent sets it"))
        };
        Ok(Self {
            principal: PRINCIPAL.to_owned(),
            desktop: var("ADK_GRAPH_DESKTOP")?,
            address: var("ADK_GRAPH_SERVER")?,
            agent: var("ADK_GRAPH_AGENT_CREDENTIAL")?,
            dir: var("ADK_GRAPH_STORE")?.into(),
            key: var("ADK_CHECKPOINT_KEY")?,
            page: match std::env::var("ADK_GRAPH_PAGE_KEY") {
                Ok(hex) => Some(ApproverPublicKey::from_hex(&hex)?),
                Err(_) => None,
            },
            grant: std::env::var("ADK_GRAPH_GRANT").ok(),
        })
    }

    /// The agent's connection, in the runtime session `session` when one
    /// was started before.
    async fn connect(&self, session: Option<&str>) -> Result<Arc<ComputerUseMcpRuntime>, Error> {
        let mut config = McpRuntimeConfig::new(&self.principal)
            .with_credential(&self.agent)
            .capability_tool("write_clipboard");
        if let Some(session) = session {
            config = config.session(session);
        }
        let stream = tokio::net::TcpStream::connect(&self.address).await?;
        Ok(Arc::new(
            ComputerUseMcpRuntime::connect(stream, config).await?,
        ))
    }

    /// The graph one agent process builds: its session on `runtime`, bound
    /// to `app`'s window `window`, the store of record and the graph's
    /// checkpoints in the shared directory.
    fn graph(
        &self,
        runtime: Arc<ComputerUseMcpRuntime>,
        app: &str,
        window: u64,
    ) -> Result<CompiledGraph, Error> {
        let identity = VerifiedIdentity::new(&self.principal, "tenant-graph")?;
        let authorizer =
            ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
        let store =
            FileCheckpointStore::new(&self.dir, SealingKey::new(self.key.as_bytes().to_vec())?)?;
        let session = Session::builder(runtime, authorizer)
            .agent_id("graph-agent")
            .target(app, Some(WindowId::Number(window)))
            .checkpoints(Arc::new(store))
            .build()?;
        let checkpointer = Arc::new(FileGraphCheckpointer::new(self.dir.join("graph"))?);
        Ok(match &self.page {
            Some(key) => {
                reference_graph_with_approver(Arc::new(session), Some(checkpointer), key.clone())?
            }
            None => reference_graph_over(Arc::new(session), Some(checkpointer))?,
        })
    }
}

/// The window the write is bound to: the simulator's clipboard viewer, or
/// on a real desktop the one `COMPUTER_USE_CLIPBOARD_APP` names, else the
/// focused one, else the first.
async fn target(
    runtime: &ComputerUseMcpRuntime,
    desktop: &str,
    session: &str,
) -> Result<(String, u64), Error> {
    if desktop == "simulated" {
        return Ok((
            computer_use_server::CLIPBOARD_APP.to_owned(),
            computer_use_server::CLIPBOARD_WINDOW,
        ));
    }
    Ok(x11_support::bound_window(runtime, session).await?)
}

/// The first agent process: starts a runtime session, runs an allowed
/// action, then runs the credential's write to its interrupt and prints
/// what the second process needs.
pub async fn interrupt() -> Result<(), Error> {
    let told = Told::read()?;
    let runtime = told.connect(None).await?;
    let started = runtime.start_session(Some("adk_graph"), None).await?;
    let (app, window) = target(&runtime, &told.desktop, &started.session_id).await?;
    println!("the writes are bound to window {window} of {app}");
    let graph = told.graph(Arc::clone(&runtime), &app, window)?;
    let thread = format!("graph-{}", std::process::id());
    let (checkpoint, _) = crate::allowed_then_interrupted(&graph, &thread, TEXT).await?;
    println!(
        "resume-with {} {app} {window} {thread} {checkpoint}",
        started.session_id
    );
    Ok(())
}

/// A later agent process: resumes the thread from the graph's checkpoint,
/// answered by the page's decision or the host's grant.
pub async fn resume(args: &[&str]) -> Result<(), Error> {
    let [session, app, window, thread, checkpoint] = args else {
        return Err("usage: resume-served SESSION APP WINDOW THREAD CHECKPOINT".into());
    };
    let told = Told::read()?;
    let runtime = told.connect(Some(session)).await?;
    let graph = told.graph(runtime, app, window.parse()?)?;
    // Decided on the page: the decision is the answer. Approved by the
    // host: its grant, on the digests the interrupt showed.
    let answer = match &told.grant {
        Some(grant) => {
            let preview = crate::kept_preview(&told.dir, checkpoint).await?;
            crate::approval_of(&preview, ("grantId", json!(grant)))
        }
        None => State::new(),
    };
    crate::resumed(&graph, thread, checkpoint, answer).await
}

/// Runs this example again as a child process with `args` and the
/// environment `told`; its output, and whether it succeeded.
fn child(args: &[&str], told: &[(&str, String)]) -> Result<(String, bool), Error> {
    let output = std::process::Command::new(std::env::current_exe()?)
        .args(args)
        .envs(told.iter().map(|(k, v)| (*k, v.as_str())))
        .stderr(std::process::Stdio::inherit())
        .output()?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    for line in text.lines().filter(|l| !l.starts_with("resume-with ")) {
        println!("  {line}");
    }
    Ok((text, output.status.success()))
}

/// Who approves, and what the approval runs on (one value per run: its
/// size does not matter).
#[allow(clippy::large_enum_variant)]
enum Host {
    /// A person on the approval page (it owns the server and the store).
    Page(page::Page),
    /// The host, on the approver's credential; the store is its own.
    Own {
        served: page::Served,
        dir: tempfile::TempDir,
        key: String,
    },
}

impl Host {
    fn served(&self) -> &page::Served {
        match self {
            Self::Page(page) => page.served(),
            Self::Own { served, .. } => served,
        }
    }

    fn store_at(&self) -> (&Path, &str) {
        match self {
            Self::Page(page) => page.store_at(),
            Self::Own { dir, key, .. } => (dir.path(), key),
        }
    }
}

/// The whole story over the server on `desktop`; with `on_page`, a person
/// decides on the approval page (`browser`: headless Chromium for them).
pub async fn story(desktop: &str, on_page: bool, browser: bool) -> Result<(), Error> {
    let host = if on_page {
        Host::Page(page::start_page(PRINCIPAL, desktop, &[], browser).await?)
    } else {
        Host::Own {
            served: page::serve(PRINCIPAL, desktop, &[]).await?,
            dir: tempfile::tempdir()?,
            key: page::secret("checkpoints"),
        }
    };
    let (dir, key) = host.store_at();
    let dir_text = dir
        .to_str()
        .ok_or("a temporary directory named in UTF-8")?
        .to_owned();
    let mut told = vec![
        ("ADK_GRAPH_DESKTOP", desktop.to_owned()),
        ("ADK_GRAPH_SERVER", host.served().address.clone()),
        ("ADK_GRAPH_AGENT_CREDENTIAL", host.served().agent.clone()),
        ("ADK_GRAPH_STORE", dir_text),
        ("ADK_CHECKPOINT_KEY", key.to_owned()),
    ];
    if let Host::Page(page) = &host {
        told.push(("ADK_GRAPH_PAGE_KEY", page.public().to_hex()));
    }

    println!("the agent's first process runs the graph:");
    let (printed, ok) = child(&["interrupt-served"], &told)?;
    if !ok {
        return Err("the first agent process failed".into());
    }
    let resume_with: Vec<String> = printed
        .lines()
        .find_map(|l| l.strip_prefix("resume-with "))
        .ok_or("the first process printed no resume-with line")?
        .split(' ')
        .map(str::to_owned)
        .collect();

    // The one action waiting in the store of record.
    let store = FileCheckpointStore::new(dir, SealingKey::new(key.as_bytes().to_vec())?)?;
    let id = store
        .ids()?
        .into_iter()
        .next()
        .ok_or("nothing waits in the store of record")?;
    match &host {
        Host::Page(page) => page.decided(&id).await?,
        Host::Own { served, .. } => {
            // The host approves on its own credential, as the page would;
            // the grant is the runtime's, bound to the action's digests.
            let view = adk_computer_use::chain::inspect(&store, &id)?;
            let config = McpRuntimeConfig::new(&view.principal_id)
                .with_credential(&served.approver)
                .session(&view.session_id);
            let approver = McpApprover::connect(
                tokio::net::TcpStream::connect(&served.address).await?,
                config,
            )
            .await?;
            let approval = approver
                .approve_checkpoint(Arc::new(store) as Arc<dyn CheckpointStore>, &id)
                .await?;
            let grant = approval
                .grant_id()
                .ok_or("the host's approval carries no grant")?
                .to_owned();
            println!("the host approved it: grant {grant}");
            told.push(("ADK_GRAPH_GRANT", grant));
        }
    }

    let mut args = vec!["resume-served"];
    args.extend(resume_with.iter().map(String::as_str));
    println!("the agent's second process resumes it:");
    let (_, ok) = child(&args, &told)?;
    if !ok {
        return Err("the second agent process failed".into());
    }
    match desktop {
        "x11" => outside_reads("xclip", &["-o", "-selection", "clipboard"])?,
        "wayland" => outside_reads("wl-paste", &["--no-newline"])?,
        _ => {}
    }
    println!("a third process resumes the same checkpoint:");
    let (_, ok) = child(&args, &told)?;
    if ok {
        return Err("a sealed approval was resumed twice".into());
    }
    println!("  refused: the approval was spent");
    Ok(())
}

/// Reads the clipboard with `program`, outside this crate: it must hold
/// the approved text.
fn outside_reads(program: &str, args: &[&str]) -> Result<(), Error> {
    let output = std::process::Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{program} could not be run (is it installed?): {e}"))?;
    let read = String::from_utf8_lossy(&output.stdout);
    println!("  {program}, outside this crate, reads the clipboard: {read:?}");
    if read != TEXT {
        return Err(format!("{program} read another text than the approved one").into());
    }
    Ok(())
}

/// `--server COMMAND [ARGS...]`: any computer-use-mcp server over stdio.
/// It lives only as long as this process, so the second graph is another
/// instance here, over the same stores, and resumes on the host's grant.
pub async fn over_stdio(command: &[&str]) -> Result<(), Error> {
    let [program, rest @ ..] = command else {
        return Err("--server needs a command".into());
    };
    let mut spawned = tokio::process::Command::new(program);
    spawned.args(rest);
    // Whom that server acts for: `COMPUTER_USE_PRINCIPAL_ID`, else the
    // bundled server's default.
    let principal =
        std::env::var("COMPUTER_USE_PRINCIPAL_ID").unwrap_or_else(|_| "principal-local".to_owned());
    let config = McpRuntimeConfig::new(&principal).capability_tool("write_clipboard");
    let (runtime, approver) = ComputerUseMcpRuntime::spawn_with_approver(spawned, config).await?;
    let runtime = Arc::new(runtime);
    let started = runtime.start_session(Some("adk_graph"), None).await?;
    let (app, window) = match target(&runtime, "listed", &started.session_id).await {
        Ok(found) => found,
        // A server that lists no window: the bundled simulator's viewer.
        Err(_) => (
            computer_use_server::CLIPBOARD_APP.to_owned(),
            computer_use_server::CLIPBOARD_WINDOW,
        ),
    };
    println!("the writes are bound to window {window} of {app}");
    let dir = tempfile::tempdir()?;
    let told = Told {
        principal,
        desktop: "listed".into(),
        address: String::new(),
        agent: String::new(),
        dir: dir.path().to_path_buf(),
        key: page::secret("checkpoints"),
        page: None,
        grant: None,
    };
    let thread = format!("graph-{}", std::process::id());
    let first = told.graph(Arc::clone(&runtime), &app, window)?;
    let (checkpoint, preview) = crate::allowed_then_interrupted(&first, &thread, TEXT).await?;
    drop(first);

    let store: Arc<dyn CheckpointStore> = Arc::new(FileCheckpointStore::new(
        dir.path(),
        SealingKey::new(told.key.as_bytes().to_vec())?,
    )?);
    let id = store
        .ids()?
        .into_iter()
        .next()
        .ok_or("nothing waits in the store of record")?;
    let approval = approver.approve_checkpoint(store, &id).await?;
    let grant = approval
        .grant_id()
        .ok_or("the host's approval carries no grant")?;
    println!("the host approved it: grant {grant}");
    let answer = crate::approval_of(&preview, ("grantId", json!(grant)));
    let resume = |graph: CompiledGraph, answer: State| {
        let (thread, checkpoint) = (thread.clone(), checkpoint.clone());
        async move {
            graph
                .invoke(
                    answer,
                    ExecutionConfig::new(&thread).with_resume_from(&checkpoint),
                )
                .await
        }
    };
    let second = told.graph(Arc::clone(&runtime), &app, window)?;
    let result = resume(second, answer.clone()).await?;
    println!(
        "a second graph resumed it: {} (committed: {}, verified: {})",
        result["result"]["status"], result["committed"], result["verified"]
    );
    let third = told.graph(Arc::clone(&runtime), &app, window)?;
    match resume(third, answer).await {
        Ok(_) => Err("a sealed approval was resumed twice".into()),
        Err(err) => {
            println!("a third resume: refused before anything ran: {err}");
            runtime.shutdown().await?;
            Ok(())
        }
    }
}
