//! From a hostile caller's side: one caller's many slow reads of the
//! desktop keep neither the server's state nor another caller's reads
//! waiting (see `turns`), and onboarding's semantic test reads its window
//! with the state free.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use adk_computer_use::contracts::TargetEvidence;
use serde_json::{Value, json};

use super::access::Role;
use super::backend::{ApplyError, EffectCheck, Frame, PointerAndFocus, Revalidation};
use super::{DesktopBackend, Refusal, Server, TURNS_PER_CALLER};
use crate::desktop::simulated::{Element, SimulatedBackend, SimulatedDesktop};

/// How long a step that should happen at once may take before the test
/// calls it stuck: far longer than any of them takes on a busy machine.
const STUCK: Duration = Duration::from_secs(60);

/// Who is reading the desktop now, and the gate that holds their reads.
#[derive(Default)]
struct Reads {
    /// Reads under way, by the window they read.
    under_way: Mutex<Vec<u64>>,
    /// The most reads of window 7 under way at once.
    most: AtomicUsize,
    /// Whether reads may end, and how many may end while it is shut.
    open: Mutex<(bool, usize)>,
    /// How many reads have started.
    started: AtomicUsize,
    /// Signalled when a read starts.
    changed: Condvar,
    /// Signalled when the gate opens.
    opened: Condvar,
}

impl Reads {
    fn enter(&self, window: u64) {
        self.started.fetch_add(1, Ordering::SeqCst);
        let mut under_way = self.under_way.lock().unwrap();
        under_way.push(window);
        let of_seven = under_way.iter().filter(|w| **w == 7).count();
        self.most.fetch_max(of_seven, Ordering::SeqCst);
        drop(under_way);
        self.changed.notify_all();
        let open = self.open.lock().unwrap();
        let mut open = self
            .opened
            .wait_while(open, |(open, passes)| !*open && *passes == 0)
            .unwrap();
        if !open.0 {
            open.1 -= 1;
        }
        drop(open);
        let mut under_way = self.under_way.lock().unwrap();
        if let Some(at) = under_way.iter().position(|w| *w == window) {
            under_way.remove(at);
        }
    }

    fn under_way(&self, window: u64) -> usize {
        let under_way = self.under_way.lock().unwrap();
        under_way.iter().filter(|w| **w == window).count()
    }

    /// Waits until `ready` holds of the reads under way.
    fn until(&self, ready: impl Fn(&[u64]) -> bool) {
        let under_way = self.under_way.lock().unwrap();
        let (under_way, waited) = self
            .changed
            .wait_timeout_while(under_way, STUCK, |u| !ready(u))
            .unwrap();
        drop(under_way);
        assert!(
            !waited.timed_out(),
            "the reads never reached the state asked for"
        );
    }

    fn open(&self) {
        self.open.lock().unwrap().0 = true;
        self.opened.notify_all();
    }

    fn shut(&self) {
        self.open.lock().unwrap().0 = false;
    }

    /// Lets one read end while the gate is shut.
    fn pass_one(&self) {
        self.open.lock().unwrap().1 += 1;
        self.opened.notify_all();
    }
}

/// The simulated desktop, whose element and tree reads wait at a gate the
/// test opens: an application as slow as the test wants.
struct Slow {
    inner: SimulatedBackend,
    reads: Arc<Reads>,
}

impl DesktopBackend for Slow {
    fn kind(&self) -> &'static str {
        "slow"
    }
    fn performs(&self, tool: &str) -> bool {
        self.inner.performs(tool)
    }
    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool {
        let window = match &target.window_id {
            Some(adk_computer_use::contracts::WindowId::Number(id)) => *id,
            _ => 0,
        };
        self.reads.enter(window);
        self.inner.is_current(target, round)
    }
    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal> {
        self.inner.snapshot(window)
    }
    fn snapshot_fields(&self, window: Option<u64>) -> Value {
        self.inner.snapshot_fields(window)
    }
    fn list_windows(&self) -> Result<Value, Refusal> {
        self.inner.list_windows()
    }
    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        self.reads.enter(window_id.unwrap_or(0));
        self.inner.ui_tree(app_id, window_id, max_depth)
    }
    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        self.reads.enter(window_id);
        self.inner.elements(app_id, window_id)
    }
    fn read_clipboard(&self) -> Result<String, Refusal> {
        self.inner.read_clipboard()
    }
    fn clipboard_written(&self) -> Option<String> {
        self.inner.clipboard_written()
    }
    fn apply(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        self.inner.apply(tool, args, target)
    }
    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        self.inner.file_holds_now(path, exists, content_digest)
    }
    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck {
        self.inner.verify(tool, args, postcondition, target)
    }
    fn capture(&self) -> PointerAndFocus {
        self.inner.capture()
    }
    fn restore(&self, before: PointerAndFocus) -> Value {
        self.inner.restore(before)
    }
}

