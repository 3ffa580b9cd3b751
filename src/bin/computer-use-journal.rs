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
    let (path, head) = match args.as_slice() {
        [path] => (path, None),
        [path, flag, head] if flag == "--head" => (path, Some(head.as_str())),
        _ => {
            eprintln!("usage: computer-use-journal FILE [--head DIGEST]");
            return ExitCode::from(2);
        }
    };
    let entries = match read_journal(path) {
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
