//! Target evidence comes from what was observed, and it is what the server
//! revalidates at execution time: evidence derived from an observation
//! passes the server's check while the window is unchanged, and fails it
//! once the window drifted. A target the observation does not show is
//! refused before the runtime is asked anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::ChainOutcome;
use adk_computer_use::contracts::*;
use adk_computer_use::digest::{sha256_hex, sha256_prefixed};
use adk_computer_use::runtime::{ImageContent, Observation, Observations, ProposedAction};
use adk_computer_use_testkit::child::*;
use computer_use_server::{CLIPBOARD_APP, CLIPBOARD_WINDOW, Config, SimulatedDesktop, State};
use serde_json::{Value, json};

const NOW: &str = "2026-11-30T08:00:00Z";

fn rounds(semantic: Value, visual: Value, images: Vec<ImageContent>) -> Observations {
    Observations {
        capabilities: vec![],
        visual: Observation {
            observation_id: Some("visual-1".into()),
            structured: visual,
            images,
            captured_at: None,
        },
        semantic: Observation {
            observation_id: Some("semantic-1".into()),
            structured: semantic,
            images: vec![],
            captured_at: Some("2026-11-30T07:59:59Z".into()),
        },
    }
}

#[test]
fn evidence_is_taken_from_the_window_record_with_upstreams_digests() {
    let observed = rounds(
        json!({ "windows": [
            { "windowId": 3, "bundleId": "com.other", "pid": 1, "title": "Other" },
            { "windowId": 3, "bundleId": "com.app", "pid": 77, "title": "Report",
              "bounds": { "x": 10, "y": 20, "width": 300, "height": 200 }, "displayId": 2 },
        ] }),
        json!({}),
        vec![ImageContent {
            // "png!" in base64: the digest is of the bytes, not of the text.
            data: "cG5nIQ==".into(),
            mime_type: "image/png".into(),
        }],
    );
    let evidence = observed
        .target_evidence("com.app", Some(&WindowId::Number(3)), NOW)
        .unwrap();
    assert_eq!(evidence.app_id, "com.app");
    assert_eq!(
        evidence.pid,
        Some(77),
        "the record of com.app, not com.other"
    );
    assert_eq!(evidence.window_id, Some(WindowId::Number(3)));
    assert_eq!(
        evidence.window_title_digest.as_deref(),
        Some(sha256_hex("Report").as_str()),
        "upstream's title digest is bare hex"
    );
    assert_eq!(evidence.display_id.as_deref(), Some("2"));
    assert_eq!(
        evidence.bounds,
        Some(Bounds {
            x: 10.0,
            y: 20.0,
            width: 300.0,
            height: 200.0
        })
    );
    assert_eq!(
        evidence.screenshot_hash.as_deref(),
        Some(sha256_prefixed(b"png!").as_str()),
        "upstream's frame digest is sha256: + hex of the image bytes"
    );
    assert_eq!(evidence.observation_id, "semantic-1");
    assert_eq!(evidence.captured_at, "2026-11-30T07:59:59Z");
    assert_eq!(evidence.ui_tree_revision, None, "a window list states none");
}

#[test]
fn a_target_the_observation_does_not_show_is_refused() {
    let observed = rounds(
        json!({ "windows": [{ "windowId": 3, "bundleId": "com.app", "title": "Report" }] }),
        json!({}),
        vec![],
    );
    for (app, window) in [
        ("com.app", Some(4)),
        ("com.gone", None),
        ("com.gone", Some(3)),
    ] {
        let err = observed
            .target_evidence(app, window.map(WindowId::Number).as_ref(), NOW)
            .unwrap_err();
        assert!(
            matches!(err, ComputerUseError::TargetNotObserved { .. }),
            "{app} {window:?}: {err}"
        );
    }
    // A frame with no window data at all gives nothing to derive from.
    let blind = rounds(json!({ "fake": true, "effectCount": 1 }), json!({}), vec![]);
    assert!(!blind.shows_windows());
    assert!(matches!(
        blind.target_evidence("com.app", None, NOW),
        Err(ComputerUseError::TargetNotObserved { .. })
    ));
}

