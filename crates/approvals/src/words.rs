//! What a waiting action does and why it waits, in words a person reads.
//!
//! The record a checkpoint keeps is exact but terse: a reason code such as
//! `confirm:edit_reversible` names the rule that matched, not what in the
//! request made it match, and an argument object says nothing of its
//! effect until someone knows the tool. The page and `show` put both into
//! sentences beside the raw values, so a person approves an effect, not a
//! JSON object. Nothing here is trusted: the sentences are made from the
//! same record the raw rows show, and a tool this file does not know is
//! described as unknown rather than guessed.

use adk_computer_use::chain::CheckpointView;
use adk_computer_use::contracts::DataLabel;
use adk_computer_use::contracts::catalogue::tool;
use serde_json::Value;

/// The policy classes that always ask a person (the server's own list).
const ASKING_CLASSES: &[(&str, &str)] = &[
    (
        "communicate_external",
        "it sends something outside this machine",
    ),
    ("authentication", "it takes part in signing in"),
    ("financial", "it moves money or pays"),
    ("destructive", "it destroys data"),
    (
        "privilege_change",
        "it changes what someone is allowed to do",
    ),
];

/// Why the action waits for a person, one sentence per reason the policy
/// gave, each naming what in the request triggered it.
pub(crate) fn cause(view: &CheckpointView) -> String {
    let labelled: Vec<&str> = view
        .data_labels
        .iter()
        .filter(|l| matches!(l, DataLabel::Credential | DataLabel::Payment))
        .map(|l| l.as_str())
        .collect();
    let mut said: Vec<String> = view
        .reasons
        .iter()
        .map(|reason| {
            let (rule, subject) = reason.split_once(':').unwrap_or((reason, ""));
            match rule {
                "confirm_app" => format!(
                    "the target app {subject} is listed as one whose windows hold credentials"
                ),
                "confirm_tool" => {
                    format!("the server asks a person for every {subject} action")
                }
                "untrusted_instruction_boundary" => format!(
                    "the request came from an instruction marked untrusted (class {subject})"
                ),
                "confirm" => {
                    // The class first, when it asks by itself; the label,
                    // the agent's own choice, after it.
                    let class = ASKING_CLASSES
                        .iter()
                        .find(|(class, _)| *class == subject)
                        .map(|(_, why)| format!("its class is {subject}: {why}"));
                    let label = (!labelled.is_empty()).then(|| {
                        format!(
                            "the action is labelled {} (a label the agent chose)",
                            labelled.join(" and ")
                        )
                    });
                    match (class, label) {
                        (Some(class), Some(label)) => format!("{class}; {label}"),
                        (Some(class), None) => class,
                        (None, Some(label)) => {
                            format!("{label}; the rule that matched is {reason}")
                        }
                        (None, None) if subject == "edit_reversible" => {
                            format!("it has an effect outside this desktop (class {subject})")
                        }
                        (None, None) => format!("the policy asks a person for class {subject}"),
                    }
                }
                _ => format!("the policy said {reason}"),
            }
        })
        .collect();
    if said.is_empty() {
        said.push(format!(
            "the policy's verdict is {:?} and it gave no reason",
            view.policy_decision
        ));
    }
    let mut sentence = said.join("; ");
    if let Some(first) = sentence.get(..1) {
        sentence = format!("{}{}", first.to_uppercase(), &sentence[1..]);
    }
    sentence.push('.');
    sentence
}

