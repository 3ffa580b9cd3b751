//! The simulator inside the caller's own process: a dependent crate gets a
//! governed runtime over the simulated desktop without building, finding or
//! re-executing any binary. Client and server speak MCP over an in-memory
//! pipe, so everything the adapter checks on a real server it checks here.

use super::{Fault, SimConfig, SimServer};
use crate::ComputerUseError;
use crate::runtime::mcp::{ComputerUseMcpRuntime, McpApprover, McpRuntimeConfig};

/// Bytes the in-memory pipe buffers in each direction.
const PIPE_BYTES: usize = 256 * 1024;

/// Serves a fresh simulated desktop (`sim`) on a task of the current Tokio
/// runtime and connects an MCP runtime (`config`) to it. Returns the
/// runtime, to hand to sessions and agents, and apart from it the host's
/// approver, to keep: nothing reachable from the runtime approves.
///
/// The crash faults (`crash.beforeEffect`, `crash.afterCommit`) end the
/// server's process, which here is the caller's: they are refused; run the
/// `computer-use-sim` binary as a child process to inject them. The server
/// task ends when the runtime is shut down or dropped.
///
/// ```
/// use adk_computer_use::runtime::mcp::McpRuntimeConfig;
/// use adk_computer_use::sim::{self, SimConfig};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), adk_computer_use::ComputerUseError> {
/// let sim = SimConfig::for_principal("alice");
/// let (runtime, _approver) = sim::spawn(sim, McpRuntimeConfig::new("alice")).await?;
/// let started = runtime.start_session(Some("try the simulator"), None).await?;
/// assert_eq!(started.principal_id, "alice");
/// runtime.shutdown().await
/// # }
/// ```
pub async fn spawn(
    sim: SimConfig,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    spawn_on(sim, Box::new(super::Desktop::default()), config).await
}

/// Serves the same rules over `desktop` (a real display, for one) on a
/// task of the current Tokio runtime and connects an MCP runtime to it;
/// otherwise as [`spawn`].
pub async fn spawn_on(
    sim: SimConfig,
    desktop: Box<dyn super::DesktopBackend>,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    for fault in [Fault::CrashBeforeEffect, Fault::CrashAfterCommit] {
        if sim.has(fault) {
            return Err(ComputerUseError::InvalidRequest {
                field: "faults".into(),
                message: format!(
                    "{fault:?} would end this process; inject it into a `computer-use-sim` child process instead"
                ),
            });
        }
    }
    let (client, server) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        use rmcp::ServiceExt;
        match SimServer::on(sim, desktop).service().serve(server).await {
            Ok(running) => {
                if let Err(err) = running.waiting().await {
                    tracing::debug!(error = %err, "the in-process simulator stopped");
                }
            }
            Err(err) => tracing::warn!(error = %err, "the in-process simulator did not start"),
        }
    });
    ComputerUseMcpRuntime::connect_with_approver(client, config).await
}
