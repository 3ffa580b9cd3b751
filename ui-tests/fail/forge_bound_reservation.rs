// Invariant: a reservation enters a stage only through the binding validator;
// its witness `BoundReservation` is private to the crate, so code outside
// cannot even name it, let alone build one (E0603).
use adk_computer_use::chain::witness::BoundReservation;

fn forge() -> BoundReservation {
    BoundReservation { _checked: () }
}

fn main() {}
