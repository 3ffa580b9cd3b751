//! `computer-use-server`: a `computer-use-mcp` v8 server over the desktop
//! `--desktop` names (`simulated`, the default, or `x11`), on stdio or, with
//! `--listen`, over TCP to authenticated clients. `--help` lists every flag.
//!
//! With `--listen` and no credential files it prints, first:
//!
//! ```text
//! listening on 127.0.0.1:PORT
//! agent-credential HEX
//! approver-credential HEX
//! host-credential HEX
//! ```
//!
//! and then `agent-credential NAME HEX` for each `--agent NAME`.

use computer_use_server::{
    Config, Credentials, DesktopBackend, Fault, Faults, Server, SimulatedDesktop,
};

fn usage() -> String {
    let faults: Vec<&str> = Fault::ALL.iter().map(|(name, _)| *name).collect();
    format!(
        "computer-use-server: a computer-use-mcp v8 server over a desktop, on stdio

usage: computer-use-server [--desktop simulated|x11|wayland] [--principal ID]
                           [--confirm-tool TOOL]... [--allow-destructive]
                           [--credential-app APP]... [--slow-ms N] [--stats]
                           [--max-target-age-ms N]
                           [--fault NAME]...
                           [--listen ADDR [--allow-remote] [--agent NAME]...
                            [--agent-credential-file F --approver-credential-file F
                             [--host-credential-file F]]]

  --desktop simulated   act on a deterministic simulated desktop, in memory
                        (the default)
  --desktop x11         act on the real X11 display $DISPLAY names: real
                        windows, XTEST input, the real CLIPBOARD selection
                        (built with the x11 feature)
  --desktop wayland     act on the Wayland compositor $WAYLAND_DISPLAY names
                        (wlroots protocols; the layout from sway's IPC,
                        $SWAYSOCK), built with the wayland feature
  --principal ID        the principal every caller is authenticated as
                        (default: $COMPUTER_USE_PRINCIPAL_ID, else principal-local)
  --confirm-tool TOOL   actions of TOOL always need an approval
  --allow-destructive   allow destructive actions (denied by default)
  --credential-app APP  an app whose windows hold credentials: acting on it
                        needs an approval (repeatable; the first replaces
                        upstream's default list)
  --slow-ms N           delay every call by N milliseconds
  --max-target-age-ms N refuse target evidence older than N milliseconds at
                        execution (stale_target; default 30000, as upstream)
  --stats               answer sim_stats, the server's own counters (not part
                        of the protocol; unlisted, for tests)
  --fault NAME          (simulated desktop only) make the server lie or fail
                        in one precise way; one of:
                        {}
  --listen ADDR         serve MCP over TCP at ADDR (127.0.0.1:0 picks a port)
                        to every client, on one desktop that outlives them,
                        instead of on stdin/stdout. Each connection presents a
                        credential in its initialize request
                        (capabilities.experimental[\"adk/credential\"] =
                        {{\"token\": ...}}): an agent's (what it started,
                        and nothing of another agent's; never
                        approve_action or emergency_stop), the approver's
                        (every tool) or the host's (every tool but the
                        person's approve_action and resume_session). It
                        prints `listening on ADDR`, then, unless the files
                        below give them, fresh random credentials:
                        `agent-credential HEX` (the agent named `agent`),
                        `approver-credential HEX`, `host-credential HEX`
  --allow-remote        let --listen take an address that is not loopback
                        (refused by default)
  --agent NAME          one more agent, with a credential of its own minted
                        here and printed as `agent-credential NAME HEX`
                        (repeatable)
  --agent-credential-file F, --approver-credential-file F
                        read the agent's and the approver's credentials from
                        files (both or neither; surrounding whitespace is
                        ignored) instead of generating them; nothing is
                        printed for them
  --host-credential-file F
                        with the two files, the host's credential too
                        (without it there is no host credential: the
                        approver stops the server)
  --help                print this and exit

It speaks MCP on stdin/stdout until the client closes the connection; there
the host that spawned it is trusted and no credential is asked for. From
Rust, adk_computer_use_testkit::spawn serves the same server in-process.",
        faults.join(", ")
    )
}

/// Takes every `flag VALUE` pair out of `args`, in order.
fn take_all(args: &mut Vec<String>, flag: &str) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    while let Some(at) = args.iter().position(|a| a == flag) {
        if at + 1 >= args.len() {
            return Err(format!("{flag} needs a value"));
        }
        values.push(args.remove(at + 1));
        args.remove(at);
    }
    Ok(values)
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
            eprintln!("computer-use-server: --listen needs an address (127.0.0.1:0 picks a port)");
            return std::process::ExitCode::from(2);
        }
        None => None,
    };
    let allow_remote = args.iter().any(|a| a == "--allow-remote");
    args.retain(|a| a != "--allow-remote");
    let mut agents = Vec::new();
    while let Some(at) = args.iter().position(|a| a == "--agent") {
        if at + 1 >= args.len() {
            eprintln!("computer-use-server: --agent needs a name");
            return std::process::ExitCode::from(2);
        }
        agents.push(args.remove(at + 1));
        args.remove(at);
    }
    let mut files = [None, None, None];
    for (slot, flag) in files.iter_mut().zip([
        "--agent-credential-file",
        "--approver-credential-file",
        "--host-credential-file",
    ]) {
        match args.iter().position(|a| a == flag) {
            Some(at) if at + 1 < args.len() => {
                *slot = Some(args.remove(at + 1));
                args.remove(at);
            }
            Some(_) => {
                eprintln!("computer-use-server: {flag} needs a file");
                return std::process::ExitCode::from(2);
            }
            None => {}
        }
    }
    if listen.is_none() && (allow_remote || !agents.is_empty() || files.iter().any(Option::is_some))
    {
        eprintln!(
            "computer-use-server: --allow-remote, --agent and the credential files apply only with --listen"
        );
        return std::process::ExitCode::from(2);
    }
    let chosen = match desktop_and_faults(&mut args) {
        Ok(chosen) => chosen,
        Err(message) => {
            eprintln!("computer-use-server: {message}\n(run with --help for usage)");
            return std::process::ExitCode::from(2);
        }
    };
    let config = match Config::from_args(args) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("computer-use-server: {err}\n(run with --help for usage)");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match open(config, chosen) {
        Ok(server) => server,
        Err(err) => {
            eprintln!("computer-use-server: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let served = match listen {
        Some(address) => {
            let (listener, credentials, generated) =
                match listen_on(&address, allow_remote, files, &agents).await {
                    Ok(listening) => listening,
                    Err((code, message)) => {
                        eprintln!("computer-use-server: {message}");
                        return std::process::ExitCode::from(code);
                    }
                };
            // The one place a credential is ever shown: to the host that
            // started the simulator, on its stdout. All of it in one write:
            // a host that reads only the lines it needs and then closes
            // the pipe must not make a later line fail (nor this process
            // with it).
            let mut shown = String::new();
            if generated {
                shown.push_str(&format!("agent-credential {}\n", credentials.agent()));
                shown.push_str(&format!("approver-credential {}\n", credentials.approver()));
                if let Some(host) = credentials.host() {
                    shown.push_str(&format!("host-credential {host}\n"));
                }
            }
            for name in &agents {
                if let Some(token) = credentials.agent_named(name) {
                    shown.push_str(&format!("agent-credential {name} {token}\n"));
                }
            }
            {
                use std::io::Write as _;
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(shown.as_bytes()).and_then(|()| out.flush());
            }
            server.serve_tcp(listener, credentials).await
        }
        None => server.serve_stdio().await,
    };
    match served {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("computer-use-server: {err}");
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
    files: [Option<String>; 3],
    agents: &[String],
) -> Result<(tokio::net::TcpListener, Credentials, bool), (u8, String)> {
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
    let (mut credentials, generated) = match files {
        [None, None, None] => (
            Credentials::generate().map_err(|err| (1, err.to_string()))?,
            true,
        ),
        [Some(agent), Some(approver), host] => {
            let read = |path: &str| {
                std::fs::read_to_string(path)
                    .map_err(|err| (1, format!("cannot read credential file {path}: {err}")))
            };
            let mut credentials = Credentials::new(read(&agent)?, read(&approver)?)
                .map_err(|err| (2, err.to_string()))?;
            if let Some(host) = host {
                credentials = credentials
                    .with_host(read(&host)?)
                    .map_err(|err| (2, err.to_string()))?;
            }
            (credentials, false)
        }
        _ => {
            return Err((
                2,
                "--agent-credential-file and --approver-credential-file go together, and --host-credential-file only with them".into(),
            ));
        }
    };
    // Each agent the host names gets a credential of its own, minted here.
    for name in agents {
        credentials = credentials
            .mint_agent(name)
            .map_err(|err| (2, err.to_string()))?;
    }
    let listener = tokio::net::TcpListener::bind(&resolved[..])
        .await
        .map_err(|err| (1, format!("cannot listen on {address}: {err}")))?;
    let bound = listener
        .local_addr()
        .map_err(|err| (1, format!("cannot listen on {address}: {err}")))?;
    // The first line a caller reads: where to connect.
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {bound}").and_then(|()| out.flush());
    }
    Ok((listener, credentials, generated))
}

/// The desktop `--desktop` asks for, with the faults `--fault` asks for.
enum Chosen {
    Simulated(Faults),
    X11,
    Wayland,
}

/// Reads `--desktop` and `--fault`: faults are the simulated desktop's
/// alone, so asking a real desktop for one is refused here, and could not be
/// passed on if it were not (a real desktop holds none).
fn desktop_and_faults(args: &mut Vec<String>) -> Result<Chosen, String> {
    let desktops = take_all(args, "--desktop")?;
    let faults = take_all(args, "--fault")?;
    let kind = match desktops.as_slice() {
        [] => "simulated",
        [one] => one.as_str(),
        _ => return Err("--desktop was given more than once".into()),
    };
    match kind {
        "simulated" => {
            let mut chosen = Faults::default();
            for name in &faults {
                chosen.insert(name.parse::<Fault>().map_err(|err| err.to_string())?);
            }
            Ok(Chosen::Simulated(chosen))
        }
        "x11" if faults.is_empty() => Ok(Chosen::X11),
        "wayland" if faults.is_empty() => Ok(Chosen::Wayland),
        real @ ("x11" | "wayland") => Err(format!(
            "--fault {} was asked of the {real} desktop: faults exist only in the simulated desktop (--desktop simulated)",
            faults.join(", --fault ")
        )),
        other => Err(format!(
            "--desktop expected simulated, x11 or wayland, got {other:?}"
        )),
    }
}

/// The server over the chosen desktop: faults reach only a simulated one.
fn open(config: Config, chosen: Chosen) -> Result<Server, String> {
    match chosen {
        Chosen::Simulated(faults) => Ok(Server::simulated(
            config,
            SimulatedDesktop::default().with_faults(faults),
        )),
        Chosen::X11 => Ok(Server::on(config, x11()?)),
        Chosen::Wayland => Ok(Server::on(config, wayland()?)),
    }
}

#[cfg(feature = "wayland")]
fn wayland() -> Result<Box<dyn DesktopBackend>, String> {
    let desktop = computer_use_server::desktop::wayland::WaylandDesktop::connect()
        .map_err(|e| e.to_string())?
        .keeping_clipboard_after_exit();
    // What the compositor offers, said once at the start (standard error:
    // standard output carries the protocol or the listening line).
    eprintln!(
        "computer-use-server: wayland desktop: {}",
        desktop.protocols()
    );
    Ok(Box::new(desktop))
}

#[cfg(not(feature = "wayland"))]
fn wayland() -> Result<Box<dyn DesktopBackend>, String> {
    Err("--desktop wayland needs the wayland feature: cargo build -p computer-use-server --features wayland".into())
}

#[cfg(feature = "x11")]
fn x11() -> Result<Box<dyn DesktopBackend>, String> {
    computer_use_server::desktop::x11::X11Desktop::connect()
        .map(|d| Box::new(d.keeping_clipboard_after_exit()) as Box<dyn DesktopBackend>)
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "x11"))]
fn x11() -> Result<Box<dyn DesktopBackend>, String> {
    Err(
        "--desktop x11 needs the x11 feature: cargo build -p computer-use-server --features x11"
            .into(),
    )
}
