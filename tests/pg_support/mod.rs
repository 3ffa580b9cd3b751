//! What the PostgreSQL tests share: the server's URL, the keys, a rig
//! over a PostgreSQL store, and an action suspended there.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use adk_computer_use::chain::{Approval, ApproverKey, ChainOutcome, SealingKey, Session};
use adk_computer_use::pg::PostgresCheckpointStore;

use crate::common::*;

/// The server's URL. These tests are built to run only when
/// `ADK_POSTGRES_URL` was set for the build (else they are reported as
/// ignored, with the reason); run without it, they fail, never pass.
pub fn url() -> Option<String> {
    let url = std::env::var("ADK_POSTGRES_URL")
        .ok()
        .filter(|u| !u.is_empty());
    assert!(
        url.is_some(),
        "ADK_POSTGRES_URL is not set: these tests need a PostgreSQL server"
    );
    url
}

pub fn approver() -> ApproverKey {
    ApproverKey::from_hex(&"42".repeat(32)).unwrap()
}

pub fn pg_key() -> SealingKey {
    SealingKey::new(b"postgres-test-key-of-32-bytes-ok".to_vec()).unwrap()
}

/// A unique name per run, so runs against one database never meet.
pub fn unique(prefix: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("{prefix}-{}-{now}", std::process::id())
}

/// A rig acting in runtime session `session`, its store of record `store`.
pub fn rig_in(session: &str, store: Arc<PostgresCheckpointStore>) -> Rig {
    let rig = rig();
    rig.runtime.act_in(session, None);
    let session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .agent_id("executor")
        .checkpoints(store.clone())
        .build()
        .unwrap();
    Rig {
        session,
        store,
        ..rig
    }
}

/// A rig over a PostgreSQL store at `url`, in a session named after
/// `prefix`, with action `action_id` suspended there; the approval the
/// runtime holds for it.
pub async fn suspended_in(
    url: &str,
    prefix: &str,
    action_id: &str,
) -> (
    Rig,
    Arc<PostgresCheckpointStore>,
    adk_computer_use::chain::CheckpointId,
    Approval,
) {
    let store = Arc::new(
        PostgresCheckpointStore::connect(url, pg_key())
            .expect("ADK_POSTGRES_URL is set and must answer"),
    );
    let rig = rig_in(&unique(prefix), store.clone());
    rig.runtime.script().route = Some(PreviewRoute::NeedsApproval);
    let pending = match rig.session.run(action(action_id)).await.unwrap() {
        ChainOutcome::NeedsApproval(pending) => pending,
        _ => panic!("approval required"),
    };
    let approval = Approval::runtime_held(
        pending.action_id(),
        pending.action_digest(),
        pending.policy_digest(),
    );
    let id = pending.suspend().await.unwrap();
    (rig, store, id, approval)
}
