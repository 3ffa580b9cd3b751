//! The host's side of an approval, for the examples that play the host: it
//! approves exactly the pending action, in the open, through the approver
//! it was given when the runtime was built (apart from the runtime the
//! session drives), and runs the rest of the chain.

use adk_computer_use::ComputerUseError;
use adk_computer_use::chain::{Approval, PendingApproval, Verified};
use adk_computer_use::contracts::ApprovalScope;
use adk_computer_use::mcp::{ComputerUseMcpRuntime, GrantRequest, McpApprover};

/// Approves `pending` as the host and completes it.
pub async fn approve_and_complete(
    approver: &McpApprover,
    pending: PendingApproval<ComputerUseMcpRuntime>,
) -> Result<Verified, ComputerUseError> {
    let grant = approver
        .approve_action(
            &GrantRequest::for_pending(&pending),
            ApprovalScope::ExactAction,
            None,
        )
        .await?;
    let approval = Approval::from_grant(pending.action_id(), &grant);
    pending.approve(approval)?.complete().await
}
