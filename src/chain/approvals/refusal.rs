//! Why a checkpoint or a decision was refused, as a type.
//!
//! A refusal is something a host acts on (show it to the person, wait for a
//! decision, give up), so it is matched on, not parsed: each way a
//! checkpoint can fail is one variant, and its text is only for people.

/// Why a checkpoint could not be suspended, inspected, decided or resumed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointRefusal {
    /// The id is not 32 lowercase hex digits.
    #[error("expected 32 lowercase hex digits")]
    BadId,
    /// The store holds no checkpoint with this id.
    #[error("no such checkpoint")]
    Missing,
    /// A checkpoint with this id exists (or existed): ids are never reused.
    #[error("a checkpoint with this id already exists and is never overwritten")]
    Exists,
    /// The checkpoint was resumed (or retired by a denial) already.
    #[error("this checkpoint was already resumed; a checkpoint approves one execution")]
    AlreadyResumed,
    /// The id holds more or fewer than one record: it was replaced.
    #[error(
        "expected exactly one sealed preview, found {records}; a checkpointed preview cannot be replaced"
    )]
    Replaced {
        /// How many records the id holds.
        records: usize,
    },
    /// The record, or the body its seal covers, does not decode.
    #[error("the {what} does not decode: {detail}")]
    Undecodable {
        /// What did not decode.
        what: &'static str,
        /// The decoder's message.
        detail: String,
    },
    /// The seal does not verify under the store's key.
    #[error("the seal does not verify: the checkpoint was altered or sealed under another key")]
    SealBroken,
    /// The record was sealed by a version this one does not read.
    #[error("expected checkpoint version {expected}, got {found} (suspended by another version)")]
    WrongVersion {
        /// The version this library seals.
        expected: u32,
        /// The version the record names.
        found: u32,
    },
    /// The record is sealed for another checkpoint id.
    #[error("the record is sealed for checkpoint {sealed_for}")]
    SealedForAnother {
        /// The id the record names.
        sealed_for: String,
    },
    /// The record was sealed into another store and carried here: a
    /// checkpoint lives in, and is consumed in, its store of record only.
    #[error(
        "the record was sealed for store {sealed_for}, not this store {store}: a checkpoint resumes only from the store it was suspended to"
    )]
    OtherStore {
        /// The store the record names.
        sealed_for: String,
        /// This store.
        store: String,
    },
    /// The store given is not the session's store of record.
    #[error(
        "this session's store of record is {session_store}, not {store}: a session suspends to and resumes from the store it was built with"
    )]
    NotStoreOfRecord {
        /// The session's store.
        session_store: String,
        /// The store given.
        store: String,
    },
    /// The session was built without a store of record.
    #[error(
        "this session has no checkpoint store: build it with SessionBuilder::checkpoints(store) to suspend or resume"
    )]
    NoStoreOfRecord,
    /// The checkpoint belongs to another runtime session.
    #[error("sealed for session {sealed_for:?}, not this session {session:?}")]
    OtherSession {
        /// The session the record names.
        sealed_for: String,
        /// This session.
        session: String,
    },
    /// The checkpoint belongs to another principal or tenant.
    #[error("sealed for another principal or tenant")]
    OtherPrincipal,
    /// The checkpoint belongs to another agent or execution group.
    #[error(
        "sealed for agent {sealed_agent:?} in group {sealed_group:?}, not this session's agent {agent:?} in group {group:?}"
    )]
    OtherAgent {
        /// The agent the record names.
        sealed_agent: Option<String>,
        /// The group the record names.
        sealed_group: Option<String>,
        /// This session's agent.
        agent: Option<String>,
        /// This session's group.
        group: Option<String>,
    },
    /// This session resumed the checkpoint already.
    #[error(
        "this checkpoint was already resumed in this session; a checkpoint approves one execution"
    )]
    ResumedHere,
    /// A person's decision is recorded: it is the only way on.
    #[error("a person's decision is recorded for this checkpoint; resume it with resume_decided")]
    DecisionRecorded,
    /// A decision was recorded already; a decision is made once.
    #[error("a decision was already recorded for this checkpoint; a decision is made once")]
    AlreadyDecided,
    /// The checkpoint was resumed on the agent's own approval before this
    /// decision arrived: the decision is refused, so the person is never
    /// told a decision was recorded that changed nothing.
    #[error(
        "the checkpoint was already resumed on an approval given without a recorded decision; this decision changes nothing and is not recorded"
    )]
    ResumedWithoutDecision,
    /// No decision is recorded yet.
    #[error("no decision was recorded yet; wait for one (wait_for_decision)")]
    NoDecisionYet,
    /// The recorded decision's signature is not the approver's.
    #[error(
        "the recorded decision is not signed by the approver's key: it was altered or made by someone else"
    )]
    DecisionUnsigned,
    /// The recorded decision is for another checkpoint or is neither an
    /// approval nor a denial.
    #[error("the recorded decision {detail}")]
    DecisionMalformed {
        /// What is wrong with it.
        detail: &'static str,
    },
    /// The envelope expired and the record keeps no proposal to preview
    /// again.
    #[error(
        "its envelope expired, and it keeps no proposal to preview again (it was suspended by an older version)"
    )]
    NoProposal,
    /// A refresh of a checkpoint whose envelope is still fresh.
    #[error("its envelope has not expired: resume it instead of refreshing it")]
    StillFresh,
    /// A claim to give back that is not held on the basis named (another
    /// resume holds it, or it was never claimed so).
    #[error("this checkpoint is not claimed on the basis given, so there is nothing to give back")]
    NotClaimedSo,
    /// The target evidence an approval rests on is older than the runtime
    /// accepts, and the approval cannot follow fresh evidence (a grant
    /// names the exact digest of the evidence it was given for): the
    /// approver must approve the checkpoint again (it takes fresh evidence
    /// itself). Nothing was consumed.
    #[error(
        "the approval's target evidence is {age_ms} ms old, older than the {limit_ms} ms the runtime accepts, and a grant cannot follow fresh evidence: have the approver approve it again (nothing was consumed)"
    )]
    EvidenceAged {
        /// How old the evidence is.
        age_ms: u64,
        /// The age the session was told the runtime accepts.
        limit_ms: u64,
    },
    /// The target looked at again is not the one the person approved: the
    /// approval does not carry over, and the person must be asked again
    /// (preview the action anew). Nothing was consumed.
    #[error(
        "the target changed since the person approved it: its {field} was {was}, is now {now}; the approval does not carry over (nothing was consumed): preview the action again and ask again"
    )]
    TargetChanged {
        /// The evidence field that differs (`pid`, `windowTitleDigest`, `bounds`, ...).
        field: &'static str,
        /// What the approved evidence said.
        was: String,
        /// What the fresh evidence says.
        now: String,
    },
}
