// Invariant: a lease enters a stage only through the binding validator; its
// witness `BoundLease` is private to the crate, so code outside cannot name
// it, let alone build one (E0603).
use adk_computer_use::contracts::ControlLease;
use adk_computer_use::chain::witness::BoundLease;

fn forge(lease: ControlLease) -> BoundLease {
    BoundLease {
        lease: std::sync::Arc::new(lease),
    }
}

fn main() {}
