// Invariant: approval cannot unblock what policy blocked; `Blocked` has no
// `approve` (E0599).
use adk_computer_use::chain::{Approval, Blocked};

fn approve_anyway(blocked: Blocked, approval: Approval) {
    let _ = blocked.approve(approval);
}

fn main() {}
