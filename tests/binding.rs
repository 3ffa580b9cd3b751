//! Every row of the seeds' response-binding and lease-limit tables: the bound
//! object is accepted, and each bound field changed alone is rejected with
//! that field named.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::ComputerUseError;
use adk_computer_use::binding::*;
use adk_computer_use::contracts::*;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::macros::datetime;

type Change = Box<dyn Fn(&mut Value)>;

const NOW: OffsetDateTime = datetime!(2026-07-13 10:00:10 UTC);

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn envelope() -> ActionEnvelope {
    serde_json::from_value(fixture("action-preview.json")["envelope"].clone()).unwrap()
}

/// The lease fixture, bound to the preview fixture's envelope.
fn lease_json() -> Value {
    let mut lease = fixture("control-lease.json");
    lease["executionMode"] = json!("background");
    lease["kind"] = json!("cooperative");
    lease
}

/// The reservation fixture, bound to the preview fixture's envelope.
fn reservation_json() -> Value {
    let mut reservation = fixture("target-reservation.json");
    reservation["intentId"] = json!("action-0001");
    reservation["principalId"] = json!("principal-0001");
    reservation["agentId"] = json!("executor");
    reservation["scope"]["appId"] = json!("com.example.Sandbox");
    reservation
}

fn lease(change: impl FnOnce(&mut Value)) -> Result<(), ComputerUseError> {
    let mut value = lease_json();
    change(&mut value);
    validate_lease_at(&serde_json::from_value(value).unwrap(), &envelope(), NOW)
}

fn reservation(change: impl FnOnce(&mut Value)) -> Result<(), ComputerUseError> {
    let mut value = reservation_json();
    change(&mut value);
    validate_reservation_at(&serde_json::from_value(value).unwrap(), &envelope(), NOW)
}

fn receipt(change: impl FnOnce(&mut Value)) -> Result<(), ComputerUseError> {
    let mut value = fixture("execution-receipt.json");
    change(&mut value);
    validate_receipt(&serde_json::from_value(value).unwrap(), &envelope())
}

fn field_of(result: Result<(), ComputerUseError>) -> String {
    let err = result.expect_err("the changed object was accepted");
    err.field().expect("the error names no field").to_owned()
}

