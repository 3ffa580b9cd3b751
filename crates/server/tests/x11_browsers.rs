//! Browsers driven by element only: a page with a form, its elements named
//! as a person reads them, ticked and sent through the governed chain in
//! the background, in Firefox and in Chromium. No pixel is clicked and no
//! key is sent. The effect is checked outside this crate: what the page
//! sends reaches an HTTP server this test runs.
//!
//! Buttons a person does not see (covered by another element, one pixel
//! square) read `showing` in both browsers; pressing them is refused
//! before anything is sent, and nothing reaches the HTTP server.
//!
//! Neither browser writes a page's text field through the bus (Chromium
//! offers no EditableText there; Firefox accepts the call and writes
//! nothing): writing one is refused before anything is written, and the
//! posted form shows the field empty.
//!
//! Chromium exposes its pages on the accessibility bus only when it is told
//! an assistive technology is present; on Debian 12's Chromium that is its
//! `--force-renderer-accessibility` switch (the bus's `IsEnabled` and
//! `ScreenReaderEnabled`, `ACCESSIBILITY_ENABLED=1` and a registered event
//! listener each left the page out, measured; the server sets `IsEnabled`
//! when it connects, without which neither browser registers on the bus
//! at all). A Chromium window whose page
//! is not exposed is refused as `accessibility_off`, naming the switch
//! (the second test).
//!
//! These tests need an X server, the session's accessibility bus, Firefox
//! and Chromium (`.ci/run` installs them); built without a display or bus they
//! are reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use adk_computer_use::contracts::WindowId;
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use::{ChainOutcome, ExecutionMode};
use adk_computer_use_testkit::child::{Sim, host_approves, session_on};
use serde_json::{Value, json};

mod x11_support;

use x11_support::*;

/// The order form, above a table of 280 rows of three cells: a page of
/// some 2,000 nodes in Chromium (about 2,200 counted), so an element is
/// resolved in a tree of a real page's size. The form is on screen: an
/// element below the fold is not `showing` and is refused as not shown.
/// A second form's button "Send", placed off the page, is a decoy a person
/// never sees: pressing "Send" must press the one on screen. A third
/// form's buttons read `showing` but are not seen: "Pay now" under a
/// notice drawn over it, "Pay later" one pixel square; pressing either
/// would post to `/unseen`.
fn form_page() -> String {
    let mut page = String::from(
        "<!doctype html><html><head><title>Order form</title></head><body><h1>Order</h1>\
<form method=\"post\" action=\"/submit\">\
<p><label for=\"name\">Full name</label> <input id=\"name\" name=\"name\"></p>\
<p><label for=\"city\">City</label> <input id=\"city\" name=\"city\"></p>\
<p><label><input type=\"checkbox\" name=\"gift\" value=\"yes\"> Gift wrap</label></p>\
<p><button type=\"submit\">Send order</button></p>\
</form>\
<form method=\"post\" action=\"/decoy\"><button style=\"position:absolute;left:-9999px\" name=\"decoy\" value=\"1\">Send</button></form>\
<form method=\"post\" action=\"/unseen\"><div style=\"position:relative;height:30px\">\
<button name=\"covered\" value=\"1\">Pay now</button>\
<div style=\"position:absolute;left:0;top:0;width:300px;height:30px;background:white\">Notice</div></div>\
<p><button name=\"tiny\" value=\"1\" style=\"width:1px;height:1px;padding:0;border:0;overflow:hidden\">Pay later</button></p></form>\
<table>",
    );
    for row in 0..280 {
        page.push_str(&format!(
            "<tr><td>Item {row}</td><td>Blue</td><td>{}.00</td></tr>",
            row % 97
        ));
    }
    page.push_str("</table></body></html>");
    page
}

/// A one-page HTTP server on a free local port: it serves the form and
/// hands every form posted to it (`path?body`) to the returned channel.
fn form_server() -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}/", listener.local_addr().unwrap());
    let (posted, bodies) = mpsc::channel();
    let form = form_page();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let page: &str = if request.starts_with("POST") {
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let path = request.split_whitespace().nth(1).unwrap_or_default();
                let _ = posted.send(format!("{path}?{}", String::from_utf8_lossy(&body)));
                "<!doctype html><title>Thank you</title><p>Order received</p>"
            } else {
                &form
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    (address, bodies)
}

/// Chromium on `url` in a fresh profile; with `accessible`, told an
/// assistive technology is present.
fn chromium(url: &str, profile: &std::path::Path, accessible: bool) -> Program {
    let mut command = Command::new("chromium");
    command.args([
        "--no-sandbox",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-gpu",
        "--password-store=basic",
        "--window-position=0,0",
        "--window-size=900,700",
    ]);
    command.arg(format!("--user-data-dir={}", profile.display()));
    if accessible {
        command.arg("--force-renderer-accessibility");
    }
    command
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    Program(command.spawn().expect("chromium could not be started"))
}

/// Firefox on `url` in a fresh profile of its own.
fn firefox(url: &str, profile: &std::path::Path) -> Program {
    Program(
        Command::new("firefox-esr")
            .args(["--no-remote", "--new-instance", "--profile"])
            .arg(profile)
            .arg(url)
            .env_remove("MOZ_HEADLESS")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("firefox-esr could not be started"),
    )
}

