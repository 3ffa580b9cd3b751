//! `computer-use-sim`: a simulated desktop served as a `computer-use-mcp` v8
//! server on stdio.
//!
//! ```text
//! computer-use-sim [--principal ID] [--fault NAME]... [--confirm-tool TOOL]...
//!                  [--allow-destructive] [--slow-ms N] [--listen ADDR] [--x11]
//! ```

use adk_computer_use::sim::{Fault, SimConfig, SimServer};

fn usage() -> String {
    let faults: Vec<&str> = Fault::ALL.iter().map(|(name, _)| *name).collect();
    format!(
        "computer-use-sim: a simulated desktop served as a computer-use-mcp v8 server on stdio

usage: computer-use-sim [--principal ID] [--fault NAME]... [--confirm-tool TOOL]...
                        [--allow-destructive] [--slow-ms N] [--listen ADDR] [--x11]

  --principal ID        the principal every caller is authenticated as
                        (default: $COMPUTER_USE_PRINCIPAL_ID, else principal-local)
  --fault NAME          make the server lie or fail in one precise way; one of:
                        {}
  --confirm-tool TOOL   actions of TOOL always need an approval
  --allow-destructive   allow destructive actions (denied by default)
  --slow-ms N           delay every call by N milliseconds
  --listen ADDR         serve MCP over TCP at ADDR (127.0.0.1:0 picks a port,
                        printed first) to every client, on one desktop that
                        outlives them, instead of on stdin/stdout
  --x11                 act on the real X11 display $DISPLAY names instead of
                        the simulated desktop (built with the x11 feature)
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
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let listen = match args.iter().position(|a| a == "--listen") {
        Some(at) if at + 1 < args.len() => {
            let address = args.remove(at + 1);
            args.remove(at);
            Some(address)
        }
        Some(_) => {
            eprintln!("computer-use-sim: --listen needs an address (127.0.0.1:0 picks a port)");
            return std::process::ExitCode::from(2);
        }
        None => None,
    };
    let x11 = args.iter().any(|a| a == "--x11");
    args.retain(|a| a != "--x11");
    let config = match SimConfig::from_args(args) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("computer-use-sim: {err}\n(run with --help for usage)");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match desktop(x11) {
        Ok(Some(desktop)) => SimServer::on(config, desktop),
        Ok(None) => SimServer::new(config),
        Err(err) => {
            eprintln!("computer-use-sim: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let served = match listen {
        Some(address) => match tokio::net::TcpListener::bind(&address).await {
            Ok(listener) => {
                // The first line a caller reads: where to connect.
                match listener.local_addr() {
                    Ok(bound) => println!("listening on {bound}"),
                    Err(err) => {
                        eprintln!("computer-use-sim: {err}");
                        return std::process::ExitCode::FAILURE;
                    }
                }
                server.serve_tcp(listener).await
            }
            Err(err) => {
                eprintln!("computer-use-sim: cannot listen on {address}: {err}");
                return std::process::ExitCode::FAILURE;
            }
        },
        None => server.serve_stdio().await,
    };
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("computer-use-sim: {err}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The desktop asked for: the real X11 display, or `None` for the
/// simulated one.
fn desktop(x11: bool) -> Result<Option<Box<dyn adk_computer_use::sim::DesktopBackend>>, String> {
    if !x11 {
        return Ok(None);
    }
    #[cfg(feature = "x11")]
    {
        adk_computer_use::x11::X11Desktop::connect()
            .map(|d| Some(Box::new(d) as Box<dyn adk_computer_use::sim::DesktopBackend>))
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "x11"))]
    {
        Err("--x11 needs the x11 feature: cargo build --features x11".into())
    }
}
