//! One JSON-RPC message a line, each way, with a tool call's answer read
//! straight into its type.
//!
//! rmcp's own line transport reads every incoming line as a message whose
//! shape it does not know in advance: an untagged enum of messages, each
//! holding an untagged enum of some twenty result types. serde buffers such
//! a line whole and tries the candidates one after another over the buffer.
//! In a profile of governed actions against upstream's server that reading
//! was the largest single cost in this process, larger than every check the
//! chain makes. Yet the client knows which of its requests are tool calls,
//! and in MCP the answer to a request is of the request's result type. So a
//! line that answers a pending `tools/call` is read in one pass as a
//! `CallToolResult`; every other line (the handshake, notifications, errors,
//! any answer that does not read as a tool result) is read exactly as rmcp
//! reads it, and reaches the client as the same message.
//!
//! The one difference is deliberate: a tool call's answer that would also
//! read as an earlier type in rmcp's untagged list (a result carrying both
//! `content` and, say, `tools`) is read as the tool result it answers,
//! where rmcp would hand the client a list of tools and fail the call.
//! Either way the chain then judges the answer's content, never its shape.
//!
//! Writes are whole lines even when a caller gives up half way: a line is
//! queued whole under the writer's lock and drained from there, so a write
//! cancelled part way through is finished by the next one before it adds
//! its own. Reads are cancel-safe too (rmcp polls `receive` in a
//! `select!`): a partial line stays buffered until its newline arrives.

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcResponse,
    JsonRpcVersion2_0, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use super::wire::lock;

/// The longest line read, as rmcp's default; a longer one is skipped whole
/// and the connection stays open.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Most tool calls remembered as pending at once. Past it a call's answer
/// is read the general way: slower, never different.
const MAX_PENDING: usize = 4096;

/// An MCP client transport over a byte stream each way (a child's stdout
/// and stdin, a socket's halves, an in-memory pipe), one JSON message a
/// line. [`super::ChildTransport`] is this over a spawned server's stdio.
pub struct JsonLines<R, W> {
    reader: BufReader<R>,
    writer: Arc<tokio::sync::Mutex<Option<Writer<W>>>>,
    /// The line being read: kept across cancelled reads.
    line: Vec<u8>,
    /// Skipping the rest of an over-long line.
    skipping: bool,
    /// The ids of tool calls sent and not yet answered.
    calls: Arc<Mutex<HashSet<RequestId>>>,
    /// A message that was JSON with an id but no MCP message is owed an
    /// Invalid Request answer, sent before the next line is read.
    owed_refusal: bool,
}

/// The writing half and the bytes queued for it: only whole lines are
/// queued, and the queue is drained before anything else is added.
struct Writer<W> {
    sink: W,
    queued: Vec<u8>,
}

impl<W: AsyncWrite + Unpin> Writer<W> {
    /// Queues `line` (which ends in a newline) and writes out the queue.
    async fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        // What a cancelled write left goes out first, whole.
        self.drain().await?;
        self.queued.extend_from_slice(line);
        self.drain().await
    }

    /// Writes out what is queued. Cancel-safe: bytes leave the queue only
    /// once written.
    async fn drain(&mut self) -> std::io::Result<()> {
        while !self.queued.is_empty() {
            let written = self.sink.write(&self.queued).await?;
            if written == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.queued.drain(..written);
        }
        self.sink.flush().await
    }
}

/// A line read as a tool call's answer, when it is one.
#[derive(Deserialize)]
struct ToolAnswer {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    result: CallToolResult,
    /// Whether the key is there at all, whatever its value (`null`
    /// included): a message with `method` or `error` is no plain answer,
    /// and rmcp tells shapes apart by the keys present.
    #[serde(default, deserialize_with = "present")]
    method: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

/// Whether `value` is a notification rmcp skips when it does not read:
/// one with a method outside MCP's own, or an unknown `notifications/` one.
fn ignored_notification(value: &serde_json::Value) -> bool {
    let Some(method) = value.get("method").and_then(serde_json::Value::as_str) else {
        return false;
    };
    let notification = is_mcp_notification(method);
    let known = notification || MCP_REQUESTS.contains(&method);
    (value.get("id").is_none() && !known) || (method.starts_with("notifications/") && !notification)
}

/// MCP's request methods, as rmcp 3.11 lists them.
const MCP_REQUESTS: [&str; 18] = [
    "initialize",
    "ping",
    "server/discover",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "resources/templates/list",
    "subscriptions/listen",
    "tools/call",
    "tools/list",
    "completion/complete",
    "elicitation/create",
    "logging/setLevel",
    "roots/list",
    "sampling/createMessage",
];

fn is_mcp_notification(method: &str) -> bool {
    matches!(
        method,
        "notifications/cancelled"
            | "notifications/initialized"
            | "notifications/message"
            | "notifications/progress"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed"
            | "notifications/resources/updated"
            | "notifications/roots/list_changed"
            | "notifications/subscriptions/acknowledged"
            | "notifications/tools/list_changed"
    )
}

/// What reading one line gave.
enum Read {
    Line,
    Skipped,
    Closed,
}

impl<R, W> JsonLines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading messages from `read` and writing them to `write`.
    pub fn new(read: R, write: W) -> Self {
        Self {
            reader: BufReader::new(read),
            writer: Arc::new(tokio::sync::Mutex::new(Some(Writer {
                sink: write,
                queued: Vec::new(),
            }))),
            line: Vec::new(),
            skipping: false,
            calls: Arc::new(Mutex::new(HashSet::new())),
            owed_refusal: false,
        }
    }

