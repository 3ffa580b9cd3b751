//! What a new user meets first: bad input gets a clear error before any
//! round trip, a server that does not start or does not speak is named and
//! timed out, and each error means one thing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use adk_computer_use::ComputerUseError;
use adk_computer_use::journal::{FileJournal, read_journal};
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
use common::*;

#[tokio::test]
async fn a_preview_lifetime_outside_the_protocols_cap_is_refused_before_the_runtime() {
    let rig = rig();
    for ms in [0, 300_001, u64::MAX] {
        let observed = rig.session.observe().await.unwrap();
        let err = observed
            .preview(&action("expires").with_expires_in_ms(ms))
            .await
            .err()
            .expect("refused");
        assert!(
            matches!(
                err,
                ComputerUseError::InvalidField {
                    field: "expiresInMs",
                    ..
                }
            ),
            "{ms}: {err}"
        );
    }
    assert_eq!(rig.runtime.count(Call::Preview), 0, "nothing was sent");
    let observed = rig.session.observe().await.unwrap();
    let _previewed = observed
        .preview(&action("expires-ok").with_expires_in_ms(300_000))
        .await
        .unwrap();
    assert_eq!(rig.runtime.count(Call::Preview), 1);
}

#[tokio::test]
async fn a_server_that_cannot_start_is_named() {
    let command = tokio::process::Command::new("/no/such/computer-use-server");
    let err = ComputerUseMcpRuntime::spawn(command, McpRuntimeConfig::new("p"))
        .await
        .err()
        .expect("nothing to start");
    match err {
        ComputerUseError::Transport { operation, .. } => {
            assert!(
                operation.contains("/no/such/computer-use-server"),
                "{operation}"
            )
        }
        other => panic!("expected a transport error naming the command, got {other}"),
    }
}

