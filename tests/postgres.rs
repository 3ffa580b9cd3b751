//! Approvals across machines and the audit record in PostgreSQL.
//!
//! Set `ADK_POSTGRES_URL` (for example `postgres://postgres@127.0.0.1:55432/postgres`);
//! `.ci/run` starts a PostgreSQL 15 server and sets it. Without the variable
//! these tests say so and check nothing; with it, a server that does not
//! answer fails them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod pg_support;

use adk_computer_use_testkit::needs;
use std::sync::Arc;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::{
    Approval, ChainOutcome, CheckpointRefusal, CheckpointStore, ClaimBasis, Decision, Session,
    decide, inspect,
};
use adk_computer_use::journal::{Journal, JournalSink, verify_journal};
use adk_computer_use::pg::{PostgresCheckpointStore, PostgresJournal, read_postgres_journal};
use common::*;
use pg_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[needs(postgres)]
async fn of_agents_on_many_machines_racing_to_resume_exactly_one_wins() {
    let Some(url) = url() else { return };
    let (rig, store, id, approval) = suspended_in(&url, "race", "pg-race").await;
    assert_eq!(inspect(&*store, &id).unwrap().action_id, "pg-race");
    // Eight replicas, each with its own connection and its own session.
    let replicas: Vec<_> = (0..8)
        .map(|_| {
            let (url, id, approval, runtime, clock) = (
                url.clone(),
                id.clone(),
                approval.clone(),
                Arc::clone(&rig.runtime),
                rig.clock.clone(),
            );
            tokio::spawn(async move {
                let store = Arc::new(PostgresCheckpointStore::connect(&url, pg_key()).unwrap());
                let session = Session::builder(runtime, full_authorizer())
                    .clock(Arc::new(clock))
                    .agent_id("executor")
                    .checkpoints(store)
                    .build()
                    .unwrap();
                let won = session.resume(&id, approval).await.map(|_| ());
                let _ = session.shutdown().await;
                won
            })
        })
        .collect();
    let mut winners = 0;
    for replica in replicas {
        match replica.await.unwrap() {
            Ok(()) => winners += 1,
            Err(err) => assert_eq!(
                err.checkpoint_refusal(),
                Some(&CheckpointRefusal::AlreadyResumed),
                "{err}"
            ),
        }
    }
    assert_eq!(winners, 1, "exactly one replica resumes");
    assert_eq!(
        rig.runtime.count(Call::Reserve),
        0,
        "the winner was dropped before reserving; no loser reached the runtime"
    );
    assert!(store.ids().unwrap().iter().all(|i| i != &id), "consumed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn decisions_recorded_in_postgres_reach_the_waiting_agent_once() {
    let Some(url) = url() else { return };
    let store = Arc::new(PostgresCheckpointStore::connect(&url, pg_key()).unwrap());
    let rig = rig_in(&unique("decide"), store.clone());
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    let suspend = |id: &'static str| {
        let rig = &rig;
        async move {
            match rig.session.run(action(id)).await.unwrap() {
                ChainOutcome::NeedsApproval(pending) => pending.suspend().await.unwrap(),
                _ => panic!("approval required"),
            }
        }
    };
    let approved = suspend("pg-approve").await;
    let denied = suspend("pg-deny").await;
    let view = inspect(&*store, &approved).unwrap();
    let grant = rig.runtime.grant(&view.action_digest);
    let approval = Approval::with_grant(
        &view.action_id,
        &view.action_digest,
        &view.policy_digest,
        &grant,
    );
    decide(
        &*store,
        &approved,
        &Decision::Approve(approval),
        &approver(),
    )
    .unwrap();
    let late = Decision::Deny {
        reason: "late".into(),
    };
    assert!(
        decide(&*store, &approved, &late, &approver()).is_err(),
        "once"
    );
    let no = Decision::Deny {
        reason: "no".into(),
    };
    decide(&*store, &denied, &no, &approver()).unwrap();
    let public = approver().public();
    let done = rig
        .session
        .resume_decided(&approved, &public)
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    assert!(
        rig.session
            .resume_decided(&approved, &public)
            .await
            .is_err()
    );
    assert!(matches!(
        rig.session.resume_decided(&denied, &public).await,
        Err(ComputerUseError::Denied { .. })
    ));
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn the_journal_in_postgres_verifies_and_cannot_fork() {
    let Some(url) = url() else { return };
    let session_id = unique("journal");
    let sink = Arc::new(PostgresJournal::connect(&url).unwrap());
    let rig = rig();
    rig.runtime.act_in(&session_id, None);
    let session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .journal(Arc::new(Journal::new(
            Arc::clone(&sink) as Arc<dyn JournalSink>
        )))
        .build()
        .unwrap();
    for i in 0..3 {
        assert!(matches!(
            session.run(action(&format!("pg-j-{i}"))).await.unwrap(),
            ChainOutcome::Completed(_)
        ));
    }
    let entries = read_postgres_journal(&url, &session_id).unwrap();
    assert!(entries.len() >= 12, "{}", entries.len());
    verify_journal(&entries, None).unwrap();
    // A second writer appending after an entry that already has a successor.
    let mut fork = entries[2].clone();
    fork.event.event_type = "action.forged".into();
    let err = sink.append(&fork).unwrap_err();
    assert!(matches!(err, ComputerUseError::Integrity { .. }), "{err}");
    // One sink records one session: another session's entry is refused.
    let mut stranger = entries[0].clone();
    stranger.event.session_id = "another-session".into();
    assert!(matches!(
        sink.append(&stranger),
        Err(ComputerUseError::Integrity { .. })
    ));
    // The command verifies the chain read from PostgreSQL.
    let out = std::process::Command::new(adk_computer_use_testkit::binary::path(
        adk_computer_use_testkit::binary::JOURNAL,
    ))
    .args(["--postgres", &url, "--session", &session_id, "--unanchored"])
    .output()
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("hash chain intact"), "{text}");
    let _ = session.shutdown().await;
}

