//! How an agent loop ended, and what it did on the way: the one value a
//! host reads after [`super::AgentLoop::run`].

use super::planner::StepRecord;
use crate::ComputerUseError;
use crate::chain::{CheckpointId, PendingApproval};
use crate::contracts::ActionPreview;
use crate::runtime::ComputerUseRuntime;
use serde_json::Value;

/// Why the loop stopped.
pub enum AgentStop<R: ComputerUseRuntime> {
    /// The planner said the request is done.
    Done {
        /// Its closing words.
        summary: String,
    },
    /// The step budget ran out first.
    Budget,
    /// An action may not run.
    Blocked {
        /// The blocker code.
        code: String,
        /// The policy's reasons.
        reasons: Vec<String>,
    },
    /// An action waits for a person; it was suspended to this checkpoint
    /// and resumes with [`Session::resume`](crate::chain::Session::resume).
    Suspended {
        /// The sealed checkpoint.
        checkpoint: CheckpointId,
        /// The action waiting.
        action_id: String,
        /// The digest a person approves.
        action_digest: String,
        /// The policy the action was previewed under.
        policy_digest: String,
    },
    /// An action waits for a person, and no checkpoint store was given.
    NeedsApproval(PendingApproval<R>),
    /// OpenAI reported safety checks for the next action and nobody
    /// acknowledged them with an approval of that exact action.
    SafetyChecks {
        /// The checks, as the model reported them.
        checks: Vec<Value>,
        /// The preview the acknowledgement must name (none for a read the
        /// model asked for, which is never previewed).
        preview: Option<Box<ActionPreview>>,
    },
    /// A step failed: a planner output was refused, or the chain refused
    /// or failed a step. The history holds what ran before it.
    Failed {
        /// What went wrong.
        error: ComputerUseError,
    },
    /// The loop was interrupted (see [`LoopInterrupt`](super::LoopInterrupt)).
    Interrupted,
}

/// What the loop did and why it stopped.
pub struct AgentReport<R: ComputerUseRuntime> {
    /// Why it stopped.
    pub stop: AgentStop<R>,
    /// Every step, oldest first.
    pub history: Vec<StepRecord>,
}

impl<R: ComputerUseRuntime> std::fmt::Debug for AgentStop<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Done { summary } => f.debug_struct("Done").field("summary", summary).finish(),
            Self::Budget => f.write_str("Budget"),
            Self::Blocked { code, reasons } => f
                .debug_struct("Blocked")
                .field("code", code)
                .field("reasons", reasons)
                .finish(),
            Self::Suspended {
                checkpoint,
                action_id,
                ..
            } => f
                .debug_struct("Suspended")
                .field("checkpoint", checkpoint)
                .field("action_id", action_id)
                .finish_non_exhaustive(),
            Self::NeedsApproval(pending) => f
                .debug_tuple("NeedsApproval")
                .field(&pending.action_id())
                .finish(),
            Self::SafetyChecks { checks, .. } => f
                .debug_struct("SafetyChecks")
                .field("checks", checks)
                .finish_non_exhaustive(),
            Self::Interrupted => f.write_str("Interrupted"),
            Self::Failed { error } => f.debug_struct("Failed").field("error", error).finish(),
        }
    }
}

impl<R: ComputerUseRuntime> AgentReport<R> {
    /// The failure that ended the loop, if one did.
    pub fn error(&self) -> Option<&ComputerUseError> {
        match &self.stop {
            AgentStop::Failed { error } => Some(error),
            _ => None,
        }
    }

    /// The report, or the failure that ended the loop.
    pub fn into_result(self) -> Result<Self, ComputerUseError> {
        match self.stop {
            AgentStop::Failed { error } => Err(error),
            _ => Ok(self),
        }
    }
}

impl<R: ComputerUseRuntime> std::fmt::Debug for AgentReport<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentReport")
            .field("stop", &self.stop)
            .field("history", &self.history)
            .finish()
    }
}
