//! The approval page in a real browser: an agent suspends actions against
//! the simulator served over TCP; `computer-use-approvals serve` shows them
//! (screenshot, arguments, labels, digests, time left) in headless Chromium
//! driven through WebDriver; a click on Approve obtains the grant with the
//! approver's credential and the agent's action runs once; Deny ends the
//! other with `Denied`; a tampered checkpoint shows as unreadable; a
//! request without the page's secret, or a post from another origin,
//! is refused. A screenshot of the page is kept in `target/tmp`.
//!
//! Needs `chromium` and `chromedriver` (Debian's packages; `.ci/run`
//! installs them). Built without them on the `PATH`, the test is reported
//! as ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::*;

use adk_computer_use_testkit::browser::browser;
use adk_computer_use_testkit::needs;
#[cfg(feature = "x11")]
use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "x11")]
use adk_computer_use::chain::ChainOutcome;
use adk_computer_use::contracts::{DataLabel, ExecutionMode};
use adk_computer_use::{ComputerUseError, ProposedAction};
#[cfg(feature = "x11")]
use adk_computer_use::{ScopeAuthorizer, Session, VerifiedIdentity};
use computer_use_server::CLIPBOARD_APP;
use serde_json::json;
#[cfg(feature = "x11")]
use tokio::io::AsyncReadExt;

