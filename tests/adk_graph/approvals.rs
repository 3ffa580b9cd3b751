//! The approval route: the interrupt, the resume contract, and what a
//! resume may not change.

use std::sync::Arc;

use adk_computer_use::graph::reference_graph_over;
use adk_graph::{ExecutionConfig, GraphError, MemoryCheckpointer, State};
use serde_json::{Value, json};

use crate::common::*;
use crate::support::*;

#[tokio::test]
async fn graph_parallelizes_observation_and_has_one_executor_effect() {
    let (graph, runtime, _) = graph(PreviewRoute::Executable);
    let output = graph
        .invoke(input(), ExecutionConfig::new("thread-1"))
        .await
        .unwrap();
    // No postcondition, and the scripted runtime offers no check: committed,
    // not verified (upstream asserts the same).
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(output.get("verified"), Some(&json!(false)));
    assert_eq!(output["result"]["status"], "committed_unverified");
    assert!(output["result"]["receiptId"].is_string());
    assert!(
        runtime
            .max_observe_concurrency
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 2
    );
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.count(Call::Reserve), 1);
    assert_eq!(runtime.count(Call::Release), 1);
    assert_eq!(runtime.active_reservations(), 0);
}

#[tokio::test]
async fn approval_route_interrupts_before_lease_or_execution() {
    let (graph, runtime, _) = graph(PreviewRoute::NeedsApproval);
    let (_, preview) = interrupted(&graph, "thread-approval").await;
    // The interrupt's payload is the preview itself.
    assert_eq!(preview["blocker"], "approval_required");
    assert_eq!(runtime.mutations(), 0);
    assert_eq!(runtime.count(Call::Reserve), 0);
    assert_eq!(runtime.count(Call::Lease), 0);
}

#[tokio::test]
async fn approval_resume_executes_only_the_original_digest_with_the_exact_grant() {
    let (graph, runtime, _) = graph(PreviewRoute::NeedsApproval);
    let (checkpoint, preview) = interrupted(&graph, "thread-resume").await;
    let (action, policy) = digests(&preview);
    let grant = runtime.grant(&action);
    let output = resume(
        &graph,
        "thread-resume",
        &checkpoint,
        approval(json!({ "actionDigest": action, "policyDigest": policy, "grantId": grant })),
    )
    .await
    .unwrap();
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(output.get("verified"), Some(&json!(false)));
    assert_eq!(output["approval_grant_id"], json!(grant));
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.truth().grant_ids_seen, vec![Some(grant)]);
}

#[tokio::test]
async fn approval_resume_can_delegate_bearer_handling_to_the_runtime() {
    let (graph, runtime, _) = graph(PreviewRoute::NeedsApproval);
    let (checkpoint, preview) = interrupted(&graph, "thread-runtime-approval").await;
    let (action, policy) = digests(&preview);
    let output = resume(
        &graph,
        "thread-runtime-approval",
        &checkpoint,
        approval(
            json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true }),
        ),
    )
    .await
    .unwrap();
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(runtime.mutations(), 1);
    assert_eq!(runtime.truth().grant_ids_seen, vec![None]);
}

/// Interrupts a run on `thread`, resumes it with the state `answer` makes
/// of the preview, its action digest, its policy digest and a grant the
/// runtime issued for it; the resume is refused and nothing was reserved
/// or performed.
async fn refused_resume(thread: &str, answer: impl FnOnce(&Value, &str, &str, &str) -> State) {
    let (graph, runtime, _) = graph(PreviewRoute::NeedsApproval);
    let (checkpoint, preview) = interrupted(&graph, thread).await;
    let (action, policy) = digests(&preview);
    let grant = runtime.grant(&action);
    let refused = resume(
        &graph,
        thread,
        &checkpoint,
        answer(&preview, &action, &policy, &grant),
    )
    .await;
    assert!(
        matches!(refused, Err(GraphError::NodeExecutionFailed { .. })),
        "{refused:?}"
    );
    assert_eq!(runtime.mutations(), 0);
    assert_eq!(runtime.count(Call::Reserve), 0);
}

#[tokio::test]
async fn approval_resume_rejects_a_changed_action_digest_before_mutation() {
    refused_resume("thread-mismatch", |_, _, policy, grant| {
        approval(
            json!({ "actionDigest": "another-digest", "policyDigest": policy, "grantId": grant }),
        )
    })
    .await;
}

#[tokio::test]
async fn approval_resume_rejects_a_changed_policy_digest_before_mutation() {
    refused_resume("thread-policy-mismatch", |_, action, _, grant| {
        approval(json!({ "actionDigest": action, "policyDigest": "policy-v2", "grantId": grant }))
    })
    .await;
}

#[tokio::test]
async fn approval_resume_rejects_ambiguous_runtime_and_grant_authority() {
    refused_resume("thread-ambiguous-approval", |_, action, policy, grant| {
        approval(json!({
            "actionDigest": action,
            "policyDigest": policy,
            "grantId": grant,
            "runtimeApproved": true,
        }))
    })
    .await;
}

