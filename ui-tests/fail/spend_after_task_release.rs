// Invariant: a released task lease authorizes nothing: `release` consumes
// the `TaskLease`, so spending from it afterwards is a use after move
// (E0382).
use adk_computer_use::chain::{Reserved, TaskLease};
use adk_computer_use::runtime::ComputerUseRuntime;

async fn spend_after_release<R: ComputerUseRuntime>(reserved: Reserved<R>, mut task: TaskLease<R>) {
    let _ = task.release().await;
    let _ = reserved.spend(&mut task).await;
}

fn main() {}
