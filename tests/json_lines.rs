//! The adapter's line transport (`mcp::JsonLines`) against rmcp's own
//! (`AsyncRwTransport`), fed the same bytes: every message arrives the same
//! on both, but for the one difference the transport documents (a tool
//! call's answer is read as a tool result even where rmcp's untagged list
//! would pick another type first). Lines that are no message, lines too
//! long to read, reads and writes cancelled half way.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use adk_computer_use::mcp::rmcp;
use adk_computer_use::mcp::{JsonLines, MAX_LINE_BYTES};
use adk_computer_use_testkit::child::process_gone;
use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerResult};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

type Ours = JsonLines<ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;
type Theirs = AsyncRwTransport<RoleClient, ReadHalf<DuplexStream>, WriteHalf<DuplexStream>>;

/// A server's end of one transport: what it writes, and the lines the
/// client wrote to it.
struct ServerEnd {
    write: WriteHalf<DuplexStream>,
    read: BufReader<ReadHalf<DuplexStream>>,
}

impl ServerEnd {
    async fn say(&mut self, line: &[u8]) {
        self.write.write_all(line).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
    }

    async fn heard(&mut self) -> Value {
        let mut line = String::new();
        patient(self.read.read_line(&mut line)).await.unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

fn ends(capacity: usize) -> ((ReadHalf<DuplexStream>, WriteHalf<DuplexStream>), ServerEnd) {
    let (client, server) = tokio::io::duplex(capacity);
    let (server_read, server_write) = tokio::io::split(server);
    (
        tokio::io::split(client),
        ServerEnd {
            write: server_write,
            read: BufReader::new(server_read),
        },
    )
}

/// Ours and rmcp's, each with its server end.
struct Both {
    ours: Ours,
    ours_server: ServerEnd,
    theirs: Theirs,
    theirs_server: ServerEnd,
}

impl Both {
    fn new() -> Self {
        let ((read, write), ours_server) = ends(64 * 1024);
        let ((their_read, their_write), theirs_server) = ends(64 * 1024);
        Self {
            ours: JsonLines::new(read, write),
            ours_server,
            theirs: AsyncRwTransport::new_client(their_read, their_write),
            theirs_server,
        }
    }

    /// The client sends `message` on both; the next line each server hears
    /// (the same on both), which is `message` unless something was written
    /// before it.
    async fn send(&mut self, message: Value) -> Value {
        let message = request(message);
        self.ours.send(message.clone()).await.unwrap();
        self.theirs.send(message).await.unwrap();
        let (ours, theirs) = (
            self.ours_server.heard().await,
            self.theirs_server.heard().await,
        );
        assert_eq!(ours, theirs, "both wrote the same");
        ours
    }

    /// Neither client wrote anything back since the last line heard: the
    /// next line each server hears is a request sent now.
    async fn nothing_written_back(&mut self) {
        let heard = self
            .send(json!({ "jsonrpc": "2.0", "id": "probe", "method": "ping" }))
            .await;
        assert_eq!(heard["id"], "probe", "written back first: {heard}");
    }

    /// Both servers say `line`; what each client then reads, as JSON.
    async fn deliver(&mut self, line: &[u8]) -> (Value, Value) {
        self.ours_server.say(line).await;
        self.theirs_server.say(line).await;
        self.next().await
    }

    async fn next(&mut self) -> (Value, Value) {
        let ours = patient(self.ours.receive())
            .await
            .expect("ours read a message");
        let theirs = patient(self.theirs.receive())
            .await
            .expect("rmcp's read a message");
        (as_json(&ours), as_json(&theirs))
    }

    /// Both servers say `line` and then a ping: each client's next message
    /// is the ping (so `line` gave none), and what each wrote back.
    async fn deliver_nothing(&mut self, line: &[u8]) {
        self.ours_server.say(line).await;
        self.theirs_server.say(line).await;
        let ping = br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#;
        let (ours, theirs) = self.deliver(ping).await;
        assert_eq!(ours["id"], "after", "ours read the ping next, not {ours}");
        assert_eq!(
            theirs["id"], "after",
            "rmcp's read the ping next, not {theirs}"
        );
    }
}

/// A wait long enough for any machine, so a hang fails instead of stalling.
async fn patient<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("no answer in 60 s")
}

fn as_json(message: &RxJsonRpcMessage<RoleClient>) -> Value {
    serde_json::to_value(message).unwrap()
}

fn call(id: Value, tool: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": tool, "arguments": {} } })
}

/// `message` as the client sends it.
fn request(message: Value) -> TxJsonRpcMessage<RoleClient> {
    serde_json::from_value(message).unwrap()
}

/// A tool call whose arguments carry `bytes` bytes: more than a small
/// pipe holds.
fn big_call(bytes: usize) -> TxJsonRpcMessage<RoleClient> {
    request(json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "big", "arguments": { "blob": "x".repeat(bytes) } }
    }))
}

