// Invariant: a graph node cannot reach the runtime's mutating door from
// what the graph's JSON state holds. The stage that acts (`Leased`) and
// the proof its `execute` builds are not `Deserialize`, so a node that
// decodes one from the state does not compile (E0277).
use adk_computer_use::chain::Leased;
use adk_computer_use::mcp::ComputerUseMcpRuntime;
use adk_computer_use::runtime::ExecuteProof;
use adk_graph::{GraphError, NodeContext, NodeOutput, StateGraph, StateSchema};

fn main() {
    let _ = StateGraph::new(StateSchema::simple(&["lease", "proof"])).add_node_fn(
        "execute",
        |ctx: NodeContext| async move {
            let state = ctx.get("lease").cloned().unwrap_or_default();
            let leased: Leased<ComputerUseMcpRuntime> = serde_json::from_value(state)
                .map_err(|e| GraphError::SerializationError(e.to_string()))?;
            let _ = leased.execute().await;
            let proof = ctx.get("proof").cloned().unwrap_or_default();
            let _proof: ExecuteProof<'static> = serde_json::from_value(proof)
                .map_err(|e| GraphError::SerializationError(e.to_string()))?;
            Ok(NodeOutput::new())
        },
    );
}
