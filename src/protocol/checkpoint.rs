//! Sealed checkpoints: a pending approval that survives the process.
//!
//! While a person decides, the exact preview is written to a store, sealed
//! with HMAC-SHA256 under the session's key. Resuming reads it back and can
//! only *add* the approval: the preview is whatever was sealed, and the store
//! is append-only per id, so an id that holds anything but exactly one
//! correctly sealed record of this session fails before any reservation.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

use crate::ComputerUseError;
use crate::contracts::ActionPreview;
use crate::digest::{canonical_json, canonical_json_of, sha256_hex};

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

    fn seal(&self, body: &str) -> String {
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        hex::encode(mac.finalize().into_bytes())
    }

    fn verify(&self, body: &str, seal: &str) -> bool {
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
            Err(ComputerUseError::Checkpoint {
                id: text.chars().take(64).collect(),
                reason: "expected 32 lowercase hex digits".into(),
            })
        }
    }
}

/// Where sealed checkpoints are kept. Writes never overwrite: `create`
/// refuses an id that holds or ever held a record, and `load` returns every
/// record the id holds, so a replacement shows up as a second record. A
/// checkpoint is single-use: `consume` retires it atomically, and a
/// consumed id can be neither loaded nor created again.
pub trait CheckpointStore: Send + Sync {
    /// The key this store's checkpoints are sealed and opened with. A store
    /// holds it so that a session that never suspends needs none.
    fn sealing_key(&self) -> &SealingKey;

    /// Stores the first record for `id`; refuses if `id` holds one already
    /// or was consumed.
    fn create(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError>;

    /// Every record stored under `id`, oldest first.
    fn load(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError>;

    /// Retires `id` for good. Atomic: when two callers (threads or
    /// processes) consume the same id, exactly one succeeds and the other
    /// gets [`ComputerUseError::Checkpoint`] saying it was already used.
    fn consume(&self, id: &CheckpointId) -> Result<(), ComputerUseError>;

    /// The checkpoints held and not yet consumed.
    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError>;

    /// Records a person's sealed decision beside `id`, once: a second
    /// decision is refused.
    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError>;

    /// The sealed decision recorded beside `id`, if one was.
    fn decision(&self, id: &CheckpointId) -> Result<Option<String>, ComputerUseError>;
}

fn decided(id: &CheckpointId) -> ComputerUseError {
    ComputerUseError::Checkpoint {
        id: id.to_string(),
        reason: "a decision was already recorded for this checkpoint; a decision is made once"
            .into(),
    }
}

fn consumed(id: &CheckpointId) -> ComputerUseError {
    ComputerUseError::Checkpoint {
        id: id.to_string(),
        reason: "this checkpoint was already resumed; a checkpoint approves one execution".into(),
    }
}

fn exists(id: &CheckpointId) -> ComputerUseError {
    ComputerUseError::Checkpoint {
        id: id.to_string(),
        reason: "a checkpoint with this id already exists and is never overwritten".into(),
    }
}

fn missing(id: &CheckpointId) -> ComputerUseError {
    ComputerUseError::Checkpoint {
        id: id.to_string(),
        reason: "no such checkpoint".into(),
    }
}

/// Checkpoints kept in memory (for tests and short-lived hosts).
#[derive(Debug)]
pub struct MemoryCheckpointStore {
    key: SealingKey,
    records: Mutex<HashMap<CheckpointId, Vec<String>>>,
    consumed: Mutex<std::collections::HashSet<CheckpointId>>,
    decisions: Mutex<HashMap<CheckpointId, String>>,
}

impl MemoryCheckpointStore {
    /// An empty store whose checkpoints are sealed with `key`.
    pub fn new(key: SealingKey) -> Self {
        Self {
            key,
            records: Mutex::default(),
            consumed: Mutex::default(),
            decisions: Mutex::default(),
        }
    }
}

impl CheckpointStore for MemoryCheckpointStore {
    fn sealing_key(&self) -> &SealingKey {
        &self.key
    }

    fn create(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let consumed = self.consumed.lock().unwrap_or_else(|p| p.into_inner());
        if records.contains_key(id) || consumed.contains(id) {
            return Err(exists(id));
        }
        records.insert(id.clone(), vec![record.to_owned()]);
        Ok(())
    }

    fn load(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = records.get(id) {
            return Ok(found.clone());
        }
        let consumed_ids = self.consumed.lock().unwrap_or_else(|p| p.into_inner());
        Err(if consumed_ids.contains(id) {
            consumed(id)
        } else {
            missing(id)
        })
    }

    fn consume(&self, id: &CheckpointId) -> Result<(), ComputerUseError> {
        let mut records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let mut consumed_ids = self.consumed.lock().unwrap_or_else(|p| p.into_inner());
        if records.remove(id).is_some() {
            consumed_ids.insert(id.clone());
            Ok(())
        } else if consumed_ids.contains(id) {
            Err(consumed(id))
        } else {
            Err(missing(id))
        }
    }

    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        let records = self.records.lock().unwrap_or_else(|p| p.into_inner());
        let mut ids: Vec<CheckpointId> = records.keys().cloned().collect();
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(ids)
    }

    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let mut decisions = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        if decisions.contains_key(id) {
            return Err(decided(id));
        }
        decisions.insert(id.clone(), record.to_owned());
        Ok(())
    }

