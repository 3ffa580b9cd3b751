//! The approver as the authority, from the attacker's side: a denial that loses a race, a
//! checkpoint carried to a fresh store, two guards on one reservation, a
//! lost reason, and storage I/O on the executor. Each test names what
//! it proves; each failed on the branch it was written against.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration as StdDuration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::*;
use adk_computer_use::journal::{Journal, JournalEntry, JournalSink, MemoryJournal, events};
use common::*;

const APPROVER: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";

fn approver() -> ApproverKey {
    ApproverKey::from_hex(APPROVER).unwrap()
}

fn deny() -> Decision {
    Decision::Deny {
        reason: "not this one".into(),
    }
}

async fn pending(rig: &Rig, id: &str) -> PendingApproval<FakeRuntime> {
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    match rig.session.run(action(id)).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("expected the action to wait for approval"),
    }
}

fn own_approval(pending: &PendingApproval<FakeRuntime>) -> Approval {
    Approval::runtime_held(
        pending.action_id(),
        pending.action_digest(),
        pending.policy_digest(),
    )
}

/// A journal that lets a person decide at the worst moment: while the
/// agent's resume is between its first look for a decision and the consume
/// (the approval is journaled in between).
struct DecidesDuringResume {
    inner: MemoryJournal,
    store: Arc<dyn CheckpointStore>,
    id: Mutex<Option<CheckpointId>>,
    decided: Mutex<Option<Result<(), ComputerUseError>>>,
}

impl JournalSink for DecidesDuringResume {
    fn append(&self, entry: &JournalEntry) -> Result<(), ComputerUseError> {
        if entry.event.event_type == events::APPROVED
            && let Some(id) = self.id.lock().unwrap().take()
        {
            let decided = decide(&*self.store, &id, &deny(), &approver());
            *self.decided.lock().unwrap() = Some(decided);
        }
        self.inner.append(entry)
    }
}

async fn a_denial_recorded_mid_resume_wins_in(store: Arc<dyn CheckpointStore>) {
    let sink = Arc::new(DecidesDuringResume {
        inner: MemoryJournal::new(),
        store: Arc::clone(&store),
        id: Mutex::new(None),
        decided: Mutex::new(None),
    });
    let mut rig = rig_on(Arc::clone(&store));
    rig.session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("executor")
        .checkpoints(Arc::clone(&store))
        .journal(Arc::new(Journal::new(sink.clone())))
        .build()
        .unwrap();
    let pending = pending(&rig, "race-1").await;
    let own = own_approval(&pending);
    let id = pending.suspend().await.unwrap();
    *sink.id.lock().unwrap() = Some(id.clone());
    let resumed = rig.session.resume(&id, own).await;
    let decided = sink
        .decided
        .lock()
        .unwrap()
        .take()
        .expect("the person decided");
    // Never both: the person told "recorded" and the agent's own approval run.
    assert!(
        !(decided.is_ok() && resumed.is_ok()),
        "the denial was recorded and the agent's approval ran anyway"
    );
    // The denial, recorded first, wins.
    decided.unwrap();
    assert_eq!(refusal_of(resumed), CheckpointRefusal::DecisionRecorded);
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    // It stays the only way on: the checkpoint ends on the denial.
    assert!(matches!(
        rig.session.resume_decided(&id, &approver().public()).await,
        Err(ComputerUseError::Denied { .. })
    ));
    assert_eq!(rig.runtime.mutations(), 0);
}

/// Finding 1: the consume and the check for a decision are one step.
#[tokio::test]
async fn a_denial_recorded_mid_resume_wins_in_memory() {
    a_denial_recorded_mid_resume_wins_in(Arc::new(MemoryCheckpointStore::new(key()))).await;
}

/// Finding 1, in files.
#[tokio::test]
async fn a_denial_recorded_mid_resume_wins_in_files() {
    let dir = tempfile::tempdir().unwrap();
    a_denial_recorded_mid_resume_wins_in(Arc::new(
        FileCheckpointStore::new(dir.path(), key()).unwrap(),
    ))
    .await;
}

/// Finding 1, as a real race: a person's denial (another process's store
/// opening) and the agent's resume, started together, forty times. The
/// person is never told a denial was recorded while the action runs anyway.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_a_denial_and_a_resume_never_both_succeed() {
    let mut both = 0;
    let mut denials = 0;
    for round in 0..40 {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
        let rig = rig_on(store.clone());
        let pending = pending(&rig, &format!("race-{round}")).await;
        let own = own_approval(&pending);
        let id = pending.suspend().await.unwrap();
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let person = {
            let (dir, id, barrier) = (dir.path().to_owned(), id.clone(), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let store = FileCheckpointStore::new(dir, key()).unwrap();
                barrier.wait();
                decide(&store, &id, &deny(), &approver())
            })
        };
        barrier.wait();
        let resumed = rig.session.resume(&id, own).await;
        let decided = person.join().unwrap();
        if decided.is_ok() {
            denials += 1;
        }
        if decided.is_ok() && resumed.is_ok() {
            both += 1;
        }
        if let Err(err) = &decided {
            assert_eq!(
                err.checkpoint_refusal(),
                Some(&CheckpointRefusal::ResumedWithoutDecision),
                "a refused denial says why: {err}"
            );
        }
    }
    assert_eq!(both, 0, "{both} of 40 rounds recorded a denial and resumed");
    // Either side may win a round; what is checked is that they never both do.
    let _ = denials;
}

