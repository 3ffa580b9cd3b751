//! Properties over generated input: every contract round-trips, and no decoder
//! panics on arbitrary JSON.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::contracts::*;
use adk_computer_use::eval::AdkEvaluationReceipt;
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        ".{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "active",
            "committed",
            "exact_action",
            "ui_element",
            "process",
            "background",
            "sha256:",
            "2026-07-13T10:00:00Z",
        ])
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(4, 48, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "kind",
                    "sessionId",
                    "actionId",
                    "exists",
                    "running",
                    "pid",
                    "scope",
                    "state",
                    "expiresAt",
                    "envelope",
                    "lease",
                    "signals",
                    "assessment",
                    "windowId",
                    "valueDigest",
                    "x",
                ])
                .prop_map(String::from),
                inner,
                0..8
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn decodes_without_panic<T: DeserializeOwned + Serialize>(value: &Value) {
    if let Ok(decoded) = serde_json::from_value::<T>(value.clone()) {
        // Whatever decodes also encodes and decodes again to the same JSON.
        let written = serde_json::to_value(&decoded).unwrap();
        let again: T = serde_json::from_value(written.clone()).unwrap();
        assert_eq!(serde_json::to_value(&again).unwrap(), written);
    }
}

fn round_trips<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(value: &T) {
    let written = serde_json::to_value(value).unwrap();
    let decoded: T = serde_json::from_value(written.clone()).unwrap();
    assert_eq!(&decoded, value);
    assert_eq!(serde_json::to_value(&decoded).unwrap(), written);
}

prop_compose! {
    fn target()(app in "[a-z.]{1,12}", window in prop::option::of(0u64..1000), confidence in 0.0f64..=1.0,
                pid in prop::option::of(1u32..99999), role in prop::option::of("[A-Za-z]{1,8}")) -> TargetEvidence {
        TargetEvidence {
            platform: "linux".into(), app_id: app, pid, window_id: window.map(WindowId::Number),
            window_title_digest: None, display_id: None, role, label_digest: None,
            bounds: Some(Bounds { x: 1.0, y: 2.5, width: 10.0, height: 20.0 }),
            observation_id: "observation-1".into(), screenshot_hash: None, ui_tree_revision: None,
            confidence, captured_at: "2026-07-13T10:00:00Z".into(),
        }
    }
}

prop_compose! {
    fn envelope()(id in "[a-z0-9-]{1,16}", session in "[a-z0-9-]{1,16}", agent in prop::option::of("[a-z]{1,8}"),
                  target in prop::option::of(target()), reversible in any::<bool>(), digest in "[a-f0-9]{64}",
                  with_post in any::<bool>(), mode in prop::sample::select(vec![ExecutionMode::Shadow, ExecutionMode::Background, ExecutionMode::Foreground]))
                  -> ActionEnvelope {
        ActionEnvelope {
            action_id: id, session_id: session, execution_group_id: None, principal_id: "p".into(),
            agent_id: agent, tool: "write_clipboard".into(), operation: "write_clipboard".into(),
            action_class: ActionClass::EditReversible, requested_mode: mode, target,
            resource: None, provenance: Some(ActionProvenance { untrusted_instruction: false, source_observation_ids: vec!["o".into()], crosses_data_boundary: None }),
            target_sensitivity: None, data_labels: vec![DataLabel::Public],
            postcondition: with_post.then(|| ActionPostcondition::try_from(PostconditionFields::Window { window_id: 3, exists: true }).unwrap()),
            reversible, external_side_effect: !reversible,
            proposed_at: "2026-07-13T10:00:00Z".into(), expires_at: "2026-07-13T10:00:30Z".into(),
            args_digest: digest, attempt: None, certification_id: None,
        }
    }
}

prop_compose! {
    fn lease()(id in "[a-z0-9-]{1,16}", budget in 0u32..10000, used in 0u32..10000,
               apps in prop::collection::vec("[a-z.]{1,10}", 0..3), windows in prop::collection::vec(0u64..100, 0..3),
               state in prop::sample::select(vec![LeaseState::Active, LeaseState::Released, LeaseState::Expired, LeaseState::Revoked]))
               -> ControlLease {
        ControlLease {
            lease_id: id, revision: 1, session_id: "s".into(), principal_id: "p".into(), agent_id: None,
            kind: LeaseKind::Cooperative, execution_mode: ExecutionMode::Background, state,
            acquired_at: "2026-07-13T10:00:00Z".into(), expires_at: "2026-07-13T10:00:30Z".into(),
            action_budget: budget, actions_used: used,
            boundaries: LeaseBoundaries { app_ids: apps, window_ids: windows.into_iter().map(WindowId::Number).collect(), display_ids: vec![] },
            terminal_reason: None,
        }
    }
}