#[tokio::test]
async fn a_server_that_never_speaks_times_out_instead_of_hanging() {
    // `sleep` starts, reads nothing and answers nothing.
    let mut command = tokio::process::Command::new("sleep");
    command.arg("30");
    let config = McpRuntimeConfig::new("p").timeouts(200, 1_000);
    let started = std::time::Instant::now();
    let err = ComputerUseMcpRuntime::spawn(command, config)
        .await
        .err()
        .expect("no handshake");
    assert!(
        matches!(err, ComputerUseError::TimedOut { waited_ms: 200, .. }),
        "{err}"
    );
    // Generous: the point is "bounded", not "fast".
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn storage_failures_and_broken_chains_are_their_own_errors() {
    let dir = std::env::temp_dir().join(format!("adk-front-door-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A directory is not a journal file: that is storage, not transport.
    let err = FileJournal::open(&dir).unwrap_err();
    assert!(
        matches!(&err, ComputerUseError::Storage { path, .. } if path.contains("adk-front-door")),
        "{err}"
    );
    let err = read_journal(dir.join("missing.jsonl")).unwrap_err();
    assert_eq!(err.class(), "storage", "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_preview_whose_capability_is_for_another_operation_or_mode_stops_before_reserving() {
    use adk_computer_use::contracts::{ActionPreview, ExecutionMode};
    type Tweak = fn(&mut ActionPreview);
    let cases: [(&str, Tweak, &str); 2] = [
        (
            "capability-op",
            |p| p.capability.operation = "wirte_clipboard".into(),
            "operation",
        ),
        (
            "capability-mode",
            |p| p.capability.supported_modes = vec![ExecutionMode::Shadow],
            "supportedModes",
        ),
    ];
    for (id, tweak, field) in cases {
        let rig = rig();
        rig.runtime.script().preview = Some(std::sync::Arc::new(tweak));
        let err = rig.session.run(action(id)).await.err().expect("refused");
        assert_eq!(err.field(), Some(field), "{id}: {err}");
        assert_eq!(
            rig.runtime.count(Call::Reserve),
            0,
            "{id}: nothing reserved"
        );
        assert_eq!(rig.runtime.mutations(), 0);
    }
}

#[tokio::test]
async fn one_shutdown_closes_the_runtime_when_no_one_else_holds_it() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let clock = adk_computer_use::clock::ManualClock::new(start());
    // Two sessions over one runtime, and no other handle: the first
    // shutdown leaves the runtime to the second, the second closes it.
    let runtime = FakeRuntime::new(clock.clone());
    let closed = Arc::clone(&runtime.closed);
    let first = adk_computer_use::Session::builder(Arc::clone(&runtime), full_authorizer())
        .build()
        .unwrap();
    let second = adk_computer_use::Session::builder(runtime, full_authorizer())
        .build()
        .unwrap();
    let _ = first.shutdown().await;
    assert_eq!(
        closed.load(Ordering::SeqCst),
        0,
        "the other session still uses it"
    );
    let _ = second.shutdown().await;
    assert_eq!(
        closed.load(Ordering::SeqCst),
        1,
        "the last session closed it"
    );
    // A caller that keeps its own handle keeps the runtime open.
    let runtime = FakeRuntime::new(clock);
    let session = adk_computer_use::Session::builder(Arc::clone(&runtime), full_authorizer())
        .build()
        .unwrap();
    let _ = session.shutdown().await;
    assert_eq!(runtime.closed.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_empty_principal_is_refused_before_anything_starts() {
    let command = tokio::process::Command::new("/no/such/server");
    let err = ComputerUseMcpRuntime::spawn(command, McpRuntimeConfig::new("  "))
        .await
        .err()
        .expect("refused");
    assert_eq!(err.field(), Some("principalId"), "{err}");
}

#[tokio::test]
async fn the_simulator_runs_in_process_and_refuses_faults_that_would_end_the_process() {
    use computer_use_server::{Config, Fault, SimulatedDesktop};
    let crashing =
        SimulatedDesktop::default().with_faults([Fault::CrashAfterCommit].into_iter().collect());
    let err = adk_computer_use_testkit::spawn_simulated(
        Config::for_principal("alice"),
        crashing,
        McpRuntimeConfig::new("alice"),
    )
    .await
    .err()
    .expect("refused");
    assert_eq!(err.field(), Some("faults"), "{err}");
    let (runtime, _approver) = adk_computer_use_testkit::spawn(
        Config::for_principal("alice"),
        McpRuntimeConfig::new("alice"),
    )
    .await
    .unwrap();
    let started = runtime
        .start_session(Some("in process"), Some("group-1"))
        .await
        .unwrap();
    assert_eq!(started.principal_id, "alice");
    use adk_computer_use::runtime::ComputerUseRuntime;
    let context = runtime.session_context().unwrap();
    assert_eq!(context.session_id, started.session_id);
    assert_eq!(context.execution_group_id.as_deref(), Some("group-1"));
    runtime.shutdown().await.unwrap();
}

/// A runtime handed to an agent does not hand it the credential it was
/// built with: `Debug` redacts it, and no accessor returns it (the field is
/// private: `ui-tests/fail/read_credential.rs`).
#[test]
fn the_connection_credential_is_never_shown() {
    let config = McpRuntimeConfig::new("alice").with_credential("s3cret-approver-token");
    assert!(config.has_credential());
    let shown = format!("{config:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("redacted"), "{shown}");
}

/// The host may let `call` speak a server's own read-only tool, but never
/// one the catalogue knows: those have their own doors (the governed chain,
/// the observations). Without the host's word, such a tool is refused
/// before anything is sent.
#[tokio::test]
async fn only_the_host_widens_the_read_only_calls_and_never_to_a_known_tool() {
    for known in [
        "execute_action",
        "approve_action",
        "left_click",
        "write_clipboard",
        " ",
    ] {
        let err = McpRuntimeConfig::new("alice")
            .read_only_extension(known)
            .err()
            .unwrap_or_else(|| panic!("{known:?} is refused as an extension"));
        assert_eq!(err.field(), Some("readOnlyExtension"), "{err}");
    }
    // A runtime over the server whose host did not name `sim_stats`.
    let (client, pipe) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        use adk_computer_use::mcp::rmcp::ServiceExt;
        let server = computer_use_server::Server::new(
            computer_use_server::Config::for_principal("alice").with_stats(),
        );
        if let Ok(running) = server.service().serve(pipe).await {
            let _ = running.waiting().await;
        }
    });
    let runtime =
        adk_computer_use::ComputerUseMcpRuntime::connect(client, McpRuntimeConfig::new("alice"))
            .await
            .unwrap();
    let err = runtime
        .call("sim_stats", Default::default())
        .await
        .expect_err("refused without the host's word");
    assert_eq!(err.field(), Some("tool"), "{err}");
    runtime.shutdown().await.unwrap();
}

#[tokio::test]
async fn calling_an_observation_directly_says_it_changes_nothing_and_names_its_door() {
    let (runtime, _approver) = adk_computer_use_testkit::spawn(
        computer_use_server::Config::for_principal("alice"),
        McpRuntimeConfig::new("alice"),
    )
    .await
    .unwrap();
    runtime.start_session(Some("look"), None).await.unwrap();
    let err = runtime
        .call("list_windows", Default::default())
        .await
        .expect_err("refused");
    let message = err.to_string();
    assert!(message.contains("changes nothing"), "{message}");
    assert!(message.contains("observe_shadow"), "{message}");
    assert!(!message.contains("change state"), "{message}");
    // A tool that does change state is still refused as such.
    let err = runtime
        .call("execute_action", Default::default())
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("change state"), "{err}");
    // Through its own door it answers.
    let windows = runtime
        .observe_shadow("list_windows", serde_json::json!({}))
        .await
        .unwrap();
    assert!(
        windows.structured["windows"].is_array(),
        "{:?}",
        windows.structured
    );
    runtime.shutdown().await.unwrap();
}