/// What a message was read as, where the two readings can differ.
fn read_as(message: &RxJsonRpcMessage<RoleClient>) -> &'static str {
    match message {
        JsonRpcMessage::Response(response) => match response.result {
            ServerResult::CallToolResult(_) => "a tool result",
            ServerResult::ListToolsResult(_) => "a list of tools",
            _ => "another result",
        },
        _ => "no result",
    }
}

/// A tool's answer the way upstream's server writes one: the structured
/// answer, and the same as text.
fn answer(id: Value, structured: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": {
            "content": [{ "type": "text", "text": structured.to_string() }],
            "structuredContent": structured,
        }
    }))
    .unwrap()
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[tokio::test]
async fn upstreams_answers_to_tool_calls_arrive_as_rmcp_reads_them() {
    let mut both = Both::new();
    let answers = [
        json!({ "preview": fixture("action-preview.json") }),
        json!({ "lease": fixture("control-lease.json") }),
        json!({ "receipt": fixture("execution-receipt.json") }),
        json!({ "reservation": fixture("target-reservation.json") }),
        json!({ "events": [fixture("session-event.json")], "next_sequence": 4 }),
        json!({ "grant": fixture("approval-grant.json") }),
    ];
    for (n, structured) in answers.into_iter().enumerate() {
        let id = json!(n + 1);
        both.send(call(id.clone(), "preview_action")).await;
        let (ours, theirs) = both.deliver(&answer(id, structured)).await;
        assert_eq!(ours, theirs);
        assert!(ours["result"]["structuredContent"].is_object(), "{ours}");
    }
    // A refusal, with an image beside its text, and a string id.
    both.send(call(json!("call-a"), "snapshot")).await;
    let refusal = json!({
        "jsonrpc": "2.0", "id": "call-a",
        "result": {
            "content": [
                { "type": "text", "text": "{\"error\":\"lease_required\"}" },
                { "type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png" }
            ],
            "structuredContent": { "error": "lease_required", "message": "no lease" },
            "isError": true,
            "_meta": { "note": "kept" }
        }
    });
    let (ours, theirs) = both.deliver(&serde_json::to_vec(&refusal).unwrap()).await;
    assert_eq!(ours, theirs);
    assert_eq!(ours["result"]["isError"], true);
}

