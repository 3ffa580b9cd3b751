// Invariant: no crate but this one can open the checkpoint stores' seal.
// Implementing the seal itself, to then implement `CheckpointStore` for a
// store made elsewhere, does not compile: the seal's module is private
// (E0603). (With every store built in, `ui-tests/fail-postgres/` also
// shows the trait refusing such a store outright, E0277.)
struct Forged;

impl adk_computer_use::chain::approvals::stores::sealed::Sealed for Forged {}

fn main() {}
