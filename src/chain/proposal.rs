//! The proposal an envelope answers: an envelope is bound to the action the
//! chain proposed before anything is reserved on its authority.

use crate::ComputerUseError;
use crate::binding::{bind, bind_optional, window_text};
use crate::contracts::{
    ActionEnvelope, ActionPostcondition, ActionPreview, ActionResourceContext, blockers,
};
use crate::runtime::ActionRequest;

/// The envelope is about the action that was proposed: same id (when one was
/// given), tool, mode and operation (when one was given), the proposed
/// target's app and window, the same postcondition (absent when none was
/// proposed), every resource field the proposal named, and the same agent
/// and group when both name one.
pub(crate) fn bind_to_request(
    request: &ActionRequest<'_>,
    envelope: &ActionEnvelope,
) -> Result<(), ComputerUseError> {
    const OBJECT: &str = "ActionEnvelope";
    let proposed = &request.action;
    bind_optional(
        OBJECT,
        "actionId",
        proposed.action_id.as_deref(),
        Some(&envelope.action_id),
    )?;
    bind(OBJECT, "tool", &proposed.tool, &envelope.tool)?;
    bind(
        OBJECT,
        "requestedMode",
        proposed.mode.as_str(),
        envelope.requested_mode.as_str(),
    )?;
    bind_optional(
        OBJECT,
        "operation",
        proposed.operation.as_deref(),
        Some(&envelope.operation),
    )?;
    if let Some(target) = &proposed.target {
        let bound = envelope.target.as_ref();
        bind(
            OBJECT,
            "target.appId",
            &target.app_id,
            bound.map_or("(no target)", |t| t.app_id.as_str()),
        )?;
        if target.window_id.is_some()
            && target.window_id.as_ref() != bound.and_then(|t| t.window_id.as_ref())
        {
            return Err(ComputerUseError::IdentityMismatch {
                object: OBJECT,
                field: "target.windowId",
                expected: window_text(target.window_id.as_ref()),
                actual: window_text(bound.and_then(|t| t.window_id.as_ref())),
            });
        }
    }
    if proposed.postcondition != envelope.postcondition {
        return Err(postcondition_mismatch(
            proposed.postcondition.as_ref(),
            envelope.postcondition.as_ref(),
        ));
    }
    if let Some(resource) = &proposed.resource {
        bind_resource(resource, envelope.resource.as_ref())?;
    }
    bind_optional(
        OBJECT,
        "agentId",
        request.agent_id,
        envelope.agent_id.as_deref(),
    )?;
    bind_optional(
        OBJECT,
        "executionGroupId",
        request.execution_group_id,
        envelope.execution_group_id.as_deref(),
    )
}

/// Each field of the resource the proposal named is in the envelope with
/// the same value: a runtime that dropped or changed the file an action's
/// check reads would have the approval granted over another resource.
fn bind_resource(
    proposed: &ActionResourceContext,
    bound: Option<&ActionResourceContext>,
) -> Result<(), ComputerUseError> {
    const OBJECT: &str = "ActionEnvelope";
    let fallback = ActionResourceContext::default();
    let bound = bound.unwrap_or(&fallback);
    let text = |value: Option<String>| value.unwrap_or_else(|| "(none)".to_owned());
    let pairs: [(&'static str, Option<String>, Option<String>); 8] = [
        (
            "resource.targetAppId",
            proposed.target_app_id.clone(),
            bound.target_app_id.clone(),
        ),
        (
            "resource.targetWindowId",
            proposed
                .target_window_id
                .as_ref()
                .map(|w| window_text(Some(w))),
            bound
                .target_window_id
                .as_ref()
                .map(|w| window_text(Some(w))),
        ),
        (
            "resource.filesystemPath",
            proposed.filesystem_path.clone(),
            bound.filesystem_path.clone(),
        ),
        (
            "resource.filesystemDestination",
            proposed.filesystem_destination.clone(),
            bound.filesystem_destination.clone(),
        ),
        (
            "resource.registryPath",
            proposed.registry_path.clone(),
            bound.registry_path.clone(),
        ),
        (
            "resource.processName",
            proposed.process_name.clone(),
            bound.process_name.clone(),
        ),
        (
            "resource.processId",
            proposed.process_id.map(|p| p.to_string()),
            bound.process_id.map(|p| p.to_string()),
        ),
        (
            "resource.browserDomain",
            proposed.browser_domain.clone(),
            bound.browser_domain.clone(),
        ),
    ];
    for (field, named, carried) in pairs {
        if named.is_some() && named != carried {
            return Err(ComputerUseError::IdentityMismatch {
                object: OBJECT,
                field,
                expected: text(named),
                actual: text(carried),
            });
        }
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn postcondition_mismatch(
    proposed: Option<&ActionPostcondition>,
    envelope: Option<&ActionPostcondition>,
) -> ComputerUseError {
    let text = |postcondition: Option<&ActionPostcondition>| match postcondition {
        Some(postcondition) => serde_json::to_string(postcondition)
            .unwrap_or_else(|err| format!("(unprintable: {err})")),
        None => "none".to_owned(),
    };
    ComputerUseError::IdentityMismatch {
        object: "ActionEnvelope",
        field: "postcondition",
        expected: text(proposed),
        actual: text(envelope),
    }
}

/// The capability the runtime would use is the one for this action: its
/// operation is the envelope's, and the capability of a preview that may
/// run (executable, or waiting for approval) supports the mode asked for. A tool the runtime cannot run stops here,
/// before anything is reserved on its authority.
pub(crate) fn bind_capability(preview: &ActionPreview) -> Result<(), ComputerUseError> {
    let capability = &preview.capability;
    let envelope = &preview.envelope;
    bind(
        "ExecutionCapability",
        "operation",
        &envelope.operation,
        &capability.operation,
    )?;
    // A preview that may still run (executable, or waiting for a person)
    // must be runnable in its mode; only a blocked one is left to its route.
    let may_run =
        preview.executable || preview.blocker.as_deref() == Some(blockers::APPROVAL_REQUIRED);
    if may_run
        && !capability
            .supported_modes
            .contains(&envelope.requested_mode)
    {
        let modes: Vec<&str> = capability
            .supported_modes
            .iter()
            .map(|m| m.as_str())
            .collect();
        return Err(ComputerUseError::InvalidField {
            object: "ExecutionCapability",
            field: "supportedModes",
            expected: format!("a list with {}", envelope.requested_mode.as_str()),
            actual: format!("[{}]", modes.join(", ")),
        });
    }
    Ok(())
}
