// Invariant: a proof is good for one call; it is not `Clone` (E0277).
use adk_computer_use::runtime::ExecuteProof;

fn twice<'a>(proof: &ExecuteProof<'a>) -> ExecuteProof<'a> {
    ExecuteProof::clone(proof)
}

fn main() {}
