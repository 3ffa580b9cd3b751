//! One observation round taken in parts, for a face that runs the three
//! reads as nodes of their own (the graph's `discover`, `observe_visual`
//! and `observe_semantic`, concurrently) and joins them in a fourth.
//!
//! The parts are the same reads [`Session::observe`] makes, each under the
//! same `computer:plan` check; only [`Session::join`] makes an
//! [`Observed`], so a round is never previewed from fewer than its three
//! parts, and its time is the join's (the latest any part can have been
//! captured).

use super::Session;
use crate::ComputerUseError;
use crate::auth::Scope;
use crate::contracts::ExecutionMode;
use crate::runtime::ComputerUseRuntime;

impl<R: ComputerUseRuntime> Session<R> {
    /// Refuses when the session is closed or its identity lacks the plan
    /// scope (which every observation needs).
    pub(crate) fn may_observe(&self) -> Result<(), ComputerUseError> {
        self.core.ensure_open("observe")?;
        self.core
            .authorize(ExecutionMode::Shadow)
            .map_err(|err| match err {
                ComputerUseError::Unauthorized { reason, .. } => ComputerUseError::Unauthorized {
                    required: Scope::Plan.to_string(),
                    reason,
                },
                other => other,
            })
    }
}

#[cfg(feature = "adk")]
mod for_graph {
    use std::sync::Arc;

    use super::super::approvals::CheckpointId;
    use super::super::{Observed, Session};
    use crate::ComputerUseError;
    use crate::contracts::{ActionPreview, ExecutionCapability};
    use crate::runtime::{ComputerUseRuntime, Observation, Observations};

    impl<R: ComputerUseRuntime> Session<R> {
        /// What the runtime can do in the session's scope (one part of a round).
        pub(crate) async fn observe_capabilities(
            &self,
        ) -> Result<Vec<ExecutionCapability>, ComputerUseError> {
            self.may_observe()?;
            self.core
                .runtime
                .discover_capabilities(&self.core.scope)
                .await
        }

        /// The visual frame of the session's scope (one part of a round).
        pub(crate) async fn observe_visual_frame(&self) -> Result<Observation, ComputerUseError> {
            self.may_observe()?;
            self.core.runtime.observe_visual(&self.core.scope).await
        }

        /// The semantic frame of the session's scope (one part of a round).
        pub(crate) async fn observe_semantic_frame(&self) -> Result<Observation, ComputerUseError> {
            self.may_observe()?;
            self.core.runtime.observe_semantic(&self.core.scope).await
        }

        /// The round the three parts make, as [`Session::observe`] would have
        /// returned it.
        pub(crate) fn join(&self, parts: Observations) -> Result<Observed<R>, ComputerUseError> {
            self.may_observe()?;
            Ok(Observed::new(Arc::clone(&self.core), parts))
        }

        /// The id under which this session seals `preview` when its pending
        /// approval is suspended.
        pub(crate) fn checkpoint_id(&self, preview: &ActionPreview) -> CheckpointId {
            CheckpointId::for_preview(&self.core.session_id, preview)
        }
    }

    impl<R: ComputerUseRuntime> Session<R> {
        /// Whether the session has a store of record to suspend approvals to.
        pub(crate) fn keeps_checkpoints(&self) -> bool {
            self.core.checkpoints.is_some()
        }

        /// The preview sealed under `id` in the session's store of record,
        /// its seal checked; nothing is consumed.
        pub(crate) async fn sealed_preview(
            &self,
            id: &CheckpointId,
        ) -> Result<ActionPreview, ComputerUseError> {
            let store = self.core.checkpoints.clone().ok_or_else(|| {
                ComputerUseError::checkpoint(
                    id,
                    super::super::approvals::CheckpointRefusal::NoStoreOfRecord,
                )
            })?;
            let id = id.clone();
            super::super::approvals::offload(&store, "read a checkpoint", move |store| {
                let records = store.load(&id)?;
                super::super::approvals::open_record(store, &id, &records).map(|b| b.preview)
            })
            .await
        }
    }
}
