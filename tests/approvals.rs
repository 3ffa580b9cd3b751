//! A person sees what waits, decides once, and the waiting session acts on
//! the decision: inspection with the seal verified, sealed decisions beside
//! the checkpoint, resume or denial exactly once, and the
//! `computer-use-approvals` command over a checkpoint directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::protocol::{
    Approval, ChainOutcome, CheckpointId, CheckpointStore, Decision, FileCheckpointStore,
    SealingKey, decide, decision_of, inspect, pending, wait_for_decision,
};
use common::*;

const KEY: &[u8; 32] = b"approvals-test-key-32-bytes-long";

async fn suspended(rig: &Rig, store: &dyn CheckpointStore, id: &str) -> CheckpointId {
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    match rig.session.run(action(id)).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending.suspend(store).unwrap(),
        _ => panic!("expected approval to be required"),
    }
}

fn store(dir: &tempfile::TempDir) -> FileCheckpointStore {
    FileCheckpointStore::new(dir.path(), SealingKey::new(KEY.to_vec()).unwrap()).unwrap()
}

#[tokio::test]
async fn a_person_sees_what_waits_before_deciding() {
    let rig = rig();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let id = suspended(&rig, &store, "look-1").await;
    let view = inspect(&store, &id).unwrap();
    assert_eq!(view.action_id, "look-1");
    assert_eq!(view.tool, "write_clipboard");
    assert_eq!(view.session_id, SESSION);
    assert_eq!(view.principal_id, PRINCIPAL);
    assert_eq!(view.target_app_id.as_deref(), Some(APP));
    assert_eq!(view.policy_digest, POLICY);
    assert_eq!(view.decision, None);
    assert_eq!(pending(&store).unwrap().len(), 1);
    // Tampered: the seal fails on read, and nothing is shown as sound.
    let path = dir.path().join(format!("{id}.checkpoint"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("write_clipboard", "delete_file")).unwrap();
    assert!(inspect(&store, &id).is_err());
    assert!(pending(&store).is_err());
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

#[tokio::test]
async fn a_decision_is_for_this_action_recorded_once_and_sealed() {
    let rig = rig();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let id = suspended(&rig, &store, "decide-1").await;
    let view = inspect(&store, &id).unwrap();
    // An approval of other digests is refused to the person making it.
    let wrong = Approval::runtime_held(&view.action_id, "0".repeat(64), &view.policy_digest);
    assert!(decide(&store, &id, &Decision::Approve(wrong)).is_err());
    let right = Approval::runtime_held(&view.action_id, &view.action_digest, &view.policy_digest);
    decide(&store, &id, &Decision::Approve(right.clone())).unwrap();
    let again = decide(
        &store,
        &id,
        &Decision::Deny {
            reason: "changed my mind".into(),
        },
    );
    assert!(
        matches!(again, Err(ComputerUseError::Checkpoint { .. })),
        "{again:?}"
    );
    assert_eq!(
        decision_of(&store, &id).unwrap(),
        Some(Decision::Approve(right))
    );
    // A decision file written without the key is not a decision.
    let forged_dir = tempfile::tempdir().unwrap();
    let forged_store = self::store(&forged_dir);
    let forged_id = suspended(&rig, &forged_store, "decide-2").await;
    std::fs::write(
        forged_dir.path().join(format!("{forged_id}.decision")),
        r#"{"body":{"checkpointId":"x","deny":{"reason":"r"}},"seal":"00"}"#,
    )
    .unwrap();
    assert!(decision_of(&forged_store, &forged_id).is_err());
}

#[tokio::test]
async fn the_waiting_session_resumes_once_on_an_approval_and_ends_on_a_denial() {
    let rig = rig();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    // No decision yet: refused, nothing changes.
    let id = suspended(&rig, &store, "wait-1").await;
    assert!(matches!(
        rig.session.resume_decided(&store, &id),
        Err(ComputerUseError::Checkpoint { .. })
    ));
    let view = inspect(&store, &id).unwrap();
    let grant = rig.runtime.grant(&view.action_digest);
    decide(
        &store,
        &id,
        &Decision::Approve(Approval::with_grant(
            &view.action_id,
            &view.action_digest,
            &view.policy_digest,
            &grant,
        )),
    )
    .unwrap();
    let done = rig
        .session
        .resume_decided(&store, &id)
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    assert!(rig.session.resume_decided(&store, &id).is_err(), "once");
    assert_eq!(rig.runtime.mutations(), 1);
    // Denied: a typed end, the checkpoint retired, no runtime call.
    let denied = suspended(&rig, &store, "wait-2").await;
    decide(
        &store,
        &denied,
        &Decision::Deny {
            reason: "not today".into(),
        },
    )
    .unwrap();
    let reserves = rig.runtime.count(Call::Reserve);
    let err = rig.session.resume_decided(&store, &denied).err().unwrap();
    assert!(
        matches!(&err, ComputerUseError::Denied { action_id, reason } if action_id == "wait-2" && reason == "not today"),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Reserve), reserves);
    assert!(store.ids().unwrap().iter().all(|i| i != &denied), "retired");
}

#[tokio::test]
async fn waiting_for_a_decision_is_bounded() {
    let rig = rig();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let id = suspended(&rig, &store, "poll-1").await;
    let none = wait_for_decision(
        &store,
        &id,
        Duration::from_millis(5),
        Duration::from_millis(30),
    )
    .await;
    assert_eq!(none.unwrap(), None);
    let view = inspect(&store, &id).unwrap();
    let (found, ()) = tokio::join!(
        wait_for_decision(
            &store,
            &id,
            Duration::from_millis(5),
            Duration::from_secs(30)
        ),
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            decide(
                &store,
                &id,
                &Decision::Deny {
                    reason: view.action_id.clone(),
                },
            )
            .unwrap();
        }
    );
    assert!(matches!(found.unwrap(), Some(Decision::Deny { .. })));
}

