// Invariant: a proof borrows from the stage that made it, so a runtime cannot
// keep one past the call to use it again later (borrowed data escapes, E0521).
use std::sync::Mutex;

use adk_computer_use::runtime::ExecuteProof;

struct Hoarder {
    kept: Mutex<Vec<&'static ExecuteProof<'static>>>,
}

impl Hoarder {
    fn keep(&self, proof: &ExecuteProof<'_>) {
        self.kept.lock().unwrap().push(proof);
    }
}

fn main() {}
