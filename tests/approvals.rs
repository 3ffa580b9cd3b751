//! A person sees what waits, decides once, and the waiting session acts on
//! the decision: inspection with the seal verified, sealed decisions beside
//! the checkpoint, resume or denial exactly once, and the
//! `computer-use-approvals` command over a checkpoint directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::{
    Approval, ApproverKey, ApproverPublicKey, ChainOutcome, CheckpointId, CheckpointRefusal,
    CheckpointStore, Decision, FileCheckpointStore, SealingKey, decide, decision_of, inspect,
    pending, wait_for_decision,
};
use common::*;

const KEY: &[u8; 32] = b"approvals-test-key-32-bytes-long";
/// The person's signing key (the agents hold only its public half).
const APPROVER: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";

fn approver() -> ApproverKey {
    ApproverKey::from_hex(APPROVER).unwrap()
}

fn public() -> ApproverPublicKey {
    approver().public()
}

/// Runs action `id` up to the approval it waits for, and suspends it.
async fn suspended(rig: &Rig, id: &str) -> CheckpointId {
    suspended_action(rig, action(id)).await
}

/// Runs `proposed` up to the approval it waits for, and suspends it.
async fn suspended_action(
    rig: &Rig,
    proposed: adk_computer_use::runtime::ProposedAction,
) -> CheckpointId {
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    match rig.session.run(proposed).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending.suspend().await.unwrap(),
        _ => panic!("expected approval to be required"),
    }
}

/// An approval of the action `view` shows, with a grant the runtime issued.
fn granted(rig: &Rig, view: &adk_computer_use::chain::CheckpointView) -> Approval {
    let grant = rig.runtime.grant(&view.action_digest);
    Approval::with_grant(
        &view.action_id,
        &view.action_digest,
        &view.policy_digest,
        &grant,
    )
}

/// An approval of the action `view` shows, held by the runtime.
fn held(view: &adk_computer_use::chain::CheckpointView) -> Approval {
    Approval::runtime_held(&view.action_id, &view.action_digest, &view.policy_digest)
}

fn store(dir: &tempfile::TempDir) -> Arc<FileCheckpointStore> {
    Arc::new(FileCheckpointStore::new(dir.path(), SealingKey::new(KEY.to_vec()).unwrap()).unwrap())
}

#[tokio::test]
async fn a_person_sees_what_waits_before_deciding() {
    let (dir, store, rig) = filed();
    let id = suspended(&rig, "look-1").await;
    let view = inspect(&*store, &id).unwrap();
    assert_eq!(view.action_id, "look-1");
    assert_eq!(view.tool, "write_clipboard");
    assert_eq!(view.session_id, SESSION);
    assert_eq!(view.principal_id, PRINCIPAL);
    assert_eq!(view.target_app_id.as_deref(), Some(APP));
    assert_eq!(view.policy_digest, POLICY);
    assert!(!view.decided);
    assert_eq!(pending(&*store).unwrap().len(), 1);
    // Tampered: the seal fails on read, and nothing is shown as sound.
    let path = dir.path().join(format!("{id}.checkpoint"));
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("write_clipboard", "delete_file")).unwrap();
    assert!(inspect(&*store, &id).is_err());
    assert!(
        pending(&*store).unwrap()[0].1.is_err(),
        "listed as unreadable, never as sound"
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

#[tokio::test]
async fn a_decision_is_for_this_action_recorded_once_and_sealed() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "decide-1").await;
    let view = inspect(&*store, &id).unwrap();
    // An approval of other digests is refused to the person making it.
    let wrong = Approval::runtime_held(&view.action_id, "0".repeat(64), &view.policy_digest);
    assert!(decide(&*store, &id, &Decision::Approve(wrong), &approver()).is_err());
    let right = held(&view);
    decide(&*store, &id, &Decision::Approve(right.clone()), &approver()).unwrap();
    let changed = deny("changed my mind");
    let again = decide(&*store, &id, &changed, &approver());
    assert_eq!(refusal_of(again), CheckpointRefusal::AlreadyDecided);
    assert_eq!(
        decision_of(&*store, &id, &public()).unwrap(),
        Some(Decision::Approve(right))
    );
    // A decision file written without the key is not a decision.
    let forged_dir = tempfile::tempdir().unwrap();
    let forged_store = self::store(&forged_dir);
    let forged_rig = rig_on(forged_store.clone());
    let forged_id = suspended(&forged_rig, "decide-2").await;
    std::fs::write(
        forged_dir.path().join(format!("{forged_id}.decision")),
        r#"{"body":{"checkpointId":"x","deny":{"reason":"r"}},"seal":"00"}"#,
    )
    .unwrap();
    assert!(decision_of(&*forged_store, &forged_id, &public()).is_err());
}

