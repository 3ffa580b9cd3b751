//! A form that changes while the server holds a preview of it: a field
//! renamed, removed, reordered or disabled between preview and execute is
//! refused before anything is written; two windows with one title are told
//! apart by their process; a form past the walk's caps matches nothing; a
//! value the application rewrites is not verified. The form is a GTK 3
//! program (`x11_support/form_app.py`) reached only through the toolkit's
//! own accessibility bridge, and its own printout of its fields is the
//! outside check.
//!
//! These tests need an X server and a D-Bus session with the accessibility
//! bus, and GTK's Python bindings (`.ci/run` installs them); built without
//! a display or a bus, each is reported ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use adk_computer_use::chain::Session;
use adk_computer_use::contracts::WindowId;
use adk_computer_use::mcp::ComputerUseMcpRuntime;
use adk_computer_use::runtime::{ComputerUseRuntime, ProposedAction};
use adk_computer_use::{ChainOutcome, ComputerUseError, ExecutionMode};
use adk_computer_use_testkit::child::{Sim, host_approves, run_approving};
use adk_computer_use_testkit::needs;
use serde_json::{Value, json};

mod x11_support;

use x11_support::form::Form;
use x11_support::*;

/// The form's window, once listed and answering on the accessibility bus:
/// `(window id, app id)`.
async fn shown(sim: &Sim, title: &str) -> (u64, String) {
    let (id, app, _) = accessible_window(sim, title, 1).await;
    (id, app)
}

fn session(sim: &Sim, app: &str, id: u64) -> Session<ComputerUseMcpRuntime> {
    adk_computer_use_testkit::child::session_on(
        &sim.runtime,
        "x11-element-changes",
        app,
        Some(WindowId::Number(id)),
    )
}

fn act(tool: &str, arguments: Value) -> ProposedAction {
    ProposedAction::new(tool, arguments, ExecutionMode::Foreground)
}

fn set(id: u64, label: &str, value: &str) -> ProposedAction {
    act(
        "set_value",
        json!({ "window_id": id, "role": "AXTextField", "label": label, "value": value }),
    )
}