#[tokio::test]
async fn every_other_message_is_read_by_rmcps_own_rules() {
    let mut both = Both::new();
    // A JSON-RPC error answering a tool call.
    both.send(call(json!(1), "snapshot")).await;
    let (ours, theirs) = both
        .deliver(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad arguments"}}"#)
        .await;
    assert_eq!(ours, theirs);
    assert_eq!(ours["error"]["code"], -32602);
    // A result answering no tool call (an id never sent, and one already
    // answered): read the general way, the same on both.
    for line in [
        &answer(json!(99), json!({ "fake": true }))[..],
        &answer(json!(1), json!({ "fake": true }))[..],
        br#"{"jsonrpc":"2.0","id":98,"result":{}}"#,
    ] {
        let (ours, theirs) = both.deliver(line).await;
        assert_eq!(ours, theirs);
    }
    // A tool call's answer that is no complete tool result: another type
    // of rmcp's list, read as rmcp reads it.
    both.send(call(json!(2), "snapshot")).await;
    let (ours, theirs) = both
        .deliver(br#"{"jsonrpc":"2.0","id":2,"result":{"resultType":"input_required","inputRequests":{}}}"#)
        .await;
    assert_eq!(ours, theirs);
    // Notifications, requests from the server, a byte-order mark, CRLF.
    for line in [
        &br#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}"#[..],
        br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/unknown/thing"}"#,
        br#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#,
        b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"s2\",\"method\":\"ping\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":\"s3\",\"method\":\"ping\"}\r",
    ] {
        let (ours, theirs) = both.deliver(line).await;
        assert_eq!(ours, theirs);
    }
}

#[tokio::test]
async fn lines_that_are_no_message_give_none_and_only_one_with_an_id_is_answered() {
    let mut both = Both::new();
    // Not JSON, an empty line, a notification outside MCP's methods that
    // does not read: nothing, and nothing written back.
    both.deliver_nothing(b"this is not json").await;
    both.deliver_nothing(b"").await;
    both.deliver_nothing(br#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":7}"#)
        .await;
    both.deliver_nothing(br#"{"jsonrpc":"2.0","method":"notifications/odd","params":7}"#)
        .await;
    // A request-shaped line whose method is an unknown `notifications/`
    // one: skipped unanswered too, id or not.
    both.deliver_nothing(br#"{"jsonrpc":"1.0","id":1,"method":"notifications/odd"}"#)
        .await;
    both.nothing_written_back().await;
    // An MCP notification that does not read: nothing read, and an
    // Invalid Request written back, by both.
    both.deliver_nothing(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":7}"#)
        .await;
    let (ours, theirs) = (
        both.ours_server.heard().await,
        both.theirs_server.heard().await,
    );
    assert_eq!(ours, theirs);
    assert_eq!(ours["error"]["code"], -32600, "{ours}");
    // JSON with an id that is no message (`method: null` beside a result,
    // as rmcp judges by the keys present): nothing read, and an Invalid
    // Request written back, by both.
    both.send(call(json!(5), "snapshot")).await;
    let broken = json!({
        "jsonrpc": "2.0", "id": 5, "method": null,
        "result": { "content": [], "structuredContent": { "fake": true } }
    });
    both.deliver_nothing(&serde_json::to_vec(&broken).unwrap())
        .await;
    let (ours, theirs) = (
        both.ours_server.heard().await,
        both.theirs_server.heard().await,
    );
    assert_eq!(ours, theirs);
    assert_eq!(ours["error"]["code"], -32600, "{ours}");
    // A tool answer carrying `error` beside its result: no message either.
    both.send(call(json!(6), "snapshot")).await;
    let both_keys = json!({
        "jsonrpc": "2.0", "id": 6, "error": { "code": 1, "message": "x" },
        "result": { "content": [] }
    });
    both.deliver_nothing(&serde_json::to_vec(&both_keys).unwrap())
        .await;
    let (ours, theirs) = (
        both.ours_server.heard().await,
        both.theirs_server.heard().await,
    );
    assert_eq!(ours, theirs);
}

/// The one documented difference: a tool call's answer that would also
/// read as a list of tools is the tool result it answers. It also shows
/// that an answer to a pending call takes the typed path.
#[tokio::test]
async fn a_tool_calls_answer_is_read_as_a_tool_result_whatever_else_it_could_be() {
    let mut both = Both::new();
    both.send(call(json!(3), "snapshot")).await;
    let line = br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[],"content":[{"type":"text","text":"{}"}],"structuredContent":{"fake":true}}}"#;
    both.ours_server.say(line).await;
    both.theirs_server.say(line).await;
    let ours = patient(both.ours.receive()).await.unwrap();
    let theirs = patient(both.theirs.receive()).await.unwrap();
    assert_eq!(read_as(&ours), "a tool result", "ours: {}", as_json(&ours));
    assert_eq!(
        read_as(&theirs),
        "a list of tools",
        "rmcp's: {}",
        as_json(&theirs)
    );
    // Once answered, the id is no longer a pending tool call: the same
    // line again is read the general way, as rmcp reads it.
    let (ours, theirs) = both.deliver(line).await;
    assert_eq!(ours, theirs);
    // A cancelled call is no longer pending either.
    both.send(call(json!(4), "snapshot")).await;
    both.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 4 } }))
        .await;
    let late = br#"{"jsonrpc":"2.0","id":4,"result":{"tools":[],"content":[]}}"#;
    let (ours, theirs) = both.deliver(late).await;
    assert_eq!(ours, theirs);
}

