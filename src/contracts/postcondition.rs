//! Digest-bound postconditions: what must hold after an action.
//!
//! The schema's rules hold on every path in: `sha256:` digests, a role or a
//! label for a UI element, no digest on something that must not exist, and a
//! process postcondition that can only prove the process stopped. Answers use
//! camelCase keys; the action input uses snake_case (`value_digest`,
//! `content_digest`, `window_id`); both directions go through the same checks.
//!
//! Every digest here (`valueDigest`, `contentDigest`) is `sha256:` followed
//! by the 64 lowercase hex digits of the SHA-256 of the value's UTF-8 bytes
//! (a file's raw bytes): [`crate::digest::sha256_prefixed`] makes one.
//!
//! ```
//! use adk_computer_use::contracts::{ActionPostcondition, PostconditionFields};
//! use adk_computer_use::digest::sha256_prefixed;
//!
//! // "The clipboard viewer's text area now holds exactly `hi`."
//! let post = ActionPostcondition::try_from(PostconditionFields::UiElement {
//!     role: Some("AXTextArea".into()),
//!     label: None,
//!     exists: true,
//!     value_digest: Some(sha256_prefixed("hi")),
//! })?;
//! assert!(ActionPostcondition::try_from(PostconditionFields::UiElement {
//!     role: Some("AXTextArea".into()),
//!     label: None,
//!     exists: true,
//!     value_digest: Some("hi".into()), // not a digest: refused
//! })
//! .is_err());
//! # let _ = post;
//! # Ok::<(), adk_computer_use::ComputerUseError>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ComputerUseError;
use crate::digest::is_prefixed_sha256;

/// The plain, unchecked form of a postcondition. Build one, then convert it
/// with `ActionPostcondition::try_from`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PostconditionFields {
    /// An accessibility element.
    UiElement {
        /// Its role.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        role: Option<String>,
        /// Its label.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        /// Whether it must exist.
        exists: bool,
        /// Digest of its value: `sha256:` + 64 lowercase hex digits of the
        /// SHA-256 of the value's UTF-8 bytes ([`crate::digest::sha256_prefixed`]).
        #[serde(
            default,
            rename = "valueDigest",
            skip_serializing_if = "Option::is_none"
        )]
        value_digest: Option<String>,
    },
    /// A file.
    Filesystem {
        /// Its path.
        path: String,
        /// Whether it must exist.
        exists: bool,
        /// Digest of its content: `sha256:` + 64 lowercase hex digits of the
        /// SHA-256 of the file's bytes.
        #[serde(
            default,
            rename = "contentDigest",
            skip_serializing_if = "Option::is_none"
        )]
        content_digest: Option<String>,
    },
    /// A registry value.
    Registry {
        /// The key path.
        path: String,
        /// The value name.
        name: String,
        /// Whether it must exist.
        exists: bool,
        /// Digest of the value.
        #[serde(
            default,
            rename = "valueDigest",
            skip_serializing_if = "Option::is_none"
        )]
        value_digest: Option<String>,
    },
    /// A process.
    Process {
        /// Its pid (at least 1).
        pid: u64,
        /// Must be `false`: a postcondition can only prove a process stopped.
        running: bool,
    },
    /// A window.
    Window {
        /// The window id.
        #[serde(rename = "windowId")]
        window_id: u64,
        /// Whether it must exist.
        exists: bool,
    },
}

/// A postcondition that satisfies `action-postcondition.schema.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "PostconditionFields", into = "PostconditionFields")]
pub struct ActionPostcondition(PostconditionFields);

const OBJECT: &str = "ActionPostcondition";

fn check_digest(
    field: &'static str,
    digest: Option<&String>,
    exists: bool,
) -> Result<(), ComputerUseError> {
    let Some(digest) = digest else { return Ok(()) };
    if !exists {
        return Err(ComputerUseError::invalid(
            OBJECT,
            field,
            "no digest when exists is false",
            digest.clone(),
        ));
    }
    if !is_prefixed_sha256(digest) {
        return Err(ComputerUseError::invalid(
            OBJECT,
            field,
            "sha256: followed by 64 lowercase hex digits",
            digest.clone(),
        ));
    }
    Ok(())
}

