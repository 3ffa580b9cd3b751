//! What a tool answers, apart from the state that produces it (the parts
//! of the server and their handlers both name it).

use serde_json::Value;

/// What a tool answers: the structured part, its images (base64, MIME
/// type), and, when the answer's content is not just the structured part
/// as text, that content.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// `structuredContent`.
    pub structured: Value,
    /// Image content blocks.
    pub images: Vec<(String, String)>,
    /// The whole `content` list (text and image blocks, as JSON), when it
    /// is not the structured part as text followed by the images.
    pub content: Option<Vec<Value>>,
}

impl Answer {
    pub(super) fn of(structured: Value) -> Self {
        Self {
            structured,
            images: Vec::new(),
            content: None,
        }
    }
}
