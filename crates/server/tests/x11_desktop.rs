//! The v8 rules on a real X11 display: what the X11 desktop observes, does
//! and refuses, each effect checked with a program outside this crate
//! (`xclip`, `xdotool`, `xdpyinfo`, the file `cat` writes).
//!
//! These tests need an X server (`$DISPLAY`) and those programs; `.ci/run`
//! starts Xvfb and installs them. Built without a display (`build.rs` looks
//! at `DISPLAY`), each test is reported as ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use_testkit::needs;
use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::{ChainOutcome, Session};
use adk_computer_use::contracts::*;
use adk_computer_use::digest::sha256_prefixed;
use adk_computer_use::mcp::ComputerUseMcpRuntime;
use adk_computer_use::runtime::{ComputerUseRuntime, ObservationScope, ProposedAction};
use base64::Engine as _;
use serde_json::{Value, json};

mod x11_support;

use adk_computer_use_testkit::child::{PRINCIPAL, approved, run_approving};
use x11_support::*;

fn session(runtime: &Arc<ComputerUseMcpRuntime>, app: &str) -> Session<ComputerUseMcpRuntime> {
    adk_computer_use_testkit::child::session_on(runtime, "x11-test", app, None)
}

/// A change made to a window, by its X id, from outside this crate.
type Change = fn(u64);

fn assert_stale(err: &ComputerUseError) {
    assert_refused(err, "stale_target");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_clipboard_write_lands_on_the_real_selection_and_is_verified_by_the_server() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _dialog = start("xmessage", &["-geometry", "+40+560", "clipboard target"]);
    let runtime = runtime().await;
    window_of(&runtime, "Xmessage").await;
    let session = session(&runtime, "Xmessage");
    for text in ["first text on X11", "second text, ünïcode ✓"] {
        let postcondition = ActionPostcondition::try_from(PostconditionFields::UiElement {
            // The clipboard check the server announces.
            role: Some(computer_use_server::CLIPBOARD_ROLE.into()),
            label: Some(computer_use_server::CLIPBOARD_LABEL.into()),
            exists: true,
            value_digest: Some(sha256_prefixed(text)),
        })
        .unwrap();
        let action = ProposedAction::new(
            "write_clipboard",
            json!({ "text": text }),
            ExecutionMode::Background,
        )
        .with_postcondition(postcondition)
        .with_data_labels([DataLabel::Public]);
        eprintln!("writing {text:?}");
        let ChainOutcome::Completed(done) = session.run(action).await.unwrap() else {
            panic!("the clipboard write should complete");
        };
        assert!(done.outcome().is_verified(), "{}", done.outcome());
        // xclip asks the X server for the selection, as any program would.
        assert_eq!(tool("xclip", &["-o", "-selection", "clipboard"]), text);
    }
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn observations_are_the_real_screen_and_windows() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _terminal = terminal("40x5+320+420");
    let runtime = runtime().await;
    let record = window_of(&runtime, "XTerm").await;

    // The window as xwininfo sees it: the bounds are its content area,
    // inside the border; the title is what xdotool reads.
    let id = record["windowId"].as_u64().unwrap();
    let info = tool("xwininfo", &["-id", &id.to_string()]);
    let field = |name: &str| -> i64 {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}:")))
            .unwrap_or_else(|| panic!("xwininfo shows no {name}"))
            .trim()
            .parse()
            .unwrap()
    };
    let border = field("Border width");
    assert_eq!(
        record["bounds"]["x"],
        field("Absolute upper-left X") + border
    );
    assert_eq!(
        record["bounds"]["y"],
        field("Absolute upper-left Y") + border
    );
    assert_eq!(record["bounds"]["width"], field("Width"));
    assert_eq!(record["bounds"]["height"], field("Height"));
    let title = tool("xdotool", &["getwindowname", &id.to_string()]);
    assert_eq!(record["title"], title.trim_end());

    // The snapshot is a PNG of the whole screen, digested as upstream does.
    let visual = runtime.observe_visual(&scope(&runtime)).await.unwrap();
    let png_bytes = base64::engine::general_purpose::STANDARD
        .decode(&visual.images[0].data)
        .unwrap();
    assert_eq!(
        visual.structured["screenshotHash"],
        sha256_prefixed(&png_bytes)
    );
    let decoder = png::Decoder::new(std::io::Cursor::new(&png_bytes));
    let reader = decoder.read_info().unwrap();
    let dimensions = tool("xdpyinfo", &[]);
    let stated = dimensions
        .lines()
        .find_map(|l| l.trim().strip_prefix("dimensions:"))
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    assert_eq!(
        format!("{}x{}", reader.info().width, reader.info().height),
        stated
    );

    // The tree says what it is.
    let tree = runtime
        .observe_semantic(&ObservationScope {
            app_id: Some("XTerm".into()),
            window_id: Some(WindowId::Number(id)),
            ..scope(&runtime)
        })
        .await
        .unwrap();
    assert_eq!(tree.structured["treeKind"], "x11_window_geometry");
    assert_eq!(tree.structured["accessibility"], "unavailable");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn typed_text_reaches_a_real_terminal() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    window_of(&runtime, "XTerm").await;
    let session = session(&runtime, "XTerm");
    let done = run_approving(&runtime, &session, typing("Hello, X11!\n")).await;
    assert!(done.performed());
    assert_eq!(settled(&terminal.file, "Hello, X11!\n"), "Hello, X11!\n");
    session.shutdown().await;
}

