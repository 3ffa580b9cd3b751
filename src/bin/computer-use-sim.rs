//! `computer-use-sim`: a simulated desktop served as a `computer-use-mcp` v8
//! server on stdio.
//!
//! ```text
//! computer-use-sim [--principal ID] [--fault NAME]... [--confirm-tool TOOL]...
//!                  [--allow-destructive] [--slow-ms N]
//! ```

use adk_computer_use::sim::{SimConfig, SimServer};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let config = match SimConfig::from_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("computer-use-sim: {err}");
            return std::process::ExitCode::from(2);
        }
    };
    match SimServer::new(config).serve_stdio().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("computer-use-sim: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}
