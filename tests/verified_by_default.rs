//! Verified by default: an action that declares no postcondition gets the
//! runtime's postcondition for the effect the chain names from its
//! arguments (a clipboard write: the clipboard holds the text), checked to
//! expect the arguments' own digest; where none can be derived, the
//! outcome's reason says why.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use adk_computer_use::chain::*;
use adk_computer_use::contracts::*;
use adk_computer_use::digest::sha256_prefixed;
use adk_computer_use::runtime::{NamedEffect, ProposedAction};
use adk_computer_use::{ComputerUseError, VerificationOutcome};
use common::*;
use serde_json::json;

/// The clipboard check a runtime offers: its viewer's text area holding
/// the digest it is told.
fn viewer_holding(digest: String) -> ActionPostcondition {
    ActionPostcondition::try_from(PostconditionFields::UiElement {
        role: Some("AXTextArea".into()),
        label: Some("Clipboard".into()),
        exists: true,
        value_digest: Some(digest),
    })
    .unwrap()
}

/// A runtime that offers the clipboard check for the text it is given.
fn offering_the_clipboard_check(rig: &Rig) {
    rig.runtime.script().effect_postcondition = Some(Arc::new(|effect: &NamedEffect<'_>| {
        matches!(effect, NamedEffect::ClipboardText { .. })
            .then(|| viewer_holding(effect.expected_digest()))
    }));
}

#[tokio::test]
async fn a_clipboard_write_without_a_postcondition_gets_the_runtimes_check_and_is_verified() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    rig.runtime.script().evidence = Some(json!({ "observedDigest": sha256_prefixed("hello") }));
    let done = completed(rig.session.run(action("d-1")).await.unwrap());
    assert_eq!(done.outcome(), &VerificationOutcome::Verified);
    // What was previewed, bound and judged is the derived postcondition for
    // this action's own text.
    assert_eq!(
        rig.runtime.last_previewed_postcondition(),
        Some(viewer_holding(sha256_prefixed("hello")))
    );
}

#[tokio::test]
async fn evidence_of_another_text_fails_a_derived_postcondition() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    rig.runtime.script().evidence = Some(json!({ "observedDigest": sha256_prefixed("other") }));
    let done = completed(rig.session.run(action("d-2")).await.unwrap());
    assert_eq!(
        done.outcome().status(),
        "verification_failed",
        "{}",
        done.outcome()
    );
}

