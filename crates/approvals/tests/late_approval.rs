//! An approval that waits for the person: decided after the target
//! evidence is older than the server accepts at execution, through the
//! command and through the page, with real waits. The server is started
//! with `--max-target-age-ms 2000` so the wait is seconds, not upstream's
//! 30 s; everything else is as a person would meet it (the server and the
//! approver as their own processes, the agent resuming on the signed
//! decision).
//!
//! - Told the server's limit, the approver looks at the target again,
//!   previews the same action on fresh evidence and asks the grant for that
//!   preview; the agent previews on exactly that evidence and the write
//!   lands once.
//! - An approval on aged evidence is refused by the agent before anything
//!   is consumed, and the same checkpoint is approved fine afterwards.
//! - On a real X11 window whose title changed meanwhile, the approval does
//!   not carry over: refused, nothing recorded, and the person can still
//!   decide.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::*;

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::chain::{
    CheckpointId, CheckpointRefusal, Decision, FileCheckpointStore, SealingKey, decision_of,
    inspect,
};
use adk_computer_use_testkit::browser::browser;
use adk_computer_use_testkit::needs;
use computer_use_server::CLIPBOARD_APP;

/// The server's limit on the age of evidence, as these tests start it.
const AGE_MS: &str = "2000";
const AGE: Duration = Duration::from_millis(2_000);
/// A wait longer than that limit, as a person who takes their time.
const PAST_AGE: Duration = Duration::from_millis(2_600);

fn store_in(dir: &tempfile::TempDir) -> Arc<FileCheckpointStore> {
    Arc::new(
        FileCheckpointStore::new(
            dir.path(),
            SealingKey::new(KEY.as_bytes().to_vec()).unwrap(),
        )
        .unwrap(),
    )
}

