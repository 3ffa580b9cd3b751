//! Against upstream's own server: the real `computer-use-mcp` v8 over its
//! deterministic fake desktop (`../shared/v8-peer`).
//!
//! Set `ADK_UPSTREAM_SERVER` to the command that starts it on stdio (for
//! example `/path/to/v8-peer/serve.sh`); `.ci/run` installs it and sets
//! this. Without the variable these tests say so and check nothing; with
//! it, a server that does not answer fails them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::sync::Arc;

use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{ChainOutcome, Session};
use adk_computer_use::contracts::*;
use adk_computer_use::digest::{sha256_hex, sha256_prefixed};
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use::{ComputerUseError, VerificationOutcome};
use serde_json::json;

const PRINCIPAL: &str = "local-user";

/// The command line of the upstream server, if one was given.
fn server() -> Option<Vec<String>> {
    let line = std::env::var("ADK_UPSTREAM_SERVER").ok()?;
    let parts: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
    (!parts.is_empty()).then_some(parts)
}

/// The command that starts upstream's server for [`PRINCIPAL`].
fn command(parts: &[String]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(&parts[0]);
    command
        .args(&parts[1..])
        .env("COMPUTER_USE_PRINCIPAL_ID", PRINCIPAL)
        .env("COMPUTER_USE_ACTIVE_PROFILE", "v8-safe")
        .env("V8_PEER_QUIET", "1");
    command
}

async fn spawn(parts: &[String], config: McpRuntimeConfig) -> Arc<ComputerUseMcpRuntime> {
    let runtime = ComputerUseMcpRuntime::spawn(command(parts), config)
        .await
        .expect("ADK_UPSTREAM_SERVER is set, and the server must answer");
    runtime
        .start_session(Some("adk-computer-use conformance"), None)
        .await
        .expect("upstream starts a session from a request with no null arguments");
    Arc::new(runtime)
}

/// Leases that live five minutes, and a wait of `wait_ms` for the next one:
/// a lease left active shows as a timed-out wait, not as a slow run.
fn long_leases(wait_ms: u64) -> McpRuntimeConfig {
    let mut config = McpRuntimeConfig::new(PRINCIPAL)
        .capability_tool("write_clipboard")
        .lease_wait(wait_ms);
    config.lease_ttl_ms = 300_000;
    config
}

fn session(runtime: &Arc<ComputerUseMcpRuntime>) -> Session<ComputerUseMcpRuntime> {
    session_of(runtime, "conformance")
}

// Upstream's `DeterministicFakeDesktop` shows one window, and its shadow
// observations carry none of it (they answer `{fake: true, effectCount}`),
// so the target evidence it validates against is its documented state.
const FAKE_APP: &str = "app.fake";
const FAKE_WINDOW: u64 = 7;

fn fake_target() -> TargetEvidence {
    TargetEvidence {
        platform: std::env::consts::OS.into(),
        app_id: FAKE_APP.into(),
        pid: Some(4242),
        window_id: Some(WindowId::Number(FAKE_WINDOW)),
        window_title_digest: Some(sha256_hex("Fake Document")),
        display_id: Some("display-1".into()),
        role: None,
        label_digest: None,
        bounds: None,
        observation_id: "conformance".into(),
        screenshot_hash: Some("sha256:fake-screen-1".into()),
        ui_tree_revision: Some("fake-tree-1".into()),
        confidence: 1.0,
        captured_at: adk_computer_use::clock::format_rfc3339(time::OffsetDateTime::now_utc())
            .unwrap(),
    }
}

fn write_clipboard(id: &str, text: &str) -> ProposedAction {
    ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_action_id(id)
    .with_target(fake_target())
    .with_data_labels([DataLabel::Public])
    .with_postcondition(
        ActionPostcondition::try_from(PostconditionFields::UiElement {
            role: Some("text".into()),
            label: Some("clipboard".into()),
            exists: true,
            value_digest: Some(sha256_prefixed(text)),
        })
        .unwrap(),
    )
}