#[tokio::test]
async fn the_waiting_session_resumes_once_on_an_approval_and_ends_on_a_denial() {
    let (_dir, store, rig) = filed();
    // No decision yet: refused, nothing changes.
    let id = suspended(&rig, "wait-1").await;
    assert_eq!(
        refusal_of(rig.session.resume_decided(&id, &public()).await),
        CheckpointRefusal::NoDecisionYet
    );
    let approval = granted_at(&rig, &*store, &id);
    approve(&*store, &id, approval);
    let done = finish(rig.session.resume_decided(&id, &public()).await)
        .await
        .unwrap();
    assert!(done.performed());
    assert!(
        rig.session.resume_decided(&id, &public()).await.is_err(),
        "once"
    );
    assert_eq!(rig.runtime.mutations(), 1);
    // Denied: a typed end, the checkpoint retired, no runtime call.
    let denied = suspended(&rig, "wait-2").await;
    let not_today = deny("not today");
    decide(&*store, &denied, &not_today, &approver()).unwrap();
    let reserves = rig.runtime.count(Call::Reserve);
    let err = err_of(rig.session.resume_decided(&denied, &public()).await);
    assert!(
        matches!(&err, ComputerUseError::Denied { action_id, reason } if action_id == "wait-2" && reason == "not today"),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Reserve), reserves);
    assert!(store.ids().unwrap().iter().all(|i| i != &denied), "retired");
}

#[tokio::test]
async fn waiting_for_a_decision_is_bounded() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "poll-1").await;
    let none = wait_for_decision(
        store.clone(),
        &id,
        &public(),
        Duration::from_millis(5),
        Duration::from_millis(30),
    )
    .await;
    assert_eq!(none.unwrap(), None);
    let view = inspect(&*store, &id).unwrap();
    let key = public();
    // The agent waits through its session, holding neither the store nor
    // its key.
    let (found, ()) = tokio::join!(
        rig.session
            .wait_for_decision(&id, &key, Duration::from_millis(5), Duration::from_secs(30)),
        async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let deny = Decision::Deny {
                reason: view.action_id.clone(),
            };
            decide(&*store, &id, &deny, &approver()).unwrap();
        }
    );
    assert!(matches!(found.unwrap(), Some(Decision::Deny { .. })));
}

#[tokio::test]
async fn the_command_lists_shows_and_records_decisions() {
    let (dir, store, rig) = filed();
    let first = suspended(&rig, "cli-1").await;
    let second = suspended(&rig, "cli-2").await;
    let run = |args: &[&str]| {
        let out = approvals_command()
            .args(args)
            .env("ADK_CHECKPOINT_KEY", std::str::from_utf8(KEY).unwrap())
            .env("ADK_APPROVER_KEY", APPROVER)
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
    let view = inspect(&*store, &first).unwrap();
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
        decision_of(&*store, &first, &public()).unwrap(),
        Some(Decision::Approve(_))
    ));
    assert!(matches!(
        rig.session.resume_decided(&second, &public()).await,
        Err(ComputerUseError::Denied { .. })
    ));
    // Without the key, nothing is shown.
    let out = approvals_command()
        .args(["list", "--store", store_dir])
        .env_remove("ADK_CHECKPOINT_KEY")
        .output()
        .unwrap();
    assert!(!out.status.success());
}

/// Review findings: a recorded decision is the only way on; the agent's
/// own keys cannot make one; a denial retires only its own session's
/// checkpoint; the command shows model-controlled text escaped.
#[tokio::test]
async fn a_recorded_decision_cannot_be_overridden_or_forged_by_the_agent() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "override-1").await;
    let view = inspect(&*store, &id).unwrap();
    decide(&*store, &id, &deny("no"), &approver()).unwrap();
    // The agent tries to resume with an approval it built itself.
    let own = held(&view);
    assert_eq!(
        refusal_of(rig.session.resume(&id, own.clone()).await),
        CheckpointRefusal::DecisionRecorded
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    // A decision signed with any key but the approver's is no decision,
    // even written by someone who holds the store's sealing key.
    let other = suspended(&rig, "override-2").await;
    let agents_key = ApproverKey::from_hex(&"11".repeat(32)).unwrap();
    let own = held_at(&*store, &other);
    decide(&*store, &other, &Decision::Approve(own), &agents_key).unwrap();
    assert!(rig.session.resume_decided(&other, &public()).await.is_err());
    assert_eq!(rig.runtime.mutations(), 0);
}