#[tokio::test]
async fn a_line_longer_than_the_longest_read_is_skipped_and_the_next_arrives() {
    let ((read, write), mut server) = ends(1 << 20);
    let mut ours = JsonLines::new(read, write);
    let receiving = tokio::spawn(async move {
        let message = ours.receive().await;
        (ours, message)
    });
    let long = vec![b'x'; MAX_LINE_BYTES + 10];
    server.say(&long).await;
    server
        .say(br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#)
        .await;
    let (_ours, message) = patient(receiving).await.unwrap();
    assert_eq!(as_json(&message.unwrap())["id"], "after");
}

#[tokio::test]
async fn a_read_cancelled_half_way_through_a_line_resumes_it() {
    let ((read, write), mut server) = ends(1024);
    let mut ours = JsonLines::new(read, write);
    let line = br#"{"jsonrpc":"2.0","id":"whole","method":"ping"}"#;
    let (head, tail) = line.split_at(20);
    server.write.write_all(head).await.unwrap();
    // The read takes the head, finds no newline, and is cancelled.
    let cancelled = tokio::time::timeout(Duration::from_millis(50), ours.receive()).await;
    assert!(cancelled.is_err(), "half a line is no message");
    server.say(tail).await;
    let message = patient(ours.receive()).await.unwrap();
    assert_eq!(as_json(&message)["id"], "whole");
}

#[tokio::test]
async fn a_write_cancelled_half_way_is_finished_whole_before_the_next() {
    // A pipe of 16 bytes nobody reads: the first request fills it and
    // its send is given up part way through.
    let ((read, write), mut server) = ends(16);
    let mut ours = JsonLines::new(read, write);
    let first = request(call(json!(1), "first_tool"));
    let second = request(call(json!(2), "second_tool"));
    let given_up = tokio::time::timeout(Duration::from_millis(50), ours.send(first)).await;
    assert!(given_up.is_err(), "16 bytes cannot hold a request");
    // Now the server reads, and the next send goes out: both lines whole,
    // in order.
    let sending = tokio::spawn(ours.send(second));
    assert_eq!(server.heard().await["params"]["name"], "first_tool");
    assert_eq!(server.heard().await["params"]["name"], "second_tool");
    patient(sending).await.unwrap().unwrap();
}

#[tokio::test]
async fn closing_ends_the_stream_and_a_closed_transport_sends_nothing() {
    let ((read, write), mut server) = ends(1024);
    let mut ours = JsonLines::new(read, write);
    ours.close().await.unwrap();
    let mut rest = String::new();
    let read = patient(server.read.read_line(&mut rest)).await.unwrap();
    assert_eq!(read, 0, "the server reads the end of the stream");
    let message = request(call(json!(1), "snapshot"));
    let err = ours.send(message).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotConnected);
}

#[tokio::test]
async fn closing_a_child_that_ignores_its_closed_stdin_ends_it_and_reaps_it() {
    use adk_computer_use::mcp::ChildTransport;
    // Exits on SIGTERM, never on its stdin's end.
    let mut sleeper = tokio::process::Command::new("sleep");
    sleeper.arg("600");
    let mut transport = ChildTransport::spawn(sleeper).unwrap();
    let pid = transport.id().unwrap();
    assert!(!process_gone(pid));
    patient(transport.close()).await.unwrap();
    assert!(process_gone(pid), "sleep is asked to terminate, and reaped");
    assert_eq!(transport.id(), None);
    // Ignores SIGTERM too: killed.
    let mut stubborn = tokio::process::Command::new("sh");
    stubborn.args(["-c", "trap '' TERM; while :; do sleep 1; done"]);
    let mut transport = ChildTransport::spawn(stubborn).unwrap();
    let pid = transport.id().unwrap();
    patient(transport.close()).await.unwrap();
    assert!(
        process_gone(pid),
        "a shell that ignores SIGTERM is killed, and reaped"
    );
}