    /// Reads up to and including the next newline into `self.line`.
    /// Cancel-safe: bytes read before a cancellation stay in `self.line`.
    async fn read_line(&mut self) -> std::io::Result<Read> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(Read::Closed);
            }
            let (taken, ended) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (at + 1, true),
                None => (available.len(), false),
            };
            if !self.skipping {
                if self.line.len().saturating_add(taken) > MAX_LINE_BYTES {
                    self.skipping = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(&available[..taken]);
                }
            }
            self.reader.consume(taken);
            if ended {
                if std::mem::take(&mut self.skipping) {
                    return Ok(Read::Skipped);
                }
                return Ok(Read::Line);
            }
        }
    }

    /// One line (without its line ending) as a message: `None` for a line
    /// to skip.
    fn parse(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        if let Ok(answer) = serde_json::from_slice::<ToolAnswer>(line)
            && !answer.method
            && !answer.error
            && lock(&self.calls).remove(&answer.id)
        {
            return Some(JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: answer.jsonrpc,
                id: answer.id,
                result: ServerResult::CallToolResult(answer.result),
            }));
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
            Ok(message) => {
                if let JsonRpcMessage::Response(JsonRpcResponse { id, .. })
                | JsonRpcMessage::Error(rmcp::model::JsonRpcError { id: Some(id), .. }) =
                    &message
                {
                    lock(&self.calls).remove(id);
                }
                Some(message)
            }
            Err(err) => {
                // As rmcp does: not JSON at all is skipped unanswered
                // (answering could start an echo storm), and so is a
                // notification outside MCP's own methods; any other JSON
                // that is no message is a protocol error, answered with
                // Invalid Request.
                let answer = err.classify() == serde_json::error::Category::Data
                    && !serde_json::from_slice::<serde_json::Value>(line)
                        .is_ok_and(|value| ignored_notification(&value));
                tracing::debug!(error = %err, answer, "an incoming line that is no MCP message");
                self.owed_refusal |= answer;
                None
            }
        }
    }
}

impl<R, W> Transport<RoleClient> for JsonLines<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let mut pending = None;
        match &item {
            JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_)) =>
            {
                let mut calls = lock(&self.calls);
                if calls.len() < MAX_PENDING && calls.insert(request.id.clone()) {
                    pending = Some(request.id.clone());
                }
            }
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    lock(&self.calls).remove(id);
                }
            }
            _ => {}
        }
        let line = serde_json::to_vec(&item).map(|mut line| {
            line.push(b'\n');
            line
        });
        let writer = Arc::clone(&self.writer);
        let calls = Arc::clone(&self.calls);
        async move {
            let result = async {
                let line = line?;
                let mut writer = writer.lock().await;
                let Some(writer) = writer.as_mut() else {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::NotConnected,
                        "the transport is closed",
                    ));
                };
                writer.write_line(&line).await
            }
            .await;
            // A call that never left is answered by nobody.
            if result.is_err()
                && let Some(id) = pending
            {
                lock(&calls).remove(&id);
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            if self.owed_refusal {
                let refusal = TxJsonRpcMessage::<RoleClient>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                let mut line = serde_json::to_vec(&refusal).ok()?;
                line.push(b'\n');
                let mut writer = self.writer.lock().await;
                let writer = writer.as_mut()?;
                writer.drain().await.ok()?;
                // Queued whole before it counts as sent: a cancelled drain
                // below leaves it for the next write, not for a second one.
                writer.queued.extend_from_slice(&line);
                self.owed_refusal = false;
                writer.drain().await.ok()?;
            }
            match self.read_line().await {
                Ok(Read::Line) => {}
                Ok(Read::Skipped) => {
                    tracing::error!(
                        max = MAX_LINE_BYTES,
                        "an incoming message longer than the longest line read, skipped"
                    );
                    continue;
                }
                Ok(Read::Closed) => return None,
                Err(err) => {
                    tracing::error!(error = %err, "reading the server's messages");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
            let parsed = if text.is_empty() {
                None
            } else {
                self.parse(text)
            };
            // The buffer's room is kept for the next line.
            self.line = line;
            self.line.clear();
            if let Some(message) = parsed {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let writer = self.writer.lock().await.take();
        if let Some(mut writer) = writer {
            // What is queued goes out, then the end of the stream.
            writer.drain().await?;
            writer.sink.shutdown().await?;
        }
        Ok(())
    }
}