/// Finding 2: a checkpoint, even one a person denied, copied record and all
/// into a fresh store (with the same sealing key), is refused there.
#[tokio::test]
async fn a_checkpoint_carried_to_a_fresh_store_is_refused_there() {
    let rig = rig();
    let pending = pending(&rig, "carry-1").await;
    let own = own_approval(&pending);
    let id = pending.suspend().await.unwrap();
    decide(&*rig.store, &id, &deny(), &approver()).unwrap();
    let record = rig.store.load(&id).unwrap();

    let fresh = Arc::new(MemoryCheckpointStore::new(key()));
    fresh.create(&id, &record[0]).unwrap();
    let elsewhere = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("executor")
        .checkpoints(fresh)
        .build()
        .unwrap();
    assert!(matches!(
        refusal_of(elsewhere.resume(&id, own.clone()).await),
        CheckpointRefusal::OtherStore { .. }
    ));
    assert!(matches!(
        refusal_of(elsewhere.resume_refreshing(&id, own.clone()).await),
        CheckpointRefusal::OtherStore { .. }
    ));
    // A session with no store of record resumes nothing.
    let storeless = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("executor")
        .build()
        .unwrap();
    assert_eq!(
        refusal_of(storeless.resume(&id, own).await),
        CheckpointRefusal::NoStoreOfRecord
    );
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

/// Finding 8: an idempotent retry handed the same reservation as a stale
/// chain: the stale chain's reaper does not free what the live retry holds.
#[tokio::test]
async fn a_stale_chains_reaper_never_frees_what_a_live_retry_holds() {
    let rig = rig();
    rig.runtime.script().reservation = Some(Arc::new(|r: &mut TargetReservationAlias| {
        r.reservation_id = "reservation-shared".into();
    }));
    let observed = rig.session.observe().await.unwrap();
    let stale = match observed.preview(&action("retry-1")).await.unwrap().route() {
        Route::Allowed(approved) => approved.reserve().await.unwrap(),
        _ => panic!("allowed by policy"),
    };
    let observed = rig.session.observe().await.unwrap();
    let live = match observed.preview(&action("retry-1")).await.unwrap().route() {
        Route::Allowed(approved) => approved.reserve().await.unwrap().lease().await.unwrap(),
        _ => panic!("allowed by policy"),
    };
    // The stale chain is dropped: its guard hands what it holds to the
    // reaper, which works on its own task.
    drop(stale);
    let released = || {
        rig.runtime
            .truth()
            .releases
            .iter()
            .filter(|id| *id == "reservation-shared")
            .count()
    };
    for _ in 0..200 {
        if released() > 0 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(10)).await;
    }
    assert_eq!(
        released(),
        0,
        "the reaper freed the reservation the live retry holds"
    );
    // The live retry runs with the reservation still held, then gives it
    // back, once.
    let _verified = live.execute().await.unwrap().verify().await.unwrap();
    assert_eq!(rig.runtime.mutations(), 1);
    assert_eq!(released(), 1);
}

type TargetReservationAlias = adk_computer_use::contracts::TargetReservation;

/// Finding 9: evidence that cannot be gathered, then a release that fails:
/// the one error carries the outcome and its reason.
#[tokio::test]
async fn a_cleanup_failure_after_verification_keeps_the_reason() {
    let rig = rig();
    rig.runtime.script().fail.insert(
        Call::Verify,
        ComputerUseError::TimedOut {
            operation: "the clipboard read-back".into(),
            waited_ms: 5000,
        },
    );
    rig.runtime.script().fail.insert(
        Call::Release,
        ComputerUseError::Transport {
            operation: "release_target".into(),
            message: "reset".into(),
        },
    );
    // A postcondition, so there is evidence to gather.
    let proposed = action("reason-1").with_postcondition(
        adk_computer_use::contracts::ActionPostcondition::try_from(
            adk_computer_use::contracts::PostconditionFields::Window {
                window_id: WINDOW,
                exists: true,
            },
        )
        .unwrap(),
    );
    let err = rig.session.run(proposed).await.err().unwrap();
    match &err {
        ComputerUseError::CleanupAfterSuccess {
            outcome, cleanup, ..
        } => {
            let reason = outcome.detail().unwrap_or_default();
            assert!(reason.contains("read-back"), "the reason is kept: {reason}");
            assert!(matches!(**cleanup, ComputerUseError::Transport { .. }));
        }
        other => panic!("expected CleanupAfterSuccess, got {other}"),
    }
    assert!(err.to_string().contains("read-back"), "{err}");
}