#[tokio::test]
async fn lines_that_are_not_json_throughout_are_never_a_tool_answer() {
    let ok =
        r#""result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"fake":true}}"#;
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let mut lines: Vec<Vec<u8>> = Vec::new();
    // What the one-pass read would skip unchecked, at the top and inside
    // the result: a lone surrogate, a number out of range, nesting past
    // serde_json's limit, bytes that are no UTF-8.
    for junk in [r#""\ud800""#, "1e400", &deep] {
        lines.push(format!(r#"{{"jsonrpc":"2.0","id":1,"x":{junk},{ok}}}"#).into_bytes());
        lines.push(
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[],"x":{junk}}}}}"#)
                .into_bytes(),
        );
    }
    let mut not_utf8 = br#"{"jsonrpc":"2.0","id":1,"x":""#.to_vec();
    not_utf8.extend_from_slice(b"\xff\xfe\",");
    not_utf8.extend_from_slice(ok.as_bytes());
    not_utf8.push(b'}');
    lines.push(not_utf8);
    let mut both = Both::new();
    for line in &lines {
        both.send(call(json!(1), "snapshot")).await;
        // Not JSON to rmcp: skipped unanswered, by both.
        both.deliver_nothing(line).await;
        both.nothing_written_back().await;
        // The call is still pending on both: its real answer arrives typed.
        let (ours, theirs) = both
            .deliver(&answer(json!(1), json!({ "fake": true })))
            .await;
        assert_eq!(ours, theirs);
    }
    assert_eq!(both.ours.typed_reads(), lines.len() as u64);
    // An array in a tool answer's place: serde's derive would fill the
    // answer's fields in order; rmcp reads no message and answers Invalid
    // Request, and so do ours.
    both.send(call(json!(2), "snapshot")).await;
    both.deliver_nothing(br#"["2.0",2,{"content":[{"type":"text","text":"hi"}]}]"#)
        .await;
    let (ours, theirs) = (
        both.ours_server.heard().await,
        both.theirs_server.heard().await,
    );
    assert_eq!(ours, theirs);
    assert_eq!(ours["error"]["code"], -32600, "{ours}");
    assert_eq!(both.ours.typed_reads(), lines.len() as u64);
}

/// rmcp's service takes an id written as a string of digits as the answer
/// to the call of that number: so does the pending list, which forgets it.
#[tokio::test]
async fn an_id_written_as_digits_answers_the_call_of_that_number() {
    let mut both = Both::new();
    both.send(call(json!(7), "snapshot")).await;
    let line = br#"{"jsonrpc":"2.0","id":"7","result":{"tools":[],"content":[],"structuredContent":{"fake":true}}}"#;
    both.ours_server.say(line).await;
    let ours = patient(both.ours.receive()).await.unwrap();
    assert_eq!(read_as(&ours), "a tool result", "{}", as_json(&ours));
    assert_eq!(both.ours.typed_reads(), 1);
    // Forgotten: the same answer again is read by rmcp's rules.
    both.ours_server.say(line).await;
    let again = patient(both.ours.receive()).await.unwrap();
    assert_eq!(read_as(&again), "a list of tools", "{}", as_json(&again));
    assert_eq!(both.ours.typed_reads(), 1);
}

/// A send dropped before its request was queued leaves no pending call
/// behind: a later answer under its id is read by rmcp's rules.
#[tokio::test]
async fn a_tool_call_never_sent_is_not_pending() {
    let ((read, write), mut server) = ends(1024);
    let mut ours = JsonLines::new(read, write);
    let never = request(call(json!(9), "snapshot"));
    drop(ours.send(never));
    server
        .say(br#"{"jsonrpc":"2.0","id":9,"result":{"tools":[],"content":[]}}"#)
        .await;
    let message = patient(ours.receive()).await.unwrap();
    assert_eq!(
        read_as(&message),
        "a list of tools",
        "{}",
        as_json(&message)
    );
    assert_eq!(ours.typed_reads(), 0);
}

/// rmcp's own case: the Invalid Request answer's writing is cut short by a
/// cancelled `receive`; the next `receive` finishes it, and the server
/// hears it whole, with no send or close needed.
#[tokio::test]
async fn an_invalid_request_answer_cut_short_is_finished_by_the_next_receive() {
    async fn heard_after<T: Transport<RoleClient>>(
        make: impl FnOnce(&'static [u8], DuplexStream) -> T,
    ) -> Vec<u8> {
        let input: &'static [u8] =
            b"{\"foo\":\"bar\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n";
        // A one-byte pipe: the answer goes out a byte at a time.
        let (writer, mut peer) = tokio::io::duplex(1);
        let mut transport = make(input, writer);
        let cut = tokio::time::timeout(Duration::from_millis(50), transport.receive()).await;
        assert!(
            cut.is_err(),
            "the answer cannot all go out before anyone reads"
        );
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut heard = Vec::new();
            let mut byte = [0u8; 1];
            while !heard.ends_with(b"\n") && peer.read(&mut byte).await.unwrap_or(0) == 1 {
                heard.push(byte[0]);
            }
            heard
        });
        let next = patient(transport.receive()).await.unwrap();
        assert_eq!(as_json(&next)["id"], 1);
        let heard = patient(reader).await.unwrap();
        drop(transport);
        heard
    }
    let ours = heard_after(JsonLines::new).await;
    let theirs = heard_after(AsyncRwTransport::<RoleClient, _, _>::new_client).await;
    assert_eq!(ours, theirs);
    let answer: Value = serde_json::from_slice(&ours).unwrap();
    assert_eq!(answer["error"]["code"], -32600);
}

