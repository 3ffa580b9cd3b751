//! A scriptable in-process runtime for the chain's tests: it keeps the
//! runtime-side truth (effects, active reservations, receipts by action id)
//! so tests can check what really happened, and lets a test break any call.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use adk_computer_use::ComputerUseError;
use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::{CheckpointStore, SealingKey, Session};
use adk_computer_use::clock::{Clock, ManualClock, format_rfc3339};
use adk_computer_use::contracts::*;
use adk_computer_use::runtime::*;
use adk_computer_use_testkit::answers;
use serde_json::{Value, json};
use time::Duration;
use time::macros::datetime;
use tokio::sync::Notify;

pub const SESSION: &str = "session-1";
pub const PRINCIPAL: &str = "alice";
pub const TENANT: &str = "acme";
pub const APP: &str = "com.example.Notes";
pub const WINDOW: u64 = 7;
pub const POLICY: &str = "policy-v1";

/// How the fake previews actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreviewRoute {
    Executable,
    NeedsApproval,
    Blocked(&'static str),
}

/// A runtime call a test can hold open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Call {
    Observe,
    Preview,
    Reserve,
    Lease,
    Execute,
    Verify,
    Release,
    ReleaseLease,
    TaskLease,
    Pause,
}

/// A crash injected into `execute_action`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crash {
    BeforeEffect,
    AfterCommit,
}

pub type Tweak<T> = Option<Arc<dyn Fn(&mut T) + Send + Sync>>;

#[derive(Default)]
pub struct Script {
    pub route: Option<PreviewRoute>,
    pub envelope: Tweak<ActionEnvelope>,
    pub reservation: Tweak<TargetReservation>,
    pub no_reservation: bool,
    pub lease: Tweak<ControlLease>,
    pub receipt: Tweak<ExecutionReceipt>,
    pub fail: BTreeMap<Call, ComputerUseError>,
    pub crash_once: Option<Crash>,
    pub advance_clock_on: BTreeMap<Call, Duration>,
    pub hold_after_effect: bool,
    pub delay: Option<std::time::Duration>,
    pub hold: BTreeSet<Call>,
    pub evidence: Option<Value>,
    /// Replaces the whole preview after it is built.
    pub preview: Tweak<ActionPreview>,
    /// What `preview_action` asks the chain to keep.
    pub retained: Option<Value>,
    /// What `evidence` gathers instead of the receipt's own evidence.
    pub gathered: Option<Value>,
    /// `release_target` panics.
    pub panic_on_release: bool,
    /// The postcondition the runtime offers for an effect the chain names
    /// (`effect_postcondition`); none when unset.
    pub effect_postcondition: Option<EffectCheck>,
    /// `evidence_is_recorded`: the evidence is a record made at execution.
    pub evidence_recorded: bool,
    /// What the semantic frame answers instead of `{ "kind": "semantic" }`.
    pub semantic: Option<Value>,
    /// `pause_session` is offered (else unsupported, as the trait's default).
    pub pause_offered: bool,
}

