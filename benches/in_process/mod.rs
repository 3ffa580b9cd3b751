//! The in-process measurement's parts, shared by the timing benchmark
//! (`overhead`) and the allocation count (`allocations`): a no-op runtime,
//! the raw calls a client of it makes for one action, and the action.

use std::sync::Arc;

use adk_computer_use::ComputerUseError;
use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
use adk_computer_use::chain::Session;
use adk_computer_use::contracts::*;
use adk_computer_use::runtime::*;
use adk_computer_use_testkit::answers;
use computer_use_server::CLIPBOARD_APP;
use serde_json::json;

use adk_computer_use_testkit::child::{self as sim_support, PRINCIPAL};

/// The benchmark's one action: a clipboard write aimed at the simulator's
/// clipboard window.
pub fn bench_action() -> ProposedAction {
    ProposedAction::new(
        "write_clipboard",
        json!({ "text": "x" }),
        ExecutionMode::Background,
    )
    .with_action_id("a")
    .with_target(sim_support::clipboard_target())
}

/// A session of `agent` over `runtime`, with the scopes a background write
/// needs.
pub fn session<R: ComputerUseRuntime>(runtime: Arc<R>, agent: &str) -> Session<R> {
    let identity = VerifiedIdentity::new(PRINCIPAL, "tenant").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"]).unwrap();
    Session::builder(runtime, authorizer)
        .agent_id(agent)
        .build()
        .unwrap()
}

/// Answers every call with a prepared value: the cheapest runtime there is.
pub struct NoopRuntime {
    preview: ActionPreview,
    reservation: TargetReservation,
    lease: ControlLease,
    receipt: ExecutionReceipt,
}

impl NoopRuntime {
    /// The answers a well-behaved runtime gives `action` (the bench's one
    /// action), built once: valid for years, so no check ever fails.
    pub fn new(action: &ProposedAction) -> Self {
        let now = time::OffsetDateTime::now_utc();
        let years = time::Duration::days(3650);
        let request = ActionRequest {
            session_id: "s",
            agent_id: Some("agent"),
            execution_group_id: None,
            action,
        };
        let envelope = answers::envelope_for(&request, PRINCIPAL, now, years).unwrap();
        let reservation =
            answers::reservation_for(&envelope, "r", CLIPBOARD_APP, now, years).unwrap();
        let lease = answers::lease_for(&envelope, "l", &[CLIPBOARD_APP], now, years).unwrap();
        let receipt = answers::receipt_for(&envelope, "rc", now, None).unwrap();
        let preview = answers::preview_for(envelope, answers::PreviewRoute::Allowed, "p");
        Self {
            preview,
            reservation,
            lease,
            receipt,
        }
    }
}

/// The runtime's own answers, callable without proofs: what a raw client of
/// this runtime would await. The trait methods below delegate to them, so
/// both sides of the measurement reach the same code.
impl NoopRuntime {
    async fn raw_preview(&self) -> Result<ActionPreview, ComputerUseError> {
        Ok(self.preview.clone())
    }
    async fn raw_reserve(&self, _: &ActionEnvelope) -> Result<TargetReservation, ComputerUseError> {
        Ok(self.reservation.clone())
    }
    async fn raw_lease(&self, _: &ActionEnvelope) -> Result<ControlLease, ComputerUseError> {
        Ok(self.lease.clone())
    }
    async fn raw_execute(
        &self,
        _: &ActionEnvelope,
        _: &ControlLease,
    ) -> Result<ExecutionReceipt, ComputerUseError> {
        Ok(self.receipt.clone())
    }
    async fn raw_release(&self, _: &TargetReservation) -> Result<(), ComputerUseError> {
        Ok(())
    }
    async fn raw_release_lease(&self, _: &ControlLease) -> Result<(), ComputerUseError> {
        Ok(())
    }
}

impl ComputerUseRuntime for NoopRuntime {
    fn session_context(&self) -> Option<SessionContext> {
        Some(SessionContext {
            session_id: "s".into(),
            principal_id: PRINCIPAL.into(),
            execution_group_id: None,
        })
    }
    async fn discover_capabilities(
        &self,
        _: &ObservationScope,
    ) -> Result<Vec<ExecutionCapability>, ComputerUseError> {
        Ok(vec![])
    }
    async fn observe_visual(&self, _: &ObservationScope) -> Result<Observation, ComputerUseError> {
        Ok(Observation::default())
    }
    async fn observe_semantic(
        &self,
        _: &ObservationScope,
    ) -> Result<Observation, ComputerUseError> {
        Ok(Observation::default())
    }
    async fn preview_action(
        &self,
        _: &ActionRequest<'_>,
    ) -> Result<PreviewAnswer, ComputerUseError> {
        self.raw_preview().await.map(Into::into)
    }
    async fn reserve_target(
        &self,
        proof: &ReserveProof<'_>,
    ) -> Result<Option<TargetReservation>, ComputerUseError> {
        self.raw_reserve(proof.envelope()).await.map(Some)
    }
    async fn release_target(&self, proof: &ReleaseProof<'_>) -> Result<(), ComputerUseError> {
        self.raw_release(proof.reservation()).await
    }
    async fn acquire_lease(
        &self,
        proof: &LeaseProof<'_>,
    ) -> Result<ControlLease, ComputerUseError> {
        self.raw_lease(proof.envelope()).await
    }
    async fn release_lease(&self, proof: &LeaseReleaseProof<'_>) -> Result<(), ComputerUseError> {
        self.raw_release_lease(proof.lease()).await
    }
    async fn execute_action(
        &self,
        proof: &ExecuteProof<'_>,
    ) -> Result<ExecutionReceipt, ComputerUseError> {
        self.raw_execute(proof.envelope(), proof.lease()).await
    }
}

pub async fn raw_in_process(
    runtime: &NoopRuntime,
    action: &ProposedAction,
    scope: &ObservationScope,
) {
    // The agent hands over a fresh proposal for every action, as it does to the chain.
    let action = std::hint::black_box(action.clone());
    let _ = tokio::join!(
        runtime.discover_capabilities(scope),
        runtime.observe_visual(scope),
        runtime.observe_semantic(scope)
    );
    let preview = runtime.raw_preview().await.unwrap();
    let reservation = runtime.raw_reserve(&preview.envelope).await.unwrap();
    let lease = runtime.raw_lease(&preview.envelope).await.unwrap();
    let receipt = runtime
        .raw_execute(&preview.envelope, &lease)
        .await
        .unwrap();
    // No postcondition: the chain asks for no evidence. The releases go
    // together, as the chain's do.
    let _ = std::hint::black_box(&receipt);
    let (lease, reservation) = tokio::join!(
        runtime.raw_release_lease(&lease),
        runtime.raw_release(&reservation)
    );
    lease.unwrap();
    reservation.unwrap();
    drop(action);
}
