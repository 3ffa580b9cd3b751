// Invariant: a task lease has one holder: it is not `Clone`, so no copy of
// it can be spent beside the original, nor released twice (E0599).
use adk_computer_use::chain::TaskLease;
use adk_computer_use::runtime::ComputerUseRuntime;

fn duplicate<R: ComputerUseRuntime>(task: TaskLease<R>) {
    let _copy = task.clone();
}

fn main() {}