/// One test at a time on the real display: a window one test opens would
/// cover, or change the pixels of, another's target.
#[cfg(feature = "x11")]
static DISPLAY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(browser)]
async fn a_person_approves_and_denies_on_the_page_in_a_real_browser() {
    let sim = served(false).await;
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    let (runtime, session) = agent(&sim, &store, CLIPBOARD_APP).await;
    let approve_me = suspended(&session, write("page-approve", "approved on the page")).await;
    let deny_me = suspended(&session, write("page-deny", "never written")).await;
    let tampered = suspended(&session, write("page-tampered", "tampered")).await;
    // One the person decides only after its envelope expired.
    let late = suspended(
        &session,
        write("page-late", "approved after expiry").with_expires_in_ms(1_000),
    )
    .await;
    let late_since = tokio::time::Instant::now();
    // An action the agent labels as handling secrets, with text that reads
    // differently once a right-to-left override is drawn.
    let hidden = suspended(
        &session,
        ProposedAction::new(
            "write_clipboard",
            json!({ "text": "notes\u{202E}txt.exe" }),
            ExecutionMode::Background,
        )
        .with_action_id("page-hidden\u{202E}fdp")
        .with_data_labels([DataLabel::Credential]),
    )
    .await;
    let path = store.path_of(&tampered);
    let record = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, record.replace("tampered", "Tampered")).unwrap();

    // The page, with the approver's key and credential, which the agent
    // never holds.
    let store_dir = dir.path().to_str().unwrap().to_owned();
    let (mut page, sign_in) = page(&store_dir, &sim).await;
    // http://127.0.0.1:PORT/SECRET/: the page lives under its secret.
    let rest = sign_in.trim_start_matches("http://");
    let (page_address, secret) = rest.split_once('/').unwrap();
    let (page_address, secret) = (
        page_address.to_owned(),
        secret.trim_end_matches('/').to_owned(),
    );
    let get = |path: &str, host: &str| {
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
    };
    // Without the secret nothing is shown or decided.
    let (status, _) = http(&page_address, get("/", &page_address)).await;
    assert_eq!(status, 404, "no page outside the secret path");
    let (status, _) = http(
        &page_address,
        get(&format!("/{}/", "0".repeat(64)), &page_address),
    )
    .await;
    assert_eq!(status, 401, "a wrong secret");
    let form = format!("id={approve_me}&token=x&decision=approve");
    let post = |path: &str, origin: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {page_address}\r\nConnection: close\r\nOrigin: {origin}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
            form.len()
        )
    };
    let own_origin = format!("http://{page_address}");
    let (status, _) = http(&page_address, post("/decide", &own_origin)).await;
    assert_eq!(status, 404, "a decision outside the secret path");
    let (status, _) = http(
        &page_address,
        post(&format!("/{}/decide", "0".repeat(64)), &own_origin),
    )
    .await;
    assert_eq!(status, 401, "a decision with a wrong secret");
    // Even with the secret, a post from another origin (another port on
    // this machine included) or without the page's form token is refused.
    let (status, _) = http(
        &page_address,
        post(&format!("/{secret}/decide"), "http://127.0.0.1:1"),
    )
    .await;
    assert_eq!(status, 403, "a post from another origin");
    let (status, _) = http(
        &page_address,
        post(&format!("/{secret}/decide"), &own_origin),
    )
    .await;
    assert_eq!(status, 403, "a post without the page's form token");
    // A name that resolves here (DNS rebinding) is not this page.
    let (status, _) = http(
        &page_address,
        get(&format!("/{secret}/"), "evil.example:80"),
    )
    .await;
    assert_eq!(status, 401, "another host name");

    // The browser: headless Chromium through chromedriver.
    let (browser, _driver, _profile) = browser().await;
    browser.goto(&sign_in).await;
    let shown = browser
        .find(&format!("#c-{approve_me}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for expected in [
        "page-approve",
        "write_clipboard",
        "approved on the page",
        "public",
        "page-agent",
        "s left",
    ] {
        assert!(
            shown.contains(expected),
            "the card shows {expected:?}:\n{shown}"
        );
    }
    // A clipboard write shows no crop of some window: the clipboard is not
    // on the screen, and the text it will hold is what matters. Why it
    // asks and what it does are said in words.
    assert!(
        browser
            .find(&format!("#c-{approve_me} .frame img"))
            .await
            .is_err(),
        "no screenshot for a clipboard write:\n{shown}"
    );
    for expected in [
        "The clipboard is not on the screen",
        "What it does",
        "Replaces the clipboard's contents with 20 characters",
        "Why it asks",
        "The server asks a person for every write_clipboard action",
    ] {
        assert!(
            shown.contains(expected),
            "the card says {expected:?}:\n{shown}"
        );
    }
    let unreadable = browser
        .find(&format!("#c-{tampered}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(unreadable.contains("UNREADABLE"), "{unreadable}");
    assert!(
        browser.find(&format!("#approve-{tampered}")).await.is_err(),
        "a tampered checkpoint cannot be decided"
    );
    // Masked values are one click away, and what an override would reorder
    // is shown escaped.
    let card_html = browser
        .find(&format!("#c-{hidden}"))
        .await
        .unwrap()
        .html()
        .await
        .unwrap();
    assert!(
        card_html.contains("•••••"),
        "masked by default: {card_html}"
    );
    assert!(
        card_html.contains("<details>") && card_html.contains("notes\\u{202e}txt.exe"),
        "revealable, the override escaped: {card_html}"
    );
    assert!(
        card_html.contains("page-hidden\\u{202e}fdp") && !card_html.contains('\u{202E}'),
        "no override reaches the page: {card_html}"
    );
    keep_screenshot(&browser, "approval-page.png").await;

    // Approve: the page obtains the grant with the approver's credential;
    // the agent's action runs once.
    approve_on_page(&browser, &session, &approve_me).await;
    let public = public();

    // Deny, with a reason: the agent's action ends there.
    let reason = browser.find(&format!("#reason-{deny_me}")).await.unwrap();
    reason.clear().await.unwrap();
    reason.send_keys("wrong text").await.unwrap();
    click(&browser, &format!("#deny-{deny_me}")).await;
    confirmed(&browser, "denied").await;
    match session.resume_decided(&deny_me, &public).await {
        Err(ComputerUseError::Denied { action_id, reason }) => {
            assert_eq!(action_id, "page-deny");
            assert_eq!(reason, "wrong text");
        }
        Err(other) => panic!("expected Denied, got {other}"),
        Ok(_) => panic!("expected Denied, got an approved stage"),
    }
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["clipboard"], "approved on the page");
    assert_eq!(stats["totalEffects"], 1, "one approval, one effect");
    // Approving what was denied: refused before any grant is asked for.
    let source = browser.source().await.unwrap();
    let token = source
        .split("name=\"token\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let grants = stats["grants"].clone();
    let again = format!("id={deny_me}&token={token}&decision=approve");
    let (status, answer) = http(
        &page_address,
        format!(
            "POST /{secret}/decide HTTP/1.1\r\nHost: {page_address}\r\nConnection: close\r\nOrigin: http://{page_address}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{again}",
            again.len()
        ),
    )
    .await;
    assert_eq!(status, 409, "{answer}");
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(
        stats["grants"], grants,
        "no grant was asked for a denied action"
    );

    // Approving after the envelope expired works end to end: the page
    // previews the same action again for its grant, the agent's
    // resume_decided previews it once more and runs it, once.
    tokio::time::sleep_until(late_since + Duration::from_millis(1_500)).await;
    browser.goto(&sign_in).await;
    let late_card = browser
        .find(&format!("#c-{late}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(late_card.contains("expired at"), "{late_card}");
    approve_on_page(&browser, &session, &late).await;
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["clipboard"], "approved after expiry");
    assert_eq!(stats["totalEffects"], 2, "each approval, one effect");

    browser.close().await;
    let _ = session.shutdown().await;
    let _ = page.kill().await;
}

/// What happened, from the person's side: after Approve, the page shows
/// how each decided action ended once the agent ran it, as the agent
/// reported it (and says whose word it is). One action runs and is done;
/// another, approved, is refused when the agent resumes it (a second agent
/// holds the target), the page says the approval was kept, and the run
/// that follows shows too. A report written into the store's directory
/// without its key shows as unreadable, never as the agent's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(browser)]
async fn after_a_decision_the_page_shows_what_happened_as_the_agent_reported_it() {
    let sim = served(false).await;
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    let (_runtime, session) = agent(&sim, &store, CLIPBOARD_APP).await;
    let (_other_runtime, other) = agent(&sim, &store, CLIPBOARD_APP).await;
    let done = suspended(&session, write("report-done", "done and reported")).await;
    let blocked = suspended(&session, write("report-blocked", "on the second try")).await;
    let holder = suspended(&other, write("report-holder", "the other agent")).await;
    let store_dir = dir.path().to_str().unwrap().to_owned();
    let (mut page, sign_in) = page(&store_dir, &sim).await;
    let (browser, _driver, _profile) = browser().await;
    browser.goto(&sign_in).await;

    approve_on_page(&browser, &session, &done).await;
    // Approved on the page; when the agent resumes it, the other agent
    // holds the target: refused before anything is done.
    for id in [&blocked, &holder] {
        browser.goto(&sign_in).await;
        click(&browser, &format!("#approve-{id}")).await;
        confirmed(&browser, "approved").await;
    }
    let holding = other
        .resume_decided(&holder, &public())
        .await
        .unwrap()
        .reserve()
        .await
        .unwrap();
    let Err(err) = session
        .resume_decided(&blocked, &public())
        .await
        .unwrap()
        .complete()
        .await
    else {
        panic!("not refused while another agent holds the target");
    };
    assert_eq!(err.refusal_code(), Some("target_conflict"), "{err}");
    // The other agent lets go (its session's shutdown releases what its
    // dropped stage held, and waits for it).
    drop(holding);
    let stats = other.shutdown().await;
    assert_eq!(stats.outstanding, 0, "{stats:?}");
    let again = session
        .resume_decided(&blocked, &public())
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(again.performed());

    browser.goto(&sign_in).await;
    let section = |css: String| {
        let browser = &browser;
        async move { browser.find(&css).await.unwrap().text().await.unwrap() }
    };
    let whose = section("p.whose".into()).await;
    assert!(whose.contains("As each agent reported it"), "{whose}");
    let first = section(format!("#r-{done}-0")).await;
    assert!(
        first.contains("report-done") && first.contains("write_clipboard"),
        "{first}"
    );
    assert!(first.contains("Done"), "{first}");
    let refused = section(format!("#r-{blocked}-0")).await;
    assert!(
        refused.contains("Refused before anything was done")
            && refused.contains("target_conflict")
            && refused.contains("The approval was kept"),
        "{refused}"
    );
    let then = section(format!("#r-{blocked}-1")).await;
    assert!(then.contains("Done"), "{then}");
    assert!(
        browser.find(&format!("#r-{holder}-0")).await.is_err(),
        "an action released before it ran reports nothing"
    );
    keep_screenshot(&browser, "approval-page-what-happened.png").await;

    // A report put beside a checkpoint by someone without the store's key.
    let forged = json!({
        "report": { "checkpointId": done.as_str(), "actionId": "report-done",
                    "tool": "write_clipboard", "outcome": { "status": "verified" },
                    "reportedAt": "2026-12-02T12:00:00Z" },
        "seal": "00".repeat(32),
    });
    std::fs::write(
        dir.path().join(format!("{done}.outcome.1")),
        forged.to_string(),
    )
    .unwrap();
    browser.goto(&sign_in).await;
    let unreadable = section(format!("#r-{done}")).await;
    assert!(unreadable.contains("UNREADABLE"), "{unreadable}");
    assert!(browser.find(&format!("#r-{done}-0")).await.is_err());

    browser.close().await;
    let _ = session.shutdown().await;
    let _ = page.kill().await;
}

/// What the person reads, from their side: a clipboard write the agent
/// labelled credential waits because of that label, and the page (in
/// headless Chromium) and `show` say so in words, not by the rule's code
/// alone (`confirm:edit_reversible`); they describe the effect ("replaces
/// the clipboard's contents"), and show no crop of a window for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(browser)]
async fn the_page_and_show_say_why_an_action_waits_and_what_it_does() {
    let sim = served_by_policy(false, &[]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    let (_runtime, session) = agent(&sim, &store, CLIPBOARD_APP).await;
    let id = suspended(
        &session,
        ProposedAction::new(
            "write_clipboard",
            json!({ "text": "vault passphrase" }),
            ExecutionMode::Background,
        )
        .with_action_id("labelled-credential")
        .with_data_labels([DataLabel::Credential]),
    )
    .await;
    let store_dir = dir.path().to_str().unwrap().to_owned();
    let view = adk_computer_use::chain::inspect(&*store, &id).unwrap();
    assert_eq!(
        view.reasons,
        ["confirm:edit_reversible"],
        "the server's reason names the class, not the label"
    );
    let why = "The action is labelled credential (a label the agent chose)";
    let what = "Replaces the clipboard's contents with masked text (masked under Arguments";

    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_computer-use-approvals"))
        .args(["show", id.as_str(), "--store", &store_dir])
        .env("ADK_CHECKPOINT_KEY", KEY)
        .output()
        .unwrap();
    let shown_text = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.status.success(), "{shown:?}");
    for expected in [why, what, "The clipboard is not on the screen"] {
        assert!(
            shown_text.contains(expected),
            "show says {expected:?}:\n{shown_text}"
        );
    }
    assert!(
        !shown_text.contains("vault passphrase"),
        "masked in show:\n{shown_text}"
    );

    let (mut page, sign_in) = page(&store_dir, &sim).await;
    let (browser, _driver, _profile) = browser().await;
    browser.goto(&sign_in).await;
    let card = format!("#c-{id}");
    let text = browser.find(&card).await.unwrap().text().await.unwrap();
    for expected in ["Why it asks", why, "What it does", what] {
        assert!(
            text.contains(expected),
            "the card says {expected:?}:\n{text}"
        );
    }
    assert!(
        browser.find(&format!("{card} .frame img")).await.is_err(),
        "no crop of a window for a clipboard write:\n{text}"
    );
    assert!(
        browser.find(&format!("{card} .off-screen")).await.is_ok(),
        "the card says what stands in for the screen:\n{text}"
    );
    browser.close().await;
    let _ = session.shutdown().await;
    let _ = page.kill().await;
}

/// On a real X11 display: the page shows the screen as the agent saw it,
/// the target window (a real `xmessage`) marked in red, and the approved
/// write lands on the real clipboard (read back with `xclip`).
#[cfg(feature = "x11")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(browser, display)]
async fn on_a_real_display_the_page_shows_the_screen_with_the_target_marked() {
    let _display = DISPLAY.lock().await;
    let mut dialog = spawn(
        "xmessage",
        &[
            "-buttons",
            "Approve:7",
            "-geometry",
            "+320+240",
            "the approval page marks this window",
        ],
        &[],
    );
    // A pointer action, which the screen shows: the server asks for every
    // left_click.
    let sim = served_by_policy(true, &["--confirm-tool", "left_click"]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    let (_runtime, session) = agent(&sim, &store, "Xmessage").await;
    // The dialog is on the screen before the agent looks.
    let mut window = None;
    for _ in 0..100 {
        let found = tokio::process::Command::new("xdotool")
            .args(["search", "--onlyvisible", "--class", "Xmessage"])
            .output()
            .await
            .unwrap();
        window = String::from_utf8_lossy(&found.stdout)
            .lines()
            .next()
            .map(str::to_owned);
        if window.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let window = window.expect("the xmessage window appeared");
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The dialog's button, as xwininfo (outside this crate) finds it: the
    // last window of its tree, `WxH+x+y  +X+Y` (absolute X, Y last).
    let tree = tokio::process::Command::new("xwininfo")
        .args(["-tree", "-id", &window])
        .output()
        .await
        .unwrap();
    let tree = String::from_utf8_lossy(&tree.stdout).into_owned();
    let numbers = |part: &str| -> Vec<i64> {
        part.split(['x', '+'])
            .filter(|n| !n.is_empty())
            .map(|n| n.parse().unwrap())
            .collect()
    };
    let button = tree
        .lines()
        .rfind(|l| l.contains("(has no name)"))
        .unwrap_or_else(|| panic!("xwininfo shows no button: {tree}"));
    let parts: Vec<&str> = button.split_whitespace().collect();
    let size = numbers(parts[parts.len() - 2]);
    let at = numbers(parts[parts.len() - 1]);
    let (x, y) = (at[0] + size[0] / 2, at[1] + size[1] / 2);
    let id = suspended(
        &session,
        ProposedAction::new(
            "left_click",
            json!({ "coordinate": [x, y] }),
            ExecutionMode::Foreground,
        )
        .with_action_id("page-x11")
        .with_data_labels([DataLabel::Public]),
    )
    .await;

    let (mut page, sign_in) = page(dir.path().to_str().unwrap(), &sim).await;
    let (browser, _driver, _profile) = browser().await;
    browser.goto(&sign_in).await;
    let card = format!("#c-{id}");
    let image = browser
        .find(&format!("{card} .frame img"))
        .await
        .unwrap()
        .attr("src")
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(
        image.starts_with("data:image/png;base64,") && image.len() > 2000,
        "a real screenshot, not a placeholder ({} bytes)",
        image.len()
    );
    browser
        .find(&format!("{card} .frame .bounds"))
        .await
        .expect("the target window is marked on the screenshot");
    browser
        .find(&format!("{card} .frame .pointer"))
        .await
        .expect("the point is marked on the screenshot");
    let details = browser.find(&card).await.unwrap().text().await.unwrap();
    let moves = format!("Clicks at ({x}, {y}) in the application \"Xmessage\", window {window}");
    assert!(
        details.contains("bounds") && details.contains(&moves),
        "{moves:?}:\n{details}"
    );
    keep_screenshot(&browser, "approval-page-x11.png").await;
    approve_on_page(&browser, &session, &id).await;
    // Checked from outside this crate: the dialog's own exit status is
    // its button's.
    let status = tokio::time::timeout(Duration::from_secs(10), dialog.wait())
        .await
        .expect("xmessage exited on its button")
        .unwrap();
    assert_eq!(status.code(), Some(7), "the Approve button was clicked");
    browser.close().await;
    let _ = session.shutdown().await;
    let _ = page.kill().await;
}

/// On a real form (`zenity --forms`, by element through the accessibility
/// bus): the write into its password field waits for a person on the page,
/// which names the field and masks the value (the secret never reaches the
/// page, not even behind a click); approved there, it is written, and
/// zenity's own output is the check.
#[cfg(feature = "x11")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(browser, display, accessibility)]
async fn on_a_real_form_the_page_names_the_password_field_and_masks_its_value() {
    let _display = DISPLAY.lock().await;
    let title = format!("Page form {}", std::process::id());
    let mut zenity = tokio::process::Command::new("zenity")
        .args([
            "--forms",
            "--title",
            &title,
            "--add-entry=Name",
            "--add-password=Password",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let sim = served(true).await;
    let dir = tempfile::tempdir().unwrap();
    let store = file_store(&dir);
    let (runtime, _) = agent(&sim, &store, "Zenity").await;
    // The form's window, once listed and answering on the bus.
    let mut window = None;
    for _ in 0..300 {
        let listed = runtime
            .observe_shadow("list_windows", json!({}))
            .await
            .unwrap();
        let id = listed.structured["windows"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["title"] == title.as_str()))
            .and_then(|w| w["windowId"].as_u64());
        if let Some(id) = id
            && runtime
                .observe_shadow(
                    "find_element",
                    json!({ "window_id": id, "label": "Password" }),
                )
                .await
                .is_ok_and(|found| found.structured.as_array().is_some_and(|f| !f.is_empty()))
        {
            window = Some(id);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let window = window.expect("the form appeared with its password field on the bus");
    let authorizer = ScopeAuthorizer::new(
        VerifiedIdentity::new("alice", "tenant-page").unwrap(),
        [
            "computer:plan",
            "computer:execute:background",
            "computer:execute:foreground",
        ],
    )
    .unwrap();
    let session = Session::builder(Arc::clone(&runtime), authorizer)
        .agent_id("page-agent")
        .target(
            "Zenity",
            Some(adk_computer_use::contracts::WindowId::Number(window)),
        )
        .checkpoints(store.clone())
        .build()
        .unwrap();
    let secret = "correct horse battery";
    let write = ProposedAction::new(
        "set_value",
        json!({ "window_id": window, "role": "AXSecureTextField", "label": "Password", "value": secret }),
        ExecutionMode::Foreground,
    )
    .with_action_id("page-password");
    let id = suspended(&session, write).await;

    let (mut page, sign_in) = page(dir.path().to_str().unwrap(), &sim).await;
    let (browser, _driver, _profile) = browser().await;
    browser.goto(&sign_in).await;
    let card = format!("#c-{id}");
    let details = browser.find(&card).await.unwrap().text().await.unwrap();
    assert!(
        details.contains("\"AXSecureTextField\" \"Password\" ← •••••"),
        "the page names the field and masks the value: {details}"
    );
    let source = browser.source().await.unwrap();
    assert!(
        !source.contains(secret),
        "the secret is nowhere in the page"
    );
    assert!(!source.contains("correct horse"), "not even in part");
    keep_screenshot(&browser, "approval-page-password.png").await;
    approve_on_page(&browser, &session, &id).await;
    browser.close().await;
    let _ = page.kill().await;

    // OK, by element: zenity prints what its fields hold.
    let press = ProposedAction::new(
        "press_button",
        json!({ "window_id": window, "label": "OK" }),
        ExecutionMode::Foreground,
    )
    .with_action_id("page-ok");
    match session.run(press).await.unwrap() {
        ChainOutcome::Completed(done) => assert!(done.performed()),
        ChainOutcome::NeedsApproval(_) | ChainOutcome::Blocked(_) => {
            panic!("pressing OK is allowed by the policy")
        }
    }
    let printed = tokio::time::timeout(Duration::from_secs(10), async {
        let mut out = String::new();
        zenity
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .await
            .unwrap();
        out
    })
    .await
    .unwrap();
    assert_eq!(printed.trim_end(), format!("|{secret}"));
    let _ = session.shutdown().await;
}