#[tokio::test]
async fn a_denial_retires_only_the_checkpoint_of_its_own_agent() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "mine-1").await;
    decide(&*store, &id, &deny("no"), &approver()).unwrap();
    let stranger = executor(&rig.runtime, rig.clock.clone())
        .agent_id("someone-else")
        .checkpoints(store.clone())
        .build()
        .unwrap();
    assert!(matches!(
        refusal_of(stranger.resume_decided(&id, &public()).await),
        CheckpointRefusal::OtherAgent { .. }
    ));
    assert!(
        store.ids().unwrap().contains(&id),
        "still waiting for its own agent"
    );
    assert!(matches!(
        rig.session.resume_decided(&id, &public()).await,
        Err(ComputerUseError::Denied { .. })
    ));
}

/// A person may approve after the envelope expired: the same action is
/// previewed again and continues only if both digests are unchanged.
#[tokio::test]
async fn an_approval_outlives_the_envelope_and_never_re_approves_a_change() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "late-1").await;
    let approval = granted_at(&rig, &*store, &id);
    // After lunch: the 30-second envelope is long gone.
    rig.clock.advance(time::Duration::hours(1));
    assert!(matches!(
        rig.session.resume(&id, approval.clone()).await,
        Err(ComputerUseError::Expired { .. })
    ));
    let previews = rig.runtime.count(Call::Preview);
    let done = finish(rig.session.resume_refreshing(&id, approval.clone()).await)
        .await
        .unwrap();
    assert!(done.performed());
    assert_eq!(
        rig.runtime.count(Call::Preview),
        previews + 1,
        "previewed again"
    );
    assert!(
        rig.session.resume_refreshing(&id, approval).await.is_err(),
        "once"
    );
    // The policy changed meanwhile: refused as a mismatch, nothing reserved.
    let changed = suspended(&rig, "late-2").await;
    let approval = held_at(&*store, &changed);
    rig.clock.advance(time::Duration::hours(1));
    rig.runtime.script().preview = Some(std::sync::Arc::new(
        |p: &mut adk_computer_use::contracts::ActionPreview| {
            p.policy.policy_digest = "policy-v2".into();
        },
    ));
    let reserves = rig.runtime.count(Call::Reserve);
    let err = err_of(rig.session.resume_refreshing(&changed, approval).await);
    assert_eq!(err.field(), Some("policyDigest"), "{err}");
    assert_eq!(rig.runtime.count(Call::Reserve), reserves);
    assert!(
        store.ids().unwrap().contains(&changed),
        "not consumed by a refused resume"
    );
}

/// Review of the refresh path: a denial recorded while the runtime
/// re-previews still wins; a re-preview may change nothing the person was
/// shown; a copy of a resumed checkpoint is not refreshed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_refresh_path_holds_against_late_denials_changed_previews_and_copies() {
    let (dir, store, rig) = filed();
    // A denial lands while the runtime holds the re-preview.
    let id = suspended(&rig, "race-deny").await;
    let own = held_at(&*store, &id);
    rig.clock.advance(time::Duration::hours(1));
    rig.runtime.script().hold.insert(Call::Preview);
    let deny = deny("no");
    let (resumed, ()) = tokio::join!(rig.session.resume_refreshing(&id, own), async {
        rig.runtime.held.notified().await;
        decide(&*store, &id, &deny, &approver()).unwrap();
        rig.runtime.gate.notify_one();
    });
    assert!(resumed.is_err(), "a denial recorded meanwhile wins");
    rig.runtime.script().hold.clear();
    assert!(
        rig.session.refresh(&id).await.is_err(),
        "a decided checkpoint is not refreshed around its decision"
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    // The re-preview adds labels the person never saw: refused, named.
    let labelled = suspended(&rig, "relabel").await;
    let own = held_at(&*store, &labelled);
    rig.clock.advance(time::Duration::hours(1));
    rig.runtime.script().preview = Some(std::sync::Arc::new(
        |p: &mut adk_computer_use::contracts::ActionPreview| {
            p.envelope.data_labels = vec![adk_computer_use::contracts::DataLabel::Payment];
        },
    ));
    let err = err_of(rig.session.resume_refreshing(&labelled, own).await);
    assert_eq!(err.field(), Some("dataLabels"), "{err}");
    rig.runtime.script().preview = None;
    // A copy of the store (the directory, its identity file included) is
    // not the store of record: its records are refused there.
    let original = suspended(&rig, "copied").await;
    let copy_dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, copy_dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let copy = self::store(&copy_dir);
    let approval = granted_at(&rig, &*store, &original);
    rig.clock.advance(time::Duration::hours(1));
    let done = rig
        .session
        .resume_refreshing(&original, approval.clone())
        .await
        .unwrap();
    assert!(done.complete().await.unwrap().performed());
    let on_copy = executor(&rig.runtime, rig.clock.clone())
        .checkpoints(copy)
        .build()
        .unwrap();
    assert!(matches!(
        refusal_of(on_copy.resume_refreshing(&original, approval).await),
        CheckpointRefusal::OtherStore { .. }
    ));
    assert_eq!(rig.runtime.mutations(), 1);
}

