//! One pending action as the person sees it: the screen it was previewed
//! on with the target and the pointer marked, the arguments (secrets
//! masked, hidden characters shown), labels, reasons, digests and the time
//! left. Everything shown is escaped.

use adk_computer_use::chain::CheckpointView;
use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

use super::{Page, shown};

pub(super) const STYLE: &str = "body{font-family:sans-serif;margin:1em}section{border:1px solid #999;margin:1em 0;padding:1em}\
.frame{position:relative;display:inline-block;overflow:hidden;border:1px solid #333}.frame img{display:block;max-width:none}\
.bounds{position:absolute;border:3px solid #d00;box-sizing:border-box}\
.pointer{position:absolute;width:14px;height:14px;margin:-7px 0 0 -7px;border:3px solid #06f;border-radius:50%}\
dt{font-weight:bold}dd{margin:0 0 .5em 1em;font-family:monospace;white-space:pre-wrap;word-break:break-all}\
.unreadable{background:#fee}.done{background:#efe;padding:.5em}bdo{direction:ltr;unicode-bidi:isolate-override}";

/// Seconds until `expires_at`, or that it expired.
fn time_left(expires_at: &str) -> String {
    match adk_computer_use::clock::parse_rfc3339("ActionEnvelope", "expiresAt", expires_at) {
        Ok(at) => {
            let left = at - time::OffsetDateTime::now_utc();
            if left.is_positive() {
                format!("{} s left (until {expires_at})", left.whole_seconds())
            } else {
                format!(
                    "expired at {expires_at}: approving previews the same action again before it runs"
                )
            }
        }
        Err(_) => expires_at.to_owned(),
    }
}

/// Where a pointer tool acts, unless its arguments are masked.
fn pointer(view: &CheckpointView) -> Option<(f64, f64)> {
    if view.handles_secrets()
        || !adk_computer_use::contracts::catalogue::is_pointer_tool(&view.tool)
    {
        return None;
    }
    view.pointer()
}

/// At most 64 KiB of a long value, and how much more there is.
fn clipped(value: &str) -> String {
    const SHOWN: usize = 64 * 1024;
    if value.len() <= SHOWN {
        return value.to_owned();
    }
    let mut end = SHOWN;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} more bytes not shown; `computer-use-approvals show` prints it all)",
        &value[..end],
        value.len() - end
    )
}

