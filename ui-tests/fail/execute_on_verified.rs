// Invariant: a finished chain cannot mutate again; `Verified` has no
// `execute` (E0599).
use adk_computer_use::chain::Verified;

async fn mutate(stage: Verified) {
    let _ = stage.execute().await;
}

fn main() {}
