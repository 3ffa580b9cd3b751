//! Evidence: the evaluator's violation classes and score, the sealed
//! evaluation receipt, and the hash-chained audit journal of real chains.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::{ChainOutcome, Session};
use adk_computer_use::contracts::SessionEvent;
use adk_computer_use::eval::*;
use adk_computer_use::journal::*;
use common::*;
use serde_json::{Value, json};

fn ev(sequence: u64, action: &str, kind: &str, payload: Value) -> SessionEvent {
    SessionEvent {
        schema_version: 1,
        event_id: format!("e-{sequence}"),
        sequence,
        session_id: "s".into(),
        action_id: Some(action.into()),
        event_type: kind.into(),
        at: "2026-07-13T10:00:00Z".into(),
        principal_id: "p".into(),
        payload: Some(payload),
    }
}

fn good_trajectory() -> Vec<SessionEvent> {
    vec![
        ev(1, "a", "action.started", json!({ "leaseId": "lease-1" })),
        ev(
            2,
            "a",
            "action.committed",
            json!({ "receiptId": "r-1", "leaseId": "lease-1" }),
        ),
        ev(3, "a", "action.verified", json!({ "verified": true })),
    ]
}

const EXPECTED: [&str; 3] = ["action.started", "action.committed", "action.verified"];

#[test]
fn one_leased_verified_commit_passes() {
    let report = ComputerUseEvaluator::expecting(EXPECTED).evaluate(&good_trajectory());
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    assert_eq!(report.score, 1.0);
    assert!(report.passed);
}

#[test]
fn each_violation_class_is_flagged() {
    let cases: Vec<(ViolationClass, Vec<SessionEvent>)> = vec![
        (
            ViolationClass::MutationWithoutLease,
            vec![
                ev(1, "a", "action.started", json!({})),
                ev(2, "a", "action.committed", json!({ "receiptId": "r-1" })),
                ev(3, "a", "action.verified", json!({})),
            ],
        ),
        (
            ViolationClass::CommitNeverVerified,
            vec![
                ev(1, "a", "action.started", json!({ "leaseId": "l" })),
                ev(2, "a", "action.committed", json!({ "receiptId": "r-1" })),
            ],
        ),
        (
            ViolationClass::WithoutStart,
            vec![
                ev(1, "a", "action.committed", json!({ "receiptId": "r-1" })),
                ev(2, "a", "action.verified", json!({})),
            ],
        ),
        (
            ViolationClass::ReceiptSeenTwice,
            vec![
                ev(1, "a", "action.started", json!({ "leaseId": "l" })),
                ev(2, "a", "action.committed", json!({ "receiptId": "r-1" })),
                ev(3, "a", "action.verified", json!({})),
                ev(4, "b", "action.started", json!({ "leaseId": "l2" })),
                ev(5, "b", "action.committed", json!({ "receiptId": "r-1" })),
                ev(6, "b", "action.verified", json!({})),
            ],
        ),
        (
            ViolationClass::DuplicateMutation,
            vec![
                ev(1, "a", "action.started", json!({ "leaseId": "l" })),
                ev(2, "a", "action.committed", json!({ "receiptId": "r-1" })),
                ev(3, "a", "action.committed", json!({ "receiptId": "r-2" })),
                ev(4, "a", "action.verified", json!({})),
            ],
        ),
    ];
    for (class, events) in cases {
        let report = ComputerUseEvaluator::new().evaluate(&events);
        let found = report.of_class(class);
        // A commit and a verification without a start are one violation each.
        let expected = if class == ViolationClass::WithoutStart {
            2
        } else {
            1
        };
        assert_eq!(found.len(), expected, "{class:?}: {:?}", report.violations);
        assert_eq!(
            report.violations.len(),
            expected,
            "{class:?} flagged other classes too"
        );
        assert_eq!(
            found[0].action_id,
            if class == ViolationClass::ReceiptSeenTwice {
                "b"
            } else {
                "a"
            }
        );
        assert!(!report.passed);
    }
}

