//! Runs the bundled simulator as a child process of the example itself: the
//! example re-executes its own binary with `--serve-sim`, which serves the
//! simulated desktop on stdio. No separate build step, no network.

use adk_computer_use::ComputerUseError;
use adk_computer_use::sim::{SimConfig, SimServer};

/// The flag that turns this process into the simulator.
pub const SERVE_FLAG: &str = "--serve-sim";

/// If this process was started as the simulator, serve and return `true`.
pub async fn serve_if_asked() -> Result<bool, ComputerUseError> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() != Some(SERVE_FLAG) {
        return Ok(false);
    }
    SimServer::new(SimConfig::from_args(args)?)
        .serve_stdio()
        .await?;
    Ok(true)
}

/// A command that starts the simulator with `flags`.
pub fn command(flags: &[&str]) -> Result<tokio::process::Command, ComputerUseError> {
    let exe = std::env::current_exe().map_err(|err| ComputerUseError::Transport {
        operation: "spawn".into(),
        message: format!("cannot find this example's binary: {err}"),
    })?;
    let mut command = tokio::process::Command::new(exe);
    command.arg(SERVE_FLAG).args(flags);
    Ok(command)
}
