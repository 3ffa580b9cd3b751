//! Approvals: who said yes, to which action, under which policy.
//!
//! An approval names the action (its id), the action digest and the policy
//! digest it was given for, and exactly one authority: a grant id, or the runtime holding the
//! approval itself. The enum makes "both" and "neither" unwritable in Rust;
//! the JSON form is parsed strictly to the same effect. The bearer token of a
//! grant never passes through here.

use serde::Deserialize;
use serde_json::Value;

use crate::ComputerUseError;
use crate::binding::bind;
use crate::contracts::{ActionPreview, ApprovalGrant, TargetEvidence};

use super::super::route::RouteKind;

/// Where the authority for an approved action lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalSource {
    /// A grant issued by the runtime (`approve_action`), passed by id at execution.
    Grant(String),
    /// The runtime holds the approval; nothing is passed at execution.
    RuntimeHeld,
}

/// A person's approval of one previewed action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    action_id: String,
    action_digest: String,
    policy_digest: String,
    source: ApprovalSource,
    /// The fresh target evidence (as JSON) the approver previewed the
    /// action on, when the sealed evidence had aged: the digests name that
    /// preview.
    fresh_target: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ApprovalJson {
    action_id: String,
    action_digest: String,
    policy_digest: String,
    #[serde(default)]
    grant_id: Option<String>,
    #[serde(default)]
    runtime_approved: Option<bool>,
    #[serde(default)]
    fresh_target: Option<TargetEvidence>,
}

impl Approval {
    /// An approval of action `action_id`, backed by a grant id.
    pub fn with_grant(
        action_id: impl Into<String>,
        action_digest: impl Into<String>,
        policy_digest: impl Into<String>,
        grant_id: impl Into<String>,
    ) -> Self {
        Self {
            action_id: action_id.into(),
            action_digest: action_digest.into(),
            policy_digest: policy_digest.into(),
            source: ApprovalSource::Grant(grant_id.into()),
            fresh_target: None,
        }
    }

    /// An approval of action `action_id` that the runtime holds.
    pub fn runtime_held(
        action_id: impl Into<String>,
        action_digest: impl Into<String>,
        policy_digest: impl Into<String>,
    ) -> Self {
        Self {
            action_id: action_id.into(),
            action_digest: action_digest.into(),
            policy_digest: policy_digest.into(),
            source: ApprovalSource::RuntimeHeld,
            fresh_target: None,
        }
    }

    /// The approval a runtime grant stands for, for the action the grant
    /// was asked for (a grant names the action's digest, not its id).
    pub fn from_grant(action_id: impl Into<String>, grant: &ApprovalGrant) -> Self {
        let fields = grant.fields();
        Self::with_grant(
            action_id,
            &fields.action_digest,
            &fields.policy_digest,
            &fields.grant_id,
        )
    }

    /// This approval, of the action previewed again on `target`: fresh
    /// evidence of the sealed target, taken by the approver because the
    /// sealed evidence had aged. The digests must be that preview's; the
    /// agent previews on exactly this evidence, and the approval carries
    /// over only when it shows the sealed target with nothing but its
    /// pixels changed.
    pub fn with_fresh_target(mut self, target: &TargetEvidence) -> Self {
        self.fresh_target = serde_json::to_value(target).ok();
        self
    }

    /// The fresh target evidence this approval was given on, if the
    /// approver took any ([`Approval::with_fresh_target`]).
    pub fn fresh_target(&self) -> Option<TargetEvidence> {
        self.fresh_target
            .as_ref()
            .and_then(|value| serde_json::from_value(value.clone()).ok())
    }

    /// The JSON [`Approval::from_json`] reads back.
    pub fn to_json(&self) -> Value {
        let mut value = serde_json::json!({
            "actionId": self.action_id,
            "actionDigest": self.action_digest,
            "policyDigest": self.policy_digest,
        });
        match &self.source {
            ApprovalSource::Grant(grant) => value["grantId"] = Value::String(grant.clone()),
            ApprovalSource::RuntimeHeld => value["runtimeApproved"] = Value::Bool(true),
        }
        if let Some(target) = &self.fresh_target {
            value["freshTarget"] = target.clone();
        }
        value
    }