#[tokio::test]
async fn a_runtime_offering_a_postcondition_for_another_text_is_refused_before_anything_is_sent() {
    let rig = rig();
    rig.runtime.script().effect_postcondition = Some(Arc::new(|_: &NamedEffect<'_>| {
        Some(viewer_holding(sha256_prefixed("what the runtime wants")))
    }));
    let err = rig.session.run(action("d-3")).await.err().unwrap();
    match &err {
        ComputerUseError::IdentityMismatch {
            object,
            field,
            expected,
            ..
        } => {
            assert_eq!((*object, *field), ("derived postcondition", "valueDigest"));
            assert_eq!(expected, &sha256_prefixed("hello"));
        }
        other => panic!("expected the derived postcondition refused, got {other}"),
    }
    assert_eq!(rig.runtime.count(Call::Preview), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

#[tokio::test]
async fn a_postcondition_without_a_digest_is_not_accepted_as_the_clipboard_check() {
    let rig = rig();
    rig.runtime.script().effect_postcondition = Some(Arc::new(|_: &NamedEffect<'_>| {
        Some(
            ActionPostcondition::try_from(PostconditionFields::Window {
                window_id: WINDOW,
                exists: true,
            })
            .unwrap(),
        )
    }));
    let err = rig.session.run(action("d-4")).await.err().unwrap();
    assert!(
        matches!(
            err,
            ComputerUseError::IdentityMismatch {
                field: "valueDigest",
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(rig.runtime.count(Call::Preview), 0);
}

#[tokio::test]
async fn a_declared_postcondition_is_kept_as_declared() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    // Another window that must appear: a check that can fail.
    let declared = ActionPostcondition::try_from(PostconditionFields::Window {
        window_id: WINDOW + 1,
        exists: true,
    })
    .unwrap();
    rig.runtime.script().evidence = Some(json!({ "satisfied": true }));
    let done = completed(
        rig.session
            .run(action("d-5").with_postcondition(declared.clone()))
            .await
            .unwrap(),
    );
    assert_eq!(done.outcome(), &VerificationOutcome::Verified);
    assert_eq!(rig.runtime.last_previewed_postcondition(), Some(declared));
}

/// "The target window still exists" held before the action: however the
/// runtime vouches for it, it is no evidence, and the outcome says why.
#[tokio::test]
async fn a_check_that_held_before_the_action_is_committed_unverified_not_verified() {
    let rig = rig();
    let stays = ActionPostcondition::try_from(PostconditionFields::Window {
        window_id: WINDOW,
        exists: true,
    })
    .unwrap();
    rig.runtime.script().evidence = Some(json!({ "satisfied": true }));
    let done = completed(
        rig.session
            .run(action("d-5b").with_postcondition(stays.clone()))
            .await
            .unwrap(),
    );
    match done.outcome() {
        VerificationOutcome::CommittedUnverified { reason } => {
            assert!(reason.contains("cannot fail"), "{reason}");
            assert!(reason.contains(&format!("window {WINDOW}")), "{reason}");
        }
        other => panic!("expected committed_unverified, got {other}"),
    }
    assert_eq!(rig.runtime.mutations(), 1);
    // Seen not to hold, it still fails: the cap only lowers a claim.
    rig.runtime.script().evidence = Some(json!({ "satisfied": false }));
    let done = completed(
        rig.session
            .run(action("d-5c").with_postcondition(stays))
            .await
            .unwrap(),
    );
    assert!(
        matches!(done.outcome(), VerificationOutcome::Failed { .. }),
        "{}",
        done.outcome()
    );
}

#[tokio::test]
async fn a_runtime_without_a_check_leaves_it_unverified_and_says_so() {
    let rig = rig();
    // Evidence the runtime has is not enough without a postcondition.
    rig.runtime.script().evidence = Some(json!({ "satisfied": true }));
    let done = completed(rig.session.run(action("d-6")).await.unwrap());
    let VerificationOutcome::CommittedUnverified { reason } = done.outcome() else {
        panic!("expected committed_unverified, got {}", done.outcome());
    };
    assert!(
        reason.contains("offers no check of write_clipboard's effect"),
        "{reason}"
    );
    assert_eq!(rig.runtime.last_previewed_postcondition(), None);
}

#[tokio::test]
async fn a_tool_whose_effect_the_chain_cannot_name_says_so() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    let click = ProposedAction::new(
        "left_click",
        json!({ "coordinate": [10, 10] }),
        ExecutionMode::Background,
    )
    .with_action_id("d-7")
    .with_target(target());
    let done = completed(rig.session.run(click).await.unwrap());
    let VerificationOutcome::CommittedUnverified { reason } = done.outcome() else {
        panic!("expected committed_unverified, got {}", done.outcome());
    };
    assert!(reason.contains("names no effect of left_click"), "{reason}");
    assert_eq!(rig.runtime.last_previewed_postcondition(), None);
}

#[tokio::test]
async fn a_suspended_action_keeps_its_derived_postcondition_through_resume() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    let pending = match rig.session.run(action("d-8")).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("expected the action to wait for approval"),
    };
    assert_eq!(
        pending.preview().envelope.postcondition,
        Some(viewer_holding(sha256_prefixed("hello")))
    );
    let digest = pending.action_digest().to_owned();
    let id = pending.suspend().await.unwrap();
    let grant = rig.runtime.grant(&digest);
    rig.runtime.script().evidence = Some(json!({ "observedDigest": sha256_prefixed("hello") }));
    let approved = rig
        .session
        .resume(&id, Approval::with_grant("d-8", &digest, POLICY, &grant))
        .await
        .unwrap();
    let done = approved.complete().await.unwrap();
    assert_eq!(done.outcome(), &VerificationOutcome::Verified);
}

/// Arguments are checked before anything is reserved: a known tool's
/// malformed arguments never reach the runtime.
mod arguments_before_anything {
    use super::*;

