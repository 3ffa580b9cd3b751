//! Attacks on the trees kept in memory through an application's events
//! (`atspi/cache.rs`, `atspi/events.rs`): a kept tree must be the window
//! as it is now, and a tree a walk would read otherwise must not be served
//! from memory.
//!
//! `x11_support/lying_app.py` (MODE=cache) joins the bus's registry itself,
//! is read once (and kept), then changes itself on a command and sends
//! the AT-SPI events a toolkit would, or, for the lies, events that say
//! less than happened (events the old rule, any event re-reads, caught).
//! Each test then reads the window again and compares it with a walk
//! (`tree_node_by_node`, never kept).
//!
//! Each test asserts the kept tree is not served stale; the first four
//! (a label target outside the tree that takes a name, a second window at
//! the window's place, twice, and a state announced at the value held
//! while the node says otherwise) and the memory one were seen failing
//! before the rules they hold were mended. An application that changes
//! its tree and announces it only as a node's life is read as it was, as
//! one that announces nothing is (see `atspi/events.rs`): not tested here.
//!
//! They run one at a time ([`ONE_AT_A_TIME`]): another test's application
//! joining the registry makes every kept tree read again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write as _;
use std::process::Command;
use std::time::Duration;

use adk_computer_use_testkit::needs;
use computer_use_server::desktop::atspi::{Accessibility, Node, Source, Tree};
use computer_use_server::desktop::x11::X11Desktop;

mod x11_support;

use x11_support::form::Form;
use x11_support::liar::{BOUNDS, Liar};
use x11_support::{kept_window, listed};

/// Held by each test: an application joining the registry makes every
/// kept tree read again, so two at once would pass for the wrong reason.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A node's place on the screen: `(x, y, width, height)`.
type Place = (i32, i32, i32, i32);

/// What a node reads as: its name, label, states and place.
type Reading = (String, String, Vec<String>, Place);

/// Reads the window until its tree comes from memory (another test's
/// application joining the registry makes it read again).
fn kept(bus: &Accessibility, liar: &Liar, title: &str) -> Tree {
    for _ in 0..50 {
        let tree = bus.tree(liar.pid(), title, BOUNDS).unwrap();
        if tree.source == Source::Events {
            return tree;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the lying application's tree was never kept");
}

fn node<'t>(tree: &'t Tree, name_or_label: &str) -> &'t Node {
    tree.nodes
        .iter()
        .find(|n| n.name == name_or_label || n.label == name_or_label)
        .unwrap_or_else(|| panic!("no {name_or_label:?} in {:?}", names(tree)))
}

fn names(tree: &Tree) -> Vec<Reading> {
    tree.nodes
        .iter()
        .map(|n| (n.name.clone(), n.label.clone(), n.states.clone(), n.bounds))
        .collect()
}

/// The read after the attack, and a walk of the window now (read as a
/// walk reads it, `GetAll` and all, by a server with nothing kept).
fn after(
    bus: &Accessibility,
    liar: &Liar,
    title: &str,
) -> (Result<Tree, String>, Result<Tree, String>) {
    let read = bus
        .tree(liar.pid(), title, BOUNDS)
        .map_err(|r| format!("{}: {}", r.code, r.message));
    let fresh = Accessibility::connect().unwrap();
    let walked = fresh
        .tree(liar.pid(), title, BOUNDS)
        .map_err(|r| format!("{}: {}", r.code, r.message));
    if let Ok(walked) = &walked {
        assert_eq!(walked.source, Source::Walk);
    }
    (read, walked)
}

// ---- Attacks by an application that behaves as AT-SPI says ----

/// A field with no name of its own is labelled by the first of its
/// `labelled-by` targets with a name. A target outside the window's tree
/// that had none when the tree was read takes one (announced on itself,
/// as AT-SPI says): a walk now reads the field as "Delete all".
#[test]
#[needs(display, accessibility)]
fn a_labelled_by_target_outside_the_tree_that_takes_a_name_makes_the_tree_read_again() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let title = format!("Cache label {}", std::process::id());
    let liar = Liar::start(&title, "GTK", "cache");
    let bus = Accessibility::connect().unwrap();
    let tree = kept(&bus, &liar, &title);
    assert!(
        tree.nodes
            .iter()
            .any(|n| n.role == "AXTextField" && n.label == "Pay" && n.name.is_empty()),
        "{:?}",
        names(&tree)
    );
    liar.command("name_lx");
    let (read, walked) = after(&bus, &liar, &title);
    let (read, walked) = (read.unwrap(), walked.unwrap());
    assert!(
        walked.nodes.iter().any(|n| n.label == "Delete all"),
        "{:?}",
        names(&walked)
    );
    assert_eq!(
        read.revision,
        walked.revision,
        "the tree served ({:?}) is not the window as a walk reads it: served {:?}, walked {:?}",
        read.source,
        read.nodes
            .iter()
            .filter(|n| n.role == "AXTextField")
            .map(|n| &n.label)
            .collect::<Vec<_>>(),
        walked
            .nodes
            .iter()
            .filter(|n| n.role == "AXTextField")
            .map(|n| &n.label)
            .collect::<Vec<_>>(),
    );
}

