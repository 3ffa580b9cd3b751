// Invariant: a reservation enters a stage only through the binding validator;
// `BoundReservation` has private fields, so a struct literal is refused (E0451).
use adk_computer_use::protocol::BoundReservation;

fn forge() -> BoundReservation {
    BoundReservation { _checked: () }
}

fn main() {}