/// The first body the page posts, within 30 s.
fn posted(bodies: &mpsc::Receiver<String>) -> String {
    bodies
        .recv_timeout(Duration::from_secs(30))
        .expect("the page posted nothing to the test's HTTP server")
}

fn background(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Background)
}

/// The refusal `action` ends in, approved by the host when the policy
/// asks first.
async fn refusal_of(
    sim: &Sim,
    session: &adk_computer_use::Session<adk_computer_use::mcp::ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> adk_computer_use::ComputerUseError {
    // A page still settling moves under the action (`stale_target`: refused
    // before anything was sent); a plan observes again and retries, as
    // here, and the refusal that counts is the one on a still page.
    let mut last = None;
    for _ in 0..5 {
        let ran = match session.run(action.clone()).await {
            Ok(ChainOutcome::NeedsApproval(pending)) => {
                host_approves(sim, pending).await.complete().await.map(drop)
            }
            Ok(ChainOutcome::Completed(done)) => panic!("the action ran: {}", done.outcome()),
            Ok(ChainOutcome::Blocked(blocked)) => panic!(
                "the action was blocked, not refused: {} {:?}",
                blocked.blocker(),
                blocked.reasons()
            ),
            Err(err) => Err(err),
        };
        let err = ran.expect_err("the action was not refused");
        if err.refusal_code() != Some("stale_target") {
            return err;
        }
        last = Some(err);
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    last.expect("five tries")
}

/// In the browser window titled `title`, once its tree has `nodes` nodes
/// or more (the whole page exposed): a page field's writing refused
/// before anything is written, the box ticked and the form sent, each by
/// element in the background; what the page posts is returned.
async fn tick_and_send(
    title: &str,
    toolkit: &str,
    nodes: u64,
    bodies: &mpsc::Receiver<String>,
) -> String {
    let sim = runtime().await;
    let (id, app, tree) = accessible_window(&sim, title, nodes).await;
    assert_eq!(tree["toolkit"], toolkit, "{}", tree["toolkit"]);
    // A browser fills its tree in after the page shows: a plan waits for
    // it to stay still before it acts, as it should.
    wait_until_still(&sim, id).await;
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));

    let write = background(
        "fill_form",
        json!({ "window_id": id, "fields": [
            { "role": "AXTextField", "label": "Full name", "value": "Ada Lovelace" },
        ] }),
    );
    let err = refusal_of(&sim, &session, write).await;
    assert_eq!(err.refusal_code(), Some("element_not_editable"), "{err}");
    assert!(err.to_string().contains("web page"), "{err}");

    // Buttons a person does not see are refused before anything is sent.
    for (label, cause) in [("Pay now", "covered"), ("Pay later", "too small")] {
        let press = background("press_button", json!({ "window_id": id, "label": label }));
        let err = refusal_of(&sim, &session, press).await;
        assert_eq!(err.refusal_code(), Some("element_not_actionable"), "{err}");
        assert!(err.to_string().contains(cause), "{label}: {err}");
    }

    let tick = background(
        "click_element",
        json!({ "window_id": id, "role": "AXCheckBox", "label": "Gift wrap" }),
    );
    assert!(run_as_a_plan_would(&sim, &session, tick).await.performed());
    // "Send" matches the decoy exactly, but the decoy is off the page; the
    // one button a person sees that matches is "Send order".
    let send = background("press_button", json!({ "window_id": id, "label": "Send" }));
    assert!(run_as_a_plan_would(&sim, &session, send).await.performed());
    session.shutdown().await;
    posted(bodies)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_firefox_form_is_ticked_and_sent_by_element_and_its_text_field_refused_unwritten() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = firefox(&url, profile.path());
    let body = tick_and_send(
        "Order form \u{2014} Mozilla Firefox",
        "gecko",
        1000,
        &bodies,
    )
    .await;
    // The box was ticked; the refused field holds nothing.
    assert_eq!(body, "/submit?name=&city=&gift=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_chromium_form_is_ticked_and_sent_by_element_and_its_text_field_refused_unwritten() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = chromium(&url, profile.path(), true);
    let body = tick_and_send("Order form - Chromium", "chromium", 2000, &bodies).await;
    assert_eq!(body, "/submit?name=&city=&gift=yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_chromium_page_the_browser_does_not_expose_is_refused_naming_the_switch() {
    let _display = DISPLAY_LOCK.lock().await;
    let (url, bodies) = form_server();
    let profile = tempfile::tempdir().unwrap();
    let _browser = chromium(&url, profile.path(), false);
    let sim = runtime().await;
    let (id, app, tree) = accessible_window(&sim, "Order form - Chromium", 1).await;
    assert_eq!(tree["toolkit"], "chromium", "{}", tree["toolkit"]);
    let note = tree["accessibilityNote"].as_str().unwrap_or_default();
    assert!(note.contains("--force-renderer-accessibility"), "{tree}");
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));
    let send = background(
        "press_button",
        json!({ "window_id": id, "label": "Send order" }),
    );
    let err = match session.run(send).await {
        Err(err) => err,
        Ok(_) => panic!("a page Chromium does not expose was acted on"),
    };
    assert_eq!(err.refusal_code(), Some("accessibility_off"), "{err}");
    assert!(
        err.to_string().contains("--force-renderer-accessibility"),
        "{err}"
    );
    session.shutdown().await;
    assert!(bodies.try_recv().is_err(), "nothing was sent");
}