/// The simulator's own observation frames, as its tools answer them.
fn sim_frames(state: &mut State, session_id: &str) -> Observations {
    let mut shadow = |tool: &str, arguments: Value| -> Observation {
        let answer = state
            .call(
                "execute_action",
                &json!({ "session_id": session_id, "action_id": format!("observe-{tool}"),
                         "tool": tool, "arguments": arguments, "mode": "shadow" }),
            )
            .unwrap();
        let structured = answer.structured["output"].clone();
        let images = answer
            .images
            .iter()
            .map(|(data, mime)| ImageContent {
                data: data.clone(),
                mime_type: mime.clone(),
            })
            .collect();
        Observation {
            observation_id: Some(format!("observe-{tool}")),
            structured,
            images,
            captured_at: None,
        }
    };
    let visual = shadow("snapshot", json!({}));
    let semantic = shadow(
        "get_ui_tree",
        json!({ "app_id": CLIPBOARD_APP, "window_id": CLIPBOARD_WINDOW }),
    );
    Observations {
        capabilities: vec![],
        visual,
        semantic,
    }
}

#[test]
fn derived_evidence_passes_the_servers_revalidation_until_the_window_drifts() {
    let mut state = State::new(Config::default());
    let started = state
        .call("start_session", &json!({ "objective": "target" }))
        .unwrap();
    let session_id = started.structured["session"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let observed = sim_frames(&mut state, &session_id);
    let window = WindowId::Number(CLIPBOARD_WINDOW);
    let evidence = observed
        .target_evidence(CLIPBOARD_APP, Some(&window), NOW)
        .unwrap();
    for (field, present) in [
        ("pid", evidence.pid.is_some()),
        ("windowTitleDigest", evidence.window_title_digest.is_some()),
        ("displayId", evidence.display_id.is_some()),
        ("bounds", evidence.bounds.is_some()),
        ("screenshotHash", evidence.screenshot_hash.is_some()),
        ("uiTreeRevision", evidence.ui_tree_revision.is_some()),
    ] {
        assert!(present, "{field} is derived from the simulator's frames");
    }
    let mut desktop: SimulatedDesktop = state.desktop().expect("the simulated desktop");
    assert!(desktop.is_current(&evidence), "unchanged window: current");
    // Each field the evidence states is compared: a wrong one is stale.
    let mut wrong_pid = evidence.clone();
    wrong_pid.pid = evidence.pid.map(|pid| pid + 1);
    assert!(!desktop.is_current(&wrong_pid));
    let mut wrong_shot = evidence.clone();
    wrong_shot.screenshot_hash = Some(sha256_prefixed("another screen"));
    assert!(!desktop.is_current(&wrong_shot));
    assert!(desktop.drift_window(CLIPBOARD_APP, Some(&window)));
    assert!(
        !desktop.is_current(&evidence),
        "after the window drifted, the old evidence is stale"
    );
    let fresh = sim_frames_after(&desktop, &evidence);
    assert!(
        desktop.is_current(&fresh),
        "re-observing gives current evidence"
    );
}

/// Evidence re-derived from a drifted desktop's own window record.
fn sim_frames_after(desktop: &SimulatedDesktop, before: &TargetEvidence) -> TargetEvidence {
    let observed = rounds(
        desktop.list_windows(),
        json!({ "screenshotHash": desktop.screenshot_hash() }),
        vec![],
    );
    let mut evidence = observed
        .target_evidence(&before.app_id, before.window_id.as_ref(), NOW)
        .unwrap();
    let window = desktop
        .window(&before.app_id, before.window_id.as_ref())
        .unwrap();
    evidence.ui_tree_revision = Some(window.tree_label());
    evidence
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_run_uses_what_it_observed_and_the_server_accepts_it() {
    let runtime = spawn_sim(&[]).await;
    let session = session(&runtime, "observer");
    // No evidence given: the chain derives it from the round it observed.
    let mut action = write_clipboard("observed-target-1", "from observation", true);
    action.target = None;
    let previewed = session
        .observe()
        .await
        .unwrap()
        .preview(&action)
        .await
        .unwrap();
    let target = previewed
        .preview()
        .envelope
        .target
        .clone()
        .expect("derived");
    assert_eq!(
        target.pid,
        Some(4101),
        "the clipboard viewer's pid, as observed"
    );
    assert_eq!(target.window_title_digest, Some(sha256_hex("Clipboard")));
    assert!(target.screenshot_hash.is_some() && target.ui_tree_revision.is_some());
    let done = match previewed.route() {
        adk_computer_use::chain::Route::Allowed(approved) => approved.complete().await.unwrap(),
        _ => panic!("the simulator allows a public clipboard write"),
    };
    assert!(
        done.performed() && done.outcome().is_verified(),
        "{:?}",
        done.outcome()
    );
    // And Session::run does the same.
    let mut again = write_clipboard("observed-target-1b", "again", true);
    again.target = None;
    assert!(
        matches!(session.run(again).await.unwrap(), ChainOutcome::Completed(d) if d.outcome().is_verified())
    );
    let events = runtime
        .call(
            "get_session_events",
            serde_json::Map::from_iter([("session_id".into(), json!(session.session_id()))]),
        )
        .await
        .unwrap()
        .0;
    let previewed = events["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["actionId"] == "observed-target-1" && e["type"] == "action.committed");
    assert!(previewed, "the server committed the action: {events}");
    session.shutdown().await;
    runtime.shutdown().await.unwrap();
}

fn session_for(
    runtime: &std::sync::Arc<adk_computer_use::mcp::ComputerUseMcpRuntime>,
    app: &str,
) -> adk_computer_use::chain::Session<adk_computer_use::mcp::ComputerUseMcpRuntime> {
    let identity = adk_computer_use::auth::VerifiedIdentity::new(PRINCIPAL, "tenant-e2e").unwrap();
    let authorizer = adk_computer_use::auth::ScopeAuthorizer::new(
        identity,
        ["computer:plan", "computer:execute:background"],
    )
    .unwrap();
    adk_computer_use::chain::Session::builder(std::sync::Arc::clone(runtime), authorizer)
        .agent_id("observer")
        .target(app, None)
        .build()
        .unwrap()
}

async fn previewed_on_server(
    runtime: &adk_computer_use::mcp::ComputerUseMcpRuntime,
    action_id: &str,
) -> bool {
    let events = runtime
        .call(
            "get_session_events",
            serde_json::Map::from_iter([(
                "session_id".into(),
                json!(runtime.session_id().unwrap()),
            )]),
        )
        .await
        .unwrap()
        .0;
    events["events"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["actionId"] == action_id && e["type"] == "action.previewed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_target_is_found_in_the_window_list_or_refused_before_any_call() {
    let runtime = spawn_sim(&[]).await;
    let action = |id: &str| {
        ProposedAction::new(
            "write_clipboard",
            json!({ "text": "x" }),
            ExecutionMode::Background,
        )
        .with_action_id(id)
        .with_data_labels([DataLabel::Public])
    };
    // A target the desktop lacks: refused before the runtime previews it.
    let missing = session_for(&runtime, "com.example.Missing");
    let err = missing
        .observe()
        .await
        .unwrap()
        .preview(&action("observed-target-missing"))
        .await
        .err()
        .expect("no evidence for a window nobody observed");
    assert!(
        matches!(err, ComputerUseError::TargetNotObserved { .. }),
        "{err}"
    );
    assert!(!previewed_on_server(&runtime, "observed-target-missing").await);
    missing.shutdown().await;
    // A session aimed at an app (no window named) observes the window list
    // and takes the app's first window from it.
    let notes = session_for(&runtime, "com.example.Notes");
    let previewed = notes
        .observe()
        .await
        .unwrap()
        .preview(&action("observed-target-notes"))
        .await
        .unwrap();
    let target = previewed.preview().envelope.target.clone().unwrap();
    assert_eq!(target.app_id, "com.example.Notes");
    assert_eq!(target.window_id, Some(WindowId::Number(7)));
    assert_eq!(target.window_title_digest, Some(sha256_hex("Notes")));
    assert!(previewed_on_server(&runtime, "observed-target-notes").await);
    drop(previewed);
    notes.shutdown().await;
    runtime.shutdown().await.unwrap();
}