fn check_non_empty(field: &'static str, value: &str) -> Result<(), ComputerUseError> {
    if value.is_empty() {
        return Err(ComputerUseError::invalid(
            OBJECT,
            field,
            "a non-empty string",
            "\"\"",
        ));
    }
    Ok(())
}

impl TryFrom<PostconditionFields> for ActionPostcondition {
    type Error = ComputerUseError;

    fn try_from(fields: PostconditionFields) -> Result<Self, Self::Error> {
        match &fields {
            PostconditionFields::UiElement {
                role,
                label,
                exists,
                value_digest,
            } => {
                if role.is_none() && label.is_none() {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "role",
                        "a role or a label",
                        "neither",
                    ));
                }
                if let Some(role) = role {
                    check_non_empty("role", role)?;
                }
                if let Some(label) = label {
                    check_non_empty("label", label)?;
                }
                check_digest("valueDigest", value_digest.as_ref(), *exists)?;
            }
            PostconditionFields::Filesystem {
                path,
                exists,
                content_digest,
            } => {
                check_non_empty("path", path)?;
                check_digest("contentDigest", content_digest.as_ref(), *exists)?;
            }
            PostconditionFields::Registry {
                path,
                name,
                exists,
                value_digest,
            } => {
                check_non_empty("path", path)?;
                check_non_empty("name", name)?;
                check_digest("valueDigest", value_digest.as_ref(), *exists)?;
            }
            PostconditionFields::Process { pid, running } => {
                if *pid < 1 {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "pid",
                        "a pid of at least 1",
                        pid.to_string(),
                    ));
                }
                if *running {
                    return Err(ComputerUseError::invalid(
                        OBJECT,
                        "running",
                        "false (a postcondition can only prove a process stopped)",
                        "true",
                    ));
                }
            }
            PostconditionFields::Window { .. } => {}
        }
        Ok(Self(fields))
    }
}

impl From<ActionPostcondition> for PostconditionFields {
    fn from(value: ActionPostcondition) -> Self {
        value.0
    }
}

const INPUT_KEYS: [(&str, &str); 3] = [
    ("valueDigest", "value_digest"),
    ("contentDigest", "content_digest"),
    ("windowId", "window_id"),
];

impl ActionPostcondition {
    /// The checked fields.
    pub fn fields(&self) -> &PostconditionFields {
        &self.0
    }

    /// The digest this postcondition expects to observe, if it declares one.
    pub fn expected_digest(&self) -> Option<&str> {
        match &self.0 {
            PostconditionFields::UiElement { value_digest, .. }
            | PostconditionFields::Registry { value_digest, .. } => value_digest.as_deref(),
            PostconditionFields::Filesystem { content_digest, .. } => content_digest.as_deref(),
            _ => None,
        }
    }

    /// The snake_case form sent as the `postcondition` argument of
    /// `preview_action` and `execute_action`.
    pub fn to_input(&self) -> Value {
        let mut value = serde_json::to_value(&self.0).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            for (camel, snake) in INPUT_KEYS {
                if let Some(item) = map.remove(camel) {
                    map.insert(snake.to_owned(), item);
                }
            }
        }
        value
    }

    /// Reads the snake_case input form, with the same checks as the answer form.
    /// A camelCase key in the input form is an unknown field.
    pub fn from_input(input: &Value) -> Result<Self, ComputerUseError> {
        let Value::Object(map) = input else {
            return Err(ComputerUseError::decode(
                "postcondition input",
                "expected a JSON object",
            ));
        };
        let mut renamed = serde_json::Map::new();
        for (key, item) in map {
            if INPUT_KEYS.iter().any(|(camel, _)| camel == key) {
                return Err(ComputerUseError::decode(
                    "postcondition input",
                    format!("unknown field `{key}` (the input form is snake_case)"),
                ));
            }
            let key = INPUT_KEYS
                .iter()
                .find(|(_, snake)| snake == key)
                .map_or(key.as_str(), |(camel, _)| camel);
            renamed.insert(key.to_owned(), item.clone());
        }
        serde_json::from_value(Value::Object(renamed))
            .map_err(|err| ComputerUseError::decode("postcondition input", err))
    }
}
