// Invariant: the single mutation is callable only on `Leased`; `Executed`
// has no `execute` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Executed;

async fn mutate<R: ComputerUseRuntime>(stage: Executed<R>) {
    let _ = stage.execute().await;
}

fn main() {}
