//! Review finding 4 (issue #19): `computer-use-journal` verifies a journal
//! against a head kept elsewhere. Without `--head` a rewritten chain (one
//! commit entry dropped, every later digest recomputed) and a truncated
//! one are as consistent as the original, so the command refuses rather
//! than say "intact"; `--unanchored` checks internal consistency only, and
//! says so.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;
use std::sync::Arc;

use adk_computer_use::journal::{FileJournal, Journal, events};
use serde_json::{Value, json};

const AT: &str = "2026-07-13T10:00:00Z";

/// One action's chain, as the session journals it: preview to release.
fn action_events(action: &str) -> Vec<(&'static str, Value)> {
    let lease = format!("lease-{action}");
    let receipt = format!("receipt-{action}");
    vec![
        (
            events::PREVIEWED,
            json!({ "argsDigest": "sha256:aa", "policyDigest": "sha256:bb", "executable": true }),
        ),
        (events::APPROVED, json!({ "authority": "policy" })),
        (events::RESERVED, json!({ "reservationId": "r-1" })),
        (events::LEASED, json!({ "leaseId": lease })),
        (events::STARTED, json!({ "leaseId": lease })),
        (
            events::COMMITTED,
            json!({ "receiptId": receipt, "leaseId": lease, "status": "committed" }),
        ),
        (
            events::VERIFIED,
            json!({ "status": "verified", "verified": true, "committed": true, "receiptId": receipt }),
        ),
        (
            events::RELEASED,
            json!({ "reservationId": "r-1", "how": "explicit", "ok": true }),
        ),
    ]
}