#[tokio::test]
async fn a_line_of_exactly_the_longest_length_is_read_and_one_byte_more_is_skipped() {
    for (extra, read) in [(0usize, true), (1, false)] {
        let ping = br#"{"jsonrpc":"2.0","id":"big","method":"ping"}"#;
        let mut line = ping.to_vec();
        // With its newline, MAX_LINE_BYTES + extra bytes.
        line.resize(MAX_LINE_BYTES - 1 + extra, b' ');
        let mut both = Both::new();
        let (mut ours_server, mut theirs_server) = (
            std::mem::replace(&mut both.ours_server, ends(1).1),
            std::mem::replace(&mut both.theirs_server, ends(1).1),
        );
        let after = br#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#;
        let (ours_line, theirs_line) = (line.clone(), line);
        let writing = tokio::spawn(async move {
            ours_server.say(&ours_line).await;
            ours_server.say(after).await;
            theirs_server.say(&theirs_line).await;
            theirs_server.say(after).await;
        });
        let (ours, theirs) = both.next().await;
        assert_eq!(ours["id"], theirs["id"]);
        assert_eq!(ours["id"], if read { "big" } else { "after" }, "{extra}");
        if read {
            let (ours, theirs) = both.next().await;
            assert_eq!(
                (&ours["id"], &theirs["id"]),
                (&json!("after"), &json!("after"))
            );
        }
        patient(writing).await.unwrap();
    }
}

/// A server that answers the handshake, then writes lines owed an Invalid
/// Request answer and never reads its stdin again: the answers fill its
/// pipe. Closing still ends it, through the service as
/// `ComputerUseMcpRuntime::shutdown` closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_stops_reading_cannot_hold_a_close_and_is_ended() {
    use adk_computer_use::mcp::ChildTransport;
    use rmcp::ServiceExt;
    let mut command = tokio::process::Command::new("sh");
    command.args([
        "-c",
        r#"read -r _; echo '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"deaf","version":"1"}}}'; i=0; while [ $i -lt 3000 ]; do echo '{"foo":"bar"}'; i=$((i+1)); done; exec sleep 600"#,
    ]);
    let transport = ChildTransport::spawn(command).unwrap();
    let pid = transport.id().unwrap();
    let service = patient(().serve(transport)).await.unwrap();
    // Until the answers no longer fit in the pipe.
    let mut stuck = false;
    for _ in 0..600 {
        if std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains("sleep")) {
            stuck = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(stuck, "the server wrote its lines and went to sleep");
    patient(service.cancel()).await.unwrap();
    assert!(
        process_gone(pid),
        "the server is ended once the service is closed"
    );
}

