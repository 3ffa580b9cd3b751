//! Canonical JSON and SHA-256, the two things every seal in this crate rests on.
//!
//! Canonical means: object keys sorted by their UTF-8 bytes, no whitespace,
//! strings and numbers written exactly as `serde_json` writes them. It does not
//! depend on whether `serde_json` keeps insertion order, so a dependency that
//! turns on `preserve_order` cannot change a digest.

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::ComputerUseError;

/// The prefix of a typed digest (`sha256:<64 hex>`).
pub const SHA256_PREFIX: &str = "sha256:";

/// Writes `value` as canonical JSON.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

/// Serializes any value and writes it as canonical JSON.
pub fn canonical_json_of<T: Serialize>(value: &T) -> Result<String, ComputerUseError> {
    let value = serde_json::to_value(value)
        .map_err(|err| ComputerUseError::decode(std::any::type_name::<T>(), err))?;
    Ok(canonical_json(&value))
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Bare lowercase SHA-256 hex of `bytes` (the form of `argsDigest`).
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(bytes.as_ref()))
}

/// `sha256:` + lowercase hex of `bytes` (the form of postcondition and
/// evaluation-receipt digests).
pub fn sha256_prefixed(bytes: impl AsRef<[u8]>) -> String {
    format!("{SHA256_PREFIX}{}", sha256_hex(bytes))
}

/// `sha256:` digest of the canonical JSON of `value`.
pub fn canonical_digest(value: &Value) -> String {
    sha256_prefixed(canonical_json(value))
}

/// True when `text` is exactly 64 lowercase hex digits.
pub fn is_bare_sha256(text: &str) -> bool {
    text.len() == 64
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// True when `text` is `sha256:` followed by 64 lowercase hex digits.
pub fn is_prefixed_sha256(text: &str) -> bool {
    text.strip_prefix(SHA256_PREFIX).is_some_and(is_bare_sha256)
}
