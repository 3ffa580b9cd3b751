// Invariant: the validator that makes a `BoundReceipt` is private to the
// crate, with the witness itself: calling it from outside is refused (E0603).
use adk_computer_use::contracts::{ActionEnvelope, ExecutionReceipt};
use adk_computer_use::chain::witness::BoundReceipt;

fn forge(receipt: ExecutionReceipt, envelope: &ActionEnvelope) {
    let _ = BoundReceipt::check(receipt, envelope);
}

fn main() {}
