// Invariant: the single mutation is callable only on `Leased`; `Approved`
// has no `execute` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Approved;

async fn mutate<R: ComputerUseRuntime>(stage: Approved<R>) {
    let _ = stage.execute().await;
}

fn main() {}
