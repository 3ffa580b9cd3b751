// Invariant: the credential a runtime connects with is not readable from
// its configuration, so a runtime handed to an agent does not hand it the
// credential (an approver's, say) it was built with (E0616, private field).
use adk_computer_use::mcp::ComputerUseMcpRuntime;

fn steal(runtime: &ComputerUseMcpRuntime) -> Option<String> {
    runtime.config().credential.clone()
}

fn main() {}
