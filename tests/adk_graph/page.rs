//! Ours only: a graph whose approvals are decided on the approval page. The
//! interrupt seals the action in the session's store of record; a person's
//! decision, recorded there and signed with the page's key, answers it.
//! The key is the page's, which neither the model nor a caller writing the
//! graph's state holds.

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{
    Approval, ApproverKey, CheckpointId, CheckpointStore, Decision, decide, inspect,
};
use adk_computer_use::clock::ManualClock;
use adk_computer_use::graph::{reference_graph_over, reference_graph_with_approver};
use adk_graph::{Checkpointer, CompiledGraph, GraphError, MemoryCheckpointer, State};
use serde_json::{Value, json};

use super::support::*;
use crate::common::*;

/// The page's signing key (the graph holds only its public half).
pub(super) fn page_key() -> ApproverKey {
    ApproverKey::from_hex(&"5a".repeat(32)).unwrap()
}

/// A graph decided on the page, over a scripted runtime, with its stores.
pub(super) struct Page {
    pub graph: CompiledGraph,
    pub runtime: Arc<FakeRuntime>,
    pub clock: ManualClock,
    pub store: Arc<dyn CheckpointStore>,
    pub session: Arc<adk_computer_use::Session<FakeRuntime>>,
    pub checkpointer: Arc<MemoryCheckpointer>,
}

impl Page {
    /// A graph deciding on the page over a session told the runtime takes
    /// target evidence `max_age` old.
    pub fn new(max_age: Duration) -> Self {
        let Rig {
            runtime,
            clock,
            session,
            store,
        } = rig_targeted_aging(max_age);
        runtime.script().route = Some(PreviewRoute::NeedsApproval);
        runtime.script().semantic =
            Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW }] }));
        let session = Arc::new(session);
        let checkpointer = Arc::new(MemoryCheckpointer::new());
        let graph = reference_graph_with_approver(
            Arc::clone(&session),
            Some(checkpointer.clone()),
            page_key().public(),
        )
        .unwrap();
        Self {
            graph,
            runtime,
            clock,
            store,
            session,
            checkpointer,
        }
    }

    /// Another instance of the graph over the same stores (as after a
    /// restart).
    pub fn again(&self) -> CompiledGraph {
        reference_graph_with_approver(
            Arc::clone(&self.session),
            Some(self.checkpointer.clone()),
            page_key().public(),
        )
        .unwrap()
    }

    /// The one checkpoint waiting on the page.
    pub fn waiting(&self) -> CheckpointId {
        let ids = self.store.ids().unwrap();
        assert_eq!(ids.len(), 1, "one action waits on the page: {ids:?}");
        ids.into_iter().next().unwrap()
    }

    /// The person approves what the page shows, the runtime holding it.
    pub fn approve(&self, id: &CheckpointId) {
        let view = inspect(&*self.store, id).unwrap();
        let approval =
            Approval::runtime_held(&view.action_id, &view.action_digest, &view.policy_digest);
        decide(&*self.store, id, &Decision::Approve(approval), &page_key()).unwrap();
    }

    pub fn id_of(&self, preview: &Value) -> CheckpointId {
        self.store
            .ids()
            .unwrap()
            .into_iter()
            .find(|id| {
                inspect(&*self.store, id).unwrap().action_id
                    == preview["envelope"]["actionId"].as_str().unwrap()
            })
            .expect("the preview's checkpoint waits on the page")
    }

    /// A hostile writer of adk-graph's checkpoint store: a copy of
    /// checkpoint `from` whose state's `preview` and `preview_history` are
    /// `forged`, saved under a new id (returned).
    pub async fn forge(&self, from: &str, forged: &Value) -> String {
        let mut cp = self.checkpointer.load_by_id(from).await.unwrap().unwrap();
        cp.checkpoint_id = format!("{from}-forged");
        cp.state.insert("preview".into(), forged.clone());
        cp.state
            .insert("preview_history".into(), json!([forged.clone()]));
        self.checkpointer.save(&cp).await.unwrap()
    }
}

pub(super) const LONG: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn a_decision_on_the_page_answers_the_interrupt_and_the_action_runs_once() {
    let page = Page::new(LONG);
    let thread = "thread-page";
    let (checkpoint, _) = interrupted(&page.graph, thread).await;
    assert_eq!(page.runtime.mutations(), 0);
    let id = page.waiting();
    page.approve(&id);
    // The host writes no approval: the recorded decision is the answer.
    let output = resume(&page.graph, thread, &checkpoint, State::new())
        .await
        .unwrap();
    assert_eq!(output["committed"], json!(true));
    assert_eq!(page.runtime.mutations(), 1);
    assert_eq!(page.runtime.truth().grant_ids_seen, vec![None]);
    // Consumed: another instance resuming the same checkpoint runs nothing.
    let again = resume(&page.again(), thread, &checkpoint, State::new()).await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(page.runtime.mutations(), 1);
}

#[tokio::test]
async fn a_denial_on_the_page_ends_the_run_with_nothing_reserved() {
    let page = Page::new(LONG);
    let thread = "thread-page-denied";
    let (checkpoint, preview) = interrupted(&page.graph, thread).await;
    let id = page.waiting();
    let denial = Decision::Deny {
        reason: "not this one".into(),
    };
    decide(&*page.store, &id, &denial, &page_key()).unwrap();
    // The denial wins, even over an approval of the host's own written on
    // resume.
    let (action, policy) = digests(&preview);
    let own = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    let refused = resume(&page.graph, thread, &checkpoint, approval(own)).await;
    assert!(
        matches!(&refused, Err(GraphError::NodeExecutionFailed { message, .. }) if message.contains("denied")),
        "{refused:?}"
    );
    assert_eq!(page.runtime.count(Call::Reserve), 0);
    assert_eq!(page.runtime.mutations(), 0);
    let again = resume(&page.again(), thread, &checkpoint, State::new()).await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(page.runtime.mutations(), 0);
}

