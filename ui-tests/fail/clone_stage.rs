// Invariant: a stage cannot be duplicated to mutate twice; `Leased` is not
// `Clone` (E0599).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Leased;

fn duplicate<R: ComputerUseRuntime>(leased: Leased<R>) {
    let _copy = leased.clone();
}

fn main() {}
