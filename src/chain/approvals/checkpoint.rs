//! Sealed checkpoints: a pending approval that survives the process.
//!
//! While a person decides, the exact preview is written to a store, sealed
//! with HMAC-SHA256 under the session's key. Resuming reads it back and can
//! only *add* the approval: the preview is whatever was sealed, and the store
//! is append-only per id, so an id that holds anything but exactly one
//! correctly sealed record of this session fails before any reservation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::identity::{CheckpointId, SealingKey};
use super::refusal::CheckpointRefusal;
use super::stores::CheckpointStore;
use crate::ComputerUseError;
use crate::contracts::ActionPreview;
use crate::digest::{canonical_json, canonical_json_of};

/// What a checkpoint holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CheckpointBody {
    pub(crate) version: u32,
    pub(crate) checkpoint_id: String,
    /// The store of record it was suspended to: carried to any other store,
    /// it is refused there.
    pub(crate) store_id: String,
    pub(crate) session_id: String,
    pub(crate) principal_id: String,
    pub(crate) tenant_id: String,
    /// The agent the suspended action was proposed by, if the session named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) agent_id: Option<String>,
    /// The execution group it was proposed in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) execution_group_id: Option<String>,
    pub(crate) preview: ActionPreview,
    /// What the runtime needs to execute the preview later, if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) runtime_state: Option<Value>,
    /// The arguments the action was proposed with, to preview it again once
    /// its envelope expired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Value>,
    /// The visual frame the action was previewed from, shown to the person
    /// who decides (sealed with the rest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) frame: Option<SealedFrame>,
}

/// An observed image as a checkpoint keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SealedFrame {
    pub(crate) mime_type: String,
    pub(crate) data: String,
    /// The frame shows the target window alone, not the whole screen.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) window_only: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SealedRecord {
    body: Value,
    seal: String,
}

pub(crate) fn seal_record(
    key: &SealingKey,
    body: &CheckpointBody,
) -> Result<String, ComputerUseError> {
    let canonical = canonical_json_of(body)?;
    let body_value: Value = serde_json::from_str(&canonical)
        .map_err(|err| ComputerUseError::decode("checkpoint body", err))?;
    let record = SealedRecord {
        body: body_value,
        seal: key.seal(&canonical),
    };
    serde_json::to_string(&record).map_err(|err| ComputerUseError::decode("checkpoint record", err))
}

/// The version of checkpoint this library seals (2: the store of record
/// is sealed in).
pub(crate) const VERSION: u32 = 2;

/// Opens the only record of `id` in `store`: exactly one record, a seal
/// that verifies under the store's key, a body of this version that names
/// `id`, and this store as its store of record.
pub(crate) fn open_record(
    store: &dyn CheckpointStore,
    id: &CheckpointId,
    records: &[String],
) -> Result<CheckpointBody, ComputerUseError> {
    let fail = |refusal: CheckpointRefusal| ComputerUseError::checkpoint(id, refusal);
    let [record] = records else {
        return Err(fail(CheckpointRefusal::Replaced {
            records: records.len(),
        }));
    };
    let sealed: SealedRecord = serde_json::from_str(record).map_err(|err| {
        fail(CheckpointRefusal::Undecodable {
            what: "record",
            detail: err.to_string(),
        })
    })?;
    let canonical = canonical_json(&sealed.body);
    if !store.sealing_key().verify(&canonical, &sealed.seal) {
        return Err(fail(CheckpointRefusal::SealBroken));
    }
    let version = sealed.body.get("version").and_then(Value::as_u64);
    if version != Some(u64::from(VERSION)) {
        return Err(fail(CheckpointRefusal::WrongVersion {
            expected: VERSION,
            found: version.and_then(|v| u32::try_from(v).ok()).unwrap_or(0),
        }));
    }
    let body: CheckpointBody = serde_json::from_value(sealed.body).map_err(|err| {
        fail(CheckpointRefusal::Undecodable {
            what: "sealed body",
            detail: err.to_string(),
        })
    })?;
    if body.checkpoint_id != id.as_str() {
        return Err(fail(CheckpointRefusal::SealedForAnother {
            sealed_for: body.checkpoint_id,
        }));
    }
    if body.store_id != store.store_id() {
        return Err(fail(CheckpointRefusal::OtherStore {
            sealed_for: body.store_id,
            store: store.store_id().to_owned(),
        }));
    }
    Ok(body)
}
