//! An application that lies about itself on the accessibility bus, against
//! the reads that trust it to answer one way (`atspi/basics.rs`: a node's
//! name, description and child count in one `GetAll`; Chromium's
//! attributes read before a walk; action names asked by index).
//!
//! `x11_support/lying_app.py` joins the bus's registry itself and answers
//! as it likes. What these tests hold the server to:
//! - a button whose `GetAll` names it "Cancel" while `Get` names it
//!   "Delete" is never pressed: the element is found again, before the
//!   effect, by what `Get` says, and the difference is a stale target;
//! - a button listing 500 empty action names costs 16 `GetName` calls a
//!   read, never 500;
//! - an application calling itself Chromium whose frame never answers the
//!   attribute read is still read, after a second's wait, not after the
//!   walk's whole deadline;
//! - a field is not taken to hold the focus (and no key would be sent)
//!   while another element of its window reads `focused` too, though the
//!   field reads `focused`, its window `active` and the caret is in it.
//!
//! A panel that says it has no children while it lists one is read
//! without that child; an application can always leave an element out of
//! its own tree, and what is not read cannot be named by an action.
//!
//! They need the session's accessibility bus and python3-dbus (`.ci/run`
//! installs it); built without a display or bus they are reported
//! ignored, with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use adk_computer_use_testkit::needs;
use computer_use_server::Refusal;
use computer_use_server::desktop::atspi::{Accessibility, Tree};

mod x11_support;

use x11_support::liar::{BOUNDS, Liar};

/// The lying application started (see [`Liar::start`]), a connection to
/// the bus, and its window's tree as the server reads it.
fn read(title: &str, toolkit: &str, mode: &str) -> (Liar, Accessibility, Result<Tree, Refusal>) {
    let liar = Liar::start(title, toolkit, mode);
    let bus = Accessibility::connect().unwrap();
    let tree = bus.tree(liar.pid(), title, BOUNDS);
    (liar, bus, tree)
}

#[test]
#[needs(display, accessibility)]
fn a_button_named_one_way_in_get_all_and_another_in_get_is_never_pressed() {
    let (liar, bus, tree) = read("Liar A", "GTK", "");
    let tree = tree.unwrap();
    let button = tree.nodes.iter().find(|n| n.id() == "p0").unwrap().clone();
    // The tree shows what GetAll said.
    assert_eq!(button.name, "Cancel");
    let pressed = bus.press(liar.pid(), "Liar A", BOUNDS, &button);
    let refusal = pressed.expect_err("a button that names itself two ways was pressed");
    assert_eq!(refusal.code, "stale_target", "{}", refusal.message);
    assert_eq!(
        liar.count("DoAction"),
        0,
        "the application was asked to act"
    );
    // The panel that says it has none: its child is not in the tree.
    assert!(!tree.nodes.iter().any(|n| n.name == "Hidden"));
    assert_eq!(liar.count("GetChildren /p1"), 0, "{}", liar.calls());
}

#[test]
#[needs(display, accessibility)]
fn five_hundred_empty_action_names_cost_sixteen_calls_a_read() {
    let (liar, _bus, tree) = read("Liar B", "GTK", "");
    let tree = tree.unwrap();
    let many = tree.nodes.iter().find(|n| n.name == "Many").unwrap();
    assert_eq!(many.actions.len(), 16);
    assert_eq!(many.actions.get(3).map(String::as_str), Some("click"));
    assert_eq!(liar.count("GetName /many"), 16);
}

#[test]
#[needs(display, accessibility)]
fn a_chromium_frame_that_never_answers_the_attribute_read_is_still_read() {
    let started = Instant::now();
    let (liar, _bus, tree) = read("Liar C", "Chromium", "hang");
    let took = started.elapsed();
    assert_eq!(liar.count("GetAttributes /f"), 1, "{}", liar.calls());
    // Read after the one-second wait; without that bound the walk's whole
    // deadline (25 s) passes and the read times out.
    let tree = tree.unwrap_or_else(|r| panic!("{}: {} (after {took:?})", r.code, r.message));
    // Read as any Chromium is: the button by what `GetAll` names it.
    assert!(
        tree.nodes.iter().any(|n| n.name == "Cancel"),
        "{:?}",
        tree.nodes
    );
}

#[test]
#[needs(display, accessibility)]
fn a_field_is_not_taken_to_hold_the_focus_while_another_element_reads_focused() {
    let field_of = |tree: &Tree| {
        tree.nodes
            .iter()
            .find(|n| n.name == "Field")
            .unwrap()
            .clone()
    };
    // Alone in reading focused, with its window active and the caret in
    // it: the field holds the focus.
    let (liar, bus, tree) = read("Liar D", "GTK", "");
    let field = field_of(&tree.unwrap());
    let focused = bus.focus_field(liar.pid(), "Liar D", BOUNDS, &field);
    assert!(focused.is_ok(), "{focused:?}");
    assert_eq!(liar.count("GetMatches /f"), 1, "{}", liar.calls());
    // The same, with a second field reading focused too: refused.
    let (liar, bus, tree) = read("Liar E", "GTK", "twofocus");
    let field = field_of(&tree.unwrap());
    let refused = bus
        .focus_field(liar.pid(), "Liar E", BOUNDS, &field)
        .expect_err("a field was taken to hold the focus beside another");
    assert_eq!(refused.code, "stale_target", "{}", refused.message);
    assert!(
        refused
            .message
            .contains("another element reads focused too"),
        "{}",
        refused.message
    );
    assert!(liar.count("GrabFocus /t1") >= 1, "{}", liar.calls());
}
