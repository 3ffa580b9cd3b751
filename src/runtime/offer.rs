//! What a runtime offers for a tool: the modes it can perform it in and the
//! schema of its arguments, as the runtime reports them. A runtime adapter
//! reports offers; the agent layer turns them into what a model may propose
//! (`agent::AllowedActions::from_offers`), so the adapter never reaches up
//! into the agent layer.

use serde_json::Value;

use crate::contracts::ExecutionMode;

/// One tool as a runtime offers it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOffer {
    /// The tool's name.
    pub tool: String,
    /// The modes it can be performed in, other than `shadow` (observation
    /// is the chain's own step), each once.
    pub modes: Vec<ExecutionMode>,
    /// The JSON Schema of its arguments, when the runtime lists one.
    pub arguments: Option<Value>,
}
