//! An approval survives a lost answer from PostgreSQL: the connection drops
//! after the claim's `UPDATE` reached the server (and changed the row) and
//! before its answer came back. The resume must still run the action,
//! once, and never read its own claim as another resume's.
//!
//! A TCP proxy of this test's own stands between the store and the server;
//! it forwards everything, except that once, right after it forwards the
//! claim's statement, it throws the answer away and either cuts the
//! connection, or keeps it open without a word more (a network that drops
//! packets without closing), or keeps every connection from then on
//! without a word (a network that stays down).
//! Needs `ADK_POSTGRES_URL` (`.ci/run` starts a server and sets it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod pg_support;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use adk_computer_use::chain::{
    ChainOutcome, CheckpointStore, Decision, Session, decide, decision_of,
};
use adk_computer_use::journal::{Journal, JournalSink, verify_journal};
use adk_computer_use::pg::{PostgresCheckpointStore, PostgresJournal, read_postgres_journal};
use adk_computer_use_testkit::needs;
use common::*;
use pg_support::*;

/// The statement that claims a checkpoint, as it travels in the protocol's
/// Parse message.
const CLAIM: &[u8] = b"UPDATE adk_checkpoints SET consumed = true";

/// The statement that records a person's decision.
const DECISION: &[u8] = b"UPDATE adk_checkpoints SET decision";

/// The statement that appends to the journal.
const APPEND: &[u8] = b"INSERT INTO adk_journal";

/// Forwards `from` to `to` until either end closes; once `silent` is set,
/// what is read is thrown away instead.
fn pipe(mut from: TcpStream, mut to: TcpStream, silent: Arc<AtomicBool>) {
    let mut buf = [0u8; 16384];
    while let Ok(n) = from.read(&mut buf) {
        if n == 0 {
            break;
        }
        if !silent.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

/// How the proxy loses the claim's answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Loss {
    /// The connection is cut.
    Cut,
    /// The connection stays open and silent.
    Hang,
    /// That connection and every later one stay open and silent.
    Partition,
}

/// The client's side of one connection: after a chunk holding the claim's
/// Parse, the next chunk that binds and executes it is forwarded, the
/// server's answer is silenced, and once the server has had time to commit,
/// both ends are closed, or kept open with nothing more forwarded. Only
/// the first claim is cut.
fn client_side(
    mut client: TcpStream,
    mut server: TcpStream,
    silent: Arc<AtomicBool>,
    cut: Arc<AtomicBool>,
    loss: Loss,
    statement: &'static [u8],
) {
    let mut buf = [0u8; 16384];
    let mut armed = false;
    while let Ok(n) = client.read(&mut buf) {
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        let cutting = armed
            && chunk.first() == Some(&b'B')
            && cut
                .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
        if cutting {
            silent.store(true, Ordering::SeqCst);
        }
        if server.write_all(chunk).is_err() {
            break;
        }
        if cutting && loss != Loss::Cut {
            // Whatever the client sends from now on goes nowhere, and the
            // connection stays open until the client leaves.
            while matches!(client.read(&mut buf), Ok(n) if n > 0) {}
            break;
        }
        if cutting {
            std::thread::sleep(std::time::Duration::from_millis(500));
            break;
        }
        armed = chunk.windows(statement.len()).any(|w| w == statement);
    }
    let _ = server.shutdown(Shutdown::Both);
    let _ = client.shutdown(Shutdown::Both);
}

/// Serves the proxy on `listener`, in front of `upstream` (`host:port`).
fn proxy(
    listener: TcpListener,
    upstream: String,
    cut: Arc<AtomicBool>,
    loss: Loss,
    statement: &'static [u8],
) {
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { continue };
            if loss == Loss::Partition && cut.load(Ordering::SeqCst) {
                // The network is down: what is sent goes nowhere.
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16384];
                    while matches!(client.read(&mut buf), Ok(n) if n > 0) {}
                });
                continue;
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let silent = Arc::new(AtomicBool::new(false));
            let (c2, s2, quiet) = (
                client.try_clone().unwrap(),
                server.try_clone().unwrap(),
                Arc::clone(&silent),
            );
            std::thread::spawn(move || pipe(s2, c2, quiet));
            let cut = Arc::clone(&cut);
            std::thread::spawn(move || client_side(client, server, silent, cut, loss, statement));
        }
    });
}

/// A proxy of its own in front of the server `url` names, losing the
/// answer to `statement` as `loss` says: the URL through it, and whether
/// it has lost that answer yet.
fn proxied(url: &str, loss: Loss, statement: &'static [u8]) -> (String, Arc<AtomicBool>) {
    let cut = Arc::new(AtomicBool::new(false));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let (upstream, proxied) = through(url, &listener.local_addr().unwrap().to_string());
    proxy(listener, upstream, Arc::clone(&cut), loss, statement);
    (proxied, cut)
}

/// The server `url` names (`host:port`), and `url` sent through `addr`
/// instead.
fn through(url: &str, addr: &str) -> (String, String) {
    let config: postgres::Config = url.parse().unwrap();
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(host)) => host.clone(),
        _ => panic!("ADK_POSTGRES_URL names a TCP host"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let user = config.get_user().unwrap_or("postgres");
    let db = config.get_dbname().unwrap_or("postgres");
    (
        format!("{host}:{port}"),
        format!("postgres://{user}@{addr}/{db}"),
    )
}

