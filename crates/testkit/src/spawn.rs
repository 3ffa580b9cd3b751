//! The desktop server inside the caller's own process: a test or example
//! gets a governed runtime over a desktop without building, finding or
//! re-executing any binary. Client and server speak MCP over an in-memory
//! pipe, so everything the adapter checks on a real server it checks here.

use adk_computer_use::ComputerUseError;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpApprover, McpRuntimeConfig};
use computer_use_server::{Config, DesktopBackend, Fault, Server, SimulatedDesktop};

/// The desktop server's own counters (`sim_stats`, outside the protocol),
/// which every runtime this kit connects may read through
/// `ComputerUseMcpRuntime::call`.
pub const STATS_TOOL: &str = "sim_stats";

/// Bytes the in-memory pipe buffers in each direction.
const PIPE_BYTES: usize = 256 * 1024;

/// Serves a fresh simulated desktop under `server` on a task of the current
/// Tokio runtime and connects an MCP runtime (`config`) to it. Returns the
/// runtime, to hand to sessions and agents, and apart from it the host's
/// approver, to keep: nothing reachable from the runtime approves.
///
/// The runtime may read the server's counters ([`STATS_TOOL`]). The server
/// task ends when the runtime is shut down or dropped.
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
    spawn_simulated(server, SimulatedDesktop::default(), config).await
}

/// Serves the same rules over `desktop` (a real display, say) on a task of
/// the current Tokio runtime and connects an MCP runtime to it; otherwise
/// as [`spawn`]. No fault is injected, whatever `desktop` is: faults reach a
/// server only through [`spawn_simulated`].
pub async fn spawn_on(
    server: Config,
    desktop: Box<dyn DesktopBackend>,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    serve(Server::on(server, desktop), config).await
}

/// Serves the simulated `desktop`, injecting the faults it was given
/// ([`SimulatedDesktop::with_faults`]); otherwise as [`spawn`].
///
/// The crash faults (`crash.beforeEffect`, `crash.afterCommit`) end the
/// server's process, which here is the caller's: they are refused; run the
/// `computer-use-server` binary as a child process to inject them.
pub async fn spawn_simulated(
    server: Config,
    desktop: SimulatedDesktop,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    for fault in [Fault::CrashBeforeEffect, Fault::CrashAfterCommit] {
        if desktop.injected().has(fault) {
            return Err(ComputerUseError::InvalidRequest {
                field: "faults".into(),
                message: format!(
                    "{fault:?} would end this process; inject it into a `computer-use-server` child process instead"
                ),
            });
        }
    }
    serve(Server::simulated(server, desktop), config).await
}

/// Connects one more MCP runtime to `server`, served on a task of the
/// current Tokio runtime over an in-memory pipe of its own: runtimes
/// connected to clones of one [`Server`] share its desktop and its state,
/// as two agents of one server do. Otherwise as [`spawn`].
pub async fn connect(
    server: Server,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    serve(server, config).await
}

/// Serves `server` on a task of the current Tokio runtime and connects an
/// MCP runtime to it over an in-memory pipe.
async fn serve(
    server: Server,
    config: McpRuntimeConfig,
) -> Result<(ComputerUseMcpRuntime, McpApprover), ComputerUseError> {
    let config = config.read_only_extension(STATS_TOOL)?;
    let (client, pipe) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(async move {
        use adk_computer_use::mcp::rmcp::ServiceExt;
        match server.service().serve(pipe).await {
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