#[test]
fn identity_mismatch_says_object_field_expected_and_actual() {
    let err = lease(|l| l["sessionId"] = json!("session-9")).unwrap_err();
    match &err {
        ComputerUseError::IdentityMismatch {
            object,
            field,
            expected,
            actual,
        } => {
            assert_eq!((*object, *field), ("ControlLease", "sessionId"));
            assert_eq!(
                (expected.as_str(), actual.as_str()),
                ("session-0001", "session-9")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    let text = err.to_string();
    for part in [
        "ControlLease",
        "sessionId",
        "session-0001",
        "session-9",
        "rejected",
    ] {
        assert!(text.contains(part), "{text}");
    }
}

// ---- ControlLease ------------------------------------------------------------

#[test]
fn bound_lease_is_accepted() {
    lease(|_| {}).unwrap();
}

#[test]
fn each_lease_field_changed_alone_is_rejected() {
    let cases: Vec<(&str, Change)> = vec![
        (
            "sessionId",
            Box::new(|l| l["sessionId"] = json!("session-other")),
        ),
        (
            "principalId",
            Box::new(|l| l["principalId"] = json!("principal-other")),
        ),
        ("agentId", Box::new(|l| l["agentId"] = json!("agent-other"))),
        (
            "executionMode",
            Box::new(|l| l["executionMode"] = json!("foreground")),
        ),
        ("state", Box::new(|l| l["state"] = json!("revoked"))),
        (
            "expiresAt",
            Box::new(|l| l["expiresAt"] = json!("2026-07-13T10:00:09Z")),
        ),
        ("actionsUsed", Box::new(|l| l["actionsUsed"] = json!(1))),
        (
            "boundaries.appIds",
            Box::new(|l| l["boundaries"]["appIds"] = json!(["com.example.Other"])),
        ),
        (
            "boundaries.windowIds",
            Box::new(|l| l["boundaries"]["windowIds"] = json!([43])),
        ),
    ];
    for (field, change) in cases {
        assert_eq!(field_of(lease(|l| change(l))), field, "changing {field}");
    }
}

#[test]
fn an_exhausted_budget_is_refused_and_a_partly_used_one_accepted() {
    let exhausted = lease(|l| {
        l["actionBudget"] = json!(1);
        l["actionsUsed"] = json!(1);
    });
    assert_eq!(field_of(exhausted), "actionsUsed");
    lease(|l| {
        l["actionBudget"] = json!(5);
        l["actionsUsed"] = json!(3);
    })
    .unwrap();
    assert_eq!(
        field_of(lease(|l| l["actionBudget"] = json!(0))),
        "actionsUsed"
    );
}

#[test]
fn expired_and_unparseable_leases_are_refused() {
    let expired = lease(|l| l["expiresAt"] = json!("2026-07-13T10:00:10Z"));
    assert!(matches!(expired, Err(ComputerUseError::Expired { .. })));
    let unparseable = lease(|l| l["expiresAt"] = json!("next tuesday"));
    assert!(matches!(
        unparseable,
        Err(ComputerUseError::InvalidField {
            field: "expiresAt",
            ..
        })
    ));
}

#[test]
fn boundaries_scope_the_target_and_empty_boundaries_do_not() {
    assert_eq!(
        field_of(lease(
            |l| l["boundaries"]["appIds"] = json!(["com.example.Report"])
        )),
        "boundaries.appIds"
    );
    assert_eq!(
        field_of(lease(|l| l["boundaries"]["windowIds"] = json!([7, 8]))),
        "boundaries.windowIds"
    );
    lease(|l| l["boundaries"] = json!({"appIds": [], "windowIds": [], "displayIds": []})).unwrap();
    lease(|l| l["boundaries"] = json!({})).unwrap();
    // A scoped lease does not cover an envelope with no target at all.
    let mut untargeted = envelope();
    untargeted.target = None;
    let scoped: ControlLease = serde_json::from_value(lease_json()).unwrap();
    assert_eq!(
        validate_lease_at(&scoped, &untargeted, NOW)
            .unwrap_err()
            .field(),
        Some("boundaries.appIds")
    );
}

#[test]
fn an_absent_optional_agent_is_accepted() {
    lease(|l| {
        l.as_object_mut().unwrap().remove("agentId");
    })
    .unwrap();
}

// ---- TargetReservation ---------------------------------------------------------

#[test]
fn bound_reservation_is_accepted() {
    reservation(|_| {}).unwrap();
}

#[test]
fn each_reservation_field_changed_alone_is_rejected() {
    let cases: Vec<(&str, Change)> = vec![
        (
            "sessionId",
            Box::new(|r| r["sessionId"] = json!("session-other")),
        ),
        (
            "principalId",
            Box::new(|r| r["principalId"] = json!("principal-other")),
        ),
        ("agentId", Box::new(|r| r["agentId"] = json!("planner-b"))),
        (
            "executionGroupId",
            Box::new(|r| r["executionGroupId"] = json!("group-other")),
        ),
        (
            "intentId",
            Box::new(|r| r["intentId"] = json!("action-0002")),
        ),
        ("state", Box::new(|r| r["state"] = json!("released"))),
        (
            "expiresAt",
            Box::new(|r| r["expiresAt"] = json!("2026-07-13T10:00:05Z")),
        ),
        (
            "scope.appId",
            Box::new(|r| r["scope"]["appId"] = json!("com.example.Report")),
        ),
        (
            "scope.windowId",
            Box::new(|r| r["scope"]["windowId"] = json!(43)),
        ),
    ];
    for (field, change) in cases {
        assert_eq!(
            field_of(reservation(|r| change(r))),
            field,
            "changing {field}"
        );
    }
}

#[test]
fn reservation_timestamps_must_parse_and_optional_fields_may_be_absent() {
    assert_eq!(
        field_of(reservation(|r| r["expiresAt"] = json!("2026-13-45"))),
        "expiresAt"
    );
    reservation(|r| {
        let map = r.as_object_mut().unwrap();
        map.remove("agentId");
        map.remove("executionGroupId");
        map["scope"].as_object_mut().unwrap().remove("windowId");
    })
    .unwrap();
}

// ---- ExecutionReceipt ------------------------------------------------------------

#[test]
fn bound_receipt_is_accepted() {
    receipt(|_| {}).unwrap();
}

#[test]
fn each_receipt_field_changed_alone_is_rejected() {
    assert_eq!(
        field_of(receipt(|r| r["sessionId"] = json!("session-other"))),
        "sessionId"
    );
    assert_eq!(
        field_of(receipt(|r| r["actionId"] = json!("action-other"))),
        "actionId"
    );
}

#[test]
fn a_receipt_whose_ids_match_but_digest_differs_is_rejected() {
    let err = receipt(|r| r["actionDigest"] = json!("0".repeat(64))).unwrap_err();
    assert!(
        matches!(
            err,
            ComputerUseError::IdentityMismatch {
                field: "actionDigest",
                ..
            }
        ),
        "{err}"
    );
}

// ---- ActionEnvelope freshness ----------------------------------------------------

#[test]
fn a_fresh_envelope_is_accepted() {
    validate_envelope_freshness_at(&envelope(), NOW).unwrap();
}

#[test]
fn envelope_timing_rules() {
    let at = |change: &dyn Fn(&mut ActionEnvelope), now| {
        let mut envelope = envelope();
        change(&mut envelope);
        validate_envelope_freshness_at(&envelope, now)
    };
    let expired = at(&|_| {}, datetime!(2026-07-13 10:00:30 UTC));
    assert!(matches!(
        expired,
        Err(ComputerUseError::Expired {
            field: "expiresAt",
            ..
        })
    ));
    assert_eq!(
        field_of(at(&|e| e.proposed_at = "yesterday".into(), NOW)),
        "proposedAt"
    );
    assert_eq!(
        field_of(at(&|e| e.expires_at = "".into(), NOW)),
        "expiresAt"
    );
    let inverted = at(
        &|e| e.expires_at = "2026-07-13T09:59:00Z".into(),
        datetime!(2026-07-13 09:58 UTC),
    );
    assert_eq!(field_of(inverted), "expiresAt");
}

#[test]
fn system_clock_twins_read_the_real_time() {
    // The fixtures expired in July 2026; the system clock is later than that.
    assert!(matches!(
        validate_envelope_freshness(&envelope()),
        Err(ComputerUseError::Expired { .. })
    ));
    let lease: ControlLease = serde_json::from_value(lease_json()).unwrap();
    assert!(matches!(
        validate_lease(&lease, &envelope()),
        Err(ComputerUseError::Expired { .. })
    ));
    let reservation: TargetReservation = serde_json::from_value(reservation_json()).unwrap();
    assert!(matches!(
        validate_reservation(&reservation, &envelope()),
        Err(ComputerUseError::Expired { .. })
    ));
}

#[test]
fn a_reservation_scoped_more_narrowly_than_the_target_is_a_mismatch() {
    let reserved: TargetReservation = serde_json::from_value(reservation_json()).unwrap();
    let mut windowless = envelope();
    windowless.target.as_mut().unwrap().window_id = None;
    let err = validate_reservation_at(&reserved, &windowless, NOW).unwrap_err();
    assert_eq!(err.field(), Some("scope.windowId"));
    let mut untargeted = envelope();
    untargeted.target = None;
    let err = validate_reservation_at(&reserved, &untargeted, NOW).unwrap_err();
    assert_eq!(err.field(), Some("scope.appId"));
}
