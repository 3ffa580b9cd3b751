//! The simulator can outlive the processes that use it: served over TCP
//! (`computer-use-server --listen`), an action suspended by one client is
//! approved and completed by another that connects later. Over TCP every
//! connection authenticates as the agent or the approver, only the
//! approver approves, the port is loopback unless asked otherwise, and a
//! client that leaves the lease queue does not hold up the next one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{
    Approval, ChainOutcome, CheckpointId, FileCheckpointStore, SealingKey, inspect,
};
use adk_computer_use::contracts::{ApprovalScope, DataLabel, ExecutionMode};
use adk_computer_use::mcp::{GrantRequest, McpApprover};
use adk_computer_use::{
    ComputerUseMcpRuntime, McpRuntimeConfig, ProposedAction, ScopeAuthorizer, Session,
    VerifiedIdentity,
};
use computer_use_server::CLIPBOARD_APP;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

fn session(
    runtime: &Arc<ComputerUseMcpRuntime>,
    store: &Arc<FileCheckpointStore>,
) -> Session<ComputerUseMcpRuntime> {
    let identity = VerifiedIdentity::new("alice", "t").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"]).unwrap();
    Session::builder(Arc::clone(runtime), authorizer)
        .agent_id("agent")
        .target(CLIPBOARD_APP, None)
        .checkpoints(store.clone())
        .build()
        .unwrap()
}

async fn connect(address: &str, config: McpRuntimeConfig) -> Arc<ComputerUseMcpRuntime> {
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    Arc::new(
        ComputerUseMcpRuntime::connect(stream, config)
            .await
            .unwrap(),
    )
}

/// A simulator listening on a loopback port, with the credentials it printed.
struct Sim {
    child: tokio::process::Child,
    address: String,
    agent: String,
    approver: String,
    host: String,
    /// The credentials of the agents `--agent NAME` named, by name.
    named: Vec<(String, String)>,
}

async fn listen(extra: &[&str]) -> Sim {
    listen_with(None, extra).await
}

/// [`listen`], the simulator run under `ulimit -n FILES` when given.
async fn listen_with(files: Option<u32>, extra: &[&str]) -> Sim {
    let binary = env!("CARGO_BIN_EXE_computer-use-server");
    let mut command = match files {
        None => tokio::process::Command::new(binary),
        Some(files) => {
            let mut sh = tokio::process::Command::new("sh");
            sh.arg("-c")
                .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
                .arg(binary);
            sh
        }
    };
    let mut child = command
        .args(["--principal", "alice", "--stats", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Bounded only so that a simulator that prints no credentials fails
    // rather than hangs.
    let mut next = async |prefix: &str| {
        let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("computer-use-server printed no {prefix:?} line"))
            .unwrap()
            .unwrap();
        line.strip_prefix(prefix).unwrap().to_owned()
    };
    let address = next("listening on ").await;
    let agent = next("agent-credential ").await;
    let approver = next("approver-credential ").await;
    let host = next("host-credential ").await;
    let mut named = Vec::new();
    for pair in extra.windows(2).filter(|pair| pair[0] == "--agent") {
        let name = pair[1];
        named.push((
            name.to_owned(),
            next(&format!("agent-credential {name} ")).await,
        ));
    }
    assert_eq!(agent.len(), 64);
    assert_eq!(approver.len(), 64);
    assert_eq!(host.len(), 64);
    assert_ne!(agent, approver);
    assert_ne!(host, approver);
    Sim {
        child,
        address,
        agent,
        approver,
        host,
        named,
    }
}

/// A client speaking newline-delimited JSON-RPC by hand, so it can send
/// what `ComputerUseMcpRuntime` never sends (`approve_action`, a lease
/// request it walks away from).
struct Raw {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
    next: u64,
}

impl Raw {
    /// Connects and initializes with `token` (none: no credential). `Err`
    /// holds the JSON-RPC error the initialize was answered with.
    async fn open(address: &str, token: Option<&str>) -> Result<Self, (Self, Value)> {
        let stream = tokio::net::TcpStream::connect(address).await.unwrap();
        let (read, write) = stream.into_split();
        let mut raw = Self {
            lines: BufReader::new(read).lines(),
            write,
            next: 0,
        };
        let mut capabilities = json!({});
        if let Some(token) = token {
            capabilities = json!({ "experimental": { "adk/credential": { "token": token } } });
        }
        let answer = raw
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": capabilities,
                    "clientInfo": { "name": "sim-listen-test", "version": "0" },
                }),
            )
            .await;
        match answer {
            Some(answer) if answer.get("result").is_some() => {
                raw.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                    .await;
                Ok(raw)
            }
            Some(answer) => Err((raw, answer)),
            None => Err((raw, Value::Null)),
        }
    }

    async fn send(&mut self, message: Value) -> bool {
        let mut line = message.to_string();
        line.push('\n');
        self.write.write_all(line.as_bytes()).await.is_ok()
    }

    /// Sends a request without waiting for its answer; its id.
    async fn start(&mut self, method: &str, params: Value) -> Option<u64> {
        self.next += 1;
        let id = self.next;
        let sent = self
            .send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await;
        sent.then_some(id)
    }

    /// The answer to request `id`; `None` once the connection is closed.
    async fn answer(&mut self, id: u64) -> Option<Value> {
        loop {
            let line = self.lines.next_line().await.ok()??;
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return Some(message);
            }
        }
    }

    /// One request and its answer (`None`: the connection is closed).
    async fn request(&mut self, method: &str, params: Value) -> Option<Value> {
        let id = self.start(method, params).await?;
        self.answer(id).await
    }

    /// A `tools/call`, answered as the JSON-RPC response.
    async fn call(&mut self, tool: &str, arguments: Value) -> Option<Value> {
        self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        )
        .await
    }

    /// A `tools/call` that must succeed: its `structuredContent`.
    async fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.call(tool, arguments).await.unwrap();
        let result = &answer["result"];
        assert_ne!(result["isError"], json!(true), "{tool}: {answer}");
        assert!(answer.get("error").is_none(), "{tool}: {answer}");
        result["structuredContent"].clone()
    }
}

