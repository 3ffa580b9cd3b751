//! The seeds' evidence table, row by row: verification is not commitment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::VerificationOutcome;
use adk_computer_use::contracts::*;
use adk_computer_use::runtime::{evaluate_evidence, evaluate_with};
use serde_json::{Value, json};

const EXPECTED: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn receipt(status: ReceiptStatus, result: Option<Value>) -> ExecutionReceipt {
    ExecutionReceipt {
        receipt_id: "r".into(),
        session_id: "s".into(),
        action_id: "a".into(),
        action_digest: "d".into(),
        attempt: 1,
        status,
        created_at: "t".into(),
        updated_at: "t".into(),
        result,
        error: None,
    }
}

fn digest_post() -> ActionPostcondition {
    ActionPostcondition::try_from(PostconditionFields::Filesystem {
        path: "/tmp/out".into(),
        exists: true,
        content_digest: Some(EXPECTED.into()),
    })
    .unwrap()
}

fn exists_post() -> ActionPostcondition {
    ActionPostcondition::try_from(PostconditionFields::Window {
        window_id: 3,
        exists: true,
    })
    .unwrap()
}

fn outcome(verification: Option<Value>, post: &ActionPostcondition) -> VerificationOutcome {
    let result = verification.map(|v| json!({ "verification": v }));
    evaluate_evidence(&receipt(ReceiptStatus::Committed, result), Some(post))
}

#[test]
fn satisfied_false_is_failed() {
    let o = outcome(
        Some(json!({"satisfied": false, "observedDigest": EXPECTED})),
        &digest_post(),
    );
    assert!(matches!(o, VerificationOutcome::Failed { .. }));
    assert!(!o.is_committed());
}

#[test]
fn a_matching_observed_digest_is_verified() {
    let o = outcome(Some(json!({"observedDigest": EXPECTED})), &digest_post());
    assert_eq!(o, VerificationOutcome::Verified);
    assert_eq!(
        (o.is_verified(), o.is_committed(), o.status()),
        (true, true, "completed")
    );
}

#[test]
fn a_different_observed_digest_is_failed() {
    let o = outcome(
        Some(json!({"satisfied": true, "observedDigest": OTHER})),
        &digest_post(),
    );
    assert_eq!(o.status(), "verification_failed");
}

#[test]
fn no_verification_object_is_committed_unverified() {
    let o = outcome(None, &digest_post());
    assert_eq!(
        (o.is_verified(), o.is_committed(), o.status()),
        (false, true, "committed_unverified")
    );
    assert!(o.detail().is_some());
}

#[test]
fn verification_without_the_expected_digest_is_committed_unverified() {
    let o = outcome(Some(json!({"satisfied": true})), &digest_post());
    assert_eq!(o.status(), "committed_unverified");
}

#[test]
fn existence_needs_an_explicit_satisfied_true() {
    assert_eq!(
        outcome(Some(json!({"satisfied": true})), &exists_post()),
        VerificationOutcome::Verified
    );
    assert_eq!(
        outcome(Some(json!({})), &exists_post()).status(),
        "committed_unverified"
    );
    assert_eq!(
        outcome(Some(json!({"satisfied": "yes"})), &exists_post()).status(),
        "committed_unverified"
    );
}

#[test]
fn no_postcondition_is_never_verified_and_an_uncommitted_receipt_fails() {
    let evidence = Some(json!({"verification": {"satisfied": true}}));
    let o = evaluate_evidence(&receipt(ReceiptStatus::Committed, evidence.clone()), None);
    assert_eq!(o.status(), "committed_unverified");
    for status in [
        ReceiptStatus::Failed,
        ReceiptStatus::Indeterminate,
        ReceiptStatus::Pending,
    ] {
        let o = evaluate_evidence(&receipt(status, evidence.clone()), Some(&exists_post()));
        assert_eq!(o.status(), "verification_failed", "{status:?}");
    }
}

mod default_verify {
    use adk_computer_use::ComputerUseError;
    use adk_computer_use::runtime::ComputerUseRuntime;

    /// A runtime that implements only what the trait requires.
    pub struct NeverRuntime;
    include!("../ui-tests/pass/never_runtime.in");
}

/// A runtime that does not implement `verify` applies the evidence table.
#[tokio::test]
async fn the_default_verify_applies_the_evidence_table() {
    use adk_computer_use::runtime::ComputerUseRuntime;
    let runtime = default_verify::NeverRuntime;
    let post = digest_post();
    let cases = [
        (receipt(ReceiptStatus::Committed, None), None),
        (receipt(ReceiptStatus::Committed, None), Some(&post)),
        (
            receipt(
                ReceiptStatus::Committed,
                Some(json!({ "verification": { "satisfied": true, "observedDigest": EXPECTED } })),
            ),
            Some(&post),
        ),
        (
            receipt(
                ReceiptStatus::Committed,
                Some(json!({ "verification": { "satisfied": true, "observedDigest": OTHER } })),
            ),
            Some(&post),
        ),
        (receipt(ReceiptStatus::Failed, None), Some(&post)),
    ];
    let mut statuses = Vec::new();
    for (receipt, post) in cases {
        let gathered = runtime.evidence(&receipt, post).await.unwrap();
        let answered = evaluate_with(&receipt, post, gathered.as_ref());
        assert_eq!(answered, evaluate_evidence(&receipt, post));
        statuses.push(answered.status());
    }
    // The cases cover every outcome.
    for status in ["completed", "committed_unverified", "verification_failed"] {
        assert!(
            statuses.contains(&status),
            "{status} not covered: {statuses:?}"
        );
    }
}