/// What a scripted runtime offers for a named effect.
pub type EffectCheck = Arc<dyn Fn(&NamedEffect<'_>) -> Option<ActionPostcondition> + Send + Sync>;

#[derive(Default)]
pub struct Truth {
    pub effects: BTreeMap<String, u32>,
    pub receipts: BTreeMap<String, ExecutionReceipt>,
    pub active_reservations: BTreeSet<String>,
    pub releases: Vec<String>,
    pub calls: Vec<Call>,
    pub grants: BTreeMap<String, String>,
    pub grant_ids_seen: Vec<Option<String>>,
    /// For each effect: was the lease it ran under valid at that moment?
    pub effects_with_valid_lease: Vec<bool>,
    /// For each `execute_action` call: was the lease valid when the chain called?
    pub executes_with_valid_lease: Vec<bool>,
    /// The action ids of the envelopes `preview_action` answered with.
    pub previews_answered: Vec<String>,
    /// The postcondition of each action `preview_action` was asked about.
    pub postconditions_previewed: Vec<Option<ActionPostcondition>>,
    pub next_id: u64,
    pub leases_granted: u64,
    pub active_leases: BTreeSet<String>,
    pub lease_releases: Vec<String>,
    /// What each `execute_action` call's proof carried as retained state.
    pub retained_seen: Vec<Option<Value>>,
    /// Task leases granted, by id: their budget, and the executions that
    /// ran under each.
    pub task_budgets: BTreeMap<String, u32>,
    pub task_uses: BTreeMap<String, u32>,
    /// Each task lease proof, as the session sent it.
    pub task_asks: Vec<Value>,
    /// The session controls received, in order (`pause:REASON`).
    pub controls: Vec<String>,
}

pub struct FakeRuntime {
    pub clock: ManualClock,
    pub script: Mutex<Script>,
    pub truth: Mutex<Truth>,
    pub gate: Notify,
    pub held: Notify,
    in_flight: AtomicUsize,
    pub max_observe_concurrency: AtomicUsize,
    /// The runtime session it acts in; a session built over it takes this.
    pub context: Mutex<SessionContext>,
    /// How many times `close` was called.
    pub closed: Arc<AtomicUsize>,
}

pub fn start() -> time::OffsetDateTime {
    datetime!(2026-07-13 10:00 UTC)
}

impl FakeRuntime {
    pub fn new(clock: ManualClock) -> Arc<Self> {
        Arc::new(Self {
            clock,
            script: Mutex::new(Script::default()),
            truth: Mutex::new(Truth::default()),
            gate: Notify::new(),
            held: Notify::new(),
            in_flight: AtomicUsize::new(0),
            max_observe_concurrency: AtomicUsize::new(0),
            closed: Arc::new(AtomicUsize::new(0)),
            context: Mutex::new(SessionContext {
                session_id: SESSION.into(),
                principal_id: PRINCIPAL.into(),
                execution_group_id: None,
            }),
        })
    }

    /// Acts in another runtime session (and group) from now on: sessions
    /// built afterwards take these.
    pub fn act_in(&self, session_id: &str, execution_group_id: Option<&str>) {
        let mut context = self.context.lock().unwrap();
        context.session_id = session_id.into();
        context.execution_group_id = execution_group_id.map(str::to_owned);
    }

    pub fn script(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap()
    }

    pub fn truth(&self) -> std::sync::MutexGuard<'_, Truth> {
        self.truth.lock().unwrap()
    }

    pub fn mutations(&self) -> u32 {
        self.truth().effects.values().sum()
    }

    pub fn count(&self, call: Call) -> usize {
        self.truth().calls.iter().filter(|c| **c == call).count()
    }

    /// The postcondition of the last action previewed.
    pub fn last_previewed_postcondition(&self) -> Option<ActionPostcondition> {
        self.truth()
            .postconditions_previewed
            .last()
            .cloned()
            .flatten()
    }

    pub fn active_reservations(&self) -> usize {
        self.truth().active_reservations.len()
    }

    /// Issues a grant for an approval-required action, as `approve_action` would.
    pub fn grant(&self, action_digest: &str) -> String {
        let mut truth = self.truth();
        truth.next_id += 1;
        let id = format!("grant-{}", truth.next_id);
        truth.grants.insert(id.clone(), action_digest.to_owned());
        id
    }

    fn now_text(&self) -> String {
        format_rfc3339(self.clock.now()).unwrap()
    }

    async fn enter(&self, call: Call) -> Result<(), ComputerUseError> {
        self.truth().calls.push(call);
        let delay = self.script().delay;
        if let Some(delay) = delay {
            tokio::time::sleep(delay).await;
        }
        let advance = self.script().advance_clock_on.get(&call).copied();
        if let Some(by) = advance {
            self.clock.advance(by);
        }
        let hold = self.script().hold.contains(&call);
        if hold {
            self.held.notify_one();
            self.gate.notified().await;
        }
        match self.script().fail.get(&call) {
            Some(err) => Err(err.clone()),
            None => Ok(()),
        }
    }

    async fn observe(&self, kind: &str) -> Result<Observation, ComputerUseError> {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.max_observe_concurrency
            .fetch_max(now, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.enter(Call::Observe).await?;
        let scripted = match kind {
            "semantic" => self.script().semantic.clone(),
            _ => None,
        };
        Ok(Observation {
            observation_id: Some(format!("{kind}-observation")),
            structured: scripted.unwrap_or_else(|| json!({ "kind": kind })),
            images: vec![],
            captured_at: None,
        })
    }
}

pub fn target() -> TargetEvidence {
    TargetEvidence {
        platform: "linux".into(),
        app_id: APP.into(),
        pid: None,
        window_id: Some(WindowId::Number(WINDOW)),
        window_title_digest: None,
        display_id: None,
        role: None,
        label_digest: None,
        bounds: None,
        observation_id: "visual-observation".into(),
        screenshot_hash: None,
        ui_tree_revision: None,
        confidence: 1.0,
        captured_at: "2026-07-13T10:00:00Z".into(),
    }
}

pub fn args_digest(request: &ActionRequest<'_>) -> String {
    answers::args_digest(request)
}

impl ComputerUseRuntime for FakeRuntime {
    fn session_context(&self) -> Option<SessionContext> {
        Some(self.context.lock().unwrap().clone())
    }

    async fn close(&self) -> Result<(), ComputerUseError> {
        self.closed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    async fn discover_capabilities(
        &self,
        _scope: &ObservationScope,
    ) -> Result<Vec<ExecutionCapability>, ComputerUseError> {
        self.observe("capabilities").await?;
        Ok(vec![])
    }

    async fn observe_visual(
        &self,
        _scope: &ObservationScope,
    ) -> Result<Observation, ComputerUseError> {
        self.observe("visual").await
    }

    async fn observe_semantic(
        &self,
        _scope: &ObservationScope,
    ) -> Result<Observation, ComputerUseError> {
        self.observe("semantic").await
    }

    async fn preview_action(
        &self,
        request: &ActionRequest<'_>,
    ) -> Result<PreviewAnswer, ComputerUseError> {
        self.enter(Call::Preview).await?;
        let route = self.script().route.unwrap_or(PreviewRoute::Executable);
        let action_id = request.action.action_id.clone().unwrap_or_else(|| {
            let mut truth = self.truth();
            truth.next_id += 1;
            format!("action-{}", truth.next_id)
        });
        let now = self.clock.now();
        let mut request_with_id = request.action.clone();
        request_with_id.action_id = Some(action_id);
        let numbered = ActionRequest {
            action: &request_with_id,
            ..request.clone()
        };
        let mut envelope = answers::envelope_for(&numbered, PRINCIPAL, now, Duration::seconds(30))?;
        if let Some(tweak) = self.script().envelope.clone() {
            tweak(&mut envelope);
        }
        let mut truth = self.truth();
        truth.previews_answered.push(envelope.action_id.clone());
        truth
            .postconditions_previewed
            .push(request.action.postcondition.clone());
        drop(truth);
        let route = match route {
            PreviewRoute::Executable => answers::PreviewRoute::Allowed,
            PreviewRoute::NeedsApproval => answers::PreviewRoute::NeedsApproval,
            PreviewRoute::Blocked(code) => answers::PreviewRoute::Blocked(code.to_owned()),
        };
        let retained = self.script().retained.clone();
        let preview = answers::preview_for(envelope, route, POLICY);
        let mut preview = preview;
        if let Some(tweak) = self.script().preview.clone() {
            tweak(&mut preview);
        }
        Ok(PreviewAnswer { preview, retained })
    }

    async fn reserve_target(
        &self,
        proof: &ReserveProof<'_>,
    ) -> Result<Option<TargetReservation>, ComputerUseError> {
        let envelope = proof.envelope();
        self.enter(Call::Reserve).await?;
        // Like the MCP adapter: nothing to reserve without a target.
        if self.script().no_reservation || envelope.target.is_none() {
            return Ok(None);
        }
        let id = {
            let mut truth = self.truth();
            truth.next_id += 1;
            let id = format!("reservation-{}", truth.next_id);
            truth.active_reservations.insert(id.clone());
            id
        };
        let mut reservation =
            answers::reservation_for(envelope, id, APP, self.clock.now(), Duration::seconds(60))?;
        if let Some(tweak) = self.script().reservation.clone() {
            tweak(&mut reservation);
        }
        Ok(Some(reservation))
    }

    async fn pause_session(&self, reason: Option<&str>) -> Result<(), ComputerUseError> {
        // Unsupported, as the trait's default, unless a test offers it.
        if !self.script().pause_offered {
            return Err(ComputerUseError::Unsupported {
                operation: "pause_session".into(),
            });
        }
        self.enter(Call::Pause).await?;
        self.truth()
            .controls
            .push(format!("pause:{}", reason.unwrap_or_default()));
        Ok(())
    }

    async fn release_target(&self, proof: &ReleaseProof<'_>) -> Result<(), ComputerUseError> {
        let reservation = proof.reservation();
        if self.script().panic_on_release {
            panic!("a hostile runtime panics in release_target");
        }
        self.enter(Call::Release).await?;
        let mut truth = self.truth();
        truth
            .active_reservations
            .remove(&reservation.reservation_id);
        truth.releases.push(reservation.reservation_id.clone());
        Ok(())
    }

    async fn acquire_lease(
        &self,
        proof: &LeaseProof<'_>,
    ) -> Result<ControlLease, ComputerUseError> {
        let envelope = proof.envelope();
        self.enter(Call::Lease).await?;
        let lease_id = {
            let mut truth = self.truth();
            truth.leases_granted += 1;
            let id = format!("lease-{}", truth.leases_granted);
            truth.active_leases.insert(id.clone());
            id
        };
        let apps: Vec<&str> = envelope.target.iter().map(|t| t.app_id.as_str()).collect();
        let mut lease = answers::lease_for(
            envelope,
            lease_id,
            &apps,
            self.clock.now(),
            Duration::seconds(60),
        )?;
        if let Some(tweak) = self.script().lease.clone() {
            tweak(&mut lease);
        }
        Ok(lease)
    }

    async fn acquire_task_lease(
        &self,
        proof: &TaskLeaseProof<'_>,
    ) -> Result<ControlLease, ComputerUseError> {
        self.truth().task_asks.push(json!({
            "sessionId": proof.session_id(),
            "agentId": proof.agent_id(),
            "mode": proof.mode(),
            "budget": proof.budget(),
            "ttlMs": proof.ttl().as_millis() as u64,
            "appId": proof.app_id(),
            "windowId": proof.window_id(),
        }));
        self.enter(Call::TaskLease).await?;
        let lease_id = {
            let mut truth = self.truth();
            truth.leases_granted += 1;
            let id = format!("task-lease-{}", truth.leases_granted);
            truth.active_leases.insert(id.clone());
            truth.task_budgets.insert(id.clone(), proof.budget());
            id
        };
        let now = self.clock.now();
        let ttl = Duration::try_from(proof.ttl()).unwrap();
        let mut lease = ControlLease {
            lease_id,
            revision: 1,
            session_id: proof.session_id().into(),
            principal_id: PRINCIPAL.into(),
            agent_id: proof.agent_id().map(str::to_owned),
            kind: if proof.mode() == ExecutionMode::Foreground {
                LeaseKind::Exclusive
            } else {
                LeaseKind::Cooperative
            },
            execution_mode: proof.mode(),
            state: LeaseState::Active,
            acquired_at: format_rfc3339(now).unwrap(),
            expires_at: format_rfc3339(now + ttl).unwrap().into(),
            action_budget: proof.budget(),
            actions_used: 0,
            boundaries: LeaseBoundaries {
                app_ids: vec![proof.app_id().into()],
                window_ids: proof.window_id().cloned().into_iter().collect(),
                display_ids: vec![],
            },
            terminal_reason: None,
        };
        if let Some(tweak) = self.script().lease.clone() {
            tweak(&mut lease);
        }
        Ok(lease)
    }

    async fn release_lease(&self, proof: &LeaseReleaseProof<'_>) -> Result<(), ComputerUseError> {
        self.enter(Call::ReleaseLease).await?;
        let mut truth = self.truth();
        truth.active_leases.remove(&proof.lease().lease_id);
        truth.lease_releases.push(proof.lease().lease_id.clone());
        Ok(())
    }

    fn evidence_is_recorded(&self) -> bool {
        self.script().evidence_recorded
    }

    fn effect_postcondition(&self, effect: &NamedEffect<'_>) -> Option<ActionPostcondition> {
        let offer = self.script().effect_postcondition.clone();
        offer.and_then(|offer| offer(effect))
    }

    async fn execute_action(
        &self,
        proof: &ExecuteProof<'_>,
    ) -> Result<ExecutionReceipt, ComputerUseError> {
        let envelope = proof.envelope();
        let _lease = proof.lease();
        let approval_grant_id = proof.grant_id();
        self.truth().retained_seen.push(proof.retained().cloned());
        // Whether the chain called with a lease that was valid when it called.
        let valid_at_call =
            adk_computer_use::binding::validate_lease_at(_lease, envelope, self.clock.now())
                .is_ok();
        self.truth().executes_with_valid_lease.push(valid_at_call);
        self.enter(Call::Execute).await?;
        {
            // A server's own rules for a task lease: active, budget left.
            let mut truth = self.truth();
            let id = _lease.lease_id.clone();
            if let Some(budget) = truth.task_budgets.get(&id).copied() {
                let used = truth.task_uses.get(&id).copied().unwrap_or(0);
                if !truth.active_leases.contains(&id) || used >= budget {
                    return Err(refusal("execute_action", "lease_revoked"));
                }
                truth.task_uses.insert(id, used + 1);
            }
        }
        self.truth()
            .grant_ids_seen
            .push(approval_grant_id.map(str::to_owned));
        if let Some(grant) = approval_grant_id {
            let granted = self.truth().grants.get(grant).cloned();
            if granted.as_deref() != Some(envelope.args_digest.as_str()) {
                return Err(ComputerUseError::Refused {
                    operation: "execute_action".into(),
                    code: "approval_required".into(),
                    message: "no grant for this digest".into(),
                    details: None,
                });
            }
        }
        let crash = self.script().crash_once.take();
        if crash == Some(Crash::BeforeEffect) {
            return Err(ComputerUseError::Transport {
                operation: "execute_action".into(),
                message: "crashed before the effect".into(),
            });
        }
        let stored = self.truth().receipts.get(&envelope.action_id).cloned();
        let mut receipt = match stored {
            Some(replayed) => replayed,
            None => {
                let evidence = self.script().evidence.clone();
                let receipt = answers::receipt_for(
                    envelope,
                    format!("receipt-{}", envelope.action_id),
                    self.clock.now(),
                    evidence.map(|v| json!({ "verification": v })),
                )?;
                let valid = adk_computer_use::binding::validate_lease_at(
                    _lease,
                    envelope,
                    self.clock.now(),
                )
                .is_ok();
                {
                    let mut truth = self.truth();
                    *truth.effects.entry(envelope.action_id.clone()).or_default() += 1;
                    truth
                        .receipts
                        .insert(envelope.action_id.clone(), receipt.clone());
                    truth.effects_with_valid_lease.push(valid);
                }
                let hold = self.script().hold_after_effect;
                if hold {
                    self.held.notify_one();
                    self.gate.notified().await;
                }
                receipt
            }
        };
        if crash == Some(Crash::AfterCommit) {
            return Err(ComputerUseError::Transport {
                operation: "execute_action".into(),
                message: "crashed after the commit".into(),
            });
        }
        if let Some(tweak) = self.script().receipt.clone() {
            tweak(&mut receipt);
        }
        Ok(receipt)
    }

    async fn evidence(
        &self,
        receipt: &ExecutionReceipt,
        _postcondition: Option<&ActionPostcondition>,
    ) -> Result<Option<Value>, ComputerUseError> {
        self.enter(Call::Verify).await?;
        let gathered = self.script().gathered.clone();
        Ok(gathered.or_else(|| receipt_verification(receipt).cloned()))
    }
}

pub fn key() -> SealingKey {
    SealingKey::new(vec![7u8; 32]).unwrap()
}

pub fn authorizer(scopes: &[&str]) -> ScopeAuthorizer {
    ScopeAuthorizer::new(
        VerifiedIdentity::new(PRINCIPAL, TENANT).unwrap(),
        scopes.iter().copied(),
    )
    .unwrap()
}

pub fn full_authorizer() -> ScopeAuthorizer {
    authorizer(&[
        "computer:plan",
        "computer:execute:background",
        "computer:execute:foreground",
    ])
}

pub struct Rig {
    pub runtime: Arc<FakeRuntime>,
    pub clock: ManualClock,
    pub session: Session<FakeRuntime>,
    /// The session's store of record.
    pub store: Arc<dyn CheckpointStore>,
}

pub fn rig() -> Rig {
    rig_with(full_authorizer())
}

/// A rig whose session acts on [`APP`]'s window [`WINDOW`] (the target a
/// task lease is bounded to).
pub fn rig_targeted() -> Rig {
    rig_aimed(Some(WindowId::Number(WINDOW)))
}

/// A rig whose session acts on [`APP`], on `window` when given.
pub fn rig_aimed(window: Option<WindowId>) -> Rig {
    rig_told(
        full_authorizer(),
        Arc::new(adk_computer_use::chain::MemoryCheckpointStore::new(key())),
        ANY_AGE,
        Some(window),
    )
}

/// A rig whose session acts on [`APP`]'s window [`WINDOW`] and is told the
/// runtime accepts target evidence only `max_age` old.
pub fn rig_targeted_aging(max_age: std::time::Duration) -> Rig {
    rig_told(
        full_authorizer(),
        Arc::new(adk_computer_use::chain::MemoryCheckpointStore::new(key())),
        max_age,
        Some(Some(WindowId::Number(WINDOW))),
    )
}

pub fn rig_with(authorizer: ScopeAuthorizer) -> Rig {
    rig_built(
        authorizer,
        Arc::new(adk_computer_use::chain::MemoryCheckpointStore::new(key())),
    )
}

/// A rig whose session suspends to and resumes from `store`.
pub fn rig_on(store: Arc<dyn CheckpointStore>) -> Rig {
    rig_built(full_authorizer(), store)
}

/// A rig over `store` whose session is told the runtime accepts target
/// evidence only `max_age` old (the scripted runtime itself never checks
/// the age: other rigs tell the session it accepts any age).
pub fn rig_aging(store: Arc<dyn CheckpointStore>, max_age: std::time::Duration) -> Rig {
    rig_told(full_authorizer(), store, max_age, None)
}

/// The age a scripted runtime accepts: any (it never checks).
const ANY_AGE: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 86_400);

fn rig_built(authorizer: ScopeAuthorizer, store: Arc<dyn CheckpointStore>) -> Rig {
    rig_told(authorizer, store, ANY_AGE, None)
}

/// A rig over `store`; with `aimed`, its session acts on [`APP`] (and the
/// window, when one is given).
fn rig_told(
    authorizer: ScopeAuthorizer,
    store: Arc<dyn CheckpointStore>,
    max_age: std::time::Duration,
    aimed: Option<Option<WindowId>>,
) -> Rig {
    let clock = ManualClock::new(start());
    let runtime = FakeRuntime::new(clock.clone());
    let mut builder = Session::builder(Arc::clone(&runtime), authorizer)
        .clock(Arc::new(clock.clone()))
        .agent_id("executor")
        .checkpoints(Arc::clone(&store))
        .target_evidence_max_age(max_age);
    if let Some(window) = aimed {
        builder = builder.target(APP, window);
    }
    let session = builder.build().unwrap();
    Rig {
        runtime,
        clock,
        session,
        store,
    }
}

pub fn action(id: &str) -> ProposedAction {
    ProposedAction::new(
        "write_clipboard",
        json!({ "text": "hello" }),
        ExecutionMode::Background,
    )
    .with_action_id(id)
    .with_target(target())
}

/// Walks `session` to `Approved` for `action`, which policy must allow.
pub async fn allowed_action<R: ComputerUseRuntime>(
    session: &Session<R>,
    action: &ProposedAction,
) -> adk_computer_use::chain::Approved<R> {
    let previewed = session
        .observe()
        .await
        .unwrap()
        .preview(action)
        .await
        .unwrap();
    match previewed.route() {
        adk_computer_use::chain::Route::Allowed(approved) => approved,
        _ => panic!(
            "expected {} to be allowed",
            action.action_id.as_deref().unwrap_or("the action")
        ),
    }
}

/// The verified end of a chain that ran; any other end fails the test.
pub fn completed<R: ComputerUseRuntime>(
    outcome: adk_computer_use::chain::ChainOutcome<R>,
) -> adk_computer_use::chain::Verified {
    use adk_computer_use::chain::ChainOutcome;
    match outcome {
        ChainOutcome::Completed(verified) => verified,
        ChainOutcome::NeedsApproval(_) => panic!("unexpected approval"),
        ChainOutcome::Blocked(b) => panic!("unexpected block: {}", b.blocker()),
    }
}

/// The checkpoint refusal `result` ended with; any other end fails the test.
pub fn refusal_of<T>(
    result: Result<T, ComputerUseError>,
) -> adk_computer_use::chain::CheckpointRefusal {
    match result {
        Ok(_) => panic!("expected a checkpoint refusal, got Ok"),
        Err(err) => err
            .checkpoint_refusal()
            .cloned()
            .unwrap_or_else(|| panic!("expected a checkpoint refusal, got {err}")),
    }
}

/// An observation round whose semantic frame lists `windows` (upstream's
/// window records), captured at `at`: for the agent layer's hit tests.
pub fn windows_observed(windows: Value, at: &str) -> Observations {
    Observations {
        capabilities: vec![],
        visual: Observation {
            observation_id: Some("shot-1".into()),
            structured: json!({ "screenshotHash": "sha256:abc" }),
            images: vec![],
            captured_at: None,
        },
        semantic: Observation {
            observation_id: Some("windows-1".into()),
            structured: json!({ "windows": windows }),
            images: vec![],
            captured_at: Some(at.into()),
        },
    }
}

/// The runtime's refusal of `operation` with `code`, as a script fails a
/// call with it.
pub fn refusal(operation: &str, code: &str) -> ComputerUseError {
    ComputerUseError::Refused {
        operation: operation.into(),
        code: code.into(),
        message: format!("{code} (scripted)"),
        details: None,
    }
}

/// The error `action` ends with in `session`; an end without one fails the test.
pub async fn run_err<R: ComputerUseRuntime>(
    session: &Session<R>,
    action: ProposedAction,
) -> ComputerUseError {
    session.run(action).await.err().unwrap()
}

/// Waits, a few milliseconds at a time and for about a second at most, until
/// `settled` holds; the caller asserts what it waited for.
pub async fn wait_until(settled: impl Fn() -> bool) {
    for _ in 0..200 {
        if settled() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}

/// Asserts `err` is an identity mismatch on `object`'s `field`.
pub fn assert_identity_mismatch(err: &ComputerUseError, object: &str, field: &str) {
    assert!(
        matches!(
            err,
            ComputerUseError::IdentityMismatch { object: o, field: f, .. } if *o == object && *f == field
        ),
        "{err}"
    );
}

/// A session builder over `runtime` on `clock`, for agent `executor` with every scope.
pub fn executor(
    runtime: &Arc<FakeRuntime>,
    clock: ManualClock,
) -> adk_computer_use::chain::SessionBuilder<FakeRuntime> {
    Session::builder(Arc::clone(runtime), full_authorizer())
        .clock(Arc::new(clock))
        .agent_id("executor")
}
