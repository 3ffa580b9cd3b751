// Invariant: `Leased` is the only stage with `execute`: a task lease
// authorizes mutations only through an action that spent from it (E0599).
use adk_computer_use::chain::TaskLease;
use adk_computer_use::runtime::ComputerUseRuntime;

async fn mutate<R: ComputerUseRuntime>(task: TaskLease<R>) {
    let _ = task.execute().await;
}

fn main() {}
