// Invariant: a verification outcome cannot be written by hand: the only
// constructor of `Verified` is private to the crate (E0624), and its
// receipt witness cannot be named outside it.
use adk_computer_use::VerificationOutcome;
use adk_computer_use::contracts::ControlLease;
use adk_computer_use::chain::Verified;

fn forge<R>(lease: std::sync::Arc<ControlLease>, receipt: R) -> Verified {
    Verified::new(lease, receipt, VerificationOutcome::Verified)
}

fn main() {}
