// The approval path compiles: a pending approval becomes `Approved` only
// through `approve`, directly or after a sealed checkpoint in the session's
// store of record.
use adk_computer_use::chain::{Approval, PendingApproval, Session, Verified};
use adk_computer_use::ComputerUseError;
use adk_computer_use::runtime::ComputerUseRuntime;

async fn approve_now<R: ComputerUseRuntime>(pending: PendingApproval<R>, approval: Approval) -> Result<Verified, ComputerUseError> {
    pending.approve(approval)?.complete().await
}

async fn approve_later<R: ComputerUseRuntime>(
    session: &Session<R>,
    pending: PendingApproval<R>,
    approval: Approval,
) -> Result<Verified, ComputerUseError> {
    // Suspending consumes the pending approval: the checkpoint is the only way on.
    let id = pending.suspend().await?;
    session.resume(&id, approval).await?.complete().await
}

fn main() {}
