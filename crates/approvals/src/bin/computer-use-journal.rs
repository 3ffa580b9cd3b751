//! `computer-use-journal`: verifies an audit journal file and evaluates it.
//!
//! ```text
//! computer-use-journal FILE --head DIGEST [--head DIGEST]...
//! computer-use-journal FILE --unanchored
//! computer-use-journal --postgres URL --session ID --head DIGEST
//! computer-use-journal --postgres URL --session ID --unanchored
//! ```
//!
//! The hash chain alone proves only that the entries agree with each other:
//! whoever can write the journal can drop an entry and recompute every
//! later digest, or cut the end off, and the chain still holds. Only the
//! head recorded elsewhere (`Journal::head()` at the end of the session,
//! kept apart from the journal) anchors it. So a journal is verified
//! against `--head DIGEST`; without one the command refuses (exit 2)
//! unless `--unanchored` says only internal consistency is wanted, which
//! it then checks and says so on a line starting `UNANCHORED:`.
//!
//! A file that several sessions wrote in turn has several recorded heads:
//! each session's, taken when it ended. Any of them may be given, and as
//! many as are known (in the order they were recorded): the chain must
//! pass through each, in turn. Entries after the last head given are
//! consistent with the chain but anchored by nothing: the command says so
//! on a line starting `UNANCHORED AFTER:`, and evaluates only the entries
//! up to the last head given.
//!
//! Exits 0 when the hash chain holds (and passes through every `DIGEST`) and
//! the evaluator finds no violation; 1 when the journal was tampered with or
//! shows a violation; 2 on a usage or read error, or when neither `--head`
//! nor `--unanchored` was given.

use std::process::ExitCode;

use adk_computer_use::eval::ComputerUseEvaluator;
use adk_computer_use::journal::{
    journal_events, read_journal, verify_journal, verify_journal_through,
};

const USAGE: &str = "usage: computer-use-journal FILE (--head DIGEST [--head DIGEST]... | --unanchored)\n       computer-use-journal --postgres URL --session ID (--head DIGEST [--head DIGEST]... | --unanchored)";

/// What the command line asks for.
#[derive(Default)]
struct Args {
    file: Option<String>,
    heads: Vec<String>,
    postgres: Option<String>,
    session: Option<String>,
    unanchored: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args::default();
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| {
            rest.next()
                .filter(|v| !v.starts_with("--"))
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let slot = match arg.as_str() {
            "--head" => {
                let head = value("--head")?;
                parsed.heads.push(head);
                None
            }
            "--postgres" => Some((&mut parsed.postgres, value("--postgres")?)),
            "--session" => Some((&mut parsed.session, value("--session")?)),
            "--unanchored" => {
                parsed.unanchored = true;
                None
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            file => Some((&mut parsed.file, file.to_owned())),
        };
        if let Some((slot, value)) = slot {
            if slot.is_some() {
                return Err(format!("{arg} given twice"));
            }
            *slot = Some(value);
        }
    }
    if !parsed.heads.is_empty() && parsed.unanchored {
        return Err("--head and --unanchored exclude each other".into());
    }
    match (&parsed.file, &parsed.postgres, &parsed.session) {
        (Some(_), None, None) | (None, Some(_), Some(_)) => Ok(parsed),
        _ => Err("give a FILE, or --postgres URL with --session ID".into()),
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&args) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("{problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.heads.is_empty() && !args.unanchored {
        eprintln!(
            "refused: the journal is unanchored. Its hash chain alone cannot show that an entry \
             was dropped (with every later digest recomputed) or that the end was cut off. \
             Pass --head DIGEST, the head recorded apart from the journal (Journal::head() \
             at the end of the session), or --unanchored to check internal consistency only.\n{USAGE}"
        );
        return ExitCode::from(2);
    }
    let heads: Vec<&str> = args.heads.iter().map(String::as_str).collect();
    let (path, read) = match (&args.postgres, &args.session, &args.file) {
        (Some(url), Some(session), _) => {
            (format!("session {session}"), read_postgres(url, session))
        }
        (_, _, Some(path)) => (path.clone(), read_journal(path)),
        _ => {
            eprintln!("{USAGE}");
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
    let verified = if heads.is_empty() {
        verify_journal(&entries, None).map(|_| Vec::new())
    } else {
        verify_journal_through(&entries, &heads)
    };
    let positions = match verified {
        Ok(positions) => positions,
        Err(err) => {
            println!("{path}: TAMPERED: {err}");
            return ExitCode::from(1);
        }
    };
    let last = positions.last().copied();
    match last {
        Some(position) if position < entries.len() => println!(
            "{path}: {} entries, hash chain intact through entry {position} (head {})",
            entries.len(),
            heads.last().copied().unwrap_or_default()
        ),
        _ => println!(
            "{path}: {} entries, hash chain intact, head {}",
            entries.len(),
            entries.last().map_or("(none)", |e| e.digest.as_str())
        ),
    }
    for (head, position) in heads.iter().zip(&positions) {
        println!("passes through {head} at entry {position}");
    }
    // Only what a head anchors is evaluated: entries after the last head
    // given could be anyone's (one appended `verified` would cover a
    // commit the session never verified).
    let mut anchored = &entries[..];
    if let Some(position) = last
        && position < entries.len()
    {
        println!(
            "UNANCHORED AFTER: the {} entries after entry {position} are anchored by no head given; a rewrite of them, or a cut-off end, would pass, and they are not evaluated. Give the latest recorded head too.",
            entries.len() - position
        );
        anchored = &entries[..position];
    }
    if heads.is_empty() {
        println!(
            "UNANCHORED: only internal consistency was checked; a dropped entry with later \
             digests recomputed, or a cut-off end, would pass. Verify with --head DIGEST."
        );
    }
    let report = ComputerUseEvaluator::new().evaluate(&journal_events(anchored));
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
