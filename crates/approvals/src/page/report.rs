//! "What happened": each decided action's end, as the agent reported it.
//!
//! The card a person decided on is gone once the agent resumes it; without
//! this the page's last word would be "approved", even for an action that
//! was then refused or failed. The report is the agent's (sealed with the
//! store's key, so no one without it can write one), and the page says so:
//! the server's own record stays the authority on what the desktop did.

use super::shown;
use adk_computer_use::chain::{Reported, ReportedOutcome};
use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

/// The most reported actions the page lists, the latest first.
pub(super) const SHOWN: usize = 20;

/// The section for what the agent reported, or nothing when it reported
/// nothing yet.
pub(super) fn section(reported: &[Reported]) -> String {
    if reported.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h1>What happened</h1><p class=\"whose\">As each agent reported it when the action ended (its word, sealed with the store's key; the server's record is the authority on what the desktop did).</p>",
    );
    for (id, reports) in reported {
        match reports {
            Ok(reports) => {
                for (n, report) in reports.iter().enumerate() {
                    out.push_str(&format!(
                        "<section class=\"report {status}\" id=\"r-{id}-{n}\"><h2>Action {action} ({tool})</h2><p class=\"outcome\">{words}</p><p class=\"at\">Reported {at}; checkpoint {id}.</p></section>",
                        status = attr(report.outcome.status()),
                        id = attr(id.as_str()),
                        action = shown(&super::super::safe(&report.action_id)),
                        tool = shown(&super::super::safe(&report.tool)),
                        words = sentence(&report.outcome),
                        at = shown(&super::super::safe(&report.reported_at)),
                    ));
                }
            }
            Err(err) => out.push_str(&format!(
                "<section class=\"report unreadable\" id=\"r-{id}\"><h2>Checkpoint {id}</h2><p class=\"outcome\">UNREADABLE: {why}</p><p>No report beside this checkpoint can be trusted.</p></section>",
                id = attr(id.as_str()),
                why = shown(&super::super::safe(&err.to_string())),
            )),
        }
    }
    out
}

/// The outcome in a sentence: the page's words before and after, and the
/// reason the agent reported (shown quoted: its words, which may come from
/// the runtime, never the page's).
fn words(outcome: &ReportedOutcome) -> (&'static str, Option<&str>, &'static str) {
    match outcome {
        ReportedOutcome::Verified => ("Done, and verified: the check proved the effect.", None, ""),
        ReportedOutcome::CommittedUnverified { reason } => {
            ("Done, but not verified: ", Some(reason), "")
        }
        ReportedOutcome::Failed { reason } => ("Failed: ", Some(reason), ""),
        ReportedOutcome::OutcomeUnknown { reason } => {
            ("Unknown whether it happened: ", Some(reason), "")
        }
        ReportedOutcome::Refused {
            reason,
            approval_kept: true,
        } => (
            "Refused before anything was done: ",
            Some(reason),
            " The approval was kept: the agent may try again until it expires.",
        ),
        ReportedOutcome::Refused {
            reason,
            approval_kept: false,
        } => ("Refused: ", Some(reason), " The approval was spent."),
    }
}

/// [`words`] as HTML, everything escaped.
fn sentence(outcome: &ReportedOutcome) -> String {
    let (lead, reason, tail) = words(outcome);
    let reason = reason.map_or_else(String::new, |r| {
        format!("<q class=\"reason\">{}</q>", shown(&super::super::safe(r)))
    });
    format!("{}{reason}{}", text(lead), text(tail))
}