#[tokio::test]
async fn approval_resume_cannot_replace_the_checkpointed_preview() {
    refused_resume(
        "thread-preview-replacement",
        |preview, action, policy, grant| {
            let mut forged = preview.clone();
            forged["envelope"]["arguments"] = json!({ "text": "something else" });
            let mut state = approval(
                json!({ "actionDigest": action, "policyDigest": policy, "grantId": grant }),
            );
            state.insert("preview".into(), forged.clone());
            state.insert("preview_history".into(), forged);
            state
        },
    )
    .await;
}

/// Ours only: upstream runs an action whose approval is written into the
/// initial state (its `request_approval` accepts matching digests without
/// interrupting). Here an approval answers the interrupt, never precedes
/// it: the digests are public in any earlier preview, so a caller (or a
/// model through a tool) could otherwise approve its own action.
#[tokio::test]
async fn an_approval_written_into_the_initial_state_runs_nothing() {
    let (graph, runtime, _) = graph(PreviewRoute::NeedsApproval);
    let (_, preview) = interrupted(&graph, "thread-first").await;
    let (action, policy) = digests(&preview);
    let grant = runtime.grant(&action);
    let mut state = input();
    state.insert(
        "approval".into(),
        json!({ "actionDigest": action, "policyDigest": policy, "grantId": grant }),
    );
    let refused = graph
        .invoke(state, ExecutionConfig::new("thread-self-approved"))
        .await;
    assert!(
        matches!(refused, Err(GraphError::NodeExecutionFailed { ref node, .. }) if node == "request_approval"),
        "{refused:?}"
    );
    assert_eq!(runtime.mutations(), 0);
    assert_eq!(runtime.count(Call::Reserve), 0);
}

/// Ours only: the interrupt seals the pending approval in the session's
/// store of record, so a graph that never saw it (another instance over
/// the same store, as after a restart) resumes it, once.
#[tokio::test]
async fn a_graph_that_never_saw_the_interrupt_resumes_it_from_the_sealed_checkpoint_once() {
    let (first, runtime, session) = graph(PreviewRoute::NeedsApproval);
    let checkpointer = Arc::new(MemoryCheckpointer::new());
    let first = {
        drop(first);
        reference_graph_over(Arc::clone(&session), Some(checkpointer.clone())).unwrap()
    };
    let (checkpoint, preview) = interrupted(&first, "thread-restart").await;
    drop(first);
    let second = reference_graph_over(Arc::clone(&session), Some(checkpointer.clone())).unwrap();
    let (action, policy) = digests(&preview);
    let grant = runtime.grant(&action);
    let answer = json!({ "actionDigest": action, "policyDigest": policy, "grantId": grant });
    let output = resume(
        &second,
        "thread-restart",
        &checkpoint,
        approval(answer.clone()),
    )
    .await
    .unwrap();
    assert_eq!(output.get("committed"), Some(&json!(true)));
    assert_eq!(runtime.mutations(), 1);
    // The sealed checkpoint was consumed: the same resume again runs nothing.
    let third = reference_graph_over(Arc::clone(&session), Some(checkpointer)).unwrap();
    let again = resume(&third, "thread-restart", &checkpoint, approval(answer)).await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(runtime.mutations(), 1);
}

#[tokio::test]
async fn a_blocked_preview_ends_blocked_with_its_reason() {
    let (graph, runtime, _) = graph(PreviewRoute::Blocked("policy_denied"));
    let output = graph
        .invoke(input(), ExecutionConfig::new("thread-blocked"))
        .await
        .unwrap();
    assert_eq!(output["route"], "blocked");
    assert_eq!(
        output["result"],
        json!({ "status": "blocked", "reason": "policy_denied" })
    );
    assert_eq!(runtime.mutations(), 0);
    assert_eq!(runtime.count(Call::Reserve), 0);
}

/// A resume whose state replaced the preview is refused before the sealed
/// checkpoint is consumed: the person's approval is not burned by it, and
/// the honest resume still runs the action, once.
#[tokio::test]
async fn a_refused_replacement_does_not_consume_the_sealed_approval() {
    let (graph, runtime, _) = graph(PreviewRoute::NeedsApproval);
    let thread = "thread-not-burned";
    let (checkpoint, preview) = interrupted(&graph, thread).await;
    let (action, policy) = digests(&preview);
    let grant = runtime.grant(&action);
    let answer = json!({ "actionDigest": action, "policyDigest": policy, "grantId": grant });
    let mut forged = preview.clone();
    forged["envelope"]["arguments"] = json!({ "text": "something else" });
    let mut state = approval(answer.clone());
    state.insert("preview".into(), forged);
    assert!(resume(&graph, thread, &checkpoint, state).await.is_err());
    let output = resume(&graph, thread, &checkpoint, approval(answer))
        .await
        .unwrap();
    assert_eq!(output["committed"], json!(true));
    assert_eq!(runtime.mutations(), 1);
}