/// Opens the gate when the test ends, passed or not, so no read is left
/// holding a thread the runtime waits for.
struct OpenAtEnd(Arc<Reads>);

impl Drop for OpenAtEnd {
    fn drop(&mut self) {
        self.0.open();
    }
}

fn slow_server() -> (Server, Arc<Reads>) {
    let reads = Arc::new(Reads::default());
    let desktop = Slow {
        inner: SimulatedBackend::new(SimulatedDesktop::default()),
        reads: Arc::clone(&reads),
    };
    (
        Server::on(crate::Config::default(), Box::new(desktop)),
        reads,
    )
}

/// A preview of a field written in `window`: its fields' sensitivity is
/// read on the desktop before anything else.
fn field_preview(window: u64) -> Value {
    json!({
        "session_id": "no-such-session",
        "tool": "set_value",
        "arguments": { "label": "Body", "value": "x" },
        "target": { "app_id": "com.example.Notes", "window_id": window },
    })
}

fn agent(name: &str) -> Option<Role> {
    Some(Role::Agent(name.into()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_caller_s_reads_queue_behind_its_own_turns_not_another_s() {
    let (server, reads) = slow_server();
    let _open = OpenAtEnd(Arc::clone(&reads));
    let flood = TURNS_PER_CALLER + 3;
    let mut hostile = Vec::new();
    for _ in 0..flood {
        let server = server.clone();
        hostile.push(tokio::spawn(async move {
            server
                .preview_staged(agent("hostile"), field_preview(7))
                .await
        }));
    }
    let waiting = Arc::clone(&reads);
    tokio::task::spawn_blocking(move || waiting.until(|u| u.len() >= TURNS_PER_CALLER))
        .await
        .unwrap();
    // The other agent's read starts while the hostile one's are held.
    let other = {
        let server = server.clone();
        tokio::spawn(async move {
            server
                .preview_staged(agent("other"), field_preview(8))
                .await
        })
    };
    let waiting = Arc::clone(&reads);
    tokio::task::spawn_blocking(move || waiting.until(|u| u.contains(&8)))
        .await
        .unwrap();
    assert_eq!(
        reads.under_way(7),
        TURNS_PER_CALLER,
        "the hostile agent had more reads under way than its turns"
    );
    // The state is free too: a call that only needs it is answered.
    let answered = tokio::time::timeout(
        STUCK,
        server.answer("get_session", json!({ "session_id": "s" })),
    )
    .await
    .expect("the state was held while the desktop was read");
    assert_eq!(answered.is_error, Some(true), "{answered:?}");
    reads.open();
    for call in hostile {
        // No session of that id: each preview is refused, after its read.
        assert!(call.await.unwrap().is_err());
    }
    assert!(other.await.unwrap().is_err());
    assert_eq!(
        reads.most.load(Ordering::SeqCst),
        TURNS_PER_CALLER,
        "one caller's reads of the desktop were not bounded by its turns"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn onboarding_s_semantic_test_reads_with_the_state_free() {
    let (server, reads) = slow_server();
    let _open = OpenAtEnd(Arc::clone(&reads));
    let started = server
        .answer("onboarding", json!({ "action": "start" }))
        .await;
    let run = started.structured_content.unwrap()["onboarding"]["onboardingId"]
        .as_str()
        .unwrap()
        .to_owned();
    let tested = {
        let server = server.clone();
        let run = run.clone();
        tokio::spawn(async move {
            server
                .answer(
                    "onboarding",
                    json!({ "action": "test_semantic", "onboarding_id": run, "window_id": 7 }),
                )
                .await
        })
    };
    let waiting = Arc::clone(&reads);
    tokio::task::spawn_blocking(move || waiting.until(|u| u.contains(&7)))
        .await
        .unwrap();
    // While the window's tree is being read, another call that needs the
    // state is answered.
    let status = tokio::time::timeout(
        STUCK,
        server.answer(
            "onboarding",
            json!({ "action": "status", "onboarding_id": run }),
        ),
    )
    .await
    .expect("the state was held while onboarding read a window's tree");
    assert_ne!(status.is_error, Some(true), "{status:?}");
    reads.open();
    let tested = tested.await.unwrap().structured_content.unwrap();
    assert_eq!(
        tested["onboarding"]["checks"]["semantic"],
        json!({ "tested": true, "passed": true, "windowId": 7 }),
        "{tested}"
    );
}

/// A clipboard write on the simulated desktop's clipboard window, with
/// target evidence of it as the simulator shows it.
fn clipboard_write(session: &Value, action: &str) -> Value {
    use sha2::Digest;
    let desktop = SimulatedDesktop::default();
    let title = sha2::Sha256::digest(b"Clipboard")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    json!({
        "session_id": session, "action_id": action, "tool": "write_clipboard",
        "arguments": { "text": action }, "mode": "background", "agent_id": "agent-a",
        "data_labels": ["public"],
        "target": {
            "platform": "linux", "app_id": crate::desktop::simulated::CLIPBOARD_APP,
            "window_id": crate::desktop::simulated::CLIPBOARD_WINDOW,
            "observation_id": "turns-observation", "confidence": 1,
            "captured_at": super::wire::stamp(super::wire::now()),
            "pid": 4101, "window_title_digest": title, "display_id": "1",
            "screenshot_hash": desktop.screenshot_hash(),
            "ui_tree_revision": format!("tree-{}-1", crate::desktop::simulated::CLIPBOARD_WINDOW),
        },
    })
}

/// An emergency stop waits for the effect under way, not for the checks
/// of the mutations queued behind it: one whose lease the stop ended is
/// refused at its turn without reading the desktop. Before, each queued
/// mutation read the (slow) desktop before its lease was found spent, and
/// the stop's answer waited for all of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emergency_stop_is_not_held_up_by_mutations_queued_behind_an_effect() {
    let (server, reads) = slow_server();
    let _open = OpenAtEnd(Arc::clone(&reads));
    reads.open();
    let started = server
        .answer("start_session", json!({ "objective": "turns" }))
        .await
        .structured_content
        .unwrap();
    let session = started["session"]["sessionId"].clone();
    let (first, second) = (
        clipboard_write(&session, "first"),
        clipboard_write(&session, "second"),
    );
    for action in [&first, &second] {
        let previewed = server.answer("preview_action", action.clone()).await;
        assert_ne!(previewed.is_error, Some(true), "{previewed:?}");
    }
    let lease = server
        .answer(
            "acquire_control_lease",
            json!({ "session_id": session, "kind": "cooperative", "mode": "background",
                    "ttl_ms": 30000, "action_budget": 4, "agent_id": "agent-a",
                    "app_ids": [crate::desktop::simulated::CLIPBOARD_APP],
                    "window_ids": [crate::desktop::simulated::CLIPBOARD_WINDOW] }),
        )
        .await
        .structured_content
        .unwrap();
    let lease_id = lease["lease"]["leaseId"].clone();
    assert!(lease_id.is_string(), "{lease}");
    reads.shut();
    let execute = |mut action: Value| {
        action["lease_id"] = lease_id.clone();
        let server = server.clone();
        tokio::spawn(async move { server.answer("execute_action", action).await })
    };
    // The first write is under way: held in its checks, at the gate.
    let first = execute(first);
    let waiting = Arc::clone(&reads);
    tokio::task::spawn_blocking(move || waiting.until(|u| !u.is_empty()))
        .await
        .unwrap();
    // The second queues behind it; then the person presses stop.
    let second = execute(second);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stop = {
        let server = server.clone();
        tokio::spawn(async move {
            server
                .answer(
                    "emergency_stop",
                    json!({ "reason": "the person pressed stop" }),
                )
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The first write's checks end, one read at a time, until it is
    // answered (refused: the stop ended its lease before the crossing).
    while !first.is_finished() {
        reads.pass_one();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let reads_by_first = reads.started.load(Ordering::SeqCst);
    let first = first.await.unwrap();
    assert_eq!(first.is_error, Some(true), "{first:?}");
    // The stop answers without the second write's checks: its turn came
    // after its lease ended, and it read nothing.
    let stopped = tokio::time::timeout(STUCK, stop)
        .await
        .expect("the stop waited for a queued mutation's checks")
        .unwrap();
    assert_ne!(stopped.is_error, Some(true), "{stopped:?}");
    let second = second.await.unwrap().structured_content.unwrap();
    assert_eq!(second["error"], "lease_revoked", "{second}");
    assert_eq!(
        reads.started.load(Ordering::SeqCst),
        reads_by_first,
        "the refused mutation read the desktop"
    );
}
