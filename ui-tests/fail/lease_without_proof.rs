// Invariant: taking the one-writer lease takes a `LeaseProof` that only
// `Reserved::lease` makes (E0308).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::contracts::ActionEnvelope;

async fn lease<R: ComputerUseRuntime>(runtime: &R, envelope: &ActionEnvelope) {
    let _ = runtime.acquire_lease(envelope).await;
}

fn main() {}
