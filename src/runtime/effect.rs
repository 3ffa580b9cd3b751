//! Verified by default: the effects the chain can name from an action alone.
//!
//! A postcondition is what turns "the runtime performed it" into "it was
//! observed to hold". Callers rarely write one, and a model's output never
//! carries one, so most actions would end `committed_unverified`. Some
//! tools' effects follow from their arguments: after `write_clipboard` with
//! `{"text": T}`, the clipboard holds exactly T. The chain names that
//! effect ([`NamedEffect`]); only the runtime knows how its desktop shows
//! it, so the runtime supplies the postcondition
//! ([`ComputerUseRuntime::effect_postcondition`](super::ComputerUseRuntime::effect_postcondition)),
//! and the chain accepts it only when it expects the digest the chain
//! computed from the arguments. A runtime that has no check for the effect
//! supplies none, and the outcome's reason says so: guessing a postcondition
//! a server cannot check would turn a performed action into an unknown one.

use crate::contracts::catalogue::tool;
use serde_json::Value;

use crate::ComputerUseError;
use crate::contracts::{ActionPostcondition, PostconditionFields, TargetEvidence, WindowId};
use crate::digest::sha256_prefixed;

/// An effect the chain names from a tool and its arguments, with nothing
/// observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NamedEffect<'a> {
    /// `write_clipboard`: the clipboard holds exactly `text`.
    ClipboardText {
        /// The text written.
        text: &'a str,
    },
    /// `set_value`: the element with `role` and `label` holds exactly
    /// `value` (upstream's argument shape names the element by both).
    ElementValue {
        /// The element's role (`AXTextField`, ...).
        role: &'a str,
        /// The element's label.
        label: &'a str,
        /// The value written.
        value: &'a str,
    },
    /// `fill_form`: each field the action names (by role and label) holds
    /// exactly its value. `fields` are the action's own `fields`, every one
    /// with a string role, label and value.
    FormValues {
        /// The action's `fields`.
        fields: &'a [Value],
    },
}

/// The role a `fill_form`'s check names (a `ui_element` postcondition
/// needs a role or a label): the form, not any one field. Its digest is
/// [`form_values_digest`] of the fields the action names.
pub const FORM_CHECK_ROLE: &str = "AXForm";

/// The digest of a form's values, as the `fill_form` check expects it:
/// `sha256:` and the hex of the SHA-256 of the canonical JSON list of
/// `[role, label, value]`, one per field, in the action's order. A server
/// that checks a `fill_form` computes the same digest from the values it
/// reads back.
///
/// ```
/// use adk_computer_use::runtime::form_values_digest;
///
/// let one = form_values_digest([("AXTextField", "Name", "Ada")]);
/// let other = form_values_digest([("AXTextField", "Name", "Grace")]);
/// assert!(one.starts_with("sha256:"));
/// assert_ne!(one, other);
/// ```
pub fn form_values_digest<'f>(
    fields: impl IntoIterator<Item = (&'f str, &'f str, &'f str)>,
) -> String {
    let list: Vec<Value> = fields
        .into_iter()
        .map(|(role, label, value)| serde_json::json!([role, label, value]))
        .collect();
    sha256_prefixed(crate::digest::canonical_json(&Value::Array(list)))
}

/// The `(role, label, value)` of each field of a `fill_form`'s `fields`,
/// when every one has all three as strings.
fn form_fields(fields: &[Value]) -> Option<Vec<(&str, &str, &str)>> {
    fields
        .iter()
        .map(|f| {
            Some((
                f.get("role")?.as_str()?,
                f.get("label")?.as_str()?,
                f.get("value")?.as_str()?,
            ))
        })
        .collect()
}

