// Invariant: reserving a target changes the server's state, so it takes a
// `ReserveProof` that only `Approved::reserve` makes (E0308).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::contracts::ActionEnvelope;

async fn reserve<R: ComputerUseRuntime>(runtime: &R, envelope: &ActionEnvelope) {
    let _ = runtime.reserve_target(envelope).await;
}

fn main() {}