    fn refused_unsent(tool: &str, arguments: serde_json::Value) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let rig = rig();
            let proposed = ProposedAction::new(tool, arguments.clone(), ExecutionMode::Background)
                .with_action_id("bad")
                .with_target(target());
            let err = rig.session.run(proposed).await.err().unwrap();
            assert!(
                matches!(
                    err,
                    ComputerUseError::InvalidField {
                        object: "ProposedAction",
                        field: "arguments",
                        ..
                    }
                ),
                "{tool} {arguments}: {err}"
            );
            assert_eq!(rig.runtime.count(Call::Preview), 0, "{tool} {arguments}");
            assert_eq!(rig.runtime.count(Call::Reserve), 0, "{tool} {arguments}");
        });
    }

    #[test]
    fn missing_mistyped_and_unknown_arguments_are_refused_before_the_preview() {
        refused_unsent("write_clipboard", json!({ "txt": "hi" }));
        refused_unsent("write_clipboard", json!({ "text": 42 }));
        refused_unsent("write_clipboard", json!({ "text": "hi", "mode": "append" }));
        refused_unsent("write_clipboard", json!(["hi"]));
        refused_unsent("left_click", json!({ "coordinate": [1] }));
        refused_unsent("left_click", json!({ "coordinate": [1, "2"] }));
        refused_unsent("left_click", json!({ "x": 1, "y": 2 }));
        refused_unsent(
            "scroll",
            json!({ "coordinate": [1, 2], "direction": "sideways" }),
        );
        refused_unsent("type", json!({ "text": "hi", "press_enter": "yes" }));
        refused_unsent("key", json!({ "text": "Return", "target_window_id": "7" }));
        refused_unsent(
            "scroll",
            json!({ "coordinate": [1, 2], "direction": "up", "amount": 0 }),
        );
        refused_unsent("key", json!({ "text": "Return", "repeat": -1 }));
        refused_unsent("wait", json!({ "duration": 301 }));
    }

    #[test]
    fn arguments_aimed_at_another_window_or_app_are_refused_before_the_preview() {
        // The target evidence names com.example.Notes, window 7: the tool
        // must not be pointed elsewhere by its own arguments.
        refused_unsent(
            "left_click",
            json!({ "coordinate": [1, 2], "target_window_id": 4242 }),
        );
        refused_unsent(
            "left_click",
            json!({ "coordinate": [1, 2], "target_app": "com.example.Bank" }),
        );
        refused_unsent("type", json!({ "text": "hi", "target_window_id": 4242 }));
        refused_unsent(
            "set_value",
            json!({ "window_id": 4242, "role": "AXTextField", "label": "x", "value": "y" }),
        );
        refused_unsent("my_tool", json!({ "bundle_id": "com.example.Bank" }));
    }

    #[tokio::test]
    async fn an_untargeted_action_may_not_name_a_window_in_its_arguments() {
        let rig = rig();
        let aimed = ProposedAction::new(
            "left_click",
            json!({ "coordinate": [1, 2], "target_window_id": 7 }),
            ExecutionMode::Background,
        )
        .with_action_id("bad-untargeted");
        let err = rig.session.run(aimed).await.err().unwrap();
        assert!(err.to_string().contains("no target evidence"), "{err}");
        assert_eq!(rig.runtime.count(Call::Preview), 0);
    }

    #[tokio::test]
    async fn a_refusal_names_keys_and_kinds_never_values() {
        let rig = rig();
        let secret = "correct horse battery staple";
        for arguments in [
            json!({ "txt": secret }),
            json!({ "text": 42, "secret": secret }),
            json!([secret]),
        ] {
            let proposed =
                ProposedAction::new("write_clipboard", arguments, ExecutionMode::Background)
                    .with_action_id("bad")
                    .with_target(target());
            let err = rig.session.run(proposed).await.err().unwrap();
            assert!(!format!("{err} {err:?}").contains(secret), "{err}");
        }
    }

    #[tokio::test]
    async fn well_formed_and_unknown_tools_go_through() {
        let rig = rig();
        let click = ProposedAction::new(
            "left_click",
            json!({ "coordinate": [3, 4], "focus_strategy": "strict" }),
            ExecutionMode::Background,
        )
        .with_action_id("ok-1")
        .with_target(target());
        assert!(completed(rig.session.run(click).await.unwrap()).performed());
        // A whole number written as 3.0 is an integer, as upstream's schema
        // reads it; the target's own window may be named.
        let scroll = ProposedAction::new(
            "scroll",
            json!({ "coordinate": [3, 4], "direction": "down", "amount": 3.0, "target_window_id": WINDOW }),
            ExecutionMode::Background,
        )
        .with_action_id("ok-3")
        .with_target(target());
        assert!(completed(rig.session.run(scroll).await.unwrap()).performed());
        // A tool of the runtime's own: the chain has no schema for it, and
        // the runtime decides.
        let own = ProposedAction::new(
            "my_tool",
            json!({ "anything": 1 }),
            ExecutionMode::Background,
        )
        .with_action_id("ok-2")
        .with_target(target());
        assert!(completed(rig.session.run(own).await.unwrap()).performed());
        assert_eq!(rig.runtime.mutations(), 3);
    }
}

