// Invariant: a verification outcome cannot be written by hand; `Verified`
// has private fields, so a struct literal is refused (E0451).
use adk_computer_use::VerificationOutcome;
use adk_computer_use::protocol::{BoundReceipt, Verified};

fn forge(receipt: BoundReceipt) -> Verified {
    Verified {
        action_id: String::new(),
        lease_id: String::new(),
        receipt,
        outcome: VerificationOutcome::Verified,
    }
}

fn main() {}
