//! The checks a server announces it makes after an action.
//!
//! MCP has no word for "I can check that the clipboard holds this text", and
//! guessing is unsafe: upstream's servers check a `ui_element`
//! postcondition by finding that element in the target window, so a
//! postcondition they cannot find ends a performed clipboard write
//! `indeterminate`. A server that does check an effect says so in its
//! `initialize` answer, under `capabilities.experimental["adk/effect-checks"]`:
//! for each tool, the postcondition it checks, without the digest, which
//! the chain fills in from the action's arguments. For example
//! `{"write_clipboard": {"kind": "ui_element", "role": "AXTextArea",
//! "label": "Clipboard contents"}}`. For `set_value` a server announces the
//! kind alone (`{"kind": "ui_element"}`) and the client names the element
//! the action names; for `fill_form` it announces the form's role
//! (`{"kind": "ui_element", "role": "AXForm"}`, no label), and the check is
//! of every field the action names, with the digest of all their values
//! ([`crate::runtime::form_values_digest`]). A server that
//! announces nothing gets nothing derived.

use serde_json::{Map, Value};

use crate::contracts::ActionPostcondition;
use crate::runtime::NamedEffect;

pub use crate::contracts::EFFECT_CHECKS_CAPABILITY;

/// The announced checks, by tool: postconditions without their digest.
#[derive(Debug, Clone, Default)]
pub(super) struct AnnouncedChecks(Map<String, Value>);

impl AnnouncedChecks {
    /// What the server announced in its `initialize` answer, if anything.
    pub(super) fn from_server(info: Option<&rmcp::model::ServerPeerInfo>) -> Self {
        info.and_then(|info| info.capabilities.experimental.as_ref())
            .and_then(|experimental| experimental.get(EFFECT_CHECKS_CAPABILITY))
            .map(|checks| Self(checks.clone()))
            .unwrap_or_default()
    }

    /// The postcondition the server checks for `effect`: its announced
    /// `ui_element` with the effect's digest. `None` when it announced none
    /// for the tool or announced one that is not a valid postcondition.
    pub(super) fn postcondition(&self, effect: &NamedEffect<'_>) -> Option<ActionPostcondition> {
        let mut announced = self.0.get(effect.tool())?.as_object()?.clone();
        if announced.get("kind").and_then(Value::as_str) != Some("ui_element") {
            return None;
        }
        // An element check is of the element the action names: the server
        // announces the kind only, and the client names the element.
        // A form's check names no one element: it is of every field the
        // action names, and its digest is of all their values.
        if matches!(effect, NamedEffect::FormValues { .. })
            && (announced.get("role").and_then(Value::as_str)
                != Some(crate::runtime::FORM_CHECK_ROLE)
                || announced.contains_key("label"))
        {
            return None;
        }
        if let Some((role, label)) = effect.element() {
            if announced.contains_key("role") || announced.contains_key("label") {
                return None;
            }
            announced.insert("role".into(), Value::String(role.to_owned()));
            // The empty label names the element with no label: the check
            // names its role alone.
            if !label.is_empty() {
                announced.insert("label".into(), Value::String(label.to_owned()));
            }
        }
        announced.insert("exists".into(), Value::Bool(true));
        announced.insert(
            "valueDigest".into(),
            Value::String(effect.expected_digest()),
        );
        serde_json::from_value(Value::Object(announced)).ok()
    }
}
