// Invariant: a verification outcome cannot be written by hand; `Verified`
// has private fields, so a struct literal is refused (E0451).
use adk_computer_use::VerificationOutcome;
use adk_computer_use::contracts::ControlLease;
use adk_computer_use::protocol::{BoundReceipt, Verified};

fn forge(lease: std::sync::Arc<ControlLease>, receipt: BoundReceipt) -> Verified {
    Verified {
        lease,
        receipt,
        outcome: VerificationOutcome::Verified,
    }
}

fn main() {}
