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
use super::checkpoint::{CheckpointId, open_record};
use super::refusal::CheckpointRefusal;
use super::stores::CheckpointStore;
use crate::ComputerUseError;

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