    /// Reads `{ "actionId", "actionDigest", "policyDigest", "grantId" }` or
    /// `{ "actionId", "actionDigest", "policyDigest", "runtimeApproved": true }`,
    /// each with an optional `freshTarget` (target evidence).
    ///
    /// Both authorities, neither, `runtimeApproved: false`, an empty grant id
    /// or an unknown field is an error.
    pub fn from_json(value: &Value) -> Result<Self, ComputerUseError> {
        let parsed: ApprovalJson = serde_json::from_value(value.clone())
            .map_err(|err| ComputerUseError::decode("approval", err))?;
        let source = match (parsed.grant_id, parsed.runtime_approved) {
            (Some(grant), None) if !grant.is_empty() => ApprovalSource::Grant(grant),
            (None, Some(true)) => ApprovalSource::RuntimeHeld,
            (Some(_), Some(_)) => {
                return Err(ComputerUseError::InvalidRequest {
                    field: "approval".into(),
                    message: "expected exactly one authority, got both grantId and runtimeApproved"
                        .into(),
                });
            }
            (Some(_), None) => {
                return Err(ComputerUseError::InvalidRequest {
                    field: "grantId".into(),
                    message: "expected a non-empty grant id".into(),
                });
            }
            (None, Some(false)) => {
                return Err(ComputerUseError::InvalidRequest {
                    field: "runtimeApproved".into(),
                    message: "expected true (the runtime holds the approval) or the field left out"
                        .into(),
                });
            }
            (None, None) => {
                return Err(ComputerUseError::InvalidRequest {
                    field: "approval".into(),
                    message: "expected exactly one authority (grantId or runtimeApproved: true), got neither".into(),
                });
            }
        };
        Ok(Self {
            action_id: parsed.action_id,
            action_digest: parsed.action_digest,
            policy_digest: parsed.policy_digest,
            source,
            fresh_target: parsed
                .fresh_target
                .as_ref()
                .and_then(|target| serde_json::to_value(target).ok()),
        })
    }

    /// The approved action's id.
    pub fn action_id(&self) -> &str {
        &self.action_id
    }

    /// The approved action digest.
    pub fn action_digest(&self) -> &str {
        &self.action_digest
    }

    /// The approved policy digest.
    pub fn policy_digest(&self) -> &str {
        &self.policy_digest
    }

    /// The authority.
    pub fn source(&self) -> &ApprovalSource {
        &self.source
    }

    /// The grant id to pass at execution, if any.
    pub fn grant_id(&self) -> Option<&str> {
        match &self.source {
            ApprovalSource::Grant(id) => Some(id),
            ApprovalSource::RuntimeHeld => None,
        }
    }

    /// Refuses unless this approval is for exactly this preview's action
    /// (id and digest) and policy.
    pub fn check_against(&self, preview: &ActionPreview) -> Result<(), ComputerUseError> {
        bind(
            "Approval",
            "actionId",
            &preview.envelope.action_id,
            &self.action_id,
        )?;
        bind(
            "Approval",
            "actionDigest",
            &preview.envelope.args_digest,
            &self.action_digest,
        )?;
        bind(
            "Approval",
            "policyDigest",
            &preview.policy.policy_digest,
            &self.policy_digest,
        )
    }
}

/// How an `Approved` action came to be allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authority {
    /// The policy allowed it outright (the preview was executable).
    Policy,
    /// A person approved it.
    Approved(Box<Approval>),
}

impl Authority {
    /// Re-checks the route and the approval against the preview: a policy
    /// authority needs a preview the route table allows; an approval needs
    /// one the table sends to a person, and must name this action, its
    /// digest and its policy.
    pub(crate) fn check(&self, preview: &ActionPreview) -> Result<(), ComputerUseError> {
        let kind = super::super::route::route_kind(preview);
        match (self, kind) {
            (Self::Policy, RouteKind::Allowed) => Ok(()),
            (Self::Approved(approval), RouteKind::NeedsApproval) => approval.check_against(preview),
            (Self::Policy, _) => Err(ComputerUseError::invalid(
                "ActionPreview",
                "executable",
                "a preview policy allows (allow, executable, no blocker) for an action allowed by policy",
                format!("{kind:?}"),
            )),
            (Self::Approved(_), _) => Err(ComputerUseError::invalid(
                "ActionPreview",
                "blocker",
                "a preview that needs approval for an approved action",
                format!("{kind:?}"),
            )),
        }
    }

    /// The grant id to pass to `execute_action`.
    pub fn grant_id(&self) -> Option<&str> {
        match self {
            Self::Policy => None,
            Self::Approved(approval) => approval.grant_id(),
        }
    }
}
