// Invariant: a reservation is held by a stage only after it was bound to the
// envelope; `BoundReservation` has private fields, so a struct literal is
// refused (E0451).
use adk_computer_use::protocol::BoundReservation;

fn forge() -> BoundReservation {
    BoundReservation { expiry: None }
}

fn main() {}
