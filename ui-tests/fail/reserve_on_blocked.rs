// Invariant: a blocked action cannot reserve its target; `Blocked` has no
// `reserve` (E0599).
use adk_computer_use::chain::Blocked;

async fn ignore_block(blocked: Blocked) {
    let _ = blocked.reserve().await;
}

fn main() {}
