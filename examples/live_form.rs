//! A real GTK form, filled by element through the governed chain.
//!
//! ```text
//! cargo run --features x11 --example live_form
//! cargo run --features x11 --example live_form -- --page
//! cargo run --features x11 --example live_form -- --page --browser
//! cargo run --all-features --example live_form -- --wayland [--page [--browser]]
//! ```
//!
//! It needs an X server (`$DISPLAY`), a D-Bus session with the
//! accessibility bus (`DBUS_SESSION_BUS_ADDRESS`; `at-spi2-core` starts the
//! bus on demand, `libatk-adaptor` lets GTK join it) and `zenity`. It shows
//! `zenity --forms` with a name, an email and a password field, and then:
//!
//! 1. reads the form's elements through the desktop server (`get_ui_tree`:
//!    the password's value is never read);
//! 2. fills the name and email with one governed `fill_form`, through the
//!    application's own interfaces: no key is typed, no focus taken;
//! 3. writes the password with `set_value`, which the server's policy sends
//!    to a person (the field's role is a secret's);
//! 4. presses OK by element.
//!
//! Who approves: by default this example plays the host and approves each
//! exact action, in the open. With `--page` the server runs as its own
//! process (`computer-use-server --desktop x11`), every action that waits
//! for a person is suspended to a checkpoint store, and the approval page
//! (`computer-use-approvals serve`) shows it, naming the field and masking
//! the password: the example prints the page's sign-in link and waits for
//! a person's decision (ten minutes at most), then resumes by it. With
//! `--browser` as well, headless Chromium (`chromium`, `chromedriver`)
//! stands in for the person: it opens the page, checks that the card
//! names the field and that the password is nowhere in it, and clicks
//! Approve. Either way the agent resumes only on the decision the
//! approver signed.
//!
//! With `--wayland` the form is a native Wayland window (zenity with
//! `GDK_BACKEND=wayland`) on the compositor `$WAYLAND_DISPLAY` names (a
//! wlroots one, sway with `$SWAYSOCK`), and the server is its Wayland
//! desktop; the elements are reached the same way, through AT-SPI.
//!
//! The outside check is zenity's own output, printed beside the server's
//! read-back of each field.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{ChainOutcome, Session};
use adk_computer_use::contracts::WindowId;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, McpApprover, McpRuntimeConfig};
use adk_computer_use::runtime::{ComputerUseRuntime, ObservationScope};
use adk_computer_use::{ExecutionMode, ProposedAction, ScopeAuthorizer, VerifiedIdentity};
use serde_json::{Value, json};

#[path = "support/host.rs"]
mod host;
#[path = "support/page.rs"]
mod page;

type Error = Box<dyn std::error::Error>;

const PRINCIPAL: &str = "principal-form";
const NAME: &str = "Ada Lovelace";
const EMAIL: &str = "ada@example.org";
const PASSWORD: &str = "correct horse battery staple";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    run().await
}

