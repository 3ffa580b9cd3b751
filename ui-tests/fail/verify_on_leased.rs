// Invariant: only an executed action can be verified; `Leased` has no
// `verify` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Leased;

async fn verify_unexecuted<R: ComputerUseRuntime>(leased: Leased<R>) {
    let _ = leased.verify().await;
}

fn main() {}
