// Invariant: a proof cannot be minted outside the crate; the constructors of
// the release proofs are private to it (E0624).
use adk_computer_use::contracts::TargetReservation;
use adk_computer_use::runtime::ReleaseProof;

fn mint(reservation: &TargetReservation) -> ReleaseProof<'_> {
    ReleaseProof::new(reservation, "session-1")
}

fn main() {}