async fn run() -> Result<(), Error> {
    use computer_use_server::Config;

    let args: Vec<String> = std::env::args().skip(1).collect();
    let wayland = args.iter().any(|a| a == "--wayland");
    let desktop = if wayland { "wayland" } else { "x11" };
    // The application id the desktop gives zenity's window.
    let app = if wayland { "zenity" } else { "Zenity" };
    let on_page = args.iter().any(|a| a == "--page");
    let by_browser = args.iter().any(|a| a == "--browser");
    if by_browser && !on_page {
        return Err("--browser stands in for the person on the page: use it with --page".into());
    }

    let title = format!("Sign up ({})", std::process::id());
    let mut command = Command::new("zenity");
    if wayland {
        // A native Wayland window, not one on an X server (XWayland).
        command.env("GDK_BACKEND", "wayland").env_remove("DISPLAY");
    }
    let mut zenity = Reaped(
        command
            .args(["--forms", "--title", &title])
            .args([
                "--add-entry=Name",
                "--add-entry=Email",
                "--add-password=Password",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("zenity could not be started (apt-get install zenity): {e}"))?,
    );
    // The host's approver (in-process), or the page's (its own processes).
    let (runtime, approvals) = if on_page {
        let (runtime, page) = page::start(PRINCIPAL, desktop, by_browser).await?;
        (runtime, Approvals::Page(Box::new(page)))
    } else {
        let (runtime, approver) = adk_computer_use_testkit::spawn_on(
            Config::for_principal(PRINCIPAL),
            in_process(wayland)?,
            McpRuntimeConfig::new(PRINCIPAL),
        )
        .await?;
        (Arc::new(runtime), Approvals::Host(approver))
    };
    let started = runtime.start_session(Some("fill a form"), None).await?;
    let (window, tree) = shown(&runtime, &started.session_id, app, &title).await?;
    let fields: Vec<String> = nodes(&tree["tree"])
        .iter()
        .filter(|n| n["role"] == "AXTextField" || n["role"] == "AXSecureTextField")
        .map(|n| {
            format!(
                "{} {:?} (value {})",
                n["role"].as_str().unwrap_or("?"),
                n["label"].as_str().unwrap_or("?"),
                n["value"]
            )
        })
        .collect();
    println!(
        "the form's fields, read through AT-SPI: {}",
        fields.join(", ")
    );

    let identity = VerifiedIdentity::new(PRINCIPAL, "tenant-form")?;
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:foreground"])?;
    let mut builder = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("live-form")
        .target(app, Some(WindowId::Number(window)));
    if let Approvals::Page(page) = &approvals {
        builder = builder.checkpoints(page.store());
    }
    let session = builder.build()?;
    let act = |tool: &str, arguments: Value| {
        ProposedAction::new(tool, arguments, ExecutionMode::Foreground)
    };

    let fill = act(
        "fill_form",
        json!({ "window_id": window, "fields": [
            { "role": "AXTextField", "label": "Name", "value": NAME },
            { "role": "AXTextField", "label": "Email", "value": EMAIL },
        ] }),
    );
    governed(&session, &approvals, "fill_form", fill).await?;
    let password = act(
        "set_value",
        json!({ "window_id": window, "role": "AXSecureTextField", "label": "Password", "value": PASSWORD }),
    );
    governed(&session, &approvals, "set_value (password)", password).await?;
    let press = act(
        "press_button",
        json!({ "window_id": window, "label": "OK" }),
    );
    governed(&session, &approvals, "press_button OK", press).await?;
    let stats = session.shutdown().await;
    println!(
        "reservations and leases released: {} leaked",
        stats.leaked()
    );

    let printed = zenity.printed();
    let expected = format!("{NAME}|{EMAIL}|{PASSWORD}");
    println!("requested:      {expected:?}");
    println!(
        "zenity printed: {:?} (matches: {})",
        printed.trim_end(),
        printed.trim_end() == expected
    );
    if printed.trim_end() != expected {
        return Err("zenity did not print the values asked for".into());
    }
    Ok(())
}

/// The desktop served in this process: X11, or Wayland with `--wayland`.
fn in_process(wayland: bool) -> Result<Box<dyn computer_use_server::DesktopBackend>, Error> {
    if !wayland {
        return Ok(Box::new(
            computer_use_server::desktop::x11::X11Desktop::connect()?,
        ));
    }
    #[cfg(feature = "wayland")]
    {
        Ok(Box::new(
            computer_use_server::desktop::wayland::WaylandDesktop::connect()?,
        ))
    }
    #[cfg(not(feature = "wayland"))]
    {
        Err("--wayland needs the wayland feature: cargo run --features x11,wayland --example live_form -- --wayland".into())
    }
}

/// Who approves what the policy sends to a person.
enum Approvals {
    /// The host, in the open, through its own approver.
    Host(McpApprover),
    /// A person on the approval page (or the browser standing in for one).
    Page(Box<page::Page>),
}

/// Runs one action through the chain; an approval the policy asks for is
/// given by the host or on the page, for that exact action.
async fn governed(
    session: &Session<ComputerUseMcpRuntime>,
    approvals: &Approvals,
    what: &str,
    action: ProposedAction,
) -> Result<(), Error> {
    let done = match session.run(action).await? {
        ChainOutcome::Completed(done) => done,
        ChainOutcome::NeedsApproval(pending) => {
            let reasons = pending.preview().policy.reasons.join("; ");
            match approvals {
                Approvals::Host(approver) => {
                    println!(
                        "{what} needs a person's approval ({reasons}); the host approves it now"
                    );
                    host::approve_and_complete(approver, pending).await?
                }
                Approvals::Page(page) => {
                    println!(
                        "{what} needs a person's approval ({reasons}); it waits on the approval page"
                    );
                    let id = pending.suspend().await?;
                    page.decided(&id).await?;
                    session
                        .resume_decided(&id, &page.public())
                        .await?
                        .complete()
                        .await?
                }
            }
        }
        ChainOutcome::Blocked(blocked) => {
            return Err(format!("{what} was blocked: {}", blocked.blocker()).into());
        }
    };
    println!("{what}: performed {}, {}", done.performed(), done.outcome());
    Ok(())
}

/// The form's window, once listed and answering on the accessibility bus,
/// and its tree.
async fn shown(
    runtime: &ComputerUseMcpRuntime,
    session: &str,
    app: &str,
    title: &str,
) -> Result<(u64, Value), Error> {
    let scope = |app: Option<&str>, window: Option<u64>| ObservationScope {
        session_id: session.to_owned(),
        tool: None,
        app_id: app.map(str::to_owned),
        window_id: window.map(WindowId::Number),
    };
    // Up to 30 s: a GTK application starting on a busy machine is slow.
    for _ in 0..300 {
        let listed = runtime.observe_semantic(&scope(None, None)).await?;
        let id = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title))
            .and_then(|w| w["windowId"].as_u64());
        if let Some(id) = id {
            let tree = runtime
                .observe_semantic(&scope(Some(app), Some(id)))
                .await?
                .structured;
            if tree["accessibility"] == "atspi" {
                return Ok((id, tree));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Err(format!("the form {title:?} did not appear with an accessible tree within 30 s (is there a D-Bus session with the accessibility bus?)").into())
}

/// Every node of a tree, in order.
fn nodes(tree: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let mut stack = vec![tree.clone()];
    while let Some(node) = stack.pop() {
        if let Some(children) = node["children"].as_array() {
            stack.extend(children.iter().rev().cloned());
        }
        if !node.is_null() {
            out.push(node);
        }
    }
    out
}

/// zenity, ended however the example ends.
struct Reaped(std::process::Child);

impl Reaped {
    /// What it printed when it ended (OK pressed), waited for briefly.
    fn printed(&mut self) -> String {
        for _ in 0..50 {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let mut out = String::new();
        if let Some(stdout) = self.0.stdout.as_mut() {
            let _ = stdout.read_to_string(&mut out);
        }
        out
    }
}

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