/// A second window of the process, of the same title at the same place,
/// announced on the application and on itself (`ChildrenChanged` on the
/// application's root, `window:create`): a walk refuses the read as
/// ambiguous (two frames at the window's place); the kept tree must not
/// be served in its stead.
#[test]
#[needs(display, accessibility)]
fn a_second_window_at_the_same_place_is_not_answered_from_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let title = format!("Cache twin {}", std::process::id());
    let liar = Liar::start(&title, "GTK", "cache");
    let bus = Accessibility::connect().unwrap();
    kept(&bus, &liar, &title);
    liar.command("twin");
    let (read, walked) = after(&bus, &liar, &title);
    let walked = walked.expect_err("a walk reads one of two frames at one place");
    assert!(walked.starts_with("ambiguous_target"), "{walked}");
    match read {
        Ok(tree) => panic!(
            "the tree was served ({:?}) while a walk refuses: {walked}",
            tree.source
        ),
        Err(refusal) => assert!(refusal.starts_with("ambiguous_target"), "{refusal}"),
    }
}

// ---- Lies the old rule (any event re-reads) caught ----

/// The check box is unchecked and the application announces `checked`
/// at the value the tree holds (gedit, measured in the change, announces
/// states its `GetState` does not answer): the node is not asked.
#[test]
#[needs(display, accessibility)]
fn a_state_announced_at_the_value_held_while_the_node_says_otherwise_is_asked() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let title = format!("Cache checked {}", std::process::id());
    let liar = Liar::start(&title, "GTK", "cache");
    let bus = Accessibility::connect().unwrap();
    let tree = kept(&bus, &liar, &title);
    assert!(node(&tree, "Agree").states.iter().any(|s| s == "checked"));
    liar.command("lie_checked");
    let (read, walked) = after(&bus, &liar, &title);
    let (read, walked) = (read.unwrap(), walked.unwrap());
    assert!(!node(&walked, "Agree").states.iter().any(|s| s == "checked"));
    assert_eq!(
        node(&read, "Agree").states,
        node(&walked, "Agree").states,
        "served from {:?}",
        read.source
    );
}

// ---- Attacks that hold ----

/// A node GTK does not show becomes shown (announced): it is asked, its
/// states differ, and the window is walked (its extents now read).
#[test]
#[needs(display, accessibility)]
fn a_hidden_node_shown_is_read_again_with_its_extents() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let title = format!("Cache shown {}", std::process::id());
    let liar = Liar::start(&title, "GTK", "cache");
    let bus = Accessibility::connect().unwrap();
    let tree = kept(&bus, &liar, &title);
    assert_eq!(node(&tree, "Later").bounds, (0, 0, 0, 0));
    liar.command("show_hn");
    let (read, walked) = after(&bus, &liar, &title);
    let (read, walked) = (read.unwrap(), walked.unwrap());
    assert_eq!(read.source, Source::Walk);
    assert_eq!(node(&read, "Later").bounds, (390, 200, 50, 20));
    assert_eq!(read.revision, walked.revision);
}

/// Bounds announced where they were: kept; bounds announced where they
/// moved: read again.
#[test]
#[needs(display, accessibility)]
fn bounds_announced_are_asked_of_the_node() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let title = format!("Cache bounds {}", std::process::id());
    let liar = Liar::start(&title, "GTK", "cache");
    let bus = Accessibility::connect().unwrap();
    kept(&bus, &liar, &title);
    liar.command("bounds_same");
    let (read, _) = after(&bus, &liar, &title);
    assert_eq!(read.unwrap().source, Source::Events);
    liar.command("bounds_moved");
    let (read, walked) = after(&bus, &liar, &title);
    let (read, walked) = (read.unwrap(), walked.unwrap());
    assert_eq!(read.source, Source::Walk);
    assert_eq!(node(&read, "Move").bounds, (330, 230, 50, 20));
    assert_eq!(read.revision, walked.revision);
}

