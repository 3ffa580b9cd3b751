// Invariant: releasing someone's reservation or lease takes a proof that only
// the guard holding it makes; a reservation or lease read off a stage is not
// one (E0308).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::contracts::{ControlLease, TargetReservation};

async fn release<R: ComputerUseRuntime>(runtime: &R, reservation: &TargetReservation, lease: &ControlLease) {
    let _ = runtime.release_target(reservation).await;
    let _ = runtime.release_lease(lease).await;
}

fn main() {}
