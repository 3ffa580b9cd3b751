// Invariant: the checkpoint stores are this crate's own. A store made
// elsewhere (one that answers another store's identity, or consumes
// without checking for a decision) does not compile: the trait is sealed
// (E0277).
use adk_computer_use::chain::{CheckpointId, CheckpointStore, ClaimBasis, SealingKey};
use adk_computer_use::ComputerUseError;

struct Forged(SealingKey);

impl CheckpointStore for Forged {
    fn sealing_key(&self) -> &SealingKey { &self.0 }
    fn store_id(&self) -> &str { "the-real-store" }
    fn create(&self, _: &CheckpointId, _: &str) -> Result<(), ComputerUseError> { Ok(()) }
    fn load(&self, _: &CheckpointId) -> Result<Vec<String>, ComputerUseError> { Ok(Vec::new()) }
    fn claim(&self, _: &CheckpointId, _: &ClaimBasis) -> Result<(), ComputerUseError> { Ok(()) }
    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError> { Ok(Vec::new()) }
    fn record_decision(&self, _: &CheckpointId, _: &str) -> Result<(), ComputerUseError> { Ok(()) }
    fn decision(&self, _: &CheckpointId) -> Result<Option<String>, ComputerUseError> { Ok(None) }
    fn claimed_without_decision(&self, _: &CheckpointId) -> Result<bool, ComputerUseError> { Ok(false) }
    fn give_back(&self, _: &CheckpointId, _: &ClaimBasis) -> Result<(), ComputerUseError> { Ok(()) }
    fn record_outcome(&self, _: &CheckpointId, _: usize, _: &str) -> Result<(), ComputerUseError> { Ok(()) }
    fn outcomes(&self, _: &CheckpointId) -> Result<Vec<String>, ComputerUseError> { Ok(Vec::new()) }
    fn reported(&self) -> Result<Vec<CheckpointId>, ComputerUseError> { Ok(Vec::new()) }
}

fn main() {}
