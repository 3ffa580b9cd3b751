//! Agents: a model plans, the chain governs.
//!
//! A [`Planner`] (a model behind a client, or a recorded script) proposes
//! the next step from the request, the latest observations, the
//! [`AllowedActions`] schema and the outcomes so far. The [`AgentLoop`]
//! checks every proposal before it becomes a [`crate::ProposedAction`] (a
//! model's OpenAI or Anthropic computer-use action is first mapped onto the
//! low-level tools by [`formats`], hit-testing its coordinates against the
//! observed windows) and runs it through the session's chain. The model
//! never supplies identity, scope, session, lease, approval or action ids.

mod allowed;
pub mod formats;
#[cfg(feature = "openai")]
pub mod openai;
mod planner;
mod report;
mod run;

pub use allowed::{AllowedActions, PlannedStep};

/// What a model may propose among `tools` on an MCP server: the server's
/// [`tool_offers`](crate::mcp::ComputerUseMcpRuntime::tool_offers), made
/// [`AllowedActions`].
#[cfg(feature = "mcp")]
pub async fn allowed_actions(
    runtime: &crate::mcp::ComputerUseMcpRuntime,
    tools: &[&str],
) -> Result<AllowedActions, crate::ComputerUseError> {
    Ok(AllowedActions::from_offers(
        &runtime.tool_offers(tools).await?,
    ))
}
pub use planner::{PlanContext, PlanOutput, Planner, ScriptedPlanner, StepRecord};
pub use report::{AgentReport, AgentStop};
pub use run::{AgentLoop, LoopInterrupt, SafetyAcknowledger};
