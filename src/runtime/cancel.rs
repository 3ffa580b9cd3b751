//! Stopping an agent safely: desktop authority goes first.
//!
//! An agent that is told to stop may be in the middle of a chain. If it were
//! interrupted first, a mutation already in flight could still land with a
//! live lease. [`CancellationBridge`] therefore revokes the desktop's
//! authority on the runtime (pause, stop or emergency stop, which revoke
//! leases) and only then interrupts the agent. The agent is interrupted even
//! when the revocation fails, and the failure is returned.

use std::future::Future;
use std::sync::Arc;

use super::ComputerUseRuntime;
use crate::ComputerUseError;

/// Interrupts a running agent. A host implements it over its agent loop.
pub trait AgentInterrupter: Send + Sync {
    /// Interrupts the agent, with a reason it may show.
    fn interrupt(&self, reason: &str) -> impl Future<Output = ()> + Send;
}

/// How far a cancellation goes on the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopKind {
    /// Pause the session (it can be resumed).
    Pause,
    /// Stop the session for good.
    Stop,
    /// Stop every session on the desktop.
    Emergency,
}

/// Revokes desktop authority, then interrupts the agent.
pub struct CancellationBridge<R: ComputerUseRuntime, I: AgentInterrupter> {
    runtime: Arc<R>,
    interrupter: I,
}

impl<R: ComputerUseRuntime, I: AgentInterrupter> CancellationBridge<R, I> {
    /// A bridge over `runtime` and the host's `interrupter`.
    pub fn new(runtime: Arc<R>, interrupter: I) -> Self {
        Self {
            runtime,
            interrupter,
        }
    }

    /// Revokes authority on the runtime, then interrupts the agent. Returns
    /// the revocation's failure, if any, after the agent was interrupted.
    pub async fn cancel(&self, kind: StopKind, reason: &str) -> Result<(), ComputerUseError> {
        let revoked = match kind {
            StopKind::Pause => self.runtime.pause_session(Some(reason)).await,
            StopKind::Stop => self.runtime.stop_session(Some(reason)).await,
            StopKind::Emergency => self.runtime.emergency_stop(Some(reason)).await,
        };
        self.interrupter.interrupt(reason).await;
        revoked
    }
}