/// Issue 19, finding 1, in PostgreSQL: a person's denial (its own
/// connection, as another machine's would be) and the agent's resume,
/// started together, twenty times: never both. The person is never told a
/// denial was recorded while the agent's own approval runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn a_denial_and_a_resume_racing_in_postgres_never_both_succeed() {
    let Some(url) = url() else { return };
    let store = Arc::new(PostgresCheckpointStore::connect(&url, pg_key()).unwrap());
    let person = Arc::new(PostgresCheckpointStore::connect(&url, pg_key()).unwrap());
    let rig = rig_in(&unique("deny-race"), store.clone());
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    let mut both = 0;
    for round in 0..20 {
        let pending = match rig
            .session
            .run(action(&format!("pg-deny-race-{round}")))
            .await
            .unwrap()
        {
            ChainOutcome::NeedsApproval(pending) => pending,
            _ => panic!("approval required"),
        };
        let own = Approval::runtime_held(
            pending.action_id(),
            pending.action_digest(),
            pending.policy_digest(),
        );
        let id = pending.suspend().await.unwrap();
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let denial = {
            let (person, id, barrier) = (person.clone(), id.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let no = Decision::Deny {
                    reason: "no".into(),
                };
                decide(&*person, &id, &no, &approver())
            })
        };
        barrier.wait();
        let resumed = rig.session.resume(&id, own).await;
        let denied = denial.join().unwrap();
        if resumed.is_ok() && denied.is_ok() {
            both += 1;
        }
        match (&resumed, &denied) {
            (Ok(_), Err(err)) => assert_eq!(
                err.checkpoint_refusal(),
                Some(&CheckpointRefusal::ResumedWithoutDecision),
                "{err}"
            ),
            (Err(err), Ok(())) => assert_eq!(
                err.checkpoint_refusal(),
                Some(&CheckpointRefusal::DecisionRecorded),
                "{err}"
            ),
            _ => {}
        }
    }
    assert_eq!(both, 0, "{both} of 20 rounds recorded a denial and resumed");
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn a_refusal_before_any_effect_gives_a_postgres_checkpoint_back_for_one_more_try() {
    let Some(url) = url() else { return };
    let (rig, store, id, approval) = suspended_in(&url, "give-back", "pg-give-back").await;
    // The lease is taken by someone else: refused before any effect.
    rig.runtime
        .script()
        .fail
        .insert(Call::Lease, refusal("acquire_lease", "lease_conflict"));
    let err = rig
        .session
        .resume(&id, approval.clone())
        .await
        .unwrap()
        .complete()
        .await
        .unwrap_err();
    assert_eq!(err.refusal_code(), Some("lease_conflict"), "{err}");
    assert!(store.ids().unwrap().contains(&id), "given back");
    // Nothing is claimed now, so nothing more can be given back.
    assert_eq!(
        store
            .give_back(&id, &ClaimBasis::Undecided)
            .unwrap_err()
            .checkpoint_refusal(),
        Some(&CheckpointRefusal::NotClaimedSo)
    );
    rig.runtime.script().fail.clear();
    let done = rig
        .session
        .resume(&id, approval.clone())
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    assert_eq!(rig.runtime.mutations(), 1);
    assert!(
        !store.ids().unwrap().contains(&id),
        "consumed by the effect"
    );
    assert!(rig.session.resume(&id, approval).await.is_err(), "once");
    // Both ends were reported beside the checkpoint, in order, and a
    // second store on the same database (the page's) reads them, the
    // latest reported first among every checkpoint.
    let page = PostgresCheckpointStore::connect(&url, pg_key()).unwrap();
    let reports = adk_computer_use::chain::reports_of(&page, &id).unwrap();
    let statuses: Vec<_> = reports.iter().map(|r| r.outcome.status()).collect();
    assert_eq!(statuses[0], "refused", "{reports:?}");
    assert!(
        matches!(
            reports[0].outcome,
            adk_computer_use::chain::ReportedOutcome::Refused {
                approval_kept: true,
                ..
            }
        ),
        "{reports:?}"
    );
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert!(reports[1].outcome.status() != "refused", "{reports:?}");
    assert_eq!(page.reported().unwrap()[0], id);
    // A report is written only at the place it was sealed for.
    let err = page.record_outcome(&id, 0, "{}").unwrap_err();
    assert!(
        err.to_string().contains("another report holds that place"),
        "{err}"
    );
    // An element written as SQL NULL by someone with the database but not
    // the key: the reports do not open, and the store still answers.
    let (db, key) = (url.clone(), id.to_string());
    tokio::task::spawn_blocking(move || {
        let mut client = postgres::Client::connect(&db, postgres::NoTls).unwrap();
        client
            .execute(
                "UPDATE adk_checkpoints SET outcomes = array_append(outcomes, NULL) WHERE id = $1",
                &[&key],
            )
            .unwrap();
    })
    .await
    .unwrap();
    assert!(adk_computer_use::chain::reports_of(&page, &id).is_err());
    assert!(page.ids().is_ok(), "the store still answers");
    // Past the most kept, a report is refused with the reason.
    for n in page.outcomes(&id).unwrap().len()..adk_computer_use::chain::MOST_REPORTS {
        page.record_outcome(&id, n, "{}").unwrap();
    }
    let most = adk_computer_use::chain::MOST_REPORTS;
    let err = page.record_outcome(&id, most, "{}").unwrap_err();
    assert!(err.to_string().contains("the most it keeps"), "{err}");
}