/// Typing into `cat > FILE` is proven by the file: the file named as the
/// action's resource binds a content check that the server really reads
/// (a wrong digest is not verified), while "the terminal still exists",
/// which held before the keys were sent, ends committed but unverified.
/// The file is read back with `cat`, outside this crate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn typing_into_a_terminal_is_verified_by_the_file_it_writes() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    let window = window_of(&runtime, "XTerm").await;
    let window_id = window["windowId"].as_u64().unwrap();
    let session = session(&runtime, "XTerm");
    let path = terminal.file.display().to_string();
    let named = ActionResourceContext {
        filesystem_path: Some(path.clone()),
        ..ActionResourceContext::default()
    };
    let holding = |content: &str| {
        ActionPostcondition::try_from(PostconditionFields::Filesystem {
            path: path.clone(),
            exists: true,
            content_digest: Some(sha256_prefixed(content)),
        })
        .unwrap()
    };
    let first = typing("proof line\n")
        .with_resource(named.clone())
        .with_postcondition(holding("proof line\n"));
    let done = run_approving(&runtime, &session, first).await;
    assert!(done.outcome().is_verified(), "{}", done.outcome());
    assert_eq!(tool("cat", &[&path]), "proof line\n");

    // The check reads the file: a digest of what was not written is not
    // verified (upstream's rule: the outcome is unknown, `indeterminate`).
    let wrong = typing("second\n")
        .with_resource(named.clone())
        .with_postcondition(holding("proof line\nsomething else\n"));
    let err = refused_at_execute(&runtime, &session, &wrong).await;
    assert!(
        matches!(&err, ComputerUseError::OutcomeUnknown { cause, .. }
            if cause.refusal_code() == Some("indeterminate")),
        "{err:?}"
    );
    assert_eq!(
        settled(&terminal.file, "proof line\nsecond\n"),
        "proof line\nsecond\n"
    );

    // Without the resource, the file check is not bound to the action.
    let unbound = typing("third\n").with_postcondition(holding("x"));
    let err = session.run(unbound).await.err().unwrap();
    assert_refused(&err, "policy_denied");

    // "The terminal still exists" held before the keys: no evidence.
    let stays = ActionPostcondition::try_from(PostconditionFields::Window {
        window_id,
        exists: true,
    })
    .unwrap();
    let done = run_approving(
        &runtime,
        &session,
        typing("third\n").with_postcondition(stays),
    )
    .await;
    assert!(done.performed());
    match done.outcome() {
        adk_computer_use::VerificationOutcome::CommittedUnverified { reason } => {
            assert!(reason.contains("cannot fail"), "{reason}")
        }
        other => panic!("expected committed_unverified, got {other}"),
    }
    assert_eq!(
        settled(&terminal.file, "proof line\nsecond\nthird\n"),
        "proof line\nsecond\nthird\n"
    );

    // A file check that holds before the keys could not show their effect:
    // refused at execute, before a key is sent.
    let absent = format!("{path}.never-written");
    let held_before = [
        (path.clone(), true, None),
        (
            path.clone(),
            true,
            Some(sha256_prefixed("proof line\nsecond\nthird\n")),
        ),
        (absent.clone(), false, None),
    ];
    for (file, exists, content_digest) in held_before {
        let check = ActionPostcondition::try_from(PostconditionFields::Filesystem {
            path: file.clone(),
            exists,
            content_digest,
        })
        .unwrap();
        let action = typing("never typed\n")
            .with_resource(ActionResourceContext {
                filesystem_path: Some(file.clone()),
                ..ActionResourceContext::default()
            })
            .with_postcondition(check);
        let err = refused_at_execute(&runtime, &session, &action).await;
        assert_refused(&err, "policy_denied");
        assert!(err.to_string().contains("holds before"), "{err}");
    }
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        tool("cat", &[&path]),
        "proof line\nsecond\nthird\n",
        "nothing was typed"
    );
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_window_changed_after_preview_is_stale_and_nothing_is_typed() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let runtime = runtime().await;
    // Each way the window can change, done by xdotool, outside this crate.
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
            // A key typed by xdotool (XTEST, to the focused window) changes
            // the window's pixels, not its place or title; it is Return, so
            // the file gets an empty line and never the refused text.
            tool("xdotool", &["windowfocus", "--sync", &id.to_string()]);
            tool("xdotool", &["type", "--delay", "20", "x"]);
            tool("xdotool", &["key", "Return"]);
            std::thread::sleep(Duration::from_millis(300));
        }),
    ];
    for (how, change) in changes {
        let terminal = terminal("60x8+420+60");
        window_of(&runtime, "XTerm").await;
        let session = session(&runtime, "XTerm");
        eprintln!("the window is {how}");
        let err = refused_after(
            &runtime,
            &session,
            &typing("this must never be typed\n"),
            change,
        )
        .await;
        assert_stale(&err);
        // The refusal names what changed, in the server's words.
        let named = match how {
            "moved" => "bounds",
            "retitled" => "title",
            _ => "pixels",
        };
        let ComputerUseError::Refused { details, .. } = &err else {
            panic!("{err}");
        };
        assert_eq!(
            details.as_ref().and_then(|d| d.get("changed")),
            Some(&serde_json::json!(named)),
            "{how}: {details:?}"
        );
        if named == "pixels" {
            let at = &details.as_ref().unwrap()["where"];
            assert!(at["width"].as_i64().is_some_and(|w| w > 0), "{details:?}");
        }
        assert!(
            !format!("{details:?}").contains("another title"),
            "a title is the application's word, not repeated"
        );
        std::thread::sleep(Duration::from_millis(300));
        let content = std::fs::read_to_string(&terminal.file).unwrap();
        assert!(
            !content.contains("never"),
            "{how}: the refused text reached the terminal: {content:?}"
        );
        // Observed again, the same window takes input: the refusal was the
        // change, not a broken path.
        let done = run_approving(&runtime, &session, typing("after\n")).await;
        assert!(done.performed(), "{how}: typing after a fresh observation");
        assert!(settled(&terminal.file, &format!("{content}after\n")).ends_with("after\n"));
        session.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_closed_window_is_stale() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let runtime = runtime().await;
    let terminal = terminal("60x8+420+60");
    window_of(&runtime, "XTerm").await;
    let session = session(&runtime, "XTerm");
    let err = refused_after(&runtime, &session, &typing("gone\n"), |id| {
        tool("xdotool", &["windowclose", &id.to_string()]);
        std::thread::sleep(Duration::from_millis(300));
    })
    .await;
    assert_stale(&err);
    drop(terminal);
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_click_outside_the_target_window_is_refused_before_the_pointer_moves() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    window_of(&runtime, "XTerm").await;
    tool("xdotool", &["mousemove", "--sync", "3", "3"]);
    let before = tool("xdotool", &["getmouselocation"]);
    let session = session(&runtime, "XTerm");
    let click = ProposedAction::new(
        "left_click",
        json!({ "coordinate": [1200, 780] }),
        ExecutionMode::Foreground,
    );
    let err = session
        .run(click)
        .await
        .err()
        .expect("a click outside its target must fail");
    assert_refused(&err, "invalid_arguments");
    assert_eq!(
        tool("xdotool", &["getmouselocation"]),
        before,
        "the pointer moved"
    );
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn text_with_a_character_no_key_gives_is_refused_whole_and_nothing_is_typed() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let terminal = terminal("60x8+420+60");
    let runtime = runtime().await;
    window_of(&runtime, "XTerm").await;
    let session = session(&runtime, "XTerm");
    // The keyboard map has keys for "ok" but none for the euro sign: the
    // plan is refused whole, so not even the leading letters are sent.
    let err = refused_after(&runtime, &session, &typing("ok €\n"), |_| {}).await;
    assert_refused(&err, "invalid_arguments");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read_to_string(&terminal.file).unwrap(), "");
    // The same terminal takes a text it has keys for.
    assert!(
        run_approving(&runtime, &session, typing("ok\n"))
            .await
            .performed()
    );
    assert_eq!(settled(&terminal.file, "ok\n"), "ok\n");
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_click_where_another_window_covers_the_target_is_refused_before_the_pointer_moves() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _target = terminal("60x8+420+60");
    let runtime = runtime().await;
    let target = window_of(&runtime, "XTerm").await;
    // Another program's window, of another class, over the target's middle.
    let _cover = start("xterm", &["-class", "Covering", "-geometry", "20x4+500+80"]);
    let cover = window_of(&runtime, "Covering").await;
    let (x, y) = (
        cover["bounds"]["x"].as_i64().unwrap() + 10,
        cover["bounds"]["y"].as_i64().unwrap() + 10,
    );
    let inside_target = |b: &Value| {
        let (bx, by) = (b["x"].as_i64().unwrap(), b["y"].as_i64().unwrap());
        x >= bx
            && y >= by
            && x < bx + b["width"].as_i64().unwrap()
            && y < by + b["height"].as_i64().unwrap()
    };
    assert!(
        inside_target(&target["bounds"]),
        "the point is inside the target"
    );
    let id = target["windowId"].as_u64().unwrap();
    tool("xdotool", &["mousemove", "--sync", "3", "3"]);
    let before = tool("xdotool", &["getmouselocation"]);
    let session = adk_computer_use_testkit::child::session_on(
        &runtime,
        "x11-test",
        "XTerm",
        Some(WindowId::Number(id)),
    );
    let click = ProposedAction::new(
        "left_click",
        json!({ "coordinate": [x, y] }),
        ExecutionMode::Foreground,
    );
    let err = session
        .run(click)
        .await
        .err()
        .expect("a click on a covered point must fail");
    assert_stale(&err);
    assert_eq!(
        tool("xdotool", &["getmouselocation"]),
        before,
        "the pointer moved"
    );
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_session_bound_to_a_window_frames_it_alone_and_ignores_the_rest_of_the_screen() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let target = terminal("60x8+420+60");
    let runtime = runtime().await;
    let record = window_of(&runtime, "XTerm").await;
    let id = record["windowId"].as_u64().unwrap();
    // Another program's window, elsewhere on the screen.
    let _elsewhere = start(
        "xterm",
        &["-class", "Elsewhere", "-geometry", "30x4+40+500"],
    );
    let other = window_of(&runtime, "Elsewhere").await["windowId"]
        .as_u64()
        .unwrap();

    // The frame is the window's part of the screen, as xwininfo sizes it.
    let visual = runtime
        .observe_visual(&ObservationScope {
            app_id: Some("XTerm".into()),
            window_id: Some(WindowId::Number(id)),
            ..scope(&runtime)
        })
        .await
        .unwrap();
    let png_bytes = base64::engine::general_purpose::STANDARD
        .decode(&visual.images[0].data)
        .unwrap();
    let reader = png::Decoder::new(std::io::Cursor::new(&png_bytes))
        .read_info()
        .unwrap();
    assert_eq!(
        (
            i64::from(reader.info().width),
            i64::from(reader.info().height)
        ),
        (
            record["bounds"]["width"].as_i64().unwrap(),
            record["bounds"]["height"].as_i64().unwrap()
        )
    );
    assert_eq!(visual.structured["scope"], "window");

    let session = adk_computer_use_testkit::child::session_on(
        &runtime,
        "x11-test",
        "XTerm",
        Some(WindowId::Number(id)),
    );
    // The other window repaints between preview and execute: the bound
    // window's pixels did not change, so the action runs.
    let approved = approved(&runtime, &session, &typing("still current\n")).await;
    tool("xdotool", &["windowfocus", "--sync", &other.to_string()]);
    tool("xdotool", &["type", "--delay", "20", "elsewhere"]);
    std::thread::sleep(Duration::from_millis(300));
    let executed = approved
        .reserve()
        .await
        .unwrap()
        .lease()
        .await
        .unwrap()
        .execute()
        .await
        .expect("a change elsewhere on the screen leaves the bound window current");
    assert!(executed.verify().await.unwrap().performed());
    assert_eq!(settled(&target.file, "still current\n"), "still current\n");
    // The bound window itself repaints: stale, and nothing is typed.
    window_of(&runtime, "XTerm").await;
    let err = refused_after(&runtime, &session, &typing("never\n"), |id| {
        tool("xdotool", &["windowfocus", "--sync", &id.to_string()]);
        tool("xdotool", &["key", "Return"]);
        std::thread::sleep(Duration::from_millis(300));
    })
    .await;
    assert_stale(&err);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !std::fs::read_to_string(&target.file)
            .unwrap()
            .contains("never")
    );
    session.shutdown().await;
}