    fn decision(&self, id: &CheckpointId) -> Result<Option<String>, ComputerUseError> {
        let decisions = self.decisions.lock().unwrap_or_else(|p| p.into_inner());
        Ok(decisions.get(id).cloned())
    }
}

/// Checkpoints kept as files, one per id (`<id>.checkpoint`, one JSON line per
/// record). A file is written whole to a temporary name and then linked into
/// place, which fails if the name exists: a reader never sees half a file and
/// a writer never replaces one.
#[derive(Debug, Clone)]
pub struct FileCheckpointStore {
    dir: PathBuf,
    key: SealingKey,
}

impl FileCheckpointStore {
    /// A store in `dir` (created if missing) whose checkpoints are sealed
    /// with `key`.
    pub fn new(dir: impl Into<PathBuf>, key: SealingKey) -> Result<Self, ComputerUseError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)
            .map_err(|err| io_error(&dir, "create the checkpoint directory", err))?;
        Ok(Self { dir, key })
    }

    /// The file that holds `id`.
    pub fn path_of(&self, id: &CheckpointId) -> PathBuf {
        self.dir.join(format!("{id}.checkpoint"))
    }

    /// The file a consumed `id` is renamed to.
    /// Writes `record` to `target`, which must not exist yet: through a
    /// temporary file no other writer names (in this process or another),
    /// synced, then hard-linked to `target`, which fails when it exists.
    fn write_new(&self, id: &CheckpointId, target: &Path, record: &str) -> std::io::Result<()> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let temp = self
            .dir
            .join(format!(".{id}.{}.{serial}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(record.as_bytes())?;
            file.write_all(b"\n")?;
            file.sync_all()
        };
        let linked = write().and_then(|()| std::fs::hard_link(&temp, target));
        let _ = std::fs::remove_file(&temp);
        linked
    }

    fn consumed_path_of(&self, id: &CheckpointId) -> PathBuf {
        self.dir.join(format!("{id}.consumed"))
    }
}

fn io_error(path: &Path, doing: &str, err: std::io::Error) -> ComputerUseError {
    ComputerUseError::Storage {
        operation: doing.to_owned(),
        path: path.display().to_string(),
        message: err.to_string(),
    }
}

impl CheckpointStore for FileCheckpointStore {
    fn sealing_key(&self) -> &SealingKey {
        &self.key
    }

    fn create(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let target = self.path_of(id);
        if target.exists() || self.consumed_path_of(id).exists() {
            return Err(exists(id));
        }
        let linked = self.write_new(id, &target, record);
        match linked {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(exists(id)),
            Err(err) => Err(io_error(&target, "write the checkpoint", err)),
        }
    }

