// Invariant: a session cannot mutate without walking the chain; `Session`
// has no `execute` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Session;

async fn mutate<R: ComputerUseRuntime>(session: Session<R>) {
    let _ = session.execute().await;
}

fn main() {}
