// The legal order compiles: observe, preview, route, reserve, lease,
// execute, verify.
use adk_computer_use::chain::{Route, Session, Verified};
use adk_computer_use::{ComputerUseError, ProposedAction};
use adk_computer_use::runtime::ComputerUseRuntime;

async fn run<R: ComputerUseRuntime>(session: &Session<R>, action: ProposedAction) -> Result<Option<Verified>, ComputerUseError> {
    let previewed = session.observe().await?.preview(&action).await?;
    match previewed.route() {
        Route::Allowed(approved) => {
            let reserved = approved.reserve().await?;
            let leased = reserved.lease().await?;
            let executed = leased.execute().await?;
            Ok(Some(executed.verify().await?))
        }
        Route::NeedsApproval(_) | Route::Blocked(_) => Ok(None),
    }
}

fn assert_send<T: Send>(_: T) {}

// The chain's future can be spawned on a multi-threaded executor.
fn chain_is_send<R: ComputerUseRuntime>(session: &Session<R>, action: ProposedAction) {
    assert_send(run(session, action));
}

fn main() {
    let _ = chain_is_send::<NeverRuntime>;
}

// The generic chain above instantiated with a concrete runtime type.
struct NeverRuntime;
include!("never_runtime.in");
