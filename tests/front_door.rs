//! What a new user meets first: bad input gets a clear error before any
//! round trip, a server that does not start or does not speak is named and
//! timed out, and each error means one thing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use adk_computer_use::ComputerUseError;
use adk_computer_use::eval::{FileJournal, read_journal};
use adk_computer_use::runtime::mcp::{ComputerUseMcpRuntime, McpRuntimeConfig};
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
