//! Disclosure-safe evidence about whether a target is sensitive.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::ComputerUseError;

/// The role of a password field, in upstream's vocabulary.
pub const SECURE_FIELD_ROLE: &str = "AXSecureTextField";

/// Whether a field's role or label names it as holding a secret (a
/// password, a token, a PIN, a one-time code, an API key), as upstream's
/// servers read a field's label: a case-insensitive look for those words.
///
/// ```
/// use adk_computer_use::contracts::names_a_secret;
///
/// assert!(names_a_secret("Password"));
/// assert!(names_a_secret("One-time code"));
/// assert!(names_a_secret("API key"));
/// assert!(names_a_secret("Security code"));
/// assert!(names_a_secret("CVV"));
/// assert!(!names_a_secret("Email"));
/// ```
pub fn names_a_secret(text: &str) -> bool {
    let text = text.to_lowercase();
    // Upstream's list (pass, secret, credential, one-time, otp, API key,
    // pin, cvv, cvc, security code), with tokens and verification codes:
    // a look that errs towards a person's approval.
    [
        "pass",
        "secret",
        "token",
        "credential",
        "otp",
        "pin",
        "cvv",
        "cvc",
        "2fa",
    ]
    .iter()
    .any(|word| text.contains(word))
        || joined(&text, "one", "time")
        || joined(&text, "api", "key")
        || joined(&text, "security", "code")
        || joined(&text, "verification", "code")
}

/// `first` then `second`, with at most one character between them.
fn joined(text: &str, first: &str, second: &str) -> bool {
    text.match_indices(first).any(|(at, _)| {
        let rest = &text[at + first.len()..];
        rest.starts_with(second)
            || rest
                .char_indices()
                .nth(1)
                .is_some_and(|(i, _)| rest[i..].starts_with(second))
    })
}

/// The runtime's verdict on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensitivityAssessment {
    /// The target holds sensitive data.
    Sensitive,
    /// The target was checked and holds none.
    NonSensitive,
    /// The runtime could not tell.
    Unknown,
}

/// Where the evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SensitivitySource {
    /// The accessibility tree.
    Accessibility,
    /// No source was available.
    Unavailable,
}

/// One reason for the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum SensitivitySignal {
    SecureRole,
    SecureSubrole,
    ProtectedContent,
    UiaIsPassword,
    SensitiveLabel,
    AmbiguousMatch,
    ElementNotFound,
    InspectionError,
    InvalidField,
    NativeSignalUnavailable,
}

/// The plain, unchecked form; convert with `TargetSensitivityEvidence::try_from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SensitivityFields {
    /// The verdict.
    pub assessment: SensitivityAssessment,
    /// Where it came from.
    pub source: SensitivitySource,
    /// Why (unique, at most 10).
    pub signals: Vec<SensitivitySignal>,
    /// How many fields were checked (0 to 100).
    pub fields_checked: u32,
    /// When it was observed (RFC 3339).
    pub observed_at: String,
}

/// Sensitivity evidence that satisfies `target-sensitivity.schema.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SensitivityFields", into = "SensitivityFields")]
pub struct TargetSensitivityEvidence(SensitivityFields);

const OBJECT: &str = "TargetSensitivityEvidence";

/// Most signals one piece of evidence may carry.
pub const MAX_SIGNALS: usize = 10;
/// Most fields one piece of evidence may report checking.
pub const MAX_FIELDS_CHECKED: u32 = 100;

impl TryFrom<SensitivityFields> for TargetSensitivityEvidence {
    type Error = ComputerUseError;

    fn try_from(fields: SensitivityFields) -> Result<Self, Self::Error> {
        if fields.signals.len() > MAX_SIGNALS {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "signals",
                format!("at most {MAX_SIGNALS} signals"),
                fields.signals.len().to_string(),
            ));
        }
        let unique: HashSet<_> = fields.signals.iter().collect();
        if unique.len() != fields.signals.len() {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "signals",
                "unique signals",
                "a repeated signal",
            ));
        }
        if fields.fields_checked > MAX_FIELDS_CHECKED {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "fieldsChecked",
                format!("at most {MAX_FIELDS_CHECKED}"),
                fields.fields_checked.to_string(),
            ));
        }
        crate::clock::parse_rfc3339(OBJECT, "observedAt", &fields.observed_at)?;
        let conclusive = matches!(
            fields.assessment,
            SensitivityAssessment::Sensitive | SensitivityAssessment::NonSensitive
        );
        if conclusive && fields.source != SensitivitySource::Accessibility {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "source",
                "accessibility evidence for a conclusive assessment",
                "unavailable",
            ));
        }
        if conclusive && fields.fields_checked < 1 {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "fieldsChecked",
                "at least one checked field for a conclusive assessment",
                "0",
            ));
        }
        if fields.assessment == SensitivityAssessment::Sensitive && fields.signals.is_empty() {
            return Err(ComputerUseError::invalid(
                OBJECT,
                "signals",
                "at least one signal for a sensitive assessment",
                "none",
            ));
        }
        Ok(Self(fields))
    }
}

impl From<TargetSensitivityEvidence> for SensitivityFields {
    fn from(value: TargetSensitivityEvidence) -> Self {
        value.0
    }
}

impl TargetSensitivityEvidence {
    /// The checked fields.
    pub fn fields(&self) -> &SensitivityFields {
        &self.0
    }
}