#[tokio::test]
async fn an_approval_written_on_resume_must_be_the_decision_on_the_page() {
    let page = Page::new(LONG);
    let thread = "thread-page-written";
    let (checkpoint, preview) = interrupted(&page.graph, thread).await;
    let id = page.waiting();
    let (action, policy) = digests(&preview);
    let grant = page.runtime.grant(&action);
    let view = inspect(&*page.store, &id).unwrap();
    let decided = Approval::with_grant(&view.action_id, &action, &policy, &grant);
    decide(&*page.store, &id, &Decision::Approve(decided), &page_key()).unwrap();
    // Another authority than the person's: refused, nothing consumed.
    let other = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    let refused = resume(&page.graph, thread, &checkpoint, approval(other)).await;
    assert!(
        matches!(&refused, Err(GraphError::NodeExecutionFailed { message, .. }) if message.contains("not the person's decision")),
        "{refused:?}"
    );
    assert_eq!(page.runtime.count(Call::Reserve), 0);
    assert!(page.store.ids().unwrap().contains(&id), "nothing consumed");
    // The decision's own grant, echoed: runs once, on that grant.
    let same = json!({ "actionDigest": action, "policyDigest": policy, "grantId": grant });
    let output = resume(&page.graph, thread, &checkpoint, approval(same))
        .await
        .unwrap();
    assert_eq!(output["committed"], json!(true));
    assert_eq!(page.runtime.mutations(), 1);
    assert_eq!(page.runtime.truth().grant_ids_seen, vec![Some(grant)]);
}

#[tokio::test]
async fn before_the_person_decides_a_resume_waits_and_consumes_nothing() {
    let page = Page::new(LONG);
    let thread = "thread-page-early";
    let (checkpoint, _) = interrupted(&page.graph, thread).await;
    let id = page.waiting();
    let early = resume(&page.graph, thread, &checkpoint, State::new()).await;
    assert!(
        matches!(&early, Err(GraphError::NodeExecutionFailed { message, .. })
            if message.contains("no decision is recorded") && !message.contains("runtimeApproved")),
        "{early:?}"
    );
    assert!(page.store.ids().unwrap().contains(&id), "nothing consumed");
    page.approve(&id);
    let output = resume(&page.graph, thread, &checkpoint, State::new())
        .await
        .unwrap();
    assert_eq!(output["committed"], json!(true));
    assert_eq!(page.runtime.mutations(), 1);
}

/// The interrupted preview and the state after a resume a minute later.
fn late(output: &State, interrupted: &Value) {
    assert_eq!(output["committed"], json!(true));
    assert_eq!(
        output["preview"]["envelope"]["target"]["capturedAt"], "2026-07-13T10:01:00Z",
        "the run went on with a preview on evidence taken at the resume"
    );
    assert_eq!(
        output["preview_history"],
        json!([interrupted]),
        "the history keeps the preview the person was shown at the interrupt"
    );
}

/// A person who decides after the target evidence aged (a minute, where
/// the runtime takes 30 s): the runtime-held approval follows fresh
/// evidence of the same target, and the run completes on that preview.
#[tokio::test]
async fn a_late_decision_runs_on_fresh_evidence_of_the_same_target() {
    let page = Page::new(Duration::from_secs(30));
    let thread = "thread-page-late";
    let (checkpoint, preview) = interrupted(&page.graph, thread).await;
    let id = page.waiting();
    page.clock.advance(time::Duration::minutes(1));
    page.approve(&id);
    let output = resume(&page.graph, thread, &checkpoint, State::new())
        .await
        .unwrap();
    late(&output, &preview);
    assert_eq!(page.runtime.mutations(), 1);
}

/// The same without the page: the host's `runtimeApproved` a minute late.
#[tokio::test]
async fn a_late_runtime_approval_runs_on_fresh_evidence_of_the_same_target() {
    let Rig {
        runtime,
        clock,
        session,
        ..
    } = rig_targeted_aging(Duration::from_secs(30));
    runtime.script().route = Some(PreviewRoute::NeedsApproval);
    runtime.script().semantic =
        Some(json!({ "windows": [{ "bundleId": APP, "windowId": WINDOW }] }));
    let graph = reference_graph_over(Arc::new(session), None).unwrap();
    let thread = "thread-late-held";
    let (checkpoint, preview) = interrupted(&graph, thread).await;
    clock.advance(time::Duration::minutes(1));
    let (action, policy) = digests(&preview);
    let answer = json!({ "actionDigest": action, "policyDigest": policy, "runtimeApproved": true });
    let output = resume(&graph, thread, &checkpoint, approval(answer))
        .await
        .unwrap();
    late(&output, &preview);
    assert_eq!(runtime.mutations(), 1);
}

#[tokio::test]
async fn a_graph_decided_on_the_page_needs_a_store_of_record() {
    let runtime = FakeRuntime::new(ManualClock::new(start()));
    let session = adk_computer_use::Session::builder(runtime, full_authorizer())
        .build()
        .unwrap();
    let refused = reference_graph_with_approver(Arc::new(session), None, page_key().public());
    assert!(
        matches!(&refused, Err(GraphError::InvalidGraph(why)) if why.contains("store of record")),
        "{:?}",
        refused.err()
    );
}
