// Invariant: the runtime handle a session (and whoever drives it) holds
// cannot approve: the host receives its approver apart, when it builds the
// runtime, and the handle has no way to make one (E0599).
use adk_computer_use::mcp::ComputerUseMcpRuntime;

async fn self_approve(runtime: &ComputerUseMcpRuntime) {
    let _approver = runtime.approver();
}

fn main() {}