#[test]
fn the_score_is_the_longest_common_subsequence_ratio() {
    assert_eq!(sequence_score::<&str, &str>(&[], &[]), 1.0);
    assert_eq!(sequence_score(&["a", "b", "c"], &["a", "b", "c"]), 1.0);
    assert_eq!(sequence_score(&["a", "c"], &["a", "b", "c"]), 2.0 / 3.0);
    assert_eq!(
        sequence_score(&["c", "b", "a"], &["a", "b", "c"]),
        1.0 / 3.0
    );
    assert_eq!(sequence_score(&["x"], &["a", "b"]), 0.0);
    // A clean trajectory that does not follow the expected sequence does not pass.
    let mut events = good_trajectory();
    events.swap(0, 2);
    let report = ComputerUseEvaluator::expecting(EXPECTED).evaluate(&events);
    assert!(report.score < 1.0 && !report.passed);
}

// ---- the evaluation receipt -----------------------------------------------------

fn fixture_receipt() -> AdkEvaluationReceipt {
    let path = format!(
        "{}/tests/fixtures/adk-evaluation-receipt-7.0.0.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn the_golden_receipt_verifies_as_is() {
    fixture_receipt().verify().unwrap();
}

#[test]
fn changing_any_single_claim_breaks_the_receipt() {
    type Change = fn(&mut AdkEvaluationReceipt);
    let changes: Vec<(&str, Change)> = vec![
        ("testsPassed", |r| r.claims.tests_passed = false),
        ("authBound", |r| r.claims.auth_bound = false),
        ("multimodalEvidence", |r| {
            r.claims.multimodal_evidence = false
        }),
        ("duplicateMutations", |r| r.claims.duplicate_mutations = 1),
        ("crashPointsCovered", |r| r.claims.crash_points_covered = 1),
        ("testCount", |r| r.claims.test_count = 0),
        ("testCount+1", |r| r.claims.test_count += 1),
        ("commands", |r| r.commands.truncate(1)),
        ("assertions", |r| {
            r.assertions.push("graph.parallel_one_executor".into())
        }),
        ("assertions-empty", |r| r.assertions.clear()),
        ("subjectVersion", |r| r.subject_version = "7.0.1".into()),
        ("sources.digest", |r| {
            r.sources[0].digest = "sha256:abc".into()
        }),
        ("sources.path", |r| r.sources[0].path = "other".into()),
        ("sourceDigest", |r| {
            r.source_digest = format!("sha256:{}", "0".repeat(64))
        }),
        ("outputDigest", |r| r.output_digest = "md5:0".into()),
        ("receiptDigest", |r| {
            r.receipt_digest = format!("sha256:{}", "1".repeat(64))
        }),
        ("protocol", |r| r.protocol = "other".into()),
        ("generatedAt", |r| r.generated_at = "yesterday".into()),
    ];
    for (name, change) in changes {
        let mut receipt = fixture_receipt();
        change(&mut receipt);
        assert!(receipt.verify().is_err(), "{name} still verified");
    }
    // Resealing a changed but valid receipt makes it verify again.
    let mut receipt = fixture_receipt();
    receipt.claims.test_count = 200;
    receipt.seal().unwrap();
    receipt.verify().unwrap();
}

// ---- the journal ------------------------------------------------------------------

fn journaled_rig() -> (Rig, Arc<MemoryJournal>) {
    let mut rig = rig();
    let sink = Arc::new(MemoryJournal::new());
    let journal = Arc::new(Journal::new(sink.clone()));
    rig.session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("executor")
        .journal(journal)
        .build()
        .unwrap();
    (rig, sink)
}

fn types(entries: &[JournalEntry]) -> Vec<String> {
    entries.iter().map(|e| e.event.event_type.clone()).collect()
}

const CHAIN: [&str; 8] = [
    "action.previewed",
    "action.approved",
    "target.reserved",
    "lease.acquired",
    "action.started",
    "action.committed",
    "action.verified",
    "target.released",
];

#[tokio::test]
async fn the_journal_of_a_real_chain_verifies_and_evaluates_clean() {
    let (rig, sink) = journaled_rig();
    let _done = rig.session.run(action("j-1")).await.unwrap();
    let entries = sink.entries();
    assert_eq!(types(&entries), CHAIN);
    verify_journal(&entries, None).unwrap();
    let report = ComputerUseEvaluator::expecting(CHAIN).evaluate(&journal_events(&entries));
    assert!(report.passed, "{report:?}");
    let started = &entries[4].event;
    assert_eq!(started.payload.as_ref().unwrap()["leaseId"], "lease-1");
    // Values never appear: the clipboard text is not in the journal.
    assert!(!serde_json::to_string(&entries).unwrap().contains("hello"));
}

#[tokio::test]
async fn the_journal_of_a_failed_chain_shows_the_refusal_and_the_release() {
    let (rig, sink) = journaled_rig();
    rig.runtime.script().lease = Some(Arc::new(
        |l: &mut adk_computer_use::contracts::ControlLease| l.session_id = "other".into(),
    ));
    assert!(rig.session.run(action("j-2")).await.is_err());
    let entries = sink.entries();
    let kinds = types(&entries);
    assert_eq!(
        &kinds[kinds.len() - 2..],
        ["action.refused", "target.released"]
    );
    let refused = entries[kinds.len() - 2].event.payload.clone().unwrap();
    assert_eq!(refused["errorClass"], "identity_mismatch");
    assert_eq!(refused["field"], "sessionId");
    assert!(!kinds.contains(&"action.started".to_owned()));
    assert!(
        ComputerUseEvaluator::new()
            .evaluate(&journal_events(&entries))
            .violations
            .is_empty()
    );
}

#[tokio::test]
async fn a_release_queued_by_a_dropped_guard_is_journaled_by_the_reaper() {
    let (
        Rig {
            runtime, session, ..
        },
        sink,
    ) = journaled_rig();
    runtime.script().hold.insert(Call::Lease);
    let timed_out = tokio::time::timeout(
        std::time::Duration::from_millis(20),
        session.run(action("j-3")),
    )
    .await;
    assert!(timed_out.is_err());
    let _stats = session.shutdown().await;
    let last = sink.entries().last().unwrap().event.clone();
    assert_eq!(last.event_type, "target.released");
    assert_eq!(last.payload.unwrap()["how"], "reaper");
}

#[tokio::test]
async fn every_kind_of_tampering_is_detected() {
    let (rig, sink) = journaled_rig();
    let _a = rig.session.run(action("j-4")).await.unwrap();
    let _b = rig.session.run(action("j-5")).await.unwrap();
    let entries = sink.entries();
    let head = verify_journal(&entries, None).unwrap();

    let mut edited = entries.clone();
    edited[3].event.payload = Some(json!({ "leaseId": "lease-forged" }));
    assert!(verify_journal(&edited, None).is_err(), "edit");

    let mut deleted = entries.clone();
    deleted.remove(5);
    assert!(verify_journal(&deleted, None).is_err(), "deletion");

    let mut reordered = entries.clone();
    reordered.swap(2, 3);
    assert!(verify_journal(&reordered, None).is_err(), "reordering");

    let truncated = &entries[..entries.len() - 2];
    assert!(
        verify_journal(truncated, None).is_ok(),
        "a truncated chain is still a chain"
    );
    let err = verify_journal(truncated, Some(&head)).unwrap_err();
    assert!(
        matches!(err, ComputerUseError::Integrity { field: "head", .. }),
        "truncation: {err}"
    );

    // Re-chaining an edit needs every later digest recomputed, which the head catches.
    let mut rewritten = entries.clone();
    rewritten.pop();
    assert!(verify_journal(&rewritten, Some(&head)).is_err());
}

#[tokio::test]
async fn a_file_journal_appends_and_the_command_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let rig = rig();
    let journal = Arc::new(Journal::new(Arc::new(FileJournal::open(&path).unwrap())));
    let session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .journal(Arc::clone(&journal))
        .build()
        .unwrap();
    match session.run(action("j-6")).await.unwrap() {
        ChainOutcome::Completed(_) => {}
        _ => panic!("expected completion"),
    }
    let entries = read_journal(&path).unwrap();
    assert_eq!(verify_journal(&entries, None).unwrap(), journal.head());

    // Reopening continues the same chain.
    let continued = Journal::continuing(
        Arc::new(FileJournal::continue_from(&path, &journal.head()).unwrap()),
        &entries,
        &journal.head(),
    )
    .unwrap();
    continued
        .record(
            SESSION,
            PRINCIPAL,
            Some("j-6"),
            "note",
            "2026-07-13T10:00:00Z".into(),
            json!({}),
        )
        .unwrap();
    let head = verify_journal(&read_journal(&path).unwrap(), None).unwrap();

    let command = adk_computer_use_testkit::binary::path(adk_computer_use_testkit::binary::JOURNAL);
    let run = |args: &[&str]| {
        std::process::Command::new(&command)
            .args(args)
            .output()
            .unwrap()
    };
    let path_text = path.to_str().unwrap();
    let ok = run(&[path_text, "--head", &head]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );

    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("lease-1", "lease-9", 1)).unwrap();
    let tampered = run(&[path_text, "--unanchored"]);
    assert_eq!(tampered.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&tampered.stdout).contains("TAMPERED"));

    // A well-chained journal that shows a violation also fails.
    let bad = dir.path().join("bad.jsonl");
    let journal = Journal::new(Arc::new(FileJournal::open(&bad).unwrap()));
    journal
        .record("s", "p", Some("a"), "action.started", "t".into(), json!({}))
        .unwrap();
    let flagged = run(&[bad.to_str().unwrap(), "--unanchored"]);
    assert_eq!(flagged.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&flagged.stdout).contains("mutation_without_lease"));
}

