//! A server spawned as a child process, spoken to over its stdio.
//!
//! The messages are [`JsonLines`]'; what this adds is the child's lifetime.
//! Closing follows the MCP stdio shutdown sequence: the child's stdin is
//! closed and the child given [`ChildTransport::EXIT_WAIT`] to exit, then
//! (on Linux) asked to terminate and given as long again, then killed.
//! Dropping the transport kills the child at once (tokio's `kill_on_drop`)
//! and waits for nothing.

use std::future::Future;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::JsonLines;

/// An MCP client transport over a spawned server's stdin and stdout.
///
/// [`crate::mcp::ComputerUseMcpRuntime::spawn`] speaks through it; any rmcp
/// client can.
pub struct ChildTransport {
    child: Option<Child>,
    lines: JsonLines<ChildStdout, ChildStdin>,
}

impl ChildTransport {
    /// How long closing waits for the child to exit, once after its stdin
    /// is closed and once after it is asked to terminate.
    pub const EXIT_WAIT: Duration = Duration::from_secs(3);

    /// Spawns `command` with its stdin and stdout piped (its stderr as the
    /// command sets it: inherited unless set otherwise).
    pub fn spawn(mut command: tokio::process::Command) -> std::io::Result<Self> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other(
                "the child's stdin and stdout were not piped",
            ));
        };
        Ok(Self {
            child: Some(child),
            lines: JsonLines::new(stdout, stdin),
        })
    }

    /// How many tool answers were read in one pass as tool results
    /// ([`JsonLines::typed_reads`]).
    pub fn typed_reads(&self) -> u64 {
        self.lines.typed_reads()
    }

    /// The child's process id, while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }
}

/// Waits for `child` to exit, at most [`ChildTransport::EXIT_WAIT`]:
/// whether it did. A wait that fails counts as not exited, so the close
/// goes on to the harsher steps rather than leaving the child unreaped.
async fn exited(child: &mut Child) -> bool {
    match tokio::time::timeout(ChildTransport::EXIT_WAIT, child.wait()).await {
        Ok(Ok(_)) => true,
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "waiting for the server to exit");
            false
        }
        Err(_) => false,
    }
}

/// Asks `child` to terminate (SIGTERM).
#[cfg(target_os = "linux")]
fn terminate(child: &Child) {
    let pid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid
        && let Err(err) = rustix::process::kill_process(pid, rustix::process::Signal::TERM)
    {
        tracing::warn!(error = %err, "asking the server to terminate");
    }
}

#[cfg(not(target_os = "linux"))]
fn terminate(_child: &Child) {}

impl Transport<RoleClient> for ChildTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.lines.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.lines.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Closing stdin asks the server to exit. Neither a failure to write
        // what was queued nor a server that stopped reading keeps the child
        // alive: the line transport gives up on them within its close wait.
        let closed = self.lines.close().await;
        if let Some(child) = self.child.as_mut() {
            if !exited(child).await {
                terminate(child);
                if !exited(child).await {
                    child.kill().await?;
                }
            }
            // Exited or killed: a cancelled close leaves it to the drop.
            self.child = None;
        }
        closed
    }
}
