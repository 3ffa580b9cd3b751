//! Attacks on typing into web page fields (Chromium, and Firefox for the
//! focus lie, on X11), written by a hostile review: a caller's value with a
//! Tab, a page that lies about its focus (a decoy naming the field its
//! `aria-activedescendant`), hands the focus on, redirects keys, swallows
//! select-all, a password field, a keyboard map changed between fields.
//! Each test starts its own browser on a page served here; the page posts
//! its fields' state on every `input` event to `/state`, so what really
//! landed in the page is known without the server's help.
//!
//! Not covered, because typed keys cannot rule them out (docs/desktops.md
//! says so): a cover the browser's hit test skips (`aria-hidden`,
//! `pointer-events: none`), a page that rewrites a value after the
//! read-back, and a page that sends keys to another field.
//!
//! It stays one file over 500 lines: the attacks share one harness (a page
//! server that records every input, a browser per test) and read as one
//! list of what was tried.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adk_computer_use::contracts::WindowId;
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use::{ChainOutcome, ExecutionMode};
use adk_computer_use_testkit::child::{Sim, host_approves, session_on};
use adk_computer_use_testkit::needs;
use serde_json::{Value, json};

mod x11_support;
use x11_support::*;

type Hook = Box<dyn Fn() + Send + 'static>;

struct Served {
    url: String,
    states: Arc<Mutex<Vec<String>>>,
}

impl Served {
    fn last(&self) -> String {
        std::thread::sleep(Duration::from_millis(1500));
        self.states
            .lock()
            .unwrap()
            .last()
            .cloned()
            .unwrap_or_default()
    }
}

fn serve(page: String, hook: Option<Hook>) -> Served {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let states = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&states);
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
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let path = request
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .to_owned();
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            if path.starts_with("/hook")
                && let Some(hook) = &hook
            {
                hook();
            }
            if request.starts_with("POST") {
                let body = String::from_utf8_lossy(&body).into_owned();
                eprintln!("page posted {path}?{body}");
                kept.lock().unwrap().push(body);
            }
            let answer: &str = if path == "/" { &page } else { "ok" };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    Served { url, states }
}

/// A page: `fields` (html), a script; posts its form's state on input.
fn page(title: &str, fields: &str, script: &str) -> String {
    let mut page = format!(
        "<!doctype html><html><head><title>{title}</title></head><body><h1>Form</h1>\
<form id=f method=post action=/submit>{fields}<p><button type=submit>Send order</button></p></form>\
<script>\
const f=document.getElementById('f');\
document.addEventListener('input',()=>{{fetch('/state',{{method:'POST',body:new URLSearchParams(new FormData(f)).toString()}});}},true);\
{script}</script><table>"
    );
    for row in 0..280 {
        page.push_str(&format!("<tr><td>Item {row}</td><td>Blue</td></tr>"));
    }
    page.push_str("</table></body></html>");
    page
}

/// Runs `action` (approved), retrying a `stale_target` refusal; the end.
async fn attempt(
    sim: &Sim,
    session: &adk_computer_use::chain::Session<adk_computer_use::mcp::ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> String {
    let mut last = String::new();
    for attempt in 0..5u64 {
        let ran = match session.run(action.clone()).await {
            Ok(ChainOutcome::Completed(done)) => Ok(done),
            Ok(ChainOutcome::NeedsApproval(pending)) => {
                host_approves(sim, pending).await.complete().await
            }
            Ok(ChainOutcome::Blocked(b)) => return format!("BLOCKED {}", b.blocker()),
            Err(err) => Err(err),
        };
        match ran {
            Ok(done) => {
                return format!(
                    "COMPLETED verified={} performed={} outcome={}",
                    done.outcome().is_verified(),
                    done.performed(),
                    done.outcome()
                );
            }
            Err(err) if err.refusal_code() == Some("stale_target") => {
                eprintln!("stale, again: {err}");
                last = format!("REFUSED stale_target {err}");
                tokio::time::sleep(Duration::from_millis(300 * (attempt + 1))).await;
            }
            Err(err) => return format!("ERR code={:?} {err}", err.refusal_code()),
        }
    }
    last
}

async fn fill(served: &Served, title: &str, fields: Value) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let _browser = chromium(&served.url, profile.path(), true);
    let sim = runtime().await;
    let (id, app, _tree) = accessible_window(&sim, &format!("{title} - Chromium"), 1500).await;
    wait_until_still(&sim, id).await;
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));
    let action = ProposedAction::new(
        "fill_form",
        json!({ "window_id": id, "fields": fields }),
        ExecutionMode::Foreground,
    );
    let outcome = attempt(&sim, &session, action).await;
    eprintln!("SERVER SAID: {outcome}");
    let state = served.last();
    eprintln!("PAGE HOLDS: {state}");
    session.shutdown().await;
    (outcome, state)
}

