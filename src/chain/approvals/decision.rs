//! A person's decision about a suspended action, kept beside its
//! checkpoint.
//!
//! A person should see what they approve without resuming anything, and an
//! agent waiting on any machine should learn the answer from the store it
//! suspended to. So a checkpoint can be inspected (its seal is verified on
//! every read), and a decision (an approval of that exact action, or a
//! denial with a reason) is recorded beside it once, *signed* with the
//! approver's key. The agent holds only the approver's public key: it can
//! check a decision, never make one (the store's sealing key, which the
//! agent must hold to suspend, proves nothing about who decided). The
//! waiting session then resumes with the approval, or retires the
//! checkpoint on a denial; either way only once, and a checkpoint with a
//! decision recorded resumes only by that decision.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use std::sync::Arc;

use super::approval::Approval;
use super::checkpoint::{CheckpointBody, CheckpointId, open_record};
use super::refusal::CheckpointRefusal;
use super::stores::CheckpointStore;
use crate::ComputerUseError;
use crate::contracts::{DataLabel, ExecutionMode, PolicyVerdict, WindowId};

/// The key a person's approvals tool signs decisions with. Keep it away
/// from the agents: whoever holds it can approve.
pub struct ApproverKey(ed25519_dalek::SigningKey);

/// The public half: what an agent holds to check a decision.
#[derive(Clone, PartialEq, Eq)]
pub struct ApproverPublicKey(ed25519_dalek::VerifyingKey);

fn key_error(field: &str, message: &str) -> ComputerUseError {
    ComputerUseError::InvalidRequest {
        field: field.to_owned(),
        message: message.to_owned(),
    }
}

fn bytes32(field: &str, text: &str) -> Result<[u8; 32], ComputerUseError> {
    hex::decode(text.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| key_error(field, "expected 64 hex digits (32 bytes)"))
}

impl ApproverKey {
    /// A key from its 32 secret bytes, written as 64 hex digits.
    pub fn from_hex(text: &str) -> Result<Self, ComputerUseError> {
        Ok(Self(ed25519_dalek::SigningKey::from_bytes(&bytes32(
            "approverKey",
            text,
        )?)))
    }

    /// Its public half, for the agents.
    pub fn public(&self) -> ApproverPublicKey {
        ApproverPublicKey(self.0.verifying_key())
    }
}

impl std::fmt::Debug for ApproverKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApproverKey(<secret>)")
    }
}

impl ApproverPublicKey {
    /// A public key written as 64 hex digits.
    pub fn from_hex(text: &str) -> Result<Self, ComputerUseError> {
        ed25519_dalek::VerifyingKey::from_bytes(&bytes32("approverPublicKey", text)?)
            .map(Self)
            .map_err(|_| key_error("approverPublicKey", "not a valid Ed25519 public key"))
    }

    /// The key as 64 hex digits.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0.as_bytes())
    }
}

impl std::fmt::Debug for ApproverPublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ApproverPublicKey({})", self.to_hex())
    }
}

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
    /// [`decision_of`] and the approver's public key).
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

/// What a person decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Approved, with this approval of the exact action.
    Approve(Approval),
    /// Denied, for this reason.
    Deny {
        /// Why.
        reason: String,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SignedDecision {
    body: Value,
    signature: String,
}

impl Decision {
    fn to_body(&self, id: &CheckpointId) -> Value {
        match self {
            Self::Approve(approval) => {
                json!({ "checkpointId": id.as_str(), "approve": approval.to_json() })
            }
            Self::Deny { reason } => {
                json!({ "checkpointId": id.as_str(), "deny": { "reason": reason } })
            }
        }
    }

    fn from_body(id: &CheckpointId, body: &Value) -> Result<Self, ComputerUseError> {
        let fail = |detail: &'static str| {
            ComputerUseError::checkpoint(id, CheckpointRefusal::DecisionMalformed { detail })
        };
        if body.get("checkpointId").and_then(Value::as_str) != Some(id.as_str()) {
            return Err(fail("is for another checkpoint"));
        }
        match (body.get("approve"), body.get("deny")) {
            (Some(approval), None) => Ok(Self::Approve(Approval::from_json(approval)?)),
            (None, Some(deny)) => Ok(Self::Deny {
                reason: deny
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            }),
            _ => Err(fail("is neither an approval nor a denial")),
        }
    }
}

fn message(body: &Value) -> String {
    format!("adk-decision\n{}", crate::digest::canonical_json(body))
}

fn sign(
    key: &ApproverKey,
    id: &CheckpointId,
    decision: &Decision,
) -> Result<String, ComputerUseError> {
    use ed25519_dalek::Signer;
    let body = decision.to_body(id);
    let signature = key.0.sign(message(&body).as_bytes());
    serde_json::to_string(&SignedDecision {
        body,
        signature: hex::encode(signature.to_bytes()),
    })
    .map_err(|err| ComputerUseError::decode("decision record", err))
}