#[tokio::test]
async fn an_untargeted_write_gets_no_window_bound_check_and_says_so() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    let untargeted = ProposedAction::new(
        "write_clipboard",
        json!({ "text": "hello" }),
        ExecutionMode::Background,
    )
    .with_action_id("d-9");
    let done = completed(rig.session.run(untargeted).await.unwrap());
    let VerificationOutcome::CommittedUnverified { reason } = done.outcome() else {
        panic!("expected committed_unverified, got {}", done.outcome());
    };
    assert!(
        reason.contains("must be bound to a target window"),
        "{reason}"
    );
    assert_eq!(rig.runtime.last_previewed_postcondition(), None);
}

#[tokio::test]
async fn without_a_postcondition_no_evidence_is_asked_for() {
    let rig = rig();
    let done = completed(rig.session.run(action("d-10")).await.unwrap());
    assert_eq!(done.outcome().status(), "committed_unverified");
    assert_eq!(rig.runtime.count(Call::Verify), 0);
    // With one, it is.
    offering_the_clipboard_check(&rig);
    rig.runtime.script().evidence = Some(json!({ "observedDigest": sha256_prefixed("hello") }));
    let done = completed(rig.session.run(action("d-11")).await.unwrap());
    assert_eq!(done.outcome(), &VerificationOutcome::Verified);
    assert_eq!(rig.runtime.count(Call::Verify), 1);
}

/// After the mutation answers, evidence the runtime recorded at execution
/// and both releases are in flight together (one round trip), and none of
/// them starts before it.
#[tokio::test]
async fn recorded_evidence_and_both_releases_run_together_after_the_mutation() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    rig.runtime.script().evidence_recorded = true;
    rig.runtime.script().evidence = Some(json!({ "observedDigest": sha256_prefixed("hello") }));
    rig.runtime.script().hold.insert(Call::Verify);
    let (done, in_flight) = tokio::join!(rig.session.run(action("d-12")), async {
        rig.runtime.held.notified().await;
        // The evidence read is held open: the releases were entered all the
        // same.
        let entered = (
            rig.runtime.count(Call::ReleaseLease),
            rig.runtime.count(Call::Release),
        );
        rig.runtime.gate.notify_one();
        entered
    });
    assert_eq!(in_flight, (1, 1));
    let calls = rig.runtime.truth().calls.clone();
    let executed = calls.iter().position(|c| *c == Call::Execute).unwrap();
    for tail in [Call::Verify, Call::ReleaseLease, Call::Release] {
        let at = calls.iter().position(|c| *c == tail).unwrap();
        assert!(at > executed, "{tail:?} before the mutation: {calls:?}");
    }
    assert_eq!(
        completed(done.unwrap()).outcome(),
        &VerificationOutcome::Verified
    );
}

/// Evidence read from the live desktop is read while this action still
/// holds the one-writer lease: only the reservation goes back meanwhile.
#[tokio::test]
async fn live_evidence_is_read_before_the_lease_goes_back() {
    let rig = rig();
    offering_the_clipboard_check(&rig);
    rig.runtime.script().evidence = Some(json!({ "observedDigest": sha256_prefixed("hello") }));
    rig.runtime.script().hold.insert(Call::Verify);
    let (done, in_flight) = tokio::join!(rig.session.run(action("d-13")), async {
        rig.runtime.held.notified().await;
        let entered = (
            rig.runtime.count(Call::ReleaseLease),
            rig.runtime.count(Call::Release),
            rig.runtime.truth().active_leases.len(),
        );
        rig.runtime.gate.notify_one();
        entered
    });
    assert_eq!(
        in_flight,
        (0, 1, 1),
        "lease releases, reservation releases, active leases"
    );
    assert_eq!(
        completed(done.unwrap()).outcome(),
        &VerificationOutcome::Verified
    );
    assert_eq!(rig.runtime.count(Call::ReleaseLease), 1);
    assert!(rig.runtime.truth().active_leases.is_empty());
}