prop_compose! {
    fn reservation()(id in "[a-z0-9-]{1,16}", intent in "[a-z0-9-]{1,16}", window in prop::option::of("[a-z0-9]{1,6}"),
                     group in prop::option::of("[a-z]{1,6}")) -> TargetReservation {
        TargetReservation {
            reservation_id: id, revision: 2, intent_id: intent, session_id: "s".into(), principal_id: "p".into(),
            execution_group_id: group, agent_id: None,
            scope: ReservationScope { app_id: "app".into(), window_id: window.map(WindowId::Name) },
            state: ReservationState::Active, acquired_at: "2026-07-13T10:00:00Z".into(),
            expires_at: "2026-07-13T10:00:30Z".into(), terminal_reason: None,
        }
    }
}

prop_compose! {
    fn receipt()(id in "[a-z0-9-]{1,16}", attempt in 1u32..5, result in prop::option::of(arbitrary_json()),
                 status in prop::sample::select(vec![ReceiptStatus::Committed, ReceiptStatus::Failed, ReceiptStatus::Indeterminate]))
                 -> ExecutionReceipt {
        ExecutionReceipt {
            receipt_id: id, session_id: "s".into(), action_id: "a".into(), action_digest: "d".into(), attempt,
            status, created_at: "t".into(), updated_at: "t".into(),
            // `null` is written as an absent field, so a present result is never null.
            result: result.filter(|r| !r.is_null()), error: None,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn envelopes_round_trip(value in envelope()) { round_trips(&value); }

    #[test]
    fn leases_round_trip(value in lease()) { round_trips(&value); }

    #[test]
    fn reservations_round_trip(value in reservation()) { round_trips(&value); }

    #[test]
    fn receipts_round_trip(value in receipt()) { round_trips(&value); }

    #[test]
    fn grants_round_trip(uses in 1u32..=20, consumed in 0usize..=0, digest in "[a-f0-9]{64}") {
        let fields = ApprovalGrantFields {
            grant_id: "g".into(), scope: ApprovalScope::SessionOperation, principal_id: "p".into(),
            session_id: "s".into(), action_digest: digest.clone(), scope_digest: digest,
            policy_digest: "policy".into(), tool: "fill_form".into(), operation: "fill_form".into(),
            action_class: ActionClass::EditReversible, mode: ExecutionMode::Background,
            issued_at: "2026-07-13T10:00:00Z".into(), expires_at: "2026-07-13T10:02:00Z".into(),
            remaining_uses: uses, consumed_by_action_ids: (0..consumed).map(|i| i.to_string()).collect(),
        };
        round_trips(&ApprovalGrant::try_from(fields).unwrap());
    }

    #[test]
    fn no_decoder_panics_on_arbitrary_json(value in arbitrary_json()) {
        decodes_without_panic::<ActionEnvelope>(&value);
        decodes_without_panic::<ActionPreview>(&value);
        decodes_without_panic::<ActionPostcondition>(&value);
        decodes_without_panic::<TargetSensitivityEvidence>(&value);
        decodes_without_panic::<ApprovalGrant>(&value);
        decodes_without_panic::<ExecutionCapability>(&value);
        decodes_without_panic::<PolicyDecision>(&value);
        decodes_without_panic::<ExecutionReceipt>(&value);
        decodes_without_panic::<ControlLease>(&value);
        decodes_without_panic::<TargetReservation>(&value);
        decodes_without_panic::<SessionEvent>(&value);
        decodes_without_panic::<SessionEventPage>(&value);
        decodes_without_panic::<SessionFollowUp>(&value);
        decodes_without_panic::<FollowUpPage>(&value);
        decodes_without_panic::<RuntimeSession>(&value);
        decodes_without_panic::<SessionDeletionResult>(&value);
        decodes_without_panic::<SafetyCorpus>(&value);
        decodes_without_panic::<AdkEvaluationReceipt>(&value);
        let _ = ActionPostcondition::from_input(&value);
    }

    #[test]
    fn no_decoder_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = serde_json::from_slice::<ActionPreview>(&bytes);
        let _ = serde_json::from_slice::<ControlLease>(&bytes);
        let _ = serde_json::from_slice::<ApprovalGrant>(&bytes);
        let _ = serde_json::from_slice::<ExecutionReceipt>(&bytes);
    }
}