fn verify(
    key: &ApproverPublicKey,
    id: &CheckpointId,
    record: &str,
) -> Result<Decision, ComputerUseError> {
    use ed25519_dalek::Verifier;
    let fail = |refusal: CheckpointRefusal| ComputerUseError::checkpoint(id, refusal);
    let signed: SignedDecision = serde_json::from_str(record).map_err(|_| {
        fail(CheckpointRefusal::DecisionMalformed {
            detail: "does not decode",
        })
    })?;
    let signature = hex::decode(&signed.signature)
        .ok()
        .and_then(|b| <[u8; 64]>::try_from(b).ok())
        .map(|b| ed25519_dalek::Signature::from_bytes(&b))
        .ok_or_else(|| {
            fail(CheckpointRefusal::DecisionMalformed {
                detail: "has a signature that does not decode",
            })
        })?;
    key.0
        .verify(message(&signed.body).as_bytes(), &signature)
        .map_err(|_| fail(CheckpointRefusal::DecisionUnsigned))?;
    Decision::from_body(id, &signed.body)
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

/// Records `decision` beside the checkpoint `id`, once, signed with the
/// approver's `key`. An approval must name this exact action (its id and
/// both digests), checked here so a mistaken approval is refused to the
/// person making it. An approval of a checkpoint whose envelope expired is
/// recorded too: `Session::resume_decided` previews the same action again
/// and goes on only if both digests are unchanged. A decision is refused
/// once the checkpoint was resumed, with
/// [`CheckpointRefusal::ResumedWithoutDecision`] when the agent resumed it
/// on its own approval first: a person is never told a decision was
/// recorded that changed nothing.
pub fn decide(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    decision: &Decision,
    key: &ApproverKey,
) -> Result<(), ComputerUseError> {
    let records = match store.load(id) {
        Ok(records) => records,
        Err(err)
            if err.checkpoint_refusal() == Some(&CheckpointRefusal::AlreadyResumed)
                && store.claimed_without_decision(id)? =>
        {
            return Err(ComputerUseError::checkpoint(
                id,
                CheckpointRefusal::ResumedWithoutDecision,
            ));
        }
        Err(err) => return Err(err),
    };
    let body = open_record(store, id, &records)?;
    if let Decision::Approve(approval) = decision {
        match approval.fresh_target() {
            None => approval.check_against(&body.preview)?,
            // Approved on fresh evidence: the action digest is the fresh
            // preview's (it covers the evidence), so what can be checked
            // here is the action, the policy and the target's identity; the
            // agent checks the fresh preview itself before it runs.
            Some(fresh) => {
                crate::binding::bind(
                    "Approval",
                    "actionId",
                    &body.preview.envelope.action_id,
                    approval.action_id(),
                )?;
                crate::binding::bind(
                    "Approval",
                    "policyDigest",
                    &body.preview.policy.policy_digest,
                    approval.policy_digest(),
                )?;
                super::evidence::same_as_sealed_target(
                    id,
                    &body.preview.envelope.tool,
                    body.preview.envelope.target.as_ref(),
                    &fresh,
                )?;
            }
        }
    }
    store.record_decision(id, &sign(key, id, decision)?)
}

/// The decision recorded for `id`, if any, its signature checked against
/// the approver's public `key`.
pub fn decision_of(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    key: &ApproverPublicKey,
) -> Result<Option<Decision>, ComputerUseError> {
    match store.decision(id)? {
        Some(record) => Ok(Some(verify(key, id, &record)?)),
        None => Ok(None),
    }
}

/// The decision recorded for `id` with the exact record it was read from
/// (a claim on a decision names that record).
pub(crate) fn recorded_decision(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    key: &ApproverPublicKey,
) -> Result<Option<(Decision, String)>, ComputerUseError> {
    match store.decision(id)? {
        Some(record) => Ok(Some((verify(key, id, &record)?, record))),
        None => Ok(None),
    }
}

/// Polls `store` for a decision on `id`, every `every`, until `within` has
/// passed: a bounded poll (any store can answer it; no notification channel
/// is assumed). Each look is one store call, made on Tokio's blocking pool
/// (a PostgreSQL look is itself bounded by the store's statement timeout).
/// `None` when none was made in time.
pub async fn wait_for_decision(
    store: Arc<dyn CheckpointStore>,
    id: &CheckpointId,
    key: &ApproverPublicKey,
    every: Duration,
    within: Duration,
) -> Result<Option<Decision>, ComputerUseError> {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let look = {
            let (id, key) = (id.clone(), key.clone());
            super::offload::run(&store, "read a decision", move |store| {
                decision_of(store, &id, &key)
            })
            .await?
        };
        if let Some(decision) = look {
            return Ok(Some(decision));
        }
        if tokio::time::Instant::now() + every > deadline {
            return Ok(None);
        }
        tokio::time::sleep(every).await;
    }
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