/// A `set_value`'s check must name the element the action writes: a
/// runtime offering the check of another element holding the same value is
/// refused before anything is sent.
#[tokio::test]
async fn an_element_check_for_another_element_is_refused_before_anything_is_sent() {
    let rig = rig();
    rig.runtime.script().effect_postcondition = Some(Arc::new(|effect: &NamedEffect<'_>| {
        Some(
            ActionPostcondition::try_from(PostconditionFields::UiElement {
                role: Some("AXTextField".into()),
                label: Some("Another field".into()),
                exists: true,
                value_digest: Some(effect.expected_digest()),
            })
            .unwrap(),
        )
    }));
    let write = ProposedAction::new(
        "set_value",
        json!({ "role": "AXTextField", "label": "Name", "value": "Ada" }),
        ExecutionMode::Background,
    )
    .with_action_id("d-element")
    .with_target(target());
    let err = rig.session.run(write).await.err().unwrap();
    match &err {
        ComputerUseError::IdentityMismatch { object, field, .. } => {
            assert_eq!((*object, *field), ("derived postcondition", "element"));
        }
        other => panic!("expected the derived postcondition refused, got {other}"),
    }
    assert_eq!(rig.runtime.count(Call::Preview), 0);
    assert_eq!(rig.runtime.mutations(), 0);
}

/// A runtime that offers a form's check: the form's role, no one element's
/// label, the digest the
/// chain names for all of the form's values.
fn offering_the_form_check(rig: &Rig) {
    rig.runtime.script().effect_postcondition = Some(Arc::new(|effect: &NamedEffect<'_>| {
        matches!(effect, NamedEffect::FormValues { .. }).then(|| {
            ActionPostcondition::try_from(PostconditionFields::UiElement {
                role: Some(adk_computer_use::runtime::FORM_CHECK_ROLE.into()),
                label: None,
                exists: true,
                value_digest: Some(effect.expected_digest()),
            })
            .unwrap()
        })
    }));
}

fn fill(action_id: &str, fields: serde_json::Value) -> ProposedAction {
    ProposedAction::new(
        "fill_form",
        json!({ "fields": fields }),
        ExecutionMode::Background,
    )
    .with_action_id(action_id)
    .with_target(target())
}

/// `fill_form` ends `Verified` with no postcondition written by hand: the
/// chain names the digest of every field's role, label and value, in the
/// action's order, and evidence of exactly that digest verifies it.
#[tokio::test]
async fn a_form_filled_without_a_postcondition_is_verified_on_the_digest_of_all_its_values() {
    let fields = json!([
        { "role": "AXTextField", "label": "Name", "value": "Ada" },
        { "role": "AXTextField", "label": "Email", "value": "ada@example.org" },
    ]);
    let expected = adk_computer_use::runtime::form_values_digest([
        ("AXTextField", "Name", "Ada"),
        ("AXTextField", "Email", "ada@example.org"),
    ]);
    let first = rig();
    offering_the_form_check(&first);
    first.runtime.script().evidence = Some(json!({ "observedDigest": expected }));
    let done = completed(
        first
            .session
            .run(fill("f-1", fields.clone()))
            .await
            .unwrap(),
    );
    assert_eq!(done.outcome(), &VerificationOutcome::Verified);
    let previewed = first.runtime.last_previewed_postcondition().unwrap();
    assert_eq!(previewed.expected_digest(), Some(expected.as_str()));

    // The same values in another order, or one value changed, is another
    // digest: evidence of it fails the action.
    let swapped = adk_computer_use::runtime::form_values_digest([
        ("AXTextField", "Email", "ada@example.org"),
        ("AXTextField", "Name", "Ada"),
    ]);
    assert_ne!(swapped, expected);
    let second = rig();
    offering_the_form_check(&second);
    second.runtime.script().evidence = Some(json!({ "observedDigest": swapped }));
    let done = completed(second.session.run(fill("f-2", fields)).await.unwrap());
    assert_eq!(
        done.outcome().status(),
        "verification_failed",
        "{}",
        done.outcome()
    );
}

