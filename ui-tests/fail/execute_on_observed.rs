// Invariant: the single mutation is callable only on `Leased`; `Observed`
// has no `execute` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Observed;

async fn mutate<R: ComputerUseRuntime>(stage: Observed<R>) {
    let _ = stage.execute().await;
}

fn main() {}
