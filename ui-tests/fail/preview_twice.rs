// Invariant: one observation round previews one action: `preview` consumes
// the `Observed` (E0382), so a second proposal needs a fresh look.
use adk_computer_use::chain::Observed;
use adk_computer_use::ProposedAction;
use adk_computer_use::runtime::ComputerUseRuntime;

async fn preview_twice<R: ComputerUseRuntime>(observed: Observed<R>, action: ProposedAction) {
    let _ = observed.preview(&action).await;
    let _ = observed.preview(&action).await;
}

fn main() {}