/// Previews `action`, applies `change` to the form, then runs the rest of
/// the chain: refused, typed, before anything was written.
async fn refused_once_changed(
    sim: &Sim,
    form: &mut Form,
    title: &str,
    action: ProposedAction,
    change: &str,
) {
    let (id, app) = shown(sim, title).await;
    let session = session(sim, &app, id);
    let action = ProposedAction {
        arguments: {
            let mut args = action.arguments.clone();
            args["window_id"] = json!(id);
            args
        },
        ..action
    };
    let err = refused_after(sim, &session, &action, |_| form.change(change)).await;
    // Found again at execute, the field is another one or none: the
    // server's second look at its sensitivity cannot name it
    // (`sensitivity_unavailable`), or the target's tree is not the one
    // previewed (`stale_target`). Either way, refused before any effect.
    let code = err.refusal_code().unwrap_or_default();
    assert!(
        ["stale_target", "sensitivity_unavailable"].contains(&code),
        "{err}"
    );
    assert!(matches!(err, ComputerUseError::Refused { .. }), "{err:?}");
    session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_renamed_between_preview_and_execute_is_refused_and_nothing_is_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Renamed {}", std::process::id());
    let mut form = Form::start(&title, &["Name", "Email"]);
    let sim = runtime().await;
    refused_once_changed(
        &sim,
        &mut form,
        &title,
        set(0, "Email", "ada@example.org"),
        "rename Email Backup",
    )
    .await;
    assert_eq!(form.values(), "Name=|Backup=", "nothing was written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_removed_between_preview_and_execute_is_refused_and_nothing_is_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Removed {}", std::process::id());
    let mut form = Form::start(&title, &["Name", "Email"]);
    let sim = runtime().await;
    let fill = act(
        "fill_form",
        json!({ "window_id": 0, "fields": [
            { "role": "AXTextField", "label": "Name", "value": "Ada" },
            { "role": "AXTextField", "label": "Email", "value": "ada@example.org" },
        ] }),
    );
    refused_once_changed(&sim, &mut form, &title, fill, "remove Email").await;
    assert_eq!(
        form.values(),
        "Name=",
        "not even the first field was written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn fields_reordered_between_preview_and_execute_are_refused_and_nothing_is_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Reordered {}", std::process::id());
    let mut form = Form::start(&title, &["Name", "Email"]);
    let sim = runtime().await;
    refused_once_changed(
        &sim,
        &mut form,
        &title,
        set(0, "Name", "Ada"),
        "swap Name Email",
    )
    .await;
    assert_eq!(form.values(), "Email=|Name=");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_disabled_between_preview_and_execute_is_refused_and_nothing_is_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Disabled {}", std::process::id());
    let mut form = Form::start(&title, &["Name", "Email"]);
    let sim = runtime().await;
    refused_once_changed(
        &sim,
        &mut form,
        &title,
        set(0, "Name", "Ada"),
        "insensitive Name",
    )
    .await;
    assert_eq!(form.values(), "Name=|Email=");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn an_unchanged_form_is_written_after_the_same_steps() {
    // The counterpart of the refusals above: the same chain, with a change
    // that touches no field, writes the field (so the refusals are the
    // change's doing, not the steps').
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Unchanged {}", std::process::id());
    let mut form = Form::start(&title, &["Name", "Email"]);
    let sim = runtime().await;
    let (id, app) = shown(&sim, &title).await;
    let session = session(&sim, &app, id);
    let approved = adk_computer_use_testkit::child::approved(
        &sim,
        &session,
        &set(id, "Email", "ada@example.org"),
    )
    .await;
    form.change("values");
    let leased = approved.reserve().await.unwrap().lease().await.unwrap();
    let done = leased.execute().await.unwrap().verify().await.unwrap();
    assert_eq!(
        done.outcome(),
        &adk_computer_use::VerificationOutcome::Verified
    );
    session.shutdown().await;
    assert_eq!(form.values(), "Name=|Email=ada@example.org");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn two_windows_with_one_title_are_told_apart_by_their_process() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Twin {}", std::process::id());
    let mut first = Form::start(&title, &["Name"]);
    let sim = runtime().await;
    let (first_id, app) = shown(&sim, &title).await;
    // A second program shows a window with the very same title and field.
    let mut second = Form::start(&title, &["Name"]);
    let mut second_id = None;
    for _ in 0..300 {
        let listed = sim.observe_semantic(&scope(&sim)).await.unwrap();
        second_id = listed.structured["windows"].as_array().and_then(|ws| {
            ws.iter()
                .filter(|w| w["title"] == title.as_str())
                .filter_map(|w| w["windowId"].as_u64())
                .find(|id| *id != first_id)
        });
        if second_id.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let second_id = second_id.expect("the second window appeared");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let session = session(&sim, &app, second_id);
    let done = run_approving(&sim, &session, set(second_id, "Name", "second")).await;
    assert_eq!(
        done.outcome(),
        &adk_computer_use::VerificationOutcome::Verified
    );
    session.shutdown().await;
    assert_eq!(second.values(), "Name=second");
    assert_eq!(
        first.values(),
        "Name=",
        "the other window's twin is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_field_deep_in_a_ten_thousand_node_window_is_found_once_and_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Large {}", std::process::id());
    let mut form = Form::start(&title, &["Name"]);
    // 5,000 rows of a label and an entry in one grid: 10,008 nodes, one
    // parent of 10,000 children (a layout search per pair of them, or a
    // walk bounded by the 10 s of one bus operation, left the field
    // unfound or the tree unread).
    form.change("rows 5000");
    let sim = runtime().await;
    let (id, app, tree) = accessible_window(&sim, &title, 10_000).await;
    // What a model is shown is cut at 500 nodes, and says so; the tree the
    // server resolves in is whole.
    assert_eq!(
        tree["elementTreeTruncated"], true,
        "10,008 nodes pass the 500 shown"
    );
    assert!(
        tree["elementTreeNodes"]
            .as_u64()
            .is_some_and(|n| n > 10_000),
        "{}",
        tree["elementTreeNodes"]
    );
    let session = session(&sim, &app, id);
    let done = match session.run(set(id, "Row 4321", "Ada")).await.unwrap() {
        ChainOutcome::Completed(done) => done,
        ChainOutcome::NeedsApproval(pending) => {
            host_approves(&sim, pending).await.complete().await.unwrap()
        }
        ChainOutcome::Blocked(blocked) => {
            panic!("a field of a large form was blocked: {}", blocked.blocker())
        }
    };
    assert_eq!(
        done.outcome(),
        &adk_computer_use::VerificationOutcome::Verified
    );
    session.shutdown().await;
    let values = form.values();
    assert!(
        values.contains("|Row 4321=Ada|"),
        "the field of row 4321 was written"
    );
    assert_eq!(
        values.matches("=Ada").count(),
        1,
        "no other field was written"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_value_the_application_rewrites_is_not_verified() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Rewrites {}", std::process::id());
    let mut form = Form::start(&title, &["Code:upper"]);
    let sim = runtime().await;
    let (id, app) = shown(&sim, &title).await;
    let session = session(&sim, &app, id);
    let outcome = match session.run(set(id, "Code", "abc-123")).await {
        Ok(ChainOutcome::NeedsApproval(pending)) => {
            host_approves(&sim, pending).await.complete().await
        }
        Ok(ChainOutcome::Completed(done)) => Ok(done),
        Ok(ChainOutcome::Blocked(blocked)) => panic!("blocked: {}", blocked.blocker()),
        Err(err) => Err(err),
    };
    // The server read back "ABC-123", not what was asked: its check fails,
    // and the action's outcome is unknown, never verified.
    match outcome {
        Err(ComputerUseError::OutcomeUnknown { cause, .. }) => {
            assert_eq!(cause.refusal_code(), Some("indeterminate"), "{cause}");
        }
        Err(other) => panic!("expected an unknown outcome, got {other}"),
        Ok(done) => panic!("a rewritten value ended {}", done.outcome()),
    }
    session.shutdown().await;
    assert_eq!(form.values(), "Code=ABC-123", "the application's own value");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn arguments_naming_another_window_than_the_target_are_refused_and_neither_is_written() {
    let _display = DISPLAY_LOCK.lock().await;
    let (first_title, second_title) = (
        format!("Shown {}", std::process::id()),
        format!("Written {}", std::process::id()),
    );
    let mut shown_form = Form::start(&first_title, &["Name"]);
    let mut other_form = Form::start(&second_title, &["Name"]);
    let sim = runtime().await;
    let (first, app) = shown(&sim, &first_title).await;
    let (second, _) = shown(&sim, &second_title).await;
    // The target (what a person approves) is the first window; the
    // arguments name the second.
    let session = session(&sim, &app, first);
    let outcome = session.run(set(second, "Name", "misdirected")).await;
    let err = match outcome {
        Ok(ChainOutcome::NeedsApproval(pending)) => host_approves(&sim, pending)
            .await
            .complete()
            .await
            .expect_err("refused at execute"),
        Ok(ChainOutcome::Completed(done)) => {
            panic!("a misdirected write went through: {}", done.outcome())
        }
        Ok(ChainOutcome::Blocked(blocked)) => panic!("blocked, not refused: {}", blocked.blocker()),
        Err(err) => err,
    };
    // The chain refuses it before any preview; a caller that skips the
    // chain meets the server's own check, before anything is sent.
    assert!(
        matches!(
            err,
            ComputerUseError::InvalidField {
                field: "arguments",
                ..
            }
        ),
        "{err:?}"
    );
    session.shutdown().await;
    use computer_use_server::DesktopBackend;
    let desktop = computer_use_server::desktop::x11::X11Desktop::connect().unwrap();
    let target = direct_target(&app, first);
    let args = json!({ "window_id": second, "role": "AXTextField", "label": "Name", "value": "misdirected" });
    let refused = desktop
        .prepare("set_value", &args, Some(&target))
        .unwrap_err();
    assert_eq!(refused.code, "invalid_arguments", "{}", refused.message);
    let same = json!({ "window_id": first, "role": "AXTextField", "label": "Name", "value": "x" });
    assert!(
        desktop.prepare("set_value", &same, Some(&target)).is_ok(),
        "its own window passes"
    );
    assert_eq!(shown_form.values(), "Name=");
    assert_eq!(other_form.values(), "Name=");
}

/// Target evidence naming `window` of `app`, for the desktop's own checks
/// called directly (as a caller that skips the chain reaches them).
fn direct_target(app: &str, window: u64) -> adk_computer_use::contracts::TargetEvidence {
    adk_computer_use::contracts::TargetEvidence {
        platform: "linux".into(),
        app_id: app.to_owned(),
        pid: None,
        window_id: Some(WindowId::Number(window)),
        window_title_digest: None,
        display_id: None,
        role: None,
        label_digest: None,
        bounds: None,
        observation_id: "direct".into(),
        screenshot_hash: None,
        ui_tree_revision: None,
        confidence: 1.0,
        captured_at: "2026-12-01T00:00:00Z".into(),
    }
}

/// Runs `action` to its end, the host approving where the policy asks: the
/// completed action, or the refusal.
async fn ended(
    sim: &Sim,
    session: &Session<ComputerUseMcpRuntime>,
    action: ProposedAction,
) -> Result<adk_computer_use::chain::Verified, ComputerUseError> {
    match session.run(action).await? {
        ChainOutcome::Completed(done) => Ok(done),
        ChainOutcome::NeedsApproval(pending) => host_approves(sim, pending).await.complete().await,
        ChainOutcome::Blocked(blocked) => panic!("blocked: {}", blocked.blocker()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display, accessibility)]
async fn a_menu_item_is_chosen_by_its_path_through_the_menu_bar_and_a_disabled_one_is_refused() {
    let _display = DISPLAY_LOCK.lock().await;
    let title = format!("Menus {}", std::process::id());
    let form = Form::start(&title, &["@menus", "Name"]);
    let sim = runtime().await;
    let (id, app) = shown(&sim, &title).await;
    let session = session(&sim, &app, id);
    let choose = |menu: &str, submenu: Option<&str>, item: &str| {
        let mut args = json!({ "bundle_id": app, "menu": menu, "item": item });
        if let Some(submenu) = submenu {
            args["submenu"] = json!(submenu);
        }
        act("select_menu_item", args)
    };
    // The application says which item it ran: the outside check.
    let done = ended(&sim, &session, choose("File", None, "Save"))
        .await
        .unwrap();
    assert!(done.performed());
    assert_eq!(
        form.chosen(Duration::from_secs(10)).as_deref(),
        Some("File>Save")
    );
    let done = ended(&sim, &session, choose("File", Some("Recent"), "Report"))
        .await
        .unwrap();
    assert!(done.performed());
    assert_eq!(
        form.chosen(Duration::from_secs(10)).as_deref(),
        Some("File>Recent>Report")
    );
    // Refused before anything is chosen: a disabled item, an item that is
    // not in that menu (Clear is in Edit), another application's name.
    let disabled = ended(&sim, &session, choose("File", None, "Save as"))
        .await
        .unwrap_err();
    assert_refused(&disabled, "element_not_actionable");
    let elsewhere = ended(&sim, &session, choose("File", None, "Clear"))
        .await
        .unwrap_err();
    assert_refused(&elsewhere, "element_not_found");
    let mut other = choose("Edit", None, "Clear");
    other.arguments["bundle_id"] = json!("SomeOtherApp");
    // The chain refuses another application's name before the preview; a
    // caller that skips the chain meets the server's own check.
    let refused = ended(&sim, &session, other.clone()).await.unwrap_err();
    assert!(
        matches!(
            refused,
            ComputerUseError::InvalidField {
                field: "arguments",
                ..
            }
        ),
        "{refused:?}"
    );
    use computer_use_server::DesktopBackend;
    let desktop = computer_use_server::desktop::x11::X11Desktop::connect().unwrap();
    let direct = desktop
        .prepare(
            "select_menu_item",
            &other.arguments,
            Some(&direct_target(&app, id)),
        )
        .unwrap_err();
    assert_eq!(direct.code, "invalid_arguments", "{}", direct.message);
    assert_eq!(
        form.chosen(Duration::from_secs(2)),
        None,
        "nothing else was chosen"
    );
    session.shutdown().await;
}
