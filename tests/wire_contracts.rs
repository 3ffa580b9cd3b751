//! Every upstream v8 wire vector decodes into our types and writes back to
//! equal JSON, and the three schemas' invariants hold on decoding and on
//! construction.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::ComputerUseError;
use adk_computer_use::contracts::*;
use adk_computer_use::eval::AdkEvaluationReceipt;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn round_trip<T: Serialize + DeserializeOwned>(name: &str) -> T {
    let original = fixture(name);
    let decoded: T = serde_json::from_value(original.clone()).unwrap();
    let written = serde_json::to_value(&decoded).unwrap();
    assert_eq!(written, original, "{name} did not round-trip");
    decoded
}

#[test]
fn action_preview_round_trips() {
    let preview: ActionPreview = round_trip("action-preview.json");
    assert_eq!(preview.envelope.requested_mode, ExecutionMode::Background);
    assert_eq!(
        preview.blocker.as_deref(),
        Some(blockers::FOREGROUND_REQUIRED)
    );
}

#[test]
fn evaluation_receipt_round_trips() {
    round_trip::<AdkEvaluationReceipt>("adk-evaluation-receipt-7.0.0.json");
}

#[test]
fn approval_grant_round_trips() {
    let grant: ApprovalGrant = round_trip("approval-grant.json");
    assert_eq!(grant.fields().scope, ApprovalScope::SessionOperation);
}

#[test]
fn control_lease_round_trips() {
    let lease: ControlLease = round_trip("control-lease.json");
    assert_eq!(lease.boundaries.window_ids, vec![WindowId::Number(42)]);
}

#[test]
fn execution_receipt_round_trips() {
    let receipt: ExecutionReceipt = round_trip("execution-receipt.json");
    assert_eq!(receipt.status, ReceiptStatus::Committed);
}

#[test]
fn safety_corpus_round_trips() {
    let corpus: SafetyCorpus = round_trip("safety-corpus.json");
    assert_eq!(corpus.scenarios.len(), 4);
}

#[test]
fn session_completion_round_trips() {
    let session: RuntimeSession = round_trip("session-completion.json");
    assert!(session.completion.is_some());
}

#[test]
fn session_deletion_round_trips() {
    round_trip::<SessionDeletionResult>("session-deletion.json");
}

#[test]
fn session_event_round_trips() {
    let event: SessionEvent = round_trip("session-event.json");
    assert_eq!(event.event_type, "action.committed");
}

#[test]
fn session_follow_up_round_trips() {
    round_trip::<SessionFollowUp>("session-follow-up.json");
}

#[test]
fn target_reservation_round_trips() {
    round_trip::<TargetReservation>("target-reservation.json");
}

// ---- approval-grant.schema.json -------------------------------------------

fn grant_json() -> Value {
    fixture("approval-grant.json")
}

fn grant_error(change: impl FnOnce(&mut Value)) -> ComputerUseError {
    let mut value = grant_json();
    change(&mut value);
    let decoded = serde_json::from_value::<ApprovalGrant>(value.clone());
    assert!(decoded.is_err(), "decoding accepted {value}");
    let fields: ApprovalGrantFields = match serde_json::from_value(value) {
        Ok(fields) => fields,
        // Unknown fields and wrong types are refused by the plain form itself.
        Err(err) => {
            return ComputerUseError::Decode {
                what: "ApprovalGrantFields".into(),
                message: err.to_string(),
            };
        }
    };
    ApprovalGrant::try_from(fields).expect_err("construction accepted what decoding refused")
}

fn exact_action_grant() -> Value {
    let mut value = grant_json();
    let digest = value["actionDigest"].clone();
    value["scope"] = json!("exact_action");
    value["scopeDigest"] = digest;
    value["remainingUses"] = json!(1);
    value
}

#[test]
fn grant_digests_must_be_lowercase_hex() {
    let err = grant_error(|v| v["actionDigest"] = json!("A".repeat(64)));
    assert_eq!(err.field(), Some("actionDigest"));
    let err = grant_error(|v| v["scopeDigest"] = json!("b".repeat(63)));
    assert_eq!(err.field(), Some("scopeDigest"));
}

#[test]
fn grant_use_accounting_is_bounded() {
    let err = grant_error(|v| v["remainingUses"] = json!(101));
    assert_eq!(err.field(), Some("remainingUses"));
    let err = grant_error(|v| v["consumedByActionIds"] = json!(["a", "a"]));
    assert_eq!(err.field(), Some("consumedByActionIds"));
    let many: Vec<String> = (0..101).map(|i| format!("action-{i}")).collect();
    let err = grant_error(|v| v["consumedByActionIds"] = json!(many));
    assert_eq!(err.field(), Some("consumedByActionIds"));
}

