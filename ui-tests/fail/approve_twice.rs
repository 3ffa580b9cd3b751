// Invariant: one pending approval yields one approved action: `approve`
// consumes it (E0382).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::{Approval, PendingApproval};

fn approve_twice<R: ComputerUseRuntime>(pending: PendingApproval<R>, first: Approval, second: Approval) {
    let _ = pending.approve(first);
    let _ = pending.approve(second);
}

fn main() {}