/// A form with a password field gets no derived check: the digest of its
/// values would carry the secret's into the preview and the journal.
#[tokio::test]
async fn a_form_with_a_secret_field_gets_no_derived_check_and_says_why() {
    let rig = rig();
    offering_the_form_check(&rig);
    let fields = json!([
        { "role": "AXTextField", "label": "Name", "value": "Ada" },
        { "role": "AXSecureTextField", "label": "Password", "value": "hunter2" },
    ]);
    let done = completed(rig.session.run(fill("f-3", fields)).await.unwrap());
    let VerificationOutcome::CommittedUnverified { reason } = done.outcome() else {
        panic!("expected committed_unverified, got {}", done.outcome());
    };
    assert!(reason.contains("secret"), "{reason}");
    assert_eq!(rig.runtime.last_previewed_postcondition(), None);
}

/// A form's check must not name one element: a runtime offering the check
/// of a single field against all the values is refused before anything is
/// sent.
#[tokio::test]
async fn a_form_check_naming_one_element_is_refused_before_anything_is_sent() {
    let rig = rig();
    rig.runtime.script().effect_postcondition = Some(Arc::new(|effect: &NamedEffect<'_>| {
        Some(
            ActionPostcondition::try_from(PostconditionFields::UiElement {
                role: Some("AXTextField".into()),
                label: Some("Name".into()),
                exists: true,
                value_digest: Some(effect.expected_digest()),
            })
            .unwrap(),
        )
    }));
    let fields = json!([{ "role": "AXTextField", "label": "Name", "value": "Ada" }]);
    let err = rig.session.run(fill("f-4", fields)).await.err().unwrap();
    match &err {
        ComputerUseError::IdentityMismatch { object, field, .. } => {
            assert_eq!((*object, *field), ("derived postcondition", "element"));
        }
        other => panic!("expected the derived postcondition refused, got {other}"),
    }
    assert_eq!(rig.runtime.mutations(), 0);
}

/// A field whose label names a secret (a PIN) gets no derived check, even
/// in a plain text field: a short secret's digest is as good as the secret.
#[tokio::test]
async fn a_field_labelled_like_a_secret_gets_no_derived_check() {
    let rig = rig();
    rig.runtime.script().effect_postcondition = Some(Arc::new(|effect: &NamedEffect<'_>| {
        Some(
            ActionPostcondition::try_from(PostconditionFields::UiElement {
                role: effect.element().map(|(role, _)| role.to_owned()),
                label: effect.element().map(|(_, label)| label.to_owned()),
                exists: true,
                value_digest: Some(effect.expected_digest()),
            })
            .unwrap(),
        )
    }));
    let write = ProposedAction::new(
        "set_value",
        json!({ "role": "AXTextField", "label": "PIN", "value": "1234" }),
        ExecutionMode::Background,
    )
    .with_action_id("d-pin")
    .with_target(target());
    let done = completed(rig.session.run(write).await.unwrap());
    let VerificationOutcome::CommittedUnverified { reason } = done.outcome() else {
        panic!("expected committed_unverified, got {}", done.outcome());
    };
    assert!(reason.contains("secret"), "{reason}");
    assert_eq!(rig.runtime.last_previewed_postcondition(), None);
}

/// "The target window exists" proves nothing whether the target names its
/// window as a number or as the same number in text (as binding compares
/// windows); a check that can fail, or one on another window, is not
/// caught by this rule.
#[test]
fn the_cannot_fail_rule_sees_the_target_window_however_it_is_named() {
    use adk_computer_use::runtime::proves_nothing;
    let target = |window: serde_json::Value| -> TargetEvidence {
        serde_json::from_value(json!({
            "platform": "linux", "appId": "xterm", "windowId": window,
            "observationId": "o-1", "confidence": 1, "capturedAt": "2026-01-01T00:00:00Z"
        }))
        .unwrap()
    };
    let check = |window_id, exists| {
        ActionPostcondition::try_from(PostconditionFields::Window { window_id, exists }).unwrap()
    };
    for named in [json!(7), json!("7")] {
        assert!(
            proves_nothing(&check(7, true), Some(&target(named.clone()))).is_some(),
            "{named}"
        );
        assert!(proves_nothing(&check(7, false), Some(&target(named.clone()))).is_none());
        assert!(proves_nothing(&check(8, true), Some(&target(named))).is_none());
    }
    assert!(proves_nothing(&check(7, true), None).is_none());
}
