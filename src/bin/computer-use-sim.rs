//! `computer-use-sim`: a simulated desktop served as a `computer-use-mcp` v8
//! server on stdio.
//!
//! ```text
//! computer-use-sim [--principal ID] [--fault NAME]... [--confirm-tool TOOL]...
//!                  [--allow-destructive] [--slow-ms N]
//! ```

use adk_computer_use::sim::{Fault, SimConfig, SimServer};

fn usage() -> String {
    let faults: Vec<&str> = Fault::ALL.iter().map(|(name, _)| *name).collect();
    format!(
        "computer-use-sim: a simulated desktop served as a computer-use-mcp v8 server on stdio

usage: computer-use-sim [--principal ID] [--fault NAME]... [--confirm-tool TOOL]...
                        [--allow-destructive] [--slow-ms N]

  --principal ID        the principal every caller is authenticated as
                        (default: $COMPUTER_USE_PRINCIPAL_ID, else principal-local)
  --fault NAME          make the server lie or fail in one precise way; one of:
                        {}
  --confirm-tool TOOL   actions of TOOL always need an approval
  --allow-destructive   allow destructive actions (denied by default)
  --slow-ms N           delay every call by N milliseconds
  --help                print this and exit

It speaks MCP on stdin/stdout until the client closes the connection. From
Rust, `adk_computer_use::sim::spawn` serves the same simulator in-process.",
        faults.join(", ")
    )
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    if std::env::args().skip(1).any(|a| a == "--help" || a == "-h") {
        println!("{}", usage());
        return std::process::ExitCode::SUCCESS;
    }
    let config = match SimConfig::from_args(std::env::args().skip(1)) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("computer-use-sim: {err}\n(run with --help for usage)");
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