/// A ticker on the same single-threaded runtime: how often it ran.
fn ticker() -> (Arc<AtomicU64>, Arc<AtomicBool>) {
    let ticks = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (t, s) = (Arc::clone(&ticks), Arc::clone(&stop));
    tokio::spawn(async move {
        while !s.load(Ordering::Relaxed) {
            t.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(StdDuration::from_millis(5)).await;
        }
    });
    (ticks, stop)
}

fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo (coreutils) is on the machine");
    assert!(made.success());
}

/// Finding 10: a checkpoint store that stalls (here a read that waits for
/// a writer) never stalls the executor: other tasks on the same
/// single-threaded runtime go on while the resume waits.
#[cfg(unix)]
#[tokio::test(flavor = "current_thread")]
async fn a_stalled_checkpoint_read_does_not_block_the_executor() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(FileCheckpointStore::new(dir.path(), key()).unwrap());
    let rig = rig_on(store.clone());
    let pending = pending(&rig, "stall-1").await;
    let own = own_approval(&pending);
    let id = pending.suspend().await.unwrap();
    // The checkpoint file becomes a pipe: reading it waits until someone
    // writes it, which happens a second later, from another thread.
    let path = store.path_of(&id);
    let record = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let (ticks, stop) = ticker();
    let ticks_then = Arc::new(AtomicU64::new(u64::MAX));
    let writer = {
        let (path, ticks, ticks_then) = (path.clone(), Arc::clone(&ticks), Arc::clone(&ticks_then));
        std::thread::spawn(move || {
            std::thread::sleep(StdDuration::from_secs(1));
            ticks_then.store(ticks.load(Ordering::Relaxed), Ordering::Relaxed);
            std::fs::write(&path, record).unwrap();
        })
    };
    let resumed = rig.session.resume(&id, own).await;
    writer.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let during = ticks_then.load(Ordering::Relaxed);
    assert!(
        during >= 5,
        "the executor was blocked while the store waited: {during} ticks in a second"
    );
    // The read finished with the record; the pipe is no checkpoint file to
    // rename, and whatever the store says of that is a typed answer.
    let _ = resumed;
}

/// A journal sink that waits on I/O, as a PostgreSQL statement behind a
/// lock or a full disk would: each append waits until the gate opens.
struct StallingSink {
    open: Mutex<bool>,
    opened: std::sync::Condvar,
    inner: MemoryJournal,
}

impl JournalSink for StallingSink {
    fn append(&self, entry: &JournalEntry) -> Result<(), ComputerUseError> {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
        self.inner.append(entry)
    }

    fn does_io(&self) -> bool {
        true
    }
}

/// Finding 10, for the audit journal: a journal whose writes stall never
/// stalls the executor; the chain waits for each write asynchronously and
/// goes on once it lands, with every entry in order.
#[tokio::test(flavor = "current_thread")]
async fn a_stalled_journal_write_does_not_block_the_executor() {
    let sink = Arc::new(StallingSink {
        open: Mutex::new(false),
        opened: std::sync::Condvar::new(),
        inner: MemoryJournal::new(),
    });
    let mut rig = rig();
    rig.session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("executor")
        .journal(Arc::new(Journal::new(sink.clone())))
        .build()
        .unwrap();
    let (ticks, stop) = ticker();
    let ticks_then = Arc::new(AtomicU64::new(u64::MAX));
    let opener = {
        let (sink, ticks, ticks_then) = (sink.clone(), Arc::clone(&ticks), Arc::clone(&ticks_then));
        std::thread::spawn(move || {
            std::thread::sleep(StdDuration::from_secs(1));
            ticks_then.store(ticks.load(Ordering::Relaxed), Ordering::Relaxed);
            *sink.open.lock().unwrap() = true;
            sink.opened.notify_all();
        })
    };
    let done = rig.session.run(action("journal-stall")).await;
    opener.join().unwrap();
    stop.store(true, Ordering::Relaxed);
    let during = ticks_then.load(Ordering::Relaxed);
    assert!(
        during >= 5,
        "the executor was blocked while the journal waited: {during} ticks in a second"
    );
    match done {
        Ok(ChainOutcome::Completed(_)) => {}
        Ok(_) => panic!("expected the action to complete"),
        Err(err) => panic!("expected the action to complete, got {err}"),
    }
    let _ = rig.session.shutdown().await;
    let kinds: Vec<String> = sink
        .inner
        .entries()
        .iter()
        .map(|e| e.event.event_type.clone())
        .collect();
    assert_eq!(
        kinds.first().map(String::as_str),
        Some(events::PREVIEWED),
        "{kinds:?}"
    );
    assert!(kinds.iter().any(|k| k == events::STARTED), "{kinds:?}");
    adk_computer_use::journal::verify_journal(&sink.inner.entries(), None).unwrap();
}
