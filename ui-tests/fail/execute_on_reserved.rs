// Invariant: the single mutation is callable only on `Leased`; `Reserved`
// has no `execute` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Reserved;

async fn mutate<R: ComputerUseRuntime>(stage: Reserved<R>) {
    let _ = stage.execute().await;
}

fn main() {}