    fn load(&self, id: &CheckpointId) -> Result<Vec<String>, ComputerUseError> {
        let path = self.path_of(id);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return Err(if self.consumed_path_of(id).exists() {
                    consumed(id)
                } else {
                    missing(id)
                });
            }
            Err(err) => return Err(io_error(&path, "read the checkpoint", err)),
        };
        Ok(text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(str::to_owned)
            .collect())
    }

    /// Renames the checkpoint to its consumed name. A rename is atomic: when
    /// two processes race, the second finds the file gone.
    fn consume(&self, id: &CheckpointId) -> Result<(), ComputerUseError> {
        let path = self.path_of(id);
        match std::fs::rename(&path, self.consumed_path_of(id)) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Err(if self.consumed_path_of(id).exists() {
                    consumed(id)
                } else {
                    missing(id)
                })
            }
            Err(err) => Err(io_error(&path, "consume the checkpoint", err)),
        }
    }

    fn ids(&self) -> Result<Vec<CheckpointId>, ComputerUseError> {
        let entries = std::fs::read_dir(&self.dir)
            .map_err(|err| io_error(&self.dir, "list the checkpoint directory", err))?;
        let mut ids = Vec::new();
        for entry in entries {
            let entry =
                entry.map_err(|err| io_error(&self.dir, "list the checkpoint directory", err))?;
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".checkpoint")) else {
                continue;
            };
            // Only names this store writes; anything else in the directory
            // is not a checkpoint.
            if let Ok(id) = stem.parse::<CheckpointId>() {
                ids.push(id);
            }
        }
        ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        Ok(ids)
    }

    /// Written like a checkpoint: a unique temporary file hard-linked to its
    /// name, which fails when a decision is already there.
    fn record_decision(&self, id: &CheckpointId, record: &str) -> Result<(), ComputerUseError> {
        let target = self.dir.join(format!("{id}.decision"));
        match self.write_new(id, &target, record) {
            Ok(()) => Ok(()),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => Err(decided(id)),
            Err(err) => Err(io_error(&target, "write the decision", err)),
        }
    }

    fn decision(&self, id: &CheckpointId) -> Result<Option<String>, ComputerUseError> {
        let path = self.dir.join(format!("{id}.decision"));
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(text.trim().to_owned())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(io_error(&path, "read the decision", err)),
        }
    }
}

/// What a checkpoint holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct CheckpointBody {
    pub(crate) version: u32,
    pub(crate) checkpoint_id: String,
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

/// Opens the only record of `id`: exactly one record, a seal that verifies
/// under `key`, and a body that names `id`.
pub(crate) fn open_record(
    key: &SealingKey,
    id: &CheckpointId,
    records: &[String],
) -> Result<CheckpointBody, ComputerUseError> {
    let fail = |reason: String| ComputerUseError::Checkpoint {
        id: id.to_string(),
        reason,
    };
    let [record] = records else {
        return Err(fail(format!(
            "expected exactly one sealed preview, found {}; a checkpointed preview cannot be replaced",
            records.len()
        )));
    };
    let sealed: SealedRecord = serde_json::from_str(record)
        .map_err(|err| fail(format!("the record does not decode: {err}")))?;
    let canonical = canonical_json(&sealed.body);
    if !key.verify(&canonical, &sealed.seal) {
        return Err(fail(
            "the seal does not verify: the checkpoint was altered or sealed under another key"
                .into(),
        ));
    }
    let body: CheckpointBody = serde_json::from_value(sealed.body)
        .map_err(|err| fail(format!("the sealed body does not decode: {err}")))?;
    if body.version != 1 {
        return Err(fail(format!("expected version 1, got {}", body.version)));
    }
    if body.checkpoint_id != id.as_str() {
        return Err(fail(format!(
            "the record is sealed for checkpoint {}",
            body.checkpoint_id
        )));
    }
    Ok(body)
}