// ---- The server's memory ----

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// An application sends 4096 events on objects whose paths are 64 KiB
/// long (D-Bus bounds a path only by the message's size): the watcher's
/// log of its latest events holds every path, for as long as the server
/// runs (a sender's log is never dropped, even once it has left the bus).
#[test]
#[needs(display, accessibility)]
fn an_application_cannot_make_the_server_hold_its_events_paths() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let title = format!("Cache flood {}", std::process::id());
    let liar = Liar::start(&title, "GTK", "cache");
    let bus = Accessibility::connect().unwrap();
    kept(&bus, &liar, &title);
    let before = rss_kib();
    liar.command("flood 4096 65536");
    // The barrier: every event sent before is counted once this answers.
    let _ = bus.tree(liar.pid(), &title, BOUNDS).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let grown = rss_kib().saturating_sub(before);
    drop(liar);
    std::thread::sleep(Duration::from_millis(500));
    let kept_after = rss_kib().saturating_sub(before);
    assert!(
        grown < 64 * 1024,
        "the server's memory grew by {} MiB for one application's events (still {} MiB once it left)",
        grown / 1024,
        kept_after / 1024
    );
}

// ---- The same against GTK 3 (form_app.py), through its own bridge ----

/// A GTK 3 form kept in memory opens a second window of its title at
/// its place (`twin`): GTK's bridge announces it on the application and
/// the new window, none of them in the kept tree. A walk refuses the read
/// (two frames at one place); the kept tree must not be served instead.
#[test]
#[needs(display, accessibility)]
fn a_gtk_form_whose_twin_opens_at_its_place_is_not_answered_from_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let desktop = X11Desktop::connect_unwatched().unwrap();
    let bus = Accessibility::connect().unwrap();
    let title = format!("Cache GTK twin {}", std::process::id());
    let mut form = Form::start(&title, &["Email"]);
    form.change("moveto 100 100");
    let (pid, bounds, _) = kept_window(&desktop, &bus, &title, Some(100));
    form.change(&format!("twin {title}"));
    std::thread::sleep(Duration::from_millis(500));
    let fresh = Accessibility::connect().unwrap();
    let walked = fresh
        .tree(pid, &title, bounds)
        .map(|t| t.source)
        .map_err(|r| format!("{}: {}", r.code, r.message));
    let read = bus
        .tree(pid, &title, bounds)
        .map(|t| t.source)
        .map_err(|r| format!("{}: {}", r.code, r.message));
    let walked = walked.expect_err("a walk reads one of two frames at one place");
    assert!(walked.starts_with("ambiguous_target"), "{walked}");
    assert!(
        read.is_err(),
        "served from {read:?} while a walk refuses: {walked}"
    );
}

/// A GTK 3 pane of buttons, kept in memory, scrolled by the program: the
/// buttons move on the screen. With the scroll bar shown (`auto`) GTK
/// announces the bar's value; with it never shown (`external`) what GTK
/// announces decides whether the kept tree's bounds are the buttons'.
fn scrolled_pane_bounds(policy: &str) -> (Source, Place, Place) {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let desktop = X11Desktop::connect_unwatched().unwrap();
    let bus = Accessibility::connect().unwrap();
    let title = format!("Cache scroll {policy} {}", std::process::id());
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/x11_support/scroll_app.py"
    );
    let mut child = Command::new("/usr/bin/python3")
        .args([script, &title, policy])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let program = x11_support::Program(child);
    let button = |tree: &Tree| node(tree, "Button 10").bounds;
    let (pid, bounds, tree) = kept_window(&desktop, &bus, &title, Some(100));
    let before = button(&tree);
    writeln!(stdin, "scroll 200").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    while !line.starts_with("ack scroll") {
        line.clear();
        stdout.read_line(&mut line).unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(listed(&desktop, &title).map(|l| l.1), Some(bounds));
    let read = bus.tree(pid, &title, bounds).unwrap();
    let walked = Accessibility::connect()
        .unwrap()
        .tree(pid, &title, bounds)
        .unwrap();
    assert_ne!(button(&walked), before, "the button did not move");
    drop(program);
    (read.source, button(&read), button(&walked))
}

#[test]
#[needs(display, accessibility)]
fn a_gtk_pane_scrolled_with_its_bar_shown_is_read_again() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (source, read, walked) = scrolled_pane_bounds("auto");
    assert_eq!(read, walked, "served from {source:?}");
}

#[test]
#[needs(display, accessibility)]
fn a_gtk_pane_scrolled_with_no_bar_shown_is_read_again() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (source, read, walked) = scrolled_pane_bounds("external");
    assert_eq!(read, walked, "served from {source:?}");
}
