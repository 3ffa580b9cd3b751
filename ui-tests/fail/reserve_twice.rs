// Invariant: an approved action reserves its target once: `reserve`
// consumes it (E0382).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Approved;

async fn reserve_twice<R: ComputerUseRuntime>(approved: Approved<R>) {
    let _ = approved.reserve().await;
    let _ = approved.reserve().await;
}

fn main() {}
