// Invariant: the single mutation is callable only on `Leased`; `Previewed`
// has no `execute` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Previewed;

async fn mutate<R: ComputerUseRuntime>(stage: Previewed<R>) {
    let _ = stage.execute().await;
}

fn main() {}