/// `computer-use-approvals approve ID --server ADDR`, as a person would run
/// it, with `envs` besides the keys; its exit status and what it printed.
async fn approve_by_command(
    dir: &tempfile::TempDir,
    sim: &Served,
    id: &CheckpointId,
    envs: &[(&str, &str)],
) -> (bool, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_computer-use-approvals"))
        .args([
            "approve",
            id.as_str(),
            "--store",
            dir.path().to_str().unwrap(),
            "--server",
            &sim.address,
        ])
        .env("ADK_CHECKPOINT_KEY", KEY)
        .env("ADK_APPROVER_KEY", APPROVER_KEY)
        .env("ADK_APPROVER_CREDENTIAL", &sim.approver)
        .envs(envs.iter().copied())
        .output()
        .await
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// The simulator with evidence aging in 2 s, an agent session told so,
/// over a file store.
struct Aging {
    sim: Served,
    dir: tempfile::TempDir,
    store: Arc<FileCheckpointStore>,
    runtime: Arc<adk_computer_use::ComputerUseMcpRuntime>,
    session: adk_computer_use::Session<adk_computer_use::ComputerUseMcpRuntime>,
}

async fn aging() -> Aging {
    let sim = served_with(false, &["--max-target-age-ms", AGE_MS]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (runtime, session) = agent_with(&sim, &store, CLIPBOARD_APP, None, Some(AGE)).await;
    Aging {
        sim,
        dir,
        store,
        runtime,
        session,
    }
}

fn long_lived(action: adk_computer_use::ProposedAction) -> adk_computer_use::ProposedAction {
    action.with_expires_in_ms(300_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_given_after_the_evidence_aged_runs_through_the_command() {
    let Aging {
        sim,
        dir,
        store,
        runtime,
        session,
    } = aging().await;
    let id = suspended(
        &session,
        long_lived(write("late-by-command", "approved after the evidence aged")),
    )
    .await;
    let sealed = inspect(store.as_ref(), &id).unwrap();
    // The person takes longer than the server accepts evidence.
    tokio::time::sleep(PAST_AGE).await;
    let (approved, said) =
        approve_by_command(&dir, &sim, &id, &[("ADK_MAX_TARGET_AGE_MS", AGE_MS)]).await;
    assert!(approved, "the command approves: {said}");
    let Some(Decision::Approve(approval)) = decision_of(store.as_ref(), &id, &public()).unwrap()
    else {
        panic!("an approval is recorded");
    };
    let fresh = approval
        .fresh_target()
        .expect("the approver took fresh evidence");
    let was = inspect(store.as_ref(), &id).unwrap();
    assert_eq!(fresh.app_id, CLIPBOARD_APP);
    assert_eq!(Some(&fresh.app_id), was.target_app_id.as_ref());
    assert_ne!(
        approval.action_digest(),
        sealed.action_digest,
        "the grant names the preview on fresh evidence"
    );
    assert_eq!(approval.policy_digest(), sealed.policy_digest);
    let done = session
        .resume_decided(&id, &public())
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["clipboard"], "approved after the evidence aged");
    assert_eq!(stats["totalEffects"], 1);
    let _ = session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_on_aged_evidence_is_refused_before_anything_is_consumed() {
    let Aging {
        sim,
        dir,
        store,
        runtime,
        session,
    } = aging().await;
    let id = suspended(
        &session,
        long_lived(write("late-unrefreshed", "written on the second try")),
    )
    .await;
    // An approver that is not told the server's limit (30 s assumed): the
    // evidence is too young for it to look again, so the grant is for the
    // sealed evidence, which the server no longer accepts.
    let (approved, said) = approve_by_command(&dir, &sim, &id, &[]).await;
    assert!(approved, "{said}");
    tokio::time::sleep(PAST_AGE).await;
    match session.resume_decided(&id, &public()).await {
        Err(err) => assert!(
            matches!(
                err.checkpoint_refusal(),
                Some(CheckpointRefusal::EvidenceAged {
                    limit_ms: 2_000,
                    ..
                })
            ),
            "expected EvidenceAged, got {err}"
        ),
        Ok(_) => panic!("an approval of evidence the server refuses went on"),
    }
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["totalEffects"], 0, "nothing was written");
    // Nothing was consumed: the checkpoint and its decision are still there.
    let view = inspect(store.as_ref(), &id).unwrap();
    assert!(view.decided, "the decision is kept");
    assert!(
        decision_of(store.as_ref(), &id, &public())
            .unwrap()
            .is_some()
    );
    let _ = session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(browser)]
async fn an_approval_given_on_the_page_after_the_evidence_aged_runs() {
    let Aging {
        sim,
        dir,
        runtime,
        session,
        ..
    } = aging().await;
    let id = suspended(
        &session,
        long_lived(write("late-on-page", "approved on the page, later")),
    )
    .await;
    let (mut page, sign_in) = page_with(
        dir.path().to_str().unwrap(),
        &sim,
        &[("ADK_MAX_TARGET_AGE_MS", AGE_MS)],
    )
    .await;
    let (browser, _driver, _profile) = browser().await;
    tokio::time::sleep(PAST_AGE).await;
    browser.goto(&sign_in).await;
    let card = browser
        .find(&format!("#c-{id}"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // The time the page shows is the approval's own (five minutes), and
    // approving past the evidence's age within it works.
    let left: u64 = card
        .split(" s left")
        .next()
        .and_then(|before| before.rsplit(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_else(|| panic!("the card shows the time left: {card}"));
    assert!(left > 250, "{left} s left: {card}");
    // The page confirms the action the person approved by the id its card
    // showed, not by the checkpoint's id alone.
    click(&browser, &format!("#approve-{id}")).await;
    confirmed(&browser, "approved action late-on-page").await;
    let done = session
        .resume_decided(&id, &public())
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let (stats, _) = runtime.call("sim_stats", Default::default()).await.unwrap();
    assert_eq!(stats["clipboard"], "approved on the page, later");
    assert_eq!(stats["totalEffects"], 1);
    browser.close().await;
    let _ = session.shutdown().await;
    let _ = page.kill().await;
}

/// On a real X11 window: while the person took their time, the window's
/// title changed. The approval does not carry over to a window that is no
/// longer the one shown: the command refuses it and records nothing. Once
/// the title is back, the same checkpoint is approved and the write lands
/// on the real clipboard.
#[cfg(feature = "x11")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(display)]
async fn on_a_real_window_whose_title_changed_the_approval_does_not_carry_over() {
    use adk_computer_use::contracts::WindowId;
    let title = format!("late approval {}", std::process::id());
    let _window = spawn("xterm", &["-T", &title, "-e", "sleep", "600"], &[]);
    let window = window_named(&title).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let sim = served_with(true, &["--max-target-age-ms", AGE_MS]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(&dir);
    let (_runtime, session) = agent_with(
        &sim,
        &store,
        "XTerm",
        Some(WindowId::Number(window)),
        Some(AGE),
    )
    .await;
    let text = format!("approved for {title}");
    let id = suspended(&session, long_lived(write("late-x11", &text))).await;
    let rename = |name: String| async move {
        let status = tokio::process::Command::new("xdotool")
            .args(["set_window", "--name", &name, &window.to_string()])
            .status()
            .await
            .unwrap();
        assert!(status.success());
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    tokio::time::sleep(PAST_AGE).await;
    rename(format!("{title} (another document)")).await;
    let (approved, said) =
        approve_by_command(&dir, &sim, &id, &[("ADK_MAX_TARGET_AGE_MS", AGE_MS)]).await;
    assert!(!approved, "an approval of a changed window: {said}");
    assert!(said.contains("target changed"), "{said}");
    assert!(said.contains("windowTitleDigest"), "{said}");
    assert!(
        !inspect(store.as_ref(), &id).unwrap().decided,
        "nothing was recorded: the person is asked again"
    );
    // The window is what it was: the same checkpoint is approved, on fresh
    // evidence, and the write lands on the real clipboard.
    rename(title.clone()).await;
    let (approved, said) =
        approve_by_command(&dir, &sim, &id, &[("ADK_MAX_TARGET_AGE_MS", AGE_MS)]).await;
    assert!(approved, "{said}");
    let done = session
        .resume_decided(&id, &public())
        .await
        .unwrap()
        .complete()
        .await
        .unwrap();
    assert!(done.performed());
    let read = tokio::process::Command::new("xclip")
        .args(["-o", "-selection", "clipboard"])
        .output()
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&read.stdout), text);
    let _ = session.shutdown().await;
}
