// Invariant: a reserved action takes the one-writer lease once: `lease`
// consumes it (E0382).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Reserved;

async fn lease_twice<R: ComputerUseRuntime>(reserved: Reserved<R>) {
    let _ = reserved.lease().await;
    let _ = reserved.lease().await;
}

fn main() {}