/// A window that closes a moment after the input that asked for it (a
/// terminal whose shell ends on Return) is found gone by the server's
/// check, which waits briefly for the effect: `Verified`, not
/// indeterminate; the window really is gone (`xdotool` finds none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_window_that_closes_after_the_input_is_verified_gone() {
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("closes on return {}", std::process::id());
    let _closing = start(
        "xterm",
        &[
            "-T",
            &title,
            "-geometry",
            "40x4+300+300",
            "-e",
            "sh",
            "-c",
            "read line; sleep 0.3",
        ],
    );
    let runtime = runtime().await;
    let mut id = None;
    for _ in 0..100 {
        // `xdotool search` fails while nothing matches yet.
        let found = std::process::Command::new("xdotool")
            .args(["search", "--onlyvisible", "--name", &title])
            .output()
            .unwrap();
        id = String::from_utf8_lossy(&found.stdout)
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<u64>().ok());
        if id.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let id = id.expect("the terminal appeared");
    std::thread::sleep(Duration::from_millis(500));
    let session = adk_computer_use_testkit::child::session_on(
        &runtime,
        "x11-test",
        "XTerm",
        Some(WindowId::Number(id)),
    );
    let gone = ActionPostcondition::try_from(PostconditionFields::Window {
        window_id: id,
        exists: false,
    })
    .unwrap();
    let done = run_approving(&runtime, &session, typing("\n").with_postcondition(gone)).await;
    assert!(done.performed());
    assert!(done.outcome().is_verified(), "{}", done.outcome());
    let found = std::process::Command::new("xdotool")
        .args(["search", "--name", &title])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&found.stdout).trim().is_empty(),
        "the window is gone"
    );
    session.shutdown().await;
}