#[tokio::test]
async fn the_command_lists_shows_and_records_decisions() {
    let rig = rig();
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let first = suspended(&rig, &store, "cli-1").await;
    let second = suspended(&rig, &store, "cli-2").await;
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_computer-use-approvals"))
            .args(args)
            .env("ADK_CHECKPOINT_KEY", std::str::from_utf8(KEY).unwrap())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let store_dir = dir.path().to_str().unwrap();
    let (ok, listed, _) = run(&["list", "--store", store_dir]);
    assert!(
        ok && listed.contains("cli-1") && listed.contains("cli-2") && listed.contains("waiting"),
        "{listed}"
    );
    let view = inspect(&store, &first).unwrap();
    let (ok, shown, _) = run(&["show", first.as_str(), "--store", store_dir]);
    assert!(
        ok && shown.contains(&view.action_digest) && shown.contains(&view.policy_digest),
        "{shown}"
    );
    let (ok, _, _) = run(&[
        "approve",
        first.as_str(),
        "--store",
        store_dir,
        "--runtime-held",
    ]);
    assert!(ok);
    let (ok, _, _) = run(&[
        "deny",
        second.as_str(),
        "--store",
        store_dir,
        "--reason",
        "wrong window",
    ]);
    assert!(ok);
    let (ok, _, err) = run(&[
        "approve",
        second.as_str(),
        "--store",
        store_dir,
        "--runtime-held",
    ]);
    assert!(
        !ok && err.contains("already"),
        "a decision is made once: {err}"
    );
    let (ok, _, err) = run(&["approve", first.as_str(), "--store", store_dir]);
    assert!(!ok && err.contains("exactly one"), "{err}");
    // The agent acts on what the person decided.
    assert!(matches!(
        decision_of(&store, &first).unwrap(),
        Some(Decision::Approve(_))
    ));
    assert!(matches!(
        rig.session.resume_decided(&store, &second),
        Err(ComputerUseError::Denied { .. })
    ));
    // Without the key, nothing is shown.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_computer-use-approvals"))
        .args(["list", "--store", store_dir])
        .env_remove("ADK_CHECKPOINT_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
}