/// The window record the scripted runtime's semantic frame shows for the
/// target, as a window list would.
fn target_window(pid: Option<u32>) -> serde_json::Value {
    let mut record = serde_json::json!({ "bundleId": APP, "windowId": WINDOW });
    if let Some(pid) = pid {
        record["pid"] = pid.into();
    }
    serde_json::json!({ "windows": [record] })
}

/// A rig told that the runtime accepts evidence 30 s old, as upstream's
/// server does.
fn aging(dir: &tempfile::TempDir) -> (Rig, Arc<FileCheckpointStore>) {
    let store = store(dir);
    let rig = rig_aging(store.clone(), Duration::from_secs(30));
    (rig, store)
}

#[tokio::test]
async fn an_approval_the_runtime_holds_follows_fresh_evidence_of_the_same_target() {
    let dir = tempfile::tempdir().unwrap();
    let (rig, store) = aging(&dir);
    let id = suspended(&rig, "fresh-held").await;
    let view = inspect(&*store, &id).unwrap();
    // The person decides a minute later: the evidence is twice as old as
    // the runtime accepts.
    rig.clock.advance(time::Duration::minutes(1));
    rig.runtime.script().semantic = Some(target_window(None));
    let observed = rig.runtime.count(Call::Observe);
    let approved = rig
        .session
        .resume_refreshing(&id, held(&view))
        .await
        .unwrap();
    assert!(
        rig.runtime.count(Call::Observe) > observed,
        "the target was looked at again"
    );
    let target = approved.preview().envelope.target.clone().unwrap();
    assert_eq!(
        target.captured_at, "2026-07-13T10:01:00Z",
        "previewed on evidence taken now"
    );
    assert!(approved.complete().await.unwrap().performed());
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test]
async fn a_target_that_changed_beyond_its_pixels_does_not_carry_an_approval() {
    let dir = tempfile::tempdir().unwrap();
    let (rig, store) = aging(&dir);
    let id = suspended(&rig, "changed-target").await;
    let view = inspect(&*store, &id).unwrap();
    rig.clock.advance(time::Duration::minutes(1));
    // Another process now owns the window the person approved.
    rig.runtime.script().semantic = Some(target_window(Some(4242)));
    let err = err_of(rig.session.resume_refreshing(&id, held(&view)).await);
    assert!(
        matches!(
            err.checkpoint_refusal(),
            Some(CheckpointRefusal::TargetChanged { field: "pid", .. })
        ),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert!(store.ids().unwrap().contains(&id), "nothing was consumed");
}

#[tokio::test]
async fn a_grant_cannot_follow_fresh_evidence_and_is_refused_before_anything_is_consumed() {
    let dir = tempfile::tempdir().unwrap();
    let (rig, store) = aging(&dir);
    let id = suspended(&rig, "aged-grant").await;
    let approval = granted_at(&rig, &*store, &id);
    rig.clock.advance(time::Duration::minutes(1));
    let err = err_of(rig.session.resume_refreshing(&id, approval.clone()).await);
    assert!(
        matches!(
            err.checkpoint_refusal(),
            Some(CheckpointRefusal::EvidenceAged {
                age_ms: 60_000,
                limit_ms: 30_000
            })
        ),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert!(store.ids().unwrap().contains(&id), "nothing was consumed");
    // Evidence younger than the runtime's limit still runs on the grant.
    let mut fresh = target();
    fresh.captured_at = "2026-07-13T10:01:00Z".into();
    let young = suspended_action(&rig, action("young-grant").with_target(fresh)).await;
    let approval = granted_at(&rig, &*store, &young);
    rig.clock.advance(time::Duration::seconds(20));
    let done = finish(rig.session.resume(&young, approval).await)
        .await
        .unwrap();
    assert!(done.performed());
}

#[tokio::test]
async fn a_refusal_before_any_effect_gives_the_checkpoint_back_and_the_approval_stays_usable() {
    for on_decision in [false, true] {
        let (_dir, store, rig) = filed();
        let id = suspended(&rig, "given-back").await;
        let approval = granted_at(&rig, &*store, &id);
        if on_decision {
            decide(
                &*store,
                &id,
                &Decision::Approve(approval.clone()),
                &approver(),
            )
            .unwrap();
        }
        let resume = || async {
            if on_decision {
                rig.session.resume_decided(&id, &public()).await
            } else {
                rig.session.resume(&id, approval.clone()).await
            }
        };
        // The runtime refuses the reservation (another agent holds the
        // target): no effect, so the approval is not spent.
        refuse_reservations(&rig);
        let err = resume().await.unwrap().complete().await.err().unwrap();
        assert_eq!(err.refusal_code(), Some("target_reserved"), "{err}");
        assert_eq!(rig.runtime.mutations(), 0);
        assert!(
            store.ids().unwrap().contains(&id),
            "given back (decided: {on_decision})"
        );
        assert_eq!(inspect(&*store, &id).unwrap().decided, on_decision);
        // The lease is busy next: refused before the call, given back too.
        rig.runtime.script().fail.clear();
        rig.runtime
            .script()
            .fail
            .insert(Call::Lease, refusal("acquire_lease", "lease_conflict"));
        let err = resume().await.unwrap().complete().await.err().unwrap();
        assert_eq!(err.refusal_code(), Some("lease_conflict"), "{err}");
        assert!(store.ids().unwrap().contains(&id));
        // Then it runs, once, and stays consumed.
        rig.runtime.script().fail.clear();
        assert!(
            resume()
                .await
                .unwrap()
                .complete()
                .await
                .unwrap()
                .performed()
        );
        assert_eq!(rig.runtime.mutations(), 1);
        assert!(
            !store.ids().unwrap().contains(&id),
            "consumed by the effect"
        );
        assert!(resume().await.is_err(), "once");
    }
}

#[tokio::test]
async fn once_the_mutating_call_is_made_nothing_is_given_back() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "refused-at-execute").await;
    let approval = granted_at(&rig, &*store, &id);
    // A clean refusal of the mutating call itself: a server may answer so
    // after the effect (upstream re-checks the target after acting), so it
    // proves nothing about the effect, and the checkpoint stays consumed.
    rig.runtime
        .script()
        .fail
        .insert(Call::Execute, refusal("execute_action", "stale_target"));
    let err = err_of(finish(rig.session.resume(&id, approval.clone()).await).await);
    assert_eq!(err.refusal_code(), Some("stale_target"), "{err}");
    assert!(!store.ids().unwrap().contains(&id), "stays consumed");
    assert!(rig.session.resume(&id, approval).await.is_err());
}

