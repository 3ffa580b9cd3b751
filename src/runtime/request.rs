//! What the chain sends to a runtime: observation scopes and action requests.

use serde_json::Value;

use crate::contracts::{
    ActionPostcondition, ActionPreview, ActionProvenance, ActionResourceContext, DataLabel,
    ExecutionMode, TargetEvidence, WindowId,
};

/// Where to observe.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObservationScope {
    /// The runtime session.
    pub session_id: String,
    /// The tool whose capabilities to discover.
    pub tool: Option<String>,
    /// The application to look at.
    pub app_id: Option<String>,
    /// The window to look at.
    pub window_id: Option<WindowId>,
}

/// An image carried beside an observation's structured part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageContent {
    /// Base64 of the image bytes.
    pub data: String,
    /// Its MIME type (`image/png`, `image/jpeg`).
    pub mime_type: String,
}

/// One observation frame: its structured part and any images.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observation {
    /// The frame's id, when the runtime gave one.
    pub observation_id: Option<String>,
    /// The structured part.
    pub structured: Value,
    /// Images, kept as they came.
    pub images: Vec<ImageContent>,
    /// When the runtime captured the frame (RFC 3339), when it said.
    pub captured_at: Option<String>,
}

/// The action an agent wants, before the runtime has bound it.
///
/// ```
/// use adk_computer_use::contracts::ExecutionMode;
/// use adk_computer_use::runtime::ProposedAction;
/// use serde_json::json;
///
/// let action = ProposedAction::new("write_clipboard", json!({"text": "hi"}), ExecutionMode::Background)
///     .with_action_id("action-1");
/// assert_eq!(action.tool, "write_clipboard");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ProposedAction {
    /// A stable id; reusing it makes a retry idempotent. The runtime assigns one when absent.
    pub action_id: Option<String>,
    /// The low-level tool.
    pub tool: String,
    /// The tool's own arguments.
    pub arguments: Value,
    /// The mode asked for.
    pub mode: ExecutionMode,
    /// The operation, when it differs from the tool.
    pub operation: Option<String>,
    /// Labels of the data handled.
    pub data_labels: Vec<DataLabel>,
    /// How long the preview may authorize, in milliseconds (at most 300000).
    pub expires_in_ms: Option<u64>,
    /// The attempt number.
    pub attempt: Option<u32>,
    /// Adapter certification.
    pub certification_id: Option<String>,
    /// Where the instruction came from.
    pub provenance: Option<ActionProvenance>,
    /// What was observed about the target.
    pub target: Option<TargetEvidence>,
    /// What must hold afterwards.
    pub postcondition: Option<ActionPostcondition>,
    /// What the action touches beyond its target window, when its
    /// arguments do not say: the file that keys typed into a terminal
    /// end up in. See [`ProposedAction::with_resource`].
    pub resource: Option<ActionResourceContext>,
}

impl ProposedAction {
    /// A proposal with only the required parts.
    pub fn new(tool: impl Into<String>, arguments: Value, mode: ExecutionMode) -> Self {
        Self {
            action_id: None,
            tool: tool.into(),
            arguments,
            mode,
            operation: None,
            data_labels: Vec::new(),
            expires_in_ms: None,
            attempt: None,
            certification_id: None,
            provenance: None,
            target: None,
            postcondition: None,
            resource: None,
        }
    }

    /// Sets the action id.
    pub fn with_action_id(mut self, action_id: impl Into<String>) -> Self {
        self.action_id = Some(action_id.into());
        self
    }

    /// Sets the target evidence.
    pub fn with_target(mut self, target: TargetEvidence) -> Self {
        self.target = Some(target);
        self
    }

    /// Sets the postcondition.
    pub fn with_postcondition(mut self, postcondition: ActionPostcondition) -> Self {
        self.postcondition = Some(postcondition);
        self
    }

