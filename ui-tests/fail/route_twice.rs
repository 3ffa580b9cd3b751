// Invariant: a preview is routed once: `route` consumes it (E0382), so the
// same preview cannot be both approved by policy and sent for approval.
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Previewed;

fn route_twice<R: ComputerUseRuntime>(previewed: Previewed<R>) {
    let _ = previewed.route();
    let _ = previewed.route();
}

fn main() {}