/// One action id seals one checkpoint in a session: a second suspension
/// under the same id is refused, so no two resumed actions of a session
/// share the id their claims are remembered by.
#[tokio::test]
async fn one_action_id_seals_one_checkpoint() {
    let (_dir, _store, rig) = filed();
    let _first = suspended(&rig, "same-id").await;
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    let ChainOutcome::NeedsApproval(pending) = rig.session.run(action("same-id")).await.unwrap()
    else {
        panic!("expected approval to be required");
    };
    assert_eq!(
        refusal_of(pending.suspend().await),
        CheckpointRefusal::Exists
    );
}

#[tokio::test]
async fn an_outcome_in_doubt_never_gives_the_checkpoint_back() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "in-doubt").await;
    let approval = granted_at(&rig, &*store, &id);
    // The answer to the mutating call is lost: it may have happened.
    lose_execute_answer(&rig);
    let err = err_of(finish(rig.session.resume(&id, approval.clone()).await).await);
    assert!(
        matches!(err, ComputerUseError::OutcomeUnknown { .. }),
        "{err}"
    );
    assert!(!store.ids().unwrap().contains(&id), "stays consumed");
    assert!(rig.session.resume(&id, approval).await.is_err());
}

/// A caller holding every public item writes an approval "on fresh
/// evidence" of another process's window: `decide` refuses it, naming the
/// field, and records nothing.
#[tokio::test]
async fn a_fresh_target_approval_for_another_target_is_refused_at_decide() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "forged-fresh").await;
    let view = inspect(&*store, &id).unwrap();
    let mut elsewhere = target();
    elsewhere.pid = Some(4242);
    elsewhere.captured_at = "2026-07-13T10:01:00Z".into();
    let forged = granted(&rig, &view).with_fresh_target(&elsewhere);
    let err = decide(&*store, &id, &Decision::Approve(forged), &approver()).unwrap_err();
    assert!(
        matches!(
            err.checkpoint_refusal(),
            Some(CheckpointRefusal::TargetChanged { field: "pid", .. })
        ),
        "{err}"
    );
    assert!(
        decision_of(&*store, &id, &public()).unwrap().is_none(),
        "nothing recorded"
    );
    // The same target, freshly seen, is recorded.
    let mut same = target();
    same.captured_at = "2026-07-13T10:01:00Z".into();
    let fresh = granted(&rig, &view).with_fresh_target(&same);
    approve(&*store, &id, fresh);
}

