//! `computer-use-journal`: verifies an audit journal file and evaluates it.
//!
//! ```text
//! computer-use-journal FILE [--head DIGEST]
//! ```
//!
//! Exits 0 when the hash chain holds (and ends at `DIGEST`, when given) and
//! the evaluator finds no violation; 1 when the journal was tampered with or
//! shows a violation; 2 on a usage or read error.

use std::process::ExitCode;

use adk_computer_use::eval::ComputerUseEvaluator;
use adk_computer_use::journal::{journal_events, read_journal, verify_journal};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|at| args.get(at + 1))
            .cloned()
    };
    let head = flag("--head");
    let head = head.as_deref();
    let postgres = flag("--postgres");
    let (path, read) = match (&postgres, args.first()) {
        (Some(url), _) => {
            let Some(session) = flag("--session") else {
                eprintln!(
                    "usage: computer-use-journal --postgres URL --session ID [--head DIGEST]"
                );
                return ExitCode::from(2);
            };
            (format!("session {session}"), read_postgres(url, &session))
        }
        (None, Some(path)) if !path.starts_with("--") => (path.clone(), read_journal(path)),
        _ => {
            eprintln!(
                "usage: computer-use-journal FILE [--head DIGEST]\n       computer-use-journal --postgres URL --session ID [--head DIGEST]"
            );
            return ExitCode::from(2);
        }
    };
    let path = &path;
    let entries = match read {
        Ok(entries) => entries,
        Err(err) => {
            eprintln!("cannot read {path}: {err}");
            return ExitCode::from(2);
        }
    };
    match verify_journal(&entries, head) {
        Ok(head) => println!(
            "{path}: {} entries, hash chain intact, head {head}",
            entries.len()
        ),
        Err(err) => {
            println!("{path}: TAMPERED: {err}");
            return ExitCode::from(1);
        }
    }
    let report = ComputerUseEvaluator::new().evaluate(&journal_events(&entries));
    if report.violations.is_empty() {
        println!("no violations");
        ExitCode::SUCCESS
    } else {
        for violation in &report.violations {
            println!("violation: {violation}");
        }
        ExitCode::from(1)
    }
}

#[cfg(feature = "postgres")]
fn read_postgres(
    url: &str,
    session: &str,
) -> Result<Vec<adk_computer_use::journal::JournalEntry>, adk_computer_use::ComputerUseError> {
    adk_computer_use::pg::read_postgres_journal(url, session)
}

#[cfg(not(feature = "postgres"))]
fn read_postgres(
    _url: &str,
    _session: &str,
) -> Result<Vec<adk_computer_use::journal::JournalEntry>, adk_computer_use::ComputerUseError> {
    Err(adk_computer_use::ComputerUseError::Unsupported {
        operation: "--postgres (build with the postgres feature)".into(),
    })
}