impl<'a> NamedEffect<'a> {
    /// The effect of `tool` with `arguments`, when the chain can name one.
    ///
    /// ```
    /// use adk_computer_use::runtime::NamedEffect;
    /// use serde_json::json;
    ///
    /// let args = json!({ "text": "hi" });
    /// assert_eq!(
    ///     NamedEffect::of("write_clipboard", &args),
    ///     Some(NamedEffect::ClipboardText { text: "hi" })
    /// );
    /// assert_eq!(NamedEffect::of("left_click", &json!({ "x": 1, "y": 2 })), None);
    /// ```
    pub fn of(tool: &str, arguments: &'a Value) -> Option<Self> {
        match tool {
            tool::WRITE_CLIPBOARD => Some(Self::ClipboardText {
                text: arguments.get("text")?.as_str()?,
            }),
            tool::SET_VALUE => Some(Self::ElementValue {
                role: arguments.get("role")?.as_str()?,
                label: arguments.get("label")?.as_str()?,
                value: arguments.get("value")?.as_str()?,
            }),
            tool::FILL_FORM => {
                let fields = arguments.get("fields")?.as_array()?;
                if fields.is_empty() || form_fields(fields).is_none() {
                    return None;
                }
                Some(Self::FormValues { fields })
            }
            _ => None,
        }
    }

    /// The tool whose effect this is.
    pub fn tool(&self) -> &'static str {
        match self {
            Self::ClipboardText { .. } => tool::WRITE_CLIPBOARD,
            Self::ElementValue { .. } => tool::SET_VALUE,
            Self::FormValues { .. } => tool::FILL_FORM,
        }
    }

    /// The digest a postcondition for this effect must expect: `sha256:`
    /// and the hex of the SHA-256 of the text's UTF-8 bytes.
    pub fn expected_digest(&self) -> String {
        match self {
            Self::ClipboardText { text } => sha256_prefixed(text),
            Self::ElementValue { value, .. } => sha256_prefixed(value),
            Self::FormValues { fields } => {
                form_values_digest(form_fields(fields).unwrap_or_default())
            }
        }
    }

    /// The element the postcondition must name, when the effect is on one
    /// the action names (`set_value`): its role and label.
    pub fn element(&self) -> Option<(&'a str, &'a str)> {
        match self {
            Self::ClipboardText { .. } | Self::FormValues { .. } => None,
            Self::ElementValue { role, label, .. } => Some((role, label)),
        }
    }

    /// Whether the effect writes a secret's field (a role of
    /// `AXSecureTextField`, or a role or label that names a secret: a PIN,
    /// a one-time code; see [`crate::contracts::names_a_secret`]): no
    /// postcondition is derived for it, since its digest would travel in
    /// previews, events and journals (and a short secret's digest is as
    /// good as the secret).
    pub fn writes_a_secret(&self) -> bool {
        let secret = |role: &str, label: &str| {
            role == SECURE_FIELD_ROLE || names_a_secret(role) || names_a_secret(label)
        };
        match self {
            Self::ClipboardText { .. } => false,
            Self::ElementValue { role, label, .. } => secret(role, label),
            Self::FormValues { fields } => form_fields(fields)
                .unwrap_or_default()
                .iter()
                .any(|(role, label, _)| secret(role, label)),
        }
    }
}

/// The role of a password field (upstream's vocabulary): its value's digest
/// is never derived into a postcondition.
use crate::contracts::{SECURE_FIELD_ROLE, names_a_secret};

/// Why no postcondition was derived for an action that declared none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Underived<'a> {
    /// The chain names no effect of this tool.
    NoEffect(&'a str),
    /// The runtime offers no check of the effect.
    NoCheck(&'static str),
    /// The runtime's check must be bound to a target window, and the action
    /// names none.
    Unbound(&'static str),
    /// The element holds a secret: the digest of its value is never put in
    /// a preview, an envelope or a journal.
    Secret(&'static str),
}

impl std::fmt::Display for Underived<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoEffect(tool) => write!(
                f,
                "the chain names no effect of {tool} it could derive one from (it names \
                 write_clipboard's, set_value's and fill_form's)"
            ),
            Self::NoCheck(tool) => write!(
                f,
                "this runtime offers no check of {tool}'s effect, so none was derived"
            ),
            Self::Secret(tool) => write!(
                f,
                "{tool} writes a secret's field, whose value's digest is never put in a preview or \
                 a journal, so none was derived"
            ),
            Self::Unbound(tool) => write!(
                f,
                "the runtime checks {tool}'s effect as a UI element, which must be bound to a \
                 target window, and the action names none, so none was derived"
            ),
        }
    }
}

