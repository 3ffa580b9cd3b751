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

async fn spawn(parts: &[String], config: McpRuntimeConfig) -> Arc<ComputerUseMcpRuntime> {
    let mut command = tokio::process::Command::new(&parts[0]);
    command
        .args(&parts[1..])
        .env("COMPUTER_USE_PRINCIPAL_ID", PRINCIPAL)
        .env("COMPUTER_USE_ACTIVE_PROFILE", "v8-safe")
        .env("V8_PEER_QUIET", "1");
    let runtime = ComputerUseMcpRuntime::spawn(command, config)
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
    let identity = VerifiedIdentity::new(PRINCIPAL, "tenant-upstream").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"]).unwrap();
    Session::builder(Arc::clone(runtime), authorizer)
        .agent_id("conformance")
        .target(FAKE_APP, Some(WindowId::Number(FAKE_WINDOW)))
        .build()
        .unwrap()
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
    let untargeted = |id: &str| {
        ProposedAction::new(
            "write_clipboard",
            json!({ "text": id }),
            ExecutionMode::Background,
        )
        .with_action_id(id)
        .with_data_labels([DataLabel::Public])
    };
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
