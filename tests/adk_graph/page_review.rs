//! A hostile review of the graph decided on the approval page and of late
//! approvals through the graph, kept as tests: each finding that broke a
//! claim is now the test of its mend (each seen failing before it), and
//! `holds_*` are the attacks the code resisted.

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{Approval, Decision, decide, inspect};
use adk_graph::{Checkpointer, GraphError, State};
use serde_json::json;

use super::page::{LONG, Page, page_key};
use super::support::*;
use crate::common::*;

fn message(result: &Result<State, GraphError>) -> (String, String) {
    match result {
        Err(GraphError::NodeExecutionFailed { node, message }) => (node.clone(), message.clone()),
        other => panic!("expected a node failure, got {other:?}"),
    }
}

/// Review finding 1 (mended): a graph that never saw the interrupt (or
/// forgot it after a refused resume) named the checkpoint by the state's
/// preview and compared only its action, tool and policy digest, so a
/// caller writing the graph's checkpoint could record a forged preview
/// (another application, another operation) as the one the person was
/// shown. The state's preview must now be exactly the sealed one, checked
/// before anything is consumed: the honest resume still runs the action,
/// once.
#[tokio::test]
async fn a_forged_state_preview_is_refused_on_a_resume_from_the_store_and_consumes_nothing() {
    for same_instance in [false, true] {
        let page = Page::new(LONG);
        let thread = if same_instance {
            "forge-same"
        } else {
            "forge-restart"
        };
        let (checkpoint, preview) = interrupted(&page.graph, thread).await;
        let id = page.id_of(&preview);
        let graph = if same_instance {
            // An early resume (no decision yet) drops the Suspended stage
            // and with it the remembered sealed preview.
            let early = resume(&page.graph, thread, &checkpoint, State::new()).await;
            assert!(message(&early).1.contains("no decision is recorded"));
            None
        } else {
            Some(page.again())
        };
        let graph = graph.as_ref().unwrap_or(&page.graph);
        page.approve(&id);
        let mut forged = preview.clone();
        forged["envelope"]["target"]["appId"] = json!("com.example.Bank");
        forged["envelope"]["operation"] = json!("transfer_funds");
        forged["envelope"]["reversible"] =
            json!(!preview["envelope"]["reversible"].as_bool().unwrap());
        forged["policy"]["reasons"] = json!(["approved by the security team"]);
        let forged_cp = page.forge(&checkpoint, &forged).await;
        let refused = resume(graph, thread, &forged_cp, State::new()).await;
        assert!(message(&refused).1.contains("replaced"), "{refused:?}");
        assert!(page.store.ids().unwrap().contains(&id), "nothing consumed");
        assert_eq!(page.runtime.count(Call::Reserve), 0);
        let output = resume(graph, thread, &checkpoint, State::new())
            .await
            .unwrap();
        assert_eq!(output["committed"], json!(true));
        assert_eq!(output["preview_history"], json!([preview]));
        assert_eq!(page.runtime.mutations(), 1);
    }
}

/// Review finding 2 (mended): `Run::interrupted` was set only when a
/// resume previewed again, so a thread's earlier late approval left it
/// standing; a resume of that thread from another thread's interrupt
/// (adk-graph loads `resume_from` by id from any thread) consumed the
/// other thread's approval and was then refused against the stale value,
/// dropping the approval unused. It is now set on every approval: the
/// other thread's approved action runs, once (the approval is of the
/// action, whatever the thread), and nothing is burned.
#[tokio::test]
async fn a_late_approval_on_one_thread_cannot_burn_another_threads_approval() {
    let page = Page::new(Duration::from_secs(30));
    // Thread T: a late approval (sets `interrupted`), then a runtime
    // refusal of the reservation (nothing done: the chain gives back).
    let (cp_t, preview_t) = interrupted(&page.graph, "thread-T").await;
    let id_t = page.id_of(&preview_t);
    page.clock.advance(time::Duration::minutes(1));
    page.approve(&id_t);
    page.runtime
        .script()
        .fail
        .insert(Call::Reserve, refusal("reserve_target", "stale_target"));
    let failed = resume(&page.graph, "thread-T", &cp_t, State::new()).await;
    assert_eq!(message(&failed).0, "reserve_target");
    page.runtime.script().fail.clear();
    assert!(
        page.store.ids().unwrap().contains(&id_t),
        "T's checkpoint was given back"
    );

    // Thread U: an ordinary interrupt, approved promptly on the page.
    let (cp_u, preview_u) = interrupted(&page.graph, "thread-U").await;
    let id_u = page.id_of(&preview_u);
    page.approve(&id_u);

    // Thread T resumed from U's interrupt: U's approved action runs, once.
    let ran = resume(&page.graph, "thread-T", &cp_u, State::new())
        .await
        .unwrap();
    assert_eq!(ran["committed"], json!(true));
    assert_eq!(
        ran["receipt"]["actionId"], preview_u["envelope"]["actionId"],
        "the action run is the one the person approved"
    );
    assert_eq!(page.runtime.mutations(), 1);
    // And it is spent: U's own resume runs nothing more.
    let again = resume(&page.graph, "thread-U", &cp_u, State::new()).await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(page.runtime.mutations(), 1);
}