const TWO: &str = "<p><label for=name>Full name</label> <input id=name name=name></p>\
<p><label for=city>City</label> <input id=city name=city></p>";

/// A hostile caller: a Tab inside a value for one field moves the focus
/// and the rest is typed into the next field, which the action never named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_tab_in_a_typed_value_is_refused_and_writes_no_other_field() {
    let _display = DISPLAY_LOCK.lock().await;
    let served = serve(page("Tab form", TWO, ""), None);
    let (outcome, state) = fill(
        &served,
        "Tab form",
        json!([{ "role": "AXTextField", "label": "Full name", "value": "Ada\tEvil" }]),
    )
    .await;
    assert!(
        !state.contains("city=Evil"),
        "BROKE: the unnamed City field was written: server said {outcome}; page holds {state}"
    );
}

/// A hostile caller against a password field: a Tab before the secret
/// sends it into the next (clear text) field; the secret field is never
/// read back, so the server may claim Verified.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_secret_with_a_tab_never_reaches_another_field() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=pw>Password</label> <input type=password id=pw name=pw></p>\
<p><label for=note>Note</label> <input id=note name=note></p>";
    let served = serve(page("Pw form", fields, ""), None);
    let (outcome, state) = fill(
        &served,
        "Pw form",
        json!([{ "role": "AXSecureTextField", "label": "Password", "value": "\thunter2" }]),
    )
    .await;
    assert!(
        !(outcome.contains("verified=true") && state.contains("note=hunter2")),
        "BROKE: reported Verified while the secret went into Note: server said {outcome}; page holds {state}"
    );
}

/// A hostile page: the password field hands its keys to a clear text
/// field on the first key, where every later read would show the secret.
/// A page's password field is therefore never typed into.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_page_password_field_is_not_typed_into() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=pw>Password</label> <input type=password id=pw name=pw></p>\
<p><label for=note>Note</label> <input id=note name=note></p>";
    let script = "document.getElementById('pw').addEventListener('keydown',e=>{if(e.key.length===1&&!e.ctrlKey)document.getElementById('note').focus();});";
    let served = serve(page("Pw2 form", fields, script), None);
    let (outcome, state) = fill(
        &served,
        "Pw2 form",
        json!([{ "role": "AXSecureTextField", "label": "Password", "value": "hunter2" }]),
    )
    .await;
    // Refused before any key: the secret reaches no field at all.
    assert!(
        outcome.contains("element_not_editable") && !state.contains("hunter2"),
        "BROKE: a page's password field was typed into: server said {outcome}; page holds {state}"
    );
}

/// A hostile page: the named field's keys go to another field on the
/// first key (keydown moves the focus). Keys typed cannot stop a page from
/// sending them elsewhere (said in docs/desktops.md); what the server
/// reports must not be Verified and must not be "not performed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn keys_a_page_redirects_are_never_reported_verified_or_not_performed() {
    let _display = DISPLAY_LOCK.lock().await;
    let script = "document.getElementById('name').addEventListener('keydown',e=>{if(e.key.length===1&&!e.ctrlKey)document.getElementById('city').focus();});";
    let served = serve(page("Redirect form", TWO, script), None);
    let (outcome, state) = fill(
        &served,
        "Redirect form",
        json!([{ "role": "AXTextField", "label": "Full name", "value": "Ada" }]),
    )
    .await;
    // An unknown outcome (an error with no refusal code) is the honest
    // answer; a refusal would say nothing was done.
    let refused = outcome.starts_with("REFUSED") || outcome.starts_with("ERR code=Some");
    assert!(
        !outcome.contains("verified=true") && !refused,
        "server said {outcome}; page holds {state}"
    );
}

/// A hostile page lies about focus: the named field hands the focus to a
/// decoy that names the field as its aria-activedescendant, so Chromium
/// may report the named field `focused` while the keys go to the decoy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_named_active_descendant_by_a_decoy_gets_no_keys_in_chromium() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=name>Full name</label> <input id=name name=name></p>\
<p><label for=decoy>Search</label> <input id=decoy name=decoy role=combobox aria-expanded=true aria-activedescendant=name></p>";
    let script = "document.getElementById('name').addEventListener('focus',()=>document.getElementById('decoy').focus());\
document.getElementById('decoy').addEventListener('input',e=>{document.getElementById('name').value=e.target.value;});";
    let served = serve(page("Lie form", fields, script), None);
    let (outcome, state) = fill(
        &served,
        "Lie form",
        json!([{ "role": "AXTextField", "label": "Full name", "value": "Ada" }]),
    )
    .await;
    assert!(
        !state.contains("decoy=Ada"),
        "BROKE (focus check spoofed; keys went to decoy): server said {outcome}; page holds {state}"
    );
}