/// A sink that refuses to store one event type.
struct RefusingSink {
    refused: &'static str,
    inner: MemoryJournal,
}

impl JournalSink for RefusingSink {
    fn append(&self, entry: &JournalEntry) -> Result<(), ComputerUseError> {
        if entry.event.event_type == self.refused {
            return Err(ComputerUseError::Transport {
                operation: "journal".into(),
                message: "disk full".into(),
            });
        }
        self.inner.append(entry)
    }
}

/// A rig whose journal refuses every `refused` event, and that journal.
fn refusing(refused: &'static str) -> (Rig, Arc<RefusingSink>) {
    let sink = Arc::new(RefusingSink {
        refused,
        inner: MemoryJournal::new(),
    });
    (rig_with_sink(Arc::clone(&sink)), sink)
}

fn is_journal_failure(err: &ComputerUseError) -> bool {
    matches!(err, ComputerUseError::Transport { operation, .. } if operation == "journal")
}

fn rig_with_sink(sink: Arc<RefusingSink>) -> Rig {
    let mut rig = rig();
    rig.session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .journal(Arc::new(Journal::new(sink)))
        .build()
        .unwrap();
    rig
}

#[tokio::test]
async fn a_start_that_cannot_be_journaled_does_not_mutate() {
    let (rig, sink) = refusing("action.started");
    let err = rig.session.run(action("j-7")).await.err().unwrap();
    assert!(is_journal_failure(&err), "{err}");
    assert_eq!(rig.runtime.count(Call::Execute), 0);
    assert_eq!(rig.runtime.mutations(), 0);
    assert_eq!(rig.runtime.active_reservations(), 0);
    // The refusal and the release are still recorded.
    let kinds = types(&sink.inner.entries());
    assert!(
        kinds.ends_with(&["action.refused".to_owned(), "target.released".to_owned()]),
        "{kinds:?}"
    );
}