/// The person asked for text "on my clipboard": it stays there after the
/// server that wrote it exits. The server is a child process here, as a
/// host runs it; once it ends, `xclip` (outside this crate) still reads
/// the text, served by the keeper the server handed it to. The keeper lets
/// go of the streams it inherited (the server's stderr reaches its end
/// while the keeper lives), and it lets go of the clipboard, and exits,
/// once another program copies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn the_clipboard_keeps_its_text_after_the_server_exits() {
    use adk_computer_use::mcp::McpRuntimeConfig;
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _dialog = start("xmessage", &["-geometry", "+40+560", "clipboard kept"]);
    let (mut server, stdout, stdin, stderr) = x11_server();
    let runtime = Arc::new(
        ComputerUseMcpRuntime::connect((stdout, stdin), McpRuntimeConfig::new(PRINCIPAL))
            .await
            .unwrap(),
    );
    runtime.start_session(Some("kept"), None).await.unwrap();
    window_of(&runtime, "Xmessage").await;
    let text = format!("kept after exit {}", std::process::id());
    let session = session(&runtime, "Xmessage");
    let postcondition = ActionPostcondition::try_from(PostconditionFields::UiElement {
        role: Some(computer_use_server::CLIPBOARD_ROLE.into()),
        label: Some(computer_use_server::CLIPBOARD_LABEL.into()),
        exists: true,
        value_digest: Some(sha256_prefixed(&text)),
    })
    .unwrap();
    let action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_postcondition(postcondition)
    .with_data_labels([DataLabel::Public]);
    let ChainOutcome::Completed(done) = session.run(action).await.unwrap() else {
        panic!("the clipboard write should complete");
    };
    assert!(done.outcome().is_verified(), "{}", done.outcome());
    session.shutdown().await;
    runtime.shutdown().await.unwrap();
    drop(runtime);

    // The server's stderr ends although the keeper lives on: the keeper
    // holds none of the server's streams.
    let said = ended(&mut server, stderr).await;
    let keeper: u32 = said
        .split("served by computer-use-clipboard (pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("the server said where the text went: {said}"));

    // The text is still on the clipboard, served by the keeper.
    assert_eq!(tool("xclip", &["-o", "-selection", "clipboard"]), text);
    assert!(running(keeper), "the keeper serves the text");

    // Another program copies: the keeper lets go and exits.
    let copied = std::process::Command::new("xclip")
        .args(["-i", "-selection", "clipboard", "-loops", "1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .and_then(|mut xclip| {
            use std::io::Write as _;
            xclip
                .stdin
                .take()
                .map(|mut input| input.write_all(b"copied by another program"))
                .transpose()?;
            Ok(xclip)
        })
        .unwrap();
    let mut ended = false;
    for _ in 0..100 {
        if !running(keeper) {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        ended,
        "the keeper exits once another program owns the clipboard"
    );
    assert_eq!(
        tool("xclip", &["-o", "-selection", "clipboard"]),
        "copied by another program"
    );
    let mut copied = Program(copied);
    let _ = copied.0.wait();
}

/// Whether process `pid` runs (a zombie, waiting for its reaper, does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next());
        !matches!(state, Some("Z" | "X"))
    })
}

