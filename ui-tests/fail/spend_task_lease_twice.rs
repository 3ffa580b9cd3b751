// Invariant: one action spends one action of a task lease: `spend` consumes
// the `Reserved` stage, so spending it a second time is a use after move
// (E0382).
use adk_computer_use::chain::{Reserved, TaskLease};
use adk_computer_use::runtime::ComputerUseRuntime;

async fn spend_twice<R: ComputerUseRuntime>(reserved: Reserved<R>, task: &mut TaskLease<R>) {
    let _ = reserved.spend(task).await;
    let _ = reserved.spend(task).await;
}

fn main() {}
