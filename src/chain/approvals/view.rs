//! What a person is shown of a suspended action: the checkpoint's view,
//! its seal verified on every read, with every secret field's value
//! masked wherever it is shown; and the listing of what waits.
//!
//! Apart from `decision`, which records and checks what the person then
//! decides: showing and deciding are two steps, and the page does the
//! first many times for each second.

use super::checkpoint::{CheckpointBody, CheckpointId, open_record};
use super::stores::CheckpointStore;
use crate::ComputerUseError;
use crate::contracts::{DataLabel, ExecutionMode, PolicyVerdict, WindowId};

/// What a person is shown about a suspended action.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointView {
    /// The checkpoint.
    pub id: CheckpointId,
    /// The runtime session it was suspended in.
    pub session_id: String,
    /// Who it acts for.
    pub principal_id: String,
    /// Their tenant.
    pub tenant_id: String,
    /// The agent that proposed it, if named.
    pub agent_id: Option<String>,
    /// The execution group it was proposed in, if any.
    pub execution_group_id: Option<String>,
    /// The action.
    pub action_id: String,
    /// The low-level tool.
    pub tool: String,
    /// Its operation.
    pub operation: String,
    /// The mode it would run in.
    pub mode: ExecutionMode,
    /// The application it targets, if the action names one.
    pub target_app_id: Option<String>,
    /// The window it targets, if the action names one.
    pub target_window_id: Option<WindowId>,
    /// The data it handles.
    pub data_labels: Vec<DataLabel>,
    /// The policy's verdict.
    pub policy_decision: PolicyVerdict,
    /// The policy's reasons.
    pub reasons: Vec<String>,
    /// The digest an approval must name: the action's.
    pub action_digest: String,
    /// The digest of the policy it was previewed under.
    pub policy_digest: String,
    /// When the previewed envelope expires (RFC 3339).
    pub expires_at: String,
    /// Whether a decision record lies beside it (check it with
    /// [`decision_of`](super::decision::decision_of) and the approver's public key).
    pub decided: bool,
    /// The arguments the action runs with, as sealed (show them with
    /// [`CheckpointView::shown_arguments`], which masks secrets).
    pub arguments: Option<serde_json::Value>,
    /// The target window's bounds, when the evidence names them.
    pub target_bounds: Option<crate::contracts::Bounds>,
    /// The visual frame the action was previewed from, if the runtime sent
    /// one.
    pub frame: Option<crate::runtime::ImageContent>,
    /// Whether the frame shows the target window alone (its top left is
    /// the window's top left), not the whole screen.
    pub frame_window_only: bool,
}

/// What a masked value is shown as.
const MASK: &str = "•••••";

/// Every string and number in `value` masked, the keys and shape kept.
fn mask(value: &serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            serde_json::Value::Object(map.iter().map(|(k, v)| (k.clone(), mask(v))).collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.iter().map(mask).collect())
        }
        serde_json::Value::String(_) | serde_json::Value::Number(_) => {
            serde_json::Value::String(MASK.into())
        }
        other => other.clone(),
    }
}

/// Whether an element entry (`{role, label, value}`) writes a secret: a
/// password field's role, or a role or label that names a secret.
fn field_is_secret(entry: &serde_json::Value) -> bool {
    ["role", "label"].iter().any(|key| {
        entry
            .get(key)
            .and_then(serde_json::Value::as_str)
            .is_some_and(|text| {
                text == crate::contracts::SECURE_FIELD_ROLE
                    || crate::contracts::names_a_secret(text)
            })
    })
}

/// One field an element action writes, as a person may see it on an
/// approval page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldWrite {
    /// The field's role, as the action names it (`AXTextField`, ...).
    pub role: String,
    /// The field's label, as the action names it.
    pub label: String,
    /// The value written, or `•••••` when masked.
    pub value: String,
    /// Whether the value is masked (a secret's field, or an action that
    /// handles secrets).
    pub masked: bool,
}

impl CheckpointView {
    /// Whether the action handles data that must not be shown: its
    /// arguments' values are then masked.
    pub fn handles_secrets(&self) -> bool {
        self.data_labels
            .iter()
            .any(|label| matches!(label, DataLabel::Credential | DataLabel::Payment))
    }

