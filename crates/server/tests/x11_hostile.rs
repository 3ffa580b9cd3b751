//! The X11 desktop against a hostile program on the same display: another
//! client that grabs the keyboard, reaches into the target with a window of
//! its own, holds a modifier, parks the target off the screen, floods the
//! window list, grows a huge window tree, or takes the clipboard to answer
//! each reader differently. Each attack is made with a real X client of its
//! own (x11rb, another connection; for the clipboard, another process) and
//! checked from outside: what the attacker's windows received, what the
//! terminal's file holds.
//!
//! Needs an X server (`$DISPLAY`); built without one, each test is reported
//! as ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use adk_computer_use::contracts::*;
use computer_use_server::desktop::x11::X11Desktop;
use computer_use_server::{self as sim, DesktopBackend};
use serde_json::{Value, json};
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::*;
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

mod x11_support;

use adk_computer_use_testkit::child::run_approving;
use x11_support::*;

/// The attacker: an X client on a connection of its own.
struct Hostile {
    conn: Arc<RustConnection>,
    root: Window,
}

/// What the attacker's windows received.
struct Received {
    keys: Arc<AtomicUsize>,
    buttons: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Drop for Received {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

impl Hostile {
    fn new() -> Self {
        let (conn, screen) = x11rb::connect(None).unwrap();
        let root = conn.setup().roots[screen].root;
        Self {
            conn: Arc::new(conn),
            root,
        }
    }

    fn atom(&self, name: &str) -> Atom {
        self.conn
            .intern_atom(false, name.as_bytes())
            .unwrap()
            .reply()
            .unwrap()
            .atom
    }

    /// A mapped window of the attacker's, listening for keys and buttons.
    fn window(
        &self,
        parent: Window,
        class: Option<&str>,
        at: (i16, i16),
        size: (u16, u16),
        input_only: bool,
    ) -> Window {
        let id = self.conn.generate_id().unwrap();
        let mut aux = CreateWindowAux::new()
            .event_mask(EventMask::KEY_PRESS | EventMask::BUTTON_PRESS)
            .override_redirect(1);
        if !input_only {
            aux = aux.background_pixel(0x00ff00);
        }
        let class_kind = if input_only {
            WindowClass::INPUT_ONLY
        } else {
            WindowClass::INPUT_OUTPUT
        };
        self.conn
            .create_window(
                0, id, parent, at.0, at.1, size.0, size.1, 0, class_kind, 0, &aux,
            )
            .unwrap();
        if let Some(class) = class {
            let value = format!("{}\0{class}\0", class.to_lowercase());
            self.conn
                .change_property8(
                    PropMode::REPLACE,
                    id,
                    AtomEnum::WM_CLASS,
                    AtomEnum::STRING,
                    value.as_bytes(),
                )
                .unwrap();
        }
        self.conn.map_window(id).unwrap();
        self.conn.sync().unwrap();
        id
    }

    /// Counts the key and button presses the attacker's windows receive.
    fn listen(&self) -> Received {
        let received = Received {
            keys: Arc::new(AtomicUsize::new(0)),
            buttons: Arc::new(AtomicUsize::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (keys, buttons, stop, conn) = (
            received.keys.clone(),
            received.buttons.clone(),
            received.stop.clone(),
            self.conn.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match conn.poll_for_event() {
                    Ok(Some(Event::KeyPress(_))) => {
                        keys.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(Some(Event::ButtonPress(_))) => {
                        buttons.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                    Err(_) => break,
                }
            }
        });
        received
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn another_clients_keyboard_grab_refuses_typing_and_gets_nothing() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    window_of(&runtime, "XTerm").await;
    let hostile = Hostile::new();
    let spy = hostile.window(hostile.root, Some("Spy"), (1200, 700), (10, 10), false);
    let grab = hostile
        .conn
        .grab_keyboard(
            false,
            spy,
            x11rb::CURRENT_TIME,
            GrabMode::ASYNC,
            GrabMode::ASYNC,
        )
        .unwrap()
        .reply()
        .unwrap();
    assert_eq!(grab.status, GrabStatus::SUCCESS);
    let received = hostile.listen();
    window_of(&runtime, "XTerm").await;
    let session =
        adk_computer_use_testkit::child::session_on(&runtime, "x11-hostile", "XTerm", None);
    let err = refused_after(&runtime, &session, &typing("hunter2\n"), |_| {}).await;
    assert_refused(&err, "stale_target");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        received.keys.load(Ordering::SeqCst),
        0,
        "the grabber got keys"
    );
    assert_eq!(std::fs::read_to_string(&terminal.file).unwrap(), "");
    // The grab released, the same action id is not reused: a new one runs.
    hostile.conn.ungrab_keyboard(x11rb::CURRENT_TIME).unwrap();
    hostile.conn.sync().unwrap();
    window_of(&runtime, "XTerm").await;
    assert!(
        run_approving(&runtime, &session, typing("after\n"))
            .await
            .performed()
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&terminal.file).unwrap(), "after\n");
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn another_clients_window_inside_the_target_refuses_clicks_and_keys() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    let target = window_of(&runtime, "XTerm").await;
    let id = target["windowId"].as_u64().unwrap();
    let bounds = &target["bounds"];
    let (x, y) = (bounds["x"].as_i64().unwrap(), bounds["y"].as_i64().unwrap());
    let (w, h) = (
        bounds["width"].as_i64().unwrap(),
        bounds["height"].as_i64().unwrap(),
    );
    // An input-only child of the attacker's, the size of the terminal: the
    // pixels do not change, the window tree does.
    let hostile = Hostile::new();
    hostile.window(id as u32, None, (0, 0), (w as u16, h as u16), true);
    let received = hostile.listen();
    window_of(&runtime, "XTerm").await;
    let session = adk_computer_use_testkit::child::session_on(
        &runtime,
        "x11-hostile",
        "XTerm",
        Some(WindowId::Number(id)),
    );
    let (cx, cy) = (x + w / 2, y + h / 2);
    let err = session
        .run(click(cx, cy))
        .await
        .err()
        .expect("the click must be refused");
    assert_refused(&err, "stale_target");
    // The pointer rests over the terminal: keys would go to the child.
    let out = Command::new("xdotool")
        .args(["mousemove", "--sync", &cx.to_string(), &cy.to_string()])
        .status()
        .unwrap();
    assert!(out.success());
    window_of(&runtime, "XTerm").await;
    let err = refused_after(&runtime, &session, &typing("secret\n"), |_| {}).await;
    assert_refused(&err, "stale_target");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(received.buttons.load(Ordering::SeqCst), 0);
    assert_eq!(received.keys.load(Ordering::SeqCst), 0);
    assert_eq!(std::fs::read_to_string(&terminal.file).unwrap(), "");
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_held_modifier_or_lock_refuses_typing() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    window_of(&runtime, "XTerm").await;
    let session =
        adk_computer_use_testkit::child::session_on(&runtime, "x11-hostile", "XTerm", None);
    let hostile = Hostile::new();
    // The attacker holds Control down (through XTEST, as a keyboard would).
    let control = {
        let setup = hostile.conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let map = hostile
            .conn
            .get_keyboard_mapping(min, max - min + 1)
            .unwrap()
            .reply()
            .unwrap();
        let per = usize::from(map.keysyms_per_keycode);
        let index = map
            .keysyms
            .iter()
            .position(|sym| *sym == 0xffe3)
            .expect("the keyboard has Control_L");
        min + (index / per) as u8
    };
    hostile
        .conn
        .xtest_fake_input(
            KEY_PRESS_EVENT,
            control,
            x11rb::CURRENT_TIME,
            hostile.root,
            0,
            0,
            0,
        )
        .unwrap();
    hostile.conn.sync().unwrap();
    let err = refused_after(&runtime, &session, &typing("ab\n"), |_| {}).await;
    hostile
        .conn
        .xtest_fake_input(
            KEY_RELEASE_EVENT,
            control,
            x11rb::CURRENT_TIME,
            hostile.root,
            0,
            0,
            0,
        )
        .unwrap();
    hostile.conn.sync().unwrap();
    assert_refused(&err, "stale_target");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read(&terminal.file).unwrap(), b"");
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_target_off_the_screen_refuses_a_click_that_would_land_elsewhere() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let runtime = runtime().await;
    let hostile = Hostile::new();
    hostile.window(
        hostile.root,
        Some("OffTarget"),
        (1300, 100),
        (200, 100),
        false,
    );
    let victim = Hostile::new();
    victim.window(victim.root, Some("Victim"), (1180, 50), (100, 300), false);
    let received = victim.listen();
    let target = window_of(&runtime, "OffTarget").await;
    assert_eq!(target["isOnScreen"], false, "{target}");
    let session =
        adk_computer_use_testkit::child::session_on(&runtime, "x11-hostile", "OffTarget", None);
    let err = session
        .run(click(1350, 150))
        .await
        .err()
        .expect("a click off the screen must be refused");
    assert_refused(&err, "invalid_arguments");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        received.buttons.load(Ordering::SeqCst),
        0,
        "the click landed on the victim"
    );
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn the_window_list_and_tree_are_the_servers_and_bounded() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    let real = window_of(&runtime, "XTerm").await;
    let desktop = X11Desktop::connect().unwrap();
    let hostile = Hostile::new();
    // A window with a 256 KiB title, listed 4096 times in a client list
    // that leaves the real terminal out.
    let fat = hostile.window(hostile.root, Some("Fat"), (0, 0), (10, 10), false);
    let name = hostile.atom("_NET_WM_NAME");
    let utf8 = hostile.atom("UTF8_STRING");
    hostile
        .conn
        .change_property8(PropMode::REPLACE, fat, name, utf8, &vec![b'A'; 256 * 1024])
        .unwrap();
    let list = hostile.atom("_NET_CLIENT_LIST");
    hostile
        .conn
        .change_property32(
            PropMode::REPLACE,
            hostile.root,
            list,
            AtomEnum::WINDOW,
            &vec![fat; 4096],
        )
        .unwrap();
    hostile.conn.sync().unwrap();
    let listed = desktop.list_windows().unwrap();
    let windows = listed["windows"].as_array().unwrap();
    let ids: Vec<&Value> = windows.iter().map(|w| &w["windowId"]).collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "a window is listed twice");
    assert!(
        ids.contains(&&real["windowId"]),
        "the real terminal is hidden"
    );
    let fat_record = windows.iter().find(|w| w["bundleId"] == "Fat").unwrap();
    assert!(fat_record["title"].as_str().unwrap().len() <= 1024);
    // 5000 children inside the terminal: the tree stops at its bound.
    let id = real["windowId"].as_u64().unwrap() as u32;
    for i in 0..5000u32 {
        let child = hostile.conn.generate_id().unwrap();
        hostile
            .conn
            .create_window(
                0,
                child,
                id,
                (i % 50) as i16,
                (i / 50) as i16,
                1,
                1,
                0,
                WindowClass::INPUT_ONLY,
                0,
                &CreateWindowAux::new(),
            )
            .unwrap();
    }
    hostile.conn.sync().unwrap();
    let tree = desktop
        .ui_tree(Some("XTerm"), Some(u64::from(id)), None)
        .unwrap();
    assert!(tree["nodes"].as_array().unwrap().len() <= 256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn the_read_back_counts_only_while_this_process_owns_the_clipboard() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let desktop = X11Desktop::connect().unwrap();
    let ours = json!({ "text": "ours" });
    desktop.apply("write_clipboard", &ours, None).unwrap();
    assert!(
        desktop
            .verify("write_clipboard", &ours, None, None)
            .verified
    );
    // Another process takes the selection (xclip serves it until it loses
    // it). An owner may answer each reader differently, so a read-back that
    // matches proves nothing while someone else owns the selection.
    // In the foreground (`-quiet`), so it is ended with the test.
    let mut xclip = Command::new("xclip")
        .args(["-quiet", "-selection", "clipboard", "-i"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut input = xclip.stdin.take().unwrap();
        input.write_all(b"theirs").unwrap();
    }
    let _xclip = Program(xclip);
    let mut read = String::new();
    for _ in 0..50 {
        let out = Command::new("xclip")
            .args(["-o", "-selection", "clipboard"])
            .output()
            .unwrap();
        read = String::from_utf8_lossy(&out.stdout).into_owned();
        if read == "theirs" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(read, "theirs");
    let theirs = json!({ "text": "theirs" });
    assert_eq!(desktop.read_clipboard().unwrap(), "theirs");
    let check = desktop.verify("write_clipboard", &theirs, None, None);
    assert!(
        !check.verified,
        "another process owns the selection: the read-back must not verify"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn evidence_citing_another_windows_frame_does_not_vouch_for_the_target() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _terminal = terminal("60x8+420+60");
    let _dialog = start("xmessage", &["-geometry", "+40+560", "a still dialog"]);
    let runtime = runtime().await;
    let term = window_of(&runtime, "XTerm").await;
    let dialog = window_of(&runtime, "Xmessage").await;
    let desktop = X11Desktop::connect().unwrap();
    let term_id = term["windowId"].as_u64().unwrap();
    let evidence = |screenshot_hash: String| evidence_for("XTerm", term_id, screenshot_hash);
    let own = desktop.snapshot(term["windowId"].as_u64()).unwrap().digest;
    let other = desktop
        .snapshot(dialog["windowId"].as_u64())
        .unwrap()
        .digest;
    assert!(
        desktop.is_current(&evidence(own), sim::Revalidation::BeforeEffect),
        "the terminal's own frame vouches for it"
    );
    assert!(
        !desktop.is_current(&evidence(other), sim::Revalidation::BeforeEffect),
        "a frame of another window must not vouch for the terminal"
    );
}

/// A clipboard write is judged on the clipboard only for the clipboard
/// check the server announces: a postcondition naming an element (or a
/// window) with the written text's digest is not counted as holding
/// because the clipboard does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn only_the_announced_clipboard_check_is_judged_on_the_clipboard() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let desktop = X11Desktop::connect().unwrap();
    let text = "judged on the clipboard";
    let args = json!({ "text": text });
    desktop.apply("write_clipboard", &args, None).unwrap();
    let element = |role: &str, label: &str| {
        json!({ "kind": "ui_element", "role": role, "label": label, "exists": true,
                "valueDigest": adk_computer_use::digest::sha256_prefixed(text) })
    };
    let announced = element(
        computer_use_server::CLIPBOARD_ROLE,
        computer_use_server::CLIPBOARD_LABEL,
    );
    let check = desktop.verify("write_clipboard", &args, Some(&announced), None);
    assert!(check.verified, "{check:?}");
    assert_eq!(check.method, "x11_selection_readback");
    let other = element("AXTextField", "Password");
    let check = desktop.verify("write_clipboard", &args, Some(&other), None);
    assert!(!check.verified, "an element X11 cannot read: {check:?}");
    let window = json!({ "kind": "window", "windowId": 999_999_999u64, "exists": true });
    let check = desktop.verify("write_clipboard", &args, Some(&window), None);
    assert!(!check.verified, "a window that is not there: {check:?}");
}

/// "The window is gone" is judged by what the X server keeps, never by a
/// property any client may delete, and it must stay so. Another client
/// watches the terminal the governed typing goes to and, the moment the
/// server focuses it, either deletes its `WM_CLASS`, or unmaps it for a
/// moment and maps it again. The typing closes nothing and the terminal is
/// still on the screen (`xwininfo`, outside this crate, says so): a check
/// for "window W exists: false" is not verified either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_window_another_client_hides_or_strips_is_not_gone() {
    let _display = DISPLAY_LOCK.lock().await;
    type Attack = fn(&RustConnection, Window);
    let attacks: [(&str, Attack); 2] = [
        ("WM_CLASS deleted", |conn, window| {
            conn.delete_property(window, Atom::from(AtomEnum::WM_CLASS))
                .unwrap();
        }),
        ("unmapped for a moment", |conn, window| {
            conn.unmap_window(window).unwrap();
            conn.sync().unwrap();
            std::thread::sleep(Duration::from_millis(60));
            conn.map_window(window).unwrap();
        }),
    ];
    let runtime = runtime().await;
    for (how, attack) in attacks {
        let terminal = terminal("60x8+420+60");
        let id = window_of(&runtime, "XTerm").await["windowId"]
            .as_u64()
            .unwrap();
        let window = Window::try_from(id).unwrap();
        let hostile = Hostile::new();
        hostile
            .conn
            .change_window_attributes(
                window,
                &ChangeWindowAttributesAux::new().event_mask(EventMask::FOCUS_CHANGE),
            )
            .unwrap();
        hostile.conn.sync().unwrap();
        let attacked = Arc::new(AtomicBool::new(false));
        let (conn, done) = (hostile.conn.clone(), attacked.clone());
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while std::time::Instant::now() < deadline {
                match conn.poll_for_event() {
                    Ok(Some(Event::FocusIn(focus))) if focus.event == window => {
                        attack(&conn, window);
                        conn.sync().unwrap();
                        done.store(true, Ordering::SeqCst);
                        return;
                    }
                    Ok(Some(_)) => {}
                    Ok(None) => std::thread::sleep(Duration::from_millis(1)),
                    Err(_) => return,
                }
            }
        });
        let session = adk_computer_use_testkit::child::session_on(
            &runtime,
            "x11-hostile",
            "XTerm",
            Some(WindowId::Number(id)),
        );
        let gone = ActionPostcondition::try_from(PostconditionFields::Window {
            window_id: id,
            exists: false,
        })
        .unwrap();
        let action = typing("still here\n").with_postcondition(gone);
        let approved = adk_computer_use_testkit::child::approved(&runtime, &session, &action).await;
        let leased = approved.reserve().await.unwrap().lease().await.unwrap();
        // The server's check finds the window still shown: it answers that
        // the check failed (`indeterminate`), or the chain judges it
        // unverified.
        match leased.execute().await {
            Ok(executed) => {
                let done = executed.verify().await.unwrap();
                assert!(
                    !done.outcome().is_verified(),
                    "{how}: verified gone: {}",
                    done.outcome()
                );
            }
            Err(err) => assert!(
                matches!(
                    err,
                    adk_computer_use::ComputerUseError::OutcomeUnknown { .. }
                ) && err
                    .to_string()
                    .contains("postcondition verification failed"),
                "{how}: {err}"
            ),
        }
        assert!(
            attacked.load(Ordering::SeqCst),
            "{how}: the attack was made"
        );
        let shown = tool("xwininfo", &["-id", &id.to_string()]);
        assert!(shown.contains("IsViewable"), "{how}: {shown}");
        assert_eq!(settled(&terminal.file, "still here\n"), "still here\n");
        session.shutdown().await;
    }
}