/// [`suspended`], for an action labelled public (whose reports may quote
/// their reasons).
async fn suspended_public(rig: &Rig, id: &str) -> CheckpointId {
    let public = action(id).with_data_labels([adk_computer_use::contracts::DataLabel::Public]);
    suspended_action(rig, public).await
}

/// What the page shows after a decision: each decided action, once the
/// agent has run it, reports how it ended beside its checkpoint, sealed
/// with the store's key. A refusal before any effect says the approval was
/// kept, and the later run adds its own report; a lost answer to the
/// mutating call says the outcome is unknown; an action the agent ran
/// without a checkpoint reports nothing; and a report written without the
/// key (in the file store's directory) is not taken for the agent's.
#[tokio::test]
async fn each_decided_action_reports_how_it_ended_beside_its_checkpoint() {
    use adk_computer_use::chain::{ReportedOutcome, reported, reports_of};
    let dir = tempfile::tempdir().unwrap();
    let file = store(&dir);
    let memory = Arc::new(adk_computer_use::chain::MemoryCheckpointStore::new(
        SealingKey::new(KEY.to_vec()).unwrap(),
    ));
    let stores: [Arc<dyn CheckpointStore>; 2] = [file.clone(), memory];
    for store in stores {
        let rig = rig_on(store.clone());
        let approve = |id: &CheckpointId| approve(&*store, id, granted_at(&rig, &*store, id));
        // Nothing reported before any action ran.
        assert!(store.reported().unwrap().is_empty());

        // Approved, resumed, run: its outcome, as the chain judged it.
        let done_id = suspended_public(&rig, "report-done").await;
        approve(&done_id);
        let done = finish(rig.session.resume_decided(&done_id, &public()).await)
            .await
            .unwrap();
        let reports = reports_of(&*store, &done_id).unwrap();
        assert_eq!(reports.len(), 1, "{reports:?}");
        assert_eq!(reports[0].action_id, "report-done");
        assert_eq!(reports[0].tool, "write_clipboard");
        assert_eq!(reports[0].checkpoint_id, done_id.as_str());
        let expected = match done.outcome() {
            adk_computer_use::VerificationOutcome::Verified => ReportedOutcome::Verified,
            adk_computer_use::VerificationOutcome::CommittedUnverified { reason } => {
                ReportedOutcome::CommittedUnverified {
                    reason: reason.clone(),
                }
            }
            adk_computer_use::VerificationOutcome::Failed { reason } => ReportedOutcome::Failed {
                reason: reason.clone(),
            },
        };
        assert_eq!(reports[0].outcome, expected);

        // Refused before any effect: reported, the approval kept; the run
        // that follows reports too, latest last.
        let retried = suspended_public(&rig, "report-retried").await;
        approve(&retried);
        refuse_reservations(&rig);
        let resumed = rig.session.resume_decided(&retried, &public()).await;
        resumed.unwrap().complete().await.err().unwrap();
        rig.runtime.script().fail.clear();
        let first = reports_of(&*store, &retried).unwrap();
        assert!(
            matches!(&first[..], [r] if matches!(&r.outcome,
                ReportedOutcome::Refused { reason, approval_kept: true } if reason.contains("target_reserved"))),
            "{first:?}"
        );
        let resumed = rig.session.resume_decided(&retried, &public()).await;
        assert!(resumed.unwrap().complete().await.unwrap().performed());
        let both = reports_of(&*store, &retried).unwrap();
        assert_eq!(both.len(), 2, "{both:?}");
        assert_eq!(both[1].outcome, expected);
        assert_eq!(reported(&*store, 10).unwrap()[0].0, retried, "latest first");

        // The answer to the mutating call is lost: in doubt, and said so.
        let lost = suspended_public(&rig, "report-lost").await;
        approve(&lost);
        lose_execute_answer(&rig);
        let resumed = rig.session.resume_decided(&lost, &public()).await;
        resumed.unwrap().complete().await.err().unwrap();
        rig.runtime.script().fail.clear();
        let in_doubt = reports_of(&*store, &lost).unwrap();
        assert!(
            matches!(&in_doubt[..], [r] if r.outcome.status() == "outcome_unknown"),
            "{in_doubt:?}"
        );

        // An action run without a checkpoint owes no report.
        let before = store.reported().unwrap().len();
        rig.runtime.script().route = None;
        let ran = rig.session.run(action("report-none")).await.unwrap();
        assert!(matches!(ran, ChainOutcome::Completed(_)));
        assert_eq!(store.reported().unwrap().len(), before);

        // A resumed action whose stage is dropped owes its report still;
        // another action under the same id (even with the same arguments)
        // does not pay it.
        rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
        let dropped = suspended_public(&rig, "report-dropped").await;
        approve(&dropped);
        drop(
            rig.session
                .resume_decided(&dropped, &public())
                .await
                .unwrap(),
        );
        rig.runtime.script().route = None;
        // The same tool, arguments and labels, on another observation.
        let imposter = action("report-dropped")
            .with_target(adk_computer_use::contracts::TargetEvidence {
                observation_id: "another-observation".into(),
                ..target()
            })
            .with_data_labels([adk_computer_use::contracts::DataLabel::Public]);
        if let Ok(ChainOutcome::Completed(_)) = rig.session.run(imposter).await {}
        assert!(
            reports_of(&*store, &dropped).unwrap().is_empty(),
            "reported for another action under the same id"
        );

        // An action labelled as handling a credential: how it ended, with
        // its reason withheld.
        let secret = suspended_action(
            &rig,
            action("report-secret")
                .with_data_labels([adk_computer_use::contracts::DataLabel::Credential]),
        )
        .await;
        approve(&secret);
        refuse_reservations(&rig);
        let resumed = rig.session.resume_decided(&secret, &public()).await;
        resumed.unwrap().complete().await.err().unwrap();
        rig.runtime.script().fail.clear();
        let withheld = reports_of(&*store, &secret).unwrap();
        assert!(
            matches!(&withheld[..], [r] if r.outcome.reason().is_some_and(|w| w.contains("withheld") && !w.contains("target_reserved"))),
            "{withheld:?}"
        );
    }

    // A report put in the directory by someone without the store's key.
    // The checkpoint with two reports (refused, then done).
    let id = file
        .reported()
        .unwrap()
        .into_iter()
        .find(|id| reports_of(&*file, id).is_ok_and(|r| r.len() == 2))
        .unwrap();
    let forged = serde_json::json!({
        "report": {
            "checkpointId": id.as_str(), "actionId": "report-retried",
            "tool": "write_clipboard", "outcome": { "status": "verified" },
            "reportedAt": "2026-12-02T12:00:00Z"
        },
        "seal": "00".repeat(32),
    });
    let next = reports_of(&*file, &id).unwrap().len();
    std::fs::write(
        dir.path().join(format!("{id}.outcome.{next}")),
        forged.to_string(),
    )
    .unwrap();
    let err = reports_of(&*file, &id).unwrap_err();
    assert!(err.to_string().contains("seal"), "{err}");
    let listed = reported(&*file, 10).unwrap();
    assert!(listed.iter().any(|(i, r)| i == &id && r.is_err()));
    std::fs::remove_file(dir.path().join(format!("{id}.outcome.{next}"))).unwrap();
    assert_eq!(reports_of(&*file, &id).unwrap().len(), next);

    // Reports swapped, or the first removed, by someone who can write the
    // directory: each is sealed with its place, and a gap shows.
    let at = |n: usize| dir.path().join(format!("{id}.outcome.{n}"));
    let (first, second) = (
        std::fs::read_to_string(at(0)).unwrap(),
        std::fs::read_to_string(at(1)).unwrap(),
    );
    std::fs::write(at(0), &second).unwrap();
    std::fs::write(at(1), &first).unwrap();
    let err = reports_of(&*file, &id).unwrap_err();
    assert!(err.to_string().contains("expected report 0"), "{err}");
    std::fs::remove_file(at(0)).unwrap();
    let err = reports_of(&*file, &id).unwrap_err();
    assert!(err.to_string().contains("report 0 is missing"), "{err}");
}

