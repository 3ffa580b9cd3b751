// Invariant: an executed action is verified once, and verifying releases its
// reservation: `verify` consumes it (E0382).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Executed;

async fn verify_twice<R: ComputerUseRuntime>(executed: Executed<R>) {
    let _ = executed.verify().await;
    let _ = executed.verify().await;
}

fn main() {}