/// Check and send are one step. The desktop's send, which runs inside the
/// server grab, checks every field the evidence states again (identity,
/// title, bounds, geometry tree, pixels), as completely as the engine's
/// check just before it. Another client's change in the gap between the
/// two (a move, a new title, a repaint, each made by `xdotool` after the
/// evidence was checked current) refuses the input, and the terminal's
/// file shows nothing typed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn the_check_inside_the_grab_is_as_complete_as_the_check_before() {
    let _display = DISPLAY_LOCK.lock().await;
    let runtime = runtime().await;
    let desktop = X11Desktop::connect_unwatched().unwrap();
    type Change = fn(u64);
    let changes: [(&str, Change); 3] = [
        ("moved", |id| {
            tool(
                "xdotool",
                &["windowmove", "--sync", &id.to_string(), "700", "400"],
            );
        }),
        ("retitled", |id| {
            tool(
                "xdotool",
                &["set_window", "--name", "another title", &id.to_string()],
            );
        }),
        ("repainted", |id| {
            tool("xdotool", &["windowfocus", "--sync", &id.to_string()]);
            tool("xdotool", &["key", "Return"]);
            std::thread::sleep(Duration::from_millis(300));
        }),
    ];
    for (how, change) in changes {
        let terminal = terminal("60x8+420+60");
        let record = window_of(&runtime, "XTerm").await;
        let id = record["windowId"].as_u64().unwrap();
        let evidence = TargetEvidence {
            pid: record["pid"].as_u64().and_then(|p| u32::try_from(p).ok()),
            window_title_digest: Some(adk_computer_use::digest::sha256_hex(
                record["title"].as_str().unwrap(),
            )),
            bounds: Some(serde_json::from_value(record["bounds"].clone()).unwrap()),
            ..evidence_for("XTerm", id, desktop.snapshot(Some(id)).unwrap().digest)
        };
        assert!(
            desktop.is_current(&evidence, sim::Revalidation::BeforeEffect),
            "{how}: current before the change"
        );
        change(id);
        match desktop.apply("type", &json!({ "text": "never\n" }), Some(&evidence)) {
            Err(sim::ApplyError::NothingSent(refusal)) => {
                assert_eq!(refusal.code, "stale_target", "{how}: {}", refusal.message);
            }
            Err(sim::ApplyError::Failed(refusal)) => {
                panic!(
                    "{how}: refused as failed, not as nothing sent: {}",
                    refusal.message
                )
            }
            Ok(sent) => panic!("{how}: the input was sent into a changed window: {sent}"),
        }
        std::thread::sleep(Duration::from_millis(300));
        let content = std::fs::read_to_string(&terminal.file).unwrap();
        assert!(!content.contains("never"), "{how}: typed: {content:?}");
    }
}
