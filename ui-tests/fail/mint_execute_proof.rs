// Invariant: a proof cannot be minted outside the crate; `ExecuteProof` has
// private fields, so a struct literal is refused (E0451).
use adk_computer_use::contracts::{ActionEnvelope, ControlLease};
use adk_computer_use::runtime::ExecuteProof;

fn mint<'a>(envelope: &'a ActionEnvelope, lease: &'a ControlLease) -> ExecuteProof<'a> {
    ExecuteProof {
        envelope,
        lease,
        grant_id: None,
        retained: None,
    }
}

fn main() {}