#[tokio::test]
async fn a_commit_that_cannot_be_journaled_is_counted_not_hidden() {
    let (rig, _) = refusing("action.committed");
    match rig.session.run(action("j-8")).await.unwrap() {
        ChainOutcome::Completed(done) => assert!(done.performed()),
        _ => panic!("expected completion"),
    }
    assert_eq!(rig.runtime.mutations(), 1);
    assert_eq!(rig.session.journal_failures(), 1);
}

#[tokio::test]
async fn a_preview_that_cannot_be_journaled_ends_the_action_before_reserving() {
    let (rig, _) = refusing("action.previewed");
    let err = rig.session.run(action("j-9")).await.err().unwrap();
    assert!(is_journal_failure(&err), "{err}");
    assert_eq!(rig.runtime.count(Call::Reserve), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

#[test]
fn a_server_that_checks_before_it_commits_is_not_flagged_and_an_unchecked_commit_is() {
    // Upstream's order: the server's own check, then the commit.
    let checked_first = vec![
        ev(1, "a", "action.started", json!({ "leaseId": "lease-1" })),
        ev(2, "a", "action.verified", json!({ "verified": true })),
        ev(3, "a", "action.committed", json!({ "receiptId": "r-1" })),
    ];
    let report = ComputerUseEvaluator::new().evaluate(&checked_first);
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    // A check of another action does not cover this one.
    let other = vec![
        ev(1, "a", "action.started", json!({ "leaseId": "lease-1" })),
        ev(2, "b", "action.started", json!({ "leaseId": "lease-1" })),
        ev(3, "b", "action.verified", json!({ "verified": true })),
        ev(4, "a", "action.committed", json!({ "receiptId": "r-1" })),
    ];
    let report = ComputerUseEvaluator::new().evaluate(&other);
    assert_eq!(
        report.of_class(ViolationClass::CommitNeverVerified).len(),
        1
    );
}

/// Upstream records its shadow observations as actions too: previewed in
/// shadow mode, started with no lease, committed with nothing to verify.
/// Those are not violations. A mutation is, however it is dressed: a start
/// that says shadow after a preview that did not, an earlier shadow preview
/// of the same id, or the server's word that no verification is needed.
#[test]
fn observations_are_exempt_and_nothing_else_is() {
    let observation = |id: &str, at: u64| {
        vec![
            ev(
                at,
                id,
                "action.previewed",
                json!({ "mode": "shadow", "actionClass": "observe" }),
            ),
            ev(
                at + 1,
                id,
                "action.started",
                json!({ "mode": "shadow", "leaseId": null }),
            ),
            ev(
                at + 2,
                id,
                "action.committed",
                json!({ "receiptId": format!("r-{id}") }),
            ),
        ]
    };
    let report = ComputerUseEvaluator::new().evaluate(&observation("obs", 1));
    assert!(report.violations.is_empty(), "{:?}", report.violations);
    let classes = |events: Vec<SessionEvent>| -> Vec<ViolationClass> {
        ComputerUseEvaluator::new()
            .evaluate(&events)
            .violations
            .into_iter()
            .map(|v| v.class)
            .collect()
    };
    let both = [
        ViolationClass::MutationWithoutLease,
        ViolationClass::CommitNeverVerified,
    ];
    // A start that claims shadow after a real preview.
    let dressed = vec![
        ev(
            1,
            "w",
            "action.previewed",
            json!({ "mode": "foreground", "actionClass": "edit_reversible" }),
        ),
        ev(
            2,
            "w",
            "action.started",
            json!({ "mode": "shadow", "leaseId": null }),
        ),
        ev(3, "w", "action.committed", json!({ "receiptId": "r-w" })),
    ];
    assert_eq!(classes(dressed), both);
    // An earlier shadow run of the same id exempts nothing after it.
    let mut reused = observation("a", 1);
    reused.extend([
        ev(
            4,
            "a",
            "action.previewed",
            json!({ "mode": "background", "actionClass": "edit_reversible" }),
        ),
        ev(
            5,
            "a",
            "action.started",
            json!({ "mode": "background", "leaseId": null }),
        ),
        ev(6, "a", "action.committed", json!({ "receiptId": "r-a2" })),
    ]);
    let found = classes(reused);
    assert!(
        found.contains(&ViolationClass::MutationWithoutLease),
        "{found:?}"
    );
    assert!(
        found.contains(&ViolationClass::CommitNeverVerified),
        "{found:?}"
    );
    // The server saying a verification is not required does not excuse one.
    let unchecked = vec![
        ev(
            1,
            "r",
            "action.previewed",
            json!({ "mode": "background", "actionClass": "secret_access", "verificationRequired": false }),
        ),
        ev(
            2,
            "r",
            "action.started",
            json!({ "mode": "background", "leaseId": "lease-1" }),
        ),
        ev(3, "r", "action.committed", json!({ "receiptId": "r-r" })),
    ];
    assert_eq!(classes(unchecked), [ViolationClass::CommitNeverVerified]);
}
