// Invariant: a verification outcome cannot be written by hand; `Verified`
// has private fields, so a struct literal is refused (E0451).
use adk_computer_use::VerificationOutcome;
use adk_computer_use::protocol::{BoundLease, BoundReceipt, Verified};

fn forge(lease: BoundLease, receipt: BoundReceipt) -> Verified {
    Verified {
        lease,
        receipt,
        outcome: VerificationOutcome::Verified,
    }
}

fn main() {}
