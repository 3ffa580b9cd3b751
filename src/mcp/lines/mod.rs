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
//! Writes are whole lines even when a caller gives up half way
//! ([`writer`]). Reads are cancel-safe too (rmcp polls `receive` in a
//! `select!`): a partial line stays buffered until its newline arrives, and
//! an Invalid Request answer whose writing was cut short is finished by the
//! next `receive`. Closing never waits on a peer that stopped reading: a
//! write stuck on it gives up when the close begins (reporting an error,
//! never a line as written that was not), and the close offers what is
//! queued and the end of the stream for at most [`CLOSE_WAIT`], then drops
//! the writing half whatever the peer did.

mod reading;
mod writer;

use std::collections::HashSet;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    ClientNotification, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcResponse, RequestId,
    ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};

use super::wire::lock;
use reading::{ToolAnswer, ignored_notification, is_json, is_pending, take_pending};
use writer::Writer;

/// The longest line read, as rmcp's default; a longer one is skipped whole
/// and the connection stays open.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How long closing waits for the writing half to come free, and then for
/// the peer to take what is still queued and the end of the stream. A peer
/// that stopped reading cannot hold a close.
pub const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Most tool calls remembered as pending at once. Past it a call's answer
/// is read the general way: slower, and the same message but for the one
/// difference the module documents.
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
    /// The Invalid Request answer owed to a line that was JSON but no MCP
    /// message: written before the next line is read.
    reply: Reply,
    /// How many answers were read the one-pass way.
    typed: u64,
    /// Set when the close begins: every write in progress gives up.
    closing: tokio::sync::watch::Sender<bool>,
}

/// Where an owed Invalid Request answer stands.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reply {
    None,
    /// Not queued yet.
    Owed,
    /// Queued; the queue still has to go out.
    Flush,
}

/// Runs `write` unless and until the close begins: then it is given up
/// (dropping it releases the writing half for the close).
async fn until_closing<T>(
    closing: &mut tokio::sync::watch::Receiver<bool>,
    write: impl Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    tokio::select! {
        biased;
        _ = closing.wait_for(|closing| *closing) => Err(std::io::Error::new(
            std::io::ErrorKind::NotConnected,
            "the transport is closing",
        )),
        written = write => written,
    }
}

/// What reading one line gave.
enum Read {
    Line,
    Skipped,
    Closed,
}

/// Forgets a tool call's id when its request never reached the queue (its
/// send was dropped before): nobody will answer it.
struct PendingCall {
    calls: Arc<Mutex<HashSet<RequestId>>>,
    id: Option<RequestId>,
}

impl PendingCall {
    /// The request reached the queue: an answer may come.
    fn queued(&mut self) {
        self.id = None;
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            lock(&self.calls).remove(&id);
        }
    }
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
            writer: Arc::new(tokio::sync::Mutex::new(Some(Writer::new(write)))),
            line: Vec::new(),
            skipping: false,
            calls: Arc::new(Mutex::new(HashSet::new())),
            reply: Reply::None,
            typed: 0,
            closing: tokio::sync::watch::Sender::new(false),
        }
    }

    /// How many tool answers this transport has read in one pass as tool
    /// results (the rest of what it read went by rmcp's rules): to check
    /// that the fast way is taken, and on which share of the traffic.
    pub fn typed_reads(&self) -> u64 {
        self.typed
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

    /// Writes the owed Invalid Request answer, if any. Cancel-safe: queued
    /// once, and a drain cut short is finished by the next call.
    async fn answer_owed(&mut self) -> Option<()> {
        if self.reply == Reply::None {
            return Some(());
        }
        let writer = Arc::clone(&self.writer);
        let mut closing = self.closing.subscribe();
        let reply = &mut self.reply;
        let answered = until_closing(&mut closing, async move {
            let mut writer = writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(std::io::ErrorKind::NotConnected.into());
            };
            if *reply == Reply::Owed {
                let refusal = TxJsonRpcMessage::<RoleClient>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                let mut line = serde_json::to_vec(&refusal)?;
                line.push(b'\n');
                // Queued once: a drain cut short is the next call's to finish.
                writer.write_line(&line, || *reply = Reply::Flush).await?;
            } else {
                writer.drain().await?;
            }
            *reply = Reply::None;
            Ok(())
        })
        .await;
        answered.ok()
    }

    /// One line (without its line ending) as a message: `None` for a line
    /// to skip.
    fn parse(&mut self, line: &[u8]) -> Option<RxJsonRpcMessage<RoleClient>> {
        // The whole-line check only for an answer to a pending call: any
        // other line goes on to rmcp's reading, which checks it anyway.
        if let Some(answer) = ToolAnswer::read(line)
            && is_pending(&lock(&self.calls), &answer.id)
            && is_json(line)
            && take_pending(&mut lock(&self.calls), &answer.id)
        {
            self.typed += 1;
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
                    take_pending(&mut lock(&self.calls), id);
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
                if answer {
                    self.reply = Reply::Owed;
                }
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
        let mut pending = PendingCall {
            calls: Arc::clone(&self.calls),
            id: None,
        };
        match &item {
            JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_)) =>
            {
                let mut calls = lock(&self.calls);
                if calls.len() < MAX_PENDING && calls.insert(request.id.clone()) {
                    pending.id = Some(request.id.clone());
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
        let mut closing = self.closing.subscribe();
        async move {
            let line = line?;
            until_closing(&mut closing, async {
                let mut writer = writer.lock().await;
                let Some(writer) = writer.as_mut() else {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::NotConnected,
                        "the transport is closed",
                    ));
                };
                // Once queued, the request goes out unless the transport
                // closes first (the next write, or the close, finishes it),
                // so its answer may come.
                writer.write_line(&line, || pending.queued()).await
            })
            .await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            self.answer_owed().await?;
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
        // Every write in progress gives up, so the writing half comes free.
        self.closing.send_replace(true);
        let taken = match tokio::time::timeout(CLOSE_WAIT, self.writer.lock()).await {
            Ok(mut writer) => writer.take(),
            Err(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "a write held the transport past the close wait",
                ));
            }
        };
        let Some(mut writer) = taken else {
            return Ok(());
        };
        // What is queued, and the end of the stream, are offered for at most
        // CLOSE_WAIT; then the writing half is dropped (closing a pipe).
        match tokio::time::timeout(CLOSE_WAIT, writer.shut()).await {
            Ok(shut) => shut,
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the peer took nothing more within the close wait: what was still queued is dropped",
            )),
        }
    }
}
