// Invariant: a pending approval is not an approved action; only `approve`
// converts one into the other (E0308).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::{Approved, PendingApproval};

fn skip_approval<R: ComputerUseRuntime>(pending: PendingApproval<R>) -> Approved<R> {
    pending
}

fn main() {}
