// Invariant: one lease, one mutation: `execute` consumes the `Leased`
// stage, so a second call is a use after move (E0382).
use adk_computer_use::runtime::ComputerUseRuntime;
use adk_computer_use::chain::Leased;

async fn mutate_twice<R: ComputerUseRuntime>(leased: Leased<R>) {
    let _ = leased.execute().await;
    let _ = leased.execute().await;
}

fn main() {}
