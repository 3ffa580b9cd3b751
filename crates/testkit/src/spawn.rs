//! The desktop server inside the caller's own process: a test or example
//! gets a governed runtime over a desktop without building, finding or
//! re-executing any binary. Client and server speak MCP over an in-memory
//! pipe, so everything the adapter checks on a real server it checks here.

use adk_computer_use::ComputerUseError;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpApprover, McpRuntimeConfig};
use computer_use_server::{Config, DesktopBackend, Fault, Server, SimulatedDesktop};

/// Bytes the in-memory pipe buffers in each direction.
const PIPE_BYTES: usize = 256 * 1024;

/// Serves a fresh simulated desktop under `server` on a task of the current
/// Tokio runtime and connects an MCP runtime (`config`) to it. Returns the
/// runtime, to hand to sessions and agents, and apart from it the host's
/// approver, to keep: nothing reachable from the runtime approves.
///
/// The server task ends when the runtime is shut down or dropped.
///
/// ```
/// use adk_computer_use::mcp::McpRuntimeConfig;
/// use computer_use_server::Config;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), adk_computer_use::ComputerUseError> {
/// let server = Config::for_principal("alice");
/// let (runtime, _approver) =
///     adk_computer_use_testkit::spawn(server, McpRuntimeConfig::new("alice")).await?;
/// let started = runtime.start_session(Some("try the simulated desktop"), None).await?;
/// assert_eq!(started.principal_id, "alice");
/// runtime.shutdown().await
/// # }
/// ```
pub async fn spawn(
    server: Config,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    spawn_on(server, Box::new(SimulatedDesktop::default()), config).await
}

/// Serves the same rules over `desktop` (a real display, or a simulated
/// desktop with faults) on a task of the current Tokio runtime and connects
/// an MCP runtime to it; otherwise as [`spawn`].
///
/// The crash faults (`crash.beforeEffect`, `crash.afterCommit`) end the
/// server's process, which here is the caller's: they are refused; run the
/// `computer-use-server` binary as a child process to inject them.
pub async fn spawn_on(
    server: Config,
    desktop: Box<dyn DesktopBackend>,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    for fault in [Fault::CrashBeforeEffect, Fault::CrashAfterCommit] {
        if desktop.faults().has(fault) {
            return Err(ComputerUseError::InvalidRequest {
                field: "faults".into(),
                message: format!(
                    "{fault:?} would end this process; inject it into a `computer-use-server` child process instead"
                ),
            });
        }
    }
    let (client, pipe) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        use adk_computer_use::mcp::rmcp::ServiceExt;
        match Server::on(server, desktop).service().serve(pipe).await {
            Ok(running) => {
                if let Err(err) = running.waiting().await {
                    tracing::debug!(error = %err, "the in-process server stopped");
                }
            }
            Err(err) => tracing::warn!(error = %err, "the in-process server did not start"),
        }
    });
    ComputerUseMcpRuntime::connect_with_approver(client, config).await
}
