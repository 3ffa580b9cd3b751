// Invariant: no stage has a default value to start from; `Verified` is not
// `Default` (E0599).
use adk_computer_use::chain::Verified;

fn conjure() -> Verified {
    Verified::default()
}

fn main() {}
