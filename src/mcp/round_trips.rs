//! Round trips, counted on the wire: how many calls an action makes, and
//! how many of them it waits for one after another.
//!
//! A governed action's latency over MCP is mostly its sequential round
//! trips: each costs the server's answer time, and calls in flight together
//! cost about one. [`CountedTransport`] wraps any client transport and
//! records every request it sends and the answer that ends it; a *round* is
//! a stretch of time with at least one request in flight, so the number of
//! rounds is the number of waits on the critical path, and each round's
//! calls are the ones that ran concurrently.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use adk_computer_use::mcp::{ChildTransport, ComputerUseMcpRuntime, CountedTransport, McpRuntimeConfig, RoundTrips};
//! let trips = RoundTrips::new();
//! let child = ChildTransport::spawn(tokio::process::Command::new("computer-use-server"))?;
//! let runtime = ComputerUseMcpRuntime::connect(
//!     CountedTransport::new(child, trips.clone()),
//!     McpRuntimeConfig::new("alice"),
//! )
//! .await?;
//! trips.reset(); // the handshake is not an action's
//! // ... run one governed action ...
//! for round in trips.rounds() {
//!     println!("{}", round.join(" + "));
//! }
//! # let _ = runtime; Ok(()) }
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleClient;
use rmcp::model::{ClientRequest, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;

/// The requests seen so far, grouped into rounds. Cheap to clone: clones
/// share one log.
#[derive(Debug, Clone, Default)]
pub struct RoundTrips(Arc<Mutex<Log>>);

#[derive(Debug, Default)]
struct Log {
    in_flight: HashMap<RequestId, (String, std::time::Instant)>,
    rounds: Vec<Vec<String>>,
    open: bool,
    /// Per call name: how many answered, and their time in flight in all.
    waited: std::collections::BTreeMap<String, (u64, std::time::Duration)>,
}

impl RoundTrips {
    /// An empty log.
    pub fn new() -> Self {
        Self::default()
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Forgets every round recorded, and every request still in flight (a
    /// request never answered, timed out or cancelled, would otherwise hold
    /// its round open for good).
    pub fn reset(&self) {
        let mut log = self.log();
        log.rounds.clear();
        log.in_flight.clear();
        log.open = false;
        log.waited.clear();
    }

    /// Per call name, how many calls were answered and how long they were
    /// in flight in all, from the request's send to its answer's arrival.
    pub fn waited(&self) -> Vec<(String, u64, std::time::Duration)> {
        self.log()
            .waited
            .iter()
            .map(|(name, (count, total))| (name.clone(), *count, *total))
            .collect()
    }

    /// The rounds so far: each the names of the calls that were in flight
    /// together, in the order they were sent. A `tools/call` is named by
    /// its tool, and a shadow `execute_action` by the observation it runs
    /// (`execute_action:snapshot`).
    pub fn rounds(&self) -> Vec<Vec<String>> {
        self.log().rounds.clone()
    }

    /// How many calls were sent.
    pub fn calls(&self) -> usize {
        self.log().rounds.iter().map(Vec::len).sum()
    }

    fn sent(&self, id: RequestId, name: String) {
        let mut log = self.log();
        if log.in_flight.is_empty() || !log.open {
            log.rounds.push(Vec::new());
            log.open = true;
        }
        if let Some(round) = log.rounds.last_mut() {
            round.push(name.clone());
        }
        log.in_flight.insert(id, (name, std::time::Instant::now()));
    }

    fn answered(&self, id: &RequestId) {
        let mut log = self.log();
        if let Some((name, sent)) = log.in_flight.remove(id) {
            let entry = log.waited.entry(name).or_default();
            entry.0 += 1;
            entry.1 += sent.elapsed();
            if log.in_flight.is_empty() {
                log.open = false;
            }
        }
    }
}

/// A client transport that records its requests and their answers in a
/// [`RoundTrips`] log, and passes every message through unchanged.
pub struct CountedTransport<T> {
    inner: T,
    trips: RoundTrips,
}

impl<T> CountedTransport<T> {
    /// Wraps `inner`, recording into `trips`.
    pub fn new(inner: T, trips: RoundTrips) -> Self {
        Self { inner, trips }
    }
}

/// The name a request is counted under.
fn name_of(request: &ClientRequest) -> String {
    match request {
        ClientRequest::CallToolRequest(call) => {
            let tool = call.params.name.to_string();
            let shadow = call
                .params
                .arguments
                .as_ref()
                .filter(|args| args.get("mode").and_then(Value::as_str) == Some("shadow"))
                .and_then(|args| args.get("tool").and_then(Value::as_str));
            match shadow {
                Some(observed) => format!("{tool}:{observed}"),
                None => tool,
            }
        }
        other => other.method().to_owned(),
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for CountedTransport<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item {
            self.trips
                .sent(request.id.clone(), name_of(&request.request));
        }
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        let trips = self.trips.clone();
        let next = self.inner.receive();
        async move {
            let message = next.await;
            match &message {
                Some(JsonRpcMessage::Response(response)) => trips.answered(&response.id),
                Some(JsonRpcMessage::Error(error)) => {
                    if let Some(id) = &error.id {
                        trips.answered(id);
                    }
                }
                _ => {}
            }
            message
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