/// Records `events` for each action into a new journal file at `path`
/// through the library; returns the head the session would keep elsewhere.
fn write(path: &Path, actions: &[(&str, Vec<(&'static str, Value)>)]) -> String {
    let journal = Journal::new(Arc::new(FileJournal::open(path).unwrap()));
    for (action, events) in actions {
        for (event_type, payload) in events {
            journal
                .record(
                    "s-1",
                    "alice",
                    Some(action),
                    event_type,
                    AT.into(),
                    payload.clone(),
                )
                .unwrap();
        }
    }
    journal.head()
}

fn run(args: &[&str]) -> Output {
    std::process::Command::new(adk_computer_use_testkit::binary::path(
        adk_computer_use_testkit::binary::JOURNAL,
    ))
    .args(args)
    .output()
    .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The original journal (two actions), a rewrite of it without the first
/// action's commit entry (every later digest recomputed by the library),
/// and a prefix of it (its last action's release cut off).
struct Journals {
    _dir: tempfile::TempDir,
    original: String,
    rewritten: String,
    truncated: String,
    head: String,
}

fn journals() -> Journals {
    let dir = tempfile::tempdir().unwrap();
    let original = dir.path().join("original.jsonl");
    let rewritten = dir.path().join("rewritten.jsonl");
    let truncated = dir.path().join("truncated.jsonl");
    let head = write(
        &original,
        &[("a-1", action_events("a-1")), ("a-2", action_events("a-2"))],
    );
    let without_commit: Vec<_> = action_events("a-1")
        .into_iter()
        .filter(|(t, _)| *t != events::COMMITTED)
        .collect();
    let rewritten_head = write(
        &rewritten,
        &[("a-1", without_commit), ("a-2", action_events("a-2"))],
    );
    assert_ne!(rewritten_head, head);
    let lines: Vec<String> = std::fs::read_to_string(&original)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let kept = &lines[..lines.len() - 1];
    std::fs::write(&truncated, format!("{}\n", kept.join("\n"))).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    Journals {
        original: path(&original),
        rewritten: path(&rewritten),
        truncated: path(&truncated),
        head,
        _dir: dir,
    }
}

/// The forgeries are internally consistent and evaluate clean: only the
/// anchor tells them apart from the original. `--unanchored` accepts them,
/// and says it checked internal consistency only.
#[test]
fn unanchored_verification_says_what_it_did_not_check() {
    let j = journals();
    for file in [&j.original, &j.rewritten, &j.truncated] {
        let out = run(&[file, "--unanchored"]);
        assert_eq!(out.status.code(), Some(0), "{file}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("UNANCHORED: only internal consistency was checked"),
            "{}",
            text(&out)
        );
        assert!(stdout.contains("no violations"), "{}", text(&out));
    }
}

/// Without `--head` (or `--unanchored`) nothing is called intact: the
/// rewritten and the truncated journal, and the original too, are refused
/// with exit 2 and a message saying how to anchor the journal.
#[test]
fn without_a_head_a_rewritten_or_truncated_journal_is_refused() {
    let j = journals();
    for file in [&j.rewritten, &j.truncated, &j.original] {
        let out = run(&[file]);
        assert_eq!(out.status.code(), Some(2), "{file}: {}", text(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains("intact"), "{}", text(&out));
        assert!(!stdout.contains("no violations"), "{}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("unanchored"), "{}", text(&out));
        assert!(stderr.contains("--head DIGEST"), "{}", text(&out));
    }
}

/// With the original's true head, the original passes and the rewritten
/// and truncated journals are reported tampered.
#[test]
fn the_true_head_tells_the_original_from_its_forgeries() {
    let j = journals();
    let ok = run(&[&j.original, "--head", &j.head]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    assert!(
        !String::from_utf8_lossy(&ok.stdout).contains("UNANCHORED"),
        "{}",
        text(&ok)
    );
    for file in [&j.rewritten, &j.truncated] {
        let out = run(&[file, "--head", &j.head]);
        assert_eq!(out.status.code(), Some(1), "{file}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("TAMPERED"),
            "{}",
            text(&out)
        );
    }
}

/// The PostgreSQL form is held to the same rule: no head, no verdict
/// (refused before any connection is attempted).
#[test]
fn the_postgres_form_needs_a_head_too() {
    let out = run(&[
        "--postgres",
        "postgres://127.0.0.1:1/none",
        "--session",
        "s-1",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unanchored"),
        "{}",
        text(&out)
    );
}

/// A head and `--unanchored` together, or an unknown option, are usage
/// errors.
#[test]
fn conflicting_or_unknown_options_are_usage_errors() {
    let j = journals();
    for args in [
        vec![j.original.as_str(), "--head", &j.head, "--unanchored"],
        vec![j.original.as_str(), "--hed", &j.head],
        vec![j.original.as_str(), "--head"],
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    }
}

/// Issue 20, item 5: a journal file opened again continues its chain, so
/// a restart leaves one chain that verifies against its head; a file whose
/// chain is broken is refused at open, never appended to.
#[test]
fn a_journal_file_reopened_continues_its_chain() {
    use adk_computer_use::journal::{read_journal, verify_journal};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    let first_head = {
        let journal = Journal::new(Arc::new(FileJournal::open(&path).unwrap()));
        for n in 0..2 {
            journal
                .record(
                    "s-1",
                    "alice",
                    Some(&format!("a-{n}")),
                    events::PREVIEWED,
                    "2026-12-01T00:00:00Z".into(),
                    serde_json::json!({}),
                )
                .unwrap();
        }
        journal.head()
    };
    // The process restarts and opens the same file, from the head it
    // recorded when it ended.
    let journal = Journal::new(Arc::new(
        FileJournal::continue_from(&path, &first_head).unwrap(),
    ));
    journal
        .record(
            "s-2",
            "alice",
            Some("a-2"),
            events::PREVIEWED,
            "2026-12-01T00:01:00Z".into(),
            serde_json::json!({}),
        )
        .unwrap();
    let head = journal.head();
    let entries = read_journal(&path).unwrap();
    assert_eq!(entries.len(), 3);
    assert_eq!(verify_journal(&entries, Some(&head)).unwrap(), head);
    let out = std::process::Command::new(adk_computer_use_testkit::binary::path(
        adk_computer_use_testkit::binary::JOURNAL,
    ))
    .arg(&path)
    .args(["--head", &head])
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A broken chain is refused at open.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.remove(1);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = FileJournal::continue_from(&path, &head).unwrap_err();
    assert!(err.to_string().contains("do not verify"), "{err}");
}

/// Issue 28, item 3, from the attacker's side. Someone who can write the
/// journal between two sessions replaces session 1's part with a
/// consistent forgery: its first action's commit entry dropped, every
/// later digest recomputed (by the library itself). Session 2 cannot
/// continue the file without a head, and refuses the forgery given the
/// head session 1 recorded; so the forgery never gets session 2's head to
/// vouch for it. On the true file, session 2 continues from that head, and
/// the command checks the whole file against both recorded heads, or
/// against session 1's alone (saying what after it is unanchored); a
/// forgery of session 1's part made after session 2 wrote (every digest
/// recomputed again) does not pass through session 1's head.
#[test]
fn a_forged_first_session_is_neither_continued_nor_vouched_for() {
    let dir = tempfile::tempdir().unwrap();
    let true_file = dir.path().join("journal.jsonl");
    let forged_file = dir.path().join("forged.jsonl");
    let head_1 = write(
        &true_file,
        &[("a-1", action_events("a-1")), ("a-2", action_events("a-2"))],
    );
    let without_commit: Vec<_> = action_events("a-1")
        .into_iter()
        .filter(|(t, _)| *t != events::COMMITTED)
        .collect();
    write(
        &forged_file,
        &[
            ("a-1", without_commit.clone()),
            ("a-2", action_events("a-2")),
        ],
    );
    // Session 2 over the forgery: without a head, refused; with session
    // 1's, refused too.
    let err = FileJournal::open(&forged_file).unwrap_err();
    assert!(err.to_string().contains("continue_from"), "{err}");
    let err = FileJournal::continue_from(&forged_file, &head_1).unwrap_err();
    assert!(err.to_string().contains("do not verify"), "{err}");

    // Session 2 over the true file, from session 1's head.
    let journal = Journal::new(Arc::new(
        FileJournal::continue_from(&true_file, &head_1).unwrap(),
    ));
    for (event_type, payload) in action_events("a-3") {
        journal
            .record("s-2", "alice", Some("a-3"), event_type, AT.into(), payload)
            .unwrap();
    }
    let head_2 = journal.head();
    let file = true_file.to_str().unwrap();
    let both = run(&[file, "--head", &head_1, "--head", &head_2]);
    assert_eq!(both.status.code(), Some(0), "{}", text(&both));
    assert!(
        String::from_utf8_lossy(&both.stdout)
            .contains(&format!("passes through {head_1} at entry 16")),
        "{}",
        text(&both)
    );
    let first_only = run(&[file, "--head", &head_1]);
    assert_eq!(first_only.status.code(), Some(0), "{}", text(&first_only));
    let said = String::from_utf8_lossy(&first_only.stdout);
    assert!(
        said.contains("intact through entry 16"),
        "{}",
        text(&first_only)
    );
    assert!(
        said.contains("UNANCHORED AFTER: the 8 entries"),
        "{}",
        text(&first_only)
    );
    // A session that ended with a commit it never verified: checked
    // through its head, that is a violation. An entry appended after the
    // head (a `verified` chained from it, by whoever can write the file)
    // is not evaluated, so it cannot cover the violation.
    let unverified_file = dir.path().join("unverified.jsonl");
    let without_verified: Vec<_> = action_events("a-9")
        .into_iter()
        .filter(|(t, _)| *t != events::VERIFIED)
        .collect();
    let unverified_head = write(&unverified_file, &[("a-9", without_verified)]);
    let unverified = unverified_file.to_str().unwrap();
    let out = run(&[unverified, "--head", &unverified_head]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let covering = Journal::new(Arc::new(
        FileJournal::continue_from(&unverified_file, &unverified_head).unwrap(),
    ));
    covering
        .record(
            "s-1",
            "alice",
            Some("a-9"),
            events::VERIFIED,
            AT.into(),
            json!({ "status": "verified", "verified": true, "committed": true, "receiptId": "receipt-a-9" }),
        )
        .unwrap();
    let out = run(&[unverified, "--head", &unverified_head]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("violation"),
        "{}",
        text(&out)
    );

    // The heads out of order do not pass.
    let swapped = run(&[file, "--head", &head_2, "--head", &head_1]);
    assert_eq!(swapped.status.code(), Some(1), "{}", text(&swapped));

    // After session 2, the whole file forged: session 1's part without its
    // commit, session 2's part appended, every digest recomputed.
    let laundered = dir.path().join("laundered.jsonl");
    let forged_head_2 = write(
        &laundered,
        &[
            ("a-1", without_commit),
            ("a-2", action_events("a-2")),
            ("a-3", action_events("a-3")),
        ],
    );
    let laundered = laundered.to_str().unwrap();
    for heads in [
        vec![head_1.as_str()],
        vec![head_1.as_str(), forged_head_2.as_str()],
    ] {
        let mut args = vec![laundered];
        for head in &heads {
            args.extend(["--head", head]);
        }
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("TAMPERED"),
            "{}",
            text(&out)
        );
    }
}
