//! What names a checkpoint and what seals it: its id, and the session's
//! sealing key. A leaf of the approvals: the checkpoints, their stores
//! and their reports all name checkpoints by these, and these need none of
//! them.

use std::fmt;
use std::str::FromStr;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::refusal::CheckpointRefusal;
use crate::ComputerUseError;
use crate::contracts::ActionPreview;
use crate::digest::{canonical_json, sha256_hex};

type HmacSha256 = Hmac<Sha256>;

/// The shortest sealing key accepted, in bytes.
pub const MIN_KEY_LEN: usize = 32;

/// The secret a session seals its checkpoints with. Its bytes are never
/// printed, and it is keyed once, when it is built: there is no path on
/// which sealing falls back to any other key.
#[derive(Clone)]
pub struct SealingKey(HmacSha256);

impl SealingKey {
    /// A key of at least [`MIN_KEY_LEN`] bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Result<Self, ComputerUseError> {
        let bytes = bytes.into();
        if bytes.len() < MIN_KEY_LEN {
            return Err(ComputerUseError::InvalidRequest {
                field: "sealingKey".into(),
                message: format!("expected at least {MIN_KEY_LEN} bytes, got {}", bytes.len()),
            });
        }
        let mac =
            HmacSha256::new_from_slice(&bytes).map_err(|err| ComputerUseError::InvalidRequest {
                field: "sealingKey".into(),
                message: format!("expected a key HMAC-SHA256 accepts: {err}"),
            })?;
        Ok(Self(mac))
    }

    fn mac(&self) -> HmacSha256 {
        self.0.clone()
    }

    pub(crate) fn seal(&self, body: &str) -> String {
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    pub(crate) fn verify(&self, body: &str, seal: &str) -> bool {
        let Ok(tag) = hex::decode(seal) else {
            return false;
        };
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).is_ok()
    }
}

impl fmt::Debug for SealingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealingKey(<redacted>)")
    }
}

/// A checkpoint's id: 32 lowercase hex digits, safe as a file name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CheckpointId(String);

impl CheckpointId {
    pub(crate) fn for_preview(session_id: &str, preview: &ActionPreview) -> Self {
        let key = serde_json::json!({
            "sessionId": session_id,
            "actionId": preview.envelope.action_id,
            "argsDigest": preview.envelope.args_digest,
        });
        Self(sha256_hex(canonical_json(&key))[..32].to_owned())
    }

    /// The id's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CheckpointId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for CheckpointId {
    type Err = ComputerUseError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.len() == 32
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Self(text.to_owned()))
        } else {
            Err(ComputerUseError::checkpoint(
                text.chars().take(64).collect::<String>(),
                CheckpointRefusal::BadId,
            ))
        }
    }
}
