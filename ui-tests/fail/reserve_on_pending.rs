// Invariant: an action waiting for approval cannot reserve its target;
// `PendingApproval` has no `reserve` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::PendingApproval;

async fn skip_approval<R: ComputerUseRuntime>(pending: PendingApproval<R>) {
    let _ = pending.reserve().await;
}

fn main() {}
