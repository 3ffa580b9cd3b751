// Invariant: one approval, one execution. `suspend` consumes the pending
// approval, so it cannot also be approved in process (E0382).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::{Approval, PendingApproval};

fn both<R: ComputerUseRuntime>(pending: PendingApproval<R>, approval: Approval) {
    let _id = pending.suspend();
    let _approved = pending.approve(approval);
}

fn main() {}