#[test]
fn exact_action_binds_one_digest_and_one_use() {
    let accepted: ApprovalGrant = serde_json::from_value(exact_action_grant()).unwrap();
    assert_eq!(accepted.fields().scope, ApprovalScope::ExactAction);

    let mut two_uses = exact_action_grant();
    two_uses["remainingUses"] = json!(2);
    let err = serde_json::from_value::<ApprovalGrant>(two_uses).unwrap_err();
    assert!(err.to_string().contains("remainingUses"), "{err}");

    let mut other_scope = exact_action_grant();
    other_scope["scopeDigest"] = json!("c".repeat(64));
    let err = serde_json::from_value::<ApprovalGrant>(other_scope).unwrap_err();
    assert!(err.to_string().contains("scopeDigest"), "{err}");
}

#[test]
fn session_operation_is_only_a_bounded_reversible_edit() {
    let err = grant_error(|v| v["tool"] = json!("left_click"));
    assert_eq!(err.field(), Some("tool"));
    let err = grant_error(|v| v["operation"] = json!(""));
    assert_eq!(err.field(), Some("operation"));
    let err = grant_error(|v| v["actionClass"] = json!("destructive"));
    assert_eq!(err.field(), Some("actionClass"));
    let err = grant_error(|v| v["remainingUses"] = json!(21));
    assert_eq!(err.field(), Some("remainingUses"));
}

#[test]
fn grant_rejects_unknown_fields_and_bad_times() {
    let err = grant_error(|v| v["bearerToken"] = json!("secret"));
    assert!(matches!(err, ComputerUseError::Decode { .. }));
    let err = grant_error(|v| v["expiresAt"] = json!("soon"));
    assert_eq!(err.field(), Some("expiresAt"));
    let err = grant_error(|v| v["expiresAt"] = v["issuedAt"].clone());
    assert_eq!(err.field(), Some("expiresAt"));
    let err = grant_error(|v| v["grantId"] = json!(""));
    assert_eq!(err.field(), Some("grantId"));
}

// ---- target-sensitivity.schema.json ---------------------------------------

fn sensitivity_json() -> Value {
    fixture("action-preview.json")["envelope"]["targetSensitivity"].clone()
}

fn sensitivity_error(change: impl FnOnce(&mut Value)) -> ComputerUseError {
    let mut value = sensitivity_json();
    change(&mut value);
    assert!(
        serde_json::from_value::<TargetSensitivityEvidence>(value.clone()).is_err(),
        "decoded {value}"
    );
    match serde_json::from_value::<SensitivityFields>(value) {
        Ok(fields) => TargetSensitivityEvidence::try_from(fields).unwrap_err(),
        Err(err) => ComputerUseError::Decode {
            what: "SensitivityFields".into(),
            message: err.to_string(),
        },
    }
}

#[test]
fn sensitivity_bounds_signals_and_fields() {
    let eleven = json!([
        "secure_role",
        "secure_subrole",
        "protected_content",
        "uia_is_password",
        "sensitive_label",
        "ambiguous_match",
        "element_not_found",
        "inspection_error",
        "invalid_field",
        "native_signal_unavailable",
        "secure_role"
    ]);
    let err = sensitivity_error(|v| v["signals"] = eleven);
    assert_eq!(err.field(), Some("signals"));
    let err = sensitivity_error(|v| v["signals"] = json!(["secure_role", "secure_role"]));
    assert_eq!(err.field(), Some("signals"));
    let err = sensitivity_error(|v| v["fieldsChecked"] = json!(101));
    assert_eq!(err.field(), Some("fieldsChecked"));
}

#[test]
fn conclusive_sensitivity_needs_accessibility_evidence() {
    let err = sensitivity_error(|v| v["source"] = json!("unavailable"));
    assert_eq!(err.field(), Some("source"));
    let err = sensitivity_error(|v| v["fieldsChecked"] = json!(0));
    assert_eq!(err.field(), Some("fieldsChecked"));
    let err = sensitivity_error(|v| v["assessment"] = json!("sensitive"));
    assert_eq!(err.field(), Some("signals"));
    let err = sensitivity_error(|v| v["unexpected"] = json!(1));
    assert!(matches!(err, ComputerUseError::Decode { .. }));

    let mut unknown = sensitivity_json();
    unknown["assessment"] = json!("unknown");
    unknown["source"] = json!("unavailable");
    unknown["fieldsChecked"] = json!(0);
    serde_json::from_value::<TargetSensitivityEvidence>(unknown).unwrap();
    let mut sensitive = sensitivity_json();
    sensitive["assessment"] = json!("sensitive");
    sensitive["signals"] = json!(["secure_role"]);
    serde_json::from_value::<TargetSensitivityEvidence>(sensitive).unwrap();
}

