//! Bounded approval grants.
//!
//! A grant is a capability with use accounting. `exact_action` binds one
//! digest for one use; `session_operation` may only cover a bounded,
//! reversible `set_value`/`fill_form` edit. The bearer token that a runtime may
//! issue alongside a grant is not part of this type and never enters ours.

use crate::contracts::catalogue::tool;
use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{ActionClass, ExecutionMode, check_len};
use crate::ComputerUseError;
use crate::digest::is_bare_sha256;

/// What a grant covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// Exactly one action, once.
    ExactAction,
    /// A bounded run of one reversible edit operation in a session.
    SessionOperation,
}

/// The plain, unchecked form; convert with `ApprovalGrant::try_from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalGrantFields {
    /// The grant's id.
    pub grant_id: String,
    /// What it covers.
    pub scope: ApprovalScope,
    /// The principal who approved.
    pub principal_id: String,
    /// The session it belongs to.
    pub session_id: String,
    /// The approved action's `argsDigest`.
    pub action_digest: String,
    /// Digest of the approved scope.
    pub scope_digest: String,
    /// The policy it was approved under.
    pub policy_digest: String,
    /// The tool approved.
    pub tool: String,
    /// The operation approved.
    pub operation: String,
    /// The action class approved.
    pub action_class: ActionClass,
    /// The mode approved.
    pub mode: ExecutionMode,
    /// When it was issued (RFC 3339).
    pub issued_at: String,
    /// When it stops authorizing (RFC 3339).
    pub expires_at: String,
    /// Uses left (0 to 100).
    pub remaining_uses: u32,
    /// Actions that consumed a use (unique, at most 100).
    pub consumed_by_action_ids: Vec<String>,
}

/// An approval grant that satisfies `approval-grant.schema.json` and the
/// scope rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ApprovalGrantFields", into = "ApprovalGrantFields")]
pub struct ApprovalGrant(ApprovalGrantFields);

const OBJECT: &str = "ApprovalGrant";
/// Most uses a grant may hold or have consumed.
pub const MAX_GRANT_USES: usize = 100;
/// Most uses a `session_operation` grant may cover in all (`approve_action` allows 1 to 20).
pub const MAX_SESSION_OPERATION_USES: usize = 20;
/// The only tools a `session_operation` grant may cover.
pub const SESSION_OPERATION_TOOLS: [&str; 2] = [tool::SET_VALUE, tool::FILL_FORM];

impl TryFrom<ApprovalGrantFields> for ApprovalGrant {
    type Error = ComputerUseError;

    fn try_from(grant: ApprovalGrantFields) -> Result<Self, Self::Error> {
        check_len(OBJECT, "grantId", &grant.grant_id, 1, 128)?;
        check_len(OBJECT, "principalId", &grant.principal_id, 1, 256)?;
        check_len(OBJECT, "sessionId", &grant.session_id, 1, 256)?;
        check_len(OBJECT, "policyDigest", &grant.policy_digest, 1, 256)?;
        check_len(OBJECT, "tool", &grant.tool, 0, 128)?;
        check_len(OBJECT, "operation", &grant.operation, 0, 128)?;
        for (field, digest) in [
            ("actionDigest", &grant.action_digest),
            ("scopeDigest", &grant.scope_digest),
        ] {
            if !is_bare_sha256(digest) {
                return Err(ComputerUseError::invalid(
                    OBJECT,
                    field,
                    "64 lowercase hex digits",
                    digest.clone(),
                ));
            }
        }
        let issued = crate::clock::parse_rfc3339(OBJECT, "issuedAt", &grant.issued_at)?;
        let expires = crate::clock::parse_rfc3339(OBJECT, "expiresAt", &grant.expires_at)?;
        if expires <= issued {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "expiresAt",
                format!("a time after issuedAt ({})", grant.issued_at),
                grant.expires_at.clone(),
            ));
        }
        let remaining = grant.remaining_uses as usize;
        if remaining > MAX_GRANT_USES {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "remainingUses",
                format!("at most {MAX_GRANT_USES}"),
                remaining.to_string(),
            ));
        }
        let consumed = &grant.consumed_by_action_ids;
        if consumed.len() > MAX_GRANT_USES {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "consumedByActionIds",
                format!("at most {MAX_GRANT_USES} entries"),
                consumed.len().to_string(),
            ));
        }
        for id in consumed {
            check_len(OBJECT, "consumedByActionIds", id, 1, 256)?;
        }
        if consumed.iter().collect::<HashSet<_>>().len() != consumed.len() {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "consumedByActionIds",
                "unique action ids",
                "a repeated id",
            ));
        }
        let total = remaining + consumed.len();
        match grant.scope {
            ApprovalScope::ExactAction => {
                if total != 1 {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "remainingUses",
                        "exactly one use in all for exact_action (remainingUses + consumed)",
                        total.to_string(),
                    ));
                }
                if grant.scope_digest != grant.action_digest {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "scopeDigest",
                        format!("the action digest {} for exact_action", grant.action_digest),
                        grant.scope_digest.clone(),
                    ));
                }
            }
            ApprovalScope::SessionOperation => {
                check_len(OBJECT, "tool", &grant.tool, 1, 128)?;
                check_len(OBJECT, "operation", &grant.operation, 1, 128)?;
                if !SESSION_OPERATION_TOOLS.contains(&grant.tool.as_str()) {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "tool",
                        "set_value or fill_form for session_operation",
                        grant.tool.clone(),
                    ));
                }
                if !SESSION_OPERATION_TOOLS.contains(&grant.operation.as_str()) {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "operation",
                        "set_value or fill_form for session_operation",
                        grant.operation.clone(),
                    ));
                }
                if grant.action_class != ActionClass::EditReversible {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "actionClass",
                        "edit_reversible for session_operation",
                        grant.action_class.as_str(),
                    ));
                }
                if total > MAX_SESSION_OPERATION_USES {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "remainingUses",
                        format!(
                            "at most {MAX_SESSION_OPERATION_USES} uses in all for session_operation"
                        ),
                        total.to_string(),
                    ));
                }
            }
        }
        Ok(Self(grant))
    }
}

impl From<ApprovalGrant> for ApprovalGrantFields {
    fn from(value: ApprovalGrant) -> Self {
        value.0
    }
}

impl ApprovalGrant {
    /// The checked fields.
    pub fn fields(&self) -> &ApprovalGrantFields {
        &self.0
    }
}