    /// The arguments as a person may see them: every string and number
    /// value masked when the action handles secrets (credentials, payment
    /// data), the keys and shape kept; and, whatever the labels, the value
    /// written into a field whose role or label names a secret (see
    /// [`CheckpointView::field_writes`]).
    pub fn shown_arguments(&self) -> Option<serde_json::Value> {
        let arguments = self.arguments.as_ref()?;
        Some(if self.handles_secrets() {
            mask(arguments)
        } else {
            self.secret_fields_masked()?
        })
    }

    /// The arguments with only the values written into secret fields
    /// masked: what a person may ask to see of an action labelled as
    /// handling secrets. A password field's value never leaves the sealed
    /// checkpoint for a page.
    pub fn secret_fields_masked(&self) -> Option<serde_json::Value> {
        let mut arguments = self.arguments.clone()?;
        let hide = |entry: &mut serde_json::Value| {
            if field_is_secret(entry)
                && let Some(value) = entry.get_mut("value")
            {
                *value = mask(value);
            }
        };
        hide(&mut arguments);
        if let Some(fields) = arguments
            .get_mut("fields")
            .and_then(serde_json::Value::as_array_mut)
        {
            fields.iter_mut().for_each(hide);
        }
        Some(arguments)
    }

    /// The fields an element action writes (`set_value`, `fill_form`), each
    /// with its role and label and the value as a person may see it:
    /// masked when the field's role or label names a secret (a password
    /// field, a PIN) or the action handles secrets. Empty for other tools.
    pub fn field_writes(&self) -> Vec<FieldWrite> {
        let Some(arguments) = self.arguments.as_ref() else {
            return Vec::new();
        };
        let entries: Vec<&serde_json::Value> = match self.tool.as_str() {
            crate::contracts::catalogue::tool::SET_VALUE => vec![arguments],
            crate::contracts::catalogue::tool::FILL_FORM => arguments
                .get("fields")
                .and_then(serde_json::Value::as_array)
                .map(|fields| fields.iter().collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let text = |entry: &serde_json::Value, key: &str| {
            entry
                .get(key)
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        entries
            .into_iter()
            .map(|entry| {
                let masked = self.handles_secrets() || field_is_secret(entry);
                FieldWrite {
                    role: text(entry, "role"),
                    label: text(entry, "label"),
                    value: if masked {
                        MASK.to_owned()
                    } else {
                        text(entry, "value")
                    },
                    masked,
                }
            })
            .collect()
    }

    /// Where the pointer acts, when the arguments name a point
    /// (`coordinate`, or `x`/`y`).
    pub fn pointer(&self) -> Option<(f64, f64)> {
        let arguments = self.arguments.as_ref()?;
        if let Some([x, y]) = arguments
            .get("coordinate")
            .and_then(serde_json::Value::as_array)
            .map(Vec::as_slice)
        {
            return Some((x.as_f64()?, y.as_f64()?));
        }
        Some((arguments.get("x")?.as_f64()?, arguments.get("y")?.as_f64()?))
    }
}

/// The checkpoint `id` as a person sees it, its seal verified, with the
/// decision recorded beside it, if any.
pub fn inspect(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
) -> Result<CheckpointView, ComputerUseError> {
    let records = store.load(id)?;
    let body = open_record(store, id, &records)?;
    view_of(store, id, &body)
}

/// What a person is shown of the opened checkpoint `body`.
pub(crate) fn view_of(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    body: &CheckpointBody,
) -> Result<CheckpointView, ComputerUseError> {
    let decided = store.decision(id)?.is_some();
    let envelope = &body.preview.envelope;
    let target = envelope.target.as_ref();
    Ok(CheckpointView {
        id: id.clone(),
        session_id: body.session_id.clone(),
        principal_id: body.principal_id.clone(),
        tenant_id: body.tenant_id.clone(),
        agent_id: body.agent_id.clone(),
        execution_group_id: body.execution_group_id.clone(),
        action_id: envelope.action_id.clone(),
        tool: envelope.tool.clone(),
        operation: envelope.operation.clone(),
        mode: envelope.requested_mode,
        target_app_id: target.map(|t| t.app_id.clone()),
        target_window_id: target.and_then(|t| t.window_id.clone()),
        data_labels: envelope.data_labels.clone(),
        policy_decision: body.preview.policy.decision,
        reasons: body.preview.policy.reasons.clone(),
        action_digest: envelope.args_digest.clone(),
        policy_digest: body.preview.policy.policy_digest.clone(),
        expires_at: envelope.expires_at.to_string(),
        decided,
        arguments: body.arguments.clone(),
        target_bounds: target.and_then(|t| t.bounds.clone()),
        frame: body
            .frame
            .as_ref()
            .map(|frame| crate::runtime::ImageContent {
                data: frame.data.clone(),
                mime_type: frame.mime_type.clone(),
            }),
        frame_window_only: body.frame.as_ref().is_some_and(|frame| frame.window_only),
    })
}

/// One checkpoint of a listing: its id, and its view or why it could not be
/// read.
pub type Listed = (CheckpointId, Result<CheckpointView, ComputerUseError>);

/// Every checkpoint waiting in `store`, as [`inspect`] shows it, each with
/// its own result: one that fails its seal is reported as an error, never
/// shown as if it were sound, and does not hide the others.
pub fn pending(store: &dyn CheckpointStore) -> Result<Vec<Listed>, ComputerUseError> {
    Ok(store
        .ids()?
        .into_iter()
        .map(|id| {
            let view = inspect(store, &id);
            (id, view)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn view(tool: &str, arguments: serde_json::Value, labels: Vec<DataLabel>) -> CheckpointView {
        CheckpointView {
            id: "0123456789abcdef0123456789abcdef".parse().unwrap(),
            session_id: "s".into(),
            principal_id: "p".into(),
            tenant_id: "t".into(),
            agent_id: None,
            execution_group_id: None,
            action_id: "a".into(),
            tool: tool.into(),
            operation: tool.into(),
            mode: ExecutionMode::Foreground,
            target_app_id: None,
            target_window_id: None,
            data_labels: labels,
            policy_decision: PolicyVerdict::Confirm,
            reasons: Vec::new(),
            action_digest: String::new(),
            policy_digest: String::new(),
            expires_at: String::new(),
            decided: false,
            arguments: Some(arguments),
            target_bounds: None,
            frame: None,
            frame_window_only: false,
        }
    }

    /// A password field's value, or a PIN's, is masked in every way the
    /// view shows arguments, whatever the agent's labels; other fields
    /// are shown as they are.
    #[test]
    fn a_secret_fields_value_is_masked_in_every_showing_whatever_the_labels() {
        let form = json!({ "fields": [
            { "role": "AXTextField", "label": "Name", "value": "Ada" },
            { "role": "AXSecureTextField", "label": "Password", "value": "hunter2" },
            { "role": "AXTextField", "label": "Card PIN", "value": "4321" },
        ] });
        for labels in [vec![DataLabel::Public], vec![DataLabel::Credential]] {
            let v = view("fill_form", form.clone(), labels);
            for shown in [v.shown_arguments(), v.secret_fields_masked()] {
                let shown = shown.unwrap().to_string();
                assert!(
                    !shown.contains("hunter2") && !shown.contains("4321"),
                    "{shown}"
                );
            }
            let fields = v.field_writes();
            assert_eq!(fields.len(), 3);
            assert!(fields[1].masked && fields[2].masked);
            assert_eq!(fields[1].value, MASK);
        }
        // Unlabelled, the harmless field is shown; labelled as handling
        // credentials, every value is masked.
        let open = view("fill_form", form.clone(), vec![DataLabel::Public]);
        assert!(open.shown_arguments().unwrap().to_string().contains("Ada"));
        assert_eq!(open.field_writes()[0].value, "Ada");
        let closed = view("fill_form", form, vec![DataLabel::Credential]);
        assert!(
            !closed
                .shown_arguments()
                .unwrap()
                .to_string()
                .contains("Ada")
        );
        let one = view(
            "set_value",
            json!({ "role": "AXSecureTextField", "label": "Password", "value": 1234 }),
            vec![],
        );
        assert!(!one.shown_arguments().unwrap().to_string().contains("1234"));
        assert!(
            view("write_clipboard", json!({ "text": "x" }), vec![])
                .field_writes()
                .is_empty()
        );
    }
}
