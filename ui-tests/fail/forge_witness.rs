// Invariant: a lease enters a stage only through the binding validator;
// `BoundLease` has private fields, so a struct literal is refused (E0451).
use adk_computer_use::contracts::ControlLease;
use adk_computer_use::protocol::BoundLease;

fn forge(lease: ControlLease) -> BoundLease {
    BoundLease {
        lease: std::sync::Arc::new(lease),
    }
}

fn main() {}