pub(super) fn card(page: &Page, view: &CheckpointView) -> String {
    let id = view.id.as_str();
    let labels: Vec<&str> = view.data_labels.iter().map(|l| l.as_str()).collect();
    let pretty = |value: Option<serde_json::Value>| {
        value
            .and_then(|a| serde_json::to_string_pretty(&a).ok())
            .map(|a| clipped(&a))
            .unwrap_or_else(|| "(not kept)".to_owned())
    };
    let arguments = pretty(view.shown_arguments());
    // The secret labels are the agent's own: what they hide is one click
    // away, never out of the person's reach.
    let revealed = view.handles_secrets().then(|| {
        format!(
            "<details><summary>Masked because the action is labelled as handling secrets (a label the agent chose). Show the values before approving.</summary><pre>{}</pre></details>",
            shown(&crate::safe_keeping_lines(&pretty(view.secret_fields_masked())))
        )
    });
    // An element action's fields, one a line: which field gets which
    // value, a secret's field masked whatever the labels (its value never
    // reaches the page, not even behind a click).
    let fields: Vec<String> = view
        .field_writes()
        .iter()
        .map(|f| {
            format!(
                "{:?} {:?} ← {}{}",
                f.role,
                f.label,
                if f.masked {
                    f.value.clone()
                } else {
                    format!("{:?}", f.value)
                },
                if f.masked {
                    " (masked: a secret's field)"
                } else {
                    ""
                }
            )
        })
        .collect();
    // A tool whose effect is off screen shows no crop of some window.
    let off_screen = crate::words::off_screen(view);
    let frame = match &view.frame {
        _ if off_screen.is_some() => format!(
            "<p class=\"off-screen\">{}</p>",
            text(off_screen.unwrap_or_default())
        ),
        Some(image) if image.mime_type.starts_with("image/") => {
            // Marks in the frame's own pixels: a frame of the target
            // window alone starts at the window's top left.
            let (dx, dy) = match (&view.target_bounds, view.frame_window_only) {
                (Some(b), true) => (b.x, b.y),
                _ => (0.0, 0.0),
            };
            let mut marks = String::new();
            if let Some(b) = &view.target_bounds {
                marks.push_str(&format!(
                    "<div class=\"bounds\" title=\"target window\" style=\"left:{}px;top:{}px;width:{}px;height:{}px\"></div>",
                    b.x - dx, b.y - dy, b.width, b.height
                ));
            }
            if let Some((x, y)) = pointer(view) {
                marks.push_str(&format!(
                    "<div class=\"pointer\" title=\"pointer\" style=\"left:{}px;top:{}px\"></div>",
                    x - dx,
                    y - dy
                ));
            }
            format!(
                "<div class=\"frame\"><img alt=\"the screen the action was previewed on\" src=\"data:{};base64,{}\">{marks}</div>",
                attr(&image.mime_type),
                attr(&image.data)
            )
        }
        _ => "<p>(the runtime sent no screenshot)</p>".to_owned(),
    };
    let rows = [
        (
            "Action",
            format!(
                "{} ({} {}, mode {})",
                view.action_id,
                view.tool,
                view.operation,
                view.mode.as_str()
            ),
        ),
        ("Why it asks", crate::words::cause(view)),
        ("What it does", crate::words::effect(view)),
        (
            "Asked by",
            format!(
                "{} (tenant {}), agent {}, session {}",
                view.principal_id,
                view.tenant_id,
                view.agent_id.as_deref().unwrap_or("-"),
                view.session_id
            ),
        ),
        (
            "Target",
            // The application's id is the name it gave itself (any
            // program picks its own): quoted and said so.
            format!(
                "{} {}{}{}",
                view.target_app_id.as_deref().map_or_else(
                    || "(none)".to_owned(),
                    |app| format!("{app:?} (the name the application gave itself)")
                ),
                view.target_window_id
                    .as_ref()
                    .map_or_else(String::new, |w| format!("window {w}")),
                view.target_bounds
                    .as_ref()
                    .map_or_else(String::new, |b| format!(
                        ", bounds {}x{} at ({}, {}) (red on the screenshot)",
                        b.width, b.height, b.x, b.y
                    )),
                pointer(view).map_or_else(String::new, |(x, y)| format!(
                    ", pointer at ({x}, {y}) (blue)"
                )),
            ),
        ),
        ("Arguments", arguments),
        (
            "Fields",
            if fields.is_empty() {
                String::new()
            } else {
                fields.join("\n")
            },
        ),
        (
            "Data labels",
            if labels.is_empty() {
                "(none)".to_owned()
            } else {
                labels.join(", ")
            },
        ),
        (
            "Policy",
            format!("{:?}: {}", view.policy_decision, view.reasons.join("; ")),
        ),
        ("Action digest", view.action_digest.clone()),
        ("Policy digest", view.policy_digest.clone()),
        ("Time", time_left(&view.expires_at)),
    ];
    let mut details = String::new();
    for (name, value) in rows {
        if name == "Fields" && value.is_empty() {
            continue;
        }
        // Arguments keep their lines (pretty JSON escapes every line break
        // inside a value); every other row shows its breaks escaped.
        let value_shown = if name == "Arguments" || name == "Fields" {
            crate::safe_keeping_lines(&value)
        } else {
            crate::safe(&value)
        };
        details.push_str(&format!(
            "<dt>{}</dt><dd>{}</dd>",
            text(name),
            shown(&value_shown)
        ));
        if name == "Arguments"
            && let Some(revealed) = &revealed
        {
            details.push_str(&format!("<dd>{revealed}</dd>"));
        }
    }
    let forms = if view.decided {
        "<p class=\"decided\">A decision is recorded.</p>".to_owned()
    } else {
        format!(
            "<form method=\"post\" action=\"decide\"><input type=\"hidden\" name=\"id\" value=\"{id}\"><input type=\"hidden\" name=\"token\" value=\"{token}\"><input type=\"hidden\" name=\"decision\" value=\"approve\"><button type=\"submit\" id=\"approve-{id}\">Approve</button></form>\
<form method=\"post\" action=\"decide\"><input type=\"hidden\" name=\"id\" value=\"{id}\"><input type=\"hidden\" name=\"token\" value=\"{token}\"><input type=\"hidden\" name=\"decision\" value=\"deny\"><label>Reason <input name=\"reason\" id=\"reason-{id}\" value=\"denied on the approval page\"></label> <button type=\"submit\" id=\"deny-{id}\">Deny</button></form>",
            id = attr(id),
            token = attr(&page.form_token),
        )
    };
    format!(
        "<section id=\"c-{id}\"><h2>{title}</h2>{frame}<dl>{details}</dl>{forms}</section>",
        id = attr(id),
        title = shown(&crate::safe(&view.action_id)),
    )
}