/// Whether a `tools/call` answer is a successful result.
fn succeeded(answer: &Option<Value>) -> bool {
    answer
        .as_ref()
        .is_some_and(|a| a.get("result").is_some() && a["result"]["isError"] != json!(true))
}

/// Suspends a write that needs approval, as the agent; the checkpoint id.
async fn suspend(
    runtime: &Arc<ComputerUseMcpRuntime>,
    store: &Arc<FileCheckpointStore>,
    action_id: &str,
) -> CheckpointId {
    let session = session(runtime, store);
    let action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": "later" }),
        ExecutionMode::Background,
    )
    .with_action_id(action_id)
    .with_data_labels([DataLabel::Public]);
    let pending = match session.run(action).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("approval required"),
    };
    let id = pending.suspend().await.unwrap();
    let _ = session.shutdown().await;
    id
}

fn key() -> SealingKey {
    SealingKey::new(vec![9u8; 32]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_without_the_right_credential_cannot_call_any_tool() {
    let mut sim = listen(&[]).await;
    // The agent's credential works, for comparison.
    let mut agent = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    let started = agent.ok("start_session", json!({})).await;
    let session_id = started["session"]["sessionId"].as_str().unwrap().to_owned();

    let wrong = "0".repeat(64);
    for token in [None, Some(wrong.as_str()), Some("")] {
        let (mut raw, refusal) = match Raw::open(&sim.address, token).await {
            Ok(_) => panic!("initialize with {token:?} was accepted"),
            Err(refused) => refused,
        };
        assert_eq!(refusal["error"]["data"]["error"], "unauthenticated");
        // Nor does anything after it work: the connection is closed.
        raw.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        for (tool, arguments) in [
            ("start_session", json!({})),
            ("get_session_events", json!({ "session_id": session_id })),
            ("stop_session", json!({ "session_id": session_id })),
        ] {
            let answer = raw.call(tool, arguments).await;
            assert!(!succeeded(&answer), "{tool} with {token:?}: {answer:?}");
        }
    }
    // Nor can the runtime connect without one, or with a wrong one.
    for config in [
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .timeouts(10_000, 10_000),
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .timeouts(10_000, 10_000)
            .with_credential(&wrong),
    ] {
        let stream = tokio::net::TcpStream::connect(&sim.address).await.unwrap();
        assert!(
            ComputerUseMcpRuntime::connect(stream, config)
                .await
                .is_err()
        );
    }
    // The session was neither stopped nor read by anyone else.
    let session = agent
        .ok("get_session", json!({ "session_id": session_id }))
        .await;
    assert_eq!(session["session"]["state"], "running");
    sim.child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_credential_cannot_approve_an_action() {
    let mut sim = listen(&["--confirm-tool", "write_clipboard"]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
    let runtime = connect(
        &sim.address,
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .with_credential(&sim.agent),
    )
    .await;
    let started = runtime
        .start_session(Some("self"), Some("team"))
        .await
        .unwrap();
    let _ = suspend(&runtime, &store, "self-approve-1").await;

    // The agent, on a connection of its own, tries to approve its action.
    let mut agent = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    let answer = agent
        .call(
            "approve_action",
            json!({ "session_id": started.session_id, "action_id": "self-approve-1" }),
        )
        .await
        .unwrap();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let refusal = &answer["result"]["structuredContent"];
    assert_eq!(refusal["error"], "approver_credential_required", "{answer}");

    // Nothing was granted: no approval in the session's events, and the
    // action is still pending for the approver.
    let events = agent
        .ok(
            "get_session_events",
            json!({ "session_id": started.session_id }),
        )
        .await;
    let kinds: Vec<&str> = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert!(!kinds.contains(&"action.approved"), "{kinds:?}");
    let mut approver = Raw::open(&sim.address, Some(&sim.approver))
        .await
        .ok()
        .unwrap();
    let granted = approver
        .ok(
            "approve_action",
            json!({ "session_id": started.session_id, "action_id": "self-approve-1" }),
        )
        .await;
    assert!(granted["grant"]["grantId"].is_string(), "{granted}");
    sim.child.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_suspended_by_one_client_is_approved_by_the_approver_and_completed_by_another() {
    let mut sim = listen(&["--confirm-tool", "write_clipboard"]).await;
    let dir = tempfile::tempdir().unwrap();

    // The first client suspends the action, then goes away.
    let first = connect(
        &sim.address,
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .with_credential(&sim.agent),
    )
    .await;
    let started = first
        .start_session(Some("suspend"), Some("team"))
        .await
        .unwrap();
    let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
    let id = suspend(&first, &store, "outlives-1").await;
    first.shutdown().await.unwrap();
    drop(first);

    // The host's approver approves it on a connection of its own, with the
    // approver's credential.
    let approver = McpApprover::connect(
        tokio::net::TcpStream::connect(&sim.address).await.unwrap(),
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .session_in_group(&started.session_id, "team")
            .with_credential(&sim.approver),
    )
    .await
    .unwrap();
    let grant = approver
        .approve_action(
            &GrantRequest::for_checkpoint(&inspect(&*store, &id).unwrap()),
            ApprovalScope::ExactAction,
            None,
        )
        .await
        .unwrap();

    // Another agent client, later, in the same runtime session, runs it.
    let second = connect(
        &sim.address,
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .session_in_group(&started.session_id, "team")
            .with_credential(&sim.agent),
    )
    .await;
    let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
    let session = session(&second, &store);
    let done = session
        .resume(&id, Approval::from_grant("outlives-1", &grant))
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let (stats, _) = second.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["clipboard"], "later");
    assert_eq!(stats["totalEffects"], 1);
    let _ = session.shutdown().await;
    sim.child.kill().await.unwrap();
}

#[tokio::test]
async fn listening_beyond_loopback_needs_allow_remote() {
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_computer-use-server"))
        .args(["--listen", "0.0.0.0:0"])
        .kill_on_drop(true)
        .output();
    // Refused before it listens: it exits at once (a bound would only
    // guard against a hang).
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("computer-use-server --listen 0.0.0.0:0 kept running")
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    assert!(stderr.contains("loopback"), "{stderr}");
    assert!(!String::from_utf8_lossy(&output.stdout).contains("listening on"));
}

fn lease_request(session_id: &str, ttl_ms: u64, priority: i64) -> Value {
    json!({
        "session_id": session_id,
        "kind": "cooperative",
        "mode": "background",
        "ttl_ms": ttl_ms,
        "action_budget": 1,
        "priority": priority,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_left_does_not_keep_the_lease_from_the_next() {
    let mut sim = listen(&[]).await;
    let mut a = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    let started = a.ok("start_session", json!({})).await;
    let session_id = started["session"]["sessionId"].as_str().unwrap().to_owned();
    let held = a
        .ok(
            "acquire_control_lease",
            lease_request(&session_id, 120_000, 0),
        )
        .await;
    let held = held["lease"]["leaseId"].as_str().unwrap().to_owned();

    // B queues, first in line (a higher priority), for a lease of two
    // minutes, then goes away.
    let mut b = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    let queued = b
        .start(
            "tools/call",
            json!({
                "name": "acquire_control_lease",
                "arguments": lease_request(&session_id, 120_000, 10),
            }),
        )
        .await;
    assert!(queued.is_some());
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(b);

    // C queues behind; A releases; C is granted, not made to wait out the
    // two minutes of a lease given to B, who is gone.
    let mut c = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    let waiting = c
        .start(
            "tools/call",
            json!({
                "name": "acquire_control_lease",
                "arguments": lease_request(&session_id, 1_000, 0),
            }),
        )
        .await
        .unwrap();
    a.ok("release_control_lease", json!({ "lease_id": held }))
        .await;
    let answer = tokio::time::timeout(Duration::from_secs(30), c.answer(waiting))
        .await
        .expect("C still waits: the lease went to the client that left")
        .unwrap();
    let lease = &answer["result"]["structuredContent"]["lease"];
    assert_eq!(lease["state"], "active", "{answer}");
    sim.child.kill().await.unwrap();
}

/// Issue 19: a person's approval becomes a server grant obtained by the
/// approver's side. `computer-use-approvals approve --server` obtains it
/// with the approver's credential and records the signed decision carrying
/// it; with the agent's credential it obtains nothing and records nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approvals_command_obtains_the_grant_with_the_approvers_credential() {
    use adk_computer_use::chain::{ApproverKey, decision_of};
    const KEY: &str = "approvals-over-tcp-key-32-bytes!";
    const APPROVER_KEY: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    let mut sim = listen(&["--confirm-tool", "write_clipboard"]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(
        FileCheckpointStore::new(
            dir.path(),
            SealingKey::new(KEY.as_bytes().to_vec()).unwrap(),
        )
        .unwrap(),
    );
    let runtime = connect(
        &sim.address,
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .with_credential(&sim.agent),
    )
    .await;
    runtime
        .start_session(Some("cli"), Some("team"))
        .await
        .unwrap();
    let id = suspend(&runtime, &store, "cli-grant-1").await;
    let approve = |credential: String| {
        let (dir, address, id) = (
            dir.path().to_str().unwrap().to_owned(),
            sim.address.clone(),
            id.to_string(),
        );
        async move {
            tokio::process::Command::new(adk_computer_use_testkit::binary::path(
                adk_computer_use_testkit::binary::APPROVALS,
            ))
            .args(["approve", &id, "--store", &dir, "--server", &address])
            .env("ADK_CHECKPOINT_KEY", KEY)
            .env("ADK_APPROVER_KEY", APPROVER_KEY)
            .env("ADK_APPROVER_CREDENTIAL", credential)
            .output()
            .await
            .unwrap()
        }
    };
    let public = ApproverKey::from_hex(APPROVER_KEY).unwrap().public();

    // The agent's own credential: no grant, no decision.
    let refused = approve(sim.agent.clone()).await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("approver_credential_required"), "{stderr}");
    assert_eq!(decision_of(&*store, &id, &public).unwrap(), None);

    // The approver's credential: the grant, inside a signed decision.
    let approved = approve(sim.approver.clone()).await;
    assert!(
        approved.status.success(),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    let session = session(&runtime, &store);
    let done = session
        .resume_decided(&id, &public)
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let receipt = done.receipt().clone();
    // The agent replays the execution on its own connection, with the same
    // action and grant: the server's run-once receipt and grant accounting
    // leave one effect.
    let mut agent = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    let session_id = runtime.session_id().unwrap();
    let grant_id = match decision_of(&*store, &id, &public).unwrap() {
        Some(adk_computer_use::chain::Decision::Approve(approval)) => {
            approval.grant_id().unwrap().to_owned()
        }
        other => panic!("expected the recorded approval, got {other:?}"),
    };
    for action_id in ["cli-grant-1", "cli-grant-1-again"] {
        let _ = agent
            .call(
                "execute_action",
                json!({
                    "session_id": session_id,
                    "action_id": action_id,
                    "tool": "write_clipboard",
                    "arguments": { "text": "later" },
                    "mode": "background",
                    "grant_id": grant_id,
                }),
            )
            .await;
    }
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["clipboard"], "later");
    assert_eq!(
        stats["totalEffects"], 1,
        "one grant, one effect ({receipt:?})"
    );
    let _ = session.shutdown().await;
    sim.child.kill().await.unwrap();
}

/// Issue 19 review: a local process without a credential cannot take the
/// TCP simulator down. Far more idle connections than the server may open
/// files: it stays up, closes the ones that never authenticate, and serves
/// an authenticated client afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_unauthenticated_connections_do_not_take_the_server_down() {
    let mut sim = listen_with(Some(48), &[]).await;
    let mut idle = Vec::new();
    for _ in 0..150 {
        if let Ok(stream) = tokio::net::TcpStream::connect(&sim.address).await {
            idle.push(stream);
        }
    }
    // Past the handshake deadline the idle ones are closed by the server.
    tokio::time::sleep(Duration::from_secs(7)).await;
    assert!(
        sim.child.try_wait().unwrap().is_none(),
        "the simulator exited under idle connections"
    );
    drop(idle);
    let runtime = connect(
        &sim.address,
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .with_credential(&sim.agent),
    )
    .await;
    let started = runtime.start_session(Some("after"), None).await.unwrap();
    assert_eq!(started.principal_id, "alice");
    sim.child.kill().await.unwrap();
}

/// Issue 20, item 7: a session started without an execution group is
/// joined by a later process with `session(id)`, as docs/servers.md says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_a_group_is_joined_by_its_id() {
    let mut sim = listen(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
    let first = connect(
        &sim.address,
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .with_credential(&sim.agent),
    )
    .await;
    let started = first.start_session(Some("no group"), None).await.unwrap();
    let second = connect(
        &sim.address,
        McpRuntimeConfig::new("alice")
            .read_only_extension(adk_computer_use_testkit::STATS_TOOL)
            .unwrap()
            .session(&started.session_id)
            .with_credential(&sim.agent),
    )
    .await;
    let session = session(&second, &store);
    assert_eq!(session.session_id(), started.session_id);
    let _observed = session.observe().await.unwrap();
    let _ = session.shutdown().await;
    sim.child.kill().await.unwrap();
}

/// Issue 28, item 2, from the attacker's side: a local process with no
/// credential holds 64 silent connections (every place the server keeps
/// for connections that have not authenticated) and reopens each one the
/// moment it is closed. The agent and the approver, with their
/// credentials, still get in every time: the server closes the oldest
/// silent connection to make room, never the newcomer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_holding_every_unauthenticated_place_cannot_lock_the_agents_out() {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;
    let mut sim = listen(&[]).await;
    let opened = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut attackers = Vec::new();
    for _ in 0..64 {
        let (address, opened, stop) = (sim.address.clone(), opened.clone(), stop.clone());
        attackers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let Ok(mut stream) = tokio::net::TcpStream::connect(&address).await else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                };
                opened.fetch_add(1, Ordering::SeqCst);
                // Silent until the server closes it; then at once again.
                let mut buf = [0u8; 64];
                while !matches!(stream.read(&mut buf).await, Ok(0) | Err(_)) {}
            }
        }));
    }
    // Every place taken.
    while opened.load(Ordering::SeqCst) < 64 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    for attempt in 0..6 {
        let credential = if attempt % 3 == 2 {
            &sim.approver
        } else {
            &sim.agent
        };
        let stream = tokio::net::TcpStream::connect(&sim.address).await.unwrap();
        let runtime = tokio::time::timeout(
            Duration::from_secs(30),
            ComputerUseMcpRuntime::connect(
                stream,
                McpRuntimeConfig::new("alice").with_credential(credential),
            ),
        )
        .await
        .unwrap_or_else(|_| panic!("attempt {attempt}: no answer within 30 s"))
        .unwrap_or_else(|err| panic!("attempt {attempt}: locked out: {err}"));
        let started = runtime.start_session(Some("under siege"), None).await;
        assert!(started.is_ok(), "attempt {attempt}: {started:?}");
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert!(
        opened.load(Ordering::SeqCst) > 64,
        "the attacker reopened what was closed"
    );
    stop.store(true, Ordering::SeqCst);
    for attacker in attackers {
        attacker.abort();
    }
    sim.child.kill().await.unwrap();
}

