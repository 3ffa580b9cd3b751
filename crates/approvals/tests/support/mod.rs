//! What the approval tests share: the server and the page as processes,
//! an agent session over a file store, and the browser's steps.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::browser::Browser;
use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{
    ApproverKey, ChainOutcome, CheckpointId, FileCheckpointStore, SealingKey,
};
use adk_computer_use::contracts::{DataLabel, ExecutionMode, WindowId};
use adk_computer_use::{
    ComputerUseMcpRuntime, McpRuntimeConfig, ProposedAction, ScopeAuthorizer, Session,
    VerifiedIdentity,
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The checkpoint store's sealing key.
pub const KEY: &str = "approval-page-test-key-32-bytes!";
/// The person's signing key (the page's alone).
pub const APPROVER_KEY: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";

/// A child process, killed with the test.
pub fn spawn(
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
    envs: &[(&str, &str)],
) -> tokio::process::Child {
    let program = program.as_ref();
    tokio::process::Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|err| panic!("{} could not be started: {err}", program.display()))
}

/// The lines a child prints, each with a prefix, bounded so a silent child
/// fails the test instead of hanging it.
pub async fn printed(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    prefix: &str,
) -> String {
    let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .unwrap_or_else(|_| panic!("nothing printed before {prefix:?}"))
        .unwrap()
        .unwrap_or_else(|| panic!("the output ended before {prefix:?}"));
    line.strip_prefix(prefix)
        .unwrap_or_else(|| panic!("expected {prefix:?}, got {line:?}"))
        .to_owned()
}

/// One HTTP/1.1 request by hand; the status code and the body.
pub async fn http(address: &str, request: String) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, answer)
}

pub fn write(action_id: &str, text: &str) -> ProposedAction {
    ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_action_id(action_id)
    .with_data_labels([DataLabel::Public])
}

pub async fn suspended(
    session: &Session<ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> CheckpointId {
    match session.run(action).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending.suspend().await.unwrap(),
        _ => panic!("the simulator was told to ask for approval"),
    }
}

/// The simulator served over TCP (over the real X11 display with `x11`),
/// asking for approval of clipboard writes; its address and credentials.
pub struct Served {
    _child: tokio::process::Child,
    /// Where it listens.
    pub address: String,
    /// The agent's credential.
    pub agent: String,
    /// The approver's credential.
    pub approver: String,
}

/// A file store of checkpoints in `dir`, sealed with [`KEY`].
pub fn file_store(dir: &tempfile::TempDir) -> Arc<FileCheckpointStore> {
    Arc::new(
        FileCheckpointStore::new(
            dir.path(),
            SealingKey::new(KEY.as_bytes().to_vec()).unwrap(),
        )
        .unwrap(),
    )
}

pub async fn served(x11: bool) -> Served {
    served_with(x11, &[]).await
}

/// [`served`], with more of the server's flags.
pub async fn served_with(x11: bool, flags: &[&str]) -> Served {
    let mut all = vec!["--confirm-tool", "write_clipboard"];
    all.extend(flags);
    served_by_policy(x11, &all).await
}

/// The server with its own policy alone (no tool confirmed by name), and
/// `flags`: what asks a person is the request's labels and class.
pub async fn served_by_policy(x11: bool, flags: &[&str]) -> Served {
    let mut args = vec!["--principal", "alice", "--stats", "--listen", "127.0.0.1:0"];
    if x11 {
        args.extend(["--desktop", "x11"]);
    }
    args.extend(flags);
    let mut child = spawn(
        adk_computer_use_testkit::binary::path(adk_computer_use_testkit::binary::SERVER),
        &args,
        &[],
    );
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let address = printed(&mut out, "listening on ").await;
    let agent = printed(&mut out, "agent-credential ").await;
    let approver = printed(&mut out, "approver-credential ").await;
    Served {
        _child: child,
        address,
        agent,
        approver,
    }
}

/// The agent's runtime (its own credential) and a session whose store of
/// record is `store`, acting on `app`.
pub async fn agent(
    sim: &Served,
    store: &Arc<FileCheckpointStore>,
    app: &str,
) -> (Arc<ComputerUseMcpRuntime>, Session<ComputerUseMcpRuntime>) {
    agent_with(sim, store, app, None, None).await
}