// ---- action-postcondition.schema.json -------------------------------------

const DIGEST: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";

fn postcondition(value: Value) -> Result<ActionPostcondition, String> {
    serde_json::from_value::<ActionPostcondition>(value).map_err(|e| e.to_string())
}

#[test]
fn postcondition_kinds_round_trip_in_both_directions() {
    let cases = [
        json!({"kind": "ui_element", "role": "AXTextField", "exists": true, "valueDigest": DIGEST}),
        json!({"kind": "filesystem", "path": "/tmp/a", "exists": true, "contentDigest": DIGEST}),
        json!({"kind": "registry", "path": "HKCU\\A", "name": "b", "exists": false}),
        json!({"kind": "process", "pid": 7, "running": false}),
        json!({"kind": "window", "windowId": 0, "exists": true}),
    ];
    for case in cases {
        let decoded = postcondition(case.clone()).unwrap();
        assert_eq!(serde_json::to_value(&decoded).unwrap(), case);
        let input = decoded.to_input();
        assert!(input.get("valueDigest").is_none() && input.get("contentDigest").is_none());
        assert_eq!(ActionPostcondition::from_input(&input).unwrap(), decoded);
    }
}

#[test]
fn postcondition_rules_hold_on_answers_and_inputs() {
    let bad = [
        (json!({"kind": "ui_element", "exists": true}), "role"),
        (
            json!({"kind": "ui_element", "label": "Saved", "exists": true, "valueDigest": "sha256:ABC"}),
            "valueDigest",
        ),
        (
            json!({"kind": "ui_element", "label": "Saved", "exists": false, "valueDigest": DIGEST}),
            "valueDigest",
        ),
        (
            json!({"kind": "filesystem", "path": "/a", "exists": false, "contentDigest": DIGEST}),
            "contentDigest",
        ),
        (
            json!({"kind": "process", "pid": 7, "running": true}),
            "running",
        ),
        (
            json!({"kind": "process", "pid": 0, "running": false}),
            "pid",
        ),
        (
            json!({"kind": "window", "windowId": 1, "exists": true, "extra": 1}),
            "extra",
        ),
    ];
    for (case, field) in bad {
        let err = postcondition(case.clone()).unwrap_err();
        assert!(err.contains(field), "{case} -> {err}");
        let mut input = case.clone();
        if let Some(map) = input.as_object_mut() {
            for (camel, snake) in [
                ("valueDigest", "value_digest"),
                ("contentDigest", "content_digest"),
                ("windowId", "window_id"),
            ] {
                if let Some(v) = map.remove(camel) {
                    map.insert(snake.into(), v);
                }
            }
        }
        let err = ActionPostcondition::from_input(&input).unwrap_err();
        assert!(err.to_string().contains(field), "input {input} -> {err}");
    }
    // The input form refuses the answer form's spelling.
    assert!(
        ActionPostcondition::from_input(&json!({"kind": "window", "windowId": 1, "exists": true}))
            .is_err()
    );
}

#[test]
fn a_postcondition_cannot_be_constructed_outside_its_rules() {
    let fields = PostconditionFields::Process {
        pid: 3,
        running: true,
    };
    let err = ActionPostcondition::try_from(fields).unwrap_err();
    assert_eq!(err.field(), Some("running"));
}

// ---- digests ----------------------------------------------------------------

#[test]
fn sealing_the_evaluation_receipt_reproduces_its_digest() {
    let original: AdkEvaluationReceipt =
        serde_json::from_value(fixture("adk-evaluation-receipt-7.0.0.json")).unwrap();
    let mut resealed = original.clone();
    resealed.receipt_digest = String::new();
    resealed.seal().unwrap();
    assert_eq!(resealed.receipt_digest, original.receipt_digest);
}

#[test]
fn canonical_json_sorts_keys_and_drops_whitespace() {
    let value = json!({"b": [1, {"d": "x", "c": null}], "a": "é\n"});
    assert_eq!(
        adk_computer_use::digest::canonical_json(&value),
        r#"{"a":"é\n","b":[1,{"c":null,"d":"x"}]}"#
    );
    assert_eq!(
        adk_computer_use::digest::sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_data_labels_spelling_is_its_wire_form() {
    for label in [
        DataLabel::Public,
        DataLabel::Private,
        DataLabel::Credential,
        DataLabel::Payment,
        DataLabel::Health,
        DataLabel::Unknown,
    ] {
        assert_eq!(serde_json::to_value(label).unwrap(), label.as_str());
        assert_eq!(label.to_string(), label.as_str());
    }
}
