//! `computer-use-sim`: a simulated desktop served as a `computer-use-mcp` v8
//! server on stdio (or, with `--listen`, over TCP to authenticated clients).
//!
//! ```text
//! computer-use-sim [--principal ID] [--fault NAME]... [--confirm-tool TOOL]...
//!                  [--allow-destructive] [--slow-ms N] [--x11]
//!                  [--listen ADDR [--allow-remote]
//!                   [--agent-credential-file F --approver-credential-file F]]
//! ```
//!
//! With `--listen` and no credential files it prints, first:
//!
//! ```text
//! listening on 127.0.0.1:PORT
//! agent-credential HEX
//! approver-credential HEX
//! ```

use adk_computer_use::sim::{Fault, SimConfig, SimCredentials, SimServer};

fn usage() -> String {
    let faults: Vec<&str> = Fault::ALL.iter().map(|(name, _)| *name).collect();
    format!(
        "computer-use-sim: a simulated desktop served as a computer-use-mcp v8 server on stdio

usage: computer-use-sim [--principal ID] [--fault NAME]... [--confirm-tool TOOL]...
                        [--allow-destructive] [--slow-ms N] [--x11]
                        [--listen ADDR [--allow-remote]
                         [--agent-credential-file F --approver-credential-file F]]

  --principal ID        the principal every caller is authenticated as
                        (default: $COMPUTER_USE_PRINCIPAL_ID, else principal-local)
  --fault NAME          make the server lie or fail in one precise way; one of:
                        {}
  --confirm-tool TOOL   actions of TOOL always need an approval
  --allow-destructive   allow destructive actions (denied by default)
  --slow-ms N           delay every call by N milliseconds
  --listen ADDR         serve MCP over TCP at ADDR (127.0.0.1:0 picks a port)
                        to every client, on one desktop that outlives them,
                        instead of on stdin/stdout. Each connection presents a
                        credential in its initialize request
                        (capabilities.experimental[\"adk/credential\"] =
                        {{\"token\": ...}}): the agent's (every tool but
                        approve_action) or the approver's (every tool). It
                        prints `listening on ADDR`, then, unless the files
                        below give them, two fresh random credentials:
                        `agent-credential HEX` and `approver-credential HEX`
  --allow-remote        let --listen take an address that is not loopback
                        (refused by default)
  --agent-credential-file F, --approver-credential-file F
                        read the two credentials from files (both or
                        neither; surrounding whitespace is ignored) instead
                        of generating them; nothing is printed for them
  --x11                 act on the real X11 display $DISPLAY names instead of
                        the simulated desktop (built with the x11 feature)
  --help                print this and exit

It speaks MCP on stdin/stdout until the client closes the connection; there
the host that spawned it is trusted and no credential is asked for. From
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
    let allow_remote = args.iter().any(|a| a == "--allow-remote");
    args.retain(|a| a != "--allow-remote");
    let mut files = [None, None];
    for (slot, flag) in files
        .iter_mut()
        .zip(["--agent-credential-file", "--approver-credential-file"])
    {
        match args.iter().position(|a| a == flag) {
            Some(at) if at + 1 < args.len() => {
                *slot = Some(args.remove(at + 1));
                args.remove(at);
            }
            Some(_) => {
                eprintln!("computer-use-sim: {flag} needs a file");
                return std::process::ExitCode::from(2);
            }
            None => {}
        }
    }
    if listen.is_none() && (allow_remote || files.iter().any(Option::is_some)) {
        eprintln!(
            "computer-use-sim: --allow-remote and the credential files apply only with --listen"
        );
        return std::process::ExitCode::from(2);
    }
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
        Some(address) => {
            let (listener, credentials, generated) =
                match listen_on(&address, allow_remote, files).await {
                    Ok(listening) => listening,
                    Err((code, message)) => {
                        eprintln!("computer-use-sim: {message}");
                        return std::process::ExitCode::from(code);
                    }
                };
            if generated {
                // The one place a credential is ever shown: to the host
                // that started the simulator, on its stdout.
                println!("agent-credential {}", credentials.agent());
                println!("approver-credential {}", credentials.approver());
            }
            server.serve_tcp(listener, credentials).await
        }
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

/// Binds `address` (loopback only, unless `allow_remote`), prints where it
/// listens, and takes the credentials from `files` (agent's, approver's) or
/// generates them (`true`: generated, to be printed). An error is the exit
/// code and its message.
async fn listen_on(
    address: &str,
    allow_remote: bool,
    files: [Option<String>; 2],
) -> Result<(tokio::net::TcpListener, SimCredentials, bool), (u8, String)> {
    let resolved: Vec<std::net::SocketAddr> = tokio::net::lookup_host(address)
        .await
        .map_err(|err| (1, format!("cannot listen on {address}: {err}")))?
        .collect();
    if resolved.is_empty() {
        return Err((1, format!("cannot listen on {address}: no address")));
    }
    if !allow_remote && let Some(remote) = resolved.iter().find(|a| !a.ip().is_loopback()) {
        return Err((
            2,
            format!(
                "refusing to listen on {remote} ({address}): not a loopback address, so other machines could connect; use 127.0.0.1 or ::1, or pass --allow-remote"
            ),
        ));
    }
    let (credentials, generated) = match files {
        [None, None] => (
            SimCredentials::generate().map_err(|err| (1, err.to_string()))?,
            true,
        ),
        [Some(agent), Some(approver)] => {
            let read = |path: &str| {
                std::fs::read_to_string(path)
                    .map_err(|err| (1, format!("cannot read credential file {path}: {err}")))
            };
            (
                SimCredentials::new(read(&agent)?, read(&approver)?)
                    .map_err(|err| (2, err.to_string()))?,
                false,
            )
        }
        _ => {
            return Err((
                2,
                "--agent-credential-file and --approver-credential-file go together".into(),
            ));
        }
    };
    let listener = tokio::net::TcpListener::bind(&resolved[..])
        .await
        .map_err(|err| (1, format!("cannot listen on {address}: {err}")))?;
    let bound = listener
        .local_addr()
        .map_err(|err| (1, format!("cannot listen on {address}: {err}")))?;
    // The first line a caller reads: where to connect.
    println!("listening on {bound}");
    Ok((listener, credentials, generated))
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
