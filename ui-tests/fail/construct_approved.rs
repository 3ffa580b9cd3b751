// Invariant: `Approved` is reachable only through `route` or `approve`;
// its constructor is private to the crate (E0624).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Approved;

fn forge<R: ComputerUseRuntime>() {
    let _constructor = Approved::<R>::new;
}

fn main() {}