/// The effect of the action, in words: what changes, where.
pub(crate) fn effect(view: &CheckpointView) -> String {
    let arguments = view.shown_arguments().unwrap_or(Value::Null);
    let secret = view.handles_secrets();
    let text = |key: &str| arguments.get(key).and_then(Value::as_str);
    let characters = |key: &str| match text(key) {
        _ if secret => "masked text".to_owned(),
        Some(t) => match t.chars().count() {
            1 => "1 character".to_owned(),
            n => format!("{n} characters"),
        },
        None => "no text".to_owned(),
    };
    let point = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_array)
            .and_then(|p| Some((p.first()?.as_f64()?, p.get(1)?.as_f64()?)))
            .map_or_else(
                || "(no point given)".to_owned(),
                |(x, y)| format!("({x}, {y})"),
            )
    };
    // The application's id is the name it gave itself: quoted, so it
    // cannot read as part of this sentence.
    let target = match (&view.target_app_id, &view.target_window_id) {
        (Some(app), Some(window)) => format!("the application {app:?}, window {window}"),
        (Some(app), None) => format!("the application {app:?}"),
        (None, Some(window)) => format!("window {window}"),
        (None, None) => "the target".to_owned(),
    };
    let t = view.tool.as_str();
    match t {
        tool::WRITE_CLIPBOARD => format!(
            "Replaces the clipboard's contents with {} ({}); what the clipboard held is lost",
            characters("text"),
            if secret {
                "masked under Arguments: show the values before approving"
            } else {
                "shown under Arguments"
            }
        ),
        tool::READ_CLIPBOARD => {
            "Reads the clipboard's contents and hands them to the agent".to_owned()
        }
        tool::TYPE => {
            let mut s = format!("Types {}", characters("text"));
            let breaks = text("text").map_or(0, |t| t.matches('\n').count());
            if !secret && breaks > 0 {
                s.push_str(&format!(
                    ", {breaks} of them line breaks (each presses Enter: in a terminal, it runs the line)"
                ));
            }
            s.push_str(&format!(" into {target}"));
            if arguments.get("clear") == Some(&Value::Bool(true)) {
                s.push_str(", clearing what is there first");
            }
            if arguments.get("press_enter") == Some(&Value::Bool(true)) {
                s.push_str(", then presses Enter");
            }
            s
        }
        tool::KEY => format!(
            "Presses {} in {target}{}",
            if secret {
                "masked keys".to_owned()
            } else {
                format!("{:?}", text("text").unwrap_or(""))
            },
            arguments
                .get("repeat")
                .and_then(Value::as_u64)
                .map_or_else(String::new, |n| format!(", {n} times"))
        ),
        tool::HOLD_KEY => format!("Holds keys down in {target}"),
        tool::LEFT_CLICK => format!("Clicks at {} in {target}", point("coordinate")),
        tool::RIGHT_CLICK => format!("Right-clicks at {} in {target}", point("coordinate")),
        tool::MIDDLE_CLICK => format!("Middle-clicks at {} in {target}", point("coordinate")),
        tool::DOUBLE_CLICK => format!("Double-clicks at {} in {target}", point("coordinate")),
        tool::TRIPLE_CLICK => format!("Triple-clicks at {} in {target}", point("coordinate")),
        tool::MOUSE_MOVE => format!("Moves the pointer to {} in {target}", point("coordinate")),
        tool::LEFT_MOUSE_DOWN => format!(
            "Presses the left button at {} in {target} (and holds it)",
            point("coordinate")
        ),
        tool::LEFT_MOUSE_UP => format!(
            "Releases the left button at {} in {target}",
            point("coordinate")
        ),
        tool::LEFT_CLICK_DRAG => format!(
            "Drags from {} to {} in {target}",
            point("start_coordinate"),
            point("coordinate")
        ),
        tool::SCROLL => format!(
            "Scrolls {} by {} at {} in {target}",
            text("direction").unwrap_or("(no direction)"),
            arguments.get("amount").and_then(Value::as_u64).unwrap_or(1),
            point("coordinate")
        ),
        tool::SET_VALUE | tool::FILL_FORM => {
            let fields = view.field_writes();
            match fields.len() {
                0 => format!("Sets values in {target}"),
                1 => format!("Sets one field in {target} (listed below)"),
                n => format!("Sets {n} fields in {target} (listed below)"),
            }
        }
        tool::CLICK_ELEMENT | tool::PRESS_BUTTON => {
            format!(
                "Presses the element {} in {target}, submitting what the window holds. When the agent's evidence names the window's element revision (an observation with get_ui_tree), a value or a toggle changed before the press refuses it; otherwise only what the screenshot shows is bound. A password's value is never read, so a changed password is not seen",
                element(&arguments)
            )
        }
        tool::SELECT_MENU_ITEM => format!("Chooses a menu item in {target}"),
        tool::OPEN_APPLICATION => match text("app").or(text("name")) {
            Some(app) => format!("Opens the application {app:?}"),
            None => "Opens an application it does not name".to_owned(),
        },
        tool::RUN_SCRIPT => format!("Runs a script in {target}"),
        _ => format!(
            "An action of tool {t} (operation {}) on {target}; this page does not know the tool, so read its arguments",
            view.operation
        ),
    }
}

/// An element's role and label as the arguments name it.
fn element(arguments: &Value) -> String {
    let part = |key: &str| arguments.get(key).and_then(Value::as_str);
    match (part("role"), part("label")) {
        (Some(role), Some(label)) => format!("{role} {label:?}"),
        (None, Some(label)) => format!("{label:?}"),
        (Some(role), None) => role.to_owned(),
        (None, None) => "(not named)".to_owned(),
    }
}

/// What the screen shows of the action: nothing, for a tool whose effect is
/// off screen (the clipboard), where a crop of some window would mislead.
pub(crate) fn off_screen(view: &CheckpointView) -> Option<&'static str> {
    match view.tool.as_str() {
        tool::WRITE_CLIPBOARD => Some(
            "The clipboard is not on the screen: what matters is the text it will hold, under Arguments. The window the write is bound to is named under Target.",
        ),
        tool::READ_CLIPBOARD => Some(
            "The clipboard is not on the screen: reading it hands its contents, whatever they are, to the agent.",
        ),
        _ => None,
    }
}