/// A JSON-RPC error answering a tool call ends it: a later result under
/// its id is read by rmcp's rules.
#[tokio::test]
async fn an_error_answering_a_tool_call_ends_it() {
    let mut both = Both::new();
    both.send(call(json!(1), "snapshot")).await;
    let (ours, theirs) = both
        .deliver(br#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"no"}}"#)
        .await;
    assert_eq!(ours, theirs);
    let late = br#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"tools":[]}}"#;
    both.ours_server.say(late).await;
    let message = patient(both.ours.receive()).await.unwrap();
    assert_eq!(
        read_as(&message),
        "a list of tools",
        "{}",
        as_json(&message)
    );
    assert_eq!(both.ours.typed_reads(), 0);
}

/// What a send given up part way left queued is offered on close, before
/// the end of the stream.
#[tokio::test]
async fn closing_offers_what_a_cancelled_send_left() {
    let ((read, write), server) = ends(16);
    let mut ours = JsonLines::new(read, write);
    let first = request(call(json!(1), "first_tool"));
    let given_up = tokio::time::timeout(Duration::from_millis(50), ours.send(first)).await;
    assert!(given_up.is_err(), "16 bytes cannot hold a request");
    let reader = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut all = Vec::new();
        let mut read = server.read;
        read.read_to_end(&mut all).await.unwrap();
        all
    });
    patient(ours.close()).await.unwrap();
    let all = patient(reader).await.unwrap();
    let request: Value = serde_json::from_slice(&all).unwrap();
    assert_eq!(request["params"]["name"], "first_tool");
}

/// A send stuck on a peer that stopped reading gives up when the close
/// begins: the close takes the writing half (and drops it once the peer
/// has taken nothing for the close wait), the stuck send reports an error,
/// and the closed transport sends nothing more. (That a child's stdin then
/// ends is the next tests'.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_behind_a_stuck_send_still_closes() {
    let ((read, write), server) = ends(1024);
    let mut ours = JsonLines::new(read, write);
    let big = big_call(64 * 1024);
    let stuck = tokio::spawn(ours.send(big));
    // The send has begun (its first bytes are in the pipe, taken into the
    // server's buffer unread) and holds the writing half.
    let mut server = server;
    assert!(!patient(server.read.fill_buf()).await.unwrap().is_empty());
    let closed = patient(ours.close()).await;
    assert!(closed.is_err(), "the stuck line could not all go out");
    let sent = patient(stuck).await.unwrap();
    assert!(
        sent.is_err(),
        "a line that did not all go out is not reported written"
    );
    let after = request(call(json!(2), "after"));
    let err = ours.send(after).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotConnected);
}