/// Text the action labelled credential is not kept after the server
/// exits: no keeper gets it, the server says why, and the clipboard is
/// empty once it is gone (read with `xclip`, outside this crate).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn a_secret_on_the_clipboard_goes_with_the_server() {
    use adk_computer_use::mcp::McpRuntimeConfig;
    use adk_computer_use_testkit::child::Sim;
    if !display() {
        return;
    }
    let _display = DISPLAY_LOCK.lock().await;
    let _dialog = start("xmessage", &["-geometry", "+40+560", "secret not kept"]);
    let (mut server, stdout, stdin, stderr) = x11_server();
    let (runtime, approver) = ComputerUseMcpRuntime::connect_with_approver(
        (stdout, stdin),
        McpRuntimeConfig::new(PRINCIPAL),
    )
    .await
    .unwrap();
    runtime.start_session(Some("secret"), None).await.unwrap();
    let host = Sim {
        runtime: Arc::new(runtime),
        approver,
    };
    window_of(&host, "Xmessage").await;
    let session = session(&host, "Xmessage");
    let text = format!("secret {}", std::process::id());
    let action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": text }),
        ExecutionMode::Background,
    )
    .with_data_labels([DataLabel::Credential]);
    let done = approved(&host, &session, &action)
        .await
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    assert_eq!(tool("xclip", &["-o", "-selection", "clipboard"]), text);
    session.shutdown().await;
    host.runtime.shutdown().await.unwrap();
    drop(host);
    let said = ended(&mut server, stderr).await;
    assert!(said.contains("labelled as a secret"), "{said}");
    assert!(!said.contains("served by"), "{said}");
    let read = std::process::Command::new("xclip")
        .args(["-o", "-selection", "clipboard"])
        .output()
        .unwrap();
    assert_ne!(
        String::from_utf8_lossy(&read.stdout),
        text,
        "the secret is gone with the server"
    );
}