/// Issue 28, item 1, from the attacker's side: two agents of one server,
/// each with a credential of its own that the host minted (`--agent bob`).
/// The first agent takes its target's reservation and the one-writer
/// lease through the chain, and holds them. The second, on its own
/// connection, knows every id and tries: releasing the lease, releasing
/// the reservation (naming its own session, then the first's), taking a
/// lease or executing in the first's session, reading its events, and the
/// emergency stop. Each is refused before anything changes, and the first
/// agent's action runs on the lease it holds. The host's credential, not
/// an agent's, stops the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agent_cannot_touch_what_another_holds_nor_stop_the_server() {
    let mut sim = listen(&["--agent", "bob"]).await;
    let bob = sim.named[0].1.clone();
    assert_ne!(bob, sim.agent);
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
    let alice = connect(
        &sim.address,
        McpRuntimeConfig::new("alice").with_credential(&sim.agent),
    )
    .await;
    let alice_session = alice.start_session(Some("alice's"), None).await.unwrap();
    let chain = session(&alice, &store);
    let action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": "alice's own" }),
        ExecutionMode::Background,
    )
    .with_data_labels([DataLabel::Public]);
    let approved = match chain
        .observe()
        .await
        .unwrap()
        .preview(&action)
        .await
        .unwrap()
        .route()
    {
        adk_computer_use::chain::Route::Allowed(approved) => approved,
        _ => panic!("the write is allowed by the server's policy"),
    };
    let reserved = approved.reserve().await.unwrap();
    let reservation = reserved.reservation().unwrap().reservation_id.clone();
    let leased = reserved.lease().await.unwrap();
    let lease = leased.lease().lease_id.clone();

    let mut intruder = Raw::open(&sim.address, Some(&bob)).await.ok().unwrap();
    let own = intruder
        .ok("start_session", json!({ "objective": "bob's" }))
        .await;
    let own_session = own["session"]["sessionId"].as_str().unwrap().to_owned();
    let theirs = alice_session.session_id.clone();
    let refusal = |answer: &Option<Value>| {
        let answer = answer.as_ref().unwrap();
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        answer["result"]["structuredContent"]["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let tries = [
        ("release_control_lease", json!({ "lease_id": lease })),
        (
            "release_target_reservation",
            json!({ "session_id": theirs, "reservation_id": reservation }),
        ),
        ("acquire_control_lease", lease_request(&theirs, 60_000, 0)),
        (
            "execute_action",
            json!({ "session_id": theirs, "action_id": "bob-1", "tool": "write_clipboard",
                    "arguments": { "text": "bob's" }, "mode": "background", "lease_id": lease }),
        ),
        ("get_session_events", json!({ "session_id": theirs })),
        ("pause_session", json!({ "session_id": theirs })),
    ];
    for (tool, arguments) in tries {
        let answer = intruder.call(tool, arguments).await;
        assert_eq!(refusal(&answer), "agent_not_owner", "{tool}: {answer:?}");
    }
    // Naming its own session with the first agent's reservation.
    let answer = intruder
        .call(
            "release_target_reservation",
            json!({ "session_id": own_session, "reservation_id": reservation }),
        )
        .await;
    assert!(!succeeded(&answer), "{answer:?}");
    let answer = intruder.call("emergency_stop", json!({})).await;
    assert_eq!(refusal(&answer), "host_credential_required", "{answer:?}");

    // The first agent's lease and reservation were never let go.
    let done = leased
        .execute()
        .await
        .expect("the lease and the reservation are still the first agent's")
        .verify()
        .await
        .unwrap();
    assert!(done.performed());
    // Paused by its own agent, the session is not the other agent's to
    // resume.
    let mut own_connection = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    own_connection
        .ok("pause_session", json!({ "session_id": theirs }))
        .await;
    let answer = intruder
        .call("resume_session", json!({ "session_id": theirs }))
        .await;
    assert_eq!(refusal(&answer), "agent_not_owner", "{answer:?}");
    let state = own_connection
        .ok("get_session", json!({ "session_id": theirs }))
        .await;
    assert_ne!(state["session"]["state"], "running", "{state}");
    // An onboarding run is its starter's too: not the other agent's to
    // acknowledge the emergency stop in.
    let run = own_connection
        .ok("onboarding", json!({ "action": "start" }))
        .await;
    let run = run["onboarding"]["onboardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = intruder
        .call(
            "onboarding",
            json!({ "action": "acknowledge_emergency", "onboarding_id": run }),
        )
        .await;
    assert_eq!(refusal(&answer), "agent_not_owner", "{answer:?}");
    // The host stops the server.
    let mut host = Raw::open(&sim.address, Some(&sim.host)).await.ok().unwrap();
    let stopped = host
        .ok("emergency_stop", json!({ "reason": "the host" }))
        .await;
    assert_eq!(stopped["stopped"], true, "{stopped}");
    let _ = chain.shutdown().await;
    sim.child.kill().await.unwrap();
}

/// Issue 28, item 1: between agents, the one-writer lease goes first come,
/// first served. One agent holds the lease and, on a second connection,
/// queues for it again at the highest priority the schema takes, behind
/// the other agent's request at priority 0. When it releases, the other
/// agent gets the lease: an agent cannot raise itself over the others and
/// take the desktop back at every release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cannot_jump_the_lease_queue_over_another() {
    let mut sim = listen(&["--agent", "bob"]).await;
    let bob = sim.named[0].1.clone();
    let mut bob_holds = Raw::open(&sim.address, Some(&bob)).await.ok().unwrap();
    let bob_session = bob_holds
        .ok("start_session", json!({ "objective": "bob" }))
        .await["session"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let held = bob_holds
        .ok(
            "acquire_control_lease",
            lease_request(&bob_session, 60_000, 0),
        )
        .await;
    let lease = held["lease"]["leaseId"].as_str().unwrap().to_owned();

    let mut alice = Raw::open(&sim.address, Some(&sim.agent))
        .await
        .ok()
        .unwrap();
    let alice_session = alice
        .ok("start_session", json!({ "objective": "alice" }))
        .await["session"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let alice_waits = alice
        .start(
            "tools/call",
            json!({ "name": "acquire_control_lease",
                    "arguments": lease_request(&alice_session, 60_000, 0) }),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut bob_again = Raw::open(&sim.address, Some(&bob)).await.ok().unwrap();
    let _bob_waits = bob_again
        .start(
            "tools/call",
            json!({ "name": "acquire_control_lease",
                    "arguments": lease_request(&bob_session, 60_000, 9_007_199_254_740_991) }),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    bob_holds
        .ok("release_control_lease", json!({ "lease_id": lease }))
        .await;
    let granted = tokio::time::timeout(Duration::from_secs(10), alice.answer(alice_waits))
        .await
        .expect("the agent that queued first got the lease");
    assert!(succeeded(&granted), "{granted:?}");
    let granted = granted.unwrap();
    assert_eq!(
        granted["result"]["structuredContent"]["lease"]["sessionId"], alice_session,
        "{granted}"
    );
    sim.child.kill().await.unwrap();
}

/// Issue 28, item 2: one agent's credential holds at most 32 connections
/// at once, so an agent that opens many more cannot take the descriptors
/// the approver needs: past its share, its connections are closed, and
/// the approver still connects and is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agent_holding_many_connections_leaves_room_for_the_approver() {
    let mut sim = listen(&[]).await;
    let mut held = Vec::new();
    for _ in 0..40 {
        if let Ok(raw) = Raw::open(&sim.address, Some(&sim.agent)).await {
            held.push(raw);
        }
    }
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut answered = 0;
    let listed = |answer: Option<Value>| answer.is_some_and(|a| a.get("result").is_some());
    for raw in &mut held {
        if listed(raw.request("tools/list", json!({})).await) {
            answered += 1;
        }
    }
    assert!(
        (1..=32).contains(&answered),
        "{answered} of 40 connections of one agent still answered"
    );
    let mut approver = Raw::open(&sim.address, Some(&sim.approver))
        .await
        .ok()
        .expect("the approver connects");
    assert!(listed(approver.request("tools/list", json!({})).await));
    sim.child.kill().await.unwrap();
}
