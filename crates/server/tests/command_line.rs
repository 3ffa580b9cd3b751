//! The `computer-use-server` command line: it says what desktop it drives,
//! lists every flag it parses, and cannot be asked to make a real desktop
//! lie.
#![allow(clippy::expect_used)]

use std::process::Command;

fn server(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_computer-use-server"))
        .args(args)
        .output()
        .expect("computer-use-server runs")
}

#[test]
fn help_names_the_desktops_and_every_flag_the_parser_takes() {
    let out = server(&["--help"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--desktop simulated",
        "--desktop x11",
        "--principal",
        "--confirm-tool",
        "--allow-destructive",
        "--credential-app",
        "--slow-ms",
        "--stats",
        "--fault",
        "lease.sessionId",
        "--listen",
        "--allow-remote",
        "--agent-credential-file",
        "--approver-credential-file",
        "adk_computer_use_testkit::spawn",
    ] {
        assert!(text.contains(needle), "--help mentions {needle}:\n{text}");
    }
    assert!(
        !text.contains("a simulated desktop served"),
        "--help does not claim every desktop is simulated:\n{text}"
    );
}

#[test]
fn a_fault_asked_of_the_real_desktop_is_refused_before_any_display_is_opened() {
    // No DISPLAY is needed: the refusal comes from reading the flags, and
    // the x11 desktop holds no faults to be given one anyway.
    let out = Command::new(env!("CARGO_BIN_EXE_computer-use-server"))
        .args(["--desktop", "x11", "--fault", "receipt.actionDigest"])
        .env_remove("DISPLAY")
        .output()
        .expect("computer-use-server runs");
    assert_eq!(out.status.code(), Some(2), "refused as bad usage");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("faults exist only in the simulated desktop"),
        "{text}"
    );
}

#[test]
fn an_unknown_desktop_or_fault_is_refused_with_what_was_expected() {
    let out = server(&["--desktop", "wayland-someday"]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("expected simulated, x11 or wayland"),
        "{text}"
    );

    let out = server(&["--fault", "no.such.fault"]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("lease.sessionId"),
        "names the faults it knows: {text}"
    );
}

/// The type behind the refusal above: faults reach a server through one
/// door, the constructor that takes a `SimulatedDesktop` by its type. Every
/// other door takes any desktop and injects nothing, even when handed a
/// simulated desktop with faults (boxed), or a wrapper around one; and the
/// desktop seam has no way to ask for faults at all.
#[test]
fn faults_reach_a_server_only_through_the_simulated_desktops_own_door() {
    use computer_use_server::{
        Config, DesktopBackend, Fault, SimulatedBackend, SimulatedDesktop, State,
    };
    let lying = || {
        SimulatedDesktop::default().with_faults(
            [Fault::ReceiptDigest, Fault::FailRelease]
                .into_iter()
                .collect(),
        )
    };
    let simulated = State::simulated(Config::default(), lying());
    assert!(simulated.faults().has(Fault::ReceiptDigest));
    assert!(simulated.faults().has(Fault::FailRelease));

    let boxed: Box<dyn DesktopBackend> = Box::new(SimulatedBackend::new(lying()));
    let through_the_seam = State::on(Config::default(), boxed);
    assert!(
        through_the_seam.faults().is_empty(),
        "a desktop behind the seam injects nothing, whatever it holds"
    );
    assert!(State::new(Config::default()).faults().is_empty());
}

/// A host that reads none of what the server prints (its output closed
/// before the server starts, so every line it writes fails) does not take
/// the server down: it keeps listening. Before, the first line printed
/// into the closed pipe ended the process, and a host that read only the
/// lines it needed raced the later ones.
#[test]
fn a_host_that_closes_the_servers_output_does_not_take_it_down() {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    let mut child = Command::new(env!("CARGO_BIN_EXE_computer-use-server"))
        .args(["--listen", "127.0.0.1:0", "--agent", "bob"])
        .stdout(writer)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("computer-use-server starts");
    std::thread::sleep(std::time::Duration::from_millis(700));
    let exited = child.try_wait().expect("the child can be asked");
    let _ = child.kill();
    let _ = child.wait();
    assert!(exited.is_none(), "the server exited: {exited:?}");
}