/// A hostile runtime/application changes the keyboard map after the first
/// field was typed (here: when the page sees the first input), so the
/// second field's character has no key: the loop's per-field `typed`
/// check then refuses as NothingSent although field one was typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_form_half_typed_when_the_keyboard_map_changes_is_not_reported_refused() {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::ConnectionExt as _;
    use x11rb::wrapper::ConnectionExt as _;
    let _display = DISPLAY_LOCK.lock().await;
    let (conn, _) = x11rb::connect(None).unwrap();
    let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .unwrap()
        .reply()
        .unwrap();
    let per = usize::from(map.keysyms_per_keycode);
    let index = map
        .keysyms
        .chunks(per)
        .position(|syms| syms.iter().take(2).any(|s| *s == 0x5a))
        .expect("Z on the map");
    let code = min + u8::try_from(index).unwrap();
    let original: Vec<u32> = map.keysyms[index * per..(index + 1) * per].to_vec();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&done);
    let per8 = map.keysyms_per_keycode;
    let hook: Hook = Box::new(move || {
        if flag.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let (c, _) = x11rb::connect(None).unwrap();
        let zeros = vec![0u32; usize::from(per8)];
        c.change_keyboard_mapping(1, code, per8, &zeros).unwrap();
        c.flush().unwrap();
        c.sync().unwrap();
        eprintln!("hook: Z removed from the keyboard map");
    });
    let script = "let once=false;document.getElementById('name').addEventListener('input',()=>{if(!once){once=true;fetch('/hook');}});";
    let served = serve(page("Keymap form", TWO, script), Some(hook));
    let result = fill(
        &served,
        "Keymap form",
        json!([
            { "role": "AXTextField", "label": "Full name", "value": "Ada" },
            { "role": "AXTextField", "label": "City", "value": "Zed" },
        ]),
    )
    .await;
    conn.change_keyboard_mapping(1, code, per8, &original)
        .unwrap();
    conn.sync().unwrap();
    let (outcome, state) = result;
    // An unknown outcome (no refusal code: the field was typed) is the
    // honest answer; a refusal would say nothing was done.
    let refused = outcome.starts_with("REFUSED") || outcome.starts_with("ERR code=Some");
    assert!(
        !(refused && state.contains("name=Ada")),
        "BROKE: reported refused (not performed) while field one was typed: server said {outcome}; page holds {state}"
    );
}

/// Control for the focus lie: the same page without aria-activedescendant
/// (the named field hands the focus on at once): the focus check should
/// refuse, nothing typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_that_hands_the_focus_on_gets_no_keys() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=name>Full name</label> <input id=name name=name></p>\
<p><label for=decoy>Search</label> <input id=decoy name=decoy></p>";
    let script = "document.getElementById('name').addEventListener('focus',()=>document.getElementById('decoy').focus());";
    let served = serve(page("Ctl form", fields, script), None);
    let (outcome, state) = fill(
        &served,
        "Ctl form",
        json!([{ "role": "AXTextField", "label": "Full name", "value": "Ada" }]),
    )
    .await;
    assert!(
        !state.contains("decoy=A"),
        "keys went to decoy: server said {outcome}; page holds {state}"
    );
}

/// Field two refuses the focus after field one was typed: must be
/// indeterminate, never "not performed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_second_field_refusing_the_focus_leaves_the_outcome_unknown() {
    let _display = DISPLAY_LOCK.lock().await;
    let script = "document.getElementById('city').addEventListener('focus',e=>e.target.blur());";
    let served = serve(page("Second form", TWO, script), None);
    let (outcome, state) = fill(
        &served,
        "Second form",
        json!([
            { "role": "AXTextField", "label": "Full name", "value": "Ada" },
            { "role": "AXTextField", "label": "City", "value": "London" },
        ]),
    )
    .await;
    assert!(
        !((outcome.starts_with("ERR code=Some") || outcome.starts_with("REFUSED"))
            && state.contains("name=Ada")),
        "BROKE: server said {outcome}; page holds {state}"
    );
}

