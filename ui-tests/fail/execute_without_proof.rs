// Invariant: the mutation has one door. A caller holding a runtime and the
// envelope and lease it saw cannot call `execute_action`: it takes an
// `ExecuteProof` that only `Leased::execute` makes (E0308).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::contracts::{ActionEnvelope, ControlLease};

async fn mutate<R: ComputerUseRuntime>(runtime: &R, envelope: &ActionEnvelope, lease: &ControlLease) {
    let _ = lease;
    let _ = runtime.execute_action(envelope).await;
}

fn main() {}