/// Review finding 3 (mended): in a graph decided on the page, a caller
/// writing `runtimeApproved` before the person decided consumed the
/// checkpoint in their place; with a runtime that enforces its own record
/// the refusal came after the point where nothing is given back, and the
/// request vanished from the page. Before a decision only the runtime's
/// grant is taken; `runtimeApproved` is refused and nothing is consumed,
/// and the person's decision then answers.
#[tokio::test]
async fn in_a_page_graph_runtime_approved_before_the_decision_is_refused_and_consumes_nothing() {
    let page = Page::new(LONG);
    let thread = "preempt";
    let (checkpoint, preview) = interrupted(&page.graph, thread).await;
    let id = page.id_of(&preview);
    let (action, policy) = digests(&preview);
    let own = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    let refused = resume(&page.graph, thread, &checkpoint, approval(own)).await;
    let (node, why) = message(&refused);
    assert_eq!(node, "request_approval");
    assert!(why.contains("no decision is recorded"), "{why}");
    assert!(page.store.ids().unwrap().contains(&id), "nothing consumed");
    assert_eq!(page.runtime.count(Call::Reserve), 0);
    page.approve(&id);
    let output = resume(&page.graph, thread, &checkpoint, State::new())
        .await
        .unwrap();
    assert_eq!(output["committed"], json!(true));
    assert_eq!(page.runtime.mutations(), 1);
}

/// HOLDS: a hostile runtime answering the late re-preview with another
/// field changed (here `reversible`), or showing another window when the
/// chain looks again, is refused before anything is consumed.
#[tokio::test]
async fn holds_hostile_runtime_on_the_late_re_preview() {
    for case in ["field", "window"] {
        let page = Page::new(Duration::from_secs(30));
        let thread = format!("late-hostile-{case}");
        let (checkpoint, preview) = interrupted(&page.graph, &thread).await;
        let id = page.id_of(&preview);
        page.clock.advance(time::Duration::minutes(1));
        page.approve(&id);
        match case {
            "field" => {
                page.runtime.script().envelope = Some(Arc::new(|e| e.reversible = !e.reversible))
            }
            _ => {
                page.runtime.script().semantic =
                    Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW + 1 }] }))
            }
        }
        let refused = resume(&page.graph, &thread, &checkpoint, State::new()).await;
        assert_eq!(message(&refused).0, "request_approval", "{refused:?}");
        assert!(page.store.ids().unwrap().contains(&id), "nothing consumed");
        assert_eq!(page.runtime.count(Call::Reserve), 0);
        assert_eq!(page.runtime.mutations(), 0);
    }
}

/// HOLDS: after a late approval ran, neither a resume from the interrupt
/// checkpoint (same graph, another instance) nor from the checkpoint saved
/// after `request_approval` on another instance runs it again; a denial
/// wins, and a forged state beside it is refused before it is read.
#[tokio::test]
async fn holds_late_approval_runs_once_and_denial_wins() {
    let page = Page::new(Duration::from_secs(30));
    let thread = "late-once";
    let (checkpoint, preview) = interrupted(&page.graph, thread).await;
    let id = page.id_of(&preview);
    page.clock.advance(time::Duration::minutes(1));
    page.approve(&id);
    let output = resume(&page.graph, thread, &checkpoint, State::new())
        .await
        .unwrap();
    assert_eq!(output["committed"], json!(true));
    let after_approval: Vec<String> = page
        .checkpointer
        .list(thread)
        .await
        .unwrap()
        .into_iter()
        .filter(|c| c.pending_nodes == ["reserve_target"])
        .map(|c| c.checkpoint_id)
        .collect();
    assert!(!after_approval.is_empty());
    for (graph, from) in [
        (&page.graph, checkpoint.clone()),
        (&page.again(), checkpoint.clone()),
        (&page.again(), after_approval[0].clone()),
    ] {
        let again = resume(graph, thread, &from, State::new()).await;
        assert!(again.is_err(), "{again:?}");
    }
    assert_eq!(page.runtime.mutations(), 1);

    // Denial on another instance, with a forged (consistent) state and a
    // written approval: denied, nothing reserved.
    let page = Page::new(LONG);
    let (checkpoint, preview) = interrupted(&page.graph, "deny").await;
    let id = page.id_of(&preview);
    decide(
        &*page.store,
        &id,
        &Decision::Deny {
            reason: "no".into(),
        },
        &page_key(),
    )
    .unwrap();
    let mut forged = preview.clone();
    forged["policy"]["reasons"] = json!(["forged"]);
    let forged_cp = page.forge(&checkpoint, &forged).await;
    let (action, policy) = digests(&preview);
    let own = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    // The forged state is refused first (nothing consumed); the honest
    // resume then meets the denial.
    let refused = resume(&page.again(), "deny", &forged_cp, approval(own.clone())).await;
    assert!(message(&refused).1.contains("replaced"), "{refused:?}");
    let denied = resume(&page.again(), "deny", &checkpoint, approval(own)).await;
    assert!(message(&denied).1.contains("denied"), "{denied:?}");
    assert_eq!(page.runtime.count(Call::Reserve), 0);
}

/// HOLDS (docs claim): a late decision carrying a grant cannot follow
/// fresh evidence and is refused before anything is consumed.
#[tokio::test]
async fn holds_a_late_grant_is_refused_and_consumes_nothing() {
    let page = Page::new(Duration::from_secs(30));
    let (checkpoint, preview) = interrupted(&page.graph, "late-grant").await;
    let id = page.id_of(&preview);
    page.clock.advance(time::Duration::minutes(1));
    let (action, policy) = digests(&preview);
    let grant = page.runtime.grant(&action);
    let view = inspect(&*page.store, &id).unwrap();
    let decided = Approval::with_grant(&view.action_id, &action, &policy, &grant);
    decide(&*page.store, &id, &Decision::Approve(decided), &page_key()).unwrap();
    let refused = resume(&page.graph, "late-grant", &checkpoint, State::new()).await;
    assert_eq!(message(&refused).0, "request_approval", "{refused:?}");
    assert!(page.store.ids().unwrap().contains(&id), "nothing consumed");
    assert_eq!(page.runtime.count(Call::Reserve), 0);
}