/// Suspends an action through a proxy that loses the claim's answer (by a
/// cut, or by a connection that stops answering), resumes it, and checks
/// it ran once and a second resume is refused.
async fn resumes_once_through(loss: Loss, session: &str) {
    let Some(url) = url() else { return };
    let (proxied, cut) = proxied(&url, loss, CLAIM);

    // Suspended through the proxy; resumed through it.
    let (rig, _store, id, approval) = suspended_in(&proxied, session, "pg-lost").await;
    let done = match rig.session.resume(&id, approval.clone()).await {
        Ok(approved) => approved.complete().await,
        Err(err) => Err(err),
    };
    assert!(
        cut.load(Ordering::SeqCst),
        "the proxy lost the answer after forwarding the claim"
    );
    let done = done.unwrap_or_else(|err| panic!("the claim's own row read as another's: {err}"));
    assert!(done.performed());
    assert_eq!(rig.runtime.mutations(), 1, "the action ran once");

    // Seen from a connection that never went through the proxy: consumed,
    // and a second resume is refused.
    let direct = PostgresCheckpointStore::connect(&url, pg_key()).unwrap();
    assert!(!direct.ids().unwrap().contains(&id), "consumed");
    assert!(rig.session.resume(&id, approval).await.is_err(), "once");
    assert_eq!(rig.runtime.mutations(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn a_claim_whose_answer_is_lost_still_resumes_the_action_once() {
    resumes_once_through(Loss::Cut, "lost-answer").await;
}

/// The connection stops answering after the claim's statement: the claim
/// gives up on it (15 s), asks again on a fresh connection, and finds the
/// row its own. Before, both tries waited on the silent connection and the
/// approval was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn a_claim_whose_connection_stops_answering_still_resumes_the_action_once() {
    resumes_once_through(Loss::Hang, "hung-answer").await;
}

/// The network goes down right after the claim's statement and stays
/// down. The claim gives up within its own budget (25 s), before the
/// chain's bound on a store call (30 s) ends the wait for it: none of its
/// statements is sent after the resume was answered. Nothing runs; the
/// approval is spent (fail-safe: never twice). Before, the claim went on
/// asking for 15 s after the resume had been answered "timed out".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn a_claim_cut_off_for_good_ends_before_the_resume_is_answered() {
    let Some(url) = url() else { return };
    let (proxied, cut) = proxied(&url, Loss::Partition, CLAIM);
    let (rig, _store, id, approval) = suspended_in(&proxied, "partition", "pg-lost").await;
    let resumed = rig.session.resume(&id, approval).await;
    assert!(
        cut.load(Ordering::SeqCst),
        "the proxy lost the claim's answer"
    );
    let Err(err) = resumed else {
        panic!("a resume whose claim was never answered went on")
    };
    assert_eq!(
        err.class(),
        "storage",
        "the claim ended itself, before the chain's bound on it: {err}"
    );
    assert_eq!(rig.runtime.mutations(), 0, "nothing ran");
    // The claim's first statement reached the server: the checkpoint is
    // spent, not resumable twice.
    let direct = PostgresCheckpointStore::connect(&url, pg_key()).unwrap();
    assert!(!direct.ids().unwrap().contains(&id), "consumed");
}

/// A person's decision whose answer is lost (the connection cut right
/// after the statement): the person is told it was recorded, because it
/// was. Before, the person was told it failed while the agent went on to
/// act on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn a_decision_whose_answer_is_lost_is_reported_recorded() {
    let Some(url) = url() else { return };
    let (proxied, cut) = proxied(&url, Loss::Cut, DECISION);
    let (_rig, store, id, approval) = suspended_in(&url, "lost-decision", "pg-lost").await;
    let person = PostgresCheckpointStore::connect(&proxied, pg_key()).unwrap();
    let decided = decide(
        &person,
        &id,
        &Decision::Approve(approval.clone()),
        &approver(),
    );
    assert!(
        cut.load(Ordering::SeqCst),
        "the proxy lost the decision's answer"
    );
    decided.unwrap_or_else(|err| panic!("a recorded decision was reported failed: {err}"));
    assert_eq!(
        decision_of(&*store, &id, &approver().public()).unwrap(),
        Some(Decision::Approve(approval)),
        "the decision stands"
    );
}

/// A journal append whose answer is lost: the entry was written, the
/// journal knows it, and the chain goes on. Before, every later entry of
/// the session was refused as a fork.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[needs(postgres)]
async fn a_journal_append_whose_answer_is_lost_does_not_stop_the_chain() {
    let Some(url) = url() else { return };
    let (proxied, cut) = proxied(&url, Loss::Cut, APPEND);
    let session_id = unique("lost-append");
    let sink = Arc::new(PostgresJournal::connect(&proxied).unwrap());
    let rig = rig();
    rig.runtime.act_in(&session_id, None);
    let session = Session::builder(Arc::clone(&rig.runtime), full_authorizer())
        .clock(Arc::new(rig.clock.clone()))
        .journal(Arc::new(Journal::new(sink as Arc<dyn JournalSink>)))
        .build()
        .unwrap();
    for i in 0..3 {
        match session.run(action(&format!("pg-lost-append-{i}"))).await {
            Ok(ChainOutcome::Completed(_)) => {}
            Ok(_) => panic!("action {i} did not complete"),
            Err(err) => panic!("action {i}: {err}"),
        }
    }
    assert!(
        cut.load(Ordering::SeqCst),
        "the proxy lost an append's answer"
    );
    let entries = read_postgres_journal(&url, &session_id).unwrap();
    assert!(entries.len() >= 12, "{}", entries.len());
    verify_journal(&entries, None).unwrap();
    let _ = session.shutdown().await;
}