/// A fresh path for a marker file a shell script touches.
fn marker(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("json-lines-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// A server that exits when its stdin ends is closed that way: it is not
/// signalled. One that ignores its stdin's end is asked to terminate
/// before anything harsher.
#[tokio::test]
async fn closing_ends_stdin_first_and_asks_to_terminate_before_killing() {
    use adk_computer_use::mcp::ChildTransport;
    let (clean, termed) = (marker("clean"), marker("termed"));
    let mut polite = tokio::process::Command::new("sh");
    polite.args([
        "-c",
        &format!(
            "trap 'touch {}; exit 1' TERM; cat >/dev/null; touch {}",
            termed.display(),
            clean.display()
        ),
    ]);
    let mut transport = ChildTransport::spawn(polite).unwrap();
    patient(transport.close()).await.unwrap();
    assert!(clean.exists(), "the server saw its stdin end and exited");
    assert!(!termed.exists(), "and was not signalled");
    let asked = marker("asked");
    let mut deaf = tokio::process::Command::new("sh");
    deaf.args([
        "-c",
        &format!(
            "trap 'touch {}; exit 0' TERM; while :; do sleep 0.1; done",
            asked.display()
        ),
    ]);
    let mut transport = ChildTransport::spawn(deaf).unwrap();
    patient(transport.close()).await.unwrap();
    assert!(asked.exists(), "asked to terminate (SIGTERM) before a kill");
    for path in [clean, termed, asked] {
        let _ = std::fs::remove_file(path);
    }
}

/// A server busy (not reading) while a large request is stuck in its
/// pipe, that reads its stdin to the end afterwards and exits: the close
/// still ends its stdin, so it exits on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_server_behind_a_stuck_send_still_sees_its_stdin_end() {
    use adk_computer_use::mcp::ChildTransport;
    let (clean, termed) = (marker("busy-clean"), marker("busy-termed"));
    let mut busy = tokio::process::Command::new("sh");
    busy.args([
        "-c",
        &format!(
            "trap 'touch {}; exit 1' TERM; sleep 2; cat >/dev/null; touch {}",
            termed.display(),
            clean.display()
        ),
    ]);
    let mut transport = ChildTransport::spawn(busy).unwrap();
    let big = big_call(256 * 1024);
    // Polled until it is stuck: 256 KiB do not fit in the pipe, so it
    // holds the writing half when the close begins.
    let mut send = Box::pin(transport.send(big));
    let polled = tokio::time::timeout(Duration::from_millis(100), &mut send).await;
    assert!(polled.is_err(), "the request is stuck in the full pipe");
    let stuck = tokio::spawn(send);
    let _ = patient(transport.close()).await;
    let _ = patient(stuck).await;
    assert!(
        clean.exists(),
        "the server read its stdin to the end and exited"
    );
    assert!(!termed.exists(), "and was not signalled");
    for path in [clean, termed] {
        let _ = std::fs::remove_file(path);
    }
}

/// The pending list is bounded: past 4096 calls awaiting an answer, a
/// call's answer is read by rmcp's rules (the same message, bar the one
/// documented difference), and the calls already listed keep theirs.
#[tokio::test]
async fn the_pending_list_holds_at_most_4096_calls() {
    let ((read, write), server) = ends(1 << 20);
    let mut ours = JsonLines::new(read, write);
    let ServerEnd {
        write: mut says,
        read: mut heard,
    } = server;
    let draining = tokio::spawn(async move {
        let mut line = Vec::new();
        while heard.read_until(b'\n', &mut line).await.unwrap_or(0) > 0 {
            line.clear();
        }
    });
    for id in 0..=4096 {
        ours.send(request(call(json!(id), "snapshot")))
            .await
            .unwrap();
    }
    for (id, read) in [(4096, "a list of tools"), (4095, "a tool result")] {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[],"content":[]}}}}"#);
        says.write_all(line.as_bytes()).await.unwrap();
        says.write_all(b"\n").await.unwrap();
        let message = patient(ours.receive()).await.unwrap();
        assert_eq!(read_as(&message), read, "call {id}: {}", as_json(&message));
    }
    drop(ours);
    patient(draining).await.unwrap();
}

/// A caller that starts a send, lets it stick on a peer that stopped
/// reading, and then never polls it nor drops it holds the writing half
/// where no closing signal reaches it: the close still returns within its
/// bound, saying so, and a child behind it is still ended.
#[tokio::test]
async fn a_send_held_unpolled_cannot_hold_a_close() {
    use adk_computer_use::mcp::ChildTransport;
    let ((read, write), _server) = ends(1024);
    let mut ours = JsonLines::new(read, write);
    let mut held = Box::pin(ours.send(big_call(64 * 1024)));
    let polled = tokio::time::timeout(Duration::from_millis(100), &mut held).await;
    assert!(polled.is_err(), "the request is stuck in the full pipe");
    let err = patient(ours.close()).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    drop(held);
    // The same before a child that ignores its stdin: asked to terminate.
    let mut sleeper = tokio::process::Command::new("sleep");
    sleeper.arg("600");
    let mut transport = ChildTransport::spawn(sleeper).unwrap();
    let pid = transport.id().unwrap();
    let mut held = Box::pin(transport.send(big_call(256 * 1024)));
    let polled = tokio::time::timeout(Duration::from_millis(100), &mut held).await;
    assert!(polled.is_err(), "the request is stuck in the full pipe");
    let closed = patient(transport.close()).await;
    assert!(
        closed.is_err(),
        "the close says the write held it: {closed:?}"
    );
    assert!(process_gone(pid), "the child is ended all the same");
    drop(held);
}

/// Dropping a child transport ends the child, with no close.
#[tokio::test]
async fn dropping_a_child_transport_ends_the_child() {
    use adk_computer_use::mcp::ChildTransport;
    let mut sleeper = tokio::process::Command::new("sleep");
    sleeper.arg("600");
    let transport = ChildTransport::spawn(sleeper).unwrap();
    let pid = transport.id().unwrap();
    drop(transport);
    assert!(
        adk_computer_use_testkit::child::wait_gone(pid).await,
        "sleep is killed when its transport is dropped"
    );
}
