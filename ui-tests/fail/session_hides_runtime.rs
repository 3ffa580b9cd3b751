// Invariant: an agent that holds a `Session` cannot reach the runtime behind
// it, so it can neither call the runtime's methods nor take the host's
// approver to approve its own action (E0599).
use adk_computer_use::chain::Session;
use adk_computer_use::mcp::ComputerUseMcpRuntime;

fn approver(session: &Session<ComputerUseMcpRuntime>) {
    let _ = session.runtime().approver();
}

fn main() {}
