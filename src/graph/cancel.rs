//! Stopping an agent safely: the desktop's authority is revoked first
//! (the runtime session paused or stopped, or every session stopped), and
//! only then is the ADK run interrupted. The other order leaves a window
//! in which a run already told to stop still holds a lease and can act.

use std::sync::Arc;

use crate::ComputerUseError;
use crate::runtime::ComputerUseRuntime;

/// The host's way to interrupt an ADK run (`adk_runner::Runner::interrupt`
/// or another): given the ADK session id, whether a run was interrupted.
pub type Interrupter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Pairs the runtime an agent acts through with the host's interrupter.
pub struct CancellationBridge<R: ComputerUseRuntime> {
    runtime: Arc<R>,
    interrupt: Interrupter,
}

/// Which revocation a control sends.
#[derive(Clone, Copy)]
enum Control {
    Pause,
    Stop,
    Emergency,
}

impl<R: ComputerUseRuntime> CancellationBridge<R> {
    /// The bridge over `runtime` and the host's `interrupt`.
    pub fn new(runtime: Arc<R>, interrupt: Interrupter) -> Self {
        Self { runtime, interrupt }
    }

    /// Pauses the runtime session (its leases revoked), then interrupts the
    /// ADK session `adk_session`. Returns whether a run was interrupted.
    ///
    /// # Errors
    ///
    /// When the runtime refuses or fails the pause, the ADK run is still
    /// interrupted (reasoning stops either way), and the error says that
    /// the desktop's authority may still stand.
    pub async fn pause(&self, adk_session: &str, reason: &str) -> Result<bool, ComputerUseError> {
        self.control(Control::Pause, adk_session, reason).await
    }

    /// Stops the runtime session for good, then interrupts the ADK run.
    ///
    /// # Errors
    ///
    /// As [`CancellationBridge::pause`].
    pub async fn stop(&self, adk_session: &str, reason: &str) -> Result<bool, ComputerUseError> {
        self.control(Control::Stop, adk_session, reason).await
    }

    /// Stops every session on the desktop, then interrupts the ADK run.
    ///
    /// # Errors
    ///
    /// As [`CancellationBridge::pause`].
    pub async fn emergency_stop(
        &self,
        adk_session: &str,
        reason: &str,
    ) -> Result<bool, ComputerUseError> {
        self.control(Control::Emergency, adk_session, reason).await
    }

    async fn control(
        &self,
        control: Control,
        adk_session: &str,
        reason: &str,
    ) -> Result<bool, ComputerUseError> {
        let revoked = match control {
            Control::Pause => self.runtime.pause_session(Some(reason)).await,
            Control::Stop => self.runtime.stop_session(Some(reason)).await,
            Control::Emergency => self.runtime.emergency_stop(Some(reason)).await,
        };
        let interrupted = (self.interrupt)(adk_session);
        revoked.map(|()| interrupted)
    }
}
