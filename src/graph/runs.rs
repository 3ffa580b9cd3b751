//! Where a graph run's stages wait between its nodes.
//!
//! adk-graph hands each node a JSON state, and JSON can say anything: were
//! a stage rebuilt from it, whoever writes the state (a resumed caller, a
//! model through a tool) could mint one. So the stages never enter the
//! state. Each run (its adk thread id) has a slot here, inside the compiled
//! graph, holding the one stage it has reached; a node takes the stage out,
//! makes the next with the chain's own consuming transition, and puts that
//! back. The state carries only what a reader needs to follow the run (ids,
//! digests, the preview) and is checked against the stage, never trusted in
//! its place. A stage dropped here (an error, a run abandoned) releases
//! what it holds by its guard's fallback.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::chain::CheckpointId;
use crate::chain::{Approved, Executed, Leased, Observed, PendingApproval, Reserved};
use crate::contracts::ExecutionCapability;
use crate::runtime::{ComputerUseRuntime, Observation, Observations, ProposedAction};

/// The stage one run has reached.
pub(super) enum Stage<R: ComputerUseRuntime> {
    /// Joined observations, ready to preview.
    Observed(Observed<R>),
    /// Waits for a person; `asked` once the graph has interrupted for it.
    Pending {
        pending: PendingApproval<R>,
        asked: bool,
    },
    /// Suspended into the session's store of record under this id: only
    /// the sealed checkpoint can be resumed.
    Suspended {
        /// The sealed checkpoint's id.
        id: CheckpointId,
        /// The preview sealed there, which the state must still hold.
        preview: Box<crate::contracts::ActionPreview>,
    },
    /// Approved (by policy or by a person).
    Approved(Approved<R>),
    /// The target reserved.
    Reserved(Reserved<R>),
    /// The lease taken: the only stage that can act.
    Leased(Leased<R>),
    /// Performed, not yet verified.
    Executed(Executed<R>),
    /// Performed and verified: what `execute` and `verify` answered, so a
    /// node entered again (a resume from an earlier checkpoint, a retry
    /// after a failed checkpoint save) answers the same, acting on nothing.
    Finished {
        /// `execute`'s update (the receipt).
        receipt: serde_json::Value,
        /// `verify`'s updates (`verified`, `committed`, `result`).
        verified: Vec<(String, serde_json::Value)>,
    },
}

impl<R: ComputerUseRuntime> Stage<R> {
    /// Its name, for an error that says what the run holds instead.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Observed(_) => "a joined observation",
            Self::Pending { .. } => "an action waiting for approval",
            Self::Suspended { .. } => "an approval sealed in the store of record",
            Self::Approved(_) => "an approved action, nothing reserved",
            Self::Reserved(_) => "a reserved target",
            Self::Leased(_) => "a lease",
            Self::Executed(_) => "a performed action not yet verified",
            Self::Finished { .. } => "a performed and verified action",
        }
    }

    /// Whether it holds what the runtime gave (a reservation, a lease) or
    /// an action performed and not yet verified: a new run of the thread
    /// must not drop it.
    pub fn holds(&self) -> bool {
        matches!(
            self,
            Self::Reserved(_) | Self::Leased(_) | Self::Executed(_)
        )
    }
}

/// One run: the observation's parts as they arrive, the planned action, and
/// the stage reached.
pub(super) struct Run<R: ComputerUseRuntime> {
    pub capabilities: Option<Vec<ExecutionCapability>>,
    pub visual: Option<Observation>,
    pub semantic: Option<Observation>,
    pub action: Option<ProposedAction>,
    pub stage: Option<Stage<R>>,
    /// The preview the graph interrupted with, kept when the approval was
    /// resumed on a preview of the same action made again (fresh evidence
    /// of its target, or the sealed one expired): `preview_history` still
    /// holds it, while `preview` is the chain's current one.
    pub interrupted: Option<serde_json::Value>,
}

impl<R: ComputerUseRuntime> Default for Run<R> {
    fn default() -> Self {
        Self {
            capabilities: None,
            visual: None,
            semantic: None,
            action: None,
            stage: None,
            interrupted: None,
        }
    }
}

impl<R: ComputerUseRuntime> Run<R> {
    /// The three parts, when all have arrived (taken out).
    pub fn parts(&mut self) -> Option<Observations> {
        match (
            self.capabilities.clone(),
            self.visual.take(),
            self.semantic.take(),
        ) {
            (Some(capabilities), Some(visual), Some(semantic)) => Some(Observations {
                capabilities,
                visual,
                semantic,
            }),
            (_, visual, semantic) => {
                self.visual = visual;
                self.semantic = semantic;
                None
            }
        }
    }
}

/// Every run's slot, by thread id. The lock is never held across an await.
pub(super) struct Runs<R: ComputerUseRuntime> {
    slots: Mutex<HashMap<String, Run<R>>>,
}

impl<R: ComputerUseRuntime> Runs<R> {
    pub fn new() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `f` on the slot of `thread` (made when missing). A poisoned lock
    /// (a panic elsewhere while it was held) still holds whole slots: each
    /// change is one assignment.
    pub fn with<T>(&self, thread: &str, f: impl FnOnce(&mut Run<R>) -> T) -> T {
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(slots.entry(thread.to_owned()).or_default())
    }

    /// The stage of `thread`, taken out of its slot.
    pub fn take(&self, thread: &str) -> Option<Stage<R>> {
        self.with(thread, |run| run.stage.take())
    }

    /// The stage of `thread` when `want` accepts it; else it stays in the
    /// slot (never dropped by a node that expected another), and the
    /// refusal names what the thread holds.
    pub fn take_if(
        &self,
        thread: &str,
        want: impl FnOnce(&Stage<R>) -> bool,
    ) -> Result<Stage<R>, &'static str> {
        self.with(thread, |run| match run.stage.take() {
            None => Err("nothing"),
            Some(stage) if want(&stage) => Ok(stage),
            Some(stage) => {
                let name = stage.name();
                run.stage = Some(stage);
                Err(name)
            }
        })
    }

    /// Puts `stage` in the slot of `thread`.
    pub fn put(&self, thread: &str, stage: Stage<R>) {
        self.with(thread, |run| run.stage = Some(stage));
    }

    /// Forgets `thread`'s run (it ended): what it still holds is dropped,
    /// and released by its guard.
    pub fn end(&self, thread: &str) {
        let ended = {
            let mut slots = self
                .slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            slots.remove(thread)
        };
        drop(ended);
    }
}
