// Invariant: a blocked action is terminal; `Blocked` has no `execute` (E0599).
use adk_computer_use::chain::Blocked;

async fn mutate(stage: Blocked) {
    let _ = stage.execute().await;
}

fn main() {}
