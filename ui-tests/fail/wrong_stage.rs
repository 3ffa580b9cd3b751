// Invariant: each stage is its own type; a `Reserved` cannot be passed
// where a `Leased` is expected (E0308).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::{Leased, Reserved};

fn needs_lease<R: ComputerUseRuntime>(_leased: Leased<R>) {}

fn pass_reserved<R: ComputerUseRuntime>(reserved: Reserved<R>) {
    needs_lease(reserved);
}

fn main() {}
