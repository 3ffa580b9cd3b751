//! `reply`: the MCP tool result a call is answered with, from the
//! engine's answer or refusal (an injected crash ends the process here,
//! as a crashing server would).

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use super::Refusal;
use super::state::Answer;

fn content_block(block: &Value) -> Option<ContentBlock> {
    match block.get("type").and_then(Value::as_str)? {
        "text" => Some(ContentBlock::text(block.get("text")?.as_str()?.to_owned())),
        "image" => Some(ContentBlock::image(
            block.get("data")?.as_str()?.to_owned(),
            block.get("mimeType")?.as_str()?.to_owned(),
        )),
        _ => None,
    }
}

/// A call's answer as its tool result: the structured part, and its
/// content blocks as the answer gives them (or its images).
pub(super) fn success(answer: Answer) -> CallToolResult {
    let content = answer.content.clone();
    let mut result = CallToolResult::structured(answer.structured);
    match content {
        Some(blocks) => result.content = blocks.iter().filter_map(content_block).collect(),
        None => {
            for (data, mime) in answer.images {
                result.content.push(ContentBlock::image(data, mime));
            }
        }
    }
    result
}

/// A refusal as its tool result (text only for a schema's refusal).
pub(super) fn refused(error: Refusal) -> CallToolResult {
    if error.crash {
        eprintln!("computer-use-server: {}; exiting", error.message);
        std::process::exit(70);
    }
    if error.text_only {
        return CallToolResult::error(vec![ContentBlock::text(error.message)]);
    }
    CallToolResult::structured_error(error.body())
}