#[tokio::test]
#[needs(upstream)]
async fn one_session_runs_100_governed_actions_without_waiting_on_a_lease_ttl() {
    let parts =
        server().expect("ADK_UPSTREAM_SERVER is not set: this test needs upstream's server");
    // Leases live five minutes, and a second acquire may wait five seconds:
    // an action that left its lease active would make the next one time out.
    let runtime = spawn(&parts, long_leases(5_000)).await;
    let session = session(&runtime);
    for n in 0..100 {
        let id = format!("upstream-{n}");
        match session.run(write_clipboard(&id, &id)).await {
            Ok(ChainOutcome::Completed(done)) => {
                assert!(done.performed(), "{id}");
                // The server's own check, read from its events, agrees
                // with the digest this action proposed.
                assert_eq!(done.outcome(), &VerificationOutcome::Verified, "{id}");
            }
            Ok(ChainOutcome::NeedsApproval(_)) => panic!("{id}: upstream asked for approval"),
            Ok(ChainOutcome::Blocked(b)) => {
                panic!("{id}: blocked: {} {:?}", b.blocker(), b.reasons())
            }
            Err(err) => panic!("{id}: {err}"),
        }
    }
    let stats = session.shutdown().await;
    assert_eq!(stats.leases.explicit_released, 100, "{stats:?}");
    assert_eq!(stats.reservations.explicit_released, 100, "{stats:?}");
    assert_eq!(stats.leaked(), 0, "{stats:?}");
    let events = runtime.all_session_events().await.unwrap();
    // The governed actions' events (shadow observations commit too).
    let count = |kind: &str| {
        events
            .iter()
            .filter(|e| e.event_type == kind)
            .filter(|e| {
                e.action_id
                    .as_deref()
                    .is_some_and(|id| id.starts_with("upstream-"))
            })
            .count()
    };
    assert_eq!(count("action.committed"), 100);
    assert_eq!(count("action.verified"), 100);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
#[needs(upstream)]
async fn upstream_announces_no_clipboard_check_so_nothing_is_derived_and_the_reason_says_so() {
    let parts =
        server().expect("ADK_UPSTREAM_SERVER is not set: this test needs upstream's server");
    let runtime = spawn(&parts, long_leases(5_000)).await;
    let session = session(&runtime);
    let mut action = write_clipboard("upstream-underived", "no check announced");
    action.postcondition = None;
    let done = match session.run(action).await.unwrap() {
        ChainOutcome::Completed(done) => done,
        _ => panic!("expected upstream to run the write"),
    };
    assert!(done.performed());
    // A guessed postcondition would have made upstream look for an element
    // in the window and end the performed write indeterminate.
    let VerificationOutcome::CommittedUnverified { reason } = done.outcome() else {
        panic!("expected committed_unverified, got {}", done.outcome());
    };
    assert!(
        reason.contains("offers no check of write_clipboard's effect"),
        "{reason}"
    );
    let events = runtime.all_session_events().await.unwrap();
    let committed = events.iter().find(|e| {
        e.event_type == "action.committed" && e.action_id.as_deref() == Some("upstream-underived")
    });
    assert!(committed.is_some(), "upstream committed the write");
    assert_eq!(session.shutdown().await.leaked(), 0);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
#[needs(upstream)]
async fn upstreams_refusals_arrive_typed() {
    let parts =
        server().expect("ADK_UPSTREAM_SERVER is not set: this test needs upstream's server");
    let runtime = spawn(&parts, McpRuntimeConfig::new(PRINCIPAL)).await;
    // Shadow observations carry their own action id: upstream accepts them.
    let snapshot = runtime.observe_shadow("snapshot", json!({})).await.unwrap();
    assert!(snapshot.structured.is_object());
    // Secret access needs approval under upstream's default policy, shadow
    // mode too: a typed refusal that keeps the server's code.
    let err = runtime
        .observe_shadow("read_clipboard", json!({}))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(&err, ComputerUseError::Refused { code, .. } if !code.is_empty()),
        "{err:?}"
    );
    eprintln!("read_clipboard in shadow mode: {err}");
    runtime.shutdown().await.unwrap();
}

/// The resource an action names is our server's extension: upstream
/// derives the resource from its file tools' arguments alone, so a file
/// check on any other tool is refused at preview (`policy_denied`), before
/// anything is reserved, as `ProposedAction::with_resource` documents.
#[tokio::test]
#[needs(upstream)]
async fn upstream_refuses_a_file_check_named_as_another_tools_resource() {
    let parts =
        server().expect("ADK_UPSTREAM_SERVER is not set: this test needs upstream's server");
    let runtime = spawn(&parts, long_leases(5_000)).await;
    let session = session(&runtime);
    let mut action = write_clipboard("resource-1", "named file");
    action.postcondition = Some(
        ActionPostcondition::try_from(PostconditionFields::Filesystem {
            path: "/tmp/adk-named.txt".into(),
            exists: true,
            content_digest: Some(sha256_prefixed("named file")),
        })
        .unwrap(),
    );
    let action = action.with_resource(ActionResourceContext {
        filesystem_path: Some("/tmp/adk-named.txt".into()),
        ..ActionResourceContext::default()
    });
    let err = session.run(action).await.err().unwrap();
    assert!(
        matches!(&err, ComputerUseError::Refused { operation, code, .. }
            if *operation == "preview_action" && code == "policy_denied"),
        "{err:?}"
    );
    assert_eq!(session.shutdown().await.leaked(), 0);
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
#[needs(upstream)]
async fn a_second_writer_waits_a_bounded_time_and_its_cancelled_request_leaves_the_queue() {
    let parts =
        server().expect("ADK_UPSTREAM_SERVER is not set: this test needs upstream's server");
    let runtime = spawn(&parts, long_leases(300)).await;
    let first = session(&runtime);
    let second = session(&runtime);
    // The first writer holds the one-writer lease.
    let previewed = first
        .observe()
        .await
        .unwrap()
        .preview(&write_clipboard("queue-a", "a"))
        .await
        .unwrap();
    let adk_computer_use::chain::Route::Allowed(approved) = previewed.route() else {
        panic!("expected the first action to be allowed");
    };
    let leased = approved.reserve().await.unwrap().lease().await.unwrap();
    // The second (no target, so no reservation stands in its way) queues
    // for the lease, and gives up after its bounded wait.
    let err = second.run(untargeted("queue-b")).await.err().unwrap();
    assert!(
        matches!(&err, ComputerUseError::TimedOut { operation, waited_ms: 300 } if operation == "acquire_control_lease"),
        "{err}"
    );
    // The first finishes and gives its lease back.
    let done = leased.execute().await.unwrap().verify().await.unwrap();
    assert!(done.performed());
    // The cancelled request left upstream's queue: had the server granted
    // it the lease, nobody would release it and this would time out too.
    match second.run(untargeted("queue-c")).await {
        Ok(ChainOutcome::Completed(done)) => assert!(done.performed()),
        Ok(_) => panic!("the retry was not allowed"),
        Err(err) => panic!("the retry did not get the lease: {err}"),
    }
    runtime.shutdown().await.unwrap();
}

/// `spawn`, with every call counted on the wire into `trips`.
async fn spawn_counted(
    parts: &[String],
    config: McpRuntimeConfig,
    trips: &adk_computer_use::mcp::RoundTrips,
) -> Arc<ComputerUseMcpRuntime> {
    let child =
        adk_computer_use::mcp::rmcp::transport::TokioChildProcess::new(command(parts)).unwrap();
    let runtime = ComputerUseMcpRuntime::connect(
        adk_computer_use::mcp::CountedTransport::new(child, trips.clone()),
        config,
    )
    .await
    .expect("ADK_UPSTREAM_SERVER is set, and the server must answer");
    runtime
        .start_session(Some("adk-computer-use task lease"), None)
        .await
        .unwrap();
    Arc::new(runtime)
}

#[tokio::test]
#[needs(upstream)]
async fn a_task_lease_on_upstreams_server_is_one_acquire_and_one_release_for_the_whole_task() {
    use adk_computer_use::chain::TaskLeaseTerms;
    use adk_computer_use::eval::{ComputerUseEvaluator, ViolationClass};
    let parts =
        server().expect("ADK_UPSTREAM_SERVER is not set: this test needs upstream's server");
    let trips = adk_computer_use::mcp::RoundTrips::new();
    let runtime = spawn_counted(&parts, long_leases(300), &trips).await;
    let session = session(&runtime);
    let other = session_of(&runtime, "other-agent");
    let terms = TaskLeaseTerms::background(30, std::time::Duration::from_secs(120)).unwrap();
    let mut task = session.lease_task(terms).await.unwrap();
    assert_eq!(task.lease().action_budget, 30);
    assert_eq!(task.lease().boundaries.app_ids, [FAKE_APP]);
    for n in 0..30 {
        let id = format!("task-{n}");
        match session
            .run_under(&mut task, write_clipboard(&id, &id))
            .await
        {
            Ok(ChainOutcome::Completed(done)) => {
                assert_eq!(done.outcome(), &VerificationOutcome::Verified, "{id}");
                assert_eq!(done.lease_id(), task.lease().lease_id, "{id}");
            }
            Ok(_) => panic!("{id}: not allowed"),
            Err(err) => panic!("{id}: {err}"),
        }
        if n == 0 {
            // Another writer waits for the task, not for each action.
            let err = other.run(untargeted("other-during")).await.err().unwrap();
            assert!(
                matches!(&err, ComputerUseError::TimedOut { operation, .. } if operation == "acquire_control_lease"),
                "{err}"
            );
        }
    }
    // The budget is spent: the next action is refused before execute_action
    // is sent, and the server revokes nothing.
    let sent = |trips: &adk_computer_use::mcp::RoundTrips, tool: &str| {
        trips
            .rounds()
            .concat()
            .iter()
            .filter(|c| *c == tool)
            .count()
    };
    let executes = sent(&trips, "execute_action");
    let err = session
        .run_under(&mut task, write_clipboard("task-30", "task-30"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.field(), Some("actionsUsed"), "{err}");
    assert_eq!(sent(&trips, "execute_action"), executes, "nothing executed");
    task.release().await.unwrap();
    assert_eq!(
        sent(&trips, "acquire_control_lease"),
        2,
        "the task's and the waiter's"
    );
    assert_eq!(sent(&trips, "release_control_lease"), 1, "the task's alone");
    // The desktop is free again for the other writer.
    match other.run(untargeted("other-after")).await {
        Ok(ChainOutcome::Completed(done)) => assert!(done.performed()),
        Ok(_) => panic!("not allowed"),
        Err(err) => panic!("the other writer did not get the lease: {err}"),
    }
    // Upstream's own record: every mutation ran under a lease, none twice,
    // each verified.
    let events = runtime.all_session_events().await.unwrap();
    let report = ComputerUseEvaluator::new().evaluate(&events);
    assert!(
        report
            .of_class(ViolationClass::MutationWithoutLease)
            .is_empty(),
        "{:?}",
        report.violations
    );
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let task_lease = events
        .iter()
        .filter(|e| e.event_type == "action.started")
        .filter(|e| {
            e.action_id
                .as_deref()
                .is_some_and(|id| id.starts_with("task-"))
        })
        .filter_map(|e| {
            e.payload
                .as_ref()?
                .get("leaseId")?
                .as_str()
                .map(str::to_owned)
        })
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(
        task_lease.len(),
        1,
        "one lease for the whole task: {task_lease:?}"
    );
    let stats = session.shutdown().await;
    assert_eq!(stats.leases.explicit_released, 1, "{stats:?}");
    assert_eq!(stats.reservations.explicit_released, 31, "{stats:?}");
    assert_eq!(stats.leaked(), 0, "{stats:?}");
    assert_eq!(other.shutdown().await.leaked(), 0);
    runtime.shutdown().await.unwrap();
}

/// A session like [`session`], acting as `agent`.
fn session_of(runtime: &Arc<ComputerUseMcpRuntime>, agent: &str) -> Session<ComputerUseMcpRuntime> {
    let identity = VerifiedIdentity::new(PRINCIPAL, "tenant-upstream").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"]).unwrap();
    Session::builder(Arc::clone(runtime), authorizer)
        .agent_id(agent)
        .target(FAKE_APP, Some(WindowId::Number(FAKE_WINDOW)))
        .build()
        .unwrap()
}

/// A clipboard write with no target: no reservation stands in its way, so
/// it waits for the lease alone.
fn untargeted(id: &str) -> ProposedAction {
    ProposedAction::new(
        "write_clipboard",
        json!({ "text": id }),
        ExecutionMode::Background,
    )
    .with_action_id(id)
    .with_data_labels([DataLabel::Public])
}

/// One line on the wire, as recorded: whether the server wrote it, and it.
type WireLine = (bool, Vec<u8>);

/// Copies lines from `from` to `to`, recording each into `log`.
async fn tee_lines(
    from: impl tokio::io::AsyncRead + Unpin,
    mut to: impl tokio::io::AsyncWrite + Unpin,
    from_server: bool,
    log: Arc<std::sync::Mutex<Vec<WireLine>>>,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let mut from = tokio::io::BufReader::new(from);
    loop {
        let mut line = Vec::new();
        match from.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        log.lock().unwrap().push((from_server, line.clone()));
        if to.write_all(&line).await.is_err() || to.flush().await.is_err() {
            break;
        }
    }
}

/// Upstream's own wire, recorded while governed actions ran (through the
/// adapter's line transport), then replayed into rmcp's transport and the
/// adapter's: every message upstream wrote reads the same through both.
#[tokio::test]
#[needs(upstream)]
async fn upstreams_own_wire_reads_the_same_through_the_adapters_transport_as_through_rmcps() {
    use adk_computer_use::chain::TaskLeaseTerms;
    use adk_computer_use::mcp::JsonLines;
    use adk_computer_use::mcp::rmcp::RoleClient;
    use adk_computer_use::mcp::rmcp::service::TxJsonRpcMessage;
    use adk_computer_use::mcp::rmcp::transport::Transport;
    use adk_computer_use::mcp::rmcp::transport::async_rw::AsyncRwTransport;
    use tokio::io::AsyncWriteExt;
    let parts =
        server().expect("ADK_UPSTREAM_SERVER is not set: this test needs upstream's server");
    // Record: the server's stdio, teed both ways, under a runtime that
    // speaks through the line transport.
    let mut child = command(&parts)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (child_in, child_out) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
    let (client_end, tee_end) = tokio::io::duplex(1 << 20);
    let (tee_read, tee_write) = tokio::io::split(tee_end);
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let incoming = tokio::spawn(tee_lines(child_out, tee_write, true, Arc::clone(&log)));
    let outgoing = tokio::spawn(tee_lines(tee_read, child_in, false, Arc::clone(&log)));
    let (read, write) = tokio::io::split(client_end);
    let runtime = ComputerUseMcpRuntime::connect(JsonLines::new(read, write), long_leases(5_000))
        .await
        .unwrap();
    runtime
        .start_session(Some("adk-computer-use wire replay"), None)
        .await
        .unwrap();
    let runtime = Arc::new(runtime);
    let session = session(&runtime);
    for n in 0..3 {
        let id = format!("wire-{n}");
        let outcome = session.run(write_clipboard(&id, &id)).await.unwrap();
        assert!(matches!(outcome, ChainOutcome::Completed(done) if done.performed()));
    }
    let terms = TaskLeaseTerms::background(2, std::time::Duration::from_secs(60)).unwrap();
    let mut task = session.lease_task(terms).await.unwrap();
    for n in 0..2 {
        let id = format!("wire-task-{n}");
        let outcome = session
            .run_under(&mut task, write_clipboard(&id, &id))
            .await
            .unwrap();
        assert!(matches!(outcome, ChainOutcome::Completed(done) if done.performed()));
    }
    task.release().await.unwrap();
    // A refusal, as upstream writes one.
    assert!(
        runtime
            .observe_shadow("read_clipboard", json!({}))
            .await
            .is_err()
    );
    assert_eq!(session.shutdown().await.leaked(), 0);
    runtime.shutdown().await.unwrap();
    incoming.await.unwrap();
    outgoing.await.unwrap();
    child.wait().await.unwrap();
    let log = std::mem::take(&mut *log.lock().unwrap());

    // Replay: each request sent through the adapter's transport (so it
    // knows the tool calls pending), each answer fed to both.
    let ((ours_read, ours_write), ours_server) = {
        let (client, server) = tokio::io::duplex(16 << 20);
        (tokio::io::split(client), tokio::io::split(server))
    };
    let ((their_read, their_write), theirs_server) = {
        let (client, server) = tokio::io::duplex(16 << 20);
        (tokio::io::split(client), tokio::io::split(server))
    };
    let mut ours = JsonLines::new(ours_read, ours_write);
    let mut theirs = AsyncRwTransport::<RoleClient, _, _>::new_client(their_read, their_write);
    let (_ours_heard, mut ours_says) = ours_server;
    let (_theirs_heard, mut theirs_says) = theirs_server;
    let (mut tool_answers, mut pending) = (0u64, std::collections::HashSet::new());
    for (from_server, line) in &log {
        if !from_server {
            let message: TxJsonRpcMessage<RoleClient> = serde_json::from_slice(line).unwrap();
            let value = serde_json::to_value(&message).unwrap();
            if value["method"] == "tools/call" {
                pending.insert(value["id"].clone());
            }
            ours.send(message).await.unwrap();
            continue;
        }
        ours_says.write_all(line).await.unwrap();
        theirs_says.write_all(line).await.unwrap();
        let wait = std::time::Duration::from_secs(60);
        let mine = tokio::time::timeout(wait, ours.receive()).await.unwrap();
        let rmcps = tokio::time::timeout(wait, theirs.receive()).await.unwrap();
        let (mine, rmcps) = (
            serde_json::to_value(mine.expect("ours read a message")).unwrap(),
            serde_json::to_value(rmcps.expect("rmcp's read a message")).unwrap(),
        );
        assert_eq!(
            mine,
            rmcps,
            "upstream wrote {}",
            String::from_utf8_lossy(line)
        );
        if pending.remove(&mine["id"]) && mine.get("result").is_some() {
            tool_answers += 1;
        }
    }
    // Five governed actions of at least five tool calls each, a lease, a
    // refusal: the answers a tool call reads the typed way were among them.
    assert!(tool_answers >= 25, "{tool_answers} tool answers replayed");
    // And every one of them was read the one-pass way.
    assert_eq!(ours.typed_reads(), tool_answers);
    eprintln!(
        "replayed {} lines upstream wrote, {tool_answers} of them tool answers",
        log.iter().filter(|(from_server, _)| *from_server).count()
    );
}