/// One approval runs once, whatever another action claims to be. The
/// agent resumes a decided checkpoint and holds the stage; then it runs a
/// second action under the same action id (another observation), which
/// the runtime refuses before any effect. That refusal must not give the
/// first action's checkpoint back: the held stage runs, and resuming the
/// checkpoint again is refused. (Before, the claim was found by the action
/// id alone, and the checkpoint ran twice.)
#[tokio::test]
async fn another_action_under_the_same_id_cannot_give_a_resumed_checkpoint_back() {
    let (_dir, store, rig) = filed();
    let id = suspended(&rig, "twice").await;
    let approval = granted_at(&rig, &*store, &id);
    approve(&*store, &id, approval);
    let held = rig.session.resume_decided(&id, &public()).await.unwrap();

    rig.runtime.script().route = None;
    refuse_reservations(&rig);
    let imposter = action("twice").with_target(adk_computer_use::contracts::TargetEvidence {
        observation_id: "another-observation".into(),
        ..target()
    });
    assert!(
        rig.session.run(imposter).await.is_err(),
        "refused before any effect"
    );
    rig.runtime.script().fail.clear();
    assert!(
        !store.ids().unwrap().contains(&id),
        "the imposter's refusal gave the checkpoint back"
    );

    assert!(held.complete().await.unwrap().performed());
    assert!(
        rig.session.resume_decided(&id, &public()).await.is_err(),
        "the checkpoint resumed a second time"
    );
    assert_eq!(rig.runtime.mutations(), 1, "one approval, one effect");
}

