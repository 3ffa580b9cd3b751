//! After the acting call nothing may read as "not performed": a check the
//! server makes after the effect (the target revalidated once more) that
//! fails is an unknown outcome (`indeterminate`), never a before-effect
//! refusal such as `stale_target`, which the library reads as "nothing was
//! performed" and a planner would retry under a new action id, performing
//! it twice. The desktop here is the simulated one behind a wrapper that
//! plays a slow application (its effect takes longer than the evidence's
//! age limit) or a target that changes as the action lands.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use adk_computer_use::ComputerUseError;
use adk_computer_use::contracts::{ExecutionMode, TargetEvidence};
use adk_computer_use::mcp::McpRuntimeConfig;
use adk_computer_use::runtime::ProposedAction;
use adk_computer_use::{ChainOutcome, Session};
use adk_computer_use_testkit::child::{PRINCIPAL, sim_authorizer};
use computer_use_server::{
    ApplyError, CLIPBOARD_APP, CLIPBOARD_WINDOW, Config, DesktopBackend, EffectCheck, Element,
    Frame, PointerAndFocus, Refusal, Revalidation, SimulatedBackend, SimulatedDesktop,
};
use serde_json::{Value, json};

/// The simulated desktop, slow to act or changing as the action lands.
struct Hostile {
    inner: SimulatedBackend,
    /// How long the effect takes.
    slow: Duration,
    /// The target no longer matches once the effect is done.
    changes_after: bool,
}

impl Hostile {
    /// The simulated desktop as the server sees it (its trait's methods,
    /// not its own of the same names).
    fn d(&self) -> &dyn DesktopBackend {
        &self.inner
    }
}

impl DesktopBackend for Hostile {
    fn simulated(&self) -> Option<SimulatedDesktop> {
        self.d().simulated()
    }
    fn kind(&self) -> &'static str {
        self.d().kind()
    }
    fn performs(&self, tool: &str) -> bool {
        self.d().performs(tool)
    }
    fn is_current(&self, target: &TargetEvidence, round: Revalidation) -> bool {
        if round == Revalidation::AfterEffect && self.changes_after {
            return false;
        }
        self.d().is_current(target, round)
    }
    fn snapshot(&self, window: Option<u64>) -> Result<Frame, Refusal> {
        self.d().snapshot(window)
    }
    fn snapshot_fields(&self, window: Option<u64>) -> Value {
        self.d().snapshot_fields(window)
    }
    fn list_windows(&self) -> Result<Value, Refusal> {
        self.d().list_windows()
    }
    fn ui_tree(
        &self,
        app_id: Option<&str>,
        window_id: Option<u64>,
        max_depth: Option<usize>,
    ) -> Result<Value, Refusal> {
        self.d().ui_tree(app_id, window_id, max_depth)
    }
    fn elements(&self, app_id: &str, window_id: u64) -> Result<Vec<Element>, &'static str> {
        self.d().elements(app_id, window_id)
    }
    fn read_clipboard(&self) -> Result<String, Refusal> {
        self.d().read_clipboard()
    }
    fn clipboard_written(&self) -> Option<String> {
        self.d().clipboard_written()
    }
    fn apply(
        &self,
        tool: &str,
        args: &Value,
        target: Option<&TargetEvidence>,
    ) -> Result<Value, ApplyError> {
        std::thread::sleep(self.slow);
        self.d().apply(tool, args, target)
    }
    fn file_holds_now(&self, path: &str, exists: bool, content_digest: Option<&str>) -> bool {
        self.d().file_holds_now(path, exists, content_digest)
    }
    fn verify(
        &self,
        tool: &str,
        args: &Value,
        postcondition: Option<&Value>,
        target: Option<&TargetEvidence>,
    ) -> EffectCheck {
        self.d().verify(tool, args, postcondition, target)
    }
    fn capture(&self) -> PointerAndFocus {
        self.d().capture()
    }
    fn restore(&self, before: PointerAndFocus) -> Value {
        self.d().restore(before)
    }
}

/// Writes the clipboard through the chain on `desktop` (the evidence may
/// be `max_age_ms` old); the outcome, and how many times the text was
/// written.
async fn write_on(
    desktop: Hostile,
    max_age_ms: u64,
) -> (
    Result<ChainOutcome<adk_computer_use::mcp::ComputerUseMcpRuntime>, ComputerUseError>,
    Value,
) {
    let (runtime, _approver) = adk_computer_use_testkit::spawn_on(
        Config::for_principal(PRINCIPAL)
            .with_max_target_age_ms(max_age_ms)
            .with_stats(),
        Box::new(desktop),
        McpRuntimeConfig::new(PRINCIPAL),
    )
    .await
    .unwrap();
    runtime
        .start_session(Some("after the effect"), None)
        .await
        .unwrap();
    let runtime = Arc::new(runtime);
    let session = Session::builder(Arc::clone(&runtime), sim_authorizer())
        .target(
            CLIPBOARD_APP,
            Some(adk_computer_use::contracts::WindowId::Number(
                CLIPBOARD_WINDOW,
            )),
        )
        .build()
        .unwrap();
    let action = ProposedAction::new(
        "write_clipboard",
        json!({ "text": "written once" }),
        ExecutionMode::Background,
    )
    .with_action_id("after-1");
    let outcome = session.run(action).await;
    session.shutdown().await;
    let (stats, _) = runtime
        .call("sim_stats", serde_json::Map::new())
        .await
        .unwrap();
    (outcome, stats)
}

fn assert_unknown(
    outcome: &Result<ChainOutcome<adk_computer_use::mcp::ComputerUseMcpRuntime>, ComputerUseError>,
    cause: &str,
) {
    match outcome {
        Err(ComputerUseError::OutcomeUnknown {
            action_id,
            cause: why,
        }) => {
            assert_eq!(action_id, "after-1");
            assert_eq!(why.refusal_code(), Some("indeterminate"), "{why}");
            let ComputerUseError::Refused { details, .. } = &**why else {
                panic!("the server's own word is kept: {why}");
            };
            assert_eq!(
                details.as_ref().and_then(|d| d.get("cause")),
                Some(&json!(cause)),
                "the check that failed is named: {details:?}"
            );
        }
        Err(other) => panic!("a performed action must read as unknown, not as {other}"),
        Ok(_) => panic!("the failed check after the effect was not reported"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_that_changes_as_the_action_lands_is_an_unknown_outcome_not_a_refusal() {
    let (outcome, stats) = write_on(
        Hostile {
            inner: SimulatedBackend::new(SimulatedDesktop::default()),
            slow: Duration::ZERO,
            changes_after: true,
        },
        30_000,
    )
    .await;
    assert_eq!(
        stats["clipboard"], "written once",
        "the effect happened: {stats}"
    );
    assert_unknown(&outcome, "stale_target");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evidence_that_ages_past_its_limit_during_a_slow_effect_does_not_fail_the_action() {
    // The evidence may be 1.5 s old at the effect; the effect takes 2 s.
    // Its age bounds the time before the effect, not after it.
    let (outcome, stats) = write_on(
        Hostile {
            inner: SimulatedBackend::new(SimulatedDesktop::default()),
            slow: Duration::from_secs(2),
            changes_after: false,
        },
        1_500,
    )
    .await;
    assert_eq!(stats["clipboard"], "written once", "{stats}");
    match outcome {
        Ok(ChainOutcome::Completed(done)) => assert!(done.performed()),
        Ok(_) => panic!("the write was not completed"),
        Err(err) => panic!("a slow effect on fresh evidence is not a failure: {err}"),
    }
}
