//! Who may do what: scopes bound to the identity the host verified.
//!
//! The principal and tenant are given by the host that authenticated the
//! caller. They are never read from model output or from a runtime answer, so
//! a prompt cannot change who the agent acts for.

pub mod secret;

use std::collections::BTreeSet;
use std::fmt;

use crate::ComputerUseError;
use crate::contracts::ExecutionMode;

/// An identity the host has verified.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VerifiedIdentity {
    principal_id: String,
    tenant_id: String,
}

impl VerifiedIdentity {
    /// Records the principal and tenant the host authenticated. Both must be non-empty.
    pub fn new(
        principal_id: impl Into<String>,
        tenant_id: impl Into<String>,
    ) -> Result<Self, ComputerUseError> {
        let principal_id = principal_id.into();
        let tenant_id = tenant_id.into();
        for (field, value) in [("principalId", &principal_id), ("tenantId", &tenant_id)] {
            if value.is_empty() {
                return Err(ComputerUseError::InvalidRequest {
                    field: field.into(),
                    message: "a verified identity needs a non-empty value".into(),
                });
            }
        }
        Ok(Self {
            principal_id,
            tenant_id,
        })
    }

    /// The principal.
    pub fn principal_id(&self) -> &str {
        &self.principal_id
    }

    /// The tenant.
    pub fn tenant_id(&self) -> &str {
        &self.tenant_id
    }
}

/// A permission the agent may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// `computer:plan`: observe and preview (shadow mode).
    Plan,
    /// `computer:execute:background`: mutate without taking focus.
    ExecuteBackground,
    /// `computer:execute:foreground`: mutate with focus and pointer.
    ExecuteForeground,
}

impl Scope {
    /// The scope's string form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Plan => "computer:plan",
            Self::ExecuteBackground => "computer:execute:background",
            Self::ExecuteForeground => "computer:execute:foreground",
        }
    }

    /// The scope a mode needs. Each mode needs its own scope: holding
    /// background never grants foreground.
    pub fn for_mode(mode: ExecutionMode) -> Self {
        match mode {
            ExecutionMode::Shadow => Self::Plan,
            ExecutionMode::Background => Self::ExecuteBackground,
            ExecutionMode::Foreground => Self::ExecuteForeground,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Scope {
    type Err = ComputerUseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [Self::Plan, Self::ExecuteBackground, Self::ExecuteForeground]
            .into_iter()
            .find(|scope| scope.as_str() == text)
            .ok_or_else(|| ComputerUseError::InvalidRequest {
                field: "scope".into(),
                message: format!(
                    "expected computer:plan, computer:execute:background or computer:execute:foreground, got {text:?}"
                ),
            })
    }
}

/// The scopes one verified identity holds.
///
/// ```
/// use adk_computer_use::auth::{ScopeAuthorizer, VerifiedIdentity};
/// use adk_computer_use::contracts::ExecutionMode;
///
/// let identity = VerifiedIdentity::new("principal-1", "tenant-1")?;
/// let authorizer = ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"])?;
/// authorizer.authorize("principal-1", "tenant-1", ExecutionMode::Background)?;
/// assert!(authorizer.authorize("principal-1", "tenant-1", ExecutionMode::Foreground).is_err());
/// assert!(authorizer.authorize("someone-else", "tenant-1", ExecutionMode::Background).is_err());
/// # Ok::<(), adk_computer_use::ComputerUseError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ScopeAuthorizer {
    identity: VerifiedIdentity,
    scopes: BTreeSet<Scope>,
}

impl ScopeAuthorizer {
    /// Grants `scopes` to `identity`. An unknown scope string is refused.
    pub fn new<'a>(
        identity: VerifiedIdentity,
        scopes: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, ComputerUseError> {
        let scopes = scopes
            .into_iter()
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        Ok(Self { identity, scopes })
    }

    /// The identity the scopes belong to.
    pub fn identity(&self) -> &VerifiedIdentity {
        &self.identity
    }

    /// Whether `scope` is held.
    pub fn holds(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// Refuses unless the caller is the verified principal of the verified
    /// tenant and holds the scope `mode` needs.
    pub fn authorize(
        &self,
        principal_id: &str,
        tenant_id: &str,
        mode: ExecutionMode,
    ) -> Result<(), ComputerUseError> {
        let required = Scope::for_mode(mode);
        if principal_id != self.identity.principal_id {
            return Err(ComputerUseError::Unauthorized {
                required: required.to_string(),
                reason: format!(
                    "principal {principal_id:?} is not the verified principal {:?}",
                    self.identity.principal_id
                ),
            });
        }
        if tenant_id != self.identity.tenant_id {
            return Err(ComputerUseError::Unauthorized {
                required: required.to_string(),
                reason: format!(
                    "tenant {tenant_id:?} is not the verified tenant {:?}",
                    self.identity.tenant_id
                ),
            });
        }
        self.require(mode)
    }

    /// Refuses unless the verified identity itself holds the scope `mode`
    /// needs: [`ScopeAuthorizer::authorize`] for a caller already known to be
    /// that identity, as every stage of a session is.
    pub(crate) fn require(&self, mode: ExecutionMode) -> Result<(), ComputerUseError> {
        let required = Scope::for_mode(mode);
        if self.holds(required) {
            return Ok(());
        }
        Err(ComputerUseError::Unauthorized {
            required: required.to_string(),
            reason: format!(
                "{:?} holds only [{}]",
                self.identity.principal_id,
                self.scopes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }
}