    /// Sets the data labels.
    pub fn with_data_labels(mut self, labels: impl IntoIterator<Item = DataLabel>) -> Self {
        self.data_labels = labels.into_iter().collect();
        self
    }

    /// Sets how long the preview may authorize, in milliseconds. The
    /// protocol caps it at 300000 (five minutes); a runtime refuses more.
    pub fn with_expires_in_ms(mut self, expires_in_ms: u64) -> Self {
        self.expires_in_ms = Some(expires_in_ms);
        self
    }

    /// Sets the operation, when it differs from the tool.
    pub fn with_operation(mut self, operation: impl Into<String>) -> Self {
        self.operation = Some(operation.into());
        self
    }

    /// Names what the action touches beyond its target window, so that a
    /// check of it can be bound to the action: keys typed into `cat > FILE`
    /// in a terminal are proven by the file's content, not by the terminal
    /// still being open.
    ///
    /// The runtime binds the resource into the envelope (the approval is
    /// granted over it), and the chain refuses an envelope that does not
    /// carry every field named here with the same value. Our server
    /// accepts `filesystemPath` on any mutating tool, and a `filesystem`
    /// postcondition on that path; upstream's v8 derives the resource from
    /// the arguments of its file tools only, ignores this, and refuses such
    /// a postcondition (`policy_denied`) before anything is reserved.
    ///
    /// ```
    /// use adk_computer_use::contracts::{
    ///     ActionPostcondition, ActionResourceContext, ExecutionMode, PostconditionFields,
    /// };
    /// use adk_computer_use::digest::sha256_prefixed;
    /// use adk_computer_use::runtime::ProposedAction;
    /// use serde_json::json;
    ///
    /// // A terminal runs `cat > /tmp/notes.txt`: typing a line is proven by the file.
    /// let check = ActionPostcondition::try_from(PostconditionFields::Filesystem {
    ///     path: "/tmp/notes.txt".into(),
    ///     exists: true,
    ///     content_digest: Some(sha256_prefixed("hello\n")),
    /// })?;
    /// let action = ProposedAction::new("type", json!({"text": "hello\n"}), ExecutionMode::Foreground)
    ///     .with_resource(ActionResourceContext {
    ///         filesystem_path: Some("/tmp/notes.txt".into()),
    ///         ..ActionResourceContext::default()
    ///     })
    ///     .with_postcondition(check);
    /// assert!(action.resource.is_some());
    /// # Ok::<(), adk_computer_use::ComputerUseError>(())
    /// ```
    pub fn with_resource(mut self, resource: ActionResourceContext) -> Self {
        self.resource = Some(resource);
        self
    }

    /// Sets where the instruction came from.
    pub fn with_provenance(mut self, provenance: ActionProvenance) -> Self {
        self.provenance = Some(provenance);
        self
    }
}

/// A proposal placed in a session by the chain, as the runtime receives it.
///
/// Everything is borrowed from the chain that sends the request: a request
/// lives only as long as the `preview_action` call it is made for.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionRequest<'a> {
    /// The runtime session.
    pub session_id: &'a str,
    /// The agent proposing it.
    pub agent_id: Option<&'a str>,
    /// The agents' execution group.
    pub execution_group_id: Option<&'a str>,
    /// The proposal.
    pub action: &'a ProposedAction,
}

/// What a runtime answers to `preview_action`: the preview, and what it must
/// keep to execute that exact preview later.
#[derive(Debug, Clone, PartialEq)]
pub struct PreviewAnswer {
    /// The runtime's preview.
    pub preview: ActionPreview,
    /// Runtime-private state for this preview (for example the exact
    /// arguments it was sent), or `None`. The chain does not read it: it
    /// travels inside the stage, is sealed into checkpoints with the
    /// preview, and comes back in [`super::ExecuteProof::retained`].
    pub retained: Option<Value>,
}

impl From<ActionPreview> for PreviewAnswer {
    fn from(preview: ActionPreview) -> Self {
        Self {
            preview,
            retained: None,
        }
    }
}
