// Invariant: the lease is taken only after the target is reserved;
// `Approved` has no `lease` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Approved;

async fn skip_reservation<R: ComputerUseRuntime>(approved: Approved<R>) {
    let _ = approved.lease().await;
}

fn main() {}