/// The postcondition derived for an action that declares none: the
/// runtime's postcondition for the named effect, checked to expect the
/// effect's own digest, when the action has what it must be bound to (a
/// `ui_element` check needs the target's numeric window, as upstream's
/// servers require). `Ok(Err(why))` says why none was derived; `Err` is a
/// runtime that offered a postcondition for another value.
pub(crate) fn derive<'a, R: super::ComputerUseRuntime + ?Sized>(
    runtime: &R,
    tool: &'a str,
    arguments: &Value,
    target: Option<&TargetEvidence>,
) -> Result<Result<ActionPostcondition, Underived<'a>>, ComputerUseError> {
    let Some(effect) = NamedEffect::of(tool, arguments) else {
        return Ok(Err(Underived::NoEffect(tool)));
    };
    if effect.writes_a_secret() {
        return Ok(Err(Underived::Secret(effect.tool())));
    }
    let Some(postcondition) = runtime.effect_postcondition(&effect) else {
        return Ok(Err(Underived::NoCheck(effect.tool())));
    };
    let expected = effect.expected_digest();
    match postcondition.expected_digest() {
        Some(offered) if offered == expected => {}
        offered => {
            return Err(ComputerUseError::IdentityMismatch {
                object: "derived postcondition",
                field: "valueDigest",
                expected,
                actual: offered.unwrap_or("(no digest)").to_owned(),
            });
        }
    }
    // An element's check must name the element the action writes, not
    // another one that happens to hold the same value.
    if let Some((role, label)) = effect.element() {
        let (offered_role, offered_label) = match postcondition.fields() {
            PostconditionFields::UiElement { role, label, .. } => {
                (role.as_deref(), label.as_deref())
            }
            _ => (None, None),
        };
        // An element named by its role and the empty label (the one
        // unlabelled text area of an editor) is checked with no label: the
        // wire's label is never empty.
        let named_label = (!label.is_empty()).then_some(label);
        if offered_role != Some(role) || offered_label != named_label {
            return Err(ComputerUseError::IdentityMismatch {
                object: "derived postcondition",
                field: "element",
                expected: format!("{role} {label:?}"),
                actual: format!(
                    "{} {:?}",
                    offered_role.unwrap_or("(no role)"),
                    offered_label.unwrap_or("(no label)")
                ),
            });
        }
    }
    // A form's check is of every field the action names, under the form's
    // role: one that names a single element would check that element
    // against all the values.
    if matches!(effect, NamedEffect::FormValues { .. }) {
        let (role, label) = match postcondition.fields() {
            PostconditionFields::UiElement { role, label, .. } => {
                (role.as_deref(), label.as_deref())
            }
            _ => (None, None),
        };
        if role != Some(FORM_CHECK_ROLE) || label.is_some() {
            return Err(ComputerUseError::IdentityMismatch {
                object: "derived postcondition",
                field: "element",
                expected: format!("{FORM_CHECK_ROLE} (every field of the form), no label"),
                actual: format!(
                    "{} {:?}",
                    role.unwrap_or("(no role)"),
                    label.unwrap_or("(no label)")
                ),
            });
        }
    }
    let window_bound = matches!(
        target.and_then(|t| t.window_id.as_ref()),
        Some(WindowId::Number(_))
    );
    if matches!(
        postcondition.fields(),
        PostconditionFields::UiElement { .. }
    ) && !window_bound
    {
        return Ok(Err(Underived::Unbound(effect.tool())));
    }
    Ok(Ok(postcondition))
}

/// Why an action ended without a postcondition: it declared none, and
/// none could be derived (the reason a `committed_unverified` outcome
/// gives).
pub(crate) fn why_none<R: super::ComputerUseRuntime + ?Sized>(
    runtime: &R,
    tool: &str,
    arguments: Option<&Value>,
    target: Option<&TargetEvidence>,
) -> String {
    match arguments.map(|arguments| derive(runtime, tool, arguments, target)) {
        Some(Ok(Err(why))) => {
            format!("the action declared no postcondition, and {why}: nothing was observed")
        }
        _ => "the action declared no postcondition, and none was derived: nothing was observed"
            .to_owned(),
    }
}