/// A file checkpoint store in a new temporary directory, and a rig whose session uses it.
fn filed() -> (tempfile::TempDir, Arc<FileCheckpointStore>, Rig) {
    let dir = tempfile::tempdir().unwrap();
    let store = store(&dir);
    let rig = rig_on(store.clone());
    (dir, store, rig)
}

/// An approval, with a grant the runtime issued, of the action checkpoint `id` in `store` shows.
fn granted_at(rig: &Rig, store: &dyn CheckpointStore, id: &CheckpointId) -> Approval {
    granted(rig, &inspect(store, id).unwrap())
}

/// An approval, held by the runtime, of the action checkpoint `id` in `store` shows.
fn held_at(store: &dyn CheckpointStore, id: &CheckpointId) -> Approval {
    held(&inspect(store, id).unwrap())
}

/// A person's denial, for `reason`.
fn deny(reason: &str) -> Decision {
    Decision::Deny {
        reason: reason.into(),
    }
}

/// Scripts the runtime to refuse reservations: another agent holds the target.
fn refuse_reservations(rig: &Rig) {
    rig.runtime
        .script()
        .fail
        .insert(Call::Reserve, refusal("reserve_target", "target_reserved"));
}

/// Scripts the answer to the mutating call to be lost: it may have happened.
fn lose_execute_answer(rig: &Rig) {
    rig.runtime.script().fail.insert(
        Call::Execute,
        ComputerUseError::Transport {
            operation: "execute_action".into(),
            message: "connection reset".into(),
        },
    );
}

/// The workspace's `computer-use-approvals` command.
fn approvals_command() -> std::process::Command {
    std::process::Command::new(adk_computer_use_testkit::binary::path(
        adk_computer_use_testkit::binary::APPROVALS,
    ))
}

/// The end of the chain a resume gave back: the resume must have succeeded.
async fn finish(
    resumed: Result<adk_computer_use::chain::Approved<FakeRuntime>, ComputerUseError>,
) -> Result<adk_computer_use::chain::Verified, ComputerUseError> {
    resumed.unwrap().complete().await
}

/// The error `result` must be.
fn err_of<T>(result: Result<T, ComputerUseError>) -> ComputerUseError {
    result.err().unwrap()
}

/// The person approves checkpoint `id` in `store` with `approval`, signed with the approver's key.
fn approve(store: &dyn CheckpointStore, id: &CheckpointId, approval: Approval) {
    decide(store, id, &Decision::Approve(approval), &approver()).unwrap();
}