/// ctrl+a swallowed by the page on a prefilled field: the text is
/// appended, not replacing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_page_that_swallows_select_all_is_not_reported_verified() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=name>Full name</label> <input id=name name=name value=Old></p>\
<p><label for=city>City</label> <input id=city name=city></p>";
    let script = "document.addEventListener('keydown',e=>{if(e.ctrlKey&&e.key==='a'){e.preventDefault();}},true);";
    let served = serve(page("Sel form", fields, script), None);
    let (outcome, state) = fill(
        &served,
        "Sel form",
        json!([{ "role": "AXTextField", "label": "Full name", "value": "Ada" }]),
    )
    .await;
    assert!(
        !outcome.contains("verified=true"),
        "server said {outcome}; page holds {state}"
    );
}

/// The focus lie with no mirroring script: what the server reports when
/// the keys went to the decoy and the named field stays empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_decoy_without_a_mirror_gets_no_keys_in_chromium() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=name>Full name</label> <input id=name name=name></p>\
<p><label for=decoy>Search</label> <input id=decoy name=decoy role=combobox aria-expanded=true aria-activedescendant=name></p>";
    let script = "document.getElementById('name').addEventListener('focus',()=>document.getElementById('decoy').focus());";
    let served = serve(page("Lie2 form", fields, script), None);
    let (outcome, state) = fill(
        &served,
        "Lie2 form",
        json!([{ "role": "AXTextField", "label": "Full name", "value": "Ada" }]),
    )
    .await;
    assert!(
        !state.contains("decoy=Ada"),
        "BROKE (focus check spoofed; keys went to decoy): server said {outcome}; page holds {state}"
    );
}

/// A hostile page marks a one-line <input> aria-multiline: the line-break
/// refusal trusts the page's `multi_line` state, so a value with a line
/// break is typed, and Enter in an <input> sends the form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_one_line_field_claiming_many_lines_takes_no_line_break() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=name>Full name</label> <input id=name name=name aria-multiline=true></p>\
<p><label for=city>City</label> <input id=city name=city></p>";
    let served = serve(page("Ml form", fields, ""), None);
    let mut outcome = String::new();
    let mut state = String::new();
    for role in ["AXTextField", "AXTextArea"] {
        let served2 = Served {
            url: served.url.clone(),
            states: Arc::clone(&served.states),
        };
        let (o, s) = fill(
            &served2,
            "Ml form",
            json!([{ "role": role, "label": "Full name", "value": "Ada\nLovelace" }]),
        )
        .await;
        outcome = o;
        state = s;
        if !outcome.contains("no ") || outcome.contains("verified") {
            break;
        }
    }
    let all = served.states.lock().unwrap().clone();
    eprintln!("ALL POSTS: {all:?}");
    assert!(
        !all.iter().any(|b| b.starts_with("name=Ada&")),
        "BROKE: the form was sent by a typed line break: server said {outcome}; page holds {state}"
    );
}

/// The focus lie in Firefox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_named_active_descendant_by_a_decoy_gets_no_keys_in_firefox() {
    let _display = DISPLAY_LOCK.lock().await;
    let fields = "<p><label for=name>Full name</label> <input id=name name=name></p>\
<p><label for=decoy>Search</label> <input id=decoy name=decoy role=combobox aria-expanded=true aria-activedescendant=name></p>";
    let script = "document.getElementById('name').addEventListener('focus',()=>document.getElementById('decoy').focus());";
    let served = serve(page("Lie3 form", fields, script), None);
    let profile = tempfile::tempdir().unwrap();
    let _browser = firefox(&served.url, profile.path());
    let sim = runtime().await;
    let (id, app, _tree) = accessible_window(&sim, "Lie3 form \u{2014} Mozilla Firefox", 800).await;
    wait_until_still(&sim, id).await;
    let session = session_on(&sim.runtime, "browser", &app, Some(WindowId::Number(id)));
    let action = ProposedAction::new(
        "fill_form",
        json!({ "window_id": id, "fields": [{ "role": "AXTextField", "label": "Full name", "value": "Ada" }] }),
        ExecutionMode::Foreground,
    );
    let outcome = attempt(&sim, &session, action).await;
    eprintln!("SERVER SAID: {outcome}");
    let state = served.last();
    eprintln!("PAGE HOLDS: {state}");
    session.shutdown().await;
    assert!(
        !state.contains("decoy=Ada"),
        "BROKE (focus check spoofed; keys went to decoy): server said {outcome}; page holds {state}"
    );
}
