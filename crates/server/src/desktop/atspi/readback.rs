//! After `set_value` or `fill_form` (and the other element tools): the
//! effect read back through the application, for
//! [`ElementHost::verify_elements`]. Kept apart from the actions so each
//! file holds one step.

use serde_json::Value;

use super::actions::ElementHost;
use super::resolve::{names_what_was_written, wanted};
use crate::engine::EffectCheck;
use adk_computer_use::contracts::TargetEvidence;
use adk_computer_use::contracts::catalogue::tool;

/// How long a written value is looked for on the read-back.
const READ_BACK_WAIT: std::time::Duration = std::time::Duration::from_millis(1000);
/// How long a value that reached its field late must stay as written
/// before it is taken as the field's.
const READ_BACK_SETTLE: std::time::Duration = std::time::Duration::from_millis(200);

/// See [`ElementHost::verify_elements`].
pub(super) fn verify<H: ElementHost + ?Sized>(
    host: &H,
    tool_name: &str,
    args: &Value,
    postcondition: Option<&Value>,
    target: Option<&TargetEvidence>,
) -> EffectCheck {
    let method = match (postcondition, tool_name) {
        (Some(_), _) => "postcondition.ui_element",
        (None, tool::FILL_FORM) => "postcondition.auto_fill_form",
        (None, _) => "postcondition.auto_ui_value",
    };
    let failed = |checks| EffectCheck {
        verified: false,
        method,
        checks,
    };
    if tool_name == tool::SELECT_MENU_ITEM {
        // The application took the choice; what it does next is for a
        // declared postcondition to show, and none is observed here.
        return EffectCheck {
            verified: postcondition.is_none(),
            method: if postcondition.is_none() {
                "atspi_action_performed"
            } else {
                "atspi_unobservable"
            },
            checks: 0,
        };
    }
    let Ok(fields) = wanted(tool_name, args) else {
        return failed(0);
    };
    if let Some(postcondition) = postcondition
        && !names_what_was_written(tool_name, &fields, postcondition)
    {
        return EffectCheck {
            verified: false,
            method: "atspi_unobservable",
            checks: 0,
        };
    }
    if fields.iter().all(|f| f.value.is_none()) {
        // A press: the application took it; what it does next is for a
        // declared postcondition to show.
        return EffectCheck {
            verified: true,
            method: "atspi_action_performed",
            checks: 0,
        };
    }
    let Ok(record) = host.element_target(target) else {
        return failed(0);
    };
    let Some(bus) = host.accessibility() else {
        return failed(0);
    };
    let pid = record.pid.unwrap_or_default();
    let written = host.written_elements();
    if written.len() != fields.len() {
        return failed(0);
    }
    let mut checks = 0;
    let mut skipped_a_secret = false;
    // The nodes written, each read again where it was written (not
    // looked up by label a third time).
    for (field, node) in fields.iter().zip(&written) {
        let Some(value) = field.value else {
            return failed(checks);
        };
        if node.secure {
            // A secret's field is never read, not even to compare: a
            // check declared on it is not observed here, and with none
            // declared nothing is claimed about it.
            if postcondition.is_some() {
                return EffectCheck {
                    verified: false,
                    method: "atspi_secret_not_read",
                    checks: 0,
                };
            }
            skipped_a_secret = true;
            continue;
        }
        checks += 1;
        // Keys typed into a page's field reach it after they are sent
        // (some 30 ms, measured): a value not there yet is read again,
        // briefly. What the field holds at the end is what is judged: a
        // value that came late is read once more after [`READ_BACK_SETTLE`]
        // and must still be the one written (a CI rehearsal saw Chromium
        // answer "Ada" for a field whose page held "AdaOld", the page
        // having swallowed the select-all: typing was still arriving).
        let deadline = std::time::Instant::now() + READ_BACK_WAIT;
        let mut late = false;
        loop {
            match bus.read_text(pid, &record.title, record.bounds, node) {
                Ok(now) if now == value && !late => break,
                Ok(now) if now == value => {
                    std::thread::sleep(READ_BACK_SETTLE);
                    if bus
                        .read_text(pid, &record.title, record.bounds, node)
                        .is_ok_and(|again| again == value)
                    {
                        break;
                    }
                    if std::time::Instant::now() >= deadline {
                        return failed(checks);
                    }
                }
                _ if std::time::Instant::now() < deadline => {
                    late = true;
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                _ => return failed(checks),
            }
        }
    }
    EffectCheck {
        verified: true,
        // The record says what was read: a secret's field was written
        // and not read (upstream's rule would make a failed automatic
        // check an unknown outcome, so it is not reported failed).
        method: if skipped_a_secret {
            "atspi_secret_not_read"
        } else {
            method
        },
        checks,
    }
}
