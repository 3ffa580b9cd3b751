//! What the nodes check the graph's JSON state against before they trust
//! it: the preview the chain made, and the approval a resume wrote.

use adk_graph::{GraphError, NodeContext};
use serde_json::Value;

use super::nodes::failed;
use crate::chain::Approval;
use crate::contracts::ActionPreview;

/// A state key that is set (not absent, not null).
pub(super) fn set(ctx: &NodeContext, key: &str) -> bool {
    ctx.get(key).is_some_and(|v| !v.is_null())
}

/// Refuses unless the state's `preview` and `preview_history` are exactly
/// the one preview the chain made.
pub(super) fn same_preview(
    ctx: &NodeContext,
    node: &str,
    chain: &ActionPreview,
) -> Result<(), GraphError> {
    same_preview_since(ctx, node, chain, None)
}

/// [`same_preview`] for a run whose approval was resumed on a preview of
/// the same action made again (on fresh evidence of its target, or after
/// the sealed one expired): `preview_history` still holds exactly the one
/// preview the graph interrupted with, `interrupted`, and `preview` is the
/// chain's current one.
pub(super) fn same_preview_since(
    ctx: &NodeContext,
    node: &str,
    chain: &ActionPreview,
    interrupted: Option<&Value>,
) -> Result<(), GraphError> {
    let history = ctx
        .get("preview_history")
        .and_then(Value::as_array)
        .ok_or_else(|| failed(node, "the state holds no preview_history"))?;
    if history.len() != 1 {
        return Err(failed(
            node,
            format!(
                "preview_history holds {} entries, expected exactly the one preview this run made: a second preview was written into the state",
                history.len()
            ),
        ));
    }
    let ours = serde_json::to_value(chain).map_err(|e| failed(node, e))?;
    let first = interrupted.unwrap_or(&ours);
    if history.first() != Some(first) || ctx.get("preview") != Some(&ours) {
        return Err(failed(
            node,
            "the state's preview is not the one this run made: it was replaced",
        ));
    }
    Ok(())
}

/// The approval the resume wrote into `approval`, for the action
/// `action_id`: both digests and exactly one authority.
pub(super) fn approval_of(value: &Value, action_id: &str) -> Result<Approval, String> {
    let fields = value
        .as_object()
        .ok_or("approval must be an object of actionDigest, policyDigest and one authority")?;
    if let Some(other) = fields.keys().find(|k| {
        !["actionDigest", "policyDigest", "grantId", "runtimeApproved"].contains(&k.as_str())
    }) {
        return Err(format!(
            "approval holds an unknown field {other:?}: expected actionDigest, policyDigest, grantId or runtimeApproved"
        ));
    }
    let text = |k: &str| {
        fields
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let (Some(action), Some(policy)) = (text("actionDigest"), text("policyDigest")) else {
        return Err("approval must name actionDigest and policyDigest".into());
    };
    let runtime_held = match fields.get("runtimeApproved") {
        None | Some(Value::Bool(false)) => false,
        Some(Value::Bool(true)) => true,
        Some(_) => return Err("approval.runtimeApproved must be true or absent".into()),
    };
    // A grantId present is one, whatever it holds: it must then be a
    // non-empty string, never taken for absent.
    let grant = match fields.get("grantId") {
        None | Some(Value::Null) => None,
        Some(Value::String(grant)) if !grant.is_empty() => Some(grant.as_str()),
        Some(_) => return Err("approval.grantId must be a non-empty string or absent".into()),
    };
    match (grant, runtime_held) {
        (Some(grant), false) => Ok(Approval::with_grant(action_id, action, policy, grant)),
        (None, true) => Ok(Approval::runtime_held(action_id, action, policy)),
        (Some(_), true) => Err(
            "approval names two authorities (a grantId and runtimeApproved): exactly one".into(),
        ),
        (None, false) => {
            Err("approval names no authority: a grantId, or runtimeApproved: true".into())
        }
    }
}
