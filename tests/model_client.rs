//! The OpenAI-compatible planner against a local HTTP server that replays
//! provider responses (no network): what it sends, what it accepts, and
//! that the loop still checks what the model answered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use adk_computer_use::agent::openai::{OpenAiConfig, OpenAiPlanner};
use adk_computer_use::agent::{AgentLoop, AgentStop, AllowedActions};
use adk_computer_use::contracts::ExecutionMode;
use adk_computer_use::{
    ComputerUseError, McpRuntimeConfig, ScopeAuthorizer, Session, VerifiedIdentity,
};
use computer_use_server::{CLIPBOARD_APP, Config};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const KEY: &str = "sk-test-never-logged";

/// One request as the server saw it.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: String,
    body: Value,
}

/// Serves `replies` (status, fixture), one per request, on a local port.
async fn replay(replies: Vec<(u16, &'static str)>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        for (status, fixture) in replies {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let (read, mut write) = stream.into_split();
            let mut reader = BufReader::new(read);
            let mut request_line = String::new();
            reader.read_line(&mut request_line).await.unwrap();
            let (mut length, mut authorization) = (0usize, String::new());
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).await.unwrap();
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').unwrap_or((line, ""));
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().unwrap(),
                    "authorization" => authorization = value.trim().to_owned(),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).await.unwrap();
            log.lock().unwrap().push(Seen {
                path: request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("")
                    .to_owned(),
                authorization,
                body: serde_json::from_slice(&body).unwrap(),
            });
            let payload = std::fs::read_to_string(format!(
                "{}/tests/fixtures/openai/{fixture}",
                env!("CARGO_MANIFEST_DIR")
            ))
            .unwrap();
            let response = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{payload}",
                payload.len()
            );
            write.write_all(response.as_bytes()).await.unwrap();
            write.shutdown().await.unwrap();
        }
    });
    (base, seen)
}

async fn session() -> Session<adk_computer_use::ComputerUseMcpRuntime> {
    let (runtime, _approver) = adk_computer_use_testkit::spawn(
        Config::for_principal("alice"),
        McpRuntimeConfig::new("alice"),
    )
    .await
    .unwrap();
    runtime.start_session(Some("model"), None).await.unwrap();
    let identity = VerifiedIdentity::new("alice", "t").unwrap();
    let authorizer =
        ScopeAuthorizer::new(identity, ["computer:plan", "computer:execute:background"]).unwrap();
    Session::builder(Arc::new(runtime), authorizer)
        .target(CLIPBOARD_APP, None)
        .build()
        .unwrap()
}

fn writes() -> AllowedActions {
    AllowedActions::default().allow("write_clipboard", &[ExecutionMode::Background], None)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_plans_a_write_and_says_done_under_the_strict_schema() {
    let (base, seen) = replay(vec![(200, "act.json"), (200, "done.json")]).await;
    let planner = OpenAiPlanner::new(OpenAiConfig::new(base, KEY, "gpt-4.1-mini")).unwrap();
    let session = session().await;
    let report = AgentLoop::new(&session, planner, writes())
        .run("put 'from the model' on my clipboard")
        .await
        .into_result()
        .unwrap();
    assert!(
        matches!(&report.stop, AgentStop::Done { summary } if summary == "The clipboard holds the text."),
        "{report:?}"
    );
    assert_eq!(report.history.len(), 1);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    let first = &seen[0];
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(first.authorization, format!("Bearer {KEY}"));
    assert_eq!(first.body["model"], "gpt-4.1-mini");
    let format = &first.body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(format["json_schema"]["schema"], writes().schema());
    // The screenshot goes along as an image; the second call carries the
    // outcome of the first step.
    let content = first.body["messages"][1]["content"].as_array().unwrap();
    assert!(
        content.iter().any(|c| c["type"] == "image_url"),
        "{content:?}"
    );
    let second = seen[1].body["messages"][1]["content"][0]["text"]
        .as_str()
        .unwrap();
    // The write's postcondition was derived and checked: the model is told
    // the step completed.
    assert!(second.contains(r#""outcome":"completed""#), "{second}");
    let _ = session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_ignores_the_schema_is_still_checked() {
    let (base, _) = replay(vec![(200, "forged.json")]).await;
    let planner = OpenAiPlanner::new(OpenAiConfig::new(base, KEY, "m")).unwrap();
    let session = session().await;
    let err = AgentLoop::new(&session, planner, writes())
        .run("x")
        .await
        .into_result()
        .unwrap_err();
    assert_eq!(err.field(), Some("(unknown field)"), "{err}");
    let _ = session.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_and_errors_are_typed_and_never_carry_the_key() {
    let (base, _) = replay(vec![
        (200, "refusal.json"),
        (401, "unauthorized.json"),
        (400, "echo_key.json"),
    ])
    .await;
    let planner = OpenAiPlanner::new(OpenAiConfig::new(base, KEY, "m")).unwrap();
    let session = session().await;
    for code in ["model_refused", "http_401", "http_400"] {
        let err = AgentLoop::new(&session, planner.clone(), writes())
            .run("x")
            .await
            .into_result()
            .unwrap_err();
        assert_eq!(err.refusal_code(), Some(code), "{err}");
        assert!(!format!("{err} {err:?}").contains(KEY));
    }
    assert!(
        !format!("{planner:?}").contains(KEY),
        "the key is redacted from Debug"
    );
    // Nothing listening: a transport error, no key in it either.
    let dead = OpenAiPlanner::new(OpenAiConfig::new("http://127.0.0.1:9/v1", KEY, "m")).unwrap();
    let err = AgentLoop::new(&session, dead, writes())
        .run("x")
        .await
        .into_result()
        .unwrap_err();
    assert!(matches!(err, ComputerUseError::Transport { .. }), "{err}");
    assert!(!format!("{err:?}").contains(KEY));
    let _ = session.shutdown().await;
}