/// [`agent`], on one `window` of `app` when given, told how old the server
/// accepts target evidence when `max_age` is given.
pub async fn agent_with(
    sim: &Served,
    store: &Arc<FileCheckpointStore>,
    app: &str,
    window: Option<WindowId>,
    max_age: Option<Duration>,
) -> (Arc<ComputerUseMcpRuntime>, Session<ComputerUseMcpRuntime>) {
    let runtime = Arc::new(
        ComputerUseMcpRuntime::connect(
            tokio::net::TcpStream::connect(&sim.address).await.unwrap(),
            McpRuntimeConfig::new("alice")
                .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
                .unwrap()
                .with_credential(&sim.agent),
        )
        .await
        .unwrap(),
    );
    runtime
        .start_session(Some("the approval page"), Some("team"))
        .await
        .unwrap();
    let authorizer = ScopeAuthorizer::new(
        VerifiedIdentity::new("alice", "tenant-page").unwrap(),
        [
            "computer:plan",
            "computer:execute:background",
            "computer:execute:foreground",
        ],
    )
    .unwrap();
    let mut builder = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("page-agent")
        .target(app, window)
        .checkpoints(store.clone());
    if let Some(max_age) = max_age {
        builder = builder.target_evidence_max_age(max_age);
    }
    let session = builder.build().unwrap();
    (runtime, session)
}

/// `computer-use-approvals serve` over `store_dir`, with the approver's key
/// and credential; the page process and its sign-in link.
pub async fn page(store_dir: &str, sim: &Served) -> (tokio::process::Child, String) {
    page_with(store_dir, sim, &[]).await
}

/// [`page`], with more of its environment.
pub async fn page_with(
    store_dir: &str,
    sim: &Served,
    envs: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let mut all = vec![
        ("ADK_CHECKPOINT_KEY", KEY),
        ("ADK_APPROVER_KEY", APPROVER_KEY),
        ("ADK_APPROVER_CREDENTIAL", sim.approver.as_str()),
    ];
    all.extend_from_slice(envs);
    let mut child = spawn(
        env!("CARGO_BIN_EXE_computer-use-approvals"),
        &["serve", "--store", store_dir, "--server", &sim.address],
        &all,
    );
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let sign_in = printed(&mut out, "approval page on ").await;
    (child, sign_in)
}

/// Waits until the page confirms a decision `what` (`approved`, `denied`):
/// the answer to the post, not the page before it.
pub async fn confirmed(browser: &Browser, what: &str) {
    for _ in 0..100 {
        if let Ok(done) = browser.find(".done").await
            && done.text().await.is_ok_and(|text| text.contains(what))
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!(
        "the page did not confirm {what:?}: {}",
        browser.source().await.unwrap_or_default()
    );
}

/// Clicks Approve on `id`'s card, waits for the page to confirm, and has
/// the agent resume by the recorded decision: the action runs.
pub async fn approve_on_page(
    browser: &Browser,
    session: &Session<ComputerUseMcpRuntime>,
    id: &CheckpointId,
) {
    click(browser, &format!("#approve-{id}")).await;
    confirmed(browser, "approved").await;
    let done = session
        .resume_decided(id, &public())
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
}

pub async fn click(browser: &Browser, css: &str) {
    browser.find(css).await.unwrap().click().await.unwrap();
}

/// The approver's public key, which the agent checks decisions with.
pub fn public() -> adk_computer_use::chain::ApproverPublicKey {
    ApproverKey::from_hex(APPROVER_KEY).unwrap().public()
}

/// Keeps a screenshot of the page as a test artifact in `target/tmp`.
pub async fn keep_screenshot(browser: &Browser, name: &str) {
    let artifact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&artifact, browser.screenshot().await).unwrap();
    println!("the page as the person saw it: {}", artifact.display());
}

/// The X id of the visible window titled `title`, once it shows (up to
/// 10 s), as `xdotool` finds it.
pub async fn window_named(title: &str) -> u64 {
    for _ in 0..100 {
        let out = tokio::process::Command::new("xdotool")
            .args(["search", "--onlyvisible", "--name", title])
            .output()
            .await
            .unwrap();
        if let Some(id) = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<u64>().ok())
        {
            return id;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no window titled {title:?} appeared");
}
