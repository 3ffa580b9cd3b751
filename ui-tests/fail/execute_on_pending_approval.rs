// Invariant: the single mutation is callable only on `Leased`; `PendingApproval`
// has no `execute` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::PendingApproval;

async fn mutate<R: ComputerUseRuntime>(stage: PendingApproval<R>) {
    let _ = stage.execute().await;
}

fn main() {}