/// `computer-use-server --desktop x11` as a host runs it, with the keeper
/// this build made (not one found elsewhere); its streams.
fn x11_server() -> (
    tokio::process::Child,
    tokio::process::ChildStdout,
    tokio::process::ChildStdin,
    tokio::process::ChildStderr,
) {
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_computer-use-server"))
        .args(["--desktop", "x11", "--principal", PRINCIPAL])
        .env(
            computer_use_server::desktop::x11::keeper::KEEPER_ENV,
            env!("CARGO_BIN_EXE_computer-use-clipboard"),
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    let stdin = server.stdin.take().unwrap();
    let stderr = server.stderr.take().unwrap();
    (server, stdout, stdin, stderr)
}

/// What the server said on stderr, read to its end (which comes although
/// a keeper may live on: it holds none of the server's streams), once the
/// server has exited successfully.
async fn ended(
    server: &mut tokio::process::Child,
    mut stderr: tokio::process::ChildStderr,
) -> String {
    use tokio::io::AsyncReadExt as _;
    let mut said = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stderr.read_to_end(&mut said))
        .await
        .expect("the server's stderr reached its end")
        .unwrap();
    let said = String::from_utf8_lossy(&said).into_owned();
    let status = tokio::time::timeout(Duration::from_secs(10), server.wait())
        .await
        .expect("the server exited")
        .unwrap();
    assert!(status.success(), "{status}: {said}");
    said
}

/// Runs `action` (approved by the host when asked) up to its execute,
/// which must fail; the error.
async fn refused_at_execute(
    host: &adk_computer_use_testkit::child::Sim,
    session: &Session<ComputerUseMcpRuntime>,
    action: &ProposedAction,
) -> ComputerUseError {
    approved(host, session, action)
        .await
        .reserve()
        .await
        .unwrap()
        .lease()
        .await
        .unwrap()
        .execute()
        .await
        .err()
        .expect("the execute fails")
}
